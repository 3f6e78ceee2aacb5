"""A TLS connection read again record by record, for a rewrite: what each record holds once opened, and the key and
sequence number that opened it, so what is kept can be sealed again (a cut) or written in the clear (anonymize).

The core's decryptor (tls/decryptor.py) recovers from every loss a capture can have; a rewrite only reads
connections the core has already decrypted whole, so this reader follows the handshake as it happened: the hellos
in the clear, TLS 1.2's keys from its ChangeCipherSpec on, TLS 1.3's handshake keys until each side's Finished,
then its application keys, renewed at each KeyUpdate. Each key is an epoch, whose sequence numbers start at 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from kdissect.tls import keylog, tls12, tls13
from kdissect.tls.aead import RecordCipher
from kdissect.tls.handshake import CLIENT_HELLO, FINISHED, KEY_UPDATE, SERVER_HELLO, TLS13, HandshakeReader, Hello, HelloError, parse_hello
from kdissect.tls.keylog import KeyLog
from kdissect.tls.records import APPLICATION_DATA, CHANGE_CIPHER_SPEC, HANDSHAKE, RecordReader
from kdissect.tls.suites import SUITES, Suite

CLIENT, SERVER = 0, 1
HANDSHAKE_LABELS = (keylog.CLIENT_HANDSHAKE, keylog.SERVER_HANDSHAKE)
TRAFFIC_LABELS = (keylog.CLIENT_TRAFFIC, keylog.SERVER_TRAFFIC)


@dataclass(frozen=True, slots=True)
class Opened:
    """One record: as captured, and what it holds."""

    ctype: int
    version: int
    fragment: bytes
    inner: int
    """Its content type: the outer one for a record in the clear, the inner one for a TLS 1.3 record."""
    content: bytes | None
    """What it carries once opened; the fragment itself in the clear; None when no key opens it."""
    cipher: RecordCipher | None
    """The key that opened it; None in the clear (or unopened)."""
    seq: int
    epoch: int
    """Which key of its side opened it (each new key starts an epoch and its sequence numbers at 0)."""


class _Side:
    __slots__ = ("cipher", "secret", "label", "seq", "epoch", "encrypted", "clear", "sealed", "pending")

    def __init__(self) -> None:
        self.cipher: RecordCipher | None = None
        self.secret: bytes | None = None
        self.label = ""
        self.seq = 0
        self.epoch = -1
        self.encrypted = False
        self.clear: HandshakeReader | None = None
        self.sealed: HandshakeReader | None = None
        self.pending: RecordCipher | None = None
        """TLS 1.3 without the handshake secret: the application key, tried on each record until one opens."""


class TlsRecords:
    """Both sides of one TLS connection; `record` reads each record in its side's order."""

    def __init__(self, keys: KeyLog) -> None:
        self.keys = keys
        self.sides = (_Side(), _Side())
        for side, state in enumerate(self.sides):
            state.clear = HandshakeReader(partial(self._clear_message, side))
            state.sealed = HandshakeReader(partial(self._sealed_message, side))
        self.client_hello: Hello | None = None
        self.server_hello: Hello | None = None
        self.suite: Suite | None = None
        self.tls13 = False

    def record(self, side: int, ctype: int, version: int, fragment: bytes) -> Opened:
        state = self.sides[side]
        if state.encrypted and (not self.tls13 or ctype == APPLICATION_DATA):
            return self._open(side, state, ctype, version, fragment)
        if ctype == HANDSHAKE:
            assert state.clear is not None
            state.clear.feed(fragment)
        elif ctype == CHANGE_CIPHER_SPEC and not self.tls13 and self.server_hello is not None:
            self._tls12_keys(side, state)
        return Opened(ctype, version, fragment, ctype, fragment, None, 0, -1)

    def _open(self, side: int, state: _Side, ctype: int, version: int, fragment: bytes) -> Opened:
        cipher, seq = state.cipher, state.seq
        plain = cipher.open(seq, ctype, version, fragment) if cipher is not None else None
        if plain is None and state.pending is not None:
            plain = state.pending.open(0, ctype, version, fragment)
            if plain is not None:
                self._switch(state, state.pending, None, TRAFFIC_LABELS[side])
                cipher, seq = state.cipher, 0
        if plain is None or cipher is None:
            return Opened(ctype, version, fragment, ctype, None, None, seq, state.epoch)
        state.seq += 1
        inner, content = ctype, plain
        if self.tls13:
            stripped = plain.rstrip(b"\0")
            inner, content = (stripped[-1], stripped[:-1]) if stripped else (0, b"")
        opened = Opened(ctype, version, fragment, inner, content, cipher, seq, state.epoch)
        if inner == HANDSHAKE:
            assert state.sealed is not None
            state.sealed.feed(content)  # a Finished or a KeyUpdate changes the key after this record
        return opened

    def _clear_message(self, side: int, kind: int, body: bytes) -> None:
        if kind != (CLIENT_HELLO, SERVER_HELLO)[side]:
            return
        try:
            hello = parse_hello(kind, body)
        except HelloError:
            return
        if kind == CLIENT_HELLO:
            self.client_hello = hello
        elif not hello.retry and self.server_hello is None:
            self.server_hello = hello
            self.suite = SUITES.get(hello.suites[0])
            self.tls13 = hello.version == TLS13
            if self.tls13:
                for each, state in enumerate(self.sides):
                    self._tls13_keys(each, state)

    def _sealed_message(self, side: int, kind: int, body: bytes) -> None:
        state = self.sides[side]
        if not self.tls13 or self.suite is None:
            return
        if kind == FINISHED and state.label == HANDSHAKE_LABELS[side]:
            secret = self._secret(TRAFFIC_LABELS[side])
            if secret is not None:
                self._switch(state, self._cipher(secret), secret, TRAFFIC_LABELS[side])
        elif kind == KEY_UPDATE and state.secret is not None and state.label == TRAFFIC_LABELS[side]:
            secret = tls13.next_secret(self.suite.hash, state.secret)
            self._switch(state, self._cipher(secret), secret, state.label)

    def _tls12_keys(self, side: int, state: _Side) -> None:
        suite, master = self.suite, self._secret(keylog.MASTER)
        state.encrypted = True
        if suite is None or suite.cipher is None or master is None or self.client_hello is None or self.server_hello is None:
            self._switch(state, None, None, keylog.MASTER)
            return
        iv_length = 4 if suite.cipher == "AES-GCM" else 12
        keys = tls12.key_block(suite.hash, master, (self.client_hello.random, self.server_hello.random), suite.key_length, iv_length)
        self._switch(state, RecordCipher(suite.cipher, keys[side], keys[2 + side], False), None, keylog.MASTER)

    def _tls13_keys(self, side: int, state: _Side) -> None:
        state.encrypted = True
        if self.suite is None or self.suite.cipher is None:
            return
        secret = self._secret(HANDSHAKE_LABELS[side])
        if secret is not None:
            self._switch(state, self._cipher(secret), secret, HANDSHAKE_LABELS[side])
            return
        application = self._secret(TRAFFIC_LABELS[side])
        state.pending = self._cipher(application) if application is not None else None
        state.secret = application

    def _switch(self, state: _Side, cipher: RecordCipher | None, secret: bytes | None, label: str) -> None:
        state.cipher, state.secret, state.label = cipher, secret if secret is not None else state.secret, label
        state.seq = 0
        state.epoch += 1
        state.pending = None

    def _cipher(self, secret: bytes) -> RecordCipher:
        suite = self.suite
        assert suite is not None and suite.cipher is not None
        key, iv = tls13.traffic_keys(suite.hash, secret, suite.key_length)
        return RecordCipher(suite.cipher, key, iv, True)

    def _secret(self, label: str) -> bytes | None:
        return None if self.client_hello is None else self.keys.get(label, self.client_hello.random)


class RecordTransform:
    """A restream's `Transform` (rewrite/restream.py) over one side of a TLS connection: the side's bytes cut into
    records, each opened by `TlsRecords` and handed to `record`, which adds what the new stream holds for it to `out`."""

    def __init__(self, records: TlsRecords, side: int) -> None:
        self.records = records
        self.side = side
        self.reader = RecordReader(self._record, self.lost, self.skipped)
        self.out = bytearray()

    def data(self, chunk: bytes) -> bytes:
        self.reader.data(chunk, 0, 0)
        out = bytes(self.out)
        self.out.clear()
        return out

    def gap(self, length: int) -> None:
        self.reader.gap(length, 0)

    def _record(self, ctype: int, version: int, fragment: bytes, offset: int, ts: int, index: int) -> None:
        self.record(self.records.record(self.side, ctype, version, fragment))

    def record(self, opened: Opened) -> None:
        raise NotImplementedError

    def lost(self, records: int | None, length: int, offset: int, ts: int) -> None:
        """Records the capture lost (the reader tells them; a subclass decides what they cost)."""

    def skipped(self, length: int, offset: int) -> None:
        """Bytes that were no record."""
