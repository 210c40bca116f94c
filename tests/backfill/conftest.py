"""One local SparkSession for the whole test session (starting one takes seconds)."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    pytest.importorskip("pyspark")
    if shutil.which("java") is None:
        pytest.skip("PySpark needs a Java runtime (java on PATH)")
    from eventscript.backfill.job import spark_session

    session = spark_session("local[2]", ui=False, conf={"spark.sql.shuffle.partitions": "2",
                                                        "spark.driver.memory": "1g"})
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
