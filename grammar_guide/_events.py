"""What happened in a guided generation: the events, in order, and the run's statistics.

Events are plain frozen dataclasses; offsets are in characters of the final text's coordinate
system at the time of the event (the accepted text never shrinks except by a ``Cut``). Reasons are
``Literal`` types; free text goes in ``detail``. This module imports nothing of the package:
the result (``_trace``) and its renderings (``_html``) both build on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = [
    "REWRITE_RULES",
    "Alternative",
    "Correction",
    "CorrectionReason",
    "Cut",
    "CutReason",
    "DraftSpan",
    "EditRule",
    "Event",
    "GrammarRefused",
    "GrammarViolation",
    "GuideStats",
]

CorrectionReason = Literal["violation", "forced", "finish", "stalled"]
"""Why text was inserted: ``violation`` (the draft broke the grammar here), ``forced`` (the
grammar allowed only this text before the draft went on), ``finish`` (a budget ran out and the text
was completed; ``detail`` names the budget), ``stalled`` (the draft added nothing the grammar
allows)."""

EditRule = Literal["edit", "rewrite", "inert", "prose", "repeat", "resync", "line break", "space"]
"""What kind of repair an edit was: ``rewrite``, one of the grammar's known slips of another
dialect rewritten to what it means (``x::int`` to ``CAST(x AS int)``: the draft's meaning kept);
``inert``, a rewrite that leaves out a clause of another dialect with no effect where the text
runs (SQL's ``GROUP BY ()``, ``FOR UPDATE``: the same rows; the draft's meaning kept);
``edit``, the least edit of the draft's text that lets it go on parsing (a dropped, inserted or
replaced lexeme: the draft's text changed); ``prose``, a sentence the draft wrote where its
answer goes (``The answer is 3 + 4``) left out, the answer read on after it; ``repeat``, a word
the draft wrote twice in a row (``MAX MAX(age)``) written once (nothing it meant changed);
``resync``, where no edit fixed a violation and no model may write, the fewest of the draft's
lexemes dropped after which its own text reads on (``THEN x`` of ``SUM(a = 1 THEN x) - …``):
the draft's text dropped, recorded, never faithful); ``line break``, a line break the draft's
text lost, written where a line comment of it swallowed its code (an answer stored on one line:
``-- Step 1: … WITH s AS (…``): the draft's words all kept, the break named); ``space``, white
space of a kind the grammar does not take where the draft wrote it (a vertical tab, a no-break
space, U+2009) written as the plain space or line break it stands for: formatting, the draft's
words all kept."""

#: The rules of the grammar's known slips, each written as what it means.
REWRITE_RULES: frozenset[str] = frozenset({"rewrite", "inert"})

CutReason = Literal[
    "preamble",
    "after complete text",
    "another answer",
    "restated",
    "stop",
    "dead end",
    "unfinished",
    "unrepaired",
    "formatting",
    "budget",
    "prose",
    "repeated",
    "limit",
]
"""Why drafted text was left out: ``preamble`` (prose before the answer), ``after complete text``
(a closing fence or an explanation after a complete answer), ``another answer`` (after a complete
answer, the draft began another: a second SQL statement, with any comment before it),
``unfinished`` (the draft's last words, which only invented text could finish, taken back to where
closing marks end the text: ``WHERE id = ``), ``restated`` (a restating draft
repeated accepted text), ``stop`` (from a stop string on), ``dead end`` (a word the text could
never be completed after, taken back before the target wrote), ``unrepaired`` (the rejected
text after a violation that no edit fixed and no model could repair), ``formatting`` (chat
formatting that is not the answer: the backslashes of Markdown escapes, a backtick pair around
the answer), ``budget`` (a budget ran out: the draft's text from here on was not read, or not all
of it, and the result is not complete; ``detail`` names the budget), ``prose`` (a sentence or
document markup the draft wrote where code goes: never made into code), ``repeated`` (after a
complete answer, text that no edit fixes and whose every lexeme the answer already has: a model
repeating itself, ``ORDER BY age FROM singer ORDER BY age``; nothing of the answer is lost),
``limit`` (the end of a complete text that the language's own engine rejects for one of its
limits, ``Grammar.engine_limit``: SQLite's ``parser stack overflow`` past about 11 nested
subqueries; taken back to where closing brackets end it and the engine takes it)."""


@dataclass(frozen=True)
class Alternative:
    """A continuation the target considered, with its probability."""

    text: str
    probability: float


@dataclass(frozen=True)
class DraftSpan:
    """Text the draft wrote that was kept, at ``offset`` of the accepted text, from draft call ``call``."""

    offset: int
    text: str
    call: int
    kind: Literal["draft"] = "draft"


@dataclass(frozen=True)
class GrammarViolation:
    """The draft wrote ``rejected`` at ``offset``, where the grammar allows none of it.

    ``rejected`` is the drafted text thrown away from that point (what was streamed before the
    stream was closed). ``offset`` may lie before the end of the text accepted so far: a repair
    then took back the accepted text from ``offset`` on (the start of a misspelt word, a trailing
    comma), and ``rejected`` begins with that taken-back text. ``expected`` names the terminals
    that could come at ``offset``; ``line`` and ``column`` locate it.
    """

    offset: int
    rejected: str
    expected: tuple[str, ...]
    line: int
    column: int
    call: int
    kind: Literal["violation"] = "violation"


@dataclass(frozen=True)
class Correction:
    """Text inserted at ``offset`` by someone other than the draft.

    ``source`` is ``"target"`` (the target model chose it under the grammar mask), ``"forced"``
    (the grammar allowed only this), ``"healed"`` (the target re-chose the last token(s) of the
    accepted text at a token boundary; the text is unchanged), ``"repair"`` (an edit derived from
    the draft's rejected text: a dropped character, a nearest keyword) or ``"completion"`` (the
    grammar's shortest completion, which closed the text). ``reason`` says why it was
    needed (see ``CorrectionReason``); ``detail`` says in words what was changed ("dropped ','")
    or which budget ran out; ``alternatives`` are the target's top choices for its first token;
    ``seconds`` is the time it took.
    """

    offset: int
    text: str
    source: Literal["target", "forced", "healed", "repair", "completion"]
    reason: CorrectionReason = "violation"
    alternatives: tuple[Alternative, ...] = ()
    tokens: int = 0
    seconds: float = 0.0
    detail: str = ""
    #: For a ``repair``: a ``rewrite`` of a known slip or an ``edit`` (see ``EditRule``), and the
    #: draft's text it took away (the rewritten match; a dropped or replaced lexeme).
    rule: EditRule | None = None
    removed: str = ""
    kind: Literal["correction"] = "correction"


@dataclass(frozen=True)
class Cut:
    """Drafted text that is not part of the result, at ``offset``; ``reason`` says why (see
    ``CutReason``), ``detail`` adds free text.

    Like a violation's, ``offset`` may lie before the end of the accepted text: the accepted text
    from ``offset`` on (white space after a complete text) was taken back and begins ``text``.
    """

    offset: int
    text: str
    reason: CutReason
    call: int
    detail: str = ""
    kind: Literal["cut"] = "cut"


@dataclass(frozen=True)
class GrammarRefused:
    """The provider refused the grammar sent to its own engine, or it was not sent (``message``:
    the server's answer, an HTTP 400 "grammar too complex", say); draft call ``call`` then wrote
    freely, from ``offset``."""

    offset: int
    message: str
    call: int
    kind: Literal["grammar_refused"] = "grammar_refused"


Event = DraftSpan | GrammarViolation | Correction | Cut | GrammarRefused


@dataclass
class GuideStats:
    """Counts and timings of one guided generation.

    Token counts of the draft are as the provider reports them (``None`` when it does not).
    ``target_tokens`` are the tokens the target model chose (sampled, or re-chosen by token
    healing: ``healed_tokens`` of them); ``forced_tokens`` were appended without a model choice.
    ``discarded_tokens`` estimates drafted tokens thrown away (by the draft's own count where the
    provider gives one, else by characters / 4).

    ``path`` says which way the text was made: ``"native"``, the provider's own grammar engine
    wrote it (one draft call sent the grammar, and its text was kept whole with no correction);
    ``"speculative"``, no grammar was sent (the draft wrote freely, the checker and repairs kept
    it valid); ``"fallback"``, a grammar was sent but the provider refused it (``fallback_calls``)
    or did not enforce it (its text needed a correction, a cut, or another call).
    ``native_calls`` sent the grammar and were accepted. "The grammar" is whatever form the
    provider's engine takes: a Lark or GBNF grammar, or, for Anthropic's JSON-schema outputs, the
    JSON Schema a grammar was built from. What was billed is ``draft_tokens_in`` +
    ``draft_tokens_out``.
    """

    draft_calls: int = 0
    draft_tokens_in: int | None = None
    draft_tokens_out: int | None = None
    discarded_tokens: int = 0
    discarded_chars: int = 0
    target_tokens: int = 0
    forced_tokens: int = 0
    healed_tokens: int = 0
    corrections: int = 0
    prefill_tokens_saved: int = 0
    path: Literal["native", "speculative", "fallback"] = "speculative"
    native_calls: int = 0
    fallback_calls: int = 0
    draft_seconds: float = 0.0
    check_seconds: float = 0.0
    target_seconds: float = 0.0
    total_seconds: float = 0.0

    def add_draft_path(self, path: Literal["native", "speculative", "fallback"]) -> None:
        """Count one draft call's path (``DraftCall.path``)."""
        if path == "native":
            self.native_calls += 1
        elif path == "fallback":
            self.fallback_calls += 1

    def settle_path(self, cut: bool = False) -> None:
        """Set ``path`` from the calls and corrections counted so far, and whether any drafted
        text was cut (``cut``)."""
        # A server that enforced the grammar wrote the whole text in one call, all of it kept.
        not_enforced = cut or self.corrections or self.discarded_chars or self.draft_calls > self.native_calls
        if self.fallback_calls or (self.native_calls and not_enforced):
            self.path = "fallback"
        elif self.native_calls:
            self.path = "native"
        else:
            self.path = "speculative"

    def add_draft_usage(self, tokens_in: int | None, tokens_out: int | None) -> None:
        if tokens_in is not None:
            self.draft_tokens_in = (self.draft_tokens_in or 0) + tokens_in
        if tokens_out is not None:
            self.draft_tokens_out = (self.draft_tokens_out or 0) + tokens_out
