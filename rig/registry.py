"""A schema registry stand-in: the REST calls Confluent's serializers and deserializers make, in memory, on loopback.

No Confluent or Apicurio server installs on these machines, so the value scenarios run this one. It answers the
documented calls the clients of these captures make (Confluent's Schema Registry API reference):

* ``POST /subjects/{subject}/versions`` registers a schema (the serializers' auto-registration), answering the
  full registered schema (``id``, ``guid``, ``subject``, ``version``, ``schema``, ``schemaType``, ``references``);
  the same schema under the same subject keeps its id, as a registry does;
* ``POST /subjects/{subject}`` looks a schema up under a subject;
* ``GET /schemas/ids/{id}`` and ``GET /schemas/guids/{guid}`` (the deserializers), ``GET /schemas/ids/{id}/subjects``,
  ``GET /subjects``, ``GET /subjects/{subject}/versions``, ``GET /subjects/{subject}/versions/{version|latest}``;
* ``GET /config`` answers the global compatibility level (BACKWARD until ``PUT /config`` sets another);
  ``GET /config/{subject}`` the subject's own level, set by ``PUT /config/{subject}``, and without one error 40408
  (the global level with ``?defaultToGlobal=true``), as Confluent's registry does: @kafkajs/confluent-schema-registry
  asks for it before registering, and sets it (``PUT``) after a subject's first registration.

Like Confluent's, it keeps its schemas in the ``_schemas`` topic: each registration is also produced there (key
``{"keytype": "SCHEMA", "subject", "version", "magic": 1}``, value the registered schema), so a capture of the broker
holds them too. Compatibility is not checked. HTTP/1.1 with keep-alive; errors are Confluent's JSON error bodies.
"""

from __future__ import annotations

import contextlib
import json
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterator, Optional
from urllib.parse import unquote, urlsplit

SOFTWARE = "rig/registry.py (a stand-in implementing Confluent Schema Registry's REST calls the clients make)"
IMPLEMENTS = (
    "POST /subjects/{subject}/versions",
    "POST /subjects/{subject}",
    "GET /schemas/ids/{id}",
    "GET /schemas/guids/{guid}",
    "GET /schemas/ids/{id}/subjects",
    "GET /subjects",
    "GET /subjects/{subject}/versions",
    "GET /subjects/{subject}/versions/{version}",
    "GET /config",
    "GET /config/{subject}",
    "PUT /config",
    "PUT /config/{subject}",
)
CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
LEVELS = frozenset(("NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE"))


