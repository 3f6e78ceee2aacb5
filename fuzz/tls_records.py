"""Layer 2½, TLS: one direction's ciphertext stream cut into records, with gaps anywhere, then decrypted.

The input is a flag byte, a count of 3-byte operations, the operations, and the stream. Each operation hands
the next bytes of the stream on as a chunk, or skips them as a gap. Without the session flag the bytes go to a
bare `RecordReader`; with it, to the server direction of a TLS session that first read RFC 8448's hellos with
its key log, so the stream's records are opened (RFC 8448's own server records are among the seeds).

Contract: nothing raises; every record handed on is the stream's bytes at the offset it claims (gaps are
skipped, never made up); what is held stays within its bounds; every diagnostic is named.
"""

from __future__ import annotations

import struct

from fuzz.common import Broken, check_diagnostics, feed, instrumented, main, operations

with instrumented():
    from kdissect.testing import rfc8448 as rfc
    from kdissect.tls.decryptor import HOLD_BYTES, TlsSession
    from kdissect.tls.keylog import KeyLog
    from kdissect.tls.records import HEADER, MAX_LENGTH, SEARCH_WINDOW, RecordReader

MID_STREAM, SESSION = 1, 2


class Sink:
    """Plaintext out of the session: counted, never kept."""

    held = 0

    def start(self, mid_stream: bool) -> None:
        pass

    def data(self, chunk: bytes, ts: int, index: int) -> None:
        pass

    def gap(self, length: int, ts: int) -> None:
        if length < 0:
            raise Broken(f"a plaintext gap of {length} bytes")

    @staticmethod
    def fill(offset: int, data: bytes) -> int:
        return 0

    def finish(self) -> None:
        pass


def _bare(mid_stream: bool, ops: list[tuple[int, int]], stream: bytes) -> None:
    delivered: list[tuple[int, bytes]] = []
    reader = RecordReader(
        lambda ctype, version, fragment, offset, ts, index: delivered.append(
            (offset, bytes([ctype]) + struct.pack(">HH", version, len(fragment)) + fragment)
        ),
        lambda records, length, offset, ts: None,
        lambda length, offset: None,
    )
    reader.start(mid_stream)
    feed(reader, ops, stream, lambda: len(reader.buf) <= SEARCH_WINDOW + 2 * (HEADER + MAX_LENGTH) + 0xFFFF)
    reader.finish()
    last = -1
    for offset, record in delivered:
        if offset <= last:
            raise Broken(f"a record at stream offset {offset} after one at {last}")
        if stream[offset : offset + len(record)] != record:
            raise Broken(f"the record handed on at stream offset {offset} is not the stream's bytes there")
        last = offset


def _session(mid_stream: bool, ops: list[tuple[int, int]], stream: bytes) -> None:
    keys = KeyLog()
    keys.add(rfc.KEYLOG)
    diagnostics = []
    session = TlsSession(keys, lambda d, ts, i: diagnostics.append(d), (Sink(), Sink()), lambda info: None, set())
    client, server = session.directions
    client.start(False)
    server.start(mid_stream)
    client.data(rfc.CLIENT_HELLO, 0, 0)
    if not mid_stream:
        server.data(rfc.SERVER_HELLO, 0, 0)
    bound = HOLD_BYTES + SEARCH_WINDOW + 2 * (HEADER + MAX_LENGTH) + 0xFFFF
    feed(server, ops, stream, lambda: server.held <= bound)
    server.finish()
    client.finish()
    check_diagnostics(diagnostics, "tls")


def one_input(data: bytes) -> None:
    if len(data) < 2:
        return
    flags, ops, stream = operations(data)
    if flags & SESSION:
        _session(bool(flags & MID_STREAM), ops, stream)
    else:
        _bare(bool(flags & MID_STREAM), ops, stream)


if __name__ == "__main__":
    main(one_input)
