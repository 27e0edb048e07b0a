"""The character-level reading's rules reshaped for the matcher's Earley parser, language unchanged.

The reading (``character_level``) writes one rule per rule variant and per watched state of a
terminal, each alternative at most two symbols long. llguidance's parser pays for every item it
predicts, and a completed item scans the row where it began for the items waiting on its rule: the
rows where an expression may begin hold hundreds of items. Two rewrites, each of which keeps the
language of every rule that remains, make those rows smaller:

- **inlined:** a rule with one alternative that is a plain sequence (symbols and one-character
  lexemes) is written into each alternative that uses it, so that its item, and its completion, are
  gone (the two-symbol chains become whole alternatives again, a terminal's lexemes are read by the
  item that needs them);
- **left-factored:** the alternatives of a rule that begin with the same symbol share it, as in a
  trie (``a b | a c`` is ``a h`` with ``h: b | c``): one item waits on ``a`` instead of one per
  alternative, and one advances when ``a`` completes.

Rules are given as lists of alternatives (lists of symbols), or as text the rewrites leave alone
(a terminal's body with groups or repeats); the ones in ``keep`` keep their name (``start``, a rule
that captures a terminal).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Set

__all__ = ["Rule", "Rules", "for_matcher", "plain_alternatives", "reshaped", "rules_of", "size", "written"]

#: A rule's alternatives (each a list of symbols and lexemes), or its body as text left as it is.
Rule = list[list[str]] | str
Rules = dict[str, Rule]

_LEXEME = re.compile(r"/\[[^\s/]*\]/")  # one class of characters, every one escaped (``python_class``)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def plain_alternatives(body: str) -> list[list[str]] | None:
    """The alternatives of a rule's text when it is only symbols, one-character lexemes and
    top-level ``|`` (an empty alternative included); ``None`` otherwise."""
    alternatives: list[list[str]] = [[]]
    for piece in body.split():
        if piece == "|":
            alternatives.append([])
        elif _LEXEME.fullmatch(piece) or _NAME.fullmatch(piece):
            alternatives[-1].append(piece)
        else:
            return None
    return alternatives


#: How much larger (see ``size``) the rules may grow, and how large they may grow at most: the
#: matcher refuses a grammar of 65,525 symbols or more (eql's reading, every terminal's rules
#: inlined: 4.3 times its size, over that limit).
GROWTH, LARGEST = 2, 40_000


def for_matcher(rules: Rules, keep: Set[str], roots: Iterable[str], terminals: Set[str]) -> Rules:
    """``reshaped``, with the rules of ``terminals`` inlined too where that keeps the rules within
    ``GROWTH`` times their size (and ``LARGEST``); else with those kept; else ``rules`` as given."""
    before = size(rules)
    limit = min(GROWTH * before, max(before, LARGEST))
    for kept in (keep, keep | terminals):
        inlined = _reachable(_inlined(rules, kept), roots)
        if size(inlined) > limit:  # (factoring shares what inlining wrote, but adds rules)
            continue
        out = _all_factored(inlined, roots)
        if size(out) <= limit:
            return out
    return rules


def size(rules: Rules) -> int:
    """About how many symbols the matcher makes of the rules: one a rule, one a lexeme written."""
    return sum(
        1 + (len(_LEXEME.findall(r)) if isinstance(r, str) else sum(y[0] == "/" for a in r for y in a))
        for r in rules.values()
    )


def reshaped(rules: Rules, keep: Set[str], roots: Iterable[str]) -> Rules:
    """``rules`` inlined and left-factored (see the module), without the rules ``roots`` no longer
    reach; in the order given, each new rule after the one it came from."""
    return _all_factored(_inlined(rules, keep), roots)


def _all_factored(rules: Rules, roots: Iterable[str]) -> Rules:
    out: Rules = {}
    taken = set(rules)
    for name, alternatives in rules.items():
        if isinstance(alternatives, str):
            out[name] = alternatives
            continue
        helpers: Rules = {}
        out[name] = _factored(name, alternatives, helpers, taken)
        out.update(helpers)
    return _reachable(out, roots)


def written(name: str, rule: Rule) -> str:
    """The rule as a line of llguidance's Lark (an empty alternative as a trailing ``|``)."""
    if isinstance(rule, str):
        return f"{name}: {rule}".rstrip()
    kept = list(dict.fromkeys(" ".join(a) for a in rule if a))
    body = " | ".join(kept) + (" |" if kept and not all(rule) else "")
    return f"{name}: {body}".rstrip()


def _inlined(rules: Rules, keep: Set[str]) -> Rules:
    single = {
        n: alts[0]
        for n, alts in rules.items()
        if n not in keep and not isinstance(alts, str) and len(alts) == 1 and n not in alts[0]
    }
    memo: dict[str, list[str]] = {}

    def expand(symbol: str, through: frozenset[str]) -> list[str]:
        if symbol not in single or symbol in through:  # (a cycle of such rules derives no text)
            return [symbol]
        if symbol not in memo:
            memo[symbol] = [y for x in single[symbol] for y in expand(x, through | {symbol})]
        return memo[symbol]

    def written_out(alt: list[str]) -> list[str]:
        if not any(x in single for x in alt):
            return alt
        return [y for x in alt for y in (expand(x, frozenset()) if x in single else (x,))]

    return {n: alts if isinstance(alts, str) else [written_out(alt) for alt in alts] for n, alts in rules.items()}


def _factored(name: str, alternatives: list[list[str]], helpers: Rules, taken: set[str]) -> list[list[str]]:
    """The alternatives as a trie: those that begin with the same symbol share it, the rest of
    each in a new rule (in ``helpers``, named apart from every name in ``taken``, which it joins)."""
    groups: dict[str, list[list[str]]] = {}
    empty = False
    for alt in alternatives:
        if not alt:
            empty = True
            continue
        tails = groups.setdefault(alt[0], [])
        if alt[1:] not in tails:
            tails.append(alt[1:])
    out: list[list[str]] = []
    for first, tails in groups.items():
        if len(tails) == 1:
            out.append([first, *tails[0]])
            continue
        helper = _fresh(f"{name}_f", len(helpers), taken)
        helpers[helper] = []  # (its place, before the rules its own trie adds)
        helpers[helper] = _factored(helper, tails, helpers, taken)
        out.append([first, helper])
    if empty:
        out.append([])
    return out


def _fresh(stem: str, number: int, taken: set[str]) -> str:
    """``stem`` and the first number from ``number`` on that no rule has yet (now taken)."""
    while f"{stem}{number}" in taken:
        number += 1
    taken.add(f"{stem}{number}")
    return f"{stem}{number}"


def _reachable(rules: Rules, roots: Iterable[str]) -> Rules:
    seen: set[str] = set()
    todo = [r for r in roots if r in rules]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo += [y for y in _symbols(rules[name]) if y in rules and y not in seen]
    return {n: r for n, r in rules.items() if n in seen}


def _symbols(rule: Rule) -> list[str]:
    if isinstance(rule, str):
        return _NAME.findall(_LEXEME.sub(" ", rule))
    return [y for alt in rule for y in alt]


def rules_of(lines: Mapping[str, str]) -> Rules:
    """Rules from their bodies as text: alternatives where the text is plain (see
    ``plain_alternatives``), the text itself otherwise."""
    return {n: plain_alternatives(b) or b for n, b in lines.items()}
