"""The shape of the package: which stage may import which, so the floors cannot silently rot.

Every module of kdissect/ belongs to a unit: a top-level module (wire.py, dissector.py, ...) or a stage folder
(capture/, net/, ...). A unit imports only the units its row allows: lower floors, never a sibling on its own
floor, never one above it. A new folder must be given its row here, which is the point: placing it is a
decision. Imports inside functions count as much as those at the top of a module.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "kdissect"

GROUND = {"wire", "diagnostic", "limits", "frozen", "native", "printable", "forked", "revive"}
CORE_STAGES = GROUND | {"schema", "capture", "net", "records", "events", "values", "tls", "kafka", "decode"}
ALLOWED: dict[str, set[str]] = {
    # floor 1: primitives
    "wire": set(),
    "diagnostic": set(),
    "limits": set(),
    "frozen": set(),
    "printable": set(),  # captured text made safe for a terminal: every view's one rule
    "forked": set(),  # the workers read --jobs and tables --jobs fork: their pipes, signals and ends
    "revive": set(),  # typed values to JSON and back: what the cache keeps, never pickled
    "native": set(),  # which modules mypyc compiles; `import kdissect` installs its finder first
    # floor 2: the protocol's tables and their compiled decoders; packets in
    "schema": GROUND,
    "capture": GROUND,
    # floor 3: what is made of packets and of the tables
    "net": GROUND | {"capture"},
    "records": GROUND | {"schema"},
    "events": GROUND,
    "values": GROUND | {"schema"},  # record keys and values read for what they say: registry framings, Avro, Protobuf, JSON
    # between the TCP streams and Kafka framing: TLS records in (cut as net/ cuts any stream), plaintext out
    "tls": GROUND | {"events", "net"},
    # floor 4: the two halves of the core, which never import each other
    "kafka": GROUND | {"schema", "capture", "net", "events", "tls"},
    "decode": GROUND | {"schema", "records", "events"},
    # floor 5: the core that wires them, and the display filters over what it yields (never imported below)
    "dissector": CORE_STAGES,
    "filter": CORE_STAGES,
    # floor 6: the doctor, whose rules read the core's events and the decoded bodies
    "doctor": CORE_STAGES | {"filter"},  # a finding's evidence is a display filter: the doctor writes the language
    # several captures read as one: the taps of one connection joined before the core, its events timed after
    "taps": CORE_STAGES | {"dissector"},
    # captures written again (a cut, an anonymized copy) from what the core found in them
    "rewrite": CORE_STAGES | {"dissector", "taps"},
    # floor 7 and up: what users see, the Spark job, the commands
    "views": CORE_STAGES | {"dissector", "filter", "doctor"},
    "metrics": CORE_STAGES | {"filter", "doctor"},  # the tap: events into metrics, and their exporters; no view
    # floor 7½: the report page, made of the doctor's findings and stats' totals; the browser's `w` writes it too
    "report": CORE_STAGES | {"dissector", "views", "filter", "doctor"},
    "pipeline": CORE_STAGES | {"dissector", "views", "filter", "doctor"},  # the findings table is the doctor's
    "browse": CORE_STAGES | {"dissector", "views", "filter", "doctor", "report", "rewrite"},
    # floor 8½: a capture's index kept in the cache (the tables' cache keys it), its exchanges read back as browse reads
    # one; and browse's whole pass, findings and all, kept for its next opening
    "index": CORE_STAGES | {"dissector", "filter", "pipeline", "browse", "doctor"},
    "commands": CORE_STAGES
    | {"dissector", "views", "pipeline", "browse", "index", "filter", "doctor", "metrics", "report", "rewrite", "taps"},
    "cli": {"commands", "printable"},
    "__main__": {"cli"},
    # beside the product: tools for tests, fuzzing and benchmarks, which nothing above imports
    "testing": CORE_STAGES | {"dissector"},
    "__init__": {"native"},
}


def unit_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def module_name(path: Path) -> str:
    relative = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(relative.parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(parts)


def imports(path: Path) -> set[str]:
    """Every kdissect module `path` imports, wherever the import statement stands."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("kdissect"):
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("kdissect"))
    return found


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in PACKAGE.rglob("*.py")}


def test_every_unit_has_a_floor() -> None:
    units = {unit_of(name) for name in modules()}
    assert units <= set(ALLOWED), f"give these a row in ALLOWED: {sorted(units - set(ALLOWED))}"


def test_imports_follow_the_floors() -> None:
    known = modules()
    wrong = []
    for name, path in sorted(known.items()):
        unit = unit_of(name)
        for target in imports(path):
            if target not in known and target.rsplit(".", 1)[0] in known:
                target = target.rsplit(".", 1)[0]  # `from kdissect.x import name`: the module is kdissect.x
            other = unit_of(target)
            if other not in (unit, "__init__") and other not in ALLOWED.get(unit, set()):  # the face: its version
                wrong.append(f"{name} imports {target} ({unit} -> {other})")
    assert not wrong, "imports against the floors:\n" + "\n".join(wrong)


def test_nothing_in_the_product_imports_the_test_tools() -> None:
    users = [
        name
        for name, path in modules().items()
        if unit_of(name) != "testing" and any(unit_of(target) == "testing" for target in imports(path))
    ]
    assert not users


def test_the_rule_is_not_empty() -> None:
    """The check itself must be able to fail: a known-bad edge is refused by the table."""
    assert "dissector" not in ALLOWED["kafka"] and "kafka" not in ALLOWED["decode"] and "decode" not in ALLOWED["kafka"]
    assert "views" not in ALLOWED["metrics"] and "metrics" not in ALLOWED["views"]  # metric logic stays out of views/
    assert imports(PACKAGE / "dissector.py") >= {"kdissect.kafka.connection"}
