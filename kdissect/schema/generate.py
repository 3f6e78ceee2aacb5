"""Write kdissect/schema/generated.py and generated_extras.py from Apache Kafka's message specs.

    python -m kdissect.schema.generate [--specs PATH] [--output PATH] [--extras-output PATH]

The specs folder defaults to $KDISSECT_SPECS, else ../shared/kafka-message-specs beside the project
root. It holds trunk at the top level and the 3.9 branch in kafka-3.9/: Kafka 4 removed old versions
that real captures still carry, so each table is the union of the two (trunk wins where both define a
version). Its extras/ folder holds trunk's other schemas of bytes that cross the wire: Kafka Streams'
subscription (the consumer protocol's user data) and the records of Kafka's own topics, which go to
generated_extras.py, a module loaded only when such bytes are met. The output is deterministic: the same
inputs give the same bytes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from kdissect.schema.model import (
    NEVER,
    OPEN,
    Api,
    Field,
    Framing,
    InternalTopic,
    KafkaError,
    Kind,
    MessageSpec,
    RecordType,
    Versions,
    all_versions,
    union,
)
from kdissect.schema.specs import Document, MessageBuilder

PACKAGE_DIR = Path(__file__).resolve().parent
PROJECT_ROOT = PACKAGE_DIR.parents[1]
DEFAULT_OUTPUT = PACKAGE_DIR / "generated.py"
DEFAULT_EXTRAS_OUTPUT = PACKAGE_DIR / "generated_extras.py"
ERROR_CODES_FILE = PACKAGE_DIR / "error_codes.tsv"
COMMAND = "python -m kdissect.schema.generate"

# Snapshot label and its folder inside the specs folder, newest first: the union prefers the first.
SNAPSHOTS = (("trunk", "."), ("3.9", "kafka-3.9"))

# Data schemas the decoder needs, by the constant that holds them in generated.py.
DATA_SCHEMAS = {
    "CONSUMER_PROTOCOL_SUBSCRIPTION": "ConsumerProtocolSubscription",
    "CONSUMER_PROTOCOL_ASSIGNMENT": "ConsumerProtocolAssignment",
    "CONTROL_RECORD_KEY": "ControlRecordTypeSchema",
    "END_TXN_MARKER": "EndTxnMarker",
    "LEADER_CHANGE_MESSAGE": "LeaderChangeMessage",
    "SNAPSHOT_HEADER_RECORD": "SnapshotHeaderRecord",
    "SNAPSHOT_FOOTER_RECORD": "SnapshotFooterRecord",
    "KRAFT_VERSION_RECORD": "KRaftVersionRecord",
    "VOTERS_RECORD": "VotersRecord",
    "DEFAULT_PRINCIPAL_DATA": "DefaultPrincipalData",
}

# Control record type numbers are not in the specs: they come from Kafka's
# org.apache.kafka.common.record.ControlRecordType. Value: (type name, data schema of the record value).
CONTROL_RECORD_TYPES = {
    0: ("ABORT", "EndTxnMarker"),
    1: ("COMMIT", "EndTxnMarker"),
    2: ("LEADER_CHANGE", "LeaderChangeMessage"),
    3: ("SNAPSHOT_HEADER", "SnapshotHeaderRecord"),
    4: ("SNAPSHOT_FOOTER", "SnapshotFooterRecord"),
    5: ("KRAFT_VERSION", "KRaftVersionRecord"),
    6: ("KRAFT_VOTERS", "VotersRecord"),
}


EXTRAS = "extras"
"""The specs folder's copies of trunk's other schemas (its README says which commit)."""
EXTRA_DATA_SCHEMAS = {"STREAMS_SUBSCRIPTION_INFO": ("streams", "SubscriptionInfoData")}
"""Data schemas of extras/, by the constant that holds them in generated_extras.py: (folder, spec name)."""
INTERNAL_TOPICS: dict[str, tuple[str, Framing]] = {
    "__consumer_offsets": ("group-coordinator", "coordinator"),
    "__transaction_state": ("transaction-coordinator", "coordinator"),
    "__share_group_state": ("share-coordinator", "coordinator"),
    "__remote_log_metadata": ("storage", "metadata"),
}
"""Kafka's own topics, each with the extras/ folder of its record schemas and how its records say their type.
The KRaft metadata log (__cluster_metadata) reads the same way as metadata-framed records; its schemas
(metadata/src/main/resources/common/metadata in Kafka) are not in the specs folder yet."""
RECORD_KINDS: dict[Framing, tuple[tuple[Kind, str], ...]] = {
    "coordinator": (("coordinator-key", "Key"), ("coordinator-value", "Value")),
    "metadata": (("metadata", "Record"),),
}
"""The spec types each framing is made of, and the suffix a record type's name drops from the spec's name."""


def default_specs() -> Path:
    env = os.environ.get("KDISSECT_SPECS")
    return Path(env) if env else PROJECT_ROOT.parent / "shared" / "kafka-message-specs"


# ---------------------------------------------------------------------------------------------- reading


def load_spec(path: Path) -> Document:
    return Document(str(path), path.read_text(encoding="utf-8"))


@dataclass
class Snapshot:
    label: str
    specs: dict[str, Document]
    """Top-level JSON files by message name."""


def read_snapshots(specs_dir: Path) -> list[Snapshot]:
    snapshots = []
    for label, folder in SNAPSHOTS:
        specs = {}
        for path in sorted((specs_dir / folder).glob("*.json")):
            spec = load_spec(path)
            specs[spec.root["name"]] = spec
        if not specs:
            raise SystemExit(f"no spec files in {specs_dir / folder}")
        snapshots.append(Snapshot(label, specs))
    return snapshots


def input_digest(specs_dir: Path, folders: list[str]) -> str:
    """A sha256 over every spec file read, so the header pins the inputs even without the README."""
    digest = hashlib.sha256()
    for folder in folders:
        for path in sorted((specs_dir / folder).glob("*.json")):
            digest.update(f"{folder}/{path.name}\n".encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def extras_folders() -> list[str]:
    """The extras/ folders the tables read, in a fixed order."""
    folders = {folder for folder, _ in EXTRA_DATA_SCHEMAS.values()} | {folder for folder, _ in INTERNAL_TOPICS.values()}
    return [f"{EXTRAS}/{folder}" for folder in sorted(folders)]


def snapshot_commits(specs_dir: Path) -> dict[str, str]:
    """Commit and version of each snapshot, from the table in the specs README."""
    readme = specs_dir / "README.md"
    if not readme.exists():
        return {}
    row = re.compile(r"^\|\s*`([^`]+)`[^|]*\|[^|]*\*\*([0-9a-f]{40})\*\*[^|]*\|\s*([^|]+?)\s*\|")
    folders = {f"{folder}/": label for label, folder in SNAPSHOTS}
    commits = {}
    for line in readme.read_text(encoding="utf-8").splitlines():
        match = row.match(line)
        if match and match.group(1) in folders:
            commits[folders[match.group(1)]] = f"apache/kafka {match.group(2)} ({match.group(3)})"
    return commits


def read_error_codes(path: Path) -> dict[int, KafkaError]:
    """error_codes.tsv: code, name, retriable (yes/no), meaning; by code."""
    codes = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            code, name, retriable, meaning = line.split("\t")
            if retriable not in ("yes", "no"):
                raise ValueError(f"{path.name}: error {code}: retriable is {retriable!r}, not yes or no")
            codes[int(code)] = KafkaError(int(code), name.strip(), retriable == "yes", meaning.strip())
    return dict(sorted(codes.items()))


def constant_name(name: str) -> str:
    """An API's or a schema's name as a constant: JoinGroup -> JOIN_GROUP."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).upper()


