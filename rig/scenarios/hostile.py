"""Strings that attack a terminal, sent by a real client (issue 36): a decoder that prints what it captured must show
them, not obey them.

kafka-python's client id and group id, a topic name and record keys, values and header keys and values carry terminal escapes
(window title, clipboard, clear screen), a line break, a tab, a C1 control, a line separator, a bidi override and
rich markup. The manifest names each string (JSON escapes the controls, rig/manifest.py the rest).
"""

from __future__ import annotations

from rig.clients import FIXED_TS, kafka_python_name
from rig.scenarios import Ctx, scenario
from rig.scenarios.common import attempt
from rig.scenarios.kit import confluent_consume, kafka_python_create_topics, kafka_python_drain, kafka_python_produce

HOSTILE = {
    "title": "\x1b]0;pwned\x07",
    "clipboard": "\x1b]52;c;aGk=\x07",
    "clear": "\x1b[2J",
    "newline": "line\nbreak",
    "tab": "a\tb",
    "c1": "\u009b31m",
    "line-separator": "a\u2028b",
    "bidi": "\u202etxt.exe",
    "markup-close": "a[/x]b",
    "markup-style": "[bold red]x[/]",
    "markup-link": "[link=https://example.com]click[/link]",
}
"""Each attack by name: what a terminal or rich would do with it unescaped."""

EVERY = "".join(HOSTILE.values())
CLIENT_ID = "kdrig-hostile" + EVERY
GROUP = "kdrig-hostile-group" + EVERY
TOPIC = "hostile" + HOSTILE["clear"] + HOSTILE["bidi"] + HOSTILE["markup-style"] + HOSTILE["c1"]
PLAIN_TOPIC = "hostile-plain"


def hostile_records() -> list[dict]:
    """One record per string: as its key, its value, a header's value; and one record whose header keys are them."""
    out = [
        {
            "key": f"{name}:{text}".encode(),
            "value": f"value {text} end".encode(),
            "headers": [(f"h-{name}", text.encode())],
            "partition": 0,
            "timestamp": FIXED_TS + i,
        }
        for i, (name, text) in enumerate(HOSTILE.items())
    ]
    out.append(
        {
            "key": b"header-keys",
            "value": b"header keys",
            "headers": [(text, name.encode()) for name, text in HOSTILE.items()],
            "partition": 0,
            "timestamp": FIXED_TS + len(HOSTILE),
        }
    )
    return out


@scenario(
    "hostile-strings-kafka-python",
    "kafka-python with terminal escapes, control characters, a bidi override and rich markup in its client id, "
    "group id, a topic name and record keys, values and headers: produced, then read back by a kafka-python group "
    "member; kafka-python refuses to assign the hostile topic (not ASCII), so confluent-kafka, with the same client "
    "id, reads it back",
    expect_apis={0, 1, 3, 10, 11, 14},
)
def hostile_strings(ctx: Ctx) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    m, client = ctx.manifest, kafka_python_name()
    m.op(client, "strings", strings=HOSTILE, client_id=CLIENT_ID, group=GROUP, topic=TOPIC)
    kafka_python_create_topics(m, ctx.bootstrap, {PLAIN_TOPIC: 1, TOPIC: 1})
    producer = KafkaProducer(bootstrap_servers=ctx.bootstrap, client_id=CLIENT_ID, acks=1)
    for topic in (PLAIN_TOPIC, TOPIC):
        kafka_python_produce(m, producer, topic, hostile_records(), acks=1)
    producer.close(5)
    member = KafkaConsumer(
        bootstrap_servers=ctx.bootstrap,
        client_id=CLIENT_ID,
        group_id=GROUP,
        auto_offset_reset="earliest",
        session_timeout_ms=6000,
        heartbeat_interval_ms=500,
        max_poll_interval_ms=6000,
    )
    member.subscribe([PLAIN_TOPIC])
    kafka_python_drain(m, member, len(hostile_records()), group=GROUP)
    attempt(m, client, "commit", member.commit, group=GROUP)
    attempt(m, client, "close", member.close, group=GROUP)
    reader = KafkaConsumer(bootstrap_servers=ctx.bootstrap, client_id=CLIENT_ID, enable_auto_commit=False)
    attempt(m, client, "assign", lambda: reader.assign([TopicPartition(TOPIC, 0)]), topic=TOPIC)  # refused: not ASCII
    attempt(m, client, "close", reader.close)
    conf = {"bootstrap.servers": ctx.bootstrap, "client.id": CLIENT_ID}
    confluent_consume(m, conf, [(TOPIC, 0, 0)], len(hostile_records()), timeout=10)
