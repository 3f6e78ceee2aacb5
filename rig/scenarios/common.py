"""Helpers shared by workloads: recording operations and their errors."""

from __future__ import annotations

import json
import re
import time
from typing import Any, Callable, Optional

from rig.manifest import Manifest


def err_text(exc: BaseException) -> str:
    """``"error CODE NAME: message"`` for Kafka errors of any client, else the exception."""
    # confluent-kafka: KafkaException(KafkaError) or a KafkaError directly
    kerr = exc.args[0] if getattr(exc, "args", None) else None
    if hasattr(kerr, "code") and hasattr(kerr, "name") and callable(kerr.code):
        return f"error {kerr.code()} {kerr.name()}: {kerr.str()}"
    if hasattr(exc, "code") and callable(exc.code) and hasattr(exc, "name"):
        return f"error {exc.code()} {exc.name()}: {exc.str()}"
    # kafka-python / aiokafka: BrokerResponseError subclasses carry errno
    errno = getattr(exc, "errno", None)
    if isinstance(errno, int) and errno != -1:
        return f"error {errno} {type(exc).__name__}" + _tail(exc)
    return f"error {type(exc).__name__}" + _tail(exc)


def _tail(exc: BaseException) -> str:
    text = _short(exc)
    return f": {text}" if text else ""


def _short(exc: BaseException, limit: int = 160) -> str:
    """The message without kafka-python's echo of the whole request and response."""
    text = str(exc).split(": Request '")[0]
    text = re.sub(r"^\[Error -?\d+\] \w+: ?", "", text)
    text = re.sub(r"^\w+(Error|Exception)\(None\)$|^None$", "", text)
    if text.startswith(type(exc).__name__ + ": "):
        text = text[len(type(exc).__name__) + 2 :]
    return text if len(text) <= limit else text[:limit] + "..."


def attempt(m: Manifest, client: str, op: str, fn: Callable[[], Any], show: Optional[Callable[[Any], Any]] = None, **fields: Any) -> Any:
    """Run *fn*, record an ``op`` line with its outcome, return its value (None on error).

    Failures are part of the ground truth (tansu lacks some APIs, rejects legacy
    formats), so they are recorded rather than raised. *show* turns a successful
    value into the line's ``response`` field.
    """
    try:
        value = fn()
    except Exception as exc:  # the outcome is recorded, not hidden
        m.op(client, op, result=err_text(exc), **fields)
        return None
    if show is not None:
        try:
            fields["response"] = jsonable(show(value))
        except Exception:  # a summary is a nicety: never lose the run over it
            fields["response"] = str(value)[:500]
    m.op(client, op, **fields)
    return value


def jsonable(value: Any) -> Any:
    """Best effort: keep small results in the manifest as plain JSON."""
    try:
        return json.loads(json.dumps(value, default=str))
    except (TypeError, ValueError):
        return str(value)


def wait_until(predicate: Callable[[], bool], timeout: float, step: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return predicate()
