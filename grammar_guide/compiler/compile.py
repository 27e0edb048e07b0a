"""The Lark compiler: lark's resolved grammar written in llguidance's Lark dialect.

``lark.Lark`` has already resolved ``%import``, templates, aliases, ``?``/``!``/``_`` rules and
``"kw"i``; this module writes its rules and terminals out for llguidance's incremental Earley
matcher, and raises ``GrammarError`` for a terminal the matcher cannot honour exactly.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import lark
import llguidance as llg
from lark.grammar import NonTerminal
from lark.grammar import Terminal as LarkTerminal
from lark.lexer import PatternRE, PatternStr, TerminalDef

from .._errors import GrammarError
from .automaton import dfa_of
from .character_level import NoText, character_level
from .exact import (
    exact_regex,
    first_chars,
    greedy_regex,
    lark_regex,
    lazy_is_greedy,
    lazy_to_first_stop,
    needs_exact_classes,
)
from .hazards import find_hazards
from .lazy import lazy_reading
from .load import imported_definition, position, position_of_definition, position_of_terminal, position_of_use
from .lookahead import LookaheadReading, lookahead_reading
from .matcher import regex_is_void
from .regex import is_regex_error, regex_features, sre_constants, sre_parse, strip_verbose
from .terminal import Compiled, Terminal
from .unicode_classes import case_insensitive_literal, python_re_of, word_characters
from .watchers import MAX_VARIANTS, TooLarge

__all__ = [
    "PROBE_IDS",
    "PROBE_MARKERS",
    "Compiled",
    "Lexer",
    "Terminal",
    "compile_lark",
    "lark_regex",
    "probe_grammar",
    "validate",
]

#: How terminals are read: ``"dynamic"`` as lark's Earley parser does by default, ``"greedy"`` as
#: the matcher's lexer does (contextual longest match, as a tokenizer reads).
Lexer = Literal["dynamic", "greedy"]


def compile_lark(parser: lark.Lark, text: str, source: str | None, lexer: Lexer = "dynamic") -> Compiled:
    """Write Lark's resolved grammar in llguidance's dialect (see ``Compiled``).

    ``lexer="dynamic"`` (lark's Earley default) is honoured exactly: where the matcher's greedy
    lexer could read the grammar differently (see ``hazards``), the grammar is written at the
    character level instead (``scannerless``), or ``GrammarError`` says why neither is exact.
    ``lexer="greedy"`` is the matcher's own lexer, contextual longest match, as a tokenizer
    reads (``SELECTa`` is one word).
    """
    rule_names: dict[str, str] = {}
    term_names: dict[str, str] = {}

    def rule_name(name: str) -> str:
        if name not in rule_names:
            base = re.sub(r"[^a-z0-9_]", "_", name.lower()).strip("_") or "r"
            rule_names[name] = f"r{len(rule_names)}_{base}"
        return rule_names[name]

    def term_name(name: str) -> str:
        if name not in term_names:
            base = re.sub(r"[^A-Z0-9_]", "_", name.upper()).strip("_") or "T"
            term_names[name] = f"T{len(term_names)}_{base}"
        return term_names[name]

    terminals: dict[str, Terminal] = {}
    lines: list[str] = []
    compiled_terms: dict[str, str] = {}
    lookaheads: dict[str, LookaheadReading] = {}
    # An %ignore'd /^R/ matches only where the text begins (re.match at a later position never
    # holds ^): read as an optional R before the first token, at the character level.
    leading = _leading_ignores(parser) if lexer == "dynamic" else {}
    for tdef in parser.terminals:
        if tdef.name in leading:
            tdef = TerminalDef(tdef.name, PatternRE(leading[tdef.name], tdef.pattern.flags), tdef.priority)
        try:
            terminal, expression, ahead = _terminal(tdef, text, source, parser.options, lexer)
        except GrammarError as error:
            raise _in_imported_file(error, tdef, text, source, parser.options.import_paths) from None
        terminals[tdef.name] = terminal
        compiled_terms[tdef.name] = expression
        if ahead is not None:
            lookaheads[tdef.name] = ahead
        lines.append(f"{term_name(tdef.name)}: {expression}")

    start = parser.options.start[0]
    by_origin: dict[str, list[str]] = {}
    for rule in parser.rules:
        symbols = []
        for sym in rule.expansion:
            if isinstance(sym, LarkTerminal):
                if sym.name not in terminals:
                    declared = re.search(rf"(?m)^[ \t]*%declare\b[^\n]*?\b({re.escape(sym.name)})\b", text)
                    if declared:
                        raise GrammarError(
                            f"terminal {sym.name} is %declare'd: it is produced by a post-lexer or "
                            "lexer callback, which the incremental matcher cannot run",
                            construct=f"%declare {sym.name}",
                            **position(declared.start(1), text),
                            source=source,
                        )
                    raise GrammarError(
                        f"terminal {sym.name} has no definition",
                        construct=sym.name,
                        **position_of_use(sym.name, text),
                        source=source,
                    )
                symbols.append(term_name(sym.name))
            else:
                assert isinstance(sym, NonTerminal)
                symbols.append(rule_name(sym.name))
        by_origin.setdefault(rule.origin.name, []).append(" ".join(symbols) or '""')
    if start not in by_origin:
        raise GrammarError(f"start rule {start!r} is not defined", source=source)

    ignore = [name for name in parser.ignore_tokens if name not in leading]
    header = []
    if ignore:
        # Lark skips ignored text before the first and after the last token too.
        header.append('%llguidance {"allow_initial_skip": true}')
    body = [f"{rule_name(origin)}: {' | '.join(alts)}" for origin, alts in by_origin.items()]
    captured_body = [
        f"{rule_name(origin)}: {' | '.join(_capture_refs(alt, term_names) for alt in alts)}"
        for origin, alts in by_origin.items()
    ]
    captured_body += [
        f'gg_cap_{compiled.lower()}[capture="{lark_name}"]: {compiled}' for lark_name, compiled in term_names.items()
    ]
    trailing = []
    for name in ignore:
        if name not in terminals:
            raise GrammarError(f"%ignore names an undefined terminal {name}", source=source)
        body.append(f"%ignore {term_name(name)}")
        # The matcher stops skipping once no token can follow; Lark still skips ignored text
        # after the last token, so spell that trailing text out as its own tokens.
        trailing.append(f"{term_name(name)}_TRAILING")
        lines.append(f"{trailing[-1]}: {compiled_terms[name]}")
    if trailing:
        header.append(f"start: {rule_name(start)} gg_trailing")
        body.append('gg_trailing: "" | ' + " | ".join(f"gg_trailing {t}" for t in trailing))
    else:
        header.append(f"start: {rule_name(start)}")
    _check_not_empty(parser.rules, start, terminals, text, source)
    if lexer == "dynamic":
        literals = {n: (t.literal if not t.case_insensitive else None) for n, t in terminals.items()}
        patterns = {n: lookaheads[n].body if n in lookaheads else t.pattern for n, t in terminals.items()}
        hazards = find_hazards(parser.rules, start, compiled_terms, literals, patterns, ignore)
        if hazards.greedy or leading or lookaheads:
            try:
                return character_level(
                    by_origin,
                    rule_name,
                    start,
                    term_names,
                    terminals,
                    (ignore, list(leading)),
                    (hazards.munch, lookaheads),
                    source,
                )
            except TooLarge:
                raise _too_large(hazards.munch or hazards.greedy, text, source) from None
            except NoText:
                raise GrammarError(
                    f"the grammar's language is empty: no text is valid as lark reads it (rule {start!r} "
                    "needs a terminal where lark's longest match of the one before never lets it begin)",
                    construct=start,
                    **position_of_definition(start, text, last=False),
                    source=source,
                ) from None
            except GrammarError as error:
                raise _placed(error, text) from None
    tail = body[len(by_origin) :]
    plain = "\n".join(header + body + lines) + "\n"
    captured = "\n".join(header + captured_body + tail + lines) + "\n"
    return Compiled(plain, captured, terminals, character_level=False)


def _placed(error: GrammarError, text: str) -> GrammarError:
    """``error``, which names a terminal as its construct, at that terminal's definition."""
    if error.line is not None or not error.construct:
        return error
    where = position_of_definition(error.construct, text, last=False)
    return GrammarError(error.message, construct=error.construct, **where, source=error.source)


def _too_large(hazardous: Mapping[str, str], text: str, source: str | None) -> GrammarError:
    """The refusal of a grammar too large to read at the character level, at the first terminal
    that made it so (with the terminal it may run into or be extended by)."""
    names = sorted(hazardous, key=lambda n: position_of_definition(n, text, last=False)["offset"] or len(text))
    first = names[0]
    return GrammarError(
        f"the grammar is too large to read at the character level (over {MAX_VARIANTS:,} rule variants): "
        f"a greedy lexer would read {len(names)} terminals differently from lark ({', '.join(names[:8])}"
        f"{', ...' if len(names) > 8 else ''}; {first} with {hazardous[first]}), and each must be watched "
        "for where lark ends it; keep the terminals that may follow one another from running into each "
        "other (keywords with a rule-level alternative rather than a shared name pattern), or pass "
        'lexer="greedy" to read it as a tokenizer does',
        construct=first,
        **position_of_definition(first, text, last=False),
        source=source,
    )


def _check_not_empty(rules: Any, start: str, terminals: Mapping[str, Terminal], text: str, source: str | None) -> None:
    """``GrammarError`` when no text at all is valid (``start: start "a"``, ``/[^\\s\\S]/``)."""
    productive = {n for n, t in terminals.items() if t.literal is not None or not regex_is_void(t.regex or "")}
    bodies = [(r.origin.name, [s.name for s in r.expansion]) for r in rules]
    changed = True
    while changed:
        changed = False
        for origin, body in bodies:
            if origin not in productive and all(s in productive for s in body):
                productive.add(origin)
                changed = True
    if start not in productive:
        raise GrammarError(
            f"the grammar's language is empty: rule {start!r} derives no text (every alternative needs "
            "itself again, or a terminal that matches nothing)",
            construct=start,
            **position_of_definition(start, text, last=False),
            source=source,
        )


def _capture_refs(alternative: str, term_names: Mapping[str, str]) -> str:
    compiled = set(term_names.values())
    return " ".join(f"gg_cap_{sym.lower()}" if sym in compiled else sym for sym in alternative.split())


def _in_imported_file(
    error: GrammarError, tdef: Any, text: str, source: str | None, import_paths: Sequence[Any]
) -> GrammarError:
    """A refusal of a terminal that an ``%import`` brings (pylogics' ``%import .pl.SYMBOL_NAME``),
    placed at its definition in the imported file; ``error`` itself where it has a place."""
    if error.line is not None:
        return error
    folders = [*([Path(source).parent] if source else []), *import_paths]
    found = imported_definition(tdef.name, text, folders)
    if found is None:
        return error
    where, written = position_of_terminal(found.name, tdef.pattern.value, found.text)
    if where["line"] is None:
        return error
    return GrammarError(error.message, construct=written or error.construct, **where, source=str(found.path))


def _terminal(
    tdef: Any, text: str, source: str | None, options: Any, lexer: Lexer
) -> tuple[Terminal, str, LookaheadReading | None]:
    """The terminal, its definition in llguidance's dialect (the text after ``NAME:``), and its
    reading by look-ahead where it ends in one (read at the character level: ``lexer="dynamic"``
    only). ``options``: lark's; with ``regex=True`` lark matches with the ``regex`` module, not
    ``re``; ``g_regex_flags`` are added to every terminal's."""
    pattern = tdef.pattern
    regex_module = bool(options.regex)
    global_flags = _flag_letters(options.g_regex_flags, source)
    if isinstance(pattern, PatternStr):
        flags = set(pattern.flags) | ({"i"} & global_flags)
        ci = "i" in flags
        escaped = _escape_literal(pattern.value)
        if ci and regex_module:  # the regex module's case folding (``ı`` is no ``i``)
            folded = case_insensitive_literal(pattern.value)
            return Terminal(tdef.name, regex=folded), lark_regex(folded), None
        if ci:  # case-insensitivity as Python's re has it (``ſ`` is an ``s``)
            return (
                Terminal(tdef.name, literal=pattern.value, case_insensitive=True),
                lark_regex(exact_regex(f"(?i:{re.escape(pattern.value)})")),
                None,
            )
        return Terminal(tdef.name, literal=pattern.value), lark_regex(escaped), None
    if isinstance(pattern, PatternRE):
        value = pattern.value
        flags = set(pattern.flags) | global_flags
        if "x" in flags:
            # Newlines reach the matcher as \\x0a escapes, which end no verbose-mode comment:
            # remove comments and insignificant whitespace here.
            value = strip_verbose(value)
            flags.discard("x")
        if regex_module:
            value = _python_re_of(tdef.name, pattern.value, value, flags, text, source)
        value = _known_equivalent(value)
        regex = f"(?{''.join(sorted(flags))}:{value})" if flags else value
        regex = _lazy_as_greedy(regex)
        try:
            word = word_characters() if regex_module else None
            ahead = lookahead_reading(regex, word) if lexer == "dynamic" else None
            problem, lazy = regex_features(regex) if not isinstance(ahead, LookaheadReading) else (None, False)
            if isinstance(ahead, str) and (problem or "").startswith(("a look-around", "a word boundary")):
                problem = ahead  # why this look-around has no reading (another construct first: that one)
        except Exception as exc:  # the regex does not compile: lark would have failed first
            if not is_regex_error(exc):
                raise
            problem, lazy = f"an invalid regex ({exc})", False
        if isinstance(ahead, LookaheadReading):
            ahead, problem = _lookahead_parts(ahead)
            if ahead is not None:
                return Terminal(tdef.name, regex=regex), lark_regex(greedy_regex(ahead.body)), ahead
        if problem:
            what, _, instead = problem.partition("; ")
            where, written = position_of_terminal(tdef.name, pattern.value, text, _has_unsupported)
            raise GrammarError(
                f"terminal {tdef.name} uses {what}, which the incremental matcher cannot honour exactly"
                + (f"; {instead}" if instead else ""),
                construct=written or f"/{pattern.value}/",
                **where,
                source=source,
            )
        # Classes as Python's re reads them; control characters (lark writes a "\t" inside a
        # composite terminal as a backslash then a tab) come out as plain escapes.
        if lazy:
            # The matches Python's re.match returns (see ``lazy``), or no exact reading.
            try:
                reading = lazy_reading(regex)
            except GrammarError as error:  # an automaton too large to build
                reading = error.message
            if isinstance(reading, str):
                where, written = position_of_terminal(tdef.name, pattern.value, text, _has_lazy)
                raise GrammarError(
                    f"terminal {tdef.name} uses {reading}",
                    construct=written or f"/{pattern.value}/",
                    **where,
                    source=source,
                )
            return Terminal(tdef.name, regex=regex), reading.expression, None
        exact = regex if not needs_exact_classes(regex) else exact_regex(regex)
        return Terminal(tdef.name, regex=regex), lark_regex(exact), None
    raise GrammarError(  # pragma: no cover - lark has only these two
        f"terminal {tdef.name} has an unknown pattern type", construct=tdef.name, source=source
    )


_FLAG_LETTERS = {re.IGNORECASE: "i", re.MULTILINE: "m", re.DOTALL: "s"}


def _flag_letters(flags: int, source: str | None) -> set[str]:
    """lark's ``g_regex_flags`` as the letters of inline flags (``re.UNICODE`` is ``re``'s own
    default for text); ``GrammarError`` for the others."""
    rest = flags & ~re.UNICODE
    for flag in _FLAG_LETTERS:
        rest &= ~flag
    if rest:
        raise GrammarError(
            f"g_regex_flags={flags!r}: only re.IGNORECASE, re.MULTILINE and re.DOTALL are read exactly; "
            "write the others into the terminals that need them",
            source=source,
        )
    return {letter for flag, letter in _FLAG_LETTERS.items() if flags & flag}


def _lookahead_parts(reading: LookaheadReading) -> tuple[LookaheadReading | None, str | None]:
    """The reading with each part's lazy quantifiers read (``_lazy_as_greedy``, ``lazy``), or why
    a part has no exact reading."""
    parts = []
    for part in reading.parts:
        regex = _lazy_as_greedy(part.regex)
        if _has_lazy(regex):
            lazy = lazy_reading(regex)
            if isinstance(lazy, str):
                return None, lazy
        parts.append(dataclasses.replace(part, regex=regex))
    return LookaheadReading(tuple(parts)), None


def _python_re_of(name: str, written: str, value: str, flags: set[str], text: str, source: str | None) -> str:
    """A pattern of ``regex=True`` in Python's ``re`` (see ``unicode_classes``), or ``GrammarError``
    where the two modules differ in a way not written out."""
    problem = None
    try:
        value = python_re_of(value)
        sre_parse.parse(value, 0)
    except Exception as exc:
        if not is_regex_error(exc):
            raise
        problem = f"a construct of the regex module that Python's re lacks ({exc}); write it without it"
    if problem is None and _case_insensitive(value if not flags else f"(?{''.join(sorted(flags))}:{value})"):
        if regex_features(value)[0] is not None:
            return value  # refused for that construct, which no reading has
        problem = (
            "case-insensitive matching with regex=True: the regex module folds case differently "
            'from Python\'s re (``ı`` is no ``i``); write the cases out ([iI]) or use a "..."i literal'
        )
    if problem is None:
        return value
    where, literal = position_of_terminal(name, written, text, _case_insensitive if "case" in problem else None)
    raise GrammarError(f"terminal {name} uses {problem}", construct=literal or f"/{written}/", **where, source=source)


def _case_insensitive(regex: str) -> bool:
    return (
        re.match(r"\(\?[a-zA-Z]*i", regex) is not None or re.search(r"\(\?[a-zA-Z]*i[a-zA-Z]*[:)]", regex) is not None
    )


def _leading_ignores(parser: lark.Lark) -> dict[str, str]:
    """The ignored terminals written ``/^R/`` or ``/\\AR/`` (no ``m`` flag), each with ``R``."""
    out = {}
    for tdef in parser.terminals:
        pattern = tdef.pattern
        if tdef.name not in parser.ignore_tokens or not isinstance(pattern, PatternRE) or "m" in pattern.flags:
            continue
        try:
            items = list(sre_parse.parse(pattern.value, 0))
        except Exception as exc:  # lark compiled it: only a regex module's pattern gets here
            if not is_regex_error(exc):
                raise
            continue
        anchors = {sre_constants.AT_BEGINNING: "^", sre_constants.AT_BEGINNING_STRING: "\\A"}
        if items and items[0][0] is sre_constants.AT and items[0][1] in anchors:
            anchor = anchors[items[0][1]]
            if pattern.value.startswith(anchor) and pattern.value != anchor:
                out[tdef.name] = pattern.value[len(anchor) :]
    return out


def _has_unsupported(regex: str) -> bool:
    return regex_features(regex)[0] is not None


def _has_lazy(regex: str) -> bool:
    return regex_features(regex)[1]


def _lazy_as_greedy(regex: str) -> str:
    """The regex with its lazy quantifiers made greedy when that changes no match: when no match
    is a proper prefix of another (``"(?:[^"\\\\]|\\\\.)*?"``), ``re.match`` finds the one match at
    a position either way; or when each repeats a class up to what no character of it begins
    (``lazy_is_greedy``); or, one lazy repeat up to a character, then what may match nothing,
    as the repeat that stops at the first such character (``lazy_to_first_stop``)."""
    try:
        if regex_features(regex) == (None, False):
            return regex
        if lazy_is_greedy(regex) or dfa_of(regex).prefix_free():
            return greedy_regex(regex)
        return lazy_to_first_stop(regex) or regex
    except (GrammarError, re.error):
        return regex


# Terminals of lark's own grammars/common.lark that use constructs the matcher lacks, with an
# exactly equivalent regular expression. ESCAPED_STRING is ``".*?(?<!\\)(\\\\)*?"``: under
# re.match it ends at the first quote preceded by an even run of backslashes, on one line.
_KNOWN_EQUIVALENTS = {
    r'".*?(?<!\\)(\\\\)*?"': r'"(?:\\[^\n]|[^"\\\n])*"',
    # C_COMMENT: the shortest /* ... */, that is, no */ before the last.
    "/\\*(.|\n)*?\\*/": r"/\*(?:[^*]|\*+[^*/])*\*+/",
}


def _known_equivalent(value: str) -> str:
    """``value`` with a known terminal it begins with written exactly (``_KNOWN_EQUIVALENTS``),
    where what follows it may match empty text (lark.lark's ``STRING``, ``_STRING "i"?``):
    ``re.match`` then ends the known part where it ends alone, and reads the rest after it."""
    if value in _KNOWN_EQUIVALENTS:
        return _KNOWN_EQUIVALENTS[value]
    for known, exact in _KNOWN_EQUIVALENTS.items():
        rest = value[len(known) :]
        if value.startswith(known) and _may_match_empty(rest):
            return exact + rest
    return value


def _may_match_empty(regex: str) -> bool:
    """Whether a regex standing alone, with nothing the matcher lacks, matches empty text."""
    try:
        return regex_features(regex) == (None, False) and first_chars(regex)[1]
    except Exception as exc:  # not a regex alone (a group opened before it)
        if not is_regex_error(exc):
            raise
        return False


_REGEX_META = set("\\.^$|?*+()[]{}")


def _escape_literal(value: str) -> str:
    out = []
    for ch in value:
        if ch in _REGEX_META:
            out.append("\\" + ch)
        elif ch.isprintable() and ch != " ":
            out.append(ch)
        elif ord(ch) < 0x80:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(f"\\u{{{ord(ch):x}}}")
    return "".join(out)


def validate(grammar: str, source: str | None, lark_text: str | None) -> None:
    is_error, messages = llg.LLMatcher.validate_grammar_with_warnings(grammar)
    if is_error:
        raise GrammarError(
            f"the matcher rejected the grammar: {messages[0].strip()}",
            source=source,
        )


#: Probe tokens (see ``probe_grammar``): a marker, then an id. Neither can occur in UTF-8 text as
#: a token boundary the checker feeds: the markers are bytes no UTF-8 text holds, the ids are
#: continuation bytes, which no lexeme (and no ignored text) begins with.
PROBE_MARKERS = tuple(range(0xF5, 0xFF))
PROBE_IDS = tuple(range(0x80, 0xC0))

_CAPTURED_RULE = re.compile(r'(?m)^(\S+)\[capture="([^"]+)"\]: (.*)$')


def probe_grammar(captured: str) -> tuple[str, dict[tuple[int, int], str]] | None:
    """The captured grammar (see ``compile_lark``) with a probe beside every terminal.

    Wherever a terminal may begin, the byte-level matcher also takes the two-token probe
    ``<[marker]> <[id]>`` (special-token references: in the byte vocabulary, tokens that text never
    holds). Fed a marker, the matcher closes the lexeme in progress, as lark's parse of the prefix
    does at its end, and its mask then lists the ids of exactly the terminals that the parser
    predicts there. Returns the grammar and the Lark name of each (marker, id), or ``None`` when the
    grammar has more terminals than there are probes.
    """
    names: dict[str, tuple[int, int]] = {}
    capacity = len(PROBE_MARKERS) * len(PROBE_IDS)

    def with_probe(match: re.Match[str]) -> str:
        rule, name, body = match.groups()
        if name not in names:
            i = len(names)
            names[name] = (PROBE_MARKERS[i // len(PROBE_IDS) % len(PROBE_MARKERS)], PROBE_IDS[i % len(PROBE_IDS)])
        marker, probe_id = names[name]
        return f"{rule}: {body} | <[{marker}]> <[{probe_id}]>"

    text = _CAPTURED_RULE.sub(with_probe, captured)
    if len(names) > capacity:
        return None
    return text, {probe: name for name, probe in names.items()}
