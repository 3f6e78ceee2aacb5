"""A schema registry's HTTP conversations in a capture, read for the schemas they carry.

Clients fetch schemas from their registry over HTTP (usually port 8081): capture that port beside the brokers' and
kdissect learns every schema the clients asked for or registered. The core hands this module each connection it
finds is not Kafka (`adopt`, given as `dissector.Options.side_streams`); a connection whose first bytes are not an
HTTP request or response is refused and ignored as before. HTTP itself is read by h11: one h11 connection per
message, seeded with the bytes the previous one left, so requests and answers are read however they were cut into
segments or pipelined. Answers pair with requests in order, as HTTP/1.1 sends them.

Bounded: a message body past `MAX_BODY` (compressed or inflated), a gap in either direction, or bytes h11 cannot
read end the reading of that connection; the rest of its bytes are dropped as they come.
"""

from __future__ import annotations

import zlib
from collections import deque
from collections.abc import Callable
from typing import Any

from kdissect.values.schemas import Schema

MAX_BODY = 4 << 20
"""The largest request or answer body read; a registry's schema is a few kB."""
METHODS = (b"GET ", b"POST ", b"PUT ", b"DELETE ", b"HEAD ", b"PATCH ", b"OPTIONS ")
REGISTRY_PATHS = ("/schemas/", "/subjects/", "/apis/registry/")
"""The calls whose bodies are kept: a Confluent or Apicurio registry's."""

Learnt = Callable[[list[Schema]], None]


class HttpLearning:
    """The core's hook for connections that are not Kafka: HTTP ones are read for schemas, handed to `learnt`."""

    def __init__(self, learnt: Learnt) -> None:
        self.learnt = learnt
        self.conversations = 0
        self.registries = 0
        """HTTP connections that made a schema registry's calls: the capture talks to a registry."""

    def __call__(self, streams: Any, ends: Any) -> bool:
        """Take over a connection's two streams when one of them opens with an HTTP request: their probes' bytes are
        replayed into HTTP sinks that replace them. False leaves the connection ignored."""
        firsts = [stream.sink.joined()[:8] for stream in streams]
        requests = [first.startswith(METHODS) for first in firsts]
        if requests[0] == requests[1]:
            return False
        client = 0 if requests[0] else 1
        if firsts[1 - client] and not firsts[1 - client].startswith(b"HTTP/"):
            return False
        address, port = ends[1 - client]
        conversation = Conversation(self.learnt, f"capture: HTTP answer of {_address(address)}:{port}", self._registry)
        sinks = (conversation.requests, conversation.answers) if client == 0 else (conversation.answers, conversation.requests)
        for stream, sink in zip(streams, sinks):
            probe = stream.sink
            stream.sink = sink
            probe.replay(sink)
        self.conversations += 1
        return True

    def _registry(self) -> None:
        self.registries += 1


def _address(packed: bytes) -> str:
    import ipaddress

    return str(ipaddress.ip_address(packed)) if len(packed) in (4, 16) else packed.hex()


class Conversation:
    """One HTTP connection: requests one way, answers the other, paired in order."""

    def __init__(self, learnt: Learnt, source: str, registry: Callable[[], None]) -> None:
        self.learnt = learnt
        self.source = source
        self.registry = registry
        """Called at its first registry call."""
        self.told = False
        self.asked: deque[tuple[str, str, bytes]] = deque()
        """Requests read whose answers have not been: (method, target, body)."""
        self.broken = False
        self.requests = Direction(self, True)
        self.answers = Direction(self, False)

    def request(self, method: str, target: str, body: bytes, registry: bool) -> None:
        if registry and not self.told:
            self.told = True
            self.registry()
        self.asked.append((method, target, body))
        self.answers.pump()

    def answer(self, method: str, target: str, body: bytes, status: int, answer: bytes, headers: dict[bytes, bytes], packet: int) -> None:
        if headers.get(b"content-encoding", b"").lower() in (b"gzip", b"deflate"):
            inflater = zlib.decompressobj(47)  # gzip or zlib, by the header it finds
            try:
                answer = inflater.decompress(answer, MAX_BODY)
            except zlib.error:
                return
        from kdissect.values.answers import from_exchange

        artifact = headers.get(b"x-registry-artifacttype")
        schemas = from_exchange(
            method, target, body, status, answer, artifact.decode("latin-1") if artifact else None, f"{self.source} (packet {packet})"
        )
        if schemas:
            self.learnt(schemas)


