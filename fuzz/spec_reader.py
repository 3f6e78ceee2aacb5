"""Users' message specs (`--spec-dir`): the reader, the builder and the checks on any JSON-ish text, and the
decoders compiled from what passes them, on the input's own bytes.

The input is up to three spec files separated by NUL bytes (UTF-8, errors replaced). Contract: `load` never
raises, whatever the text (numbers of any length, nesting of any depth, strings and comments of any size); each
problem names its file; when the files make APIs, each version's request and response decoders compile and read
the input's bytes as a body without raising, holding at most `ELEMENTS` elements of struct arrays.
"""

from __future__ import annotations

from fuzz.common import Broken, check_diagnostics, instrumented, main

with instrumented():
    from kdissect.decode.body import CompiledBodies
    from kdissect.schema import catalog_with
    from kdissect.schema.tree import Struct
    from kdissect.schema.user_specs import SpecFile, load

ELEMENTS = 2000
"""The fuzzing bound on a body's struct elements (`Limits.max_elements_message`)."""
NESTING = 40
"""Structs a body nests, at most: the reader's 32 levels and the few a field adds."""


def _structs(value: object, depth: int = 0) -> int:
    if depth > 2 * NESTING:
        raise Broken("a decoded body nests deeper than its spec can")
    if isinstance(value, Struct):
        return 1 + sum(_structs(v, depth + 1) for v in value.values)
    if isinstance(value, list):
        return sum(_structs(v, depth + 1) for v in value)
    return 0


def one_input(data: bytes) -> None:
    parts = data.decode("utf-8", "replace").split("\0")[:3]
    files = [SpecFile(f"spec{i}.json", text) for i, text in enumerate(parts)]
    specs = load(files, [])
    for problem in specs.problems:
        if problem.file not in {f.path for f in files}:
            raise Broken(f"a problem in no file given: {problem}")
    if not specs.apis:
        return
    bodies = CompiledBodies(catalog_with(specs.definitions), lambda buf, start, end: bytes(buf[start:end]), elements=ELEMENTS)
    for user in specs.apis:
        for version in user.api.versions[:4]:
            for direction in ("request", "response"):
                body, diagnostics = bodies.decode(user.api.key, version, direction, data, 0)
                check_diagnostics(diagnostics, f"{user.api.name} v{version} {direction}")
                if _structs(body.fields) > (1 + ELEMENTS) * NESTING:
                    raise Broken(f"{_structs(body.fields)} structs decoded, past the elements bound")


if __name__ == "__main__":
    main(one_input)
