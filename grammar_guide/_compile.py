"""The Lark compiler: lark's resolved grammar written in llguidance's Lark dialect.

``lark.Lark`` has already resolved ``%import``, templates, aliases, ``?``/``!``/``_`` rules and
``"kw"i``; this module writes its rules and terminals out for llguidance's incremental Earley
matcher, and raises ``GrammarError`` for a terminal the matcher cannot honour exactly.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Mapping

import lark
import llguidance as llg
from lark.grammar import NonTerminal, Terminal as LarkTerminal
from lark.lexer import PatternRE, PatternStr

from ._errors import GrammarError
from ._lark_load import position, position_of_terminal, position_of_use
from ._regex import is_regex_error, regex_features, strip_verbose

__all__ = ["Terminal", "compile_lark", "lark_regex", "validate"]


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
            return f"/{self.regex}/"
        return self.name

    def __str__(self) -> str:
        if self.literal is not None:
            return json.dumps(self.literal) + ("i" if self.case_insensitive else "")
        return f"/{self.regex}/"



def compile_lark(parser: lark.Lark, text: str, source: str | None) -> tuple[str, str, dict[str, Terminal]]:
    """Write Lark's resolved grammar in llguidance's dialect.

    Returns the grammar, the same grammar with every terminal occurrence captured under its Lark
    name (so a matcher reports each terminal as it completes), and the terminals by Lark name.
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
    for i, name in enumerate(ignore):
        if name not in terminals:
            raise GrammarError(f"%ignore names an undefined terminal {name}", source=source)
        body.append(f"%ignore {term_name(name)}")
        # The matcher stops skipping once no token can follow; Lark still skips ignored text
        # after the last token, so spell that trailing text out as its own tokens.
        trailing.append(f"{term_name(name)}_TRAILING")
        lines.append(f"{trailing[-1]}: {compiled_terms[name]}")
    if trailing:
        header.append(f"start: {rule_name(start)} gg_trailing")
        body.append("gg_trailing: \"\" | " + " | ".join(f"gg_trailing {t}" for t in trailing))
    else:
        header.append(f"start: {rule_name(start)}")
    tail = body[len(by_origin):]
    plain = "\n".join(header + body + lines) + "\n"
    captured = "\n".join(header + captured_body + tail + lines) + "\n"
    return plain, captured, terminals


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
        regex = f"(?i:{escaped})" if ci else escaped
        return Terminal(tdef.name, literal=pattern.value, case_insensitive=ci), lark_regex(regex)
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
                f"terminal {tdef.name} uses {problem}, which the incremental matcher cannot honour "
                "exactly",
                construct=f"/{pattern.value}/",
                **position_of_terminal(tdef.name, pattern.value, text),
                source=source,
            )
        expression = lark_regex(regex)
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


def lark_regex(regex: str) -> str:
    # Python's str regexes are Unicode-aware (\d, \w, \s), like the matcher's by default.
    # lark has already turned escapes such as \x00 into the characters themselves: spell
    # control characters out again so the grammar text stays plain.
    regex = re.sub(r"[\x00-\x1f\x7f]", lambda m: f"\\x{ord(m.group()):02x}", regex)
    return "/" + llg.regex_to_lark(regex, "") + "/"


def validate(grammar: str, source: str | None, lark_text: str | None) -> None:
    is_error, messages = llg.LLMatcher.validate_grammar_with_warnings(grammar)
    if is_error:
        raise GrammarError(
            f"the matcher rejected the grammar: {messages[0].strip()}",
            source=source,
        )

