"""Writing a grammar out for other engines: plain Lark and GBNF.

Servers with their own grammar engine take a grammar in their own text format:

- ``to_plain_lark``: the Lark subset that OpenAI's custom grammar tools and llguidance's Lark
  reader accept, and that the ``lark`` package reads too. Templates are expanded, ``?``/``!``
  rules, aliases and terminal priorities (which change parse trees, not the language) are
  dropped, ``%import`` (``common`` or any file) is inlined, ``%ignore`` is kept, and the text
  ignored before the first and after the last token is spelt out (llguidance skips ignored text
  only between tokens; Lark also at both ends). The start rule is ``start``. A grammar that a
  greedy lexer would read differently from lark (``Grammar.character_level``) is written as its
  character-level form instead: one-character terminals, which any lexer reads as lark reads the
  original (``Grammar.to_plain_lark`` writes that form; this module is not asked).
- ``to_gbnf``: llama.cpp's GBNF (also read by Fireworks and xgrammar). GBNF has no lexer: each
  terminal becomes a rule of characters (regexes translated item by item, ``\\d``/``\\w``/``\\s``
  as their exact Unicode classes) and the ignored terminals are written after every terminal.

Both are written from the rules and terminals lark resolved (a ``LarkForm``: lark's parser, the
compiled terminals and the grammar's text), so they mean what the grammar means. What neither
format can say raises ``GrammarError`` with the line and column of the construct: a lazy
quantifier (``*?``) is one (its shortest-match meaning needs intersection, which only
llguidance's own dialect has).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import lark
from lark.grammar import NonTerminal

from .._errors import GrammarError
from .charclass import SURROGATES, UNICODE_MAX, Ranges, char_set, complement, normalise, subtract_surrogates
from .compile import Terminal, lark_regex
from .exact import quantifier
from .load import position, position_of_terminal
from .lookahead import has_lookaround
from .regex import regex_features
from .regex import sre_constants as _c
from .regex import sre_parse as _sre_parse

__all__ = ["LarkForm", "to_gbnf", "to_plain_lark"]


# -- the resolved grammar, with names both formats accept ----------------------------------------


@dataclass(frozen=True)
class LarkForm:
    """What the exports read of a grammar: ``name`` (for messages), ``lark``'s resolved parser
    (``None`` for a grammar not loaded from Lark text), the compiled ``terminals`` and the Lark
    text (``source_text``, to point at a construct's line and column)."""

    name: str
    parser: lark.Lark | None
    terminals: Mapping[str, Terminal]
    source_text: str = ""


@dataclass
class _Resolved:
    """Lark's resolved grammar: rules as alternatives of symbol lists, terminals by name."""

    start: str
    rules: dict[str, list[list[tuple[bool, str]]]]  # name -> alternatives of (is_terminal, name)
    terminals: dict[str, Terminal]
    ignore: list[str]
    source_text: str
    source: str | None
    #: lark's own pattern text of each regex terminal (to point at it in errors).
    lark_patterns: dict[str, str] = field(default_factory=dict)


def _resolve(grammar: LarkForm, what: str) -> _Resolved:
    parser = grammar.parser
    if parser is None:
        if set(grammar.terminals) == {"REGEX"}:  # Grammar.from_regex
            return _Resolved("start", {"start": [[(True, "REGEX")]]}, dict(grammar.terminals), [], "", None)
        raise GrammarError(
            f"{grammar.name} was not loaded from Lark (a JSON schema?): it has no {what} form; "
            "send the schema to the server as a JSON schema instead",
            construct=grammar.name,
        )
    rules: dict[str, list[list[tuple[bool, str]]]] = {}
    for rule in parser.rules:
        symbols = [(not isinstance(s, NonTerminal), s.name) for s in rule.expansion]
        rules.setdefault(str(rule.origin.name), []).append(symbols)
    start = parser.options.start[0]
    if what == "GBNF":
        _prune_void(rules, {n for n, t in grammar.terminals.items() if t.is_void}, start)
    # The start rule first, then the rest in the grammar's order.
    ordered = {start: rules.pop(start, [])}
    ordered.update(rules)
    return _Resolved(
        start,
        ordered,
        {
            n: t
            for n, t in grammar.terminals.items()
            if any(s == (True, n) for alts in ordered.values() for alt in alts for s in alt)
            or n in parser.ignore_tokens
        },
        list(parser.ignore_tokens),
        grammar.source_text,
        None if getattr(parser, "source_path", None) in (None, "<string>") else parser.source_path,
        {t.name: t.pattern.value for t in parser.terminals},
    )


def _prune_void(rules: dict[str, list[list[tuple[bool, str]]]], void: set[str], start: str) -> None:
    """Drop the alternatives that can match no text (a dead-end guard such as ``_WORD _NEVER``
    with ``_NEVER: /[^\\s\\S]/``), and the rules left without any: GBNF has no empty class."""
    while void:
        dead: set[str] = set()
        for name, alternatives in rules.items():
            alternatives[:] = [alt for alt in alternatives if not any(sym in void for _, sym in alt)]
            if not alternatives and name != start:
                dead.add(name)
        for name in dead:
            del rules[name]
        void = dead


def _allocate(names: Iterable[str], *, upper: bool, taken: set[str], reserved: dict[str, str]) -> dict[str, str]:
    """Lark-valid, unique names (``rule_name`` / ``TERM_NAME``) for lark's internal ones
    (``__object_star_0``, ``_sep{item,COMMA}``, ``__ANON_0``)."""
    out = dict(reserved)
    for name in names:
        if name in out:
            continue
        base = re.sub(r"[^A-Za-z0-9_]+", "_", name).strip("_")
        base = base.upper() if upper else base.lower()
        if not base or not base[0].isalpha():
            base = ("T" if upper else "r") + ("_" + base if base else "")
        candidate, n = base, 1
        while candidate in taken:
            n += 1
            candidate = f"{base}_{n}"
        taken.add(candidate)
        out[name] = candidate
    return out


def _unsayable_error(name: str, terminal: Terminal, resolved: _Resolved, target: str) -> GrammarError:
    """The refusal of a terminal whose lazy quantifier, or else look-around, ``target`` cannot say."""
    if _is_lazy(terminal):
        uses, why = (
            _is_lazy_regex,
            (
                "a lazy quantifier (*?, +?, ??): {} has no way to say 'the shortest match'; rewrite it without "
                "one (a comment /\\/\\*(.|\\n)*?\\*\\// is /\\/\\*([^*]|\\*+[^*\\/])*\\*+\\//)"
            ),
        )
    else:
        uses, why = (
            has_lookaround,
            (
                "a look-around ((?=...), (?!...), (?<=...), (?<!...)): {} has no way to say what may come "
                "before or after a lexeme; write the terminal without it, and say in the grammar's rules "
                "what may follow it"
            ),
        )
    return _placed_error(name, terminal, resolved, uses, f"terminal {name} uses " + why.format(target))


def _placed_error(
    name: str, terminal: Terminal, resolved: _Resolved, uses: Callable[[str], bool], message: str
) -> GrammarError:
    """``message`` at the terminal's definition (at the ``%import`` that names it, if imported)."""
    where, _ = position_of_terminal(
        name, resolved.lark_patterns.get(name, terminal.regex or ""), resolved.source_text, uses
    )
    if where["line"] is None:  # imported: point at the %import that names it
        found = re.search(rf"(?m)^[ \t]*%import\b[^\n]*?\b({re.escape(name)})\b", resolved.source_text)
        where = position(found.start(1) if found else None, resolved.source_text)
    return GrammarError(message, construct=f"/{terminal.regex}/", **where, source=resolved.source)


def _is_lazy(terminal: Terminal) -> bool:
    return terminal.regex is not None and _is_lazy_regex(terminal.regex)


def _is_lazy_regex(regex: str) -> bool:
    return regex_features(regex)[1]


# -- plain Lark ----------------------------------------------------------------------------------


def to_plain_lark(grammar: LarkForm) -> str:
    """The grammar in the plain Lark subset (see the module docstring)."""
    g = _resolve(grammar, "Lark")
    taken = {"start"}
    rule_names = _allocate(g.rules, upper=False, taken=taken, reserved={g.start: "start"})
    if g.ignore:
        # start wraps the user's start rule between the ignored text at either end.
        body = rule_names[g.start] = _allocate(["start_body"], upper=False, taken=taken, reserved={})["start_body"]
    # Literal terminals are written in place ("select"i); named ones are kept for regexes and
    # for what %ignore names.
    inline = {name for name, t in g.terminals.items() if t.literal is not None and name not in g.ignore}
    term_names = _allocate([n for n in g.terminals if n not in inline], upper=True, taken={"EDGE"}, reserved={})
    lines: list[str] = []
    if g.ignore:
        edges = [
            _allocate([f"{name}_EDGE"], upper=True, taken=set(term_names.values()), reserved={})[f"{name}_EDGE"]
            for name in g.ignore
        ]
        term_names.update({f"{name} edge": edge for name, edge in zip(g.ignore, edges, strict=True)})
        skip = _allocate(["ignored"], upper=False, taken=taken, reserved={})["ignored"]
        lines.append(f"start: {skip} {body} {skip}")
        lines.append(f"{skip}: ({' | '.join(edges)})*")

    def symbol(is_terminal: bool, name: str) -> str:
        if not is_terminal:
            return rule_names[name]
        if name in inline:
            t = g.terminals[name]
            return _lark_string(t.literal or "") + ("i" if t.case_insensitive else "")
        return term_names[name]

    for origin, alternatives in g.rules.items():
        written = [" ".join(symbol(*s) for s in alt) for alt in alternatives]
        lines.append(f"{rule_names[origin]}: {' | '.join(written)}".rstrip())
    lines.append("")
    for name, terminal in g.terminals.items():
        if name in inline:
            continue
        if _is_lazy(terminal):
            raise _unsayable_error(name, terminal, g, "plain Lark")
        expression = lark_regex(terminal.pattern)
        lines.append(f"{term_names[name]}: {expression}")
        if name in g.ignore:
            lines.append(f"{term_names[name + ' edge']}: {lark_regex(_edge_regex(terminal.pattern))}")
    for name in g.ignore:
        lines.append(f"%ignore {term_names[name]}")
    return "\n".join(lines).rstrip() + "\n"


def _edge_regex(regex: str) -> str:
    """The ignored terminal's regex for ``ignored: (EDGE)*`` at either end of the text: ``X`` for
    ``X+`` of one character (repeated, the same texts), else the regex itself. An edge identical
    to the ``%ignore``d white space made llguidance 1.5 merge the two and then refuse white space
    at the start; ``(?:R)+`` for the other terminals would read two comments as one lexeme, which
    the loader refuses as ambiguous."""
    if regex.endswith("+") and _plus_of_one_character(regex) is not None:
        return regex[:-1]
    return regex


def _lark_string(value: str) -> str:
    """A Lark string literal that lark and llguidance both read as ``value``."""
    return _quoted(value, lambda cp: f"\\u{cp:04x}" if cp < 0x10000 else json.dumps(chr(cp))[1:-1])


def _quoted(value: str, escape: Callable[[int], str]) -> str:
    """``value`` in double quotes: quote, backslash and \\n \\t \\r escaped, other characters that
    are not printable (or separate lines) written by ``escape``."""
    out = []
    for ch in value:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch in _SHORT_ESCAPES:
            out.append(_SHORT_ESCAPES[ch])
        elif not ch.isprintable() or ch in "\u2028\u2029":
            out.append(escape(ord(ch)))
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


_SHORT_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


# -- GBNF ------------------------------------------------------------------------------------------


def to_gbnf(grammar: LarkForm) -> str:
    """The grammar in llama.cpp's GBNF (see the module docstring)."""
    g = _resolve(grammar, "GBNF")

    def gbnf_name(name: str) -> str:
        return name.replace("_", "-")

    # (llguidance's reader takes a text with a "start:" or "start ::=" line for Lark.)
    taken = {"root", "ignored", "start", "root_text"}
    reserved = {g.start: "root_text"} if g.ignore else {g.start: "root"}
    rule_names = {k: gbnf_name(v) for k, v in _allocate(g.rules, upper=False, taken=taken, reserved=reserved).items()}
    # Names differ whatever the case: llguidance's reader renames a rule of characters to capitals.
    upper_taken = {n.upper().replace("-", "_") for n in taken | set(rule_names.values())}
    term_names = {
        k: gbnf_name(v) for k, v in _allocate(g.terminals, upper=True, taken=upper_taken, reserved={}).items()
    }
    for name, terminal in g.terminals.items():
        if _is_lazy(terminal) or (terminal.regex is not None and has_lookaround(terminal.regex)):
            raise _unsayable_error(name, terminal, g, "GBNF")
    skip = " ignored" if g.ignore else ""
    inline = {name for name, t in g.terminals.items() if t.literal is not None and not t.case_insensitive}

    def symbol(is_terminal: bool, name: str) -> str:
        if not is_terminal:
            return rule_names[name]
        if name in inline:
            return _gbnf_string(g.terminals[name].literal or "") + skip
        return term_names[name] + skip

    lines = [f"root ::= ignored {rule_names[g.start]}"] if g.ignore else []
    for origin, alternatives in g.rules.items():
        written = [" ".join(symbol(*s) for s in alt) or '""' for alt in alternatives]
        lines.append(f"{rule_names[origin]} ::= {' | '.join(written)}")
    if g.ignore:
        pieces = [_ignored_piece(g.terminals[n].pattern) for n in g.ignore]
        lines.append(f"ignored ::= ({' | '.join(pieces)})*")
    for name, terminal in g.terminals.items():
        if name in inline:
            continue
        lines.append(f"{term_names[name]} ::= {_gbnf_regex(terminal.pattern)}")
    return "\n".join(lines) + "\n"


def _ignored_piece(regex: str) -> str:
    """An ignored terminal as one repetition inside ``ignored ::= (...)*``: ``X+`` for a
    single-character X becomes ``X`` (the same language there), which spares llama.cpp's engine
    an exponentially ambiguous rule."""
    chars = _plus_of_one_character(regex)
    return _gbnf_class(chars) if chars is not None else _gbnf_regex(regex)


def _plus_of_one_character(regex: str) -> Ranges | None:
    """The characters X when ``regex`` is ``X+`` for a one-character X, else None."""
    parsed = _sre_parse.parse(regex, 0)
    items = list(parsed)
    if len(items) == 1 and items[0][0] is _c.MAX_REPEAT:
        low, high, body = items[0][1]
        if low == 1 and high == _c.MAXREPEAT:
            return char_set(list(body), parsed.state.flags)
    return None


def _gbnf_string(value: str) -> str:
    return _quoted(value, _gbnf_escape)


def _gbnf_escape(cp: int) -> str:
    """One code point in a GBNF character class: ASCII letters and digits as themselves, other
    ASCII and C1 controls as ``\\xNN``, the rest as the raw character (GBNF is UTF-8, and
    llguidance's GBNF reader copies ``\\u`` escapes into regexes in a form its engine misreads)."""
    if cp < 0x80 and chr(cp).isalnum():
        return chr(cp)
    if cp < 0xA0:
        return f"\\x{cp:02X}"
    return chr(cp)


def _gbnf_regex(regex: str) -> str:
    """A Python regex (one that the grammar loader accepted) as a GBNF expression."""
    parsed = _sre_parse.parse(regex, 0)
    return _sequence(list(parsed), parsed.state.flags) or '""'


def _sequence(items: list[Any], flags: int) -> str:
    out: list[str] = []
    literal = ""
    for op, av in items:
        if op is _c.LITERAL and not flags & _c.SRE_FLAG_IGNORECASE:
            literal += chr(av)
            continue
        if literal:
            out.append(_gbnf_string(literal))
            literal = ""
        out.append(_item(op, av, flags))
    if literal:
        out.append(_gbnf_string(literal))
    return " ".join(out)


_STARRED = {(0, 1), (0, _c.MAXREPEAT), (1, _c.MAXREPEAT)}  # ?, *, +: any two of them make a *


def _item(op: Any, av: Any, flags: int) -> str:
    chars = char_set([(op, av)], flags)
    if chars is not None:
        return _gbnf_class(chars)
    if op is _c.SUBPATTERN:
        _group, add, remove, body = av
        return f"({_sequence(list(body), (flags | add) & ~remove) or chr(34) * 2})"
    if op is _c.BRANCH:
        return "(" + " | ".join(_sequence(list(alt), flags) or '""' for alt in av[1]) + ")"
    if op is _c.MAX_REPEAT:
        low, high, body = av
        inner_items = list(body)
        if len(inner_items) == 1 and inner_items[0][0] is _c.MAX_REPEAT and (low, high) in _STARRED:
            # (X+)? and the like are X*: spelt so, since readers drop the parentheses of a
            # one-item group and then meet two quantifiers in a row.
            inner_low, inner_high, _ = inner_items[0][1]
            if (inner_low, inner_high) in _STARRED:
                return _item(_c.MAX_REPEAT, (0, _c.MAXREPEAT, inner_items[0][1][2]), flags)
        inner = _sequence(list(body), flags)
        if not _is_atom(inner):
            inner = f"({inner})"
        return inner + quantifier(low, high)
    raise GrammarError(f"GBNF: no translation for the regex construct {op}")  # pragma: no cover


_ATOM = re.compile(r'\[(?:\\.|[^\]\\])*\]|"(?:\\.|[^"\\])*"')


def _is_atom(text: str) -> bool:
    """Whether a GBNF expression is one class, one string or one group (a quantifier can follow)."""
    if _ATOM.fullmatch(text):
        return True
    return text.startswith("(") and text.endswith(")") and _balanced(text[1:-1])


def _balanced(text: str) -> bool:
    depth = 0
    in_string = in_class = False
    escaped = False
    for ch in text:
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif in_string:
            in_string = ch != '"'
        elif in_class:
            in_class = ch != "]"
        elif ch == '"':
            in_string = True
        elif ch == "[":
            in_class = True
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                return False
    return depth == 0


def _gbnf_class(ranges: Ranges) -> str:
    """A GBNF character class for these code points: the shorter of ``[...]`` and ``[^...]``."""
    ranges = normalise(ranges)
    if ranges == [(0, UNICODE_MAX)]:
        return "[\\x00-\U0010ffff]"
    # Surrogates never occur in text: count them on whichever side makes the class shorter.
    with_gap = normalise([*ranges, SURROGATES])
    negated = complement(with_gap)
    positive = _write_ranges(subtract_surrogates(ranges))
    if negated and len(negated) < len(subtract_surrogates(ranges)):
        return "[^" + _write_ranges(negated) + "]"
    return "[" + positive + "]"


def _write_ranges(ranges: Ranges) -> str:
    out = []
    for lo, hi in ranges:
        if lo == hi:
            out.append(_gbnf_escape(lo))
        elif hi == lo + 1:
            out.append(_gbnf_escape(lo) + _gbnf_escape(hi))
        else:
            out.append(f"{_gbnf_escape(lo)}-{_gbnf_escape(hi)}")
    return "".join(out)
