"""The application file for ``spark-submit``, which runs a Python *file* (not a console script,
not ``python -m``). Its arguments are the command line's::

    spark-submit --master spark://HOST:7077 \\
        "$(python -c 'import eventscript.backfill.submit as s; print(s.__file__)')" \\
        backfill topology.yaml --program NAME --input /shared/readings.parquet --output /shared/out.parquet

(docs/backfill.md, "Running on a cluster").
"""

import os
import sys

if __name__ == "__main__":
    # Run as a script, this file's directory is first on sys.path, where this package's modules
    # (job, plan, source, ...) would shadow top-level modules of the same names: drop it.
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]

    from eventscript.cli.main import main

    raise SystemExit(main())
