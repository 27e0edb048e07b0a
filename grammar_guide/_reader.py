"""Reading a draft's answer out of its raw stream: pure text heuristics, tested with plain strings.

A draft's stream is not always the answer. It may go on past a stop string or a closing code
fence, begin with prose ("Sure! Here is the query:"), restate text already accepted (see
``_align.Aligner``), or end the answer with an explanation. ``AnswerReader`` turns raw chunks into
the answer's text (holding back a tail that may begin a stop string); the functions below judge
text the checker rejected. Nothing here knows the loop or a model; where a grammar matters, the
caller passes a function that says how much of a text the grammar accepts.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from ._align import Aligner
from ._text import QUOTES

__all__ = [
    "AnswerReader",
    "answer_closer",
    "answer_start",
    "closing_fence",
    "fenced_blocks",
    "has_function_word",
    "looks_like_aside",
    "looks_like_prose",
    "names_before_sentence",
    "partial_match",
    "prose_after_answer",
    "prose_line",
    "prose_run",
    "reads_as_code",
    "sentence_end",
    "sentence_start",
    "string_past_code_end",
    "trailing_word",
]

PREAMBLE_LIMIT = 2000
"""Characters of prose read before the answer before giving up on finding one."""

_FENCE = re.compile(r"\n[ \t]*```(?P<tag>[ \t]*[A-Za-z])?")
_FENCE_LINE = re.compile(r"(?m)(?:^|(?<=[ \t:!?.]))[ \t]*```[\w+-]*[ \t]*(?:\n|(?=[\[{]))")
_BLANK_LINE = re.compile(r"\n[ \t]*\n")
_SENTENCE = re.compile(r"[ \t\n]*[A-Z][a-z]+(?:[ \t]+[a-z][\w'’]*){2}")
#: A backtick that opens one word closed by an apostrophe or acute accent at its line's end
#: (`` `foo' ``, TeX's quotes): the word's quote, not chat formatting.
_TICK_QUOTED_WORD = re.compile(r"`[^`\u00b4'\"\s]+['\u00b4][ \t]*(?:\n|\Z)")
#: A word, then a backtick that opens code repeating it (`` SELECT `SELECT a FROM t` ``); and
#: what may still become one.
_ECHO_BEFORE_TICK = re.compile(r"[ \t\n]*(\w+)[ \t]+(?=`(?!`)\1\b)", re.IGNORECASE)
_ECHO_BEGUN = re.compile(r"[ \t\n]*\w+(?:[ \t]+(?:`\w*)?)?")
_CODE_TOKEN = re.compile(r"[=(){}\[\];\"<>]|\w\.\w")


@dataclass
class AnswerReader:
    """Raw chunks in, the draft's answer text out: ends at a stop string or (with ``fences``) a
    code fence that closes the answer; a tail that may begin one is held back until the next
    chunk; with an ``aligner`` (a draft that may restate), only the new text passes.

    ``raw`` is everything the draft streamed; ``stopped_text`` what came from the stop on.
    """

    stops: tuple[str, ...] = ()
    fences: bool = True
    aligner: Aligner | None = None
    raw: str = ""
    held: str = ""
    stopped_text: str = ""
    unescaped: int = 0  # Markdown escapes undone (``\_`` read as ``_``)
    echoed: str = ""  # a word before the opening backtick that the code repeats, dropped
    _in_name: bool = False  # inside a name in backticks, in an answer in a backtick pair
    ticks: int = 0  # stray backticks dropped (a pair around the answer)
    _quote: str = ""
    _backslash: bool = False
    _ticked: bool | None = None  # whether the answer opened with a stray backtick (None: not yet known)
    _tick_wait: str = ""  # the stream's start, until its first two characters say
    _tick_tail: str = ""  # a backtick and white space that may end the stream
    _closer: tuple[str, int] | None = None  # a mark that ends the answer, searched in ``raw`` from there

    def close_with(self, mark: str) -> None:
        """The answer began in inline code: the next ``mark`` (its backtick) still to come ends it."""
        self._closer = (mark, len(self.raw) - len(self.held))

    def stop_in(self, text: str, at: int) -> str:
        """``text`` (the answer so far) ends at ``at``: the rest is what came from the stop on."""
        self.stopped_text = text[at:] + self.held + self.stopped_text
        self.held = ""
        return text[:at]

    def push(self, chunk: str, answer_started: bool) -> tuple[str, bool]:
        """The answer's text in ``chunk`` (after what was held back), and whether it stopped."""
        text, stopped = self._stop(chunk, answer_started)
        text = self._unescape(text, final=stopped)
        return self.align(text), stopped or bool(self.stopped_text)

    def align(self, text: str) -> str:
        return self.aligner.push(text) if self.aligner is not None else text

    @property
    def holding(self) -> bool:
        """Whether text is held back until the next chunk or the end: what may begin a stop
        string, a backtick that may end the answer, a backslash that may begin an escape."""
        return bool(self.held or self._tick_wait or self._tick_tail or self._backslash)

    def release(self) -> str:
        """The stream ended: what was held back is text after all."""
        held, self.held = self.held, ""
        return self.align(self._unescape(held, final=True))

    def _unescape(self, text: str, final: bool) -> str:
        """Undo chat formatting that is not the answer: a backtick pair around it
        (`` `SELECT 1` ``) and Markdown's ``\\_`` and ``\\*`` outside quotes (``e.event\\_name``), and
        inside them once one outside was undone (Markdown escaped the whole answer), in a string that is
        no LIKE pattern (no ``%``: in ``'a\\_%'`` the escape may be MySQL's for a literal ``_``).
        A backslash at the end of a chunk waits for the next."""
        text = self._drop_ticks(text, final)
        if self._backslash:
            text, self._backslash = "\\" + text, False
        out: list[str] = []
        i = 0
        while i < len(text):
            ch = text[i]
            if ch == "\n":
                self._quote = ""  # strings in the grammars we serve do not span lines
            elif self._quote:
                if ch == self._quote:
                    self._quote = ""
                elif ch == "\\" and self.unescaped and _escape_in_plain_string(text, i, self._quote):
                    self.unescaped += 1  # the answer's Markdown escapes its strings too ('TR004\\_8')
                    i += 1
                    continue
                elif ch == "\\":
                    out.append(text[i : i + 2])
                    i += 2
                    continue
            elif ch in "'\"":
                self._quote = ch
            elif ch == "\\":
                if i + 1 == len(text) and not final:
                    self._backslash = True
                    break
                if text[i + 1 : i + 2] in ("_", "*"):
                    self.unescaped += 1
                    i += 1
                    continue
            out.append(ch)
            i += 1
        return "".join(out)

    def _drop_ticks(self, text: str, final: bool) -> str:
        """A single backtick that opens the stream (not a fence, not ``` `` ```, not a word's
        quote: `` `foo' ``) and its partner are chat formatting, not the answer: both are dropped,
        and text after the partner ends the answer (`` `SELECT 1`  Write SQL for … ``). A word
        before the opening backtick that the code inside repeats (`` SELECT `SELECT 1` ``: a
        runner that wrote its prompt's last word before the model's answer) is no answer either
        (``echoed``)."""
        if self._ticked is None:
            text, self._tick_wait = self._tick_wait + text, ""
            if _ECHO_BEGUN.fullmatch(text) and not final:
                self._tick_wait, text = text, ""  # a word, then maybe a backtick that repeats it
                return text
            echo = _ECHO_BEFORE_TICK.match(text)
            if echo is not None:
                self.echoed, text = echo.group(), text[echo.end() :]
            lead = len(text) - len(text.lstrip())
            head = text[lead : lead + 2]
            if not head or (head == "`" and not final):
                if not final:
                    self._tick_wait, text = text, ""  # white space or one backtick so far: wait for more
                return text
            self._ticked = head[0] == "`" and head != "``" and not _TICK_QUOTED_WORD.match(text, lead)
            if not self._ticked:
                return text
            self.ticks += 1
            text = text[:lead] + text[lead + 1 :]
        if not self._ticked:
            return text
        text, self._tick_tail = self._tick_tail + text, ""
        end = re.search(r"`\s*$", text)
        partner = self._partner(text if end is None else text[: end.start()])
        if partner is not None:
            self.ticks += 1  # the pair's partner, with more text after it: the answer ends there
            return self.stop_in(text[:partner] + text[partner + 1 :], partner)
        if end is None:
            return text
        if not final:
            self._tick_tail = text[end.start() :]  # the partner if nothing follows it
            return text[: end.start()]
        self.ticks += 1
        return text[: end.start()] + text[end.start() + 1 :]

    def _partner(self, text: str) -> int | None:
        """Where in ``text`` (of an answer in a backtick pair) the pair's partner is: a backtick
        that neither opens a name (a word follows it: `` `SELECT `a` FROM t` ``) nor closes one."""
        for tick in re.finditer("`", text):
            if self._in_name:
                self._in_name = False
            elif re.match(r"[\w$]", text[tick.end() : tick.end() + 1]):
                self._in_name = True
            else:
                return tick.start()
        return None

    def _stop(self, chunk: str, answer_started: bool) -> tuple[str, bool]:
        self.raw += chunk
        raw = self.raw
        pending = self.held + chunk
        self.held = ""
        ends = [raw.find(s) for s in self.stops]
        if self.fences:
            ends.append(closing_fence(raw, answer_started))
        if self._closer is not None:
            ends.append(raw.find(*self._closer))
        tag = _SQUARE_TAG.search(raw)  # '[SOL]': its close ends the answer
        if tag is not None:
            ends.append(closing_tag(raw, tag))
        ends = [i for i in ends if i >= 0]
        if ends:
            offset = max(min(ends) - (len(raw) - len(pending)), 0)
            self.stopped_text = pending[offset:]
            return pending[:offset], True
        markers = self.stops + (("\n```",) if self.fences else ()) + ((f"[/{tag.group(1)}]",) if tag else ())
        hold = min(max((partial_match(raw, m) for m in markers), default=0), len(pending))
        self.held = pending[len(pending) - hold :]
        return pending[: len(pending) - hold], False


