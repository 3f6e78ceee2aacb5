"""One TLS connection, sans-IO: each direction's ciphertext stream in (with gaps), its plaintext stream out to
the same sink the Kafka framer would be for plaintext Kafka, and a named diagnostic for what stays encrypted.

Each direction cuts records (records.py) and reads the handshake messages sent in the clear; once the hellos
and a key log give its keys, it opens every encrypted record. A record is opened by a candidate: a key and
the sequence numbers it may be at. Normally there is one candidate at one number. After a loss the numbers
widen (by the records lost, known from their lengths or estimated from the bytes), in TLS 1.3 the next
epoch's key joins (the application key after the handshake one; the next key after a KeyUpdate that may
have been lost), and the first candidate that authenticates the record settles it. TLS 1.2 AES-GCM records
carry their sequence number as explicit nonce in practice, which is tried first.

Records that cannot be opened yet (the ServerHello is still behind on the other stream, or the keys are not
known yet: pcapng secrets blocks may come later) are held within a bound and opened when what they wait for
arrives.
"""

from __future__ import annotations

from collections import deque
from typing import Callable

from kdissect.diagnostic import Diagnostic, Severity
from kdissect.events import TlsInfo, TlsTotals
from kdissect.net.reassembly import StreamSink
from kdissect.tls import keylog, tls12, tls13
from kdissect.tls.aead import RecordCipher
from kdissect.tls.handshake import (
    CLIENT_HELLO,
    ENCRYPTED_EXTENSIONS,
    FINISHED,
    KEY_UPDATE,
    SERVER_HELLO,
    TLS13,
    HandshakeReader,
    Hello,
    HelloError,
    encrypted_extensions_alpn,
    parse_hello,
)
from kdissect.tls.keylog import KeyLog
from kdissect.tls.records import ALERT, APPLICATION_DATA, CHANGE_CIPHER_SPEC, HANDSHAKE, HEADER, MAX_LENGTH, RecordReader
from kdissect.tls.suites import SUITES, Suite, suite_name, version_name

CLIENT, SERVER = 0, 1
HOLD_BYTES = 1 << 20
"""Ciphertext held per direction while its keys or the other direction's ServerHello are awaited."""
MAX_TRIALS = 256
"""Sequence numbers tried per candidate for one record after a loss."""
GIVE_UP = 8
"""Records in a row that no candidate opens before a direction stops trying (each costs up to MAX_TRIALS)."""
MIN_RECORD = HEADER + 17
"""The shortest encrypted record (TLS 1.3: an empty plaintext, its type byte and the tag)."""
SMALLEST_REQUEST = 14
"""A Kafka request is at least 14 bytes (size, key, version, correlation id, client id length): a shorter TLS 1.3
record starting a write is an alert (close_notify) or a KeyUpdate, not a request."""
FULL_RECORD = 1 << 14
"""A record carrying this much is full: the write it belongs to goes on in the next record."""
TLS12 = 0x0303
ALERTS = {
    0: "close_notify",
    10: "unexpected_message",
    20: "bad_record_mac",
    22: "record_overflow",
    40: "handshake_failure",
    42: "bad_certificate",
    43: "unsupported_certificate",
    44: "certificate_revoked",
    45: "certificate_expired",
    46: "certificate_unknown",
    47: "illegal_parameter",
    48: "unknown_ca",
    49: "access_denied",
    50: "decode_error",
    51: "decrypt_error",
    70: "protocol_version",
    71: "insufficient_security",
    80: "internal_error",
    86: "inappropriate_fallback",
    90: "user_canceled",
    109: "missing_extension",
    110: "unsupported_extension",
    112: "unrecognized_name",
    116: "certificate_required",
    120: "no_application_protocol",
}
"""TLS alert descriptions by code (RFC 8446 §6)."""

Report = Callable[[Diagnostic, int, int], None]


class Candidate:
    """A key that may open the next record, at sequence numbers lo to hi."""

    __slots__ = ("cipher", "lo", "hi", "label", "secret", "started")

    def __init__(self, cipher: RecordCipher, lo: int, hi: int, label: str, secret: bytes | None) -> None:
        self.cipher, self.lo, self.hi, self.label, self.secret = cipher, lo, hi, label, secret
        self.started = False
        """A record opened under it: its epoch has begun, so a record it fails is a damaged one."""


