"""Spark's start-up lines hidden unless asked for (``backfill -v`` shows them).

Spark's driver JVM logs through log4j2 from its first moment: the default profile's notice,
"Setting default log level", and warnings such as NativeCodeLoader's reach the terminal before
the job can call ``setLogLevel``. A log4j2 configuration at ERROR, handed to the driver JVM when
it starts (``spark.driver.extraJavaOptions``), keeps them out; errors still show.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

_CONFIG = """\
status = error
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
rootLogger.level = error
rootLogger.appenderRef.stdout.ref = console
# Spark sets a shell's level from the logger of the class that starts logging (for PySpark, the
# gateway), saying so on stderr unless that logger is configured here.
logger.repl.name = org.apache.spark.repl.Main
logger.repl.level = error
logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.gateway.level = error
"""


def quiet_spark_conf() -> dict[str, str]:
    """Spark settings that start the driver JVM with logging at ERROR (a file in the temporary
    directory, written once per process)."""
    path = Path(tempfile.gettempdir()) / "eventscript-spark-log4j2-error.properties"
    if not path.exists() or path.read_text() != _CONFIG:
        path.write_text(_CONFIG)
    return {"spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile={path.as_uri()}"}
