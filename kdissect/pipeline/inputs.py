"""What the user named, as a list of files every worker can open: paths, globs, directories, URIs.

Local paths are made absolute (a worker's working directory is not the driver's). URIs with a scheme other
than file:// are listed through Spark's Hadoop file systems (globs and directories too), so anything Spark can
list can be named; tasks open them through pyarrow's file systems.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


class InputError(Exception):
    """A named input that does not exist, holds no file or is not a capture; the message is one line for the user."""


@dataclass(frozen=True, slots=True)
class InputFile:
    path: str
    size: int
    named: bool
    """Named by the user (a file or a glob match), not found inside a directory: a non-capture is an error."""


def is_uri(text: str) -> bool:
    """A URI with a scheme other than file://, listed through Spark."""
    return _is_uri(text) and not text.startswith("file://")


def _is_uri(text: str) -> bool:
    head, sep, _ = text.partition("://")
    return bool(sep) and head.isalnum() and len(head) > 1


def _local(name: str) -> list[InputFile]:
    path = name[7:] if name.startswith("file://") else name
    path = os.path.abspath(os.path.expanduser(path))
    if glob.has_magic(path):
        matches = sorted(glob.glob(path, recursive=True))
        if not matches:
            raise InputError(f"{name}: no file matches")
        out = []
        for match in matches:
            out.extend(_local(match) if os.path.isdir(match) else [InputFile(match, os.path.getsize(match), True)])
        return out
    if os.path.isdir(path):
        out = []
        for root, dirs, files in os.walk(path):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            paths = [os.path.join(root, f) for f in sorted(files) if not f.startswith(".")]
            out.extend(InputFile(p, os.path.getsize(p), False) for p in paths)
        if not out:
            raise InputError(f"{name}: the directory holds no file")
        return out
    if not os.path.exists(path):
        raise InputError(f"{name}: no such file")
    return [InputFile(path, os.path.getsize(path), True)]


def _remote(name: str, spark: SparkSession | None) -> list[InputFile]:
    assert spark is not None  # a URI is listed by a running Spark; local inputs alone are expanded before it starts
    jvm = spark.sparkContext._jvm
    assert jvm is not None  # set while a SparkContext runs
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    hpath = jvm.org.apache.hadoop.fs.Path(name)
    try:
        fs = hpath.getFileSystem(conf)
        statuses = fs.globStatus(hpath)
    except Exception as exc:  # py4j wraps the JVM's exception
        raise InputError(f"{name}: cannot list: {str(exc).splitlines()[0]}") from None
    if not statuses:
        raise InputError(f"{name}: no such file")
    out = []
    for status in statuses:
        if status.isDirectory():
            files = fs.listFiles(status.getPath(), True)
            while files.hasNext():
                f = files.next()
                base = f.getPath().getName()
                if not base.startswith((".", "_")):
                    out.append(InputFile(f.getPath().toString(), f.getLen(), False))
        else:
            out.append(InputFile(status.getPath().toString(), status.getLen(), True))
    return out


def expand(names: list[str], spark: SparkSession | None = None) -> list[InputFile]:
    """Every file the names stand for, each once, in the order named."""
    seen: dict[str, InputFile] = {}
    for name in names:
        found = _remote(name, spark) if _is_uri(name) and not name.startswith("file://") else _local(name)
        for f in found:
            seen.setdefault(f.path, f)
    return list(seen.values())
