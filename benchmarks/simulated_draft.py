"""A simulated black-box SQL draft: it means one known query and writes it with realistic mistakes.

Standard library only (plus the ``tokenizers`` package when it counts tokens with the SmolLM2
tokenizer), because the same file runs inside grammar-guide 0.0.11's own venv.

The draft "intends" a SQLite-valid query. Each call writes the rest of that query from the point
that matches the text it is given, with mistakes drawn afresh, at fixed rates, from a random
generator seeded by (seed, call number):

- PostgreSQL slips: ``ILIKE`` for ``LIKE``, ``expr::type`` for ``CAST(expr AS type)``,
  ``FETCH FIRST n ROWS ONLY`` for ``LIMIT n``;
- a misspelt keyword (a letter dropped or two swapped);
- a trailing comma before ``FROM``; a doubled ``)``;
- prose before the answer, a code fence around it, an explanation after it (first call only);
- stopping early: the call ends at a random point of its answer.

(Backtick identifiers, MySQL's other habit, are valid SQLite, so they are not a grammar mistake.)
A continuation is aligned to the intended query lexeme by lexeme (case-insensitive words), so a
repaired word or a target-chosen token does not throw the draft off its plan.

Billing is as an API's: ``tokens_in`` = tokens of the prompt + the text given, ``tokens_out`` =
tokens streamed. A stream is a generator of token-sized chunks, and a token counts as billed when
it is yielded: closing the stream early stops the bill there.
"""

from __future__ import annotations

import difflib
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["CallRecord", "MistakeRates", "SimulatedSQLDraft", "TokenCounter", "lex"]


# -- tokens ------------------------------------------------------------------------------------


