"""Repairs of real LLM answers that SQLite rejects: ours, sqlglot, a fix by hand, grammar-guide 0.0.11.

The answers are real models' recorded answers, read from local clones named on the command line
(``sql_sources``: BIRD mini-dev's published baselines, tuned on; NL2SQL360's committed predictions on
Spider dev (dev) and BIRD dev and Spider test (held-out); LLM-NL2SQL's open models on BIRD dev and
Spider dev and chatgpt-sql's ChatGPT answers on Spider's variants (held-out 2, a split of its own so
that held-out's figures stay comparable); BIRD's own gpt-3.5-turbo answers on BIRD dev (held-out 4, its
own split likewise); VeriSQL's deepseek-chat, Grok and gpt-5-mini candidates on Spider dev (held-out 5,
its own split likewise); NL2SQL-Benchmark's DeepSeek-R1, QwQ, Qwen2.5/3 and gpt-4o answers on BIRD dev and
Spider dev (held-out 6, its own split likewise); DAIL-SQL's gpt-4 answers on BIRD dev and a fine-tuned
Llama's raw replies on Spider dev (held-out 7, its own split likewise)); nothing of them is vendored here.

Of each collection's answers, those SQLite rejects as one statement (``sqlite_oracle.check_one_statement``:
a syntax error, or more than one statement; a missing table or column is no error) are replayed,
one by one, as a black-box draft (``_replay_draft.ReplayDraft``: the whole answer first, then the rest
of it from where the accepted text left it) through

- ``ours``: ``grammar_guide.guide(draft, "sqlite", prompt)``, ``target=False`` unless ``--target``
  (the SmolLM2 target, slow on a CPU);
- ``sqlglot``: ``sqlglot.transpile(sql, read=<dialect asked>, write="sqlite")`` on the answer's SQL
  (the fenced block or the text from the first statement keyword, prose after it left out: what a
  careful user would hand it; ``answer_sql``); NL2SQL360's models were asked for SQLite;
- ``gg-0.0.11`` (``--gg0011``): grammar-guide 0.0.11's generic-function path (its own venv,
  ``baseline_env.py``) with the same replayed draft, the same grammar and SmolLM2 as its target.

Scored per answer: one-statement SQLite-valid; intact (names and literals kept, no name invented);
faithful (``sql_faithful``: the draft's SQL tokens aligned with the output's, nothing lost or added
beyond what the result records as a rewrite or formatting); invented literals; edit size; seconds.
With a Spider clone (``--spider``), every Spider dev answer whose database the clone has is run
(``sql_execution``) and its rows compared with the gold query's, for each method, the unrepaired
answer, and a slip-only fix written by hand for a sample (``data/spider_hand_fixes.json``,
``data/verisql_hand_fixes.json``).

Run: ``python -m benchmarks.real_sql_repair [MINI_DEV_CLONE] [--nl2sql360 CLONE] [--llm-nl2sql CLONE]
[--chatgpt-sql CLONE] [--bird-turbo CLONE] [--verisql CLONE] [--nl2sql-bench CLONE]
[--dail-sql CLONE --bird-dev CLONE] [--lamini CLONE] [--spider CLONE]
[--limit N] [--skip N] [--split dev] [--quick] [--questions FILE] [--target] [--gg0011] [--name NAME]``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks._common import attempt, machine, machine_line, markdown_table, write_results  # noqa: E402
from benchmarks._replay_draft import ReplayDraft, lexemes  # noqa: E402
from benchmarks.draft_shapes import draft_shape  # noqa: E402
from benchmarks.sql_execution import Rows, error_class, gold_is_ordered, run_query, same_rows  # noqa: E402
from benchmarks.sql_faithful import (  # noqa: E402
    Excuses,
    excuses_of,
    faithfulness,
    read_broken,
    read_closed,
    sqlite_keywords,
    string_value,
)
from benchmarks.sql_sources import (  # noqa: E402
    BIRD_TURBO_COLLECTION,
    CHATGPT_SQL_COLLECTION,
    DAIL_SQL_COLLECTION,
    LAMINI_COLLECTION,
    LLM_NL2SQL_SPLITS,
    NL2SQL360_SPLITS,
    NL2SQL_BENCH_COLLECTION,
    NL2SQL_BENCH_SPLITS,
    VERISQL_COLLECTION,
    Answer,
    SpiderGold,
    bird_dev_db_ids,
    load_answers,
    load_bird_turbo,
    load_chatgpt_sql,
    load_dail_sql_bird,
    load_lamini_spider,
    load_llm_nl2sql,
    load_nl2sql360,
    load_nl2sql_bench,
    load_spider_gold,
    load_verisql,
)

__all__ = ["Answer", "load_answers", "main"]

NAME = "real_sql_repair"
PROMPT = (
    "You are an expert SQL assistant. The database is SQLite 3.40. Answer with exactly one SQLite "
    "statement that does what the user asks, and nothing else.\n\nDatabase: {db_id}\nQuestion: {question}"
)
MAX_CORRECTIONS = 16
MAX_NEW_TOKENS = 2048  # no answer is cut by the budget (the longest rejected one is 766 tokens)
TIMEOUT_S = 240.0
#: Which collections repairs were tuned on, which were read while building this benchmark (dev), and
#: which nobody read (held-out).
SPLIT = {
    "BIRD mini-dev": "tuned on",
    "NL2SQL360 spider_dev": "dev",
    "NL2SQL360 bird_dev": "held-out",
    "NL2SQL360 spider_test": "held-out",
    **{f"LLM-NL2SQL {split}": "held-out 2" for split in LLM_NL2SQL_SPLITS},
    CHATGPT_SQL_COLLECTION: "held-out 2",
    BIRD_TURBO_COLLECTION: "held-out 4",
    VERISQL_COLLECTION: "held-out 5",
    **{f"{NL2SQL_BENCH_COLLECTION} {split}": "held-out 6" for split in NL2SQL_BENCH_SPLITS},
    DAIL_SQL_COLLECTION: "held-out 7",
    LAMINI_COLLECTION: "held-out 7",
}
SPIDER = "NL2SQL360 spider_dev"
#: Slip-only fixes written by hand: NL2SQL360's Spider dev answers (dev), VeriSQL's (held-out 5).
HAND_FIXES = [Path(__file__).with_name("data") / name for name in ("spider_hand_fixes.json", "verisql_hand_fixes.json")]


def sqlite_rejects(answers: list[Answer]) -> list[Answer]:
    """The answers SQLite rejects as one statement (distinct texts; an empty answer is no draft):
    a syntax error, or more than one statement."""
    from tests.support import sqlite_oracle

    seen: set[str] = set()
    out = []
    for a in answers:
        if not a.text.strip() or a.text in seen:
            continue
        seen.add(a.text)
        if sqlite_oracle.check_one_statement(a.text).label is sqlite_oracle.Label.INVALID:
            out.append(a)
    return out


def interleave(answers: list[Answer], limit: int | None, skip: int = 0) -> list[Answer]:
    """Take answers from each model in turn (and, within a model, from each of its files in
    turn), so that a limit keeps the mix of models and dialects; the first ``skip`` left out."""

    def rounds(groups: list[list[Answer]]) -> list[Answer]:
        out: list[Answer] = []
        while any(groups):
            out += [g.pop(0) for g in groups if g]
        return out

    by_model: dict[str, dict[str, list[Answer]]] = {}
    for a in answers:
        by_model.setdefault(a.model, {}).setdefault(a.source, []).append(a)
    models = [rounds([files[s] for s in sorted(files)]) for _, files in sorted(by_model.items())]
    mixed = rounds(models)
    return mixed[skip:] if limit is None else mixed[skip : skip + limit]


# -- what an answer says -------------------------------------------------------------------------

_FENCE = re.compile(r"```[A-Za-z]*[ \t]*\n?(.*?)(?:```|$)", re.DOTALL)
#: A statement's start: SELECT, or WITH that begins a CTE (``WITH t AS (``; "with the title" is prose).
_STATEMENT = re.compile(r"\bSELECT\b|\bWITH\s+(?:RECURSIVE\s+)?\w+\s*(?:\([^()]*\)\s*)?AS\s*\(", re.IGNORECASE)
#: After the word ``select`` of a sentence: an English word no query has there (``select the one with``,
#: ``Select from the ship table``, ``SELECT statement to``), or a heading's colon (``**Select Data:**``).
_PROSE_AFTER_KEYWORD = re.compile(r"\s+(?:(?:the|both|from|statement|to)\b|\w+(?:\*\*)?:)", re.IGNORECASE)
_STATEMENT_LINE = re.compile(r"^\s*(?:SELECT|WITH)\b", re.IGNORECASE | re.MULTILINE)
_CODE_LINE = re.compile(r"[()=]|\w_\w|^\w+\s+AS\b", re.IGNORECASE)  # "avg_salaries AS (": a CTE goes on
#: '\end{code}' closes a block like a fence; so does a square-bracket tag's close (sqlcoder's '[/SOL]').
#: So does a chat template's end of turn written out (``<|im_end|>``, ``</s>``).
_MARKUP_END = re.compile(
    r"\\end\{[A-Za-z]+\}|</(?:code|pre)>|\[/(?:sql|sol|code|answer|query)\]|<\|[a-z_]+\|>|</s>|<end_of_turn>|<eos>",
    re.IGNORECASE,
)
_PROSE_LINE = re.compile(r"\n\s*\n\s*(?=[A-Za-z(*])|\n(?=(?:This|The|Note|Here|Explanation|In this)\b)")
#: A word alone on its line before a query (``MINUS``, ``UNION ALL``): it joins two queries.
_JOINING_WORD = re.compile(r"[A-Za-z]+(?:[ \t]+ALL)?[ \t]*\n\s*\(?\s*(?:SELECT|WITH)\b", re.IGNORECASE)
#: A sentence: a word in capitals that is no keyword (after a bracket or Markdown's ``**``), then
#: words, two of the next five plain lower-case words that are no keywords ("This SQL query will").
_SENTENCE_START = re.compile(r"[(*]*([A-Z][a-z]+)([*:,]*)((?:\s+[\w'`]+[,:.]?){3,5})")


def _begins_statement(text: str, match: re.Match[str]) -> bool:
    """Whether ``match`` of ``_STATEMENT`` begins the answer's statement: no sentence's ``select
    the`` (``_PROSE_AFTER_KEYWORD``), no word of a line comment (``-- Select the names``)."""
    line = text[text.rfind("\n", 0, match.start()) + 1 : match.start()]
    return not _PROSE_AFTER_KEYWORD.match(text, match.end()) and "--" not in line


def answer_sql(answer: str) -> str:
    """The SQL an answer means: a fenced block's content (after the text before the fence where the
    answer begins with a query, ``_two_queries``; the text before alone where that has
    a SELECT/WITH and the block holds prose: it begins with a word that is no keyword, or, where the
    text before begins with SELECT/WITH, has no line that does), else the text from the first
    SELECT/WITH on (not a sentence's ``select the``), up to markup that ends a code block
    (``\\end{code}``, ``</code>``); prose after
    it (a blank line then a word that is not a keyword, on a line with no bracket, ``=`` or
    snake_case name, or a line that begins as a sentence; or a line starting with
    This/The/Note/Here/Explanation) is left out; a word alone on its line before a query
    (``MINUS``) joins two queries and is no prose. Where reasoning comes first and labels the
    answer (``**Answer:** SELECT …``), the text after its last label is read, not the code quoted
    above it."""
    answer = _json_value(answer)
    labels = [m for m in _ANSWER_LABEL.finditer(answer) if _STATEMENT.match(answer, m.end())]
    if labels and not _STATEMENT_LINE.match(answer):
        answer = answer[labels[-1].end() :]
    fenced = _FENCE.search(answer)
    text = fenced.group(1) if fenced else answer
    before = answer[: fenced.start()] if fenced else ""
    if fenced and before.strip() and (not text.strip() or _fence_holds_prose(before, text)):
        text = before  # a closing fence with no SQL after it (none, or prose): the SQL is before it
    elif fenced and _two_queries(before, text):
        text = before.rstrip() + "\n" + text  # a query, then another in a fenced block: both the answer's
    markup = _MARKUP_END.search(text)
    if markup:
        text = text[: markup.start()]
    text = _inline_code(text)
    start = next((m for m in _STATEMENT.finditer(text) if _begins_statement(text, m)), None)
    if start and re.search(r"[A-Za-z]", text[: start.start()]):
        text = text[start.start() :]
    for m in _PROSE_LINE.finditer(text):
        word = re.match(r"[(*]*([A-Za-z_]+)", text[m.end() :])
        line = text[m.end() :].split("\n", 1)[0]
        ended = text[: m.start()].rstrip().endswith(";")  # after a whole statement, a sentence is prose
        if _JOINING_WORD.match(text, m.end()):
            continue  # 'MINUS' alone between two queries (Oracle's EXCEPT): it joins them, no prose
        prose = word and word.group(1).upper() not in sqlite_keywords() and (ended or not _CODE_LINE.search(line))
        if prose or _is_sentence(line):
            text = text[: m.start()]
            break
    return _without_full_stop(_before_sentence(_before_prose_after_end(text)).strip())


#: A JSON object's string value that begins with a statement (``{"reasoning": "…", "SQL": "SELECT …"}``),
#: its text as written, up to its closing quote and the ``,`` or ``}`` after it.
_JSON_STATEMENT = re.compile(r'"\s*:\s*"\s*((?:SELECT|WITH)\b(?:[^"\\]|\\.)*)"\s*[,}]', re.IGNORECASE)


def _json_value(answer: str) -> str:
    """Where the answer is a JSON object, the last of its string values that begins with a
    statement, as written (its closing quote and brace are JSON's, no SQL); else the answer."""
    if not answer.lstrip().startswith("{"):
        return answer
    values = [m.group(1) for m in _JSON_STATEMENT.finditer(answer)]
    return values[-1] if values else answer


#: A label a model gives its answer, then the statement: ``**Answer:** SELECT …``, ``Final answer:``.
_ANSWER_LABEL = re.compile(r"(?:\*\*|__)?\b(?:final\s+)?answer(?:\*\*|__)?\s*:(?:\*\*|__)?\s*(?:```\w*\s*)?", re.I)


def _without_full_stop(text: str) -> str:
    """``text`` less a full stop it ends in after a whole statement SQLite accepts, and after a
    bracket or a quote (``… = 'TR001_10').``): the stop of the sentence the answer was written
    as, no SQL (``t.``, ``1.`` are a name's qualifier, a number)."""
    from tests.support import sqlite_oracle

    if not text.endswith(".") or re.match(r"\w", text[-2:-1]) or sqlite_oracle.check_one_statement(text).valid:
        return text
    return text[:-1] if sqlite_oracle.check_one_statement(text[:-1]).valid else text


#: Markdown's inline code holding a statement: `` `SELECT a FROM t;` ``.
#: A name quoted inside (`` `SELECT … AND `T-CHO` < 250;` ``) is part of it; code left open at the
#: answer's end runs to the end.
_INLINE_CODE = re.compile(r"(?<!`)`[ \t]*((?:SELECT|WITH)\b(?:[^`]|`[^`\s]+`)*)(?:`(?!`)|$)", re.IGNORECASE)


def _inline_code(text: str) -> str:
    """The statement in Markdown's inline code (`` `SELECT …` ``) where the text before it holds
    no statement of its own, only prose or a lone ``SELECT`` (a runner that wrote its prompt's last
    word before the model's answer): that code is the answer, not a name quoted with backticks."""
    code = _INLINE_CODE.search(text)
    if code is None:
        return text
    before = text[: code.start()].strip()
    return code.group(1) if before.upper() in ("", "SELECT", "WITH") or not _STATEMENT.search(before) else text


def _before_sentence(text: str) -> str:
    """``text`` up to a sentence (``_is_sentence``) that follows a whole statement SQLite accepts on
    the same line, with no ``;`` between (``SELECT … = 60 Write Sql for the following question: …``,
    a base model going on with its prompt's pattern, its new lines made spaces by its runner):
    SQLite's parser, not ours, says where the statement ends; or up to a sentence of words alone to
    its stop (``_WORDS_TO_STOP``), after a statement whole or not. Words that hold an SQL keyword
    in capitals are the draft's code, no sentence (``_holds_keyword_in_capitals``)."""
    from tests.support import sqlite_oracle

    if sqlite_oracle.check_one_statement(text).label is not sqlite_oracle.Label.INVALID:
        return text
    for m in re.finditer(r"(?<=\s)(?=[(*]*[A-Z][a-z])", text):
        rest = text[m.start() :]
        if (
            _is_sentence(rest)
            and not _holds_keyword_in_capitals(rest)
            and (_WORDS_TO_STOP.match(rest) or sqlite_oracle.check_one_statement(text[: m.start()]).valid)
        ):
            return text[: m.start()]
    return text


def _holds_keyword_in_capitals(line: str) -> bool:
    """Whether the words a sentence would begin with (``_SENTENCE_START``) hold an SQL keyword in
    capitals (``Option Type FROM frpm WHERE``, ``United Airlines flights WHERE``): the draft's
    names with spaces written bare, then its code, where prose writes no ``FROM``."""
    m = _SENTENCE_START.match(line)
    words = re.findall(r"[A-Za-z_]+", m.group(0)) if m else []
    return any(len(w) > 1 and w.isupper() and w in sqlite_keywords() for w in words)


#: A sentence of words alone, four or more, to its stop, and another after it (``Write Sql for the
#: following question: What …``): no SQL writes that, so it ends the statement before it, whole or not.
_WORDS_TO_STOP = re.compile(r"[A-Z][a-z]+(?:[ \t]+[A-Za-z][a-z']*){3,}[.?:](?=\s+[A-Z])")


#: What ``_before_prose_after_end`` reads past: strings and quoted names (a ``;`` inside is text).
_QUOTED_OR_MARK = re.compile(r"'(?:[^']|'')*'?|\"(?:[^\"]|\"\")*\"?|`[^`]*`?|[();]")


def _before_prose_after_end(text: str) -> str:
    """``text`` up to a ``;`` that ends its statement (outside strings and brackets) where prose
    follows on the same line: a word that is no keyword, or a sentence (``…; How many concerts are
    there? Answer : SELECT …``, a base model going on with its prompt's pattern, its new lines made
    spaces by the runner that recorded it). A second statement after the ``;`` stays (it is the
    result's to cut and name). So does a comment of another language there (``…; # Note: …``):
    SQLite has no ``#`` or ``//``, and no statement begins with one."""
    depth = 0
    for m in _QUOTED_OR_MARK.finditer(text):
        mark = m.group()
        depth += (mark == "(") - (mark == ")")
        if mark == ";" and depth <= 0:
            rest = text[m.end() :].split("\n", 1)[0]
            if _is_prose(rest) or _is_sentence(rest.lstrip()) or _FOREIGN_COMMENT.match(rest):
                return text[: m.end()]
    return text


#: A comment SQLite has no form of, opening the rest of a line after a statement's ``;``.
_FOREIGN_COMMENT = re.compile(r"\s*(?:#|//)")


def _is_sentence(line: str) -> bool:
    """Whether a line begins as a sentence does (``_SENTENCE_START``), brackets in it or not."""
    m = _SENTENCE_START.match(line)
    if m is None:
        return False
    if m.group(1) in ("Note", "Explanation") and ":" in m.group(2):
        return True  # "(Note: The ... values ...": a note, however many names it quotes
    words = [w.strip(",:.") for w in m.group(3).split()]
    plain = [w for w in words if w.isalpha() and w.islower() and w.upper() not in sqlite_keywords()]
    return m.group(1).upper() not in sqlite_keywords() and len(plain) >= 2


def _is_prose(text: str) -> bool:
    """Whether ``text`` begins with a word that is no SQL keyword (``This query ...``)."""
    word = re.match(r"\s*([A-Za-z]+)\b", text)
    return word is not None and word.group(1).upper() not in sqlite_keywords()


def _fence_holds_prose(before: str, fenced: str) -> bool:
    """Whether the fenced text after SQL (``before``) is prose: it begins with a word that is no
    keyword, or the answer begins with its statement and the block has no line that does."""
    if _STATEMENT.search(before) and _is_prose(fenced):
        return True
    return bool(_STATEMENT.match(before.strip())) and not _STATEMENT_LINE.search(fenced)


def _two_queries(before: str, fenced: str) -> bool:
    """Whether the answer begins with a query (no line introducing what follows: it does not end
    with ``:`` or ``.``) and a fenced block after it holds another (``SELECT a FROM t\n```sql\n
    SELECT b FROM u\n````): the model wrote two, and the block is not all of its answer."""
    head = before.strip()
    return bool(_STATEMENT.match(head)) and not head.endswith((":", ".")) and bool(_STATEMENT_LINE.search(fenced))


def code_ended(answer: str) -> bool:
    """Whether the answer's code ends at a closing fence or markup (``\\end{code}``), so that
    its SQL (``answer_sql``) ends where the code does, not where the model stopped."""
    return _MARKUP_END.search(answer) is not None or answer.count("```") >= 2


def content(sql: str) -> tuple[set[str], set[str]]:
    """(names, literals) of ``sql``: table/column names and aliases (bare or quoted, case ignored,
    Markdown escapes undone), strings (by value) and numbers. Not names: keywords, function names
    (a word before ``(``), type names (after ``::`` or ``AS`` before ``)``), date parts in EXTRACT."""
    lx = lexemes(sql)
    names: set[str] = set()
    literals: set[str] = set()
    raw = [sql[a:b] for _, a, b in lx]
    for i, (low, _, _) in enumerate(lx):
        prev = lx[i - 1][0] if i else ""
        nxt = lx[i + 1][0] if i + 1 < len(lx) else ""
        first = raw[i][0]
        if first == "'":
            if i + 1 == len(lx) and (len(raw[i]) < 2 or not raw[i].endswith("'")):
                continue  # a string the answer was cut in: no literal it wrote whole
            literals.add(string_value(raw[i]))
        elif re.fullmatch(r"[0-9]+(?:\.[0-9]*)?", low):
            literals.add(low)
        elif first in '"`[':
            names.add(low[1:-1] if len(low) >= 2 else low[1:])
        elif re.fullmatch(r"[a-z_$][a-z0-9_$]*", low):
            if low.upper() in sqlite_keywords() or nxt == "(" or prev == ":":
                continue
            if prev == "as" and nxt == ")":
                continue
            if i >= 2 and lx[i - 2][0] == "extract" and prev == "(":
                continue
            names.add(low)
    return names, literals


# An apostrophe between a word and an English contraction's ending ('Women's Soccer').
_APOSTROPHE = re.compile(r"(?<=[A-Za-z])'(?=(?:s|t|re|ve|ll|d|m)\b[^'\n]*')")


def escape_apostrophes(text: str) -> str:
    """``text`` with each contraction's apostrophe inside a string the model wrote unescaped
    (``'Women's Soccer'``) written twice: read as part of the string, as the model meant it. One
    outside a string (the prose's ``the user's table 'x'``) stays: it opens no string."""
    out, at, inside = [], 0, False  # inside: whether a string is open where ``at`` is (lines read alone)
    for match in _APOSTROPHE.finditer(text):
        between = text[at : match.start()]
        line = between[between.rfind("\n") + 1 :]
        inside = (inside and "\n" not in between) != (line.count("'") % 2 == 1)
        out += [between, "''" if inside else "'"]
        inside, at = True, match.end()  # escaped, the string goes on; kept single, it opens one
    return "".join(out) + text[at:]


def compare(answer: str, output: str) -> dict[str, Any]:
    """How much of the answer's SQL the output keeps: kept fraction, names invented, intact."""
    sql = answer_sql(answer)
    a_names, a_lits = content(escape_apostrophes(sql))
    o_names, o_lits = content(output)
    wanted = {("n", n) for n in a_names} | {("l", v) for v in a_lits}
    have = {("n", n) for n in o_names} | {("l", v) for v in o_lits}
    kept = len(wanted & have) / len(wanted) if wanted else 1.0
    # A name the answer wrote as a word of its own is not invented (``FROM order`` kept as
    # ``FROM "order"``: a keyword there, a name once quoted).
    words = {low for low, _, _ in lexemes(sql)}
    invented = sorted(n for n in o_names - a_names if n not in words)
    return {
        "kept": kept,
        "lost": sorted(f"{k}:{v}" for k, v in wanted - have),
        "invented": invented,
        "intact": kept == 1.0 and not invented,
    }


def edit_size(answer: str, output: str) -> int:
    from grammar_guide._repair import levenshtein

    return levenshtein(" ".join(answer_sql(answer).split()), " ".join(output.split()))


# -- the methods -------------------------------------------------------------------------------


def prompt_for(a: Answer, questions: dict[str, str]) -> str:
    question = questions.get(f"{a.collection}/{a.key}", f"{a.collection} question {a.key}")
    return PROMPT.format(db_id=a.db_id or "unknown", question=question)


def _guide_one(a: Answer, questions: dict[str, str], target: Any) -> dict[str, Any]:
    """One replayed answer through ``guide``; a crash inside it is a row with its error, not the end
    of the run."""
    import grammar_guide as gg

    replay = ReplayDraft(a.text)

    def generate(prompt: str, prefix: str) -> str:
        return replay.continue_from(prefix)

    draft = gg.FunctionDraft(generate, name="replay", continues_prefix=True)
    t0 = time.perf_counter()
    error = None
    try:
        result = gg.guide(
            draft,
            "sqlite",
            prompt_for(a, questions),
            target=target,
            max_corrections=MAX_CORRECTIONS,
            max_draft_calls=16,
            max_new_tokens=MAX_NEW_TOKENS,
            timeout=TIMEOUT_S,
        )
    except gg.GuideExhausted as exc:
        result, error = exc.result, f"GuideExhausted: {exc}"
    except Exception as exc:  # a crash inside the library: recorded with the answer's id
        message = f"{type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}"
        print(f"[{NAME}] CRASH on {a.collection} {a.source} #{a.key}: {message}", file=sys.stderr, flush=True)
        return {"text": "", "error": message, "crash": True, "exhausted": False, "seconds": time.perf_counter() - t0}
    return {
        "text": result.text,
        "error": error,
        "crash": False,
        "exhausted": error is not None,
        "seconds": time.perf_counter() - t0,
        "corrections": result.stats.corrections,
        "draft_calls": len(replay.calls),
        "excuses": excuses_of(result.events).to_dict(),
        "result_faithful": result.faithful,
    }


def run_ours(items: list[Answer], questions: dict[str, str], *, target: Any) -> list[dict[str, Any]]:
    rows = []
    for a in items:
        rows.append(_guide_one(a, questions, target))
        note = " (crash)" if rows[-1]["crash"] else " (exhausted)" if rows[-1]["exhausted"] else ""
        print(f"[{NAME}] ours {len(rows)}/{len(items)}: {rows[-1]['seconds']:.1f} s{note}", file=sys.stderr, flush=True)
    return rows


def run_sqlglot(items: list[Answer]) -> list[dict[str, Any]]:
    """sqlglot.transpile from the dialect the model was asked for (SQLite for NL2SQL360's answers,
    where it parses and prints again) to SQLite. sqlglot's warnings are silenced: they quote the
    answer (``'...' contains unsupported syntax``), and held-out answers are never printed."""
    import sqlglot

    logging.getLogger("sqlglot").setLevel(logging.CRITICAL)
    rows = []
    for a in items:
        t0 = time.perf_counter()
        try:
            text = ";\n".join(sqlglot.transpile(answer_sql(a.text), read=a.dialect, write="sqlite"))
            error = None
        except Exception as exc:  # sqlglot's ParseError, TokenError, UnsupportedError ...
            text, error = "", f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
        rows.append(
            {"text": text, "error": error, "exhausted": False, "seconds": time.perf_counter() - t0, "corrections": None}
        )
    return rows


def run_unrepaired(items: list[Answer]) -> list[dict[str, Any]]:
    """The answer's SQL as the model wrote it (``answer_sql``): what a user without repair runs."""
    return [{"text": answer_sql(a.text), "error": None, "exhausted": False, "seconds": 0.0} for a in items]


def load_hand_fixes(paths: Sequence[Path]) -> dict[tuple[str, str, str], dict[str, str]]:
    """(collection, source, key) -> {"fix", "reason"} of the fixes written by hand in those of
    ``paths`` that exist (see README)."""
    out: dict[tuple[str, str, str], dict[str, str]] = {}
    for path in paths:
        if path.is_file():
            data = json.loads(path.read_text(encoding="utf-8"))
            out |= {(f["collection"], f["source"], f["key"]): f for f in data["fixes"]}
    return out


def run_gg0011(items: list[Answer], questions: dict[str, str], *, timeout: float = 4 * 3600) -> dict[str, Any]:
    from benchmarks import baseline_env

    request = {
        "mode": "sql_replay",
        "replay_draft": str(Path(__file__).with_name("_replay_draft.py")),
        "grammar": (ROOT / "grammars" / "sqlite.lark").read_text(encoding="utf-8"),
        "model": str(baseline_env.compat_model_folder()),
        "answers": [{"text": a.text, "prompt": prompt_for(a, questions)} for a in items],
        "lookahead": 256,
        "max_corrections": MAX_CORRECTIONS,
    }
    answer = baseline_env.run_worker(request, timeout=timeout)
    for row in answer["rows"]:
        row["exhausted"] = False
    return answer


# -- scoring -----------------------------------------------------------------------------------


def score_row(row: dict[str, Any], a: Answer) -> None:
    """Add the row's scores: valid (every statement), one statement valid, intact, faithful
    (``sql_faithful``: the recorded rewrites and formatting excused), invented literals, edit."""
    from tests.support import sqlite_oracle

    text = row.get("text") or ""
    row["valid"] = bool(text.strip()) and sqlite_oracle.check_script(text).label is not sqlite_oracle.Label.INVALID
    row["single"] = (
        bool(text.strip()) and sqlite_oracle.check_one_statement(text).label is not sqlite_oracle.Label.INVALID
    )
    row.update(compare(a.text, text))
    row["intact"] = row["intact"] and row["valid"]  # kept everything, in SQL that SQLite takes
    draft, excuses = read_broken(escape_apostrophes(a.text), Excuses.from_dict(row.get("excuses", {})))
    draft, excuses = read_closed(draft, text, excuses)
    judged = faithfulness(answer_sql(draft), text, excuses, code_ended=code_ended(a.text), whole=draft)
    row["tokens_lost"] = judged.lost
    row["tokens_added"] = judged.added
    row["invented_literals"] = judged.invented_literals
    row["faithful"] = judged.faithful and row["single"]
    row["faithful_but_cut_off"] = row["single"] and not judged.faithful and _only_cut_off(a, text, excuses)
    row["edit"] = edit_size(a.text, text)
    row["shape"] = draft_shape(answer_sql(a.text))


def _only_cut_off(a: Answer, text: str, excuses: Excuses) -> bool:
    """Whether the output would be faithful but for the answer's unfinished end, taken back and
    recorded (the answer's SQL ends with it: the model's answer was cut off there)."""
    sql = answer_sql(escape_apostrophes(a.text)).rstrip()
    ends = [t for t in excuses.cut_off if t.strip() and sql.endswith(t.rstrip())]
    if not ends:
        return False
    wider = replace(excuses, removed=excuses.removed + tuple(ends))
    draft = answer_sql(escape_apostrophes(a.text))
    return faithfulness(draft, text, wider, code_ended=code_ended(a.text)).faithful


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows) or 1
    with_corrections = [r["corrections"] for r in rows if r.get("corrections") is not None]
    return {
        "answers": len(rows),
        "valid": sum(r["valid"] for r in rows),
        "single": sum(r["single"] for r in rows),
        "exhausted": sum(bool(r.get("exhausted")) for r in rows),
        "crashes": sum(bool(r.get("crash")) for r in rows),
        "errors": sum(bool(r.get("error")) for r in rows),
        "intact": sum(r["intact"] for r in rows),
        "faithful": sum(r["faithful"] for r in rows),
        "faithful_but_cut_off": sum(bool(r.get("faithful_but_cut_off")) for r in rows),
        "result_faithful": sum(bool(r.get("result_faithful")) for r in rows),
        "kept": sum(r["kept"] for r in rows) / n,
        "invented": sum(len(r["invented"]) for r in rows) / n,
        "invented_literals": sum(len(r["invented_literals"]) for r in rows),
        "edit": sum(r["edit"] for r in rows) / n,
        "corrections": sum(with_corrections) / len(with_corrections) if with_corrections else None,
        "seconds": sum(r["seconds"] for r in rows) / n,
        "unfaithful_shapes": dict(Counter(r.get("shape", "query") for r in rows if not r["faithful"])),
    }


def score(rows: list[dict[str, Any]], items: list[Answer]) -> dict[str, Any]:
    for row, a in zip(rows, items, strict=True):
        score_row(row, a)
    return summarize(rows)


def _answer_id(answer: Answer | Mapping[str, Any]) -> tuple[str, ...]:
    """What tells an answer apart in a results file (its text is not there)."""
    fields = asdict(answer) if isinstance(answer, Answer) else answer
    return tuple(str(fields[f]) for f in ("collection", "source", "key", "model", "db_id"))


def _invalid_in(path: Path) -> set[tuple[str, ...]]:
    """The answers a results file of this benchmark left SQLite-invalid, by our first method:
    the rows a run with the target is then asked about (``--invalid-in``)."""
    payload = json.loads(path.read_text(encoding="utf-8"))
    rows = next(rows for name, rows in payload["rows"].items() if name.startswith("ours"))
    return {_answer_id(item) for item, row in zip(payload["items"], rows, strict=True) if not row["valid"]}


def _scores_only(row: dict[str, Any]) -> dict[str, Any]:
    """A scored row without the answer's or the output's text (an error keeps its kind only:
    sqlglot's messages quote the SQL; tokens are counted, not listed). The output's digest stays:
    two runs can be compared row by row without the text."""
    out = {k: v for k, v in row.items() if k not in ("text", "lost", "excuses", "tokens_lost", "tokens_added")}
    if isinstance(row.get("text"), str):
        out["text_sha1"] = hashlib.sha1(row["text"].encode()).hexdigest()[:12]
    out["tokens_lost"] = len(row.get("tokens_lost", []))
    out["tokens_added"] = len(row.get("tokens_added", []))
    out["invented_literals"] = len(row.get("invented_literals", []))
    if out.get("error"):
        out["error"] = str(out["error"]).split(":", 1)[0]
    return out


def _pct(k: int, n: int) -> str:
    return f"{100 * k / (n or 1):.0f}% ({k}/{n})"


def table(methods: dict[str, dict[str, Any]]) -> str:
    header = [
        "method",
        "one statement SQLite-valid",
        "exhausted / crashes / errors",
        "intact",
        "faithful",
        "result says faithful",
        "invented literals",
        "edit size (chars)",
        "s / answer",
    ]
    rows = []
    for name, m in methods.items():
        n = m["answers"]
        rows.append(
            [
                name,
                _pct(m["single"], n),
                f"{m['exhausted']} / {m['crashes']} / {m['errors']}",
                _pct(m["intact"], n),
                _pct(m["faithful"], n),
                _pct(m["result_faithful"], n) if name.startswith("ours") else "-",
                m["invented_literals"],
                m["edit"],
                m["seconds"],
            ]
        )
    return markdown_table(header, rows)


def dialect_table(rows_by_method: dict[str, list[dict[str, Any]]], items: list[Answer]) -> str:
    """Valid and intact answers per dialect asked, per method (rows must be scored)."""
    dialects = sorted({a.dialect for a in items})
    header = ["dialect asked", "answers"] + [f"{name}: valid / intact" for name in rows_by_method]
    out = []
    for d in dialects:
        picked = [i for i, a in enumerate(items) if a.dialect == d]
        out.append(
            [d, len(picked)]
            + [
                f"{sum(rows[i]['valid'] for i in picked)} / {sum(rows[i]['intact'] for i in picked)}"
                for rows in rows_by_method.values()
            ]
        )
    return markdown_table(header, out)


# -- execution on Spider's databases -------------------------------------------------------------


#: Collections of answers to Spider dev's questions: how an answer's key gives the question's index.
_SPIDER_QUESTION: dict[str, Callable[[str], int]] = {
    SPIDER: int,
    VERISQL_COLLECTION: lambda key: int(key.split(".", 1)[0]),  # '<question>.<candidate>'
    f"{NL2SQL_BENCH_COLLECTION} spider": int,  # a line of a file in the order of Spider dev's questions
    LAMINI_COLLECTION: int,
}


def gold_question(a: Answer, gold: SpiderGold) -> int | None:
    """The index of the Spider dev question ``a`` answers, where the clone has its database."""
    question_of = _SPIDER_QUESTION.get(a.collection)
    index = -1 if question_of is None else question_of(a.key)
    if not 0 <= index < len(gold.questions) or gold.questions[index]["db_id"] != a.db_id:
        return None
    return index if gold.database(a.db_id) is not None else None


def executable(items: list[Answer], gold: SpiderGold) -> list[int]:
    """Indices of the answers to Spider dev's questions whose database the clone has."""
    return [i for i, a in enumerate(items) if gold_question(a, gold) is not None]


def execute(
    rows_by_method: Mapping[str, Sequence[dict[str, Any] | None]], items: list[Answer], gold: SpiderGold
) -> None:
    """Add ``gold_rows`` (True/False) to each method's row of every executable answer."""
    cache: dict[int, tuple[Rows, bool]] = {}
    for i in executable(items, gold):
        a = items[i]
        index = gold_question(a, gold)
        assert index is not None
        question = gold.questions[index]
        if index not in cache:
            database = gold.database(question["db_id"])
            assert database is not None
            cache[index] = (run_query(database, question["query"]), gold_is_ordered(question["query"]))
        reference, ordered = cache[index]
        database = gold.database(a.db_id)
        assert database is not None
        for rows in rows_by_method.values():
            row = rows[i]
            if row is None:
                continue
            got = run_query(database, row.get("text") or "")
            row["gold_rows"] = same_rows(reference, got, ordered)
            row["exec_error"] = error_class(got.error)


def _run_rows(rows: Sequence[dict[str, Any] | None], picked: list[int]) -> list[dict[str, Any]]:
    return [r for i in picked if (r := rows[i]) is not None and "gold_rows" in r]


def execution_table(rows_by_method: Mapping[str, Sequence[dict[str, Any] | None]], picked: list[int]) -> str:
    """Per method: how many answers ran, ran without error, returned the gold rows, and were
    scored faithful yet failed when run (a repair that reads as the draft's but does not run)."""
    header = ["method", "answers run", "ran without error", "return the gold rows", "faithful, fails when run"]
    out = []
    for name, rows in rows_by_method.items():
        mine = _run_rows(rows, picked)
        ran = sum(r["exec_error"] is None for r in mine)
        failing = sum(bool(r.get("faithful")) and r["exec_error"] is not None for r in mine)
        scored = any("faithful" in r for r in mine)
        out.append(
            [
                name,
                len(mine),
                _pct(ran, len(mine)),
                _pct(sum(r["gold_rows"] for r in mine), len(mine)),
                failing if scored else "",
            ]
        )
    return markdown_table(header, out)


def error_table(rows_by_method: Mapping[str, Sequence[dict[str, Any] | None]], picked: list[int]) -> str:
    """How many of each method's answers failed with each class of error (names left out)."""
    counts = {name: Counter(r["exec_error"] for r in _run_rows(rows, picked)) for name, rows in rows_by_method.items()}
    total = sum((Counter({k: v for k, v in c.items() if k}) for c in counts.values()), Counter())
    lines = [[label, *(counts[name][label] for name in counts)] for label, _ in total.most_common()]
    return markdown_table(["error", *counts], lines)


# -- main --------------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.real_sql_repair", description=__doc__.split("\n")[0])
    parser.add_argument(
        "clone", type=Path, nargs="?", default=None, help="a local clone of github.com/bird-bench/mini_dev (tuned on)"
    )
    parser.add_argument("--nl2sql360", type=Path, default=None, help="a local clone of HKUSTDial/NL2SQL360")
    parser.add_argument(
        "--llm-nl2sql", type=Path, default=None, help="a local clone of Qiqi-sweety/LLM-NL2SQL (held-out 2)"
    )
    parser.add_argument(
        "--chatgpt-sql", type=Path, default=None, help="a local clone of THU-BPM/chatgpt-sql (held-out 2)"
    )
    parser.add_argument(
        "--bird-turbo", type=Path, default=None, help="a local clone of AlibabaResearch/DAMO-ConvAI (held-out 4)"
    )
    parser.add_argument(
        "--verisql", type=Path, default=None, help="a local clone of awaisaziz/uncertainity-text2sql (held-out 5)"
    )
    parser.add_argument(
        "--nl2sql-bench", type=Path, default=None, help="a local clone of Artessay/NL2SQL-Benchmark (held-out 6)"
    )
    parser.add_argument("--dail-sql", type=Path, default=None, help="a local clone of BeachWang/DAIL-SQL (held-out 7)")
    parser.add_argument(
        "--bird-dev",
        type=Path,
        default=None,
        help="a clone with BIRD dev's data/bird/dev.json (LLM-NL2SQL, NL2SQL-Benchmark): DAIL-SQL's databases",
    )
    parser.add_argument(
        "--lamini",
        type=Path,
        default=None,
        help="a local clone of samlhuillier/text-sql-with-execution-evaluation (held-out 7)",
    )
    parser.add_argument(
        "--spider", type=Path, default=None, help="a clone with Spider's dev.json and database/*/*.sqlite"
    )
    parser.add_argument(
        "--hand-fixes", type=Path, nargs="*", default=HAND_FIXES, help="files of fixes written by hand (JSON)"
    )
    parser.add_argument("--limit", type=int, default=None, help="replay at most N rejected answers of each collection")
    parser.add_argument(
        "--skip",
        type=int,
        default=0,
        help="leave out the first N of each collection (in the interleaved order)",
    )
    parser.add_argument("--quick", action="store_true", help="6 answers of each collection (unless --limit)")
    parser.add_argument(
        "--questions", type=Path, default=None, help="mini_dev_sqlite.json from the MiniDev download (question text)"
    )
    parser.add_argument("--target", action="store_true", help="ours with the SmolLM2 target (slow on a CPU)")
    parser.add_argument("--no-target", action="store_true", help="ours with target=False (the default)")
    parser.add_argument("--gg0011", action="store_true", help="also grammar-guide 0.0.11 (installs its own venv)")
    parser.add_argument("--no-baseline", action="store_true", help="(the default) no grammar-guide 0.0.11")
    parser.add_argument(
        "--split",
        choices=sorted(set(SPLIT.values())),
        default=None,
        help="replay only the collections of this split (e.g. dev: NL2SQL360 spider_dev); default all",
    )
    parser.add_argument(
        "--invalid-in",
        type=Path,
        default=None,
        metavar="RESULTS",
        help="replay only the answers a results file of this benchmark (same sources) left SQLite-invalid",
    )
    parser.add_argument("--results-dir", type=Path, default=None)
    parser.add_argument("--name", default=NAME, help="the results file's name (benchmarks/results/NAME.json)")
    return parser


def _collections(args: argparse.Namespace, gold: SpiderGold | None) -> list[tuple[str, list[Answer]]]:
    out = []
    spider_ids = [q["db_id"] for q in gold.questions] if gold else []  # Spider dev's databases, in order
    if args.clone:
        out.append(("BIRD mini-dev", load_answers(args.clone)))
    if args.nl2sql360:
        for split in NL2SQL360_SPLITS:
            db_ids = spider_ids if split == "spider_dev" else None
            out.append((f"NL2SQL360 {split}", load_nl2sql360(args.nl2sql360, split, db_ids)))
    if args.llm_nl2sql:
        out += [(f"LLM-NL2SQL {split}", load_llm_nl2sql(args.llm_nl2sql, split)) for split in LLM_NL2SQL_SPLITS]
    if args.chatgpt_sql:
        out.append((CHATGPT_SQL_COLLECTION, load_chatgpt_sql(args.chatgpt_sql)))
    if args.bird_turbo:
        out.append((BIRD_TURBO_COLLECTION, load_bird_turbo(args.bird_turbo)))
    if args.verisql:
        out.append((VERISQL_COLLECTION, load_verisql(args.verisql)))
    if args.nl2sql_bench:
        out += [
            (f"{NL2SQL_BENCH_COLLECTION} {split}", load_nl2sql_bench(args.nl2sql_bench, split))
            for split in NL2SQL_BENCH_SPLITS
        ]
    if args.dail_sql:
        db_ids = bird_dev_db_ids(args.bird_dev) if args.bird_dev else []
        out.append((DAIL_SQL_COLLECTION, load_dail_sql_bird(args.dail_sql, db_ids)))
    if args.lamini:
        out.append((LAMINI_COLLECTION, load_lamini_spider(args.lamini, spider_ids)))
    return [(name, answers) for name, answers in out if args.split in (None, SPLIT[name])]


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = _parser().parse_args(argv)
    sources = [args.nl2sql360, args.llm_nl2sql, args.chatgpt_sql, args.bird_turbo, args.verisql, args.nl2sql_bench]
    sources += [args.dail_sql, args.lamini]
    if not (args.clone or any(sources)):
        _parser().error(
            "name a BIRD mini-dev clone, --nl2sql360, --llm-nl2sql, --chatgpt-sql, --bird-turbo, --verisql, "
            "--nl2sql-bench, --dail-sql or --lamini CLONE, or several"
        )
    limit = 6 if args.quick and args.limit is None else args.limit
    gold = load_spider_gold(args.spider) if args.spider else None
    questions: dict[str, str] = {}
    if args.questions:
        data = json.loads(args.questions.read_text(encoding="utf-8"))
        questions |= {f"BIRD mini-dev/{i}": q["question"] for i, q in enumerate(data)}
    if gold:
        questions |= {f"{SPIDER}/{i}": q["question"] for i, q in enumerate(gold.questions)}

    items: list[Answer] = []
    counts: dict[str, dict[str, int]] = {}
    invalid = _invalid_in(args.invalid_in) if args.invalid_in else set()
    for collection, answers in _collections(args, gold):
        rejected = sqlite_rejects(answers)
        picked = interleave(rejected, limit, args.skip)
        if args.invalid_in:
            picked = [a for a in picked if _answer_id(a) in invalid]
        counts[collection] = {"answers": len(answers), "rejected": len(rejected), "replayed": len(picked)}
        items += picked
        print(
            f"[{NAME}] {collection}: {len(answers)} answers, {len(rejected)} distinct ones SQLite rejects; "
            f"replaying {len(picked)}",
            file=sys.stderr,
            flush=True,
        )

    info = machine()
    rows_by_method: dict[str, list[dict[str, Any]]] = {}
    notes: dict[str, str] = {}

    def record(name: str, produce: Callable[[], list[dict[str, Any]]]) -> None:
        rows, note = attempt(NAME, name, len(items), produce)
        if rows is None:
            notes[name] = note or ""
            return
        for row, a in zip(rows, items, strict=True):
            score_row(row, a)
        rows_by_method[name] = rows

    if args.target:
        from grammar_guide import TargetModel

        target = TargetModel.load()
        record("ours (SmolLM2 target)", lambda: run_ours(items, questions, target=target))
    else:
        record("ours (target=False)", lambda: run_ours(items, questions, target=False))
    record("sqlglot.transpile", lambda: run_sqlglot(items))
    if args.gg0011:

        def gg_rows() -> list[dict[str, Any]]:
            out = run_gg0011(items, questions)
            notes["grammar-guide 0.0.11 versions"] = str(out.get("versions"))
            rows: list[dict[str, Any]] = out["rows"]
            return rows

        record("grammar-guide 0.0.11 generic", gg_rows)
    methods = {name: summarize(rows) for name, rows in rows_by_method.items()}
    report = _report(args, items, rows_by_method, counts, gold)
    for name, note in notes.items():
        report["text"] += f"\n\n{name}: {note}"
    print(f"\nReal SQL repair; machine: {machine_line(info)}\n")
    print(report["text"])
    payload = {
        "benchmark": NAME,
        "machine": info,
        "settings": {
            "clone": str(args.clone) if args.clone else None,
            "nl2sql360": str(args.nl2sql360) if args.nl2sql360 else None,
            **({"llm_nl2sql": str(args.llm_nl2sql)} if args.llm_nl2sql else {}),
            **({"chatgpt_sql": str(args.chatgpt_sql)} if args.chatgpt_sql else {}),
            **({"bird_turbo": str(args.bird_turbo)} if args.bird_turbo else {}),
            **({"verisql": str(args.verisql)} if args.verisql else {}),
            **({"nl2sql_bench": str(args.nl2sql_bench)} if args.nl2sql_bench else {}),
            "spider": str(args.spider) if args.spider else None,
            "collections": counts,
            "split": {c: SPLIT[c] for c in counts},
            "answers": sum(c["answers"] for c in counts.values()),
            "rejected": sum(c["rejected"] for c in counts.values()),
            "replayed": len(items),
            "limit_per_collection": limit,
            "skipped": args.skip,
            "max_corrections": MAX_CORRECTIONS,
            "timeout_s": TIMEOUT_S,
            "prompt": PROMPT,
            "questions": bool(questions),
        },
        "methods": methods,
        "notes": notes,
        **{k: v for k, v in report.items() if k != "text"},
        "table": report["text"],
        # The answers and outputs (third-party text) are left out: ids and scores only.
        "items": [{k: v for k, v in asdict(a).items() if k != "text"} for a in items],
        "rows": {m: [_scores_only(r) for r in rows] for m, rows in rows_by_method.items()},
    }
    path = write_results(args.name, payload, args.results_dir)
    print(f"\nwrote {path}", file=sys.stderr)
    return payload


def _report(
    args: argparse.Namespace,
    items: list[Answer],
    rows_by_method: dict[str, list[dict[str, Any]]],
    counts: dict[str, dict[str, int]],
    gold: SpiderGold | None,
) -> dict[str, Any]:
    """The tables: one per collection, one per split (tuned on / dev / held-out), the dialects,
    and, with Spider's databases, execution (all, and the sample fixed by hand)."""
    parts: list[str] = []
    out: dict[str, Any] = {"by_collection": {}, "by_split": {}}
    for collection, c in counts.items():
        picked = [i for i, a in enumerate(items) if a.collection == collection]
        if not picked:
            continue
        text = table({m: summarize([rows[i] for i in picked]) for m, rows in rows_by_method.items()})
        out["by_collection"][collection] = text
        parts.append(
            f"{collection} ({SPLIT[collection]}): {len(picked)} of {c['rejected']} rejected answers "
            f"(of {c['answers']})\n\n{text}"
        )
    for split in dict.fromkeys(SPLIT[a.collection] for a in items):
        picked = [i for i, a in enumerate(items) if SPLIT[a.collection] == split]
        text = table({m: summarize([rows[i] for i in picked]) for m, rows in rows_by_method.items()})
        out["by_split"][split] = text
        parts.append(f"Summary, {split} ({len(picked)} answers)\n\n{text}")
    out["by_dialect"] = dialect_table(rows_by_method, items)
    parts.append(out["by_dialect"])
    if gold is not None:
        parts += _execution_report(args, items, rows_by_method, gold, out)
    ours = next((m for m in rows_by_method if m.startswith("ours")), None)
    if ours is not None:
        out["goals"] = goals_table(rows_by_method[ours], items, out.get("execution_sample_rates"))
        parts.append(f"Issue 28's goals, {ours}\n\n{out['goals']}")
        out["crashes"] = [
            {**{k: v for k, v in asdict(items[i]).items() if k != "text"}, "error": row["error"]}
            for i, row in enumerate(rows_by_method[ours])
            if row.get("crash")
        ]
    out["text"] = "\n\n".join(parts)
    return out


def _expressible(rows: list[dict[str, Any]]) -> str:
    """Faithful among the answers with a SQLite form (``draft_shapes.NO_SQLITE_FORM``): those that use
    a construct SQLite 3.40 has no form for cannot come back faithful."""
    rest = [r for r in rows if r.get("shape") != "no SQLite form"]
    kept = sum(r["faithful"] for r in rest)
    return (
        f" Faithful among the {len(rest)} answers that use no construct without a SQLite form: {_pct(kept, len(rest))}."
    )


def goals_table(rows: list[dict[str, Any]], items: list[Answer], sample: dict[str, float] | None) -> str:
    """Issue 28's goals per split: one-statement valid 100%, no crash, faithful >= 90%, 0 invented
    literals, <= 1.5 s per answer; and (Spider sample) gold rows >= 90% of the hand fix's rate."""
    header = ["split", "answers", "one statement valid (100%)", "crashes (0)", "faithful (>= 90%)"]
    header += ["invented literals (0)", "s / answer (<= 1.5)"]
    by_split: dict[str, list[dict[str, Any]]] = {}
    for row, a in zip(rows, items, strict=True):
        by_split.setdefault(SPLIT[a.collection], []).append(row)
    summaries = {split: summarize(mine) for split, mine in by_split.items()}
    out = []
    for split, m in summaries.items():
        n = m["answers"]
        out.append(
            [split, n, _pct(m["single"], n), m["crashes"], _pct(m["faithful"], n), m["invented_literals"], m["seconds"]]
        )
    text = markdown_table(header, out)
    for split, m in summaries.items():
        text += (
            f"\n\n{split}: {m['faithful_but_cut_off']} more would be faithful but for the answer's unfinished "
            "end, taken back and recorded (the model's answer was cut off: issue 28 item 4)."
        )
        shapes = ", ".join(f"{k} {v}" for k, v in sorted(m["unfaithful_shapes"].items()))
        text += f" The unfaithful ones by what the model wrote (`draft_shape`): {shapes or 'none'}."
        text += _expressible(by_split[split])
    if sample:
        hand, ours = sample.get("hand fix (slip only)", 0.0), sample.get("ours", 0.0)
        ratio = f"{ours / hand:.0%}" if hand else "-"
        text += (
            f"\n\nGold rows on the sample fixed by hand: ours {ours:.0%} against the hand fix's {hand:.0%}: "
            f"{ratio} (goal >= 90%)."
        )
    return text


def _execution_report(
    args: argparse.Namespace,
    items: list[Answer],
    rows_by_method: dict[str, list[dict[str, Any]]],
    gold: SpiderGold,
    out: dict[str, Any],
) -> list[str]:
    fixes = load_hand_fixes(args.hand_fixes)
    with_unrepaired: dict[str, Sequence[dict[str, Any] | None]] = {
        **rows_by_method,
        "unrepaired": run_unrepaired(items),
    }
    hand: list[dict[str, Any] | None] = []
    for a in items:
        fix = fixes.get((a.collection, a.source, a.key))
        hand.append(None if fix is None else {"text": fix["fix"], "error": None, "seconds": 0.0})
    with_hand: dict[str, Sequence[dict[str, Any] | None]] = {"hand fix (slip only)": hand, **with_unrepaired}
    execute(with_hand, items, gold)
    picked = executable(items, gold)
    sample = [i for i in picked if hand[i] is not None]
    out["execution"] = execution_table(with_unrepaired, picked)
    out["execution_errors"] = error_table(with_unrepaired, picked)
    out["execution_sample"] = execution_table(with_hand, sample)
    out["execution_sample_rates"] = {
        ("ours" if m.startswith("ours") else m): sum(bool((r := rows[i]) and r["gold_rows"]) for i in sample)
        / (len(sample) or 1)
        for m, rows in with_hand.items()
    }
    out["execution_rows"] = {
        m: {str(i): {"gold_rows": r["gold_rows"], "exec_error": r["exec_error"]} for i in picked if (r := rows[i])}
        for m, rows in with_hand.items()
    }
    return [
        f"Executed on Spider's databases: {len(picked)} Spider dev answers (gold rows: the gold query's, "
        f"a multiset unless it orders them)\n\n{out['execution']}",
        f"Why the others failed (SQLite's errors by class)\n\n{out['execution_errors']}",
        f"The sample fixed by hand ({len(sample)} answers, {', '.join(p.name for p in args.hand_fixes)})"
        f"\n\n{out['execution_sample']}",
    ]


if __name__ == "__main__":
    main()
