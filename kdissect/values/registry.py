"""Schemas asked of a registry (`--schema-registry URL`): Confluent's `GET /schemas/ids/{id}` and
`/schemas/guids/{guid}`, Apicurio's `GET /apis/registry/v2/ids/globalIds/{id}`.

Credentials come from the environment, never the command line: `KDISSECT_REGISTRY_USER_INFO` (`user:password`, as
Confluent's `basic.auth.user.info`; `SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO` is read too) or `KDISSECT_REGISTRY_TOKEN`
(a bearer token). Answers are kept on disk (the cache folder of KDISSECT_CACHE, `registry/`, one file per URL and
schema), so a capture read again asks nothing; a schema the registry does not have is asked again next run. A
registry that cannot be reached is told once, in one line, and not asked again during the run: decoding goes on
with the other sources.
"""

from __future__ import annotations

import base64
import hashlib
import os
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

import orjson

from kdissect.values.answers import apicurio_schema, confluent_schema
from kdissect.values.framing import GLOBAL_ID, GUID, ID, SchemaRef
from kdissect.values.schemas import Schema

TIMEOUT = 5.0
MAX_ANSWER = 16 << 20
USER_INFO = ("KDISSECT_REGISTRY_USER_INFO", "SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO")
TOKEN = "KDISSECT_REGISTRY_TOKEN"


class RegistryClient:
    """Asks one registry for the schemas a capture's values name."""

    def __init__(self, url: str, cache: str | None, warn: Callable[[str], None]) -> None:
        self.url = url.rstrip("/")
        self.cache = None if cache is None else os.path.join(cache, "registry", hashlib.sha256(self.url.encode()).hexdigest()[:16])
        self.warn = warn
        self.unreachable = False
        self.asked = 0

    def __call__(self, ref: SchemaRef) -> Schema | None:
        path = {ID: f"/schemas/ids/{ref.id}", GUID: f"/schemas/guids/{ref.id}", GLOBAL_ID: f"/apis/registry/v2/ids/globalIds/{ref.id}"}.get(
            ref.kind
        )
        if path is None:
            return None
        source = f"registry {self.url}"
        kept = self._kept(ref)
        answer = kept if kept is not None else self._ask(path, ref)
        if answer is None:
            return None
        status, body, artifact = answer
        if status != 200:
            return None
        if ref.kind == GLOBAL_ID:
            return apicurio_schema(body.decode("utf-8", "replace"), int(ref.id), artifact, source)
        try:
            told = orjson.loads(body)
        except orjson.JSONDecodeError:
            return None
        return confluent_schema(told, source, ref)

    def _file(self, ref: SchemaRef) -> str | None:
        return None if self.cache is None else os.path.join(self.cache, f"{ref.kind}-{ref.id}.json")

    def _kept(self, ref: SchemaRef) -> tuple[int, bytes, str | None] | None:
        path = self._file(ref)
        if path is None or not os.path.exists(path):
            return None
        try:
            with open(path, "rb") as kept:
                told = orjson.loads(kept.read())
            return 200, base64.b64decode(told["body"]), told.get("artifact")
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _keep(self, ref: SchemaRef, body: bytes, artifact: str | None) -> None:
        path = self._file(ref)
        if path is None:
            return
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            temporary = f"{path}.{os.getpid()}"
            with open(temporary, "wb") as out:
                out.write(orjson.dumps({"url": self.url, "body": base64.b64encode(body).decode(), "artifact": artifact}))
            os.replace(temporary, path)
        except OSError:
            pass  # a cache that cannot be written only costs asking again

    def _ask(self, path: str, ref: SchemaRef) -> tuple[int, bytes, str | None] | None:
        if self.unreachable:
            return None
        self.asked += 1
        request = urllib.request.Request(self.url + path, headers=_credentials())
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT) as answer:
                body = answer.read(MAX_ANSWER)
                artifact = answer.headers.get("X-Registry-ArtifactType")
                self._keep(ref, body, artifact)
                return answer.status, body, artifact
        except urllib.error.HTTPError as exc:
            if exc.code in (401, 403):
                self.unreachable = True
                self.warn(
                    f"schema registry {self.url}: {exc.code} {exc.reason} (credentials: {USER_INFO[0]} or {TOKEN}); "
                    "decoding goes on without it"
                )
            return exc.code, b"", None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            self.unreachable = True
            reason: Any = getattr(exc, "reason", exc)
            self.warn(f"schema registry {self.url}: unreachable ({reason}); decoding goes on without it")
            return None


def _credentials() -> dict[str, str]:
    headers = {"Accept": "application/vnd.schemaregistry.v1+json, application/json"}
    token = os.environ.get(TOKEN)
    user_info = next((os.environ[name] for name in USER_INFO if os.environ.get(name)), None)
    if token:
        headers["Authorization"] = f"Bearer {token}"
    elif user_info:
        headers["Authorization"] = "Basic " + base64.b64encode(user_info.encode()).decode()
    return headers