class TokenCounter:
    """Splits text into token-sized chunks: the SmolLM2 tokenizer (``tokenizer.json``) or, with no
    file, a fixed rule of 4 characters a token."""

    def __init__(self, tokenizer_file: str | Path | None = None) -> None:
        self._tok: Any = None
        self.rule = "chars/4"
        if tokenizer_file is not None:
            from tokenizers import Tokenizer

            self._tok = Tokenizer.from_file(str(tokenizer_file))
            self.rule = "SmolLM2 tokenizer"

    def split(self, text: str) -> list[str]:
        if not text:
            return []
        if self._tok is None:
            return [text[i : i + 4] for i in range(0, len(text), 4)]
        enc = self._tok.encode(text, add_special_tokens=False)
        starts = sorted({s for s, _ in enc.offsets if 0 <= s < len(text)} | {0})
        return [text[a:b] for a, b in zip(starts, [*starts[1:], len(text)], strict=True) if b > a]

    def count(self, text: str) -> int:
        if not text:
            return 0
        if self._tok is None:
            return -(-len(text) // 4)
        return len(self._tok.encode(text, add_special_tokens=False).ids)


# -- lexing ------------------------------------------------------------------------------------

_LEXEME = re.compile(
    r"""
     (?P<ws>\s+)
    |(?P<comment>--[^\n]*|/\*.*?(?:\*/|$))
    |(?P<str>[xX]?'(?:[^']|'')*'?)
    |(?P<qid>"(?:[^"]|"")*"?|`(?:[^`]|``)*`?|\[[^\]]*\]?)
    |(?P<num>0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
    |(?P<word>[A-Za-z_][A-Za-z0-9_$]*)
    |(?P<param>[?:@$][A-Za-z0-9_]*)
    |(?P<op>\|\||<<|>>|<=|>=|==|!=|<>|->>|->|.)
    """,
    re.X | re.S,
)


@dataclass(frozen=True)
class Lexeme:
    kind: str
    text: str
    start: int

    @property
    def end(self) -> int:
        return self.start + len(self.text)

    @property
    def key(self) -> str:
        return self.text.upper() if self.kind == "word" else self.text


def lex(text: str) -> list[Lexeme]:
    """All lexemes of ``text``, white space and comments included."""
    return [Lexeme(m.lastgroup or "op", m.group(), m.start()) for m in _LEXEME.finditer(text)]


_KEYWORDS = frozenset(
    [
        "SELECT",
        "FROM",
        "WHERE",
        "GROUP",
        "ORDER",
        "BY",
        "HAVING",
        "LIMIT",
        "OFFSET",
        "JOIN",
        "LEFT",
        "RIGHT",
        "INNER",
        "OUTER",
        "CROSS",
        "ON",
        "USING",
        "AND",
        "OR",
        "NOT",
        "NULL",
        "AS",
        "DISTINCT",
        "UNION",
        "ALL",
        "EXCEPT",
        "INTERSECT",
        "CASE",
        "WHEN",
        "THEN",
        "ELSE",
        "END",
        "BETWEEN",
        "EXISTS",
        "IN",
        "IS",
        "INSERT",
        "INTO",
        "VALUES",
        "UPDATE",
        "SET",
        "DELETE",
        "WITH",
        "RECURSIVE",
        "CREATE",
        "TABLE",
        "VIEW",
        "INDEX",
        "DROP",
        "PRIMARY",
        "KEY",
        "DEFAULT",
        "ASC",
        "DESC",
        "LIKE",
        "GLOB",
        "COLLATE",
        "NATURAL",
        "WINDOW",
        "OVER",
        "PARTITION",
    ]
)


# -- the draft ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class MistakeRates:
    """How often each kind of mistake is made where it can be (per site, per call)."""

    dialect: float = 0.5  # LIKE -> ILIKE, CAST -> ::, LIMIT -> FETCH FIRST
    misspelt_keyword: float = 0.03  # per keyword
    trailing_comma: float = 0.1  # per FROM that follows a list
    extra_paren: float = 0.03  # per ")"
    prose_before: float = 0.3  # first call
    code_fence: float = 0.3  # first call
    prose_after: float = 0.3  # first call, when the answer is complete
    early_stop: float = 0.15  # per call


_PROSE_BEFORE = ("Sure! Here is the SQLite query:\n\n", "Here's a query that does this:\n", "The query is:\n\n")
_PROSE_AFTER = ("\n\nThis query returns the requested rows.", "\n\nLet me know if you need changes!")


@dataclass
class CallRecord:
    """One call: what it was given, what it planned to write, and what was billed."""

    prefix: str
    planned: str
    tokens_in: int
    tokens_out: int = 0
    streamed: str = ""
    finish_reason: str = ""


@dataclass
class SimulatedSQLDraft:
    """A draft that means ``intended`` and writes it with mistakes (see the module docstring)."""

    intended: str
    seed: int
    counter: TokenCounter = field(default_factory=TokenCounter)
    rates: MistakeRates = field(default_factory=MistakeRates)
    calls: list[CallRecord] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lexemes = lex(self.intended)
        self._solid = [x for x in self._lexemes if x.kind not in ("ws", "comment")]

    # -- usage -------------------------------------------------------------------------------

    @property
    def tokens_in(self) -> int:
        return sum(c.tokens_in for c in self.calls)

    @property
    def tokens_out(self) -> int:
        return sum(c.tokens_out for c in self.calls)

    # -- writing ------------------------------------------------------------------------------

    def plan(self, prefix: str, max_new_tokens: int) -> tuple[list[str], str]:
        """The token chunks the next call will write after ``prefix``, and its finish reason."""
        rng = random.Random(f"{self.seed}:{len(self.calls)}")
        start = self.align(prefix)
        body = self._render(start, rng)
        if not prefix.strip():
            if rng.random() < self.rates.code_fence:
                body = "```sql\n" + body + "\n```"
            if rng.random() < self.rates.prose_before:
                body = rng.choice(_PROSE_BEFORE) + body
            if rng.random() < self.rates.prose_after:
                body += rng.choice(_PROSE_AFTER)
        chunks = self.counter.split(body)
        finish = "stop"
        if len(chunks) > 2 and rng.random() < self.rates.early_stop:
            chunks = chunks[: rng.randrange(1, len(chunks))]
        if len(chunks) > max_new_tokens:
            chunks, finish = chunks[:max_new_tokens], "length"
        return chunks, finish

    def stream(self, prompt: str, prefix: str = "", max_new_tokens: int = 256, call: Any = None) -> Iterator[str]:
        """Stream the next call's chunks; ``call`` (a ``DraftCall``) gets the usage as it grows."""
        chunks, finish = self.plan(prefix, max_new_tokens)
        record = CallRecord(prefix, "".join(chunks), self.counter.count(prompt) + self.counter.count(prefix))
        self.calls.append(record)
        if call is not None:
            call.tokens_in, call.tokens_out = record.tokens_in, 0
        for chunk in chunks:
            record.tokens_out += 1
            record.streamed += chunk
            if call is not None:
                call.tokens_out = record.tokens_out
            yield chunk
        record.finish_reason = finish
        if call is not None:
            call.finish_reason = finish

    def complete(self, prompt: str, prefix: str = "", max_new_tokens: int = 256) -> str:
        """The next call's whole answer at once (a non-streaming API call: every token billed)."""
        return "".join(self.stream(prompt, prefix, max_new_tokens))

    def as_function(self) -> Any:
        """A streaming ``fn(prompt, prefix, max_new_tokens, call)`` for ``grammar_guide.guide``."""

        def simulated_sql_draft(prompt: str, prefix: str, max_new_tokens: int = 256, call: Any = None) -> Iterator[str]:
            yield from self.stream(prompt, prefix, max_new_tokens, call)

        return simulated_sql_draft

    # -- alignment ----------------------------------------------------------------------------

    def align(self, prefix: str) -> int:
        """The offset in the intended query from which to continue after ``prefix``."""
        if not prefix.strip():
            return 0
        given = [x for x in lex(prefix) if x.kind not in ("ws", "comment")]
        partial: Lexeme | None = None
        if given and given[-1].end == len(prefix) and given[-1].kind in ("word", "num", "str", "qid"):
            partial = given.pop()  # the last word may be unfinished
        ours = self._solid
        j = 0
        matcher = difflib.SequenceMatcher(None, [x.key for x in given], [x.key for x in ours], autojunk=False)
        n = len(given)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if i1 >= n and tag != "equal":
                break
            if tag == "equal":
                j = j2
            elif tag == "replace":
                j = min(j2, j1 + (i2 - i1))
            elif tag == "insert":
                j = j2
        if j >= len(ours):
            return len(self.intended)
        if partial is not None:
            target = ours[j]
            if target.key.upper().startswith(partial.key.upper()) and len(partial.text) < len(target.text):
                return target.start + len(partial.text)
            if target.key.upper() == partial.key.upper():
                return target.end
            # A different word stands where ours was: go on after ours.
            return target.end
        if prefix[-1:].isspace() or j == 0:
            return ours[j].start
        return ours[j - 1].end

    # -- mistakes ------------------------------------------------------------------------------

    def _render(self, offset: int, rng: random.Random) -> str:
        lexemes = self._lexemes
        out: list[str] = []
        i = 0
        while i < len(lexemes) and lexemes[i].end <= offset:
            i += 1
        if i < len(lexemes) and lexemes[i].start < offset:
            out.append(lexemes[i].text[offset - lexemes[i].start :])
            i += 1
        rates = self.rates
        while i < len(lexemes):
            x = lexemes[i]
            upper = x.text.upper()
            if x.kind == "word" and upper == "LIKE" and rng.random() < rates.dialect:
                out.append("ILIKE" if x.text.isupper() else "ilike")
            elif x.kind == "word" and upper == "CAST" and rng.random() < rates.dialect:
                cast = self._pg_cast(i)
                if cast is None:
                    out.append(x.text)
                else:
                    text, i = cast
                    out.append(text)
                    continue
            elif x.kind == "word" and upper == "LIMIT" and rng.random() < rates.dialect:
                fetch = self._fetch_first(i)
                if fetch is None:
                    out.append(x.text)
                else:
                    text, i = fetch
                    out.append(text)
                    continue
            elif x.kind == "word" and upper == "FROM" and rng.random() < rates.trailing_comma:
                previous = next((y for y in reversed(lexemes[:i]) if y.kind != "ws"), None)
                if previous is not None and (previous.kind in ("word", "qid", "num", "str") or previous.text == ")"):
                    # "a, b FROM" -> "a, b, FROM": the comma goes right after the list's last item.
                    if out and out[-1].isspace():
                        out.insert(len(out) - 1, ",")
                    else:
                        out.append(", ")
                out.append(x.text)
            elif x.kind == "word" and upper in _KEYWORDS and len(x.text) > 2 and rng.random() < rates.misspelt_keyword:
                out.append(_misspell(x.text, rng))
            elif x.text == ")" and rng.random() < rates.extra_paren:
                out.append("))")
            else:
                out.append(x.text)
            i += 1
        return "".join(out)

    def _pg_cast(self, i: int) -> tuple[str, int] | None:
        """``CAST(expr AS type)`` at lexeme ``i`` written ``expr::type``; the next lexeme index."""
        lexemes = self._lexemes
        j = i + 1
        while j < len(lexemes) and lexemes[j].kind == "ws":
            j += 1
        if j >= len(lexemes) or lexemes[j].text != "(":
            return None
        depth, as_at, k = 0, None, j
        while k < len(lexemes):
            t = lexemes[k].text
            if t == "(":
                depth += 1
            elif t == ")":
                depth -= 1
                if depth == 0:
                    break
            elif depth == 1 and t.upper() == "AS" and lexemes[k].kind == "word":
                as_at = k
            k += 1
        if k >= len(lexemes) or as_at is None:
            return None
        expr = "".join(x.text for x in lexemes[j + 1 : as_at]).strip()
        type_ = "".join(x.text for x in lexemes[as_at + 1 : k]).strip()
        simple = len([x for x in lex(expr) if x.kind != "ws"]) == 1
        return (expr if simple else f"({expr})") + "::" + type_, k + 1

    def _fetch_first(self, i: int) -> tuple[str, int] | None:
        """``LIMIT n`` (n a number, no OFFSET after) written ``FETCH FIRST n ROWS ONLY``."""
        lexemes = self._lexemes
        j = i + 1
        while j < len(lexemes) and lexemes[j].kind == "ws":
            j += 1
        if j >= len(lexemes) or lexemes[j].kind != "num":
            return None
        k = j + 1
        while k < len(lexemes) and lexemes[k].kind == "ws":
            k += 1
        if k < len(lexemes) and (lexemes[k].text.upper() == "OFFSET" or lexemes[k].text == ","):
            return None
        return f"FETCH FIRST {lexemes[j].text} ROWS ONLY", j + 1


def _misspell(word: str, rng: random.Random) -> str:
    k = rng.randrange(1, len(word) - 1)
    if rng.random() < 0.5:
        return word[:k] + word[k + 1 :]  # a letter dropped
    return word[:k] + word[k + 1] + word[k] + word[k + 2 :]  # two letters swapped
