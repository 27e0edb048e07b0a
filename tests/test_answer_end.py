"""Where the draft's answer ends: one answer (a second statement after a complete one is cut and
named, never joined on with ``;``), and a finish that closes rather than invents (the unfinished
last words are taken back to where closing marks end the text, and the result says so).

The drafts are the draft's whole answer as a function returns it; the outputs are checked by SQLite
(one statement, prepared to its end) and by ``json.loads``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

import grammar_guide as gg
from grammar_guide import Cut
from tests.support import sqlite_oracle
from tests.support.sql_corpus import split_script


def guided(grammar: str | gg.Grammar, draft: str) -> gg.GuideResult:
    return gg.guide(lambda prompt: draft, grammar, "Answer with the query only.", target=False)


def cut_texts(result: gg.GuideResult, reason: str) -> list[str]:
    return [e.text for e in result.events if isinstance(e, Cut) and e.reason == reason]


def streamed(answer: str, chunk: int | None, prompt: str = "q") -> gg.GuideResult:
    """``answer`` guided as a draft that streams it in chunks of ``chunk`` characters (or whole),
    asked ``prompt`` (asking again costs its tokens: the evidence read after a violation)."""

    def draft(prompt: str, prefix: str) -> Iterator[str]:
        if prefix:
            return iter(())
        return iter([answer] if chunk is None else [answer[i : i + chunk] for i in range(0, len(answer), chunk)])

    return gg.guide(gg.FunctionDraft(draft, continues_prefix=True), "sqlite", prompt, target=False)


#: A text-to-SQL prompt's length (a schema and a question): what the reader reads on after a
#: violation, as far as asking the draft again would cost.
SCHEMA_PROMPT = "CREATE TABLE laps (raceId INTEGER, driverId INTEGER, lapTime TEXT, lapSpeed REAL);\n" * 12


def one_statement(sql: str) -> bool:
    return sqlite_oracle.check(sql).valid and len(split_script(sql)) == 1


@pytest.mark.parametrize(
    ("draft", "answer", "cut"),
    [
        ("SELECT 1; SELECT 2", "SELECT 1;", " SELECT 2"),
        ("SELECT a FROM t\nSELECT b FROM u", "SELECT a FROM t", "\nSELECT b FROM u"),
        # GPT-4's run-on: an instruction comment, then the answer to another question.
        (
            "SELECT count(*) FROM budget WHERE event_name = 'Spring Budget Review' "
            "/* Answer the following: how many members? */ SELECT count(*) FROM member",
            "SELECT count(*) FROM budget WHERE event_name = 'Spring Budget Review'",
            " /* Answer the following: how many members? */ SELECT count(*) FROM member",
        ),
        # REPLACE read first as an alias of t, and INTO as the start of INTERSECT.
        ("SELECT a FROM t\nREPLACE INTO t VALUES (1)", "SELECT a FROM t", "\nREPLACE INTO t VALUES (1)"),
        ("SELECT a FROM t ORDER BY a DESC LIMIT 5 SELECT", "SELECT a FROM t ORDER BY a DESC LIMIT 5", " SELECT"),
        # Mixtral's second query in a fenced block after the first (before, a stop: nothing named).
        (
            "SELECT a FROM t\n```sql\n\nSELECT b FROM u\n```\n```",
            "SELECT a FROM t",
            "\n```sql\n\nSELECT b FROM u\n```\n```",
        ),
    ],
)
def test_a_second_statement_is_cut_and_named(draft: str, answer: str, cut: str) -> None:
    result = guided("sqlite", draft)
    assert result.text == answer
    assert one_statement(result.text)
    assert cut_texts(result, "another answer") == [cut]
    assert result.faithful and result.complete
    assert result.changes.other_answers == 1
    assert result.changes.summary().endswith("(1 other answer cut)")


def test_prose_in_a_block_after_a_closing_fence_is_no_second_answer() -> None:
    result = guided("sqlite", "SELECT a FROM t\n```\n\nThis query returns a.\n```")
    assert result.text == "SELECT a FROM t" and cut_texts(result, "stop") and result.changes.summary() == "faithful"


def test_the_script_grammar_keeps_every_statement() -> None:
    result = guided("sqlite_script", "SELECT 1; SELECT 2")
    assert result.text == "SELECT 1; SELECT 2"
    assert not cut_texts(result, "another answer")


@pytest.mark.parametrize(
    "draft",
    [
        "SELECT a FROM t WHERE x IN (SELECT b FROM u)",  # IN is the start of INSERT: not another answer
        "SELECT a FROM t; -- the names of all t",
    ],
)
def test_an_answer_that_goes_on_is_not_cut(draft: str) -> None:
    result = guided("sqlite", draft)
    assert result.text == draft
    assert result.changes.other_answers == 0


@pytest.mark.parametrize(
    ("grammar", "draft", "text", "taken_back"),
    [
        # An operator goes with its left operand: ``WHERE molecule_id`` would be a condition the
        # draft never wrote.
        ("sqlite", "SELECT * FROM molecule WHERE molecule_id = ", "SELECT * FROM molecule", " WHERE molecule_id = "),
        (
            "sqlite",
            "SELECT b.title FROM b WHERE b.lang = 'fr' AND b.pages >",
            "SELECT b.title FROM b WHERE b.lang = 'fr'",
            " AND b.pages >",
        ),
        ("sqlite", "SELECT a, b FROM t ORDER BY a DESC,", "SELECT a, b FROM t ORDER BY a DESC", ","),
        ("sqlite", "SELECT name FROM", "SELECT name", " FROM"),
        (
            "sqlite",
            "SELECT a FROM t WHERE b IN (SELECT c FROM u WHERE",
            "SELECT a FROM t WHERE b IN (SELECT c FROM u)",
            " WHERE",
        ),
        # A comment the answer ends in is one lexeme, however many words it holds; a comment's
        # marks inside a string are not one. (A comment that holds code after its words is a line
        # break lost, restored: test_swallowed_comment.)
        (
            "sqlite",
            "SELECT a FROM t WHERE x = 1 AND -- only the rows the report still needs, once",
            "SELECT a FROM t WHERE x = 1",
            " AND -- only the rows the report still needs, once",
        ),
        ("sqlite", "SELECT a FROM t WHERE x = 'a -- b' AND", "SELECT a FROM t WHERE x = 'a -- b'", " AND"),
        # A call goes with its name: ``HAVING COUNT`` would make the function a column.
        (
            "sqlite",
            "SELECT a FROM t WHERE c IN (SELECT d FROM u GROUP BY d HAVING COUNT(*) >",
            "SELECT a FROM t WHERE c IN (SELECT d FROM u GROUP BY d)",
            " HAVING COUNT(*) >",
        ),
        # A mark the grammar forced text into is no operator: ``/`` after a table can only open a
        # comment (``*`` forced); it goes with the forced text, the table stays (before: refused);
        # only `` /`` is listed as dropped.
        ("sqlite", "SELECT a FROM t /", "SELECT a FROM t", " /*"),
        # All of the draft's text after an edit may be taken back (the edit's own text stays).
        ("sqlite", "SELECT a FROM t ORDER BY c DEC /", "SELECT a FROM t ORDER BY c DESC", " /*"),
        # Without a target, as far back as a close is found (here 7 lexemes; before, beyond 6,
        # GuideExhausted): the answer's other columns kept, the one cut off named.
        (
            "sqlite",
            "SELECT T1.name, CASE WHEN T1.age > 18 THEN",
            "SELECT T1.name",
            ", CASE WHEN T1.age > 18 THEN",
        ),
        ("json", '{"a": 1, "b": ', '{"a": 1}', None),  # (the JSON rewrite that drops a dangling key)
    ],
)
def test_the_finish_takes_back_what_only_invention_could_finish(
    grammar: str, draft: str, text: str, taken_back: str | None
) -> None:
    result = guided(grammar, draft)
    assert result.text == text
    assert cut_texts(result, "unfinished") == ([taken_back] if taken_back else [])
    # What the result lists as dropped is the draft's text: not the ``*`` the grammar forced.
    assert result.dropped and all(d.text in draft for d in result.dropped)
    assert result.complete
    assert not result.faithful and result.changes.dropped == 1 and result.changes.invented == 0
    assert "1 dropped" in result.changes.summary()
    if grammar == "sqlite":
        assert one_statement(result.text)
    else:
        json.loads(result.text)


def test_closing_marks_come_before_taking_back() -> None:
    result = guided("sqlite", "SELECT * FROM bond WHERE bond_type = '")
    assert result.text == "SELECT * FROM bond WHERE bond_type = ''"
    assert not cut_texts(result, "unfinished")
    assert result.faithful and result.changes.closed == 1


def test_the_draft_is_never_taken_back_whole() -> None:
    with pytest.raises(gg.GuideExhausted):
        guided("sqlite", "SELECT")


def test_no_stub_is_made_of_an_answer_whose_rest_was_left_out() -> None:
    # The rest after a violation no edit fixes is left out; the text's end is then no end the
    # draft wrote, and taking back further than the finish's own few lexemes would leave a stub.
    # (Taken back to a close, it would be ``SELECT name, age``: its FROM and ORDER BY gone.)
    # (A SUM's CASE without THEN: a COUNT's is rewritten, COUNT(*) FILTER (WHERE …).)
    draft = "SELECT name, age, SUM(CASE WHEN z > 1 AND w < 2 AND v = 3) AS q FROM t ORDER BY name"
    with pytest.raises(gg.GuideExhausted) as raised:
        guided("sqlite", draft)
    assert raised.value.reason == "needs invention"
    assert cut_texts(raised.value.result, "unrepaired") == ["3) AS q FROM t ORDER BY name"]


CONFIG = r"""
start: (pair _NL)* pair _NL?
pair: KEY "=" VALUE
KEY: /[a-z_]+/
VALUE: /[0-9]+|"[^"]*"/
_NL: /\n+/
%ignore / +/
"""


def test_a_part_a_separator_would_join_is_not_another_answer() -> None:
    # Only the new line is missing: the second pair is not a second answer to cut.
    result = guided(gg.Grammar.from_lark(CONFIG), "retries = 1 timeout = 5")
    assert result.changes.other_answers == 0
    # Whatever the repair, what it leaves out is recorded: never a silent, faithful drop.
    assert "timeout = 5" in result.text or (not result.faithful and result.changes.dropped)
    assert "retries = 1" in result.text and "retries = 10" not in result.text


_PIPES = gg.Grammar.from_lark(
    r"""
