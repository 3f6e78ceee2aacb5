"""Compiles a schema definition at one version into a plain Python decode function, once.

For each struct the compiler writes straight-line source: runs of fixed-width fields become one
`struct.unpack_from`, lengths and counts are checked before anything is sliced or allocated, and every level
catches failures to hand its partial struct upwards. The hot path then does no per-field interpretation of the
schema. `source()` shows the code, for anyone who wants to read what runs.

Every generated name says what it reads: `FetchResponse_v13` decodes that body, `FetchResponse_v13_Responses`
the struct of its Responses field, `FetchResponse_v13_Responses_Partitions_tag_0_DivergingEpoch` a tagged
field; a common struct keeps the specs' name wherever it is used (`ConsumerGroupDescribeResponse_v1_Assignment`).
`__names`, `__groups`, `__tags` and `__flat` end the names of a decoder's constants: the specs' names hold no
underscore, so no decoder of a struct field (even one named "names") can take a constant's name. Names depend only on the
definition and version, so the printed source is the same whatever was decoded before. Each function's source
is registered with `linecache` under `<kdissect decoder NAME>`, so tracebacks and debuggers show its lines.
"""

from __future__ import annotations

import linecache
import struct
import sys
from dataclasses import dataclass
from typing import Any, Callable

from kdissect.limits import DEFAULT_LIMITS
from kdissect.schema import runtime
from kdissect.schema.code_cache import compiled
from kdissect.schema.model import Field, MessageSpec
from kdissect.schema.tree import Partial, Struct
from kdissect.wire import WireError, read_uvarint

FIXED = {"bool": "?", "int8": "b", "int16": "h", "uint16": "H", "int32": "i", "uint32": "I", "int64": "q", "float64": "d"}
SIZES = {fmt: struct.calcsize(">" + fmt) for fmt in FIXED.values()}
MIN_SIZE = {"uuid": 16}


class Unpackers(dict):
    """Unpackers of `n` repetitions of one format, made the first time an array of that length is met."""

    def __init__(self, fmt: str) -> None:
        super().__init__()
        self.fmt = fmt

    def __missing__(self, n: int) -> Callable[[Any, int], tuple]:
        unpack = self[n] = struct.Struct(">" + self.fmt * n).unpack_from
        return unpack


RecordsHook = Callable[[Any, int, int], Any]
"""Given (buffer, start, end) of a records field's bytes, returns its decoded value."""
CutHook = Callable[[str, int], None]
"""Told of each array with more elements than a compiler keeps: its field name and element count."""


def _no_cut(field: str, count: int) -> None:
    """Without a listener, cut arrays are only cut."""


Decode = Callable[[Any, int], "tuple[Struct, int]"]


@dataclass(frozen=True, slots=True)
class Unit:
    """One definition at one version: what every decoder generated for it shares."""

    name: str
    """The body's decoder, e.g. "FetchResponse_v13": the names of its structs and constants start with it."""
    version: int
    flexible: bool
    common: frozenset[str]
    """The definition's common structs: each is one decoder named after it, wherever it is used."""