class Direction:
    """One direction's stream sink (the reassembler's StreamSink protocol): bytes in, whole messages out through h11."""

    def __init__(self, conversation: Conversation, requests: bool) -> None:
        self.conversation = conversation
        self.is_requests = requests
        self.pending = bytearray()
        """Answer bytes waiting for the request they answer to be read."""
        self.parser: Any = None
        self.head: Any = None
        self.body = bytearray()
        self.keep = False
        self.packet = 0
        self.held = 0
        """Bytes held (the core prices connections by it: the StreamSink contract)."""

    # the StreamSink protocol
    def start(self, mid_stream: bool) -> None:
        if mid_stream:
            self.conversation.broken = True  # the first bytes are missing: messages cannot be told apart

    def data(self, chunk: bytes, ts: int, index: int) -> None:
        if self.conversation.broken:
            return
        self.packet = index
        if self.is_requests:
            self._feed(bytes(chunk))
        else:
            self.pending += chunk
            self.pump()
        self.held = len(self.pending) + len(self.body)

    def gap(self, length: int, ts: int) -> None:
        self._break()

    @staticmethod
    def fill(offset: int, data: bytes) -> int:
        return 0

    def finish(self) -> None:
        self.pending.clear()
        self.body.clear()
        self.held = 0

    # reading
    def pump(self) -> None:
        """Answers: feed the held bytes once a request is waiting to be answered."""
        while self.pending and not self.conversation.broken and (self.parser is not None or self.conversation.asked):
            data = bytes(self.pending)
            self.pending.clear()
            self._feed(data)

    def _break(self) -> None:
        self.conversation.broken = True
        self.finish()

    def _new_parser(self) -> Any:
        import h11

        if self.is_requests:
            return h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_BODY)
        method, target, _ = self.conversation.asked[0]
        parser = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_BODY)
        parser.send(h11.Request(method=method, target=target, headers=[("Host", "registry")]))
        parser.send(h11.EndOfMessage())
        return parser

    def _feed(self, data: bytes) -> None:
        import h11

        while data and not self.conversation.broken:
            if self.parser is None:
                if not self.is_requests and not self.conversation.asked:
                    self.pending[:0] = data
                    return
                self.parser = self._new_parser()
            parser = self.parser
            parser.receive_data(data)
            data = b""
            try:
                while True:
                    event = parser.next_event()
                    if event is h11.NEED_DATA or event is h11.PAUSED:
                        break
                    if isinstance(event, (h11.Request, h11.Response)):
                        self.head = event
                        target = event.target.decode("latin-1") if isinstance(event, h11.Request) else self.conversation.asked[0][1]
                        self.keep = any(part in target for part in REGISTRY_PATHS)
                    elif isinstance(event, h11.InformationalResponse):
                        continue
                    elif isinstance(event, h11.Data):
                        if self.keep:
                            self.body += event.data
                            if len(self.body) > MAX_BODY:
                                self._break()
                                return
                    elif isinstance(event, h11.EndOfMessage):
                        self._message()
                        data, _ = parser.trailing_data
                        self.parser = None
                        break
                    elif isinstance(event, h11.ConnectionClosed):
                        break
            except h11.RemoteProtocolError:
                self._break()
                return

    def _message(self) -> None:
        head, body = self.head, bytes(self.body)
        self.body.clear()
        conversation = self.conversation
        if self.is_requests:
            conversation.request(head.method.decode("latin-1"), head.target.decode("latin-1"), body if self.keep else b"", self.keep)
            return
        method, target, sent = conversation.asked.popleft()
        if self.keep:
            headers = {name.lower(): value for name, value in head.headers}
            conversation.answer(method, target, sent, head.status_code, body, headers, self.packet)