def _answer_line(line: str) -> bool:
    """Whether ``line`` may be a line of the answer: not blank, not a line introducing what follows
    (ending in ``:``), not a line of prose (``prose_line``)."""
    line = line.strip()
    return bool(line) and not line.endswith(":") and not prose_line(line + "\n")


def _escape_in_plain_string(text: str, i: int, quote: str) -> bool:
    """Whether the backslash at ``text[i]`` escapes ``_`` or ``*`` in a string (opened by ``quote``
    in ``text``, closed after it) that has no ``%``: no LIKE pattern, where it may be the query's."""
    start, end = text.rfind(quote, 0, i), text.find(quote, i + 2)
    return text[i + 1 : i + 2] in ("_", "*") and start >= 0 and end >= 0 and "%" not in text[start:end]


def closing_tag(raw: str, opened: re.Match[str]) -> int:
    """Where the close of the square-bracket tag ``opened`` that opened the answer (sqlcoder's
    ``[SOL] … [/SOL]``) starts in ``raw``, or -1 (SQLite would read ``[/SOL]`` as a table's alias)."""
    closing = re.compile(rf"\[/\s*{re.escape(opened.group(1))}\s*\]", re.IGNORECASE).search(raw, opened.end())
    return closing.start() if closing else -1


def closing_fence(raw: str, answer_started: bool) -> int:
    """Where a code fence that closes an answer starts in ``raw``, or -1.

    A bare fence at a line start closes when an earlier fence (anywhere in a line: "Sure!
    ```sql") opened and answer lines came between, or when no fence opened and the answer had
    already started. A fence with a language tag opens, unless answer lines came before it (since
    the last fence) on those terms: then it ends them (``SELECT a FROM t\n```sql\n\nThis query``,
    a model that tags its closing fence or opens a second block); lines of prose alone before it
    (``Sure! Here is the query:``, read as the answer's start while streamed) are no answer lines."""
    for match in _FENCE.finditer(raw):
        lines = raw[: match.start()].split("\n")
        fence_lines = [i for i, line in enumerate(lines) if "```" in line]
        since = lines[fence_lines[-1] + 1 if fence_lines else 0 :]
        answered = any(line.strip() for line in since)
        if match.group("tag") and not any(_answer_line(line) for line in since):
            continue  # a tagged fence after prose alone ("Here is the query:") opens the answer
        if fence_lines:
            if answered:
                return match.start()
        elif answer_started:
            return match.start()
    return -1


