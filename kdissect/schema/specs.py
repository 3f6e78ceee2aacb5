"""Kafka's message-spec format, read into the model (`MessageSpec`, `Field`, ...): the one reader of it.

The generator builds the built-in tables with it; the run-time loader (user_specs.py) reads users' files with it.
The files are JSON with `//` comments. Every JSON object read keeps where it and each of its values start, and
the builder checks what Kafka's own generator checks (names, types, version ranges, structs, tags), so every
problem names its file, line and field. A file with problems still builds as far as it can, so that one pass
finds them all.
"""

from __future__ import annotations

import bisect
import json
import json.decoder
import json.scanner
import re
from dataclasses import dataclass
from typing import Any, Callable

from kdissect.schema.model import NEVER, OPEN, PRIMITIVES, Field, Kind, MessageSpec, StructSpec, Versions
from kdissect.schema.secrets import mark_secrets

NAME = re.compile(r"[A-Za-z][A-Za-z0-9]*\Z")
"""Names of messages, fields and structs, as Kafka's generator allows them; the compiler makes Python names of them."""
KINDS = frozenset({"request", "response", "header", "data", "metadata", "coordinator-key", "coordinator-value"})
MESSAGE_KEYS = frozenset(
    {
        "apiKey",
        "type",
        "name",
        "validVersions",
        "deprecatedVersions",
        "flexibleVersions",
        "fields",
        "commonStructs",
        "listeners",
        "latestVersionUnstable",
        "about",
    }
)
FIELD_KEYS = frozenset(
    {
        "name",
        "type",
        "versions",
        "about",
        "fields",
        "default",
        "entityType",
        "ignorable",
        "nullableVersions",
        "mapKey",
        "taggedVersions",
        "tag",
        "zeroCopy",
        "flexibleVersions",
    }
)
STRUCT_KEYS = frozenset({"name", "versions", "fields", "about"})
NULLABLE = frozenset({"string", "bytes", "records"})
"""Primitive types that can be null; arrays and structs can be too."""
MAX_DIGITS = 40
"""The most digits a number of a spec may have: its numbers are keys, tags and defaults of at most 64 bits, and
reading a number costs time quadratic in its digits."""
MAX_NESTING = 32
"""The deepest structs may nest in a spec (Kafka's nest 6 deep): the builder, the compiler and the views walk them
by recursion."""
_QUOTE_OR_COMMENT = re.compile(r'"|//|/\*')


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with a spec file, located: `kdissect schema --check` prints one per line."""

    file: str
    line: int | None
    where: str
    """The field's path (Topics.Partitions.Replicas) or the key (validVersions) at fault; empty for the whole file."""
    message: str

    def __str__(self) -> str:
        place = self.file if self.line is None else f"{self.file}:{self.line}"
        return f"{place}: {self.where}: {self.message}" if self.where else f"{place}: {self.message}"


