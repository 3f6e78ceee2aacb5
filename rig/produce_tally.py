"""What producers sent, counted from a capture by the rig's own reader (not kdissect's): the producer ids of their
batches, and the batches an idempotent producer sent more than once.

A batch is known by its topic, partition, producer id, epoch and base sequence; a second Produce request carrying the
same one is a resend, which the broker answers DUPLICATE_SEQUENCE_NUMBER (46) once it holds the first. A scenario
registered with ``wire_counts=`` one of these functions gets their counts as a `counted` manifest line, and
`python -m rig check` counts again. Produce v3 and later (record batches v2).
"""

from __future__ import annotations

import struct
from collections import Counter, defaultdict

from rig.pcapinfo import Summary

PRODUCE = 0
FIRST_FLEXIBLE = 9
DUPLICATE_SEQUENCE_NUMBER = 46


class Reader:
    """Just enough of Kafka's encodings, classic and flexible (compact lengths, tagged fields), to walk Produce."""

    def __init__(self, data: bytes, pos: int, flexible: bool) -> None:
        self.data, self.pos, self.flexible = data, pos, flexible

    def take(self, fmt: str) -> int:
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return value

    def uvarint(self) -> int:
        shift = value = 0
        while True:
            byte = self.data[self.pos]
            self.pos += 1
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return value
            shift += 7

    def count(self, classic: str = "!i") -> int:
        """An array's length, or a string's or bytes' (null reads as 0)."""
        return max(self.uvarint() - 1 if self.flexible else self.take(classic), 0)

    def blob(self, classic: str) -> bytes:
        size = self.count(classic)
        self.pos += size
        return self.data[self.pos - size : self.pos]

    def string(self) -> bytes:
        return self.blob("!h")

    def tags(self) -> None:
        if self.flexible:
            for _ in range(self.uvarint()):
                self.uvarint()
                self.pos += self.uvarint()


def client_id(request: bytes) -> str:
    size = struct.unpack_from("!h", request, 8)[0]
    return request[10 : 10 + size].decode("utf-8", "replace") if size >= 0 else ""


def batches(version: int, request: bytes) -> list[tuple]:
    """(topic, partition, producer id, epoch, base sequence) of each record batch of a Produce request."""
    r = Reader(request, 10 + max(struct.unpack_from("!h", request, 8)[0], 0), version >= FIRST_FLEXIBLE)
    r.tags()  # the request header's
    r.string()  # transactional id
    r.pos += 6  # acks, timeout
    out = []
    for _ in range(r.count()):
        topic = r.string().decode()
        for _ in range(r.count()):
            partition = r.take("!i")
            records, at = r.blob("!i"), 0
            while at + 61 <= len(records):
                producer_id, epoch, sequence = struct.unpack_from("!qhi", records, at + 43)
                out.append((topic, partition, producer_id, epoch, sequence))
                at += 12 + struct.unpack_from("!i", records, at + 8)[0]
            r.tags()
        r.tags()
    return out


def error_codes(version: int, response: bytes) -> list[int]:
    """The error code of each partition of a Produce response."""
    r = Reader(response, 4, version >= FIRST_FLEXIBLE)
    r.tags()  # the response header's
    out = []
    for _ in range(r.count()):
        r.string()
        for _ in range(r.count()):
            r.pos += 4
            out.append(r.take("!h"))
            r.pos += 8 + (8 if version >= 2 else 0) + (8 if version >= 5 else 0)  # base offset, append time, log start
            if version >= 8:
                for _ in range(r.count()):  # record errors
                    r.pos += 4
                    r.string()
                    r.tags()
                r.string()  # error message
            r.tags()
        r.tags()
    return out


def produce_resends(summary: Summary) -> dict:
    """Idempotent batches sent, distinct, sent more than once, the extra copies, and the answers by error code."""
    sent: Counter = Counter()
    answers: Counter = Counter()
    for version, request, response in summary.bodies(PRODUCE):
        sent.update(batch for batch in batches(version, request) if batch[2] >= 0)
        if response is not None:
            answers.update(error_codes(version, response))
    return {
        "batches": sum(sent.values()),
        "distinct_batches": len(sent),
        "batches_resent": sum(1 for n in sent.values() if n > 1),
        "extra_copies": sum(n - 1 for n in sent.values()),
        "duplicate_sequence_answers": answers[DUPLICATE_SEQUENCE_NUMBER],
        "answers_by_error_code": {str(code): n for code, n in sorted(answers.items())},
    }


def producer_ids(summary: Summary) -> dict:
    """Per client id, how many batches each producer id sent (-1: not idempotent), and the Produce answers."""
    ids: defaultdict = defaultdict(Counter)
    answers: defaultdict = defaultdict(Counter)
    for version, request, response in summary.bodies(PRODUCE):
        ids[client_id(request)].update(str(batch[2]) for batch in batches(version, request))
        if response is not None:
            answers[client_id(request)].update(str(code) for code in error_codes(version, response))
    return {
        "batches_by_producer_id": {client: dict(sorted(n.items())) for client, n in sorted(ids.items())},
        "answers_by_error_code": {client: dict(sorted(n.items())) for client, n in sorted(answers.items())},
    }