_OPENING_FENCE = re.compile(r"(?m)^[ \t]*```([\w+-]*)[ \t]*\n")
_CLOSING_FENCE = re.compile(r"(?m)\n[ \t]*```[ \t]*$")


def fenced_blocks(stopped: str, language: str) -> list[tuple[int, int]]:
    """The fenced blocks after an answer's closing fence: ``stopped`` is the text from that fence
    on (``\n```\nMore:\n```json\n{...}\n```\n``); each block's body as ``(start, end)``
    offsets in it, in order (a block left open ends with the text). A block tagged with another
    language than ``language`` (```` ```python ````) is not one of them."""
    first = stopped.find("```")
    if first < 0:
        return []
    blocks = []
    pos = first + 3
    while (opening := _OPENING_FENCE.search(stopped, pos)) is not None:
        closing = _CLOSING_FENCE.search(stopped, opening.end() - 1)
        end = closing.start() if closing else len(stopped)
        if stopped[opening.end() : end].strip() and opening.group(1).lower() in ("", language.lower()):
            blocks.append((opening.end(), end))
        if closing is None:
            break
        pos = closing.end()
    return blocks


def partial_match(text: str, marker: str) -> int:
    """Length of the longest tail of ``text`` that is a proper beginning of ``marker``."""
    for k in range(min(len(marker) - 1, len(text)), 0, -1):
        if text.endswith(marker[:k]):
            return k
    return 0


#: A list item's number before its stop (``2. Select distinct …``: a step of the reasoning, no introduction's end).
_LIST_NUMBER = re.compile(r"(?:\A|[^\w\s,'\"`)]\s*|\n\s*)\d{1,2}\Z")


def _list_number_before(text: str, stop: int) -> bool:
    """Whether ``text`` has a list item's number right before the stop at ``stop``."""
    return _LIST_NUMBER.search(text, max(0, stop - 8), stop) is not None


#: The mark that closes an introduction on its line: a colon after a word (not after a quote: JSON's
#: ``"ok": [1]``), a sentence's stop after a word, a number, a quote or a bracket (``equals 10.  SELECT``,
#: ``is 'x'.  SELECT``), Markdown's emphasis closed after either (``**Answer:**  SELECT``).
_INTRODUCTION_END = re.compile(r"(?:(?<=[A-Za-z]):|(?<=[\w'\"`)])[!?.])(?:\*\*|\*|__)?[ \t]+")
#: The start of a JSON object, where the grammar takes none (a model's answer written as JSON fields).
_JSON_OBJECT_START = re.compile(r'\{\s*"')
#: A JSON field a model writes its answer in, after its reasoning in another (``"SQL": "SELECT …"``).
_ANSWER_FIELD = re.compile(r'"(?:sql|query|answer|code)"\s*:\s*"', re.IGNORECASE)
#: A backtick that opens Markdown's inline code in prose (not a fence's, not a word's own).
_INLINE_CODE_OPENING = re.compile(r"(?<![`\w])`(?!`)")
#: A fence on the code's own line (``is:  ```sql SELECT a FROM t; ``` ``, ``is: ``` SELECT …``, a reply
#: made one line): the code starts after a language tag and a space, or after the backticks (and
#: spaces) where the word after them is whole (streamed, ``s`` may be the tag's start).
_INLINE_FENCE = re.compile(r"(?<!`)```[ \t]*(?=(?P<tag>[A-Za-z][\w+-]*[ \t]+(?=\S))?)(?=[^`\s]\w*\W)")
#: A label the draft gives its answer (``**Answer:** SELECT …``, ``Final answer:``): what follows
#: it is the answer, before any code quoted in the reasoning above it.
_ANSWER_LABEL = re.compile(r"(?:\*\*|__)?\b(?:final\s+)?answer(?:\*\*|__)?\s*:(?:\*\*|__)?[ \t]*\n?", re.IGNORECASE)