class Store:
    """The registered schemas: ids from 1 up (a registry's first id), versions per subject from 1 up."""

    def __init__(self, on_register: Optional[Callable[[dict], None]] = None) -> None:
        self.lock = threading.Lock()
        self.by_id: dict[int, dict] = {}
        self.subjects: dict[str, list[int]] = {}
        self.compatibility = "BACKWARD"
        """The global compatibility level (Confluent's default); `configs` holds the levels subjects set."""
        self.configs: dict[str, str] = {}
        self.on_register = on_register

    @staticmethod
    def _same(a: dict, b: dict) -> bool:
        return a["schema"] == b["schema"] and a.get("schemaType", "AVRO") == b.get("schemaType", "AVRO")

    def register(self, subject: str, body: dict) -> dict:
        with self.lock:
            ids = self.subjects.setdefault(subject, [])
            for known in ids:
                if self._same(self.by_id[known], body):
                    return self.version_of(subject, known)
            found = next((i for i, s in self.by_id.items() if self._same(s, body)), None)
            schema_id = found if found is not None else len(self.by_id) + 1
            if found is None:
                self.by_id[schema_id] = {
                    "schema": body["schema"],
                    "schemaType": body.get("schemaType", "AVRO"),
                    "references": body.get("references") or [],
                    "guid": str(uuid.UUID(int=uuid.uuid5(uuid.NAMESPACE_URL, f"kdrig-schema-{schema_id}").int)),
                }
            ids.append(schema_id)
            registered = self.version_of(subject, schema_id)
        if self.on_register is not None:
            self.on_register(registered)
        return registered

    def version_of(self, subject: str, schema_id: int) -> dict:
        schema = self.by_id[schema_id]
        return {
            "subject": subject,
            "version": self.subjects[subject].index(schema_id) + 1,
            "id": schema_id,
            "guid": schema["guid"],
            "schemaType": schema["schemaType"],
            "schema": schema["schema"],
            "references": schema["references"],
        }


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _answer(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", CONTENT_TYPE)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _missing(self, code: int, message: str) -> None:
        self._answer(404, {"error_code": code, "message": message})

    def _body(self) -> dict:
        length = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(length) or b"{}")

    def do_POST(self) -> None:
        parts = [unquote(p) for p in urlsplit(self.path).path.strip("/").split("/")]
        store = self.server.store
        body = self._body()
        if len(parts) == 3 and parts[0] == "subjects" and parts[2] == "versions":
            self._answer(200, store.register(parts[1], body))
        elif len(parts) == 2 and parts[0] == "subjects":
            for schema_id in store.subjects.get(parts[1], []):
                if store._same(store.by_id[schema_id], body):
                    self._answer(200, store.version_of(parts[1], schema_id))
                    return
            self._missing(40403, "Schema not found")
        else:
            self._missing(404, "Not found")

    def do_GET(self) -> None:
        parts = [unquote(p) for p in urlsplit(self.path).path.strip("/").split("/")]
        store = self.server.store
        if parts[:2] == ["schemas", "ids"] and len(parts) >= 3 and parts[2].isdigit():
            schema = store.by_id.get(int(parts[2]))
            if schema is None:
                self._missing(40403, "Schema not found")
            elif len(parts) == 4 and parts[3] == "subjects":
                self._answer(200, [s for s, ids in store.subjects.items() if int(parts[2]) in ids])
            else:
                self._answer(200, {k: v for k, v in schema.items() if v or k == "schema"})
        elif parts[:2] == ["schemas", "guids"] and len(parts) == 3:
            found = next((s for s in store.by_id.values() if s["guid"] == parts[2]), None)
            self._answer(200, found) if found else self._missing(40403, "Schema not found")
        elif parts == ["subjects"]:
            self._answer(200, list(store.subjects))
        elif parts[0] == "subjects" and len(parts) >= 3 and parts[2] == "versions":
            ids = store.subjects.get(parts[1])
            if not ids:
                self._missing(40401, "Subject not found")
            elif len(parts) == 3:
                self._answer(200, list(range(1, len(ids) + 1)))
            else:
                index = len(ids) if parts[3] == "latest" else int(parts[3]) if parts[3].isdigit() else 0
                if 1 <= index <= len(ids):
                    self._answer(200, store.version_of(parts[1], ids[index - 1]))
                else:
                    self._missing(40402, "Version not found")
        elif parts == ["config"]:
            self._answer(200, {"compatibilityLevel": store.compatibility})
        elif parts[0] == "config" and len(parts) == 2:
            level = store.configs.get(parts[1])
            if level is None and "defaulttoglobal=true" in urlsplit(self.path).query.lower():
                level = store.compatibility
            if level is None:
                self._missing(40408, f"Subject '{parts[1]}' does not have subject-level compatibility configured")
            else:
                self._answer(200, {"compatibilityLevel": level})
        else:
            self._missing(404, "Not found")

    def do_PUT(self) -> None:
        """``PUT /config`` and ``PUT /config/{subject}``: a compatibility level, answered as Confluent's registry does
        (``{"compatibility": LEVEL}``); it is kept, not enforced."""
        parts = [unquote(p) for p in urlsplit(self.path).path.strip("/").split("/")]
        store = self.server.store
        level = str(self._body().get("compatibility", "")).upper()
        if parts[0] != "config" or len(parts) > 2:
            self._missing(404, "Not found")
        elif level not in LEVELS:
            self._answer(422, {"error_code": 42203, "message": "Invalid compatibility level"})
        else:
            with store.lock:
                if len(parts) == 2:
                    store.configs[parts[1]] = level
                else:
                    store.compatibility = level
            self._answer(200, {"compatibility": level})


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], store: Store) -> None:
        super().__init__(address, Handler)
        self.store = store


def schemas_topic_writer(bootstrap: str) -> Callable[[dict], None]:
    """Produces each registration to `_schemas`, keyed as Confluent's registry keys it (librdkafka, its own client id)."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "client.id": "kdrig-schema-registry", "linger.ms": 0, "acks": "all"})

    def write(registered: dict) -> None:
        key = {"keytype": "SCHEMA", "subject": registered["subject"], "version": registered["version"], "magic": 1}
        value = {k: registered[k] for k in ("subject", "version", "id", "schemaType", "schema")}
        if registered["references"]:
            value["references"] = registered["references"]
        value["deleted"] = False
        producer.produce("_schemas", key=json.dumps(key).encode(), value=json.dumps(value).encode(), partition=0)
        producer.flush(10)

    return write


@contextlib.contextmanager
def running_registry(port: int, bootstrap: Optional[str] = None, manifest: Any = None) -> Iterator[str]:
    """The stand-in on 127.0.0.1:port while the block runs; yields its URL. With `bootstrap`, registrations also go to
    the `_schemas` topic of that broker; with `manifest` (a rig.manifest.Manifest), each is a `schema` line of it."""
    writers = [schemas_topic_writer(bootstrap)] if bootstrap else []
    if manifest is not None:
        writers.append(lambda registered: manifest.write("schema", **registered))
    store = Store((lambda registered: [write(registered) for write in writers]) if writers else None)
    server = Server(("127.0.0.1", port), store)
    thread = threading.Thread(target=server.serve_forever, name="kdrig-registry", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
