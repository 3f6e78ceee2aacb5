"""Starting Spark: checks that say what is missing, the settings the job needs, the package for executors."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile

MIN_JAVA = 17


class SparkUnavailable(Exception):
    """pyspark or Java is missing or too old; the message says how to get it."""


def check_pyspark() -> None:
    try:
        import pyarrow  # noqa: F401
        import pyspark
    except ImportError as exc:
        raise SparkUnavailable(
            f"the spark command needs pyspark and pyarrow ({exc.name} is not installed): pip install 'kdissect[spark]'"
        ) from None
    major = int(pyspark.__version__.split(".")[0])
    if major < 4:
        raise SparkUnavailable(f"pyspark {pyspark.__version__} is too old (4.0 or later is needed): pip install 'kdissect[spark]'")


def java_command() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home and os.path.exists(os.path.join(home, "bin", "java")):
        return os.path.join(home, "bin", "java")
    return shutil.which("java")


def check_java() -> str:
    """The Java version; SparkUnavailable when there is none, or one older than Spark 4 accepts."""
    java = java_command()
    if java is None:
        raise SparkUnavailable(
            f"Spark needs Java {MIN_JAVA} or later and none was found: install one (e.g. apt-get install "
            f"openjdk-{MIN_JAVA}-jre-headless) or set JAVA_HOME"
        )
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30).stderr
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SparkUnavailable(f"{java} does not run: {exc}") from None
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out)
    if not match:
        raise SparkUnavailable(f"cannot tell the version of {java}: {out.strip().splitlines()[:1]}")
    major = int(match.group(1))
    if major == 1 and match.group(2):
        major = int(match.group(2))
    if major < MIN_JAVA:
        raise SparkUnavailable(f"Spark 4 needs Java {MIN_JAVA} or later; {java} is Java {major}")
    return str(major)


def is_local(master: str) -> bool:
    return master == "local" or master.startswith("local[")


def package_zip() -> str:
    """The kdissect package as a zip for `addPyFile`, so executors run the driver's code."""
    import kdissect

    root = os.path.dirname(os.path.abspath(kdissect.__file__))
    fd, path = tempfile.mkstemp(prefix="kdissect-", suffix=".zip")
    os.close(fd)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for folder, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for f in files:
                if f.endswith((".py", ".tsv", ".json")):
                    full = os.path.join(folder, f)
                    z.write(full, os.path.relpath(full, os.path.dirname(root)))
    return path


LOG4J2 = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""


def _quiet_logging() -> str:
    """A log4j2 configuration that lets only errors through: Spark's start-up warnings are not for our users."""
    path = os.path.join(tempfile.gettempdir(), "kdissect-log4j2.properties")
    if not os.path.exists(path):
        with open(path, "w") as f:
            f.write(LOG4J2)
    return path


def start(master: str | None = "local[*]", extra: dict[str, str] | None = None):
    """A SparkSession for the job, after the checks; PYSPARK_PYTHON is this interpreter unless already set.

    `master` None keeps what spark-submit configured."""
    check_pyspark()
    check_java()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder if master is None else SparkSession.builder.master(master)
    builder = (
        builder.appName("kdissect")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "256")
        .config("spark.sql.execution.arrow.maxBytesPerBatch", str(64 << 20))  # rows are packet blobs
        .config("spark.sql.execution.pythonUDF.arrow.enabled", "true")
        .config("spark.sql.adaptive.enabled", "false")
        .config("spark.python.worker.reuse", "true")
    )
    builder = builder.config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={_quiet_logging()}")
    builder = builder.config("spark.ui.showConsoleProgress", "false")  # the command prints its own progress
    if master is not None and is_local(master):
        builder = builder.config("spark.ui.enabled", "false")
    for key, value in (extra or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    if not is_local(spark.sparkContext.master):
        spark.sparkContext.addPyFile(package_zip())
    from kdissect.pipeline.source import CaptureSource

    spark.dataSource.register(CaptureSource)
    return spark