def answer_closer(preamble: str, start: int) -> str | None:
    """The mark that ends the answer found at ``start`` of ``preamble`` (``answer_start``), where
    it begins inside Markdown's inline code (``The query is `SELECT a FROM t`.``: a backtick) or
    a JSON field's string (``"SQL": "SELECT a FROM t" }``: a double quote); ``None`` otherwise."""
    if start > 0 and _INLINE_CODE_OPENING.match(preamble, start - 1) is not None:
        return "`"
    if any(m.end() == start for m in _ANSWER_FIELD.finditer(preamble, max(0, start - 40), start)):
        return '"'
    return None


def answer_start(preamble: str, accepts: Callable[[str], int], keywords: frozenset[str] = frozenset()) -> int | None:
    """Where the answer starts in prose the draft wrote first (a line start, the line after an
    opening fence, or after a colon or sentence end that closes the introduction on its line:
    ``Here is your JSON: {...``, ``Sure! {...``), or ``None`` if not yet seen.
    ``accepts(text)`` says how many characters of ``text`` the grammar accepts; an answer that
    begins with words has none of ``_is_function_word`` among its first three (``Select the
    names of the shops`` is a sentence; ``keywords``: the grammar's, in lower case)."""
    lines = [0] + [i + 1 for i, ch in enumerate(preamble) if ch == "\n"]
    ends = [m.end() for m in _INTRODUCTION_END.finditer(preamble) if not _list_number_before(preamble, m.start())]
    ends += [m.end() for m in _OPENING_TAG.finditer(preamble)]  # after '<sql>', '[SOL]' on its line
    ends += [m.end() for m in _INLINE_CODE_OPENING.finditer(preamble)]  # "The query is `SELECT …`."
    ends += [e for m in _INLINE_FENCE.finditer(preamble) for e in (m.end(), m.end() + len(m.group("tag") or ""))]
    ends += [m.end() for m in _ANSWER_FIELD.finditer(preamble)]  # '{"reasoning": "…", "SQL": "SELECT …"}'
    fenced = {m.end() for m in list(_FENCE_LINE.finditer(preamble))[::2]}  # after an opening fence
    labelled = [m.end() for m in _ANSWER_LABEL.finditer(preamble)][::-1]  # the last label's first
    for start in [*labelled, *sorted({*lines, *ends, *fenced})]:
        rest = preamble[start:]
        if not rest.strip() or rest.lstrip().startswith("```"):
            continue
        if start in fenced:
            return start  # a fenced block is the answer, however it begins (``(1, 2)``)
        if _begins_sentence(rest, keywords):
            continue
        accepted = accepts(rest)
        line = rest.find("\n")
        if (
            accepted == len(rest)
            or accepted >= 12
            or (start in lines and 0 < line <= accepted)
            or _bracketed(rest, accepted)
        ):
            return start  # (or a whole line the grammar reads: a short answer before more prose)
    return None


def _begins_sentence(rest: str, keywords: frozenset[str]) -> bool:
    """Whether ``rest`` begins with a word and has an English function word that is no keyword
    among its first three words (``Select the names``)."""
    return rest.lstrip()[:1].isalpha() and _function_word_first(rest, keywords)


def _function_word_first(text: str, keywords: frozenset[str]) -> bool:
    """Whether one of the first three words of ``text`` (punctuation around them aside) is an
    English function word that is no keyword."""
    words = [w.strip("().,!?:;") for w in text.split(maxsplit=3)[:3]]
    return any(_is_function_word(w.lower(), keywords) for w in words)


def _bracketed(rest: str, accepted: int) -> bool:
    """Whether the grammar reads a bracketed group whole at the start of ``rest`` (``{"a": 1}``
    of ``{"a": 1}. Hope this helps!``): a short answer before more prose."""
    head = rest[:accepted].rstrip()
    return len(head) >= 2 and head[0] in "[{" and head[-1] == {"[": "]", "{": "}"}[head[0]]


def looks_like_prose(kept: str, rejected: str) -> bool:
    """Whether a draft that went wrong at once is writing words (or opening a code fence), not a
    broken answer."""
    if not re.fullmatch(r"\s*[A-Za-z]*", kept):
        return False
    if not kept.strip() and (_OPENING_TAG.match(rejected.lstrip()) or _square_tag_begun(rejected.strip())):
        return True  # sqlcoder's '[SOL] SELECT …': markup before the answer, as '<sql>' is
    if not kept.strip() and _JSON_OBJECT_START.match(rejected.lstrip()):
        return True  # '{"reasoning": "…", "SQL": "SELECT …"}': the answer may be in a field (``_ANSWER_FIELD``)
    return bool(re.match(r"[A-Za-z ,.!'’:-]", rejected)) or (not kept.strip() and rejected.startswith("```"))


def _square_tag_begun(text: str) -> bool:
    """Whether ``text`` is the beginning of a square-bracket tag (``[``, ``[SO`` of ``[SOL]``)."""
    m = re.fullmatch(r"\[\s*([A-Za-z]*)", text)
    return m is not None and any(tag.startswith(m.group(1).lower()) for tag in _CODE_TAGS.split("|"))


