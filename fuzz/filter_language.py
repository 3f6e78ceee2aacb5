"""Display filters: the lexer, the parser and the compiler, on any text and on expressions the input steers through
the grammar (deep nesting, long numbers, times out of range, hostile regular expressions included).

The first byte chooses: even, the rest of the input is the expression's text (UTF-8, errors replaced); odd, the
rest steers `_Steered`, which writes an expression of the grammar's own parts. Contract: `compile_filter` and
`compile_fields` return or raise a FilterError whose text is one line with its column inside the expression,
never anything else; a compiled filter's `matches` and `keep` answer on real exchanges without raising, `keep`
False from the request stays False with the response, and `keep` False means `matches` False.
"""

from __future__ import annotations

from pathlib import Path

from fuzz.common import Broken, instrumented, main

with instrumented():
    from kdissect.capture import open_capture
    from kdissect.dissector import Options, make_dissector
    from kdissect.events import Exchange
    from kdissect.filter import FilterError, compile_fields, compile_filter
    from kdissect.schema import BUILTIN

CAPTURE = Path(__file__).resolve().parent.parent / "captures" / "produce-codecs-confluent.pcap"
FIELDS = (
    "api",
    "api_key",
    "version",
    "correlation_id",
    "client_id",
    "status",
    "latency_ms",
    "time",
    "topic",
    "error",
    "diagnostic",
    "client.port",
    "broker.address",
    "request.Acks",
    "response.ThrottleTimeMs",
    "request.TopicData.PartitionData.Records.records.key",
    "request.TopicData.PartitionData.Records.batches.codec",
    "response.Responses.PartitionResponses.ErrorCode",
    "count(topic)",
    "len(client_id)",
    "count(request.TopicData)",
    "nosuchfield",
)
OPERATORS = ("==", "!=", "<", "<=", ">", ">=", "contains", "matches", "~", "eq", "ge", "in")
LITERALS = (
    "5",
    "-1",
    "2.5",
    "0x1f",
    "1e-3",
    "1e300",
    "1e999",
    "9" * 30,
    "1.5s",
    "250us",
    "Fetch",
    "Produce",
    "NOT_LEADER_OR_FOLLOWER",
    "ok",
    "unanswered",
    "true",
    "de:ad:be:ef",
    "kdrig-gzip",
    '"2026-11-21T13:34:02Z"',
    '"9999-12-31T23:59:59-01:00"',
    '"(a+)+$"',
    '"^kdrig-(gzip|zstd)$"',
    '"a{4294967296}"',
    '"(?<=x)y"',
    '"(x)\\\\1"',
    '"\\x00\\n"',
    '"unclosed',
    "{1..3, 7}",
    "{0..70000}",
    "{Fetch, Produce}",
)


def _exchanges() -> list[Exchange]:
    with open_capture(CAPTURE) as capture:
        return [e for e in make_dissector(Options()).run(capture.packets()) if isinstance(e, Exchange)]


EXCHANGES = _exchanges()


class _Steered:
    """An expression of the grammar, each choice taken by the next input byte (zero once the input is spent)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.at = 0

    def pick(self, n: int) -> int:
        byte = self.data[self.at] if self.at < len(self.data) else 0
        self.at += 1
        return byte % n

    def expr(self, depth: int = 0) -> str:
        choice = self.pick(8) if depth < 80 else 0
        if choice < 3:
            return self.test()
        if choice == 3:
            return "not " + self.expr(depth + 1)
        if choice == 4:
            return "(" + self.expr(depth + 1) + ")"
        if choice == 5:
            return f"{('all', 'any')[self.pick(2)]}({self.test()})"
        return self.expr(depth + 1) + (" and ", " or ", " && ", " || ")[self.pick(4)] + self.expr(depth + 1)

    def test(self) -> str:
        field = FIELDS[self.pick(len(FIELDS))]
        if self.pick(4) == 0:
            return field
        return f"{field} {OPERATORS[self.pick(len(OPERATORS))]} {LITERALS[self.pick(len(LITERALS))]}"


def _refused(exc: FilterError, text: str) -> None:
    line = str(exc)
    if "\n" in line:
        raise Broken(f"a mistake told on more than one line: {line!r}")
    if exc.column is not None and not 1 <= exc.column <= len(text) + 1:
        raise Broken(f"column {exc.column} outside an expression of {len(text)} characters: {line!r}")


def one_input(data: bytes) -> None:
    if not data:
        return
    text = data[1:].decode("utf-8", "replace") if data[0] % 2 == 0 else _Steered(data[1:]).expr()
    try:
        compile_fields([text], BUILTIN)
    except FilterError as exc:
        _refused(exc, text)
    try:
        wanted = compile_filter([("-Y", text)], BUILTIN)
    except FilterError as exc:
        _refused(exc, text)
        return
    for exchange in EXCHANGES:
        matched = wanted.matches(exchange)
        if not isinstance(matched, bool):
            raise Broken(f"matches answered {matched!r}")
        request = exchange.request
        if wanted.keep is None or request is None or request.header is None:
            continue
        early = wanted.keep(exchange.connection, request, None)
        late = early if exchange.response is None else wanted.keep(exchange.connection, request, exchange.response)
        if (late and not early) or (matched and not late):
            raise Broken(f"exchange {exchange.id}: kept from the request {early}, with the response {late}, matched {matched}")


if __name__ == "__main__":
    main(one_input)
