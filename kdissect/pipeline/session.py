"""Starting Spark: checks that say what is missing, the settings the job needs, the package for executors."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import zipfile
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

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


MASTERS = re.compile(
    r"local(\[(\*|\d+)(,\d+)?\])?|local-cluster\[\d+,\d+,\d+\]|spark://[^/\s]+|yarn|k8s://\S+",
)
"""The master URLs Spark 4 accepts (Mesos is gone)."""
CONNECT_TIMEOUT = 5.0


def check_master(master: str) -> None:
    """SparkUnavailable for a master URL Spark would reject, or a standalone master nobody answers at, before
    Spark spends seconds starting (and a minute retrying an address that does not answer)."""
    if not MASTERS.fullmatch(master):
        raise SparkUnavailable(
            f"--master {master}: not a Spark master URL (local, local[N], local[*], spark://HOST:PORT, yarn, k8s://https://HOST:PORT)"
        )
    if not master.startswith("spark://"):
        return
    failures = []
    for address in master[len("spark://") :].split(","):
        host, _, port = address.rpartition(":")
        if not host or not port.isdigit():
            raise SparkUnavailable(f"--master {master}: give spark://HOST:PORT (the standalone master's port, often 7077)")
        try:
            socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT).close()
            return
        except OSError as exc:
            failures.append(f"{address}: {exc.strerror or exc}")
    raise SparkUnavailable(f"--master {master}: no Spark master answers ({'; '.join(failures)})")


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


JIT = "-XX:TieredStopAtLevel=1"


def _quiet_logging() -> str:
    """A log4j2 configuration that lets only errors through: Spark's start-up warnings are not for our users."""
    path = os.path.join(tempfile.gettempdir(), "kdissect-log4j2.properties")
    if not os.path.exists(path):
        with open(path, "w") as f:
            f.write(LOG4J2)
    return path


def start(master: str | None = "local[*]", extra: dict[str, str] | None = None) -> SparkSession:
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
        .config("spark.sql.adaptive.enabled", "true")  # the writes' rebalance; the dissecting shuffle's count is fixed (job.py)
        .config("spark.python.worker.reuse", "true")
    )
    # C1 alone: C2's compiling cost the job more CPU than its faster code saved (bench_spark.py: the JVM's CPU
    # 32 s -> 20 s on 100 MB in local mode, where the tasks run in this JVM; on a cluster the driver only plans)
    java = f"-Dlog4j2.configurationFile={_quiet_logging()} {JIT}"
    builder = builder.config("spark.driver.extraJavaOptions", java)
    builder = builder.config("spark.ui.showConsoleProgress", "false")  # the command prints its own progress
    # timestamps as Parquet TIMESTAMP (UTC-adjusted, microseconds), not INT96, so pandas and DuckDB see UTC times
    builder = builder.config("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS").config("spark.sql.session.timeZone", "UTC")
    if master is not None and is_local(master):
        builder = builder.config("spark.ui.enabled", "false")
    for key, value in (extra or {}).items():
        builder = builder.config(key, value)
    try:
        spark = builder.getOrCreate()
    except Exception as exc:  # py4j's errors carry the whole Java trace: the first line says what went wrong
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        raise SparkUnavailable(f"Spark did not start (--master {master}): {lines[-1] if lines else type(exc).__name__}") from None
    spark.sparkContext.setLogLevel("ERROR")
    running = spark.sparkContext.master
    assert running is not None  # a SparkContext does not start without a master URL
    if not is_local(running):
        spark.sparkContext.addPyFile(package_zip())
    from kdissect.pipeline.source import CaptureSource

    spark.dataSource.register(CaptureSource)
    return spark