def looks_like_aside(text: str, rejected: str, answer_ended: bool, keywords: frozenset[str] = frozenset()) -> bool:
    """Whether text after a complete answer is an aside (on a new line: an explanation, a fence)
    rather than more of the answer with a mistake in it (``keywords``: the grammar's, lower case)."""
    gap = text[len(text.rstrip()) :] + rejected[: len(rejected) - len(rejected.lstrip())]
    head = rejected.lstrip()
    # (A mark or two after a finished answer is an aside; a word or a number is the answer's.)
    stray = answer_ended and len(rejected) <= 2 and not any(c.isalnum() for c in head)
    if not head or head.startswith("```") or _MARKUP.match(head) or stray:
        return True
    # A new line alone is no evidence: code goes on over lines. Cut only before a sentence; or, after
    # the answer's own ';', before a capitalised word that is no keyword (a base model going on with
    # its prompt's pattern on the same line: '...; Write Sql for the following question: ...') or
    # words with two English function words and no code ('In this query, we …', '(Note: the table
    # is …)', a bracket around the remark aside); on the same line with no ';', before a
    # capitalised word that is no keyword, a comma or a colon after it, the line plain words
    # ('… = 1  However, there is no such row.', '[1, 2]  Note: the two items'; not
    # 'f.School Name, s.Phone ORDER BY …', a name with a space).
    ended = text.rstrip().endswith(";")
    line = head.split("\n", 1)[0]
    if _sentence_begun(head, keywords, comma=not ended) and (ended or _plain_words(line, keywords)):
        return True
    if ended and _function_words(line, keywords) >= 2 and not _code_in(line.strip().strip("()"), keywords):
        return True
    return "\n" in gap and looks_like_sentence(head, keywords)


def _plain_words(line: str, keywords: frozenset[str]) -> bool:
    """Whether ``line`` reads as words, not code (``_code_in``), three words after its first at
    least, two of them in small letters (``However, there's no such row``, not ``Name, Phone``)."""
    words = line.split()
    if _code_in(line, keywords):
        return False
    return len(words) >= 4 and sum(w.strip(",.:;!?'").islower() for w in words[1:]) >= 2


def _code_in(line: str, keywords: frozenset[str]) -> bool:
    """Whether ``line`` has a code mark (``_CODE_TOKEN``: ``s.Phone``, a bracket, ``=``) or a
    keyword written in capitals (``FROM``)."""
    words = line.split()
    return bool(_CODE_TOKEN.search(line)) or any(w.isupper() and w.strip(",.:;!?").lower() in keywords for w in words)


def _sentence_begun(head: str, keywords: frozenset[str], comma: bool) -> bool:
    """Whether ``head`` begins with a capitalised word that is no keyword (``_NEW_SENTENCE``),
    where ``comma``, a comma or a colon after it (``However, ``, ``Note: ``)."""
    sentence = _NEW_SENTENCE.match(head)
    if sentence is None or sentence.group(1).lower() in keywords:
        return False
    return not comma or sentence.group(0).rstrip(" \t*_")[-1] in ",:"


#: A capitalised word that begins a sentence, then a space (a comma or a colon between: ``However, ``;
#: Markdown's emphasis or a heading's marks around it: ``**Note:** ``).
_NEW_SENTENCE = re.compile(r"(?:[*_]{1,2}|#+[ \t]*)?([A-Z][a-z]+)[*_]{0,2}[,:]?[*_]{0,2}\s")


def looks_like_sentence(text: str, keywords: frozenset[str] = frozenset()) -> bool:
    """Whether ``text`` starts with a sentence of natural language, with none of the tokens code
    has on its first line (``=``, brackets, quotes, ``a.b``, ``;``): ``This query returns``, or a
    line of three or more words that begins with a capitalised word and has two English function
    words, neither among the grammar's ``keywords`` (``I cannot determine if ... the``, ``Just replace 'x' with the
    actual name``); or with a heading (``Explanation:``, ``Note: The "Country" table ...``, however
    many names it quotes), a line of sentence punctuation or a Markdown rule alone (``!!``, ``---``)."""
    line = text.split("\n", 1)[0]
    if re.fullmatch(r"[!?.*_~-]+\s*", line):
        return True
    heading = _HEADING.match(line)
    if heading and heading.group(1).lower() not in keywords:
        return True
    if _CODE_TOKEN.search(line):
        return False
    return bool(_SENTENCE.match(line)) or _sentence_words(line, keywords)


#: A heading that opens an explanation or a note: a capitalised word, a colon, then a space or the line's end.
_HEADING = re.compile(r"[ \t]*([A-Z][a-z]+):(?:[ \t]|$)")
#: A capitalised word a sentence begins with (``I``, ``Just``), its punctuation after it.
_CAPITALISED = re.compile(r"[A-Z][a-z]*[,:]?")


def _sentence_words(line: str, keywords: frozenset[str]) -> bool:
    """Whether ``line`` has three or more words, begins with a capitalised word that is no keyword,
    and has two or more English function words that are not among the grammar's ``keywords`` (as
    ``prose_line`` counts them, on a line that need not end as a sentence)."""
    words = line.split()
    if len(words) < 3 or not _CAPITALISED.fullmatch(words[0]) or words[0].strip(",:").lower() in keywords:
        return False
    return _function_words(line, keywords) >= 2


def _function_words(line: str, keywords: frozenset[str]) -> int:
    """How many of ``line``'s words (punctuation around them aside) are English function words
    that are no keyword of the grammar (``keywords``)."""
    return sum(_is_function_word(w.strip("().,!?:;'\"`*_—-").lower(), keywords) for w in line.split())


