"""JSON Schema to grammar: the schema read for keywords the grammar cannot honour (refused at load,
each with its JSON Pointer), then compiled by llguidance's JSON Schema compiler so that strings take
every escape JSON allows.

llguidance's compiler, left to its defaults, accepts only the short escapes (``\\n``, ``\\"``): a
``\\u00e9`` or a surrogate pair ``\\ud83d\\ude00`` (what ``json.dumps`` writes for any non-ASCII
text) is a violation. Its option ``json_allow_general_unicode_escapes`` (llguidance 1.8.0 and
later: ``GENERAL_UNICODE_ESCAPES``) allows every ``\\uXXXX`` that names a character (a high
surrogate only followed by a low one); we set it unless the schema's own ``x-guidance`` says
otherwise. It has no way to allow ``\\/`` (the solidus, which RFC 8259 lets a string escape): that
one is a rewrite of the grammar, ``\\/`` read as ``/``, the same string.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from ._errors import GrammarError

__all__ = [
    "GENERAL_UNICODE_ESCAPES",
    "SOLIDUS_REWRITE",
    "UNHONOURED_KEYWORDS",
    "llguidance_schema",
    "refused_value",
    "unhonoured_keywords",
]

#: Keywords the compiler does not implement, and what a grammar without them would let through.
UNHONOURED_KEYWORDS: Mapping[str, str] = {
    "uniqueItems": "arrays whose items repeat",
    "contains": "arrays without the item it asks for",
    "minContains": "arrays without the items it counts",
    "maxContains": "arrays with more of the items it counts",
    "not": "documents the subschema matches",
    "if": "documents its condition rules out",
    "then": "documents its condition rules out",
    "else": "documents its condition rules out",
    "dependentRequired": "objects without the members it makes required",
    "dependentSchemas": "objects its dependent schemas reject",
    "dependencies": "objects without the members it makes required",
    "propertyNames": "member names it rejects",
    "unevaluatedProperties": "members no other keyword accounts for",
    "unevaluatedItems": "items no other keyword accounts for",
    "$dynamicRef": "documents the dynamic reference rejects",
}

#: ``(pattern, replacement, reason)`` of the rewrite that reads ``\\/`` as ``/``.
SOLIDUS_REWRITE = (r"\\/", "/", "JSON's escaped solidus \\/ is the same string as /")

# Keywords whose value is a subschema, a list of subschemas, or a map of names to subschemas.
_ONE = frozenset(
    {"additionalProperties", "additionalItems", "items", "not", "if", "then", "else", "contains", "propertyNames"}
    | {"unevaluatedProperties", "unevaluatedItems"}
)
_LIST = frozenset({"anyOf", "allOf", "oneOf", "prefixItems", "items"})
_MAP = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})


def _llguidance_at_least(major: int, minor: int) -> bool:
    from importlib.metadata import version

    try:
        found = tuple(int(part) for part in version("llguidance").split(".")[:2])
    except ValueError:  # a development build: take it as new
        return True
    return found >= (major, minor)


#: Whether strings take every ``\uXXXX`` escape: llguidance's option for it came in 1.8.0. With an
#: older llguidance (1.5.0 is what guidance 0.3.1 pins) a schema's strings take only the short
#: escapes, as before.
GENERAL_UNICODE_ESCAPES = _llguidance_at_least(1, 8)
_DEFAULT_OPTIONS = {"json_allow_general_unicode_escapes": True} if GENERAL_UNICODE_ESCAPES else {}


def unhonoured_keywords(schema: Any, pointer: str = "#") -> Iterator[tuple[str, str]]:
    """Each keyword of ``schema`` (and its subschemas) in ``UNHONOURED_KEYWORDS`` that constrains
    anything (``uniqueItems: false`` does not), as ``(JSON Pointer, keyword)``."""
    for where, subschema in _subschemas(schema, pointer):
        for key, value in subschema.items():
            if key in UNHONOURED_KEYWORDS and not (key == "uniqueItems" and value is False):
                yield f"{where}/{_escape(key)}", key


#: Keywords whose value the compiler may not take (a format it does not know, a pattern with a
#: look-around, a reference outside the schema), each as a schema of that keyword alone: where
#: the compiler refuses the whole schema, each is tried alone to find the one it refuses.
_VALUE_PROBES: Mapping[str, Callable[[Any], Any]] = {
    "format": lambda value: {"type": "string", "format": value},
    "pattern": lambda value: {"type": "string", "pattern": value},
    "$ref": lambda value: {"$ref": value},
}


def refused_value(schema: Any, refuses: Callable[[str], str | None]) -> str | None:
    """Where the compiler refuses ``schema`` as a whole: the first ``format``, ``pattern``,
    ``patternProperties`` name or outside ``$ref`` that it refuses alone (``refuses``: the
    compiler's reason for a schema's JSON text, or ``None``), said in our words with its JSON
    Pointer; ``None`` if none is refused alone."""
    for pointer, node in _subschemas(schema):
        probes = [
            (k, node[k], f"{pointer}/{_escape(k)}", _VALUE_PROBES[k](node[k])) for k in _VALUE_PROBES if k in node
        ]
        names = node.get("patternProperties")
        if isinstance(names, Mapping):
            here = f"{pointer}/patternProperties"
            probes += [("patternProperties", n, f"{here}/{_escape(n)}", _VALUE_PROBES["pattern"](n)) for n in names]
        for keyword, value, at, probe in probes:
            if keyword == "$ref" and str(value).startswith("#"):
                continue  # a reference inside the schema: nothing to try alone
            reason = refuses(json.dumps({**probe, "x-guidance": dict(_DEFAULT_OPTIONS)}))
            if reason is not None:
                return (
                    f"JSON Schema {keyword} {value!r} at {at} cannot be honoured by the grammar "
                    f"({_gist(reason)}); remove it or check it after generation"
                )
    return None


def _gist(reason: str) -> str:
    """The line of the compiler's reason that says what is wrong (a regex error's ``error: ...``
    line, below the pattern it quotes)."""
    lines = [line.strip() for line in reason.splitlines() if line.strip()]
    said = [line.removeprefix("error: ") for line in lines if line.startswith("error:")]
    return (said or lines or ["refused"])[0]


def _subschemas(schema: Any, pointer: str = "#") -> Iterator[tuple[str, Mapping[str, Any]]]:
    """``schema`` and each of its subschemas, with its JSON Pointer."""
    if not isinstance(schema, Mapping):
        return
    yield pointer, schema
    for key, value in schema.items():
        here = f"{pointer}/{_escape(key)}"
        if key in _ONE and isinstance(value, Mapping):
            yield from _subschemas(value, here)
        if key in _LIST and isinstance(value, list):
            for i, item in enumerate(value):
                yield from _subschemas(item, f"{here}/{i}")
        if key in _MAP and isinstance(value, Mapping):
            for name, item in value.items():
                yield from _subschemas(item, f"{here}/{_escape(name)}")


def llguidance_schema(schema: Any) -> str:
    """The schema as llguidance's compiler reads it: refused with ``GrammarError`` (the keyword and
    its JSON Pointer) where it uses a keyword the grammar cannot honour; otherwise as JSON text,
    with every JSON string escape allowed (``x-guidance``, the schema's own options first)."""
    for pointer, keyword in unhonoured_keywords(schema):
        raise GrammarError(
            f"JSON Schema keyword {keyword!r} at {pointer} cannot be honoured by the grammar "
            f"(it would accept {UNHONOURED_KEYWORDS[keyword]}); remove it or check it after generation"
        )
    schema = _without_inert(schema)
    if isinstance(schema, Mapping):
        options = {**_DEFAULT_OPTIONS, **schema.get("x-guidance", {})}
        schema = {**schema, "x-guidance": options}
    return json.dumps(schema)


def _without_inert(schema: Any) -> Any:
    """The schema without the keywords that constrain nothing (``uniqueItems: false``), which the
    compiler would refuse all the same."""
    if not isinstance(schema, Mapping):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "uniqueItems" and value is False:
            continue
        if key in _ONE and isinstance(value, Mapping):
            value = _without_inert(value)
        elif key in _LIST and isinstance(value, list):
            value = [_without_inert(item) for item in value]
        elif key in _MAP and isinstance(value, Mapping):
            value = {name: _without_inert(item) for name, item in value.items()}
        out[key] = value
    return out


def _escape(name: str) -> str:
    """A name as a JSON Pointer segment (RFC 6901)."""
    return str(name).replace("~", "~0").replace("/", "~1")