class Direction:
    """One direction of a TLS connection: the stream sink its reassembler feeds."""

    __slots__ = (
        "session",
        "side",
        "out",
        "records",
        "handshake",
        "encrypted",
        "candidates",
        "partial",
        "waiting",
        "waiting_bytes",
        "seen",
        "opened",
        "hidden",
        "plaintext",
        "missing",
        "unformed",
        "failures",
        "gave_up",
        "writes",
        "continued",
    )

    def __init__(self, session: TlsSession, side: int, out: StreamSink) -> None:
        self.session = session
        self.side = side
        self.out = out
        """The Kafka framer that takes the plaintext."""
        self.records = RecordReader(self._record, self._lost, self._skipped, self._authenticates)
        self.handshake = HandshakeReader(self._message)
        self.encrypted = False
        self.candidates: list[Candidate] | None = None
        self.partial = False
        """TLS 1.3 candidates formed before the key log had this side's application secret: a live session's
        client writes its handshake secrets first, and the application one may come a moment later."""
        self.waiting: deque[tuple[int, int, bytes, int, int, int]] = deque()
        """Records that cannot be opened yet, in order: (type, version, fragment, offset, ts, packet index)."""
        self.waiting_bytes = 0
        self.seen = self.opened = self.hidden = self.plaintext = 0
        self.missing = 0
        """Plaintext bytes lost since the last ones handed on: told to `out` as a gap before the next."""
        self.unformed = (0, 0)
        """Encrypted records (at least, at most) that passed before this direction had a candidate."""
        self.failures = 0
        self.gave_up = False
        self.writes = 0
        """Client writes in records that stayed encrypted: the estimate of requests hidden."""
        self.continued = False

    # the stream sink

    def start(self, mid_stream: bool) -> None:
        self.records.start(mid_stream)
        self.out.start(mid_stream)

    def data(self, chunk: bytes, ts: int, index: int) -> None:
        self.records.data(chunk, ts, index)

    def gap(self, length: int, ts: int) -> None:
        self.records.gap(length, ts)

    @staticmethod
    def fill(offset: int, data: bytes) -> int:
        """Late ciphertext for a hole: the record reader skipped past it already, so it cannot be placed."""
        return 0

    def finish(self) -> None:
        self.records.finish()
        if self.waiting:
            ts, index = self.waiting[0][4:6]
            self.session.explain(self.waiting[0][3], ts, index)
            self._give_up_waiting()
        self.session.waiting_set.discard(self.session)
        self.out.finish()

    @property
    def held(self) -> int:
        """Bytes held: records being cut, records waiting for keys, and what the framer holds."""
        return self.records.held + self.waiting_bytes + self.out.held

    # records

    def _record(self, ctype: int, version: int, fragment: bytes, offset: int, ts: int, index: int) -> None:
        session = self.session
        if self.waiting:  # records wait in order behind the first that had to
            self._hold(ctype, version, fragment, offset, ts, index)
            return
        if not self.encrypted:
            if self.side == CLIENT and session.client_hello is not None and session.version is None and not session.retried:
                if self.waiting_bytes + len(fragment) <= HOLD_BYTES:
                    self._hold(ctype, version, fragment, offset, ts, index)  # what it is depends on the ServerHello
                    return
                session.explain(offset, ts, index)  # the ServerHello is lost: nothing of this direction will open
                self._give_up_waiting()
                self.gave_up = self.encrypted = True
                self._hide(ctype, fragment)
                return
            if ctype == HANDSHAKE:
                self.handshake.feed(fragment)
                return
            if ctype == CHANGE_CIPHER_SPEC:
                self.encrypted = session.version is not None and not session.tls13  # TLS 1.2: the rest is encrypted
                return
            if ctype == ALERT:
                self._alert(fragment, offset, ts, index)
                return
            if ctype != APPLICATION_DATA:
                return
            self.encrypted = True  # TLS 1.3's encrypted records, or a stream captured after its handshake
        if self.gave_up:
            self._hide(ctype, fragment)
            return
        if self.partial:
            self._complete()
        if self.candidates is None and not self._form():
            if session.may_open_later() and self.waiting_bytes + len(fragment) <= HOLD_BYTES:
                self._hold(ctype, version, fragment, offset, ts, index)
                return
            session.explain(offset, ts, index)
            self._give_up_waiting()
            self._hide_unformed(ctype, fragment)
            return
        self._open(ctype, version, fragment, offset, ts, index)

    def _form(self) -> bool:
        """Make the candidates for this direction's encrypted records, if the hellos and keys allow."""
        session = self.session
        made = session.candidates(self.side, *self.unformed)
        if made is None:
            return False
        self.candidates = made
        self.partial = session.tls13 and all(candidate.label in (keylog.CLIENT_HANDSHAKE, keylog.SERVER_HANDSHAKE) for candidate in made)
        return True

    def _complete(self) -> None:
        """Partial candidates gain the application secret once the key log has it."""
        assert self.candidates is not None
        more = self.session.application_candidates(self.side)
        if more is not None:
            self.candidates += more
            self.partial = False

    def _authenticates(self, ctype: int, version: int, fragment: bytes) -> bool:
        """Whether a candidate opens these bytes: how a search after a loss knows a record when it sees one."""
        candidates = self.candidates
        return candidates is not None and any(_open_at(candidate, ctype, version, fragment) is not None for candidate in candidates)

    def _open(self, ctype: int, version: int, fragment: bytes, offset: int, ts: int, index: int) -> None:
        candidates = self.candidates
        assert candidates is not None
        self.seen += 1
        for i, candidate in enumerate(candidates):
            opened = _open_at(candidate, ctype, version, fragment)
            if opened is None:
                continue
            seq, plain = opened
            del candidates[:i]
            candidate.lo = candidate.hi = seq + 1
            candidate.started = True
            self.failures = 0
            self.opened += 1
            self._plaintext(candidate, ctype, plain, offset, ts, index)
            return
        if self.partial and self.session.keys.in_use and self.waiting_bytes + len(fragment) <= HOLD_BYTES:
            self.seen -= 1
            self._hold(ctype, version, fragment, offset, ts, index)  # it may be the first under the secret to come
            return
        self._failed(ctype, fragment, offset, ts, index)

    def _failed(self, ctype: int, fragment: bytes, offset: int, ts: int, index: int) -> None:
        """No candidate opens the record: damaged in the capture, too short to be one, or a key that is not this
        session's."""
        candidates = self.candidates
        assert candidates is not None
        self.failures += 1
        shortest = candidates[0].cipher.shortest
        if candidates[0].started or len(fragment) < shortest:
            for candidate in candidates:
                candidate.lo += candidate.started
                candidate.hi += 1
            self.seen -= 1
            self._hide(ctype, fragment)
            if len(fragment) < shortest:
                message = f"a record of {len(fragment)} bytes is shorter than its cipher's nonce and tag ({shortest} bytes)"
            else:
                message = "a record failed authentication: its bytes were damaged in the capture, or the sequence is lost"
            self.session.problem("tls.bad-record", message, offset, ts, index)
        elif self.session.expects_handshake_failures(self.side):
            self.seen -= 1
            return  # a TLS 1.3 handshake record whose key the key log lacks: no Kafka bytes in it
        else:
            self.seen -= 1
            self._hide(ctype, fragment)
            self.session.problem(
                "tls.wrong-key",
                "the key log's secret for this session does not open its records (a wrong or mismatched key log?)",
                offset,
                ts,
                index,
                "warning",  # the key log's fault, not the capture's
            )
        if self.failures >= GIVE_UP:
            self.gave_up = True
            self.session.problem(
                "tls.gave-up",
                f"{GIVE_UP} records in a row could not be opened; the rest of this direction stays encrypted",
                offset,
                ts,
                index,
                "warning",  # what made it give up is told on its own
            )

    def _plaintext(self, candidate: Candidate, ctype: int, plain: bytes, offset: int, ts: int, index: int) -> None:
        if self.session.tls13:
            inner = plain.rstrip(b"\0")
            if not inner:
                self.session.problem("tls.bad-record", "a TLS 1.3 record holds no content type", offset, ts, index)
                return
            ctype, plain = inner[-1], inner[:-1]
        if ctype == APPLICATION_DATA:
            self.session.opened(candidate.label)
            if self.missing:
                self.out.gap(self.missing, ts)
                self.missing = 0
            self.plaintext += len(plain)
            self.out.data(plain, ts, index)
        elif ctype == HANDSHAKE:
            self.handshake.feed(plain)
        elif ctype == ALERT:
            self._alert(plain, offset, ts, index)

    def _hide(self, ctype: int, fragment: bytes) -> None:
        """A record that stays encrypted: what it held is missing from the plaintext stream. In TLS 1.3 the
        client's first encrypted record is its Finished: no request in it."""
        if ctype not in (APPLICATION_DATA, HANDSHAKE, ALERT):
            return
        self.seen += 1
        self.hidden += 1
        session = self.session
        if ctype != APPLICATION_DATA or (session.tls13 and self.side == CLIENT and self.seen == 1):
            return
        size = len(fragment) - session.overhead()
        self.missing += max(0, size)
        if self.side == CLIENT:
            self.writes += not self.continued and size >= SMALLEST_REQUEST
            self.continued = size >= FULL_RECORD

    def _hide_unformed(self, ctype: int, fragment: bytes) -> None:
        """A record hidden before the direction had candidates: its sequence number went by all the same."""
        hidden = self.hidden
        self._hide(ctype, fragment)
        if self.hidden > hidden:
            lo, hi = self.unformed
            self.unformed = (lo + 1, hi + 1)

    def _hold(self, ctype: int, version: int, fragment: bytes, offset: int, ts: int, index: int) -> None:
        self.waiting.append((ctype, version, fragment, offset, ts, index))
        self.waiting_bytes += len(fragment)
        self.session.wait()

    def retry(self) -> None:
        """What the waiting records waited for may have come: run them again, in order."""
        waiting, self.waiting = self.waiting, deque()
        self.waiting_bytes = 0
        while waiting:
            self._record(*waiting.popleft())

    def _give_up_waiting(self) -> None:
        """Waiting records whose keys never came stay encrypted, in their order."""
        waiting, self.waiting = self.waiting, deque()
        self.waiting_bytes = 0
        for ctype, _, fragment, _, _, _ in waiting:
            self._hide_unformed(ctype, fragment)

    def _lost(self, records: int | None, length: int, offset: int, ts: int) -> None:
        """Records the capture lost: their sequence numbers go by all the same."""
        self.handshake.reset()
        if records is None:
            most = length // MIN_RECORD + 1
            least = length // (HEADER + MAX_LENGTH)
        else:
            most = least = records
        if self.encrypted:
            self.missing += max(0, length - (least or 1) * (HEADER + self.session.overhead()))
            if self.candidates is None:
                lo, hi = self.unformed
                self.unformed = (lo + least, hi + most)
            else:
                for candidate in self.candidates:
                    candidate.lo += least if candidate.started else 0
                    candidate.hi += most
                self.session.after_loss(self)
        self.session.problem(
            "tls.record-lost",
            f"{length} bytes of TLS records are missing from the capture"
            + (f" ({records} record{'s' if records != 1 else ''})" if records else ""),
            offset,
            ts,
            0,
            "warning",
        )

    def _skipped(self, length: int, offset: int) -> None:
        self.session.problem(
            "tls.skipped",
            f"{length} bytes that do not start a TLS record were skipped",
            offset,
            self.records.last_ts,
            self.records.last_index,
            "warning",
        )

    # handshake messages and alerts

    def _message(self, kind: int, body: bytes) -> None:
        session = self.session
        if kind == (CLIENT_HELLO, SERVER_HELLO)[self.side] and not self.encrypted:
            try:
                session.hello(kind, parse_hello(kind, body))
            except HelloError as exc:
                session.problem("tls.bad-hello", f"a {('Client', 'Server')[self.side]}Hello is malformed: {exc}", None, 0, 0)
        elif kind == FINISHED and session.tls13 and self.candidates and self.candidates[0].label.endswith("HANDSHAKE_TRAFFIC_SECRET"):
            self.candidates = session.application_candidates(self.side)  # None: formed anew, partial, at the next record
            self.partial = False
        elif kind == KEY_UPDATE and session.tls13 and self.candidates:
            current = self.candidates[0]
            if current.secret is not None:
                self.candidates = [session.updated(current)]
        elif kind == ENCRYPTED_EXTENSIONS and session.tls13:
            try:
                session.chosen_alpn(encrypted_extensions_alpn(body))
            except HelloError:
                pass

    def _alert(self, body: bytes, offset: int, ts: int, index: int) -> None:
        if len(body) >= 2 and body[1] != 0:
            name = ALERTS.get(body[1], f"alert {body[1]}")
            level = "fatal" if body[0] == 2 else "warning"
            self.session.problem(
                "tls.alert", f"the {('client', 'broker')[self.side]} sent a {level} alert: {name}", offset, ts, index, "warning"
            )