def prose_after_answer(text: str, rejected: str, floor: int, complete_at: Callable[[int], bool]) -> int | None:
    """Where a complete answer ends before an explanation in sentences ("\\n\\nThis query
    returns") that the violation is in, or ``None``: at the last blank line of ``text`` (not
    before ``floor``), when ``complete_at(end)`` says the text is complete there."""
    blanks = list(_BLANK_LINE.finditer(text, floor))
    if not blanks:
        return None
    end = blanks[-1].start()
    if not _SENTENCE.match(text[blanks[-1].end() :] + rejected):
        return None
    return end if complete_at(end) else None


#: The tags chat models put around an answer's code (``<code>``, ``</sql>``).
_CODE_TAGS = "code|pre|sql|sol|answer|query|json|output|result|response"
#: A chat template's end of turn, written out as text where a runner did not stop on it
#: (ChatML's ``<|im_end|>``, ``<|endoftext|>``, Llama 3's ``<|eot_id|>``, ``</s>``, Gemma's ``<end_of_turn>``).
_END_OF_TURN = r"<\|[a-z_]+\|>|</s>|<end_of_turn>|<eos>"
#: Document markup a chat model writes around its answer (``\\end{code}``, ``</code>``; sqlcoder's
#: ``[SOL] … [/SOL]``, in square brackets), or a chat template's end of turn.
_MARKUP = re.compile(
    rf"\\(?:end|begin)\{{\w*\}}?|</?\s*(?:{_CODE_TAGS})\b|\[/\s*(?:{_CODE_TAGS})\s*\]|{_END_OF_TURN}", re.IGNORECASE
)
_MARKUP_OPENERS = ("<", "</", "<|", "\\")  # the marks markup begins with, which code may read as its own


def _markup_begun(accepted: str, rejected: str) -> int | None:
    """Where markup begins in ``accepted`` (its first marks read as code: ``b = 1 <|endoftext|>``,
    ``<`` an operator) and runs on into the ``rejected`` text, or ``None``."""
    for opener in _MARKUP_OPENERS:
        if accepted.endswith(opener) and _MARKUP.match(opener + rejected):
            return len(accepted) - len(opener)
    return None


#: A word of a sentence, with the punctuation sentences put after words.
_PROSE_WORD = re.compile(r"\(?[A-Za-z]+(?:['’][a-z]+)?\)?[.,!?:;]?")
_LAST_WORD = re.compile(r"[A-Za-z]+(?:['’][a-z]+)?[.,!?:;]?$")
_PROSE_REACH = 3  # accepted words before the violation a sentence may have begun with
#: Words of English sentences; two of them (that are not the grammar's keywords) among three or
#: more plain words make a sentence, not code: ``The answer is``, ``That's fine. Maybe we``.
_FUNCTION_WORDS = frozenset(
    [
        "an",
        "the",
        "this",
        "that",
        "these",
        "those",
        "it",
        "its",
        "it's",
        "that's",
        "there",
        "here",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "am",
        "i",
        "i'm",
        "we",
        "you",
        "he",
        "she",
        "they",
        "my",
        "our",
        "your",
        "their",
        "me",
        "us",
        "them",
        "to",
        "of",
        "for",
        "with",
        "in",
        "on",
        "at",
        "by",
        "from",
        "about",
        "as",
        "and",
        "or",
        "but",
        "so",
        "if",
        "then",
        "than",
        "because",
        "which",
        "who",
        "what",
        "when",
        "where",
        "why",
        "how",
        "should",
        "would",
        "could",
        "can",
        "will",
        "shall",
        "may",
        "might",
        "must",
        "do",
        "does",
        "did",
        "not",
        "no",
        "yes",
        "maybe",
        "perhaps",
        "let",
        "let's",
        "just",
        "also",
        "think",
        "answer",
        "note",
        "query",
        "code",
        "following",
        "above",
        "below",
        "fine",
        "okay",
        "ok",
        "sure",
        "hope",  # 'Hope this helps!': the line a chat answer ends with
        "helps",
    ]
)


def prose_run(text: str, at: int, rejected: str, keywords: frozenset[str]) -> tuple[int, int] | None:
    """Where the draft is writing a sentence, not code, at a violation: ``text[:at]`` was
    accepted and ``rejected`` follows it. The run of plain words (and sentence punctuation)
    that reaches the violation, as ``(start, end)`` offsets in ``text[:at] + rejected``, when
    it has three or more words, two of them English function words that are not among the
    grammar's ``keywords``; or document markup (``\\end{code}``) at the violation. ``None``
    otherwise: ``Max Number of Times`` is a name with spaces, ``x is not null`` is code."""
    head = rejected.lstrip()
    if at and text[at - 1] in QUOTES and rejected[:1].isalnum():
        return None  # a word glued to a quote ('"to be or not"') is inside a string, not after it
    if _MARKUP.match(head):
        start = at + len(rejected) - len(head)
        return start, start + len(head.split("\n", 1)[0])
    begun = _markup_begun(text[:at], rejected)
    if begun is not None:
        return begun, at + len(rejected.split("\n", 1)[0])
    joined = text[:at] + rejected
    start = at
    for _ in range(_PROSE_REACH):  # back over accepted words that are not the grammar's keywords
        before = joined[:start].rstrip(" ")
        match = _LAST_WORD.search(before)
        if match is None or before[match.start() - 1 : match.start()] not in ("", " ", "\n"):
            break
        if match.group().rstrip(".,!?:;").lower() in keywords:
            break
        start = match.start()
        if before[match.start() - 1 : match.start()] == "\n":
            break
    words, end = _word_run(joined, start)
    if end <= at:
        return None  # the violation is not in the run
    if re.fullmatch(r"\s*[a-z]+ ", joined[:start]):
        start = len(joined[:start]) - len(joined[:start].lstrip())  # its first word: 'select the customer
    return (start, end) if _reads_as_english(words, keywords) else None


