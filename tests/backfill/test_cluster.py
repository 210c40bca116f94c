"""``eventscript backfill`` submitted with ``spark-submit`` to Spark's ``local-cluster`` master, the
way docs/backfill.md ("Running on a cluster") says to run it on a cluster.

``local-cluster[2,1,1024]`` starts a standalone master and two workers inside the driver's JVM, and
each worker launches its executor as a separate JVM process with its own Python workers — what a
real cluster does, on one machine. It runs from the pip wheel: pyspark's ``bin/spark-submit`` finds
the wheel's directory as SPARK_HOME, and the workers build the executors' classpath from its
``jars/``. Here SPARK_HOME is a temporary directory linking the wheel's ``bin`` and ``jars`` only
because the workers write their work directories (executor logs, fetched files) under
``$SPARK_HOME/work``, which must not land inside the virtualenv.

The executors run a Python that has eventscript's dependencies but not eventscript (the venv's
interpreter without its site hooks: the editable install is a .pth hook), so the package reaches
them only as the docs say: ``--py-files eventscript.zip``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
from test_backfill_tasks import PROGRAM, by_key, export_of, random_trace, run_tester
from test_spark_backfill import topology_file

import eventscript
from eventscript.backfill import submit  # the application file users submit (docs/backfill.md)
from eventscript.kafka.config import load_topology

pytestmark = [pytest.mark.spark, pytest.mark.slow]

MASTER = "local-cluster[2,1,1024]"
#: Three short-lived JVMs (driver, two executors) on a busy 2-core machine: the C1 compiler alone and the
#: serial collector halve their CPU time (34 s -> 19 s measured) and change nothing else.
QUICK_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def spark_home(tmp: Path) -> Path:
    """A SPARK_HOME with the wheel's launcher scripts and jars, whose work/ is under ``tmp``."""
    wheel = Path(pytest.importorskip("pyspark").__file__).parent
    home = tmp / "spark-home"
    home.mkdir()
    for part in ("bin", "jars"):
        (home / part).symlink_to(wheel / part, target_is_directory=True)
    return home


def package_zip(tmp: Path) -> Path:
    """eventscript as a zip for ``--py-files`` (what ``python -m zipfile -c eventscript.zip
    service/eventscript`` makes), without byte-code caches."""
    package = Path(eventscript.__file__).parent
    path = tmp / "eventscript.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for f in sorted(package.rglob("*")):
            if f.is_file() and "__pycache__" not in f.parts:
                z.write(f, f.relative_to(package.parent))
    return path


def python_without_eventscript(tmp: Path) -> Path:
    """The venv's interpreter without site hooks: its site-packages import, eventscript does not."""
    site = sysconfig.get_paths()["purelib"]
    path = tmp / "python-executor"
    path.write_text(f'#!/bin/sh\nPYTHONPATH="{site}${{PYTHONPATH:+:$PYTHONPATH}}" exec "{sys.executable}" -S "$@"\n')
    path.chmod(0o755)
    probe = subprocess.run(
        [str(path), "-c", "import pyarrow, pyspark, orjson; import eventscript"], capture_output=True, text=True
    )
    assert "No module named 'eventscript'" in probe.stderr, probe.stderr
    return path


def test_spark_submit_to_a_local_cluster_gives_the_testers_outputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if shutil.which("java") is None:
        pytest.skip("no Java runtime: scripts/install-system-deps installs default-jre-headless")
    home = spark_home(tmp_path)
    topo_path = topology_file(tmp_path, 3)
    trace = random_trace(5, events=300)
    export = export_of(tmp_path, load_topology(topo_path), trace, monkeypatch, 3)
    bin_dir = Path(sys.executable).parent
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "SPARK_HOME": str(home),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "PYSPARK_PYTHON": str(python_without_eventscript(tmp_path)),
    }
    command = [
        str(bin_dir / "spark-submit"),
        "--master",
        MASTER,
        "--py-files",
        str(package_zip(tmp_path)),
        "--conf",
        "spark.executor.memory=512m",
        "--driver-java-options",
        QUICK_JVM,
        "--conf",
        f"spark.executor.extraJavaOptions={QUICK_JVM}",
        submit.__file__,
        "backfill",
        "topology.yaml",
        "--input",
        str(export),
        "--output",
        "out.jsonl",
        "--no-ui",
    ]
    proc = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    said = f"stdout:\n{proc.stdout[-2000:]}\nstderr:\n{proc.stderr[-4000:]}"
    assert proc.returncode == 0, said
    # Under spark-submit the application's stderr reaches spark-submit's stdout (PythonRunner merges them).
    assert "4/4 tasks done" in proc.stdout + proc.stderr, said  # 3 partitions on 2 slots: 2 whole, 1 split in 2

    # Two executors ran, each a process of its own with its own log under the workers' work dir.
    assert len(list((home / "work").glob("app-*/*/stderr"))) == 2
    got = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    want = run_tester(PROGRAM, trace)
    assert len(got) == len(want) > 300
    assert by_key(got) == by_key(want)
    ids = [x["id"] for x in got]
    assert len(set(ids)) == len(ids)
