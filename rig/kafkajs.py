"""KafkaJS, the pure-JavaScript client, as a workload step: a plan of acts goes to rig/node/kafkajs.js, and the lines
it writes back become manifest lines named after the library and its version.

The driver speaks base64 for every key, value and header value; this side turns them back into bytes so that
rig/manifest.py alone decides how bytes are written. `npm ci` in rig/node installs the pinned versions (rig/setup.sh).
"""

from __future__ import annotations

import base64
import functools
import json
import os
import subprocess
import threading
from pathlib import Path
from typing import Any, Optional

from rig.manifest import Manifest

NODE = Path(__file__).resolve().parent / "node"
DRIVER = NODE / "kafkajs.js"
LIBRARIES = ("kafkajs", "kafkajs-1.12")
"""Folders of rig/node/node_modules: KafkaJS 2.2.4, and 1.12.0, the last before KIP-394 (JoinGroup up to v2)."""


@functools.cache
def kafkajs_name(library: str = "kafkajs") -> str:
    """E.g. ``"kafkajs 2.2.4 (node v20.20.2)"``; ``"kafkajs (not installed)"`` before `npm ci`."""
    package = NODE / "node_modules" / library / "package.json"
    if not package.exists():
        return f"{library} (not installed)"
    version = json.loads(package.read_text())["version"]
    node = subprocess.run(["node", "--version"], capture_output=True, text=True, timeout=10).stdout.strip()
    return f"kafkajs {version} (node {node})"


def as_base64(value: Optional[bytes]) -> Optional[str]:
    return None if value is None else base64.b64encode(value).decode("ascii")


def from_base64(value: Optional[str]) -> Optional[bytes]:
    return None if value is None else base64.b64decode(value)


def plan_records(records: list[dict]) -> list[dict]:
    """The rig's record dicts (kit.py) as the driver reads them. A record with `encode` (``{"schema": NAME, "value":
    ..., "cut": bool}``) gets its value from the registry library's encode(), and its `decoded` (what the manifest says
    the value means) that schema's id."""
    return [
        {
            "key": as_base64(rec["key"]),
            "value": as_base64(rec.get("value")),
            "headers": [[k, as_base64(v)] for k, v in rec.get("headers") or []],
            "partition": rec.get("partition"),
            "timestamp": rec.get("timestamp"),
            **{field: rec[field] for field in ("encode", "decoded") if field in rec},
        }
        for rec in records
    ]


def run_kafkajs(
    m: Manifest, bootstrap: str, acts: list[dict], library: str = "kafkajs", timeout: float = 120, registry: Optional[str] = None
) -> None:
    """Run *acts* (rig/node/kafkajs.js says which) with one Node process; write its lines to the manifest. `registry`
    is the schema registry's URL the `register` act, `encode` records and `decode` consumers use
    (@kafkajs/confluent-schema-registry)."""
    client = kafkajs_name(library)
    plan = json.dumps({"bootstrap": bootstrap, "acts": acts, **({"registry": registry} if registry else {})})
    env = {**os.environ, "KAFKAJS_NO_PARTITIONER_WARNING": "1"}  # the rig's records name their partitions
    driver = subprocess.Popen(["node", str(DRIVER), library], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=NODE, env=env)
    timer = threading.Timer(timeout, driver.kill)  # as subprocess.run's timeout, but the lines are written as they come
    timer.start()
    try:
        assert driver.stdin is not None and driver.stdout is not None
        driver.stdin.write(plan)
        driver.stdin.close()
        for text in driver.stdout:  # as they come: in line with what other threads write (the registry's schema lines)
            write_line(m, client, json.loads(text))
        status = driver.wait()
    finally:
        timer.cancel()
    if status != 0:
        raise RuntimeError(f"the KafkaJS driver exited with status {status}")


def write_line(m: Manifest, client: str, line: dict[str, Any]) -> None:
    """One driver line as a manifest line, named after `client` unless it names its own (the registry library's)."""
    kind = line.pop("kind")
    client = line.pop("client", client)
    if kind == "op":
        m.op(client, line.pop("op"), **line)
        return
    for field in ("key", "value"):
        line[field] = from_base64(line[field])
    line["headers"] = [(k, from_base64(v)) for k, v in line["headers"]]
    if kind == "produced":
        m.produced(client, **line)
    else:
        m.consumed(client, **line)