#: The plain words of a sentence: small letters only (``protein``, ``levels``), no name of code.
_PLAIN_WORD = re.compile(r"[a-z]+")


def _reads_as_english(words: list[str], keywords: frozenset[str]) -> bool:
    """Whether a run of three or more ``words`` (as written, punctuation after them) is English:
    two English function words that are not among the grammar's ``keywords``; or one, with
    sentence punctuation after a word (``range.``, ``question:``) and three plain lower-case words
    that are no keyword (``Write Sql for the following question: Write all posts with score``,
    where ``for``, ``following``, ``all`` and ``with`` are SQLite's keywords)."""
    bare = [w.strip("().,!?:;") for w in words]
    function = sum(_is_function_word(w.lower(), keywords) for w in bare)
    if len(words) < 3 or function < 1:
        return False
    if function >= 2:
        return True
    stops = any(w.rstrip(")")[-1:] in ".!?:" for w in words)
    plain = [w for w in bare if _PLAIN_WORD.fullmatch(w) and w not in keywords]
    return stops and len(plain) - function >= 3


def _word_run(text: str, start: int) -> tuple[list[str], int]:
    """The words of a sentence (``_PROSE_WORD``, punctuation after them) from ``start`` in ``text``,
    one space between each, and where the run ends."""
    words: list[str] = []
    ends = [start]
    for match in _PROSE_WORD.finditer(text, start):
        if match.start() != ends[-1] and text[ends[-1] : match.start()] != " ":
            break
        if match.start() == ends[-1] and words and words[-1].endswith("."):
            words.pop()  # a qualified name (``s.code``) is code, no sentence's words
            ends.pop()
            break
        words.append(match.group())
        ends.append(match.end())
    end = ends[-1]
    return words, end


def _is_function_word(word: str, keywords: frozenset[str]) -> bool:
    """Whether ``word`` (in small letters) is an English function word that is no keyword."""
    return word in _FUNCTION_WORDS and word not in keywords


def sentence_start(text: str, keywords: frozenset[str]) -> int | None:
    """Where the first sentence in ``text`` begins, outside quotes, or ``None``: a capitalised word
    that is no keyword, after white space, beginning a run of three or more plain words with two
    English function words that are not among ``keywords`` (as ``prose_run`` counts them): a base
    model's next prompt after its answer on the same line (``… WHERE id = 23  Write Sql for the
    following question: What is …``). A statement ends there."""
    for match in _QUOTED_OR_CAPITALISED.finditer(text):
        if match.group(1) is None or match.group(1).lower() in keywords:
            continue
        words = [w.strip("().,!?:;").lower() for w in _word_run(text, match.start())[0]]
        if len(words) >= 3 and sum(_is_function_word(w, keywords) for w in words) >= 2:
            return match.start()
    return None


#: A quoted text or name, or a comment (skipped: no sentence of the answer's prose begins inside
#: it; one left open runs to the end), or a capitalised word after white space.
_QUOTED_OR_CAPITALISED = re.compile(
    r"'(?:[^']|'')*(?:'|\Z)|\"(?:[^\"]|\"\")*(?:\"|\Z)|`[^`]*(?:`|\Z)|--[^\n]*|/\*.*?(?:\*/|\Z)"
    r"|(?<=\s)([A-Z][a-z]+)\b",
    re.DOTALL,
)


def names_before_sentence(joined: str, start: int, at: int, keywords: frozenset[str]) -> list[int]:
    """The ends of the words a prose run (``prose_run``: from ``start`` in ``joined``) has before
    the violation ``at`` and before its sentence begins, where the code before the sentence may
    end (``group by a, b; Write Sql for``: ``a, b`` are the answer's). The sentence begins at its
    first English function word or at the capitalised word before it (``FROM votes Consider
    the``: ``votes`` may be the table's name; ``SELECT Unfortunately, the``: no word is code)."""
    words = []
    for match in _PROSE_WORD.finditer(joined, start, at):
        word = match.group().strip("().,!?:;")
        if _is_function_word(word.lower(), keywords):
            break
        words.append((word, start + len(joined[start : match.end()].rstrip(".,!?:;"))))
    capitalised = [
        i for i, (word, _) in enumerate(words) if _CAPITALISED.fullmatch(word) and word.lower() not in keywords
    ]
    return [end for _, end in words[: capitalised[-1] if capitalised else len(words)]]