# ---------------------------------------------------------------------------------------------- building


def build(document: Document, source: str, kind: Kind) -> MessageSpec:
    """One definition of Kafka's own specs, which must have no problem: the tables are built from facts only."""
    builder = MessageBuilder(document, source)
    message = builder.build(kind)
    if builder.problems:
        raise ValueError("\n".join(str(problem) for problem in builder.problems))
    return message


@dataclass
class Tables:
    apis: dict[int, Api]
    request_header: tuple[MessageSpec, ...]
    response_header: tuple[MessageSpec, ...]
    data: dict[str, tuple[MessageSpec, ...]]
    """Data schemas by spec name, in DATA_SCHEMAS order."""


def build_tables(snapshots: list[Snapshot]) -> Tables:
    def definitions(name: str, kind: Kind) -> tuple[MessageSpec, ...]:
        found = [build(snap.specs[name], snap.label, kind) for snap in snapshots if name in snap.specs]
        return union(found)

    def api_definitions(key: int, kind: Kind) -> tuple[MessageSpec, ...]:
        """By key, not name: APIs get renamed (key 74 was ListClientMetricsResources in 3.9)."""
        found = [
            build(spec, snap.label, kind)
            for snap in snapshots
            for spec in snap.specs.values()
            if spec.root["type"] == kind and spec.root.get("apiKey") == key
        ]
        return union(found)

    keys = sorted({spec.root["apiKey"] for snap in snapshots for spec in snap.specs.values() if "apiKey" in spec.root})
    apis = {}
    for key in keys:
        requests, responses = api_definitions(key, "request"), api_definitions(key, "response")
        if [m.valid for m in requests] != [m.valid for m in responses]:
            raise ValueError(f"api key {key}: request and response versions differ")
        name = requests[0].name.removesuffix("Request")
        apis[key] = Api(key, name, requests, responses, all_versions(requests))

    data = {name: definitions(name, "data") for name in DATA_SCHEMAS.values()}
    for type_name, schema in CONTROL_RECORD_TYPES.values():
        if not data.get(schema):
            raise ValueError(f"control record {type_name}: no data schema {schema}")
    return Tables(
        apis=apis,
        request_header=definitions("RequestHeader", "header"),
        response_header=definitions("ResponseHeader", "header"),
        data=data,
    )


