"""Control records: the key every control record has, and its value, both read with the generated schemas.

The key is ControlRecordTypeSchema (version, type); the type names the value's schema: EndTxnMarker for
COMMIT and ABORT, and the KRaft records (leader change, snapshot header and footer, KRaft version, voters).
"""

from __future__ import annotations

from kdissect.records.values import Control
from kdissect.schema import CONTROL_RECORD_KEY, CONTROL_RECORD_TYPES, DATA_SCHEMAS
from kdissect.schema.versioned import read_versioned


def decode_control(key: bytes | None, value: bytes | None) -> tuple[Control | None, str]:
    """The control key and value, or None and why not."""
    fields, problem = read_versioned(CONTROL_RECORD_KEY, key or b"")
    if fields is None or "Type" not in fields:
        return None, f"control key: {problem or 'no type'}"
    ctype = fields["Type"]
    name, schema = CONTROL_RECORD_TYPES.get(ctype, (f"UNKNOWN-{ctype}", None))
    control = Control(fields["Version"], ctype, name, schema)
    if schema is None:
        return control, problem or ""
    if value is None:
        return control, f"{name} control record without a value"
    decoded, value_problem = read_versioned(DATA_SCHEMAS[schema], value)
    return Control(control.version, ctype, name, schema, decoded), "; ".join(p for p in (problem, value_problem) if p)
