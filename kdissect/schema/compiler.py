"""Compiles a schema definition at one version into a plain Python decode function, once.

For each struct the compiler writes straight-line source: runs of fixed-width fields become one
`struct.unpack_from`, lengths and counts are checked before anything is sliced or allocated, and every level
catches failures to hand its partial struct upwards. The hot path then does no per-field interpretation of the
schema. `source()` shows the code, for anyone who wants to read what runs.
"""

from __future__ import annotations

import struct
from typing import Any, Callable

from kdissect.schema import runtime
from kdissect.schema.model import Field
from kdissect.schema.tree import Partial, Struct
from kdissect.wire import WireError, read_uvarint

FIXED = {"bool": "?", "int8": "b", "int16": "h", "uint16": "H", "int32": "i", "int64": "q", "float64": "d"}
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

Decode = Callable[[Any, int], "tuple[Struct, int]"]


class Compiler:
    """Generates and caches decoders for one setting of `spans`; one compiler serves every message."""

    def __init__(self, records: RecordsHook, spans: bool = False) -> None:
        self.spans = spans
        self.namespace: dict[str, Any] = {
            "Struct": Struct,
            "Partial": Partial,
            "WireError": WireError,
            "_ERRORS": runtime.ERRORS,
            "_fail": runtime.fail,
            "_here": runtime.partial_here,
            "_tags": runtime.read_tags,
            "_count": runtime.check_count,
            "_uv": read_uvarint,
            "_unpack": struct.unpack_from,
            "_Ih": struct.Struct(">h").unpack_from,
            "_Ii": struct.Struct(">i").unpack_from,
            "_records": records,
            **{f"_A{fmt}": Unpackers(fmt) for fmt in FIXED.values()},
        }
        self._unpackers: dict[str, str] = {}
        self._struct_names: dict[str, str] = {}
        """Struct decoder name -> the namespace name of its field names."""
        self._cache: dict[tuple[int, int, bool], str] = {}
        self._sources: dict[str, str] = {}
        self._counter = 0

    def compile(self, fields: tuple[Field, ...], version: int, flexible: bool) -> Decode:
        """The decode function for a struct (or a whole message body) at `version`."""
        return self.namespace[self._struct(fields, version, flexible)]

    def source(self, fields: tuple[Field, ...], version: int, flexible: bool) -> str:
        """The generated source of a struct's decoder and of every decoder it calls."""
        root = self._struct(fields, version, flexible)
        seen, order = set(), []

        def visit(name: str) -> None:
            if name in seen:
                return
            seen.add(name)
            order.append(name)
            for other in self._sources:
                if other != name and f"{other}(" in self._sources[name]:
                    visit(other)

        visit(root)
        return "\n".join(self._sources[name] for name in order)

    def _unpacker(self, fmt: str) -> str:
        """The namespace name of a pre-built unpacker for `fmt`: no format-string lookup at run time."""
        name = self._unpackers.get(fmt)
        if name is None:
            name = self._unpackers[fmt] = self._name("_U")
            self.namespace[name] = struct.Struct(">" + fmt).unpack_from
        return name

    def _name(self, prefix: str) -> str:
        self._counter += 1
        return f"{prefix}{self._counter}"

    def _struct(self, fields: tuple[Field, ...], version: int, flexible: bool) -> str:
        key = (id(fields), version, flexible)
        cached = self._cache.get(key)
        if cached:
            return cached
        fn = self._name("_s")
        self._cache[key] = fn
        present = [f for f in fields if version in f.versions]
        regular = [f for f in present if version not in f.tagged]
        tagged = [f for f in present if version in f.tagged]
        names, groups = self._name("_N"), self._name("_G")
        self.namespace[names] = tuple(f.name for f in regular)
        self._struct_names[fn] = names
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
                fmts = [FIXED[f.type] for f in regular[i:j]]
                group_table[i] = tuple((fmt, SIZES[fmt]) for fmt in fmts)
                size = sum(SIZES[fmt] for fmt in fmts)
                body.append(f"vals += {self._unpacker(''.join(fmts))}(buf, pos)")
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
            body += self._field(field, version, flexible, "v", in_struct=True)
            body.append("vals.append(v)")
            if spans:
                body.append("sp += (s, pos)")
            i += 1
        self.namespace[groups] = group_table
        if flexible:
            table = self._name("_T")
            self.namespace[table] = {f.tag: (f.name, self._single(f, version, flexible)) for f in tagged}
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

    def _single(self, field: Field, version: int, flexible: bool) -> Callable[[Any, int], tuple[Any, int]]:
        """A function reading one field's value: how a known tagged field is decoded."""
        fn = self._name("_f")
        if field.type in FIXED and not field.array:
            fmt = FIXED[field.type]
            body = [f"v = {self._unpacker(fmt)}(buf, pos)[0]", f"pos += {SIZES[fmt]}"]
        else:
            body = self._field(field, version, flexible, "v", in_struct=False)
        lines = [f"def {fn}(buf, pos):", "    end = len(buf)"] + ["    " + line for line in body] + ["    return v, pos"]
        self._define(fn, "\n".join(lines) + "\n")
        return self.namespace[fn]

    def _define(self, fn: str, source: str) -> None:
        self._sources[fn] = source
        exec(compile(source, f"<kdissect decoder {fn}>", "exec"), self.namespace)

    def _field(self, field: Field, version: int, flexible: bool, out: str, in_struct: bool) -> list[str]:
        """Statements that read one non-fixed field (or any array) into `out`, advancing `pos`.

        Inside a struct's decoder a failing child leaves its partial value in `vals` and names itself in the
        path; a tagged field's reader (`in_struct` false) leaves both to `read_tags`.
        """
        compact = flexible if field.flexible is None else version in field.flexible
        if field.array:
            return self._array(field, version, flexible, compact, out, in_struct)
        if field.is_struct:
            sub = self._struct(field.fields, version, flexible)
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
            fmt = FIXED[type_]
            return [f"{out} = {self._unpacker(fmt)}(buf, pos)[0]", f"pos += {SIZES[fmt]}"]
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

    @staticmethod
    def _length(compact: bool, width: int, name: str) -> list[str]:
        """Read a length or count into `n`, -1 meaning null, refusing other negatives."""
        if compact:
            return ["n = buf[pos]", "if n < 128:", "    pos += 1", "else:", "    n, pos = _uv(buf, pos)", "n -= 1"]
        fmt = "h" if width == 2 else "i"
        return [
            f"n = _I{fmt}(buf, pos)[0]",
            f"pos += {width}",
            "if n < -1:",
            f"    raise WireError('{name} has a negative length ' + str(n))",
        ]

    def _array(self, field: Field, version: int, flexible: bool, compact: bool, out: str, in_struct: bool) -> list[str]:
        element = field.type
        lines = self._length(compact, 4, field.name)
        lines += ["if n < 0:", f"    {out} = None", "else:"]
        min_size = self._min_size(field, version, flexible, compact)
        if min_size:
            inner: list[str] = [
                f"if n * {min_size} > end - pos:",
                f"    _count(n, end - pos, {min_size}, {field.name!r})",
            ]
        else:
            inner = [f"_count(n, end - pos, 0, {field.name!r})"]
        if element in FIXED:
            fmt = FIXED[element]
            inner += [
                f"{out} = list(_A{fmt}[n](buf, pos))",
                f"pos += n * {SIZES[fmt]}",
            ]
        elif field.is_struct:
            sub = self._struct(field.fields, version, flexible)
            loop = [
                f"{out} = []",
                "try:",
                "    for _ in range(n):",
                f"        x, pos = {sub}(buf, pos)",
                f"        {out}.append(x)",
                "except Partial as p:",
                f"    {out}.append(p.value)",
                f"    p.path.insert(0, '[' + str(len({out}) - 1) + ']')",
            ]
            if in_struct:
                loop += [f"    vals.append({out})", *(["    sp += (s, p.offset)"] if self.spans else []), f"    p.path.insert(0, {field.name!r})"]
            else:
                loop.append(f"    p.value = {out}")
            loop.append("    raise")
            inner += self._flat_structs(field, version, flexible, sub, out, loop)
        else:
            inner += [f"{out} = []", "for _ in range(n):"]
            inner += ["    " + line for line in self._value(element, compact, "x", field.name)]
            inner.append(f"    {out}.append(x)")
        return lines + ["    " + line for line in inner]

    def _flat_structs(self, field: Field, version: int, flexible: bool, sub: str, out: str, loop: list[str]) -> list[str]:
        """Arrays of structs made only of fixed-width fields (ApiVersions' keys, most partition lists of
        responses) are read in one unpack when no element carries tagged fields; otherwise, and for the
        span-recording variant, element by element."""
        present = [f for f in field.fields if version in f.versions]
        if self.spans or not present or any(f.array or f.type not in FIXED or version in f.tagged for f in present):
            return loop
        fmts = "".join(FIXED[f.type] for f in present)
        head = struct.calcsize(">" + fmts)
        stride = head + (1 if flexible else 0)
        table = self._name("_V")
        self.namespace[table] = Unpackers(fmts + ("x" if flexible else ""))
        names = self._struct_names[sub]
        k = len(present)
        untagged = f"not any(buf[pos + {head} : pos + n * {stride} : {stride}])" if flexible else "True"
        return [
            f"if {untagged}:",
            f"    flat = {table}[n](buf, pos)",
            f"    {out} = [Struct({names}, list(flat[i : i + {k}]), None) for i in range(0, n * {k}, {k})]",
            f"    pos += n * {stride}",
            "else:",
        ] + ["    " + line for line in loop]

    def _min_size(self, field: Field, version: int, flexible: bool, compact: bool) -> int:
        """The fewest bytes one element can take: the bound that makes a lying count harmless."""
        element = field.type
        if element in FIXED:
            return SIZES[FIXED[element]]
        if element in MIN_SIZE:
            return MIN_SIZE[element]
        if element in ("string", "bytes", "records"):
            return 1 if compact else (2 if element == "string" else 4)
        return self._struct_min_size(field.fields, version, flexible)

    def _struct_min_size(self, fields: tuple[Field, ...], version: int, flexible: bool) -> int:
        total = 1 if flexible else 0
        for f in fields:
            if version not in f.versions or version in f.tagged:
                continue
            compact = flexible if f.flexible is None else version in f.flexible
            if f.array:
                total += 1 if compact else 4
            elif f.is_struct:
                total += 1 if version in f.nullable else self._struct_min_size(f.fields, version, flexible)
            else:
                total += self._min_size(f, version, flexible, compact)
        return total