@dataclass
class ExtraTables:
    data: dict[str, tuple[MessageSpec, ...]]
    """Data schemas by the constant that holds them (EXTRA_DATA_SCHEMAS)."""
    topics: dict[str, InternalTopic]


def read_folder(folder: Path) -> list[Document]:
    documents = [load_spec(path) for path in sorted(folder.glob("*.json"))]
    if not documents:
        raise SystemExit(f"no spec files in {folder}")
    return documents


def internal_topic(name: str, documents: list[Document], framing: Framing) -> InternalTopic:
    """A topic's record types from its folder's specs: a key and a value of the same apiKey make a coordinator's record
    type, a metadata spec a metadata record type; their name without its "Key", "Value" or "Record"."""
    parts: dict[int, dict[str, MessageSpec]] = {}
    for document in documents:
        kind = document.root["type"]
        suffix = dict(RECORD_KINDS[framing]).get(kind)
        if suffix is None:
            continue  # a data schema beside the records (storage/'s producer snapshot, a local file)
        message = build(document, "trunk", kind)
        assert message.api_key is not None, f"{document.name}: a record spec without an apiKey"
        parts.setdefault(message.api_key, {})[kind] = message
    types = {}
    for key, found in sorted(parts.items()):
        if set(found) != {kind for kind, _ in RECORD_KINDS[framing]}:
            raise ValueError(f"{name}: record type {key} has {sorted(found)}, not {[k for k, _ in RECORD_KINDS[framing]]}")
        first_kind, suffix = RECORD_KINDS[framing][0]
        record_name = found[first_kind].name.removesuffix(suffix)
        key_defs = (found["coordinator-key"],) if framing == "coordinator" else ()
        value = found["coordinator-value" if framing == "coordinator" else "metadata"]
        types[key] = RecordType(key, record_name, key_defs, (value,))
    return InternalTopic(name, framing, types)