class SpecError(ValueError):
    """A file that cannot be read as a spec at all (not JSON, not an object)."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(str(problem))
        self.problem = problem


class Node(dict):
    """A JSON object, with where it starts, where each of its values starts (offsets in the text), and the keys it
    repeats with another value."""

    __slots__ = ("at", "values_at", "repeated")
    at: int
    values_at: dict[str, int]
    repeated: list[tuple[str, int]]


class _LongNumber(ValueError):
    """A number with more than `MAX_DIGITS` digits, met while the JSON was read."""


def strip_comments(text: str) -> str:
    """Drop `//` and `/* */` comments outside strings (Kafka reads its specs with Jackson's ALLOW_COMMENTS, which
    takes both); line breaks stay, so offsets keep their lines. Strings are skipped by the JSON decoder's own string
    scanner: time and memory linear in the text however long a string is."""
    parts = []
    at = 0
    while (found := _QUOTE_OR_COMMENT.search(text, at)) is not None:
        start = found.start()
        if found.group() == '"':
            try:
                end = json.decoder.scanstring(text, start + 1, False)[1]  # type: ignore[attr-defined]  # not in the stubs
            except json.JSONDecodeError:  # an unclosed string or a bad escape: the decoder will say where
                break
            parts.append(text[at:end])
            at = end
        elif found.group() == "//":
            parts.append(text[at:start])
            newline = text.find("\n", start)
            at = len(text) if newline < 0 else newline
        else:
            close = text.find("*/", start + 2)
            if close < 0:  # an unclosed comment: the decoder will say where
                break
            parts.append(text[at:start] + "\n" * text.count("\n", start, close))
            at = close + 2
    parts.append(text[at:])
    return "".join(parts)


def _number(text: str) -> int | float:
    """A JSON number of a spec, refused past `MAX_DIGITS` digits."""
    if len(text) > MAX_DIGITS:
        raise _LongNumber(text)
    return float(text) if any(c in text for c in ".eE") else int(text)


def _pairs(pairs: list) -> list:
    return pairs


class _Reader(json.JSONDecoder):
    """The standard decoder, its objects read through `_object` to note offsets (the pure-Python scanner calls it)."""

    def __init__(self) -> None:
        super().__init__(parse_int=_number, parse_float=_number)
        self.parse_object = self._object
        self.scan_once = json.scanner.py_make_scanner(self)  # type: ignore[attr-defined]  # json has it, typeshed does not

    @staticmethod
    def _object(  # json's own signature
        s_and_end: tuple[str, int],
        strict: bool,
        scan_once: Callable[[str, int], tuple[Any, int]],
        object_hook: object,
        object_pairs_hook: object,
        memo: dict[str, str],
    ) -> tuple[Node, int]:
        starts: list[int] = []

        def scan(text: str, at: int) -> Any:
            starts.append(at)  # one call per member value of this object: nested objects use their own scanner
            return scan_once(text, at)

        pairs, end = json.decoder.JSONObject(s_and_end, strict, scan, None, _pairs, memo)  # type: ignore[attr-defined]  # json has it, typeshed does not
        node = Node(pairs)
        node.at = s_and_end[1] - 1
        node.values_at = {}
        node.repeated = []
        first: dict[str, Any] = {}
        for (key, value), at in zip(pairs, starts):
            if key not in first:
                first[key] = value
                node.values_at[key] = at
            elif value != first[key]:  # Kafka's reader takes the last; its own specs repeat some keys alike
                node.repeated.append((key, at))
        return node, end


class Document:
    """One spec file, read: its root object and the way from an offset to a line."""

    def __init__(self, name: str, text: str) -> None:
        self.name = name
        self._text = strip_comments(text)
        self._breaks: list[int] | None = None
        try:
            root = _Reader().decode(self._text)
        except json.JSONDecodeError as exc:
            raise SpecError(Problem(name, exc.lineno, "", f"not JSON: {exc.msg}")) from None
        except RecursionError:
            raise SpecError(Problem(name, None, "", "nested too deeply to read")) from None
        except _LongNumber as exc:
            line = self.line_at(max(0, self._text.find(str(exc))))
            raise SpecError(
                Problem(name, line, "", f"a number of {len(str(exc))} characters: a spec's numbers have at most {MAX_DIGITS}")
            ) from None
        if not isinstance(root, Node):
            raise SpecError(Problem(name, 1, "", "a spec is one JSON object"))
        self.root: Node = root

    def line(self, node: Node, key: str | None = None) -> int:
        """The line of `node`, or of its value for `key` when it has one."""
        at = node.values_at.get(key, node.at) if key is not None else node.at
        return self.line_at(at)

    def line_at(self, at: int) -> int:
        if self._breaks is None:
            self._breaks = [found.start() for found in re.finditer("\n", self._text)]
        return bisect.bisect_left(self._breaks, at) + 1


def spec_default(value: object) -> str:
    """The specs write defaults as strings, numbers or JSON booleans; keep the string form."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def is_struct_name(name: str) -> bool:
    """Kafka's rule: a type that is no primitive and starts with a capital letter names a struct."""
    return bool(NAME.match(name)) and name[0].isupper()


