"""The manifest: a JSON-lines file of what the rig did, the ground truth of a capture.

Line kinds (the ``kind`` field):

* ``capture``  - first line: broker, clients and versions, address, link type, MTU, date;
* ``op``       - one operation and its outcome (``"result": "ok"`` or ``"error ..."``);
* ``produced`` - one record as the producer sent it, with the delivery report's
  partition/offset (null where there is none, e.g. acks=0);
* ``consumed`` - one record as a consumer received it;
* ``schema``   - one schema the registry stand-in registered (rig/registry.py): subject, version, id, guid, schemaType,
  schema (its text as the registry keeps it).

Bytes follow the project's JSON convention: None stays null, bytes that are valid
UTF-8 become a JSON string, anything else becomes ``{"base64": "..."}``.
"""

from __future__ import annotations

import base64
import json
import os
import re
import threading
from typing import Any, Iterable, Optional

__all__ = ["Manifest", "enc", "enc_headers", "dec", "dumps"]

UNSEEN = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
"""Characters a terminal acts on or hides (DEL, C1 controls, line separators, bidi controls): JSON escapes only C0."""


def dumps(line: dict) -> str:
    """One manifest line: UTF-8 text as it is, except what a terminal would act on, so that `cat` shows the line."""
    return UNSEEN.sub(lambda found: f"\\u{ord(found.group()):04x}", json.dumps(line, ensure_ascii=False))


def enc(value: Optional[bytes | str]) -> Any:
    """Encode bytes for JSON: null, a UTF-8 string, or ``{"base64": ...}``."""
    if value is None:
        return None
    if isinstance(value, str):
        value = value.encode()
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(value).decode("ascii")}


def dec(value: Any) -> Optional[bytes]:
    """Inverse of :func:`enc`, for readers of the manifest."""
    if value is None:
        return None
    if isinstance(value, dict):
        return base64.b64decode(value["base64"])
    return value.encode("utf-8")


def enc_headers(headers: Optional[Iterable]) -> list:
    """Headers as ``[[key-string, value], ...]`` in wire order, duplicates kept."""
    out = []
    for key, value in headers or []:
        if isinstance(key, bytes):
            key = key.decode("utf-8")
        out.append([key, enc(value)])
    return out


class Manifest:
    """Appends JSON lines to a file; safe to call from client callback threads.

    The rig may run a workload in a child process (inside a network namespace);
    both processes append to the same path, one after the other.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.Lock()

    def write(self, kind: str, **fields: Any) -> dict:
        line = {"kind": kind, **fields}
        text = dumps(line)
        with self._lock, open(self.path, "a", encoding="utf-8") as out:
            out.write(text + "\n")
        return line

    def op(self, client: str, op: str, result: str = "ok", **fields: Any) -> dict:
        return self.write("op", client=client, op=op, **fields, result=result)

    def produced(
        self,
        client: str,
        *,
        topic: str,
        partition: Optional[int],
        offset: Optional[int],
        timestamp: Optional[int],
        key: Optional[bytes],
        value: Optional[bytes],
        headers: Optional[Iterable] = None,
        codec: str = "none",
        acks: Any = 1,
        **extra: Any,
    ) -> dict:
        return self.write(
            "produced",
            client=client,
            topic=topic,
            partition=partition,
            offset=offset,
            timestamp=timestamp,
            key=enc(key),
            value=enc(value),
            headers=enc_headers(headers),
            codec=codec,
            acks=acks,
            **extra,
        )

    def consumed(
        self,
        client: str,
        *,
        group: Optional[str],
        topic: str,
        partition: int,
        offset: int,
        timestamp: Optional[int],
        key: Optional[bytes],
        value: Optional[bytes],
        headers: Optional[Iterable] = None,
        **extra: Any,
    ) -> dict:
        return self.write(
            "consumed",
            client=client,
            group=group,
            topic=topic,
            partition=partition,
            offset=offset,
            timestamp=timestamp,
            key=enc(key),
            value=enc(value),
            headers=enc_headers(headers),
            **extra,
        )

    def read(self) -> list[dict]:
        if not os.path.exists(self.path):
            return []
        with open(self.path, encoding="utf-8") as src:
            return [json.loads(line) for line in src if line.strip()]