def build_extras(specs_dir: Path) -> ExtraTables:
    root = specs_dir / EXTRAS
    data: dict[str, tuple[MessageSpec, ...]] = {}
    for constant, (folder, name) in EXTRA_DATA_SCHEMAS.items():
        document = next((d for d in read_folder(root / folder) if d.root["name"] == name), None)
        if document is None:
            raise SystemExit(f"no spec {name} in {root / folder}")
        data[constant] = (build(document, "trunk", "data"),)
    topics = {topic: internal_topic(topic, read_folder(root / folder), framing) for topic, (folder, framing) in INTERNAL_TOPICS.items()}
    return ExtraTables(data, topics)


# ---------------------------------------------------------------------------------------------- writing


def q(text: str) -> str:
    """A double-quoted string literal, like the rest of the project."""
    return json.dumps(text)


def tuple_source(items: list[str]) -> str:
    return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"


def versions_name(v: Versions) -> str:
    if not v:
        return "NEVER"
    return f"V{v.lo}up" if v.hi == OPEN else f"V{v.lo}to{v.hi}"


class Writer:
    """Renders the tables as Python source.

    Every Versions becomes a named constant, every message and common struct a module-level variable;
    a field of a common struct refers to the struct's variable, so all its uses share one tuple.
    """

    def __init__(self) -> None:
        self.versions: set[Versions] = set()
        self.struct_vars: dict[int, str] = {}
        self.blocks: list[str] = []
        self.names: set[str] = set()

    def bind(self, name: str, source: str) -> str:
        if name in self.names:
            raise ValueError(f"variable {name} bound twice")
        self.names.add(name)
        self.blocks.append(f"{name} = {source}\n")
        return name

    def preamble(self) -> list[str]:
        """The Versions constants the bound definitions use, then the definitions."""
        out = []
        for v in sorted(self.versions - {NEVER}, key=lambda v: (v.lo, v.hi)):
            hi = "OPEN" if v.hi == OPEN else str(v.hi)
            out.append(f"{versions_name(v)} = Versions({v.lo}, {hi})\n")
        return out + ["\n"] + self.blocks

    def v(self, value: Versions) -> str:
        self.versions.add(value)
        return versions_name(value)

    def message(self, message: MessageSpec) -> str:
        """Bind a message (and first its common structs); return its variable name."""
        suffix = "" if message.source == "trunk" else "_v" + message.source.replace(".", "")
        var = f"_{message.name}{suffix}"
        struct_names = []
        for struct in message.common_structs:
            name = self.bind(f"{var}_{struct.name}", self.field_tuple(struct.fields, 0))
            self.struct_vars[id(struct.fields)] = name
            struct_names.append(f"StructSpec({q(struct.name)}, {self.v(struct.versions)}, {name})")
        args = [
            q(message.name),
            q(message.kind),
            str(message.api_key),
            self.v(message.valid),
            self.v(message.flexible),
            self.field_tuple(message.fields, 0),
        ]
        if struct_names:
            args.append(f"common_structs={tuple_source(struct_names)}")
        args.append(f"source={q(message.source)}")
        if message.latest_unstable:
            args.append("latest_unstable=True")
        return self.bind(var, f"_message({', '.join(args)})")

    def field_tuple(self, fields: tuple[Field, ...], depth: int) -> str:
        if not fields:
            return "()"
        indent = "    " * (depth + 1)
        lines = "".join(f"{indent}{self.field(f, depth + 1)},\n" for f in fields)
        return f"(\n{lines}{'    ' * depth})"

    def field(self, f: Field, depth: int) -> str:
        args = [q(f.name), q(f.type), self.v(f.versions)]
        if f.array:
            args.append("array=True")
        if f.nullable:
            args.append(f"nullable={self.v(f.nullable)}")
        if f.tagged:
            args.append(f"tagged={self.v(f.tagged)}")
        if f.tag is not None:
            args.append(f"tag={f.tag}")
        if f.flexible is not None:
            args.append(f"flexible={self.v(f.flexible)}")
        if f.default is not None:
            args.append(f"default={q(f.default)}")
        if f.map_key:
            args.append("map_key=True")
        if f.entity is not None:
            args.append(f"entity={q(f.entity)}")
        if f.ignorable:
            args.append("ignorable=True")
        if f.secret:
            args.append("secret=True")
        if f.config_value:
            args.append("config_value=True")
        if f.fields:
            shared = self.struct_vars.get(id(f.fields))
            args.append(f"fields={shared or self.field_tuple(f.fields, depth)}")
        return f"_field({', '.join(args)})"


