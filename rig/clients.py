"""Client names and versions as the manifests spell them, and kcat plumbing.

Every manifest line names its client with the version, e.g.
``"confluent-kafka 2.16.1 (librdkafka 2.16.0)"``, because the API versions a
client speaks depend on that version.
"""

from __future__ import annotations

import atexit
import functools
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Optional

from rig.kafkajs import LIBRARIES, kafkajs_name

FIXED_TS = 1_700_000_000_000
"""Record timestamps the rig sets itself (ms since epoch), so manifests are stable."""


@functools.cache
def confluent_name() -> str:
    import confluent_kafka

    version = confluent_kafka.version()  # a str in 2.x, (str, int) in older releases
    if isinstance(version, tuple):
        version = version[0]
    return f"confluent-kafka {version} (librdkafka {confluent_kafka.libversion()[0]})"


@functools.cache
def kafka_python_name() -> str:
    import kafka

    return f"kafka-python {kafka.__version__}"


@functools.cache
def aiokafka_name() -> str:
    import aiokafka

    return f"aiokafka {aiokafka.__version__}"


@functools.cache
def bundled_librdkafka() -> Optional[str]:
    """Path of the librdkafka shipped inside the confluent-kafka wheel, if any."""
    import importlib.util

    spec = importlib.util.find_spec("confluent_kafka")
    if spec is None or not spec.submodule_search_locations:
        return None
    site = Path(next(iter(spec.submodule_search_locations))).parent
    for libs in (site / "confluent_kafka.libs", Path(next(iter(spec.submodule_search_locations))) / ".libs"):
        if libs.is_dir():
            for lib in sorted(libs.iterdir()):
                if lib.name.startswith("librdkafka"):
                    return str(lib)
    return None


@functools.cache
def kcat_env_dir() -> Optional[str]:
    """A temporary folder holding ``librdkafka.so.1`` -> the wheel's librdkafka.

    Debian's kcat links librdkafka 2.0.2, which mis-reads tansu's ApiVersions
    reply. Pointing LD_LIBRARY_PATH at this folder makes kcat load the wheel's
    newer librdkafka instead (same soname ABI).
    """
    lib = bundled_librdkafka()
    if lib is None:
        return None
    folder = tempfile.mkdtemp(prefix="kdrig-rdkafka-")
    os.symlink(lib, os.path.join(folder, "librdkafka.so.1"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


def kcat_env(bundled: bool = True) -> dict:
    env = dict(os.environ)
    if bundled:
        folder = kcat_env_dir()
        if folder is None:
            raise RuntimeError("confluent-kafka's bundled librdkafka was not found")
        env["LD_LIBRARY_PATH"] = folder
    return env


def kcat_binary() -> str:
    path = shutil.which("kcat") or shutil.which("kafkacat")
    if path is None:
        raise RuntimeError("kcat is not installed (apt-get install kcat)")
    return path


@functools.cache
def kcat_name(bundled: bool = True) -> str:
    """E.g. ``"kcat 1.7.1 (librdkafka 2.16.0)"``, read from ``kcat -V``."""
    try:
        out = subprocess.run([kcat_binary(), "-V"], capture_output=True, text=True, env=kcat_env(bundled), timeout=10).stdout
    except (RuntimeError, OSError):
        return "kcat (not installed)"
    version = re.search(r"Version (\S+)", out)
    lib = re.search(r"librdkafka (\S+)", out)
    return f"kcat {version.group(1) if version else '?'} (librdkafka {lib.group(1) if lib else '?'})"


def all_client_versions() -> dict:
    """Every client the rig knows, for the capture line of a manifest."""
    out = {}
    for key, fn in (("confluent-kafka", confluent_name), ("kafka-python", kafka_python_name), ("aiokafka", aiokafka_name)):
        try:
            out[key] = fn()
        except ImportError:
            out[key] = None
    out["kcat"] = kcat_name(True)
    for library in LIBRARIES:
        out[library] = kafkajs_name(library)
    return out