class MessageBuilder:
    """Turns one spec file into a MessageSpec, resolving struct names to shared tuples, noting every problem.

    A struct is used by name in two ways: a common struct (`commonStructs`), anywhere in the file, and a struct
    defined inline by an earlier field (one with `fields`), which later fields may name again. Either way all
    its uses share one tuple of fields.
    """

    def __init__(self, document: Document, source: str) -> None:
        self.doc = document
        self.spec = document.root
        self.source = source
        self.problems: list[Problem] = []
        self.common: dict[str, Node] = {}
        self.inline: dict[str, Node] = {}
        """Struct name -> the field that defines it inline (its first definition)."""
        self.built: dict[str, tuple[Field, ...]] = {}
        """Common structs built, in dependency order."""
        self.inline_built: dict[int, tuple[Field, ...]] = {}
        self.building: set[str | int] = set()
        """Common structs (by name) and inline ones (by id of their field) being built: a struct met again inside
        itself would never end."""
        self.flexible = NEVER
        self.depth = 0
        """Structs open around the fields being built."""

    # ------------------------------------------------------------------------------------------ reporting

    def problem(self, node: Node, where: str, message: str, key: str | None = None) -> None:
        self.problems.append(Problem(self.doc.name, self.doc.line(node, key), where, message))

    def check_keys(self, node: Node, known: frozenset[str], where: str) -> None:
        for key in node:
            if key not in known:
                self.problem(node, where, f'unknown key "{key}"', key)
        for key, at in node.repeated:
            message = f'the key "{key}" is given twice, with different values'
            self.problems.append(Problem(self.doc.name, self.doc.line_at(at), where, message))

    def name(self, node: Node, where: str, what: str) -> str | None:
        value = node.get("name")
        if not isinstance(value, str):
            self.problem(node, where, f"{what} needs a name" if value is None else f"{what}'s name must be a string", "name")
            return None
        if not NAME.match(value):
            self.problem(node, where or value, f'"{value}" is not a valid name (a letter, then letters and digits)', "name")
            return None
        return value

    def versions(self, node: Node, key: str, where: str, required: bool = False) -> Versions:
        """A version range from the specs' notation ("none", "3", "3+", "3-7"); NEVER, noted, if it is wrong."""
        text = node.get(key)
        if text is None:
            if required:
                self.problem(node, where, f"{key} is missing")
            return NEVER
        if not isinstance(text, str):
            self.problem(node, where, f'{key} must be a string such as "0+"', key)
            return NEVER
        try:
            value = Versions.parse(text)
        except ValueError:
            self.problem(node, where, f'{key} "{text}" is not a version range ("none", "3", "3+" or "3-7")', key)
            return NEVER
        if text.strip() != "none" and not value:
            self.problem(node, where, f'{key} "{text}" is not a version range: {value.lo} is above {value.hi}', key)
            return NEVER
        if max(value.lo, value.hi) > OPEN:
            self.problem(node, where, f'{key} "{text}" goes past {OPEN}, the highest version', key)
            return NEVER
        return value

    def nodes(self, node: Node, key: str, where: str) -> list[Node]:
        """The objects of a list member (fields, commonStructs); the rest noted and skipped."""
        items = node.get(key, [])
        if not isinstance(items, list):
            self.problem(node, where, f"{key} must be a list", key)
            return []
        out = []
        for item in items:
            if isinstance(item, Node):
                out.append(item)
            else:
                self.problem(node, where, f"every entry of {key} must be a JSON object", key)
        return out

    # ------------------------------------------------------------------------------------------ building

    def build(self, kind: Kind) -> MessageSpec:
        spec = self.spec
        self.check_keys(spec, MESSAGE_KEYS, "")
        name = self.name(spec, "", "a spec") or "Unnamed"
        if not isinstance(spec.get("type"), str) or spec["type"] not in KINDS:
            self.problem(spec, "type", f"type {json.dumps(spec.get('type'))} is not one of {', '.join(sorted(KINDS))}", "type")
        valid = self.versions(spec, "validVersions", "validVersions", required=True)
        self.flexible = flexible = self.versions(spec, "flexibleVersions", "flexibleVersions")
        if flexible and flexible.hi != OPEN:
            self.problem(spec, "flexibleVersions", f'flexibleVersions "{flexible}" must be "none" or open-ended ("N+")', "flexibleVersions")
        for struct in self.nodes(spec, "commonStructs", "commonStructs"):
            self.check_keys(struct, STRUCT_KEYS, "commonStructs")
            struct_name = self.name(struct, "commonStructs", "a common struct")
            if struct_name is None:
                continue
            if struct_name in self.common:
                first = self.doc.line(self.common[struct_name])
                self.problem(struct, struct_name, f"common struct {struct_name} is defined twice (first at line {first})")
            else:
                self.common[struct_name] = struct
        self.find_inline(spec.get("fields"))
        for struct in self.common.values():
            self.find_inline(struct.get("fields"))
        fields = self.fields(self.nodes(spec, "fields", ""), "")
        for struct_name in self.common:  # also the ones no field uses: they are facts of the message
            self.struct_fields(struct_name)
        structs = tuple(
            StructSpec(struct_name, self.versions(self.common[struct_name], "versions", struct_name, required=True), struct_fields)
            for struct_name, struct_fields in self.built.items()
        )
        key = spec.get("apiKey")
        if isinstance(key, int) and not isinstance(key, bool) and not 0 <= key <= OPEN:
            self.problem(spec, "apiKey", f"apiKey {key} is not between 0 and {OPEN}", "apiKey")
        return MessageSpec(
            name=name,
            kind=kind,
            api_key=key if isinstance(key, int) and not isinstance(key, bool) and 0 <= key <= OPEN else None,
            valid=valid,
            flexible=flexible,
            fields=fields,
            common_structs=structs,
            source=self.source,
            latest_unstable=spec.get("latestVersionUnstable") is True,
        )

    def find_inline(self, fields: Any) -> None:
        """Note every struct defined inline, so that a use before its definition can be named as such (what is
        not a list of objects here is named when the fields are built)."""
        for node in fields if isinstance(fields, list) else ():
            type_name = node.get("type") if isinstance(node, Node) else None
            if isinstance(type_name, str) and isinstance(node.get("fields"), list):
                element = type_name.removeprefix("[]")
                if is_struct_name(element) and element not in self.common and element not in self.inline:
                    self.inline[element] = node
                self.find_inline(node["fields"])

    def struct_fields(self, name: str) -> tuple[Field, ...]:
        """Build a common struct once; `built` keeps dependency order for the output."""
        if name not in self.built:
            node = self.common[name]
            if name in self.building:
                self.problem(node, name, f"common struct {name} contains itself")
                return ()
            self.building.add(name)
            fields = self.fields(self.nodes(node, "fields", name), name)
            self.building.discard(name)
            self.built[name] = fields
        return self.built[name]

    def inline_fields(self, definition: Node, path: str) -> tuple[Field, ...]:
        """The fields of a struct defined inline, built once for its definition and every later use."""
        built = self.inline_built.get(id(definition))
        if built is None:
            if id(definition) in self.building:
                self.problem(definition, path, f"struct {definition['type'].removeprefix('[]')} contains itself")
                return ()
            self.building.add(id(definition))
            built = self.inline_built[id(definition)] = self.fields(self.nodes(definition, "fields", path), path)
            self.building.discard(id(definition))
        return built

    def fields(self, nodes: list[Node], parent: str) -> tuple[Field, ...]:
        if self.depth > MAX_NESTING:
            if nodes:
                self.problem(nodes[0], parent, f"structs nest more than {MAX_NESTING} deep")
            return ()
        self.depth += 1
        try:
            return self._fields(nodes, parent)
        finally:
            self.depth -= 1

    def _fields(self, nodes: list[Node], parent: str) -> tuple[Field, ...]:
        out = []
        names: dict[str, Node] = {}
        tags: dict[int, Node] = {}
        for node in nodes:
            field = self.field(node, parent)
            if field is None:
                continue
            where = f"{parent}.{field.name}" if parent else field.name
            if not parent and field.name in self.common and field.type != field.name and field.is_struct:
                message = f"{field.name} is a common struct's name: a field of type {field.type} cannot take it at the top level"
                self.problem(node, where, f"{message} (kdissect names both decoders after it)", "name")
            if field.name in names:
                first = self.doc.line(names[field.name])
                self.problem(node, where, f"{parent or 'the message'} has two fields named {field.name} (the first at line {first})")
            names.setdefault(field.name, node)
            if field.tag is not None:
                if field.tag in tags:
                    other = tags[field.tag]
                    line = self.doc.line(other)
                    self.problem(node, where, f"tag {field.tag} is also the tag of {other.get('name')} (line {line})", "tag")
                tags.setdefault(field.tag, node)
            out.append(field)
        return mark_secrets(tuple(out))

    def field(self, node: Node, parent: str) -> Field | None:
        name = self.name(node, parent, "a field")
        if name is None:
            return None
        where = f"{parent}.{name}" if parent else name
        self.check_keys(node, FIELD_KEYS, where)
        type_name = node.get("type")
        if not isinstance(type_name, str):
            self.problem(node, where, "the field needs a type" if type_name is None else "type must be a string", "type")
            return None
        array = type_name.startswith("[]")
        element = type_name[2:] if array else type_name
        nested = self.nested(node, element, where)
        tagged = self.versions(node, "taggedVersions", where)
        # Kafka's generator (FieldSpec) takes taggedVersions for a tagged field that does not give its versions
        versions = tagged if tagged and "versions" not in node else self.versions(node, "versions", where, required=True)
        nullable = self.versions(node, "nullableVersions", where)
        if nullable and not (array or element in NULLABLE or is_struct_name(element)):
            self.problem(node, where, f"a field of type {element} cannot be nullable", "nullableVersions")
        tag = node.get("tag")
        if isinstance(tag, str) and tag.isdigit():  # Kafka's reader takes "0" for 0, and some specs say so
            tag = int(tag)
        if tag is not None and (not isinstance(tag, int) or isinstance(tag, bool) or tag < 0):
            self.problem(node, where, f"tag {json.dumps(tag)} is not a non-negative number", "tag")
            tag = None
        if tagged and tag is None and "tag" not in node:
            self.problem(node, where, f'a tagged field needs a tag: taggedVersions is "{tagged}" but no tag is given', "taggedVersions")
        if tag is not None and not tagged:
            self.problem(node, where, f"tag {tag} is given but taggedVersions is not", "tag")
        if tagged:
            if tagged.hi != OPEN:
                self.problem(node, where, f'taggedVersions "{tagged}" must be open-ended ("N+")', "taggedVersions")
            if not self.flexible or tagged.lo < self.flexible.lo:
                flexible = f"flexible from v{self.flexible.lo}" if self.flexible else "never flexible"
                message = f'taggedVersions "{tagged}": tagged fields need flexible versions, and the message is {flexible}'
                self.problem(node, where, message, "taggedVersions")
            if versions and not (versions.lo <= tagged.lo and tagged.hi <= versions.hi):
                self.problem(node, where, f'taggedVersions "{tagged}" reach past versions "{versions}"', "taggedVersions")
        entity = node.get("entityType")
        if entity is not None and not isinstance(entity, str):
            self.problem(node, where, "entityType must be a string", "entityType")
            entity = None
        return Field(
            name=name,
            type=element,
            versions=versions,
            array=array,
            nullable=nullable,
            tagged=tagged,
            tag=tag,
            flexible=self.versions(node, "flexibleVersions", where) if "flexibleVersions" in node else None,
            default=spec_default(node["default"]) if "default" in node else None,
            map_key=node.get("mapKey") is True,
            entity=entity,
            ignorable=node.get("ignorable") is True,
            fields=nested,
        )

    def nested(self, node: Node, element: str, where: str) -> tuple[Field, ...]:
        """The fields of a struct-typed field, by whichever way it gives them; () for a primitive."""
        if element in PRIMITIVES:
            if "fields" in node:
                self.problem(node, where, f"a field of type {element} cannot have fields", "fields")
            return ()
        if not is_struct_name(element):
            self.problem(node, where, f'unknown type "{element}": neither a primitive nor a struct name (capitalised)', "type")
            return ()
        if "fields" in node:
            if element in self.common:
                self.problem(node, where, f"struct {element} is a common struct: give its fields in commonStructs only", "fields")
            definition = self.inline.get(element)
            if definition is not None and definition is not node:
                line = self.doc.line(definition)
                self.problem(node, where, f"struct {element} is defined twice (first at line {line}); to reuse it, name it without fields")
            return self.inline_fields(node, where)
        if element in self.common:
            return self.struct_fields(element)
        definition = self.inline.get(element)
        if definition is None:
            self.problem(node, where, f'unknown type "{element}": no common struct or field defines a struct of that name', "type")
            return ()
        if definition.at > node.at:
            self.problem(node, where, f"struct {element} is used before it is defined (at line {self.doc.line(definition)})", "type")
            return ()
        return self.inline_fields(definition, where)