start: query ("|" pipe)*
query: NAME ("where" expr)?
pipe: NAME NUMBER?
expr: NAME "==" STRING
NAME: /[a-z_]+/
NUMBER: /[0-9]+/
STRING: /"[^"]*"/
%ignore /[ \n]+/
""",
    "start",
    name="pipes",
)


def test_a_name_running_on_from_a_complete_text_is_not_another_answer() -> None:
    # ``hwere`` (a slip of ``where``) reads as the name that begins a new query; cut as another
    # answer, the draft's condition was lost with the result still called faithful.
    result = guided(_PIPES, 'process hwere name == "a"')
    assert not cut_texts(result, "another answer")
    assert result.text == 'process where name == "a"'
    assert not result.faithful


def test_a_new_line_still_begins_another_answer() -> None:
    result = guided(_PIPES, 'process where name == "a"\nfile where name == "b"')
    assert result.text.strip() == 'process where name == "a"'
    assert result.faithful
    assert result.changes.other_answers == 1


def test_a_sentence_on_the_same_line_after_the_answers_own_semicolon_is_an_aside() -> None:
    # A base model going on with its prompt's pattern, its new lines made spaces by whoever recorded it.
    draft = "SELECT COUNT(*) FROM singer;  Write Sql for the following question: How many? Answer : SELECT 1;"
    result = gg.guide(lambda prompt: draft, "sqlite", "q", target=False)
    assert result.text == "SELECT COUNT(*) FROM singer;"
    assert result.faithful and [d.reason for d in result.dropped] == ["after complete text"]
    # Without the answer's ';' the sentence is cut where the text is complete before its first
    # word: 'Write' had been read as an alias, then ', Sql for' joined on as more columns.
    result = gg.guide(lambda prompt: draft.replace(";", "", 1), "sqlite", "q", target=False)
    assert result.text == "SELECT COUNT(*) FROM singer"
    assert [d.reason for d in result.dropped] == ["after complete text"]


@pytest.mark.parametrize("chunk", [None, 1, 3])
def test_square_bracket_tags_around_the_answer_are_markup(chunk: int | None) -> None:
    # sqlcoder's '[SOL] … [/SOL]': SQLite would read '[/SOL]' as the table's alias, and '[SOL]'
    # had been made a column of an invented 'select'.
    answer = "  [SOL] SELECT COUNT(*) FROM t; [/SOL] more"

    result = streamed(answer, chunk)
    assert result.text.strip() == "SELECT COUNT(*) FROM t;" and result.faithful
    # A bracketed name is a name ('[sql]' is no tag inside the query).
    assert gg.guide(lambda prompt: "SELECT [sql] FROM t", "sqlite", "q", target=False).text == "SELECT [sql] FROM t"


@pytest.mark.parametrize("chunk", [None, 1, 3])
@pytest.mark.parametrize(
    "answer",
    [
        "The query is `SELECT name FROM singer WHERE age > 3`. It lists the names.",
        "Query: `SELECT name FROM singer WHERE age > 3`",
    ],
)
def test_inline_code_in_prose_is_the_answer(chunk: int | None, answer: str) -> None:
    # Markdown's inline code after prose: its backtick closes the answer. The prose had been made
    # into code ('select The .query is `SELECT name FROM singer`. It lists, names').
    result = streamed(answer, chunk)
    assert result.text == "SELECT name FROM singer WHERE age > 3" and result.faithful
    assert one_statement(result.text)
    assert cut_texts(result, "preamble")[0].endswith("`")


@pytest.mark.parametrize("chunk", [None, 1, 3])
@pytest.mark.parametrize(
    ("answer", "fence"),
    [
        ('The SQL query to answer the question "How many?" is:  ```sql SELECT count(*) FROM singer; ``` ', "```sql "),
        ("The query is:  ```SELECT count(*) FROM singer; ``` It counts them.", "```"),
        ("The query is:  ``` SELECT count(*) FROM singer; ```", "``` "),
    ],
)
def test_a_fence_on_the_codes_own_line_opens_the_answer(chunk: int | None, answer: str, fence: str) -> None:
    # A reply made one line (a runner's flattening): the fence, its tag, then the code on the same
    # line. The whole reply had been cut as prose (or its words made code: 'select The, query is').
    result = streamed(answer, chunk)
    assert result.text.strip() == "SELECT count(*) FROM singer;" and result.faithful
    assert cut_texts(result, "preamble")[0].rstrip().endswith(fence.rstrip())


def test_backticks_inside_an_answer_stay_names() -> None:
    # A quoted name is no inline code: the answer began before it.
    draft = "SELECT `name` FROM `singer` WHERE `age` > 3"
    assert guided("sqlite", draft).text == draft


@pytest.mark.parametrize("chunk", [None, 1, 3])
@pytest.mark.parametrize(
    ("answer", "preamble"),
    [
        # A runner wrote its prompt's last word ('Answer : SELECT') before the model's inline code.
        (" SELECT `SELECT COUNT(*) FROM t WHERE a > 80;`  Write Sql for the next question: How", " SELECT "),
        ("`SELECT COUNT(*) FROM t WHERE a > 80` and that is all.", ""),
    ],
)
def test_inline_code_ends_at_its_backtick(chunk: int | None, answer: str, preamble: str) -> None:
    # The whole code had been a name quoted with backticks: SELECT `SELECT COUNT(*) …;`.
    result = streamed(answer, chunk)
    assert result.text.rstrip(";") == "SELECT COUNT(*) FROM t WHERE a > 80" and result.faithful
    assert cut_texts(result, "preamble") == ([preamble] if preamble else [])
    assert cut_texts(result, "formatting") == ["``"]
    # A name in backticks after SELECT is a name; the prose after it is cut as before.
    named = gg.guide(
        lambda prompt: " SELECT `heading_accuracy`   Write Sql for the following question: How many users are there?",
        "sqlite",
        "q",
        target=False,
    )
    assert named.text == " SELECT `heading_accuracy`"


@pytest.mark.parametrize("chunk", [None, 2])
def test_prose_after_a_complete_query_on_its_line_is_cut_at_the_violation(chunk: int | None) -> None:
    # The line had been read as a line of prose from its start, and the whole answer refused.
    answer = "SELECT n FROM p ORDER BY n Join the tables on their ids to see more."

    result = streamed(answer, chunk)
    assert result.text.rstrip() == "SELECT n FROM p ORDER BY n" and result.faithful and one_statement(result.text)
    cut = cut_texts(result, "prose")
    assert len(cut) == 1 and cut[0].startswith(" Join the tables")  # (streamed: as far as it was read)


@pytest.mark.parametrize("chunk", [None, 5])
def test_the_answers_last_name_is_never_left_out_with_the_prose_after_it(chunk: int | None) -> None:
    # A base model going on with its prompt after the answer: 'votes Consider the … knowledge' was
    # read back to the table's name, 'votes' left out with the sentence, and the prose after it
    # made into a table and its alias. The answer is complete after 'votes': the sentence is cut there.
    draft = (
        " SELECT MAX(COUNT(Id)) FROM votes Consider the extra knowledge, it is very useful to help you:"
        " the date of votes refers to CreationDate where Max(Count(Id)) Answer : SELECT MAX(COUNT(Id)) FROM votes"
    )

    def chunks(prompt: str, prefix: str) -> Iterator[str]:
        if prefix:
            return iter(())
        return iter([draft] if chunk is None else [draft[i : i + chunk] for i in range(0, len(draft), chunk)])

    result = gg.guide(gg.FunctionDraft(chunks, continues_prefix=True), "sqlite", "q", target=False)
    assert result.text.strip() == "SELECT MAX(COUNT(Id)) FROM votes"
    assert result.faithful and {d.reason for d in result.dropped} <= {"prose", "after complete text"}
    # Where the sentence's words begin with a function word nothing before it is taken for prose either.
    draft = "SELECT a FROM t WHERE b = c This is the answer to it"
    assert gg.guide(lambda prompt: draft, "sqlite", "q", target=False).text.strip() == "SELECT a FROM t WHERE b = c"


def test_a_list_the_answer_ends_with_is_kept_before_the_prompt_it_goes_on_with() -> None:
    # 'status;' reads back as a word of the sentence 'Write Sql for …': the answer is complete
    # after each name of its GROUP BY list, and keeps them all (only 'group by' had been taken back).
    draft = "SELECT a, b FROM t WHERE c = 'x' group by a, b; Write Sql for the following question: List all"
    result = gg.guide(lambda prompt: draft, "sqlite", "q", target=False)
    assert result.text.strip().rstrip(";") == "SELECT a, b FROM t WHERE c = 'x' group by a, b"
    assert result.faithful


def test_a_sentence_that_begins_with_a_capitalised_word_keeps_none_of_its_words_as_code() -> None:
    # 'SELECT Unfortunately, the tables …': 'Unfortunately' completes a SELECT, but it begins the
    # sentence: it is not kept as a column (the answer is prose, not code).
    draft = (
        "SELECT Unfortunately, the tables provided do not have any columns or data to work with. However,"
        " assuming that the tables have the necessary columns, the query might look something like this:"
    )
    with pytest.raises(gg.GuideExhausted) as exhausted:
        gg.guide(lambda prompt: draft, "sqlite", "q", target=False)
    assert "Unfortunately" not in exhausted.value.result.text  # no answer: the result says so


# -- issue 28 item 2: a sentence's end is where the answer may end or begin -----------------------


@pytest.mark.parametrize("chunk", [None, 4])
def test_a_sentence_s_full_stop_is_no_qualifier_and_its_words_no_code(chunk: int | None) -> None:
    # A base model wrote its WHERE clause in English: 'range.  Write' had been read as a qualified
    # name, '.' inserted after 'underwent' and '1997' dropped to make the sentence parse.
    draft = (
        " SELECT COUNT(*) FROM Patient WHERE admitted twice in 2001 AND sugar levels above the usual limit."
        "  Write Sql for the following question: How many patients were admitted twice in 2001?"
    )
    result = streamed(draft, chunk, SCHEMA_PROMPT)
    assert result.text == " SELECT COUNT(*) FROM Patient WHERE admitted"
    assert not [e for e in result.events if isinstance(e, gg.Correction)]  # nothing inserted or dropped
    assert not result.faithful  # 'admitted' may be the sentence's first word, kept as a name
    assert one_statement(result.text)


def test_a_sentence_is_not_read_on_into_after_its_function_words() -> None:
    # 'the attribute of the' was left out and the answer read on at 'player Ariel Borysiuk.' (an
    # alias, then ',' inserted): the rest of the sentence, up to its full stop, is no code either.
    draft = (
        " SELECT `finishing` is the attribute of the player Lionel Messi.  Write Sql for the following"
        " question: What's the average weight of all players?"
    )
    result = guided("sqlite", draft)
    assert result.text == " SELECT `finishing`"
    assert not [e for e in result.events if isinstance(e, gg.Correction)]


@pytest.mark.parametrize("chunk", [None, 3])
@pytest.mark.parametrize(
    "sentence",
    [
        " SELECT `serum A` and `serum B` are the two values that were measured.",
        " SELECT `lapTime` and `lapSpeed` in `laps` table.",
    ],
)
def test_a_sentence_the_answer_begins_with_is_preamble_to_the_statement_after_it(
    chunk: int | None, sentence: str
) -> None:
    # A runner prepended SELECT to a base model's sentence; the model's query follows it. The
    # sentence is no complete statement of code (one keyword in capitals, English words): it is
    # left out before the answer, not kept as 'SELECT `serum A` and `serum B`' with the query cut,
    # nor joined to the query ('in `laps` .  lapTime, …': 'table' and 'SELECT' dropped).
    query = " SELECT lapTime FROM laps WHERE raceId = 7 AND driverId = 3;"
    result = streamed(sentence + " " + query, chunk, SCHEMA_PROMPT)
    assert result.text.strip() == query.strip()
    prose = [c for c in result.events if isinstance(c, gg.Correction) and c.rule == "prose"]
    assert [c.removed.strip() for c in prose] == [sentence.strip()]


@pytest.mark.parametrize("chunk", [None, 3])
def test_after_a_complete_query_a_sentence_end_ends_the_answer(chunk: int | None) -> None:
    # Code before the sentence (two keywords in capitals, no English word): the first statement
    # is the answer; the word before the full stop and the statement after it are cut, not joined.
    draft = "SELECT lapTime FROM laps table.  SELECT lapSpeed FROM laps WHERE raceId = 7;"
    result = streamed(draft, chunk, SCHEMA_PROMPT)
    assert result.text == "SELECT lapTime FROM laps"
    # The words cut go on from the kept ones with a small letter: prose, a sentence the kept words
    # may have begun, and the result says so (not faithful); a capitalised word begins a sentence.
    assert [d.reason for d in result.dropped] == ["prose"] and not result.faithful
    result = streamed(draft.replace("table.", "Table alone.", 1), chunk, SCHEMA_PROMPT)
    assert result.text == "SELECT lapTime FROM laps"
    assert [d.reason for d in result.dropped] == ["after complete text"] and result.faithful
