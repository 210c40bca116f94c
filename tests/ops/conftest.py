import sys
from pathlib import Path

# tests/ops/tools.py is imported as a plain module (tests/ has no packages).
sys.path.insert(0, str(Path(__file__).parent))