def render(tables: Tables, error_codes: dict[int, KafkaError], provenance: list[str]) -> str:
    w = Writer()

    def definitions(messages: tuple[MessageSpec, ...]) -> str:
        return tuple_source([w.message(m) for m in messages])

    api_lines = []
    for key, api in tables.apis.items():
        requests, responses = definitions(api.requests), definitions(api.responses)
        api_lines.append(f"    {key}: Api({key}, {q(api.name)}, {requests}, {responses}, {api.versions}),\n")

    request_header = definitions(tables.request_header)
    response_header = definitions(tables.response_header)
    data_vars = {name: definitions(messages) for name, messages in tables.data.items()}

    out = [
        f"# Generated by `{COMMAND}`.\n",
        "# Do not edit by hand: change the generator or its inputs and rerun it.\n",
        "# Inputs: Apache Kafka's message specs (clients/src/main/resources/common/message):\n",
        *[f"#   {line}\n" for line in provenance],
        "# and kdissect/schema/error_codes.tsv (org.apache.kafka.common.protocol.Errors).\n",
        "# ruff: noqa: E501\n",
        '"""Kafka protocol tables: API definitions, headers, data schemas, error names (generated)."""\n\n',
        "from enum import IntEnum\n\n",
        "from kdissect.frozen import fast_constructor\n",
        "from kdissect.schema.model import NEVER, OPEN, Api, Field, KafkaError, MessageSpec, StructSpec, Versions\n\n",
        "_field = fast_constructor(Field)\n",
        "_message = fast_constructor(MessageSpec)\n",
        '"""Frozen Fields and MessageSpecs built without their per-attribute setattr: thousands are made at each start."""\n\n',
    ]
    out += w.preamble()
    out.append("\nAPIS: dict[int, Api] = {\n")
    out.extend(api_lines)
    out.append("}\n\n")
    out.append(f"REQUEST_HEADER: tuple[MessageSpec, ...] = {request_header}\n")
    out.append(f"RESPONSE_HEADER: tuple[MessageSpec, ...] = {response_header}\n\n")
    for constant, name in DATA_SCHEMAS.items():
        out.append(f"{constant}: tuple[MessageSpec, ...] = {data_vars[name]}\n")
    out.append("\nDATA_SCHEMAS: dict[str, tuple[MessageSpec, ...]] = {\n")
    out.extend(f"    {q(name)}: {constant},\n" for constant, name in DATA_SCHEMAS.items())
    out.append("}\n\n")
    out.append("# Type -> (name, value schema in DATA_SCHEMAS), from Kafka's ControlRecordType.\n")
    out.append("CONTROL_RECORD_TYPES: dict[int, tuple[str, str]] = {\n")
    for code, (kind, schema) in CONTROL_RECORD_TYPES.items():
        out.append(f"    {code}: ({q(kind)}, {q(schema)}),\n")
    out.append("}\n\n")
    out.append("\nclass ApiKey(IntEnum):\n")
    out.append('    """Every API key of the built-in tables, by name: compare a header\'s key with these, never with a number."""\n\n')
    out.extend(f"    {constant_name(api.name)} = {key}\n" for key, api in tables.apis.items())
    out.append("\n\nclass ErrorCode(IntEnum):\n")
    out.append('    """Every error code kdissect knows, by Kafka\'s name."""\n\n')
    out.extend(f"    {e.name} = {code}\n" for code, e in error_codes.items())
    out.append("\n\nERRORS: dict[int, KafkaError] = {\n")
    out.extend(f"    {code}: KafkaError({code}, {q(e.name)}, {e.retriable}, {q(e.meaning)}),\n" for code, e in error_codes.items())
    out.append("}\n")
    out.append("ERROR_CODES: dict[int, str] = {code: error.name for code, error in ERRORS.items()}\n")
    return "".join(out)