def _open_at(candidate: Candidate, ctype: int, version: int, fragment: bytes) -> tuple[int, bytes] | None:
    """(sequence number, plaintext) where the candidate opens the record, or None."""
    cipher = candidate.cipher
    if cipher.gcm12 and len(fragment) >= 8:
        explicit = int.from_bytes(fragment[:8], "big")
        if candidate.lo <= explicit <= candidate.hi:
            plain = cipher.open(explicit, ctype, version, fragment)
            if plain is not None:
                return explicit, plain
    for seq in range(candidate.lo, min(candidate.hi, candidate.lo + MAX_TRIALS) + 1):
        plain = cipher.open(seq, ctype, version, fragment)
        if plain is not None:
            return seq, plain
    return None


class TlsSession:
    """Both directions of one TLS connection, what their hellos said, and the keys found for them."""

    def __init__(
        self,
        keys: KeyLog,
        report: Report,
        outputs: tuple[StreamSink, StreamSink],
        on_info: Callable[[TlsInfo], None],
        waiting: set[TlsSession],
    ) -> None:
        self.keys = keys
        self.report = report
        self.on_info = on_info
        self.waiting_set = waiting
        """The sessions of the dissector holding records for keys that may still come."""
        self.directions = (Direction(self, CLIENT, outputs[0]), Direction(self, SERVER, outputs[1]))
        self.client_hello: Hello | None = None
        self.server_hello: Hello | None = None
        self.retried = False
        """A HelloRetryRequest came: the client's second ClientHello is in the clear, the ServerHello follows."""
        self.suite: Suite | None = None
        self.version: int | None = None
        self.tls13 = False
        self.label: str | None = None
        self.alpn: tuple[str, ...] = ()
        self.told: set[str] = set()

    # what the directions tell

    def hello(self, kind: int, hello: Hello) -> None:
        if kind == CLIENT_HELLO:
            self.client_hello = hello
            self.alpn = hello.alpn
        elif hello.retry:
            self.retried = True
            self.directions[CLIENT].retry()
        elif self.server_hello is None:
            self.server_hello = hello
            self.version = hello.version
            self.tls13 = hello.version == TLS13
            self.suite = SUITES.get(hello.suites[0])
            for direction in self.directions:
                direction.records.version = min(hello.version, TLS12)  # every record after the hellos says 3.3
            if hello.alpn:
                self.alpn = hello.alpn
            self.on_info(self.info())
            self.directions[CLIENT].retry()

    def chosen_alpn(self, alpn: tuple[str, ...]) -> None:
        if alpn:
            self.alpn = alpn
            self.on_info(self.info())

    def opened(self, label: str) -> None:
        if self.label is None:
            self.label = label
            self.on_info(self.info())

    def problem(self, code: str, message: str, offset: int | None, ts: int, index: int, severity: Severity = "error") -> None:
        """Told once per connection and code, except losses, damaged records and alerts, told each time."""
        if code in self.told and code not in ("tls.record-lost", "tls.bad-record", "tls.alert", "tls.skipped"):
            return
        self.told.add(code)
        self.report(Diagnostic(code, message, severity, "stream", offset), ts, index)

    # keys

    def _secret(self, label: str) -> bytes | None:
        assert self.client_hello is not None
        return self.keys.get(label, self.client_hello.random)

    def may_open_later(self) -> bool:
        """Whether a record that cannot be opened now may be later: the ServerHello is still to come on the
        other stream, or keys may still arrive (a key log is in use, and pcapng secrets blocks add to it)."""
        if self.client_hello is None or (self.suite is not None and self.suite.cipher is None):
            return False
        return self.server_hello is None or self.keys.in_use

    def wait(self) -> None:
        self.waiting_set.add(self)

    def keys_added(self) -> None:
        """New key log lines arrived (a pcapng secrets block): held records may open now."""
        self.waiting_set.discard(self)
        for direction in self.directions:
            if direction.waiting:
                direction.retry()

    def explain(self, offset: int | None, ts: int, index: int) -> None:
        """Why records stay encrypted, once: the handshake, the ServerHello, the suite or the keys."""
        hello = self.server_hello
        if self.client_hello is None:
            code, message = "tls.no-handshake", "the capture began after the TLS handshake: without the ClientHello's random no key applies"
        elif hello is None:
            code, message = "tls.no-server-hello", "the ServerHello is missing from the capture: its cipher suite (and random) are needed"
        elif self.suite is None or self.suite.cipher is None:
            name = suite_name(hello.suites[0])
            code, message = "tls.unsupported-cipher", f"cipher suite {name} is not one kdissect decrypts (AEAD suites are)"
        else:
            code, message = "tls.no-keys", "the key log has no secret for this session: its Kafka exchanges stay hidden (give --tls-keylog)"
        damaged = code == "tls.no-server-hello"  # the others are what the capture or the key log holds, not a loss
        self.problem(code, message, offset, ts, index, "error" if damaged else "warning")

    def candidates(self, side: int, lo: int, hi: int) -> list[Candidate] | None:
        """The first candidates of a direction's encrypted records, `lo` to `hi` of them gone by already;
        None when the hellos or the key log do not give them (yet)."""
        suite = self.suite
        if self.client_hello is None or self.server_hello is None or suite is None or suite.cipher is None:
            return None
        if not self.tls13:
            master = self._secret(keylog.MASTER)
            if master is None:
                return None
            iv_length = 4 if suite.cipher == "AES-GCM" else 12
            randoms = (self.client_hello.random, self.server_hello.random)
            keys = tls12.key_block(suite.hash, master, randoms, suite.key_length, iv_length)
            return [Candidate(RecordCipher(suite.cipher, keys[side], keys[2 + side], False), lo, hi, keylog.MASTER, None)]
        handshake_label = (keylog.CLIENT_HANDSHAKE, keylog.SERVER_HANDSHAKE)[side]
        secret = self._secret(handshake_label)
        made = [self._candidate(handshake_label, secret, lo, hi)] if secret is not None and not lo else []
        made += self.application_candidates(side, hi) or []
        return made or None

    def _candidate(self, label: str, secret: bytes, lo: int, hi: int) -> Candidate:
        suite = self.suite
        assert suite is not None and suite.cipher is not None
        key, iv = tls13.traffic_keys(suite.hash, secret, suite.key_length)
        return Candidate(RecordCipher(suite.cipher, key, iv, True), lo, hi, label, secret)

    def application_candidates(self, side: int, hi: int = 0) -> list[Candidate] | None:
        label = (keylog.CLIENT_TRAFFIC, keylog.SERVER_TRAFFIC)[side]
        secret = self._secret(label)
        return None if secret is None else [self._candidate(label, secret, 0, hi)]

    def updated(self, current: Candidate) -> Candidate:
        """The candidate after its sender's KeyUpdate: the next secret, from sequence number 0."""
        assert self.suite is not None and current.secret is not None
        return self._candidate(current.label, tls13.next_secret(self.suite.hash, current.secret), 0, 0)

    def after_loss(self, direction: Direction) -> None:
        """In TLS 1.3 a lost record may have been a KeyUpdate: the next key joins the candidates."""
        candidates = direction.candidates
        if not self.tls13 or not candidates or len(candidates) > 1:
            return
        last = candidates[0]
        if last.started and last.secret is not None and not last.label.endswith("HANDSHAKE_TRAFFIC_SECRET"):
            following = self.updated(last)
            following.hi = last.hi - last.lo
            candidates.append(following)

    def expects_handshake_failures(self, side: int) -> bool:
        """TLS 1.3 without the handshake secret: the handshake records fail under the application key."""
        return self.tls13 and self._secret((keylog.CLIENT_HANDSHAKE, keylog.SERVER_HANDSHAKE)[side]) is None

    def overhead(self) -> int:
        """Bytes an encrypted record carries beyond its plaintext: tag, type byte (1.3), explicit nonce (GCM 1.2)."""
        suite = self.suite
        if suite is None or suite.cipher is None:
            return 16
        return 17 if self.tls13 else 24 if suite.cipher == "AES-GCM" else 16

    # what the connection reports

    def info(self) -> TlsInfo:
        hello = self.client_hello
        return TlsInfo(
            version_name(self.version) if self.version is not None else None,
            suite_name(self.server_hello.suites[0]) if self.server_hello is not None else None,
            hello.sni if hello else None,
            self.alpn,
            self.label,
        )

    def totals(self) -> TlsTotals:
        client, server = self.directions
        return TlsTotals((client.seen, server.seen), (client.opened, server.opened), (client.plaintext, server.plaintext), client.writes)
