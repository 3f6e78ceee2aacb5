"""A TCP relay between the clients and tansu that holds chosen Kafka responses for a while.

tc netem is missing on these machines (../shared/rig-notes.md), so latency is made here: the relay reads whole
frames (the 4-byte size, then the frame), learns each request's API key by its correlation id, and before it
passes a response on asks `hold(api_key, n)` (n counts that API's responses, from 1) how many seconds to keep
it. The bytes are unchanged. The broker advertises the relay's address, so every connection goes through it,
and the capture is taken on the client side (`host RELAY_HOST`): its latencies are what the clients saw.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator

RELAY_HOST = "127.0.0.2"
"""Another loopback address: the relay listens there on the broker's port, the broker on 127.0.0.1."""

Hold = Callable[[int, int], float]


def _frame(sock: socket.socket) -> bytes | None:
    """One whole frame with its size prefix, or None when the peer has closed."""
    head = _exactly(sock, 4)
    if head is None:
        return None
    body = _exactly(sock, struct.unpack("!i", head)[0])
    return None if body is None else head + body


def _exactly(sock: socket.socket, n: int) -> bytes | None:
    chunks, left = [], n
    while left:
        try:
            chunk = sock.recv(min(left, 1 << 20))
        except OSError:
            return None
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


class _Pair:
    """One client connection and its own connection to the broker."""

    def __init__(self, client: socket.socket, broker: socket.socket, hold: Hold, counts: dict[int, int], lock: threading.Lock) -> None:
        self.client, self.broker, self.hold, self.counts, self.lock = client, broker, hold, counts, lock
        self.apis: dict[int, int] = {}

    def requests(self) -> None:
        while (frame := _frame(self.client)) is not None:
            if len(frame) >= 12:
                api_key, _version, correlation = struct.unpack_from("!hhi", frame, 4)
                self.apis[correlation] = api_key
            with contextlib.suppress(OSError):
                self.broker.sendall(frame)
        self.close()

    def responses(self) -> None:
        while (frame := _frame(self.broker)) is not None:
            api_key = self.apis.pop(struct.unpack_from("!i", frame, 4)[0], -1) if len(frame) >= 8 else -1
            with self.lock:
                self.counts[api_key] = n = self.counts.get(api_key, 0) + 1
            seconds = self.hold(api_key, n)
            if seconds > 0:
                time.sleep(seconds)
            try:
                self.client.sendall(frame)
            except OSError:
                break
        self.close()

    def close(self) -> None:
        for sock in (self.client, self.broker):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


@contextlib.contextmanager
def running_relay(port: int, broker_host: str, hold: Hold) -> Iterator[None]:
    """Relay RELAY_HOST:port to broker_host:port until the block ends."""
    listener = socket.create_server((RELAY_HOST, port))
    counts: dict[int, int] = {}
    lock = threading.Lock()
    stopping = threading.Event()

    def accept() -> None:
        while not stopping.is_set():
            try:
                client, _ = listener.accept()
            except OSError:
                return
            broker = socket.create_connection((broker_host, port))
            pair = _Pair(client, broker, hold, counts, lock)
            threading.Thread(target=pair.requests, daemon=True).start()
            threading.Thread(target=pair.responses, daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stopping.set()
        listener.close()
