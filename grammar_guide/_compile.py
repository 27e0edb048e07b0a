"""The Lark compiler: lark's resolved grammar written in llguidance's Lark dialect.

``lark.Lark`` has already resolved ``%import``, templates, aliases, ``?``/``!``/``_`` rules and
``"kw"i``; this module writes its rules and terminals out for llguidance's incremental Earley
matcher, and raises ``GrammarError`` for a terminal the matcher cannot honour exactly.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import lark
import llguidance as llg
from lark.grammar import NonTerminal
from lark.grammar import Terminal as LarkTerminal
from lark.lexer import PatternRE, PatternStr

from ._errors import GrammarError
from ._exact import exact_regex, lark_regex, needs_exact_classes, regex_rules, regex_rules_not_starting
from ._hazards import find_hazards, simple_munch
from ._lark_load import position, position_of_definition, position_of_terminal, position_of_use
from ._matcher import regex_is_void
from ._regex import is_regex_error, regex_features, strip_verbose

__all__ = ["Lexer", "Terminal", "compile_lark", "lark_regex", "validate"]

#: How terminals are read: ``"dynamic"`` as lark's Earley parser does by default, ``"greedy"`` as
#: the matcher's lexer does (contextual longest match, as a tokenizer reads).
Lexer = Literal["dynamic", "greedy"]


_SHOWN = 60  # characters of a long pattern shown by str() and display


def _shorten(text: str) -> str:
    return text if len(text) <= _SHOWN else f"{text[: _SHOWN - 12]}…({len(text)} chars)"


@dataclass(frozen=True)
class Terminal:
    """A grammar terminal: its Lark ``name``, and its ``literal`` or its ``regex`` (exactly one set)."""

    name: str
    literal: str | None = None
    regex: str | None = None
    case_insensitive: bool = False

    @property
    def pattern(self) -> str:
        """The terminal as a regular expression (a literal is escaped)."""
        if self.regex is not None:
            return self.regex
        escaped = re.escape(self.literal or "")
        return f"(?i:{escaped})" if self.case_insensitive else escaped

    @property
    def display(self) -> str:
        """How to name the terminal to a person: a literal quoted (a case-insensitive keyword in
        capitals), a pattern by its name."""
        if self.literal is not None:
            literal = self.literal.upper() if self.case_insensitive else self.literal
            return json.dumps(literal, ensure_ascii=False)
        if self.name.startswith("__"):  # lark's name for an anonymous pattern says nothing
            return f"/{_shorten(self.regex or '')}/"
        return self.name

    def __str__(self) -> str:
        if self.literal is not None:
            return json.dumps(self.literal) + ("i" if self.case_insensitive else "")
        return f"/{_shorten(self.regex or '')}/"

    def __repr__(self) -> str:
        # Short: a pattern can be huge (the SQLite identifier's, which excludes every keyword,
        # is 47 KB); its first characters and its length say which it is.
        regex = repr(self.regex)
        if self.regex is not None and len(self.regex) > _REPR_LIMIT:
            regex = f"{self.regex[:_REPR_LIMIT]!r}... ({len(self.regex):,} characters)"
        return (
            f"Terminal(name={self.name!r}, literal={self.literal!r}, regex={regex}, "
            f"case_insensitive={self.case_insensitive!r})"
        )


_REPR_LIMIT = 60


def compile_lark(
    parser: lark.Lark, text: str, source: str | None, lexer: Lexer = "dynamic"
) -> tuple[str, str, dict[str, Terminal]]:
    """Write Lark's resolved grammar in llguidance's dialect.

    Returns the grammar, the same grammar with every terminal occurrence captured under its Lark
    name (so a matcher reports each terminal as it completes), and the terminals by Lark name.

    ``lexer="dynamic"`` (lark's Earley default) is honoured exactly: where the matcher's greedy
    lexer could read the grammar differently (see ``_hazards``), the grammar is written at the
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
    for tdef in parser.terminals:
        terminal, expression = _terminal(tdef, text, source)
        terminals[tdef.name] = terminal
        compiled_terms[tdef.name] = expression
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

    ignore = list(parser.ignore_tokens)
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
    _check_not_empty(parser.rules, start, terminals, source)
    if lexer == "dynamic":
        literals = {n: (t.literal if not t.case_insensitive else None) for n, t in terminals.items()}
        patterns = {n: t.pattern for n, t in terminals.items()}
        hazards = find_hazards(parser.rules, start, compiled_terms, literals, patterns, ignore)
        if hazards.greedy:
            munch = {}
            for name, other in hazards.munch.items():
                followers = [compiled_terms[f] for f in hazards.followers[name]]
                ranges = simple_munch(terminals[name].pattern, compiled_terms[name], followers)
                if ranges is None:
                    raise _inexact_error(name, other, terminals, text, source)
                munch[name] = ranges
            return _scannerless(by_origin, rule_name, start, term_names, terminals, ignore, munch, text, source)
    tail = body[len(by_origin) :]
    plain = "\n".join(header + body + lines) + "\n"
    captured = "\n".join(header + captured_body + tail + lines) + "\n"
    return plain, captured, terminals


def _scannerless(
    by_origin: Mapping[str, list[str]],
    rule_name: Callable[[str], str],
    start: str,
    term_names: Mapping[str, str],
    terminals: Mapping[str, Terminal],
    ignore: list[str],
    munch: Mapping[str, Any],
    text: str,
    source: str | None,
) -> tuple[str, str, dict[str, Terminal]]:
    """The grammar at the character level: each terminal a rule over one-character lexemes,
    ignored text a rule before every terminal and at the end. The matcher's lexer then has
    nothing to be greedy about, and its language is exactly the rules' language.

    A terminal in ``munch`` (see ``_hazards``) takes its longest match in lark: whatever follows
    it may not begin with a character that extends the match. That is a condition on the next
    terminal, so the rules are multiplied by the last terminal read (a product with a small
    automaton whose state is "the last terminal, if its match could still be extended")."""
    by_compiled = {compiled: name for name, compiled in term_names.items()}
    for lark_name, terminal in terminals.items():
        if terminal.regex is not None and regex_features(terminal.regex)[1]:
            raise GrammarError(
                f"terminal {lark_name} uses a lazy quantifier in a grammar the matcher reads at the "
                "character level (its terminals overlap); rewrite it without one",
                construct=str(terminal),
                **position_of_terminal(lark_name, terminal.regex, text),
                source=source,
            )
    extends = {term_names[name]: ranges for name, ranges in munch.items()}
    # The symbol grammar: tokens are compiled terminal names, gg_skip the ignored text.
    rules: dict[str, list[list[str]]] = {"gg_start": [[rule_name(start)] + (["gg_skip"] if ignore else [])]}
    for origin, bodies in by_origin.items():
        rules[rule_name(origin)] = [
            [
                y
                for sym in body.split()
                if sym != '""'
                for y in (["gg_skip", sym] if ignore and sym in by_compiled else [sym])
            ]
            for body in bodies
        ]
    if ignore:
        rules["gg_skip"] = [[]] + [["gg_skip", term_names[name]] for name in ignore]
    nullable: set[str] = set()
    last: dict[str, set[str]] = {n: set() for n in rules}
    changed = True
    while changed:
        changed = False
        for n, alts in rules.items():
            for alt in alts:
                if n not in nullable and all(x in nullable for x in alt):
                    nullable.add(n)
                    changed = True
                for x in reversed(alt):
                    add = {x} if x in by_compiled else last.get(x, set())
                    if not add <= last[n]:
                        last[n] |= add
                        changed = True
                    if x not in nullable:
                        break
    state_of = {t: (t if t in extends else "") for t in by_compiled}
    index = {"": 0, **{t: i + 1 for i, t in enumerate(sorted(extends))}}

    def ends(n: str, p: str) -> set[str]:
        return {state_of[t] for t in last[n]} | ({p} if n in nullable else set())

    out: dict[str, list[list[str]]] = {}
    tokens: set[tuple[str, str]] = set()
    work = [("gg_start", "", q) for q in ends("gg_start", "")]
    seen = set(work)
    while work:
        n, p, q = work.pop()
        variant = f"{n}__{index[p]}_{index[q]}"
        alternatives = out.setdefault(variant, [])
        for alt in rules[n]:
            partial: list[tuple[list[str], str]] = [([], p)]
            for x in alt:
                grown = []
                for syms, s in partial:
                    if x in by_compiled:
                        tokens.add((x, s))
                        grown.append(([*syms, f"gg_t_{x.lower()}__{index[s]}"], state_of[x]))
                    else:
                        for q2 in ends(x, s):
                            if (x, s, q2) not in seen:
                                seen.add((x, s, q2))
                                work.append((x, s, q2))
                            grown.append(([*syms, f"{x}__{index[s]}_{index[q2]}"], q2))
                partial = grown
                if len(out) + len(partial) > 20000:
                    raise GrammarError("the grammar is too large to read at the character level", source=source)
            alternatives += [syms for syms, s in partial if s == q]
    token_rules: dict[str, str] = {}
    for compiled, s in sorted(tokens):
        pattern = terminals[by_compiled[compiled]].pattern
        body = regex_rules(pattern) if not s else regex_rules_not_starting(pattern, extends[s])
        if body is not None:
            token_rules[f"gg_t_{compiled.lower()}__{index[s]}"] = body
    # Drop what derives no text (a restricted terminal with no match, and what needs one).
    productive: set[str] = set(token_rules)
    changed = True
    while changed:
        changed = False
        for variant, alts in out.items():
            if variant not in productive and any(all(x in productive for x in alt) for alt in alts):
                productive.add(variant)
                changed = True
    top = f"gg_start__0_{index['']}"
    heads = [v for v in out if v.startswith("gg_start__0_") and v in productive]
    if not heads:
        raise GrammarError("the grammar's language is empty: no text is valid", source=source)
    lines = ["start: " + " | ".join(heads)]
    for variant, alts in out.items():
        if variant not in productive:
            continue
        kept = [" ".join(alt) or '""' for alt in alts if all(x in productive for x in alt)]
        lines.append(f"{variant}: {' | '.join(kept)}")
    plain_terms, captured_terms = [], []
    for rule, body in token_rules.items():
        compiled = rule[len("gg_t_") :].rsplit("__", 1)[0].upper()
        plain_terms.append(f"{rule}: {body}")
        captured_terms.append(f'{rule}[capture="{by_compiled[compiled]}"]: {body}')
    del top
    plain = "\n".join(lines + plain_terms) + "\n"
    captured = "\n".join(lines + captured_terms) + "\n"
    return plain, captured, dict(terminals)


def _check_not_empty(rules: Any, start: str, terminals: Mapping[str, Terminal], source: str | None) -> None:
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
        raise GrammarError(f"the grammar's language is empty: rule {start!r} derives no text", source=source)


def _inexact_error(
    name: str, other: str, terminals: Mapping[str, Terminal], text: str, source: str | None
) -> GrammarError:
    where = position_of_definition(name, text, last=False) if not name.startswith("__") else position_of_use(name, text)
    a, b = terminals[name], terminals.get(other, terminals[name])
    return GrammarError(
        f"terminal {a.display} can be read two ways here: lark's dynamic lexer takes its longest "
        f"match even where that runs into the following {b.display}, and the grammar's terminals "
        "overlap, so neither the matcher's greedy lexer nor a character-level reading is exactly "
        f"lark's. Suggested rewrite: make {a.display} unable to continue with what starts "
        f"{b.display} (or write the overlapping part as rules), or load with lexer='greedy' "
        "for a tokenizer's reading",
        construct=f"{a.display} / {b.display}",
        source=source,
        **where,
    )


def _capture_refs(alternative: str, term_names: Mapping[str, str]) -> str:
    compiled = set(term_names.values())
    return " ".join(f"gg_cap_{sym.lower()}" if sym in compiled else sym for sym in alternative.split())


def _terminal(tdef: Any, text: str, source: str | None) -> tuple[Terminal, str]:
    """The terminal, and its definition in llguidance's dialect (the text after ``NAME:``)."""
    pattern = tdef.pattern
    if isinstance(pattern, PatternStr):
        flags = set(pattern.flags)
        ci = "i" in flags
        escaped = _escape_literal(pattern.value)
        if ci:  # case-insensitivity as Python's re has it (``ſ`` is an ``s``)
            return Terminal(tdef.name, literal=pattern.value, case_insensitive=True), lark_regex(
                exact_regex(f"(?i:{re.escape(pattern.value)})")
            )
        return Terminal(tdef.name, literal=pattern.value), lark_regex(escaped)
    if isinstance(pattern, PatternRE):
        value = pattern.value
        flags = set(pattern.flags)
        if "x" in flags:
            # Newlines reach the matcher as \\x0a escapes, which end no verbose-mode comment:
            # remove comments and insignificant whitespace here.
            value = strip_verbose(value)
            flags.discard("x")
        value = _KNOWN_EQUIVALENTS.get(value, value)
        regex = f"(?{''.join(sorted(flags))}:{value})" if flags else value
        try:
            problem, lazy = regex_features(regex)
        except Exception as exc:  # the regex does not compile: lark would have failed first
            if not is_regex_error(exc):
                raise
            problem, lazy = f"an invalid regex ({exc})", False
        if problem:
            raise GrammarError(
                f"terminal {tdef.name} uses {problem}, which the incremental matcher cannot honour exactly",
                construct=f"/{pattern.value}/",
                **position_of_terminal(tdef.name, pattern.value, text),
                source=source,
            )
        # Classes as Python's re reads them; control characters (lark writes a "\t" inside a
        # composite terminal as a backslash then a tab) come out as plain escapes.
        exact = regex if lazy or not needs_exact_classes(regex) else exact_regex(regex)
        expression = lark_regex(exact)
        if lazy:
            # Python's re returns the shortest match of this pattern (see regex_features): the
            # strings of the language none of whose proper prefixes is in the language.
            expression = f"{expression} & ~{lark_regex(f'(?:{regex})(?s:.)+')}"
        return Terminal(tdef.name, regex=regex), expression
    raise GrammarError(  # pragma: no cover - lark has only these two
        f"terminal {tdef.name} has an unknown pattern type", construct=tdef.name, source=source
    )


# Terminals of lark's own grammars/common.lark that use constructs the matcher lacks, with an
# exactly equivalent regular expression. ESCAPED_STRING is ``".*?(?<!\\)(\\\\)*?"``: under
# re.match it ends at the first quote preceded by an even run of backslashes, on one line.
_KNOWN_EQUIVALENTS = {
    r'".*?(?<!\\)(\\\\)*?"': r'"(?:\\[^\n]|[^"\\\n])*"',
    # C_COMMENT: the shortest /* ... */, that is, no */ before the last.
    "/\\*(.|\n)*?\\*/": r"/\*(?:[^*]|\*+[^*/])*\*+/",
}


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