def prose_line(text: str, keywords: frozenset[str] = frozenset()) -> int:
    """The length of the line of prose ``text`` begins with, its line end included (``Sure! Here
    is the query:\n``), or 0: three or more plain words and sentence punctuation, two of them
    English function words that are not among the grammar's ``keywords``, the last ending in
    ``:``, ``.`` or ``!``, and a line end after it. Such a line introduces or closes the answer;
    it is never its first line, even where the grammar reads its first characters (sympy's LaTeX
    reads ``Sure! T``)."""
    line, newline, _ = text.partition("\n")
    words = line.split()
    if not newline or len(words) < 3 or words[-1][-1:] not in (":", ".", "!"):
        return 0
    if not all(_PROSE_WORD.fullmatch(word) for word in words):
        return 0
    function = [w for w in words if _is_function_word(w.strip("().,!?:;").lower(), keywords)]
    return len(line) + 1 if len(function) >= 2 else 0


def opening_tag(text: str) -> bool:
    """Whether ``text`` is one opening tag of the markup chat models put around an answer's
    code (``<json>``, ``<sql lang="x">``), the answer able to follow on the same line."""
    return _OPENING_TAG.fullmatch(text.strip()) is not None


_SQUARE_TAG = re.compile(rf"\[\s*({_CODE_TAGS})\s*\]", re.IGNORECASE)  # '[SOL]', opening an answer
_OPENING_TAG = re.compile(rf"<\s*(?:{_CODE_TAGS})\b[^<>\n]*>|{_SQUARE_TAG.pattern}", re.IGNORECASE)


def has_function_word(text: str, keywords: frozenset[str]) -> bool:
    """Whether ``text`` has an English function word (``the``, ``in``) that is no keyword."""
    return any(_is_function_word(w.lower(), keywords) for w in re.findall(r"[A-Za-z]+", text))


def reads_as_code(text: str, keywords: frozenset[str]) -> bool:
    """Whether an answer may resume at the start of ``text`` after prose: none of its first
    three words is an English function word (``here``, ``the``) that is not a keyword, at most
    one of them a plain lower-case word that is not a keyword, and it does not begin a sentence."""
    if _function_word_first(text, keywords):
        return False
    words = [w.strip("().,!?:;") for w in text.split(maxsplit=3)[:3]]
    plain = [w for w in words if re.fullmatch(r"[a-z]+(?:-[a-z]+)*", w) and w not in keywords]
    if len(plain) >= 2:
        return False  # 'a step-by-step breakdown': words of a sentence, not names of code
    if sentence_end(text) is not None:
        return False  # 'player Ariel Borysiuk.  Write': the rest of a sentence, to its full stop
    return prose_run("", 0, text, keywords) is None


#: Words alone (names in backticks among them, commas between), then the mark that ends a
#: sentence right after the last word and white space before a capital letter: ``player Ariel
#: Borysiuk.  Write``, ``table.  SELECT``. No quote, bracket or operator: ``a.b`` is a qualified
#: name, ``3.5`` a number, ``'x.  Y'`` a string.
_WORDS_TO_SENTENCE_END = re.compile(
    r"[ \t]*(?:(?:`[^`\n]*`|[A-Za-z0-9_]+),?[ \t]+){0,40}?(?:`[^`\n]*`|[A-Za-z0-9_]+)[.!?:](?=[ \t\n]+[A-Z])"
)


def sentence_end(text: str) -> int | None:
    """Where a sentence that ``text`` is the rest of ends (just after its ``.``, ``!``, ``?`` or
    ``:``), when ``text`` is words alone up to it and a capitalised word follows after white space
    (a new sentence or statement: ``table.  SELECT a FROM t``); ``None`` otherwise."""
    match = _WORDS_TO_SENTENCE_END.match(text)
    return None if match is None else match.end()


#: Where the code ends and the document around it goes on: a closing fence, closing markup
#: (``\\end{code}``, ``</code>``). What follows is prose (``Comment: I'm not sure ...``).
_CODE_END = re.compile(
    rf"```(?![ \t]*[A-Za-z])|\\end\{{\w*\}}|</\s*(?:{_CODE_TAGS})\s*>|\[/\s*(?:{_CODE_TAGS})\s*\]", re.IGNORECASE
)


def string_past_code_end(code: str) -> int | None:
    """Where a string opens in ``code`` (read from outside any string) that runs on past the end
    of the code, a closing fence or closing markup, into words after it (``6'0" ) ... LIMIT 1
    \\end{code} Comment: I'm``: the quote of ``6'0"`` read as a string's opening would make the
    query's tail and the thread after it one literal); ``None`` where none does (``"```"`` is a
    string that holds a fence). A quote written twice inside a string, or after a backslash, is
    part of it."""
    if _CODE_END.search(code) is None:
        return None
    opened: int | None = None
    i = 0
    while i < len(code):
        ch = code[i]
        if opened is None:
            if ch in QUOTES:
                opened = i
        elif (end := _CODE_END.match(code, i)) is not None:
            closing = _string_end(code, opened, end.end())
            if re.search(r"\w", code[end.end() : closing]):
                return opened
            i = end.end() - 1
        elif ch == "\\":
            i += 1
        elif ch == code[opened]:
            if code[i + 1 : i + 2] == ch:
                i += 1
            else:
                opened = None
        i += 1
    return None


def _string_end(code: str, opened: int, i: int) -> int:
    """Where the string opened at ``opened`` ends, read on from ``i`` (the end of ``code`` if never)."""
    quote = code[opened]
    while i < len(code):
        if code[i] == "\\":
            i += 1
        elif code[i] == quote:
            if code[i + 1 : i + 2] != quote:
                return i
            i += 1
        i += 1
    return len(code)


def trailing_word(text: str) -> str:
    """The word characters ``text`` ends with."""
    i = len(text)
    while i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_"):
        i -= 1
    return text[i:]
