"""Where a connection's streams go before its first bytes say whether it carries TLS.

A `Gate` stands in each direction's reassembler for the sink it will have: on the first data of either
direction it decides for the connection (tls/detect.py), puts the Kafka framers in the reassemblers
(plaintext) or a `TlsSession`'s decryptors feeding them (TLS), and gets out of the way, so plaintext
connections pay nothing after their first chunk. Gaps and the start before that first data are passed on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Generic, TypeVar

from kdissect.diagnostic import Diagnostic
from kdissect.events import TlsInfo
from kdissect.net.reassembly import Reassembler, StreamSink
from kdissect.tls.detect import starts_tls
from kdissect.tls.keylog import KeyLog

if TYPE_CHECKING:
    from kdissect.tls.decryptor import TlsSession


class Gate:
    """One direction's sink until the connection is judged."""

    __slots__ = ("switch", "direction", "mid_stream", "started", "gaps")
    # a Probe replays into the gate it was given, so after the switch decided the gate passes bytes on

    held = 0
    """Bytes held: none (what comes before the first data is a gap, kept as its length)."""

    def __init__(self, switch: TlsSwitch, direction: int) -> None:
        self.switch = switch
        self.direction = direction
        self.mid_stream = False
        self.started = False
        self.gaps: list[tuple[int, int]] = []

    def start(self, mid_stream: bool) -> None:
        self.started, self.mid_stream = True, mid_stream

    def gap(self, length: int, ts: int) -> None:
        if self.switch.decided:
            self.switch.streams[self.direction].sink.gap(length, ts)
        else:
            self.gaps.append((length, ts))

    def data(self, chunk: bytes, ts: int, index: int) -> None:
        if not self.switch.decided:  # what follows a lost start is judged as if the capture began there
            self.switch.decide(starts_tls(chunk, self.mid_stream or bool(self.gaps)))
        self.switch.streams[self.direction].sink.data(chunk, ts, index)

    @staticmethod
    def fill(offset: int, data: bytes) -> int:
        """Late bytes for a hole held before the judgement: the gap went on as a length, so they cannot be placed."""
        return 0

    def finish(self) -> None:
        if not self.switch.decided:
            self.switch.decide(False)
        self.switch.streams[self.direction].sink.finish()


Plaintext = TypeVar("Plaintext", bound=StreamSink)


class TlsSwitch(Generic[Plaintext]):
    """Judges one connection once and installs the sinks its streams keep.

    `streams` are the two reassemblers (each with a `sink`), `framers` the sinks of the same directions that take
    Kafka's bytes (plaintext, or what TLS decrypts), `client_dir` which direction is the client's.
    """

    __slots__ = ("streams", "framers", "client_dir", "keys", "report", "on_info", "waiting", "session", "decided", "gates")

    def __init__(
        self,
        streams: tuple[Reassembler, ...],
        framers: tuple[Plaintext, Plaintext],
        client_dir: int,
        keys: KeyLog,
        report: Callable[[Diagnostic, int, int], None],
        on_info: Callable[[TlsInfo], None],
        waiting: set[TlsSession],
    ) -> None:
        self.streams, self.framers, self.client_dir = streams, framers, client_dir
        self.keys, self.report, self.on_info, self.waiting = keys, report, on_info, waiting
        self.session: TlsSession | None = None
        self.decided = False
        self.gates = tuple(Gate(self, direction) for direction in range(len(streams)))
        """The streams' sinks until the decision; none after."""
        for stream, gate in zip(streams, self.gates):
            stream.sink = gate

    def decide(self, tls: bool) -> None:
        self.decided = True
        gates, self.gates = self.gates, ()
        if tls:
            # the ciphers' libraries load with the first TLS connection: loaded at start, they make `kdissect read
            # captures/client-confluent.pcap` (no TLS) take 1.05x the CPU time (whole processes, 30 alternated pairs, median)
            from kdissect.tls.decryptor import TlsSession

            c = self.client_dir
            self.session = TlsSession(self.keys, self.report, (self.framers[c], self.framers[1 - c]), self.on_info, self.waiting)
            self.on_info(self.session.info())  # TLS from its first bytes, even when its hellos were not captured
            client, server = self.session.directions
            sinks: tuple[StreamSink, StreamSink] = (client, server) if c == 0 else (server, client)
        else:
            sinks = self.framers
        for stream, gate, sink in zip(self.streams, gates, sinks):
            stream.sink = sink
            if gate.started:
                sink.start(gate.mid_stream)
            for length, ts in gate.gaps:
                sink.gap(length, ts)

    def detach(self) -> None:
        """The connection is forgotten: break the cycles between the switch, its gates and the streams."""
        self.streams = self.gates = ()
