"""Build grammars/sqlite.lark from its readable source, grammars/src/sqlite.lark.

The source is written as if tokens were separated by ignored whitespace. SQLite's tokenizer is
greedy, though: ``SELECTx`` is one identifier, ``1--x`` is ``1`` and a comment, and a
grammar with ``%ignore`` whitespace (in Lark's Earley parser or llguidance's matcher alike) would
read ``SELECTx`` as ``SELECT x`` because neither can look ahead past a token. So the shipped
grammar makes separation part of the grammar itself:

* every token carries the separators (whitespace, ``--`` and ``/* */`` comments) that follow it;
* a token that ends with a word character (keyword, identifier, number, parameter, string) comes in
  two forms: bare, or followed by at least one separator; after the bare form the next token must
  not start with a word character. Likewise a bare ``-`` may not be followed by a token starting
  with ``-`` (that would be a comment), nor may its separator start with ``--``.

That constraint is a finite automaton over token classes (state = how the previous token ended);
the build intersects the source grammar with it (each rule is specialised by the automaton state
it starts and ends in, states that make no difference are merged), and writes the result.

Usage: ``python tests/sqlite_grammar_build.py`` rewrites grammars/sqlite.lark;
``--check`` exits non-zero when the committed file is stale.
"""

from __future__ import annotations

import itertools
import re
import sys
from pathlib import Path

import lark
from lark.grammar import NonTerminal, Terminal
from lark.lexer import PatternRE, PatternStr

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "grammars" / "src" / "sqlite.lark"
TARGET = ROOT / "grammars" / "sqlite.lark"

# SQLite's keywords (3.40; https://sqlite.org/lang_keywords.html): an IDENT is none of them.
KEYWORDS = """
ABORT ACTION ADD AFTER ALL ALTER ALWAYS ANALYZE AND AS ASC ATTACH AUTOINCREMENT BEFORE BEGIN
BETWEEN BY CASCADE CASE CAST CHECK COLLATE COLUMN COMMIT CONFLICT CONSTRAINT CREATE CROSS CURRENT
CURRENT_DATE CURRENT_TIME CURRENT_TIMESTAMP DATABASE DEFAULT DEFERRABLE DEFERRED DELETE DESC
DETACH DISTINCT DO DROP EACH ELSE END ESCAPE EXCEPT EXCLUDE EXCLUSIVE EXISTS EXPLAIN FAIL FILTER
FIRST FOLLOWING FOR FOREIGN FROM FULL GENERATED GLOB GROUP GROUPS HAVING IF IGNORE IMMEDIATE IN
INDEX INDEXED INITIALLY INNER INSERT INSTEAD INTERSECT INTO IS ISNULL JOIN KEY LAST LEFT LIKE LIMIT
MATCH MATERIALIZED NATURAL NO NOT NOTHING NOTNULL NULL NULLS OF OFFSET ON OR ORDER OTHERS OUTER
OVER PARTITION PLAN PRAGMA PRECEDING PRIMARY QUERY RAISE RANGE RECURSIVE REFERENCES REGEXP REINDEX
RELEASE RENAME REPLACE RESTRICT RETURNING RIGHT ROLLBACK ROW ROWS SAVEPOINT SELECT SET TABLE TEMP
TEMPORARY THEN TIES TO TRANSACTION TRIGGER UNBOUNDED UNION UNIQUE UPDATE USING VACUUM VALUES VIEW
VIRTUAL WHEN WHERE WINDOW WITH WITHOUT
""".split()

_ID_START = r"A-Za-z_\u0080-\ud7ff\ue000-\U0010ffff"
_ID_CHAR = r"A-Za-z0-9_$\u0080-\ud7ff\ue000-\U0010ffff"

# Separators inside tokens: SQLite's whitespace (space, \t, \n, \f, \r). Comments are ignored
# tokens of their own (with the whitespace after them): were they part of a token's separator,
# a matcher that does not backtrack (llguidance) could not end the token before a "-" or "/"
# that turns out not to start a comment.
SEP = r"[ \t\n\f\r]+"
COMMENT = r"(?:--[^\n]*\n?|/\*(?:[^*]|\*+[^*/])*\*+/)[ \t\n\f\r]*"

W, M, O = "W", "M", "O"  # how a token ends / starts: word character, "-", anything else
STATES = (O, W, M)