class Compiler:
    """Generates and caches decoders for one setting of `spans`; one compiler serves every message."""

    def __init__(
        self,
        records: RecordsHook,
        spans: bool = False,
        keep: int = sys.maxsize,
        cut: CutHook = _no_cut,
        elements: int = DEFAULT_LIMITS.max_elements_message,
    ) -> None:
        """`keep` elements of each array are built; the rest are read and dropped, and `cut(field, count)` is told.
        A body's arrays of structs hold at most `elements` elements together; past them it is read no further."""
        self.spans = spans
        self.namespace: dict[str, Any] = {
            "_keep": keep,
            "_cut": cut,
            "_elements": elements,
            "_left": [elements],
            "_over": runtime.elements_bound(elements),
            "Struct": Struct,
            "Partial": Partial,
            "WireError": WireError,
            "_ERRORS": runtime.ERRORS,
            "_fail": runtime.fail,
            "_here": runtime.partial_here,
            "_tags": runtime.read_tags,
            "_count": runtime.check_count,
            "_uv": read_uvarint,
            "_records": records,
            **{f"_unpack_{type_}s": Unpackers(fmt) for type_, fmt in FIXED.items()},
        }
        self._units: dict[tuple[int, int], str] = {}
        """(id of a definition, version) -> its body's decoder."""
        self._structs: dict[tuple[str, int], str] = {}
        """(unit name, id of a struct's fields) -> the struct's decoder."""
        self._calls: dict[str, list[str]] = {}
        """Decoder -> the functions whose source goes with its own: its tagged-field readers and the decoders it
        or they call, in order."""
        self._sources: dict[str, str] = {}

    def compile(self, definition: MessageSpec, version: int) -> Decode:
        """The decode function for a definition's body at `version`."""
        return self.namespace[self._unit(definition, version)]

    def source(self, definition: MessageSpec, version: int) -> str:
        """The generated source of a body's decoder and of every decoder it calls."""
        order: list[str] = []

        def visit(name: str) -> None:
            if name not in order:
                order.append(name)
                for callee in self._calls[name]:
                    visit(callee)

        visit(self._unit(definition, version))
        return "\n".join(self._sources[name] for name in order)

    def _unit(self, definition: MessageSpec, version: int) -> str:
        key = (id(definition), version)
        name = self._units.get(key)
        if name is None:
            common = frozenset(s.name for s in definition.common_structs)
            unit = Unit(f"{definition.name}_v{version}", version, version in definition.flexible, common)
            name = self._units[key] = self._struct(definition.fields, unit, unit.name, top=True)
        return name

    def _unpacker(self, types: list[str]) -> str:
        """The namespace name of a pre-built unpacker for a run of fixed-width types: no format-string lookup at
        run time."""
        name = "_unpack_" + "_".join(types)
        if name not in self.namespace:
            self.namespace[name] = struct.Struct(">" + "".join(FIXED[t] for t in types)).unpack_from
        return name

    def _free(self, name: str) -> str:
        """A name no generated function or constant holds yet: two different structs must never share one."""
        if name in self._calls or name in self.namespace:
            raise ValueError(f"two generated decoders or constants would both be named {name}")
        return name

    def _claim(self, name: str) -> str:
        """Reserve a function's name."""
        self._calls[self._free(name)] = []
        return name

    def _put(self, name: str, value: Any) -> str:
        """Add a decoder's constant to the namespace."""
        self.namespace[self._free(name)] = value
        return name

    def _struct(self, fields: tuple[Field, ...], unit: Unit, fn: str, top: bool = False) -> str:
        key = (unit.name, id(fields))
        cached = self._structs.get(key)
        if cached:
            return cached
        self._structs[key] = self._claim(fn)
        version, flexible = unit.version, unit.flexible
        present = [f for f in fields if version in f.versions]
        regular = [f for f in present if version not in f.tagged]
        tagged = [f for f in present if version in f.tagged]
        names = self._put(f"{fn}__names", tuple(f.name for f in regular))
        group_table: dict[int, tuple[tuple[str, int], ...]] = {}
        spans = self.spans
        body: list[str] = []
        i = 0
        while i < len(regular):
            field = regular[i]
            if field.type in FIXED and not field.array:
                j = i
                while j < len(regular) and regular[j].type in FIXED and not regular[j].array:
                    j += 1
                types = [f.type for f in regular[i:j]]
                fmts = [FIXED[t] for t in types]
                group_table[i] = tuple((fmt, SIZES[fmt]) for fmt in fmts)
                size = sum(SIZES[fmt] for fmt in fmts)
                body.append(f"vals += {self._unpacker(types)}(buf, pos)")
                if spans:
                    edges, at = [], 0
                    for fmt in fmts:
                        edges += [f"pos + {at}", f"pos + {at + SIZES[fmt]}"]
                        at += SIZES[fmt]
                    body.append(f"sp += ({', '.join(edges)})")
                body.append(f"pos += {size}")
                i = j
                continue
            if spans:
                body.append("s = pos")
            body += self._field(field, unit, fn, "v", in_struct=True)
            body.append("vals.append(v)")
            if spans:
                body.append("sp += (s, pos)")
            i += 1
        groups = self._put(f"{fn}__groups", group_table)
        if flexible:
            table = self._put(f"{fn}__tags", {f.tag: (f.name, self._single(f, unit, fn)) for f in tagged})
            body += [
                "n = buf[pos]",
                "if n < 128:",
                "    pos += 1",
                "else:",
                "    n, pos = _uv(buf, pos)",
                "if n:",
                f"    names, pos = _tags(buf, pos, n, {table}, names, vals, {'sp' if spans else 'None'})",
            ]
        sp = "sp" if spans else "None"
        lines = [
            f"def {fn}(buf, pos):",
            "    end = len(buf)",
            "    vals = []",
            f"    names = {names}",
        ]
        if top:
            lines.append("    _left[0] = _elements  # the message's budget of struct elements, at every depth")
        if spans:
            lines.append("    sp = []")
        lines.append("    try:")
        lines += ["        " + line for line in body] or ["        pass"]
        lines += [
            "    except Partial as p:",
            f"        raise _here(p, names, vals, {sp})",
            "    except _ERRORS as e:",
            f"        raise _fail(names, {groups}, vals, {sp}, buf, pos, e) from None",
            f"    return Struct(names, vals, {sp}), pos",
        ]
        self._define(fn, "\n".join(lines) + "\n")
        return fn

    def _single(self, field: Field, unit: Unit, parent: str) -> Callable[[Any, int], tuple[Any, int]]:
        """A function reading one field's value: how a known tagged field of `parent` is decoded."""
        fn = self._claim(f"{parent}_tag_{field.tag}_{field.name}")
        self._calls[parent].append(fn)
        if field.type in FIXED and not field.array:
            body = [f"v = {self._unpacker([field.type])}(buf, pos)[0]", f"pos += {SIZES[FIXED[field.type]]}"]
        else:
            body = self._field(field, unit, parent, "v", in_struct=False)
        lines = [f"def {fn}(buf, pos):", "    end = len(buf)"] + ["    " + line for line in body] + ["    return v, pos"]
        self._define(fn, "\n".join(lines) + "\n")
        return self.namespace[fn]

    def _define(self, fn: str, source: str) -> None:
        """Run a function's source into the namespace, and show it to tracebacks and debuggers."""
        self._sources[fn] = source
        filename = f"<kdissect decoder {fn}{' with spans' if self.spans else ''}>"
        linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
        exec(compiled(source, filename), self.namespace)

    def _sub(self, field: Field, unit: Unit, parent: str) -> str:
        """The decoder of a struct field of `parent`: a common struct is named after itself, any other after
        its path."""
        name = f"{unit.name}_{field.type}" if field.type in unit.common else f"{parent}_{field.name}"
        sub = self._struct(field.fields, unit, name)
        self._calls[parent].append(sub)
        return sub

    def _field(self, field: Field, unit: Unit, parent: str, out: str, in_struct: bool) -> list[str]:
        """Statements that read one non-fixed field (or any array) of `parent` into `out`, advancing `pos`.

        Inside a struct's decoder a failing child leaves its partial value in `vals` and names itself in the
        path; a tagged field's reader (`in_struct` false) leaves both to `read_tags`.
        """
        version = unit.version
        compact = unit.flexible if field.flexible is None else version in field.flexible
        if field.array:
            return self._array(field, unit, parent, compact, out, in_struct)
        if field.is_struct:
            sub = self._sub(field, unit, parent)
            call = [f"{out}, pos = {sub}(buf, pos)"]
            if in_struct:
                call = [
                    "try:",
                    "    " + call[0],
                    "except Partial as p:",
                    "    vals.append(p.value)",
                    *(["    sp += (s, p.offset)"] if self.spans else []),
                    f"    p.path.insert(0, {field.name!r})",
                    "    raise",
                ]
            if version in field.nullable:
                return ["if buf[pos] >= 128:", "    pos += 1", f"    {out} = None", "else:", "    pos += 1"] + [
                    "    " + line for line in call
                ]
            return call
        return self._value(field.type, compact, out, field.name)

    def _value(self, type_: str, compact: bool, out: str, name: str) -> list[str]:
        """Statements reading one primitive value of a non-grouped type."""
        if type_ in FIXED:
            return [f"{out} = {self._unpacker([type_])}(buf, pos)[0]", f"pos += {SIZES[FIXED[type_]]}"]
        if type_ == "uuid":
            return [
                "e = pos + 16",
                "if e > end:",
                "    raise WireError('the data ends inside a uuid')",
                "h = buf[pos:e].hex()",
                f"{out} = f'{{h[:8]}}-{{h[8:12]}}-{{h[12:16]}}-{{h[16:20]}}-{{h[20:]}}'",
                "pos = e",
            ]
        lines = self._length(compact, 2 if type_ == "string" else 4, name)
        lines += ["if n < 0:", f"    {out} = None", "else:", "    e = pos + n"]
        lines += ["    if e > end:", f"        raise WireError('{name} claims ' + str(n) + ' bytes past the end of the data')"]
        if type_ == "string":
            lines += [
                "    try:",
                f"        {out} = str(buf[pos:e], 'utf-8')",
                "    except UnicodeDecodeError:",
                f"        {out} = bytes(buf[pos:e])",
            ]
        elif type_ == "records":
            lines.append(f"    {out} = _records(buf, pos, e)")
        else:
            lines.append(f"    {out} = bytes(buf[pos:e])")
        lines.append("    pos = e")
        return lines

    def _length(self, compact: bool, width: int, name: str) -> list[str]:
        """Read a length or count into `n`, -1 meaning null, refusing other negatives."""
        if compact:
            return ["n = buf[pos]", "if n < 128:", "    pos += 1", "else:", "    n, pos = _uv(buf, pos)", "n -= 1"]
        return [
            f"n = {self._unpacker(['int16' if width == 2 else 'int32'])}(buf, pos)[0]",
            f"pos += {width}",
            "if n < -1:",
            f"    raise WireError('{name} has a negative length ' + str(n))",
        ]

    def _array(self, field: Field, unit: Unit, parent: str, compact: bool, out: str, in_struct: bool) -> list[str]:
        element = field.type
        lines = self._length(compact, 4, field.name)
        lines += ["if n < 0:", f"    {out} = None", "else:"]
        min_size = self._min_size(field, unit, compact)
        if min_size:
            inner: list[str] = [
                f"if n * {min_size} > end - pos:",
                f"    _count(n, end - pos, {min_size}, {field.name!r})",
            ]
        else:
            inner = [f"_count(n, end - pos, 0, {field.name!r})"]
        if element in FIXED:
            inner += [
                f"{out} = list(_unpack_{element}s[n if n <= _keep else _keep](buf, pos))",
                f"pos += n * {SIZES[FIXED[element]]}",
            ]
        elif field.is_struct:
            sub = self._sub(field, unit, parent)
            inner += ["_left[0] -= n", "if _left[0] < 0:", f"    _over({field.name!r}, n)"]
            loop = [
                f"{out} = []",
                "try:",
                "    for _ in range(n if n <= _keep else _keep):",
                f"        x, pos = {sub}(buf, pos)",
                f"        {out}.append(x)",
                "    for _ in range(n - _keep):",
                f"        x, pos = {sub}(buf, pos)",
                "except Partial as p:",
                f"    {out}.append(p.value)",
                f"    p.path.insert(0, '[' + str(len({out}) - 1) + ']')",
            ]
            if in_struct:
                loop += [f"    vals.append({out})", *(["    sp += (s, p.offset)"] if self.spans else [])]
                loop.append(f"    p.path.insert(0, {field.name!r})")
            else:
                loop.append(f"    p.value = {out}")
            loop.append("    raise")
            inner += self._flat_structs(field, unit, sub, out, loop)
        else:
            value = ["    " + line for line in self._value(element, compact, "x", field.name)]
            inner += [f"{out} = []", "for _ in range(n if n <= _keep else _keep):", *value, f"    {out}.append(x)"]
            inner += ["for _ in range(n - _keep):", *value]
        inner += ["if n > _keep:", f"    _cut({field.name!r}, n)"]
        return lines + ["    " + line for line in inner]

    def _flat_structs(self, field: Field, unit: Unit, sub: str, out: str, loop: list[str]) -> list[str]:
        """Arrays of structs made only of fixed-width fields (ApiVersions' keys, most partition lists of
        responses) are read in one unpack when no element carries tagged fields; otherwise, and for the
        span-recording variant, element by element."""
        version, flexible = unit.version, unit.flexible
        present = [f for f in field.fields if version in f.versions]
        if self.spans or not present or any(f.array or f.type not in FIXED or version in f.tagged for f in present):
            return loop
        fmts = "".join(FIXED[f.type] for f in present)
        head = struct.calcsize(">" + fmts)
        stride = head + (1 if flexible else 0)
        table = f"{sub}__flat"
        if table not in self.namespace:
            self._put(table, Unpackers(fmts + ("x" if flexible else "")))
        k = len(present)
        untagged = f"not any(buf[pos + {head} : pos + n * {stride} : {stride}])" if flexible else "True"
        return [
            f"if {untagged}:",
            f"    flat = {table}[n if n <= _keep else _keep](buf, pos)",
            f"    {out} = [Struct({sub}__names, list(flat[i : i + {k}]), None) for i in range(0, min(n, _keep) * {k}, {k})]",
            f"    pos += n * {stride}",
            "else:",
        ] + ["    " + line for line in loop]

    def _min_size(self, field: Field, unit: Unit, compact: bool) -> int:
        """The fewest bytes one element can take: the bound that makes a lying count harmless."""
        element = field.type
        if element in FIXED:
            return SIZES[FIXED[element]]
        if element in MIN_SIZE:
            return MIN_SIZE[element]
        if element in ("string", "bytes", "records"):
            return 1 if compact else (2 if element == "string" else 4)
        return self._struct_min_size(field.fields, unit)

    def _struct_min_size(self, fields: tuple[Field, ...], unit: Unit) -> int:
        version, flexible = unit.version, unit.flexible
        total = 1 if flexible else 0
        for f in fields:
            if version not in f.versions or version in f.tagged:
                continue
            compact = flexible if f.flexible is None else version in f.flexible
            if f.array:
                total += 1 if compact else 4
            elif f.is_struct:
                total += 1 if version in f.nullable else self._struct_min_size(f.fields, unit)
            else:
                total += self._min_size(f, unit, compact)
        return total
