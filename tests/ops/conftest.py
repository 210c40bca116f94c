import sys
from pathlib import Path

# tests/ops/tools.py, tests/test_deploy_files.py (its PromQL readers) and tests/kafka/kafka_helpers.py
# are imported as plain modules (tests/ has no packages).
HERE = Path(__file__).parent
for path in (HERE, HERE.parent, HERE.parent / "kafka"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))