# Classes of the named regex terminals of the source: (start class, end class).
REGEX_CLASSES = {
    "IDENT": (W, W),
    "INTEGER": (W, W),
    "FLOAT": (W, W),  # ".5" after a word would read differently; treat it as a word
    "STRING": (W, W),  # 'a''b' and x'00' fuse with what precedes or follows
    "BLOB": (W, W),
    "QUOTED_ID": (W, W),
    "BRACKET_ID": (O, O),
    "BACKTICK_ID": (O, O),
    "PARAM": (W, W),
}


def ident_regex() -> str:
    """An identifier that is not a keyword, as a regex without look-around.

    Built from a trie of the keywords: at each trie node the identifier either ends (if the node
    is not a keyword), continues along a keyword's next letter, or leaves the trie with any
    other identifier character and then continues freely.
    """
    trie: dict = {}
    for kw in KEYWORDS:
        node = trie
        for ch in kw.lower():
            node = node.setdefault(ch, {})
        node["$"] = True

    def cls(ch: str) -> str:
        return f"[{ch}{ch.upper()}]" if ch.isalpha() else re.escape(ch)

    def rest(node: dict, first: bool) -> str:
        alts = []
        letters = sorted(k for k in node if k != "$")
        for ch in letters:
            alts.append(cls(ch) + "(?:" + rest(node[ch], False) + ")")
        chars = _ID_START if first else _ID_CHAR
        excluded = "".join(ch + ch.upper() for ch in letters)
        alts.append(_subtract(chars, excluded) + f"[{_ID_CHAR}]*")
        if "$" not in node and not first:
            # The identifier may end here. Last, so that a backtracking regex engine (Lark's)
            # takes the longest identifier, like SQLite's tokenizer.
            alts.append("")
        return "|".join(alts)

    return rest(trie, True)


def _subtract(chars: str, excluded: str) -> str:
    """A character class of ``chars`` minus the ASCII letters in ``excluded``."""
    if not excluded:
        return f"[{chars}]"
    letters = set(excluded)
    keep_upper = "".join(c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in letters)
    keep_lower = "".join(c for c in "abcdefghijklmnopqrstuvwxyz" if c not in letters)
    extra = chars.replace("A-Za-z", "")
    if "_" in letters:  # the only non-letter in a keyword
        extra = extra.replace("_", "")
    return f"[{_ranges(keep_upper)}{_ranges(keep_lower)}{extra}]"


def _ranges(letters: str) -> str:
    out = []
    for _, group in itertools.groupby(enumerate(letters), key=lambda p: ord(p[1]) - p[0]):
        chars = [c for _, c in group]
        out.append(chars[0] if len(chars) == 1 else f"{chars[0]}-{chars[-1]}")
    return "".join(out)


# -- the automaton product ----------------------------------------------------------------------