def render_extras(tables: ExtraTables, provenance: list[str]) -> str:
    w = Writer()
    data_vars = {constant: tuple_source([w.message(m) for m in messages]) for constant, messages in tables.data.items()}
    topic_lines = []
    for name, topic in tables.topics.items():
        topic_lines.append(f"    {q(name)}: InternalTopic(\n        {q(name)},\n        {q(topic.framing)},\n        {{\n")
        for key, kind in topic.types.items():
            keys = tuple_source([w.message(m) for m in kind.key]) if kind.key else "()"
            values = tuple_source([w.message(m) for m in kind.value])
            topic_lines.append(f"            {key}: RecordType({key}, {q(kind.name)}, {keys}, {values}),\n")
        topic_lines.append("        },\n    ),\n")
    out = [
        f"# Generated by `{COMMAND}`.\n",
        "# Do not edit by hand: change the generator or its inputs and rerun it.\n",
        "# Inputs: the extras/ folder of the specs folder, Apache Kafka's other schemas of bytes that cross the wire:\n",
        *[f"#   {line}\n" for line in provenance],
        "# ruff: noqa: E501\n",
        '"""Kafka Streams\' subscription user data and the records of Kafka\'s own topics (generated; loaded when met)."""\n\n',
        "from kdissect.frozen import fast_constructor\n",
        "from kdissect.schema.model import NEVER, OPEN, Field, InternalTopic, MessageSpec, RecordType, StructSpec, Versions\n\n",
        "_field = fast_constructor(Field)\n",
        "_message = fast_constructor(MessageSpec)\n\n",
    ]
    out += w.preamble()
    out.append("\n")
    for constant, source in data_vars.items():
        out.append(f"{constant}: tuple[MessageSpec, ...] = {source}\n")
    out.append("\nINTERNAL_TOPICS: dict[str, InternalTopic] = {\n")
    out.extend(topic_lines)
    out.append("}\n")
    return "".join(out)


def generate(specs_dir: Path) -> str:
    snapshots = read_snapshots(specs_dir)
    commits = snapshot_commits(specs_dir)
    provenance = [f"{label}: {commits.get(label, 'commit unknown')}" for label, _ in SNAPSHOTS]
    provenance.append(f"sha256 of the spec files: {input_digest(specs_dir, [folder for _, folder in SNAPSHOTS])}")
    return render(build_tables(snapshots), read_error_codes(ERROR_CODES_FILE), provenance)


def generate_extras(specs_dir: Path) -> str:
    trunk = snapshot_commits(specs_dir).get("trunk", "commit unknown")
    folders = extras_folders()
    provenance = [f"trunk: {trunk}", f"folders: {', '.join(folders)}", f"sha256 of the spec files: {input_digest(specs_dir, folders)}"]
    return render_extras(build_extras(specs_dir), provenance)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.splitlines()[0])
    parser.add_argument("--specs", type=Path, default=None, help="the kafka-message-specs folder")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="where to write (generated.py)")
    parser.add_argument("--extras-output", type=Path, default=DEFAULT_EXTRAS_OUTPUT, help="where to write (generated_extras.py)")
    parser.add_argument("--kafka-source", type=Path, default=None, help="an apache/kafka checkout: check error_codes.tsv against it")
    args = parser.parse_args(argv)
    if args.kafka_source is not None:
        from kdissect.schema.errors_check import disagreements

        problems = disagreements(read_error_codes(ERROR_CODES_FILE), args.kafka_source)
        print("\n".join(problems) or f"error_codes.tsv agrees with {args.kafka_source}")
        return 1 if problems else 0
    specs_dir = args.specs or default_specs()
    if not specs_dir.is_dir():
        print(f"specs folder not found: {specs_dir} (use --specs or KDISSECT_SPECS)", file=sys.stderr)
        return 2
    args.output.write_text(generate(specs_dir), encoding="utf-8")
    args.extras_output.write_text(generate_extras(specs_dir), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