class Build:
    def __init__(self, source: str) -> None:
        self.source = source.replace("@IDENT@", ident_regex().replace("/", "\\/"))
        self.parser = lark.Lark(self.source, parser="earley", lexer="dynamic", start="start", maybe_placeholders=False)
        self.rules = self.parser.rules
        self.terms = {t.name: t for t in self.parser.terminals}
        self.classes = {name: self._classify(t) for name, t in self.terms.items()}
        self.by_origin: dict[str, list] = {}
        for rule in self.rules:
            self.by_origin.setdefault(rule.origin.name, []).append(rule)

    def _classify(self, tdef) -> tuple[str, str]:
        pat = tdef.pattern
        if isinstance(pat, PatternStr):
            v = pat.value
            word = re.compile(r"[A-Za-z0-9_$]")
            start = W if word.match(v[0]) else (M if v[0] == "-" else O)
            end = W if word.match(v[-1]) else (M if v == "-" else O)
            return start, end
        if tdef.name in REGEX_CLASSES:
            return REGEX_CLASSES[tdef.name]
        if re.fullmatch(r"[A-Z_]+", tdef.name) and isinstance(pat, PatternRE) and re.fullmatch(r"\(\?i:[a-z_]+\)|[a-z_]+", pat.to_regexp()):
            return W, W
        raise ValueError(f"no token class for terminal {tdef.name} /{pat.value}/")

    def emitted(self, name: str, form: str) -> str:
        pat = self.terms[name].pattern
        base = name
        if isinstance(pat, PatternStr):
            base = "_K_" + re.sub(r"[^A-Z0-9]", "_", name.upper()).strip("_")
        suffix = {"any": "", "bare": "_N", "sep": "_S"}[form]
        if self.classes[name][1] == O:
            suffix = ""
        return base + suffix

    def analyse(self) -> None:
        nullable: set[str] = set()
        first: dict[str, set[str]] = {n: set() for n in self.by_origin}
        last: dict[str, set[str]] = {n: set() for n in self.by_origin}
        changed = True
        while changed:
            changed = False
            for origin, rules in self.by_origin.items():
                for rule in rules:
                    exp = rule.expansion
                    if origin not in nullable and all(isinstance(s, NonTerminal) and s.name in nullable for s in exp):
                        nullable.add(origin)
                        changed = True
                    for seq, table, idx in ((exp, first, 0), (list(reversed(exp)), last, 1)):
                        for sym in seq:
                            add = {self.classes[sym.name][idx]} if isinstance(sym, Terminal) else table[sym.name]
                            if not add <= table[origin]:
                                table[origin] |= add
                                changed = True
                            if isinstance(sym, Terminal) or sym.name not in nullable:
                                break
        self.nullable, self.first, self.last = nullable, first, last

    def first_of(self, seq, follow_w: bool) -> set[str]:
        """The classes that may start what ``seq`` (then the context) derives (W only for context)."""
        out: set[str] = set()
        for sym in seq:
            if isinstance(sym, Terminal):
                return out | {self.classes[sym.name][0]}
            out |= self.first[sym.name]
            if sym.name not in self.nullable:
                return out
        return out | ({W} if follow_w else set())

    def variant(self, name: str, end: str, no_m: bool, no_w: bool) -> tuple:
        if W not in self.last[name] and end == "closed":
            end = "free"
        no_m = no_m and M in self.first[name]
        no_w = no_w and W in self.first[name]
        return name, end, no_m, no_w

    @staticmethod
    def vname(key: tuple) -> str:
        name, end, no_m, no_w = key
        base = ("_" + name.lstrip("_")) if name.startswith("_") else name
        tag = {"free": "", "bare": "b", "closed": "c"}[end] + ("m" if no_m else "") + ("n" if no_w else "")
        return f"{base}__{tag}" if tag else base

    def build(self) -> str:
        self.analyse()
        if self.nullable:
            raise ValueError(f"the source must have no nullable rules: {sorted(self.nullable)}")
        out_rules: dict[str, list[str]] = {}
        todo = [("start", "free", False, False)]
        seen = set(todo)

        def use(key: tuple) -> str:
            if key not in seen:
                seen.add(key)
                todo.append(key)
            return self.vname(key)

        def expand(exp, i: int, end: str, no_m: bool, no_w: bool) -> list[list[str]]:
            """Emitted sequences for exp[i:] whose last token obeys ``end`` (free: nothing that
            starts with a word follows; bare: it is a word without whitespace after it; closed: it
            is not such a bare word); ``no_m``/``no_w``: the first token may not start with "-" /
            a word character."""
            if i == len(exp):
                return [[]]
            sym = exp[i]
            rest = exp[i + 1 :]
            if not rest:
                modes = [(end, False)]
            else:
                nxt = self.first_of(rest, False)
                if W not in nxt:
                    modes = [("free", False)]
                elif nxt == {W}:
                    modes = [("closed", False)]
                else:
                    # A word may follow or not. Splitting into "bare word, then no word" and
                    # "separated" would be exact but doubles the expression rules (and the
                    # matcher's work); the source inlines the common cases instead.
                    modes = [("closed", False)]
            results = []
            for mode, next_no_w in modes:
                if isinstance(sym, Terminal):
                    start, cls = self.classes[sym.name]
                    if (no_m and start == M) or (no_w and start == W):
                        return []
                    if cls == O:
                        if mode == "bare":
                            continue
                        results += [[self.emitted(sym.name, "any")] + t for t in expand(exp, i + 1, end, False, next_no_w)]
                    elif cls == W:
                        form = {"free": "any", "bare": "bare", "closed": "sep"}[mode]
                        results += [[self.emitted(sym.name, form)] + t for t in expand(exp, i + 1, end, False, next_no_w)]
                    else:  # "-": bare only before something that does not start with "-"
                        if mode == "bare":
                            continue
                        if rest:
                            results += [[self.emitted(sym.name, "bare")] + t for t in expand(exp, i + 1, end, True, next_no_w)]
                        results += [[self.emitted(sym.name, "sep")] + t for t in expand(exp, i + 1, end, False, next_no_w)]
                else:
                    key = self.variant(sym.name, mode, no_m, no_w)
                    results += [[use(key)] + t for t in expand(exp, i + 1, end, False, next_no_w)]
            return results

        while todo:
            key = todo.pop()
            name, end, no_m, no_w = key
            alts = []
            for rule in self.by_origin[name]:
                alias = f" -> {rule.alias}" if rule.alias else ""
                for seq in expand(rule.expansion, 0, end, no_m, no_w):
                    alts.append(" ".join(seq) + alias)
            out_rules[self._decl(name, self.vname(key))] = alts
        return self._render(self._prune(out_rules))

    @staticmethod
    def _prune(out_rules: dict[str, list[str]]) -> dict[str, list[str]]:
        """Drop variants that derive nothing (every alternative needs a variant that derives nothing)."""
        names = {decl.lstrip("?"): decl for decl in out_rules}
        productive: set[str] = set()
        changed = True
        while changed:
            changed = False
            for plain, decl in names.items():
                if plain in productive:
                    continue
                for alt in out_rules[decl]:
                    syms = alt.split("->")[0].split()
                    if all(sym not in names or sym in productive for sym in syms):
                        productive.add(plain)
                        changed = True
                        break
        pruned = {}
        for plain, decl in names.items():
            if plain not in productive:
                continue
            pruned[decl] = [
                alt for alt in out_rules[decl] if all(sym not in names or sym in productive for sym in alt.split("->")[0].split())
            ]
        return pruned

    def _decl(self, origin: str, variant: str) -> str:
        rule = self.by_origin[origin][0]
        if origin.startswith("_"):
            return variant
        if origin == "start":
            return "sql"
        return ("?" if rule.options.expand1 else "") + variant

    def _render(self, out_rules: dict[str, list[str]]) -> str:
        lines = [
            "// SQLite's statement language (https://sqlite.org/lang.html) as SQLite 3.40 parses it.",
            "// GENERATED by tests/sqlite_grammar_build.py from grammars/src/sqlite.lark: edit that file.",
            "// Whitespace is part of the token before it and comments are ignored; a word may follow a word",
            "// only across whitespace, a bare '-' not before a '-' (see the build script). Start rule: start.",
            "",
        ]
        lines.append("start: _LEAD? sql")
        for name in sorted(out_rules, key=lambda n: (n.lstrip("?_"), n)):
            bodies = []
            for b in out_rules[name]:
                if b not in bodies:
                    bodies.append(b)
            plain = name.lstrip("?")
            alias = ""
            if "__" in plain and not plain.startswith("_") and not name.startswith("?"):
                alias = " -> " + plain.rsplit("__", 1)[0]
            rendered = []
            for b in bodies:
                if "->" in b:
                    rendered.append(b)
                else:
                    rendered.append(b + alias)
            lines.append(f"{name}: " + "\n    | ".join(r if r.strip() else "" for r in rendered))
        lines.append("")
        lines.append("_LEAD: /" + SEP + "/")
        lines.append("COMMENT: /" + COMMENT.replace("/", "\\/") + "/")
        lines.append("%ignore COMMENT")
        used = set()
        for bodies in out_rules.values():
            for b in bodies:
                used.update(tok for tok in b.split() if tok[:1].isupper() or tok.startswith("_K_") or tok.startswith("_") and tok[1:2].isupper())
        sep = SEP
        for name in sorted(self.terms):
            tdef = self.terms[name]
            pat = tdef.pattern
            core = re.escape(pat.value) if isinstance(pat, PatternStr) else pat.value
            if isinstance(pat, PatternStr) and "i" in pat.flags:
                core = f"(?i:{core})"
            core = "(?:" + core.replace("/", "\\/") + ")"
            forms = {self.emitted(name, "any"): f"{core}(?:{sep})?"}
            if self.classes[name][1] != O:
                forms[self.emitted(name, "sep")] = f"{core}{sep}"
                forms[self.emitted(name, "bare")] = core
            for tname in sorted(forms):
                if tname in used:
                    lines.append(f"{tname}: /{forms[tname]}/")
        return "\n".join(lines) + "\n"


def build() -> str:
    return Build(SOURCE.read_text(encoding="utf-8")).build()


def main() -> int:
    text = build()
    if "--check" in sys.argv[1:]:
        if TARGET.read_text(encoding="utf-8") != text:
            print(f"{TARGET} is stale: run python tests/sqlite_grammar_build.py", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET} ({len(text.splitlines())} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
