"""Grammar loading: Lark's meaning through lark's own loader, and precise errors for what the
matcher cannot honour."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import lark
import pytest

from grammar_guide import Grammar, GrammarError, Rewrite
from tests.support.lark_verdict import lark_accepts


def verdict(grammar: Grammar, text: str) -> str:
    checker = grammar.checker()
    n = checker.feed(text)
    if n < len(text):
        return f"invalid@{n}"
    return "complete" if checker.is_complete else "prefix"


def lark_verdict(grammar_text: str, text: str, **options) -> str:
    parser = lark.Lark(grammar_text, parser="earley", lexer="dynamic", **options)
    try:
        parser.parse(text)
    except lark.exceptions.UnexpectedEOF:
        return "prefix"
    except lark.exceptions.UnexpectedInput:
        return "invalid"
    return "complete"


# -- loading with lark's loader ---------------------------------------------------------------


def test_import_common_terminals():
    text = textwrap.dedent(
        """
        start: pair+
        pair: CNAME "=" (SIGNED_NUMBER | ESCAPED_STRING) ";"
        %import common.CNAME
        %import common.SIGNED_NUMBER
        %import common.ESCAPED_STRING
        %import common.WS
        %import common.C_COMMENT
        %ignore WS
        %ignore C_COMMENT
        """
    )
    g = Grammar.from_lark(text)
    assert verdict(g, 'x = -1.5e3; name="a \\" b"; /* c */ y=2;') == "complete"
    assert verdict(g, "x = 1; /* one */ y = 2; /* two */") == "complete"
    assert verdict(g, 'x = "unterminated') == "prefix"
    assert verdict(g, 'x = "a\nb";') == "invalid@6"  # ESCAPED_STRING stays on one line
    assert lark_verdict(text, 'x = "a\nb";') == "invalid"
    assert verdict(g, "1x = 2;") == "invalid@0"


def test_import_from_another_grammar_file(tmp_path: Path):
    (tmp_path / "words.lark").write_text("WORD: /[a-z]+/\nnumber: /[0-9]+/\n")
    main = tmp_path / "main.lark"
    main.write_text('start: WORD ":" number\n%import .words (WORD, number)\n')
    g = Grammar.from_file(main)
    assert g.name == "main"
    assert verdict(g, "abc:12") == "complete"
    assert verdict(g, "abc:") == "prefix"
    assert verdict(g, "abc:x") == "invalid@4"
    # The same through import_paths.
    g2 = Grammar.from_lark("start: WORD\n%import words.WORD\n", import_paths=[tmp_path])
    assert verdict(g2, "hello") == "complete"


def test_refused_imported_terminal_is_placed_in_the_file_that_defines_it(tmp_path: Path):
    """pylogics' ltl.lark has ``%import .pl.SYMBOL_NAME``: a refusal of SYMBOL_NAME (or of a
    terminal it needs, named ``pl__...`` by lark) names pl.lark's line and column."""
    (tmp_path / "pl.lark").write_text('start: SYM\n\nSYM: "x" | LOOK\nLOOK: /a(?=bc)/\n')
    main = tmp_path / "ltl.lark"
    main.write_text("start: SYM+\n%import .pl.SYM -> SYM\n")
    with pytest.raises(GrammarError, match="look-around") as info:
        Grammar.from_file(main)
    error = info.value
    assert (error.line, error.column, error.source) == (3, 1, str(tmp_path / "pl.lark")), error
    (tmp_path / "ltl2.lark").write_text("start: WORD\n%import .pl (WORD)\n")
    (tmp_path / "pl.lark").write_text("WORD: /[a-z]+(?=[b;])/\n")  # "a" goes on with "b", which it allows: refused
    with pytest.raises(GrammarError) as info:
        Grammar.from_lark((tmp_path / "ltl2.lark").read_text(), import_paths=[tmp_path])
    assert (info.value.line, info.value.column) == (1, 7), info.value


def test_import_of_a_missing_file_is_a_grammar_error():
    with pytest.raises(GrammarError, match=r"nosuch\.lark") as info:
        Grammar.from_lark('start: "a"\n%import nosuch.X\n')
    assert info.value.construct == "%import"


def test_templates_priorities_aliases_and_rule_modifiers():
    text = textwrap.dedent(
        """
        start: _sep{item, ","} ";"?
        _sep{x, sep}: x (sep x)*
        ?item: word -> aliased
             | keyword
             | NUMBER
        word.2: NAME
        !keyword.1: "if" | "else"
        NAME: /[a-z]+/
        NUMBER.3: /[0-9]+/
        %ignore " "
        """
    )
    g = Grammar.from_lark(text)
    for sample, expected in [
        ("a, if, 12, else;", "complete"),
        ("a,b", "complete"),
        ("a,", "prefix"),
        ("a,,", "invalid@2"),
        ("1 2", "invalid@2"),
    ]:
        assert verdict(g, sample) == expected, sample
        assert lark_verdict(text, sample) == expected.split("@")[0], sample
    tree = g.parse("a, if, 12")
    assert tree.data == "start"
    # "if" is both a word and a keyword: the priorities pick word (2 > 1), as lark decides.
    assert [getattr(child, "data", None) for child in tree.children] == ["aliased", "aliased", None]
    assert tree.children[2].type == "NUMBER"


def test_case_insensitive_literal_and_regex_flags():
    g = Grammar.from_lark('start: "select"i NAME\nNAME: /[a-z]+/i\n%ignore " "\n')
    assert verdict(g, "SeLeCt Users") == "complete"
    assert verdict(g, "SELEC") == "prefix"
    dot_all = Grammar.from_lark("start: BLOCK\nBLOCK: /<.*>/s\n")
    assert verdict(dot_all, "<a\nb>") == "complete"
    no_dot_all = Grammar.from_lark("start: BLOCK\nBLOCK: /<.*>/\n")
    assert verdict(no_dot_all, "<a\nb>") == "invalid@2"


def test_verbose_regex_flag():
    text = "start: NUM\nNUM: /[0-9]+  (\\. [0-9]+)?/x\n"
    g = Grammar.from_lark(text)
    assert verdict(g, "12.5") == "complete"
    assert verdict(g, "12 .5") == "invalid@2"
    assert lark_verdict(text, "12 .5") == "invalid"


def test_lazy_comment_ends_at_the_first_close():
    # /\/\*(.|\n)*?\*\// means "up to the first */" under Python's re, not the longest match.
    text = 'start: "x"+\nCOMMENT: /\\/\\*(.|\\n)*?\\*\\//\n%ignore COMMENT\n%ignore " "\n'
    g = Grammar.from_lark(text)
    for sample in ["/* a */ x /* b */", "x /* a */ x /* */ */ x"]:
        assert verdict(g, sample).split("@")[0] == lark_verdict(text, sample), sample
    assert verdict(g, "x /* a */ x /* */ */ x") == "invalid@18"


@pytest.mark.parametrize(
    "text, sample",
    [
        ('start: "a" "b"\n%ignore " "\n', "  a b  "),
        ('start: "a" "b"\n%import common.WS\n%ignore WS\n', "\n\t a \n b \n\n"),
        ('start: "a"*\n%ignore " "\n', "   "),
    ],
)
def test_ignored_text_before_and_after_is_accepted_like_lark(text, sample):
    g = Grammar.from_lark(text)
    assert lark_verdict(text, sample) == "complete"
    assert verdict(g, sample) == "complete"


def test_ignored_text_is_read_as_a_lexer_reads_it():
    # Each run taken whole: before, ``(?:[ \t\n\f\r]+|--…)*`` tried every split of the white
    # space before a word it could not match (25 spaces: a second; 40: hours).
    ignored = Grammar.builtin("sqlite").ignored_text
    assert ignored.fullmatch(" " * 40 + "x") is None
    assert ignored.fullmatch("-- a\n  /* b */ \n") is not None
    assert ignored.match(" " * 40 + "-- c\nx").end() == 45
    assert ignored.fullmatch("/* not closed") is None


def test_start_option_picks_the_rule():
    g = Grammar.from_lark('a: "x" b\nb: "y"\n', start="b")
    assert verdict(g, "y") == "complete"
    assert verdict(g, "xy") == "invalid@0"
    with pytest.raises(GrammarError):
        Grammar.from_lark('a: "x"\n', start="nope")


def test_from_regex():
    g = Grammar.from_regex(r"[a-z]+@[a-z]+\.(com|org)")
    assert verdict(g, "me@host.org") == "complete"
    assert verdict(g, "me@host.") == "prefix"
    assert verdict(g, "me@@") == "invalid@3"


def test_from_json_schema():
    schema = {
        "type": "object",
        "properties": {"age": {"type": "integer"}},
        "required": ["age"],
        "additionalProperties": False,
    }
    g = Grammar.from_json_schema(schema)
    assert g.is_complete('{"age": 42}')
    assert not g.is_complete('{"age": "42"}')
    assert g.valid_prefix('{"age": "') < len('{"age": "')
    with pytest.raises(GrammarError, match="JSON schema"):
        Grammar.from_json_schema("{not json")


NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


@pytest.mark.parametrize("name", ["café", "😀 and 中文", "\u0000\u001f", "a/b", 'quote " and \\'])
def test_a_json_schema_grammar_takes_what_json_dumps_writes(name):
    # Issue 25: every \uXXXX escape (json.dumps' default for non-ASCII text) and surrogate pairs
    # were violations. llguidance before 1.8.0 (make floors: 1.5.0) has no way to allow them.
    from grammar_guide._json_schema import GENERAL_UNICODE_ESCAPES

    text = json.dumps({"name": name})
    non_ascii = any(ord(c) > 0x7F for c in name)  # written as \uXXXX escapes of characters
    assert Grammar.from_json_schema(NAME_SCHEMA).is_complete(text) is (GENERAL_UNICODE_ESCAPES or not non_ascii)


def test_a_json_schema_grammar_reads_an_escaped_solidus_as_a_solidus():
    import grammar_guide as gg

    draft = '{"name": "a\\/b"}'
    result = gg.guide(lambda prompt: draft, Grammar.from_json_schema(NAME_SCHEMA), "p", target=False)
    assert result.text == '{"name": "a/b"}' and json.loads(result.text) == json.loads(draft)


@pytest.mark.parametrize(
    ("schema", "keyword", "pointer"),
    [
        ({"type": "array", "uniqueItems": True}, "uniqueItems", "#/uniqueItems"),
        (
            {"type": "object", "properties": {"a/b": {"type": "array", "items": {"not": {"type": "string"}}}}},
            "not",
            "#/properties/a~1b/items/not",
        ),
        (
            {"anyOf": [{"type": "string"}, {"type": "object", "propertyNames": {}}]},
            "propertyNames",
            "#/anyOf/1/propertyNames",
        ),
    ],
)
def test_a_json_schema_keyword_the_grammar_cannot_honour_is_refused_with_its_path(schema, keyword, pointer):
    with pytest.raises(GrammarError) as info:
        Grammar.from_json_schema(schema)
    message = str(info.value)
    assert f"{keyword!r} at {pointer} cannot be honoured" in message
    assert "Unimplemented" not in message  # our words, not the matcher's


@pytest.mark.parametrize(
    ("schema", "said", "pointer"),
    [
        (
            {"type": "object", "properties": {"a": {"type": "string", "format": "my-format"}}},
            "format 'my-format'",
            "#/properties/a/format",
        ),
        ({"anyOf": [{"type": "string", "pattern": "^(?=a)a+$"}]}, "pattern '^(?=a)a+$'", "#/anyOf/0/pattern"),
        (
            {"type": "object", "patternProperties": {"(?<=x)a": {}}},
            "patternProperties '(?<=x)a'",
            "#/patternProperties/(?<=x)a",
        ),
        (
            {"type": "array", "items": {"$ref": "http://example.com/s.json"}},
            "$ref 'http://example.com/s.json'",
            "#/items/$ref",
        ),
    ],
)
def test_a_json_schema_value_the_matcher_refuses_is_refused_with_its_path(schema, said, pointer):
    # Issue 25 item 3: these were the matcher's words ("Unknown format: my-format", a regex parse
    # error quoting the pattern), with no path to the keyword.
    with pytest.raises(GrammarError) as info:
        Grammar.from_json_schema(schema)
    assert f"JSON Schema {said} at {pointer} cannot be honoured" in str(info.value)
    assert "matcher rejected" not in str(info.value)


def test_a_json_schema_keyword_that_constrains_nothing_is_not_refused():
    assert Grammar.from_json_schema({"type": "array", "uniqueItems": False}).is_complete("[1, 1]")


def test_a_json_schema_grammar_keeps_its_schema_as_a_copy():
    schema = {"type": "object", "properties": {"age": {"type": "integer"}}, "additionalProperties": False}
    g = Grammar.from_json_schema(schema)
    assert g.json_schema == schema
    schema["properties"]["age"]["type"] = "string"  # the caller's dict changes; the grammar's does not
    assert g.json_schema["properties"]["age"] == {"type": "integer"}
    assert Grammar.from_json_schema('{"type": "integer"}').json_schema == {"type": "integer"}
    assert Grammar.from_lark('start: "a"').json_schema is None


def test_builtin_json_and_unknown_name():
    g = Grammar.builtin("json")
    assert g is Grammar.builtin("json")  # cached
    assert "json" in Grammar.builtin_names()
    assert g.is_complete('{"a": [1, 2, {"b": null}]}')
    with pytest.raises(GrammarError) as info:
        Grammar.builtin("cobol")
    assert "cobol" in str(info.value)
    for name in Grammar.builtin_names():
        assert name in str(info.value)


def test_valid_prefix_is_complete_and_parse():
    g = Grammar.builtin("json")
    assert g.valid_prefix('{"a": tru') == 9
    assert g.valid_prefix('{"a": trx') == 8
    assert g.is_complete("[1]") and not g.is_complete("[1")
    tree = g.parse('{"a": 1}')
    assert isinstance(tree, lark.Tree)
    with pytest.raises(lark.exceptions.UnexpectedInput):
        g.parse("[1")
    with pytest.raises(GrammarError, match="no parse tree"):
        Grammar.from_regex("a+").parse("aa")


# -- what cannot be honoured, and syntax errors -------------------------------------------------


@pytest.mark.parametrize(
    "text, construct, message, line, column",
    [
        ("start: X\nX: /a(?=bc)/\n", "/a(?=bc)/", "look-around", 2, 4),
        ("start: X\n\nX: /a(?<!a)b/\n", "/a(?<!a)b/", "look-around", 3, 4),
        ("start: X\nX: /(a)\\1/\n", "/(a)\\1/", "back-reference", 2, 4),
        ("start: X\nX: /(?P<q>a)(?P=q)/\n", "/(?P<q>a)(?P=q)/", "back-reference", 2, 4),
        ("start: X\nX: /\\b(?:if|-)/\n", "/\\b(?:if|-)/", "word boundary", 2, 4),
        ("start: X\nX: /^a/m\n", "/^a/m", "anchor", 2, 4),
        ("start: X\nX: /a\\Z/\n", "/a\\Z/", "anchor", 2, 4),
        ("start: X\nX: /(a)?(?(1)b|c)/\n", "/(a)?(?(1)b|c)/", "conditional group", 2, 4),
        ("start: X\nX: /(?>ab)/\n", "/(?>ab)/", "atomic group", 2, 4),
        ("start: X\nX: /a++/\n", "/a++/", "possessive quantifier", 2, 4),
        ("start: X\nX: /k|kw/\n", "/k|kw/", "alternation", 2, 4),
        # (``/(ab|a)+?c/`` is honoured: no match is a prefix of another, so it means its greedy form.)
        ("start: X\nX: /(ab|a)+?c*/\n", "/(ab|a)+?c*/", "lazy quantifier", 2, 4),
    ],
)
def test_regex_constructs_the_matcher_cannot_honour(text, construct, message, line, column):
    with pytest.raises(GrammarError, match=message) as info:
        Grammar.from_lark(text)
    error = info.value
    assert (error.line, error.column, error.construct) == (line, column, construct)
    assert "X" in str(error)
    # lark itself accepts each of these: the error is ours, and says why.
    lark.Lark(text, parser="earley", lexer="dynamic")


@pytest.mark.parametrize(
    "text, line, column, construct, advice",
    [
        # An anonymous %ignore terminal: lark names it __IGNORE_1, which the text never says.
        ('start: "a"+\n%ignore " "\n%ignore /x|^\\n/\n', 3, 9, "/x|^\\n/", "%ignore /\\n/"),
        # The faulty part of a composite terminal, not its first line.
        ('start: X\nX: "a"\n | "b" /c$/\n', 3, 8, "/c$/", "without it"),
        # A slash inside a string is no regex.
        ('start: "/" X\nX: /a(?=bc)/\n', 2, 4, "/a(?=bc)/", "without it"),
    ],
)
def test_refusals_point_at_the_construct_and_say_what_to_write(text, line, column, construct, advice):
    with pytest.raises(GrammarError) as info:
        Grammar.from_lark(text)
    error = info.value
    assert (error.line, error.column, error.construct) == (line, column, construct)
    assert advice in error.message


@pytest.mark.parametrize(
    "grammar_text",
    [
        'start: (WORD NL)*\nWORD: /[a-z]+/\nNL: /\\n/\n%ignore " "\n%ignore /^\\n/\n',
        'start: WORD+\nWORD: /[a-z]+/\n%ignore " "\n%ignore /\\A#[^\\n]*\\n/\n',
    ],
)
def test_an_ignored_start_anchor_means_the_beginning_of_the_text(grammar_text):
    # pyquil 3.5.4's %ignore /^\n/: under re.match at a position, ^ holds only at the start of
    # the text, so one newline may begin the text (tests/test_differential.py checks pyquil).
    grammar = Grammar.from_lark(grammar_text)
    parser = lark.Lark(grammar_text, parser="earley")
    texts = ["", "\n", "\n\n", "a\n", "\na\n", " \na\n", "\n a\n", "a\n\n", "\n\na\n", "#x\na", " #x\na", "#x\n#y\na"]
    for text in texts:
        assert grammar.is_complete(text) == lark_accepts(parser, text), text


def test_declared_terminal_used_in_a_rule():
    text = 'start: "a" INDENT\n%declare INDENT\n'
    lark.Lark(text, parser="earley", lexer="dynamic")  # lark loads it (a post-lexer would feed it)
    with pytest.raises(GrammarError, match="%declare") as info:
        Grammar.from_lark(text)
    assert (info.value.line, info.value.column) == (2, 10)
    assert info.value.construct == "%declare INDENT"


@pytest.mark.parametrize(
    "text, line, column, words",
    [
        ('start: "a\n', 1, 8, "Unexpected input"),
        ('start "a"\n', 1, 7, "missing colon"),
        ('start: "a"\n%frobnicate x\n', 2, 1, "Unexpected input"),
        ('start: "a" ->\n', 1, 14, "Alias"),
    ],
)
def test_syntax_errors_have_positions(text, line, column, words):
    with pytest.raises(GrammarError, match="syntax error") as info:
        Grammar.from_lark(text)
    error = info.value
    assert (error.line, error.column) == (line, column)
    assert words in error.message
    assert f"line {line}, column {column}" in str(error)


@pytest.mark.parametrize(
    "text, message, line, column",
    [
        ('start: "a" foo\n', "Rule 'foo' used but not defined", 1, 12),
        ('start: a\na: "x"\na: "y"\n', "Rule 'a' defined more than once", 3, 1),
        ('start: X\nX: "a"\nX: "b"\n', "Terminal 'X' defined more than once", 3, 1),
        ("start: X\nX: /a(/\n", "invalid regex", 2, 4),
        ('start: tmpl{"a"}\n', "Template 'tmpl' used but not defined", 1, 8),
    ],
)
def test_semantic_grammar_errors_have_positions(text, message, line, column):
    with pytest.raises(GrammarError, match=message) as info:
        Grammar.from_lark(text)
    assert (info.value.line, info.value.column) == (line, column)


def test_from_file_names_the_source_in_errors(tmp_path: Path):
    bad = tmp_path / "bad.lark"
    bad.write_text("start: X\nX: /a(?=b)/\n")
    with pytest.raises(GrammarError) as info:
        Grammar.from_file(bad)
    assert str(bad) in str(info.value)


_QUANTIFIED = (
    "a quantified comparison over a grouped, compound or aggregate subquery: {op} {q} (SELECT COUNT(*) FROM t "
    "GROUP BY y) is {op} (SELECT COUNT(*) FROM t GROUP BY y ORDER BY 1 {order} LIMIT 1), its {what}: "
    "{what}(COUNT(*)) would nest an aggregate"
)


def test_rewrites_come_from_the_argument_or_a_sibling_file(tmp_path: Path):
    source = 'start: "LIMIT" NUMBER\nNUMBER: /[0-9]+/\n%ignore " "\n'
    given = Grammar.from_lark(source, rewrites=[Rewrite(r"TOP (\d+)", r"LIMIT \1", "T-SQL")])
    assert [r.reason for r in given.rewrites] == ["T-SQL"]
    (tmp_path / "lim.lark").write_text(source)
    assert Grammar.from_file(tmp_path / "lim.lark").rewrites == ()
    (tmp_path / "lim.rewrites.json").write_text('[{"pattern": "TOP (\\\\d+)", "replacement": "LIMIT \\\\1"}]')
    (rewrite,) = Grammar.from_file(tmp_path / "lim.lark").rewrites
    assert rewrite.regex.sub(rewrite.replacement, "TOP 5") == "LIMIT 5"
    reasons = [r.reason for r in Grammar.builtin("sqlite").rewrites]  # each tested in test_grammar_sqlite_rewrites.py
    assert reasons[0] == "PostgreSQL cast" and reasons.count("standard SQL row limit") == 2
    assert [r.reason for r in Grammar.builtin("sqlite").rewrites if r.head] == [
        "aggregate with a WHERE inside",
        "a function's two arguments, each an aggregate followed by its own WHERE and a bracket: each WHERE as its "
        "aggregate's FILTER, the first argument bracketed",
        "T-SQL's SELECT TOP n",
        "a subquery after IN without its brackets",
        "two queries joined by an arithmetic operator: the operator between their values",
        "two aggregates, each with its own FROM, joined by an arithmetic operator: the operator between their values",
        "two aggregates, each with its own FROM, the second's WHERE then the column's alias, joined by an arithmetic "
        "operator: the operator between their values",
        "two aggregates, each with its own WHERE and one FROM after both, joined by an arithmetic operator: "
        "the operator between their values",
        "two columns, each with its own WHERE and one FROM after both, joined by an arithmetic operator: "
        "the operator between their values",
        "two aggregates, each followed by its own WHERE, joined by an arithmetic operator: each WHERE as its "
        "aggregate's FILTER",
        _QUANTIFIED.format(op=">=", q="ALL", order="DESC", what="MAX"),
        _QUANTIFIED.format(op="<=", q="ANY", order="DESC", what="MAX"),
        _QUANTIFIED.format(op="<=", q="ALL", order="NULLS LAST", what="MIN"),
        _QUANTIFIED.format(op=">=", q="ANY", order="NULLS LAST", what="MIN"),
        "a subquery after a comparison without its brackets",
        "an aggregate with its own FROM after a comparison, x = MIN(x) FROM t WHERE c: a subquery without its SELECT"
        " and brackets",
        "a function's first argument an aggregate with its own FROM, closed before the next argument: a subquery "
        "without its SELECT and its opening bracket",
        "a function's later argument an aggregate with its own FROM, after a subquery: a subquery without its SELECT "
        "and brackets",
        "ORDER BY or LIMIT on each arm of a set operation: each SELECT as a subquery",
        "an alias of several words: the name with its spaces quoted whole",
        "an alias that is a number: the name quoted",
        "QUALIFY (a filter on window functions' values) after a select list of names: their rows filtered in a "
        "subquery",
    ]


def test_a_rewrites_inner_substitutions_change_its_groups_text_only(tmp_path: Path):
    # Each group's text is substituted before it is written; the template's own escapes are as re.sub's.
    quote = Rewrite(r"(\w+)=(\S+)", r'"\1":\t"\g<2>"\\', inner=((r"\\", r"\\\\"),))
    assert quote.expand(quote.regex.search("a=C:\\new")) == '"a":\t"C:\\\\new"\\'
    assert Rewrite(quote.pattern, quote.replacement).expand(quote.regex.search("a=C:\\new")) == '"a":\t"C:\\new"\\'
    (tmp_path / "g.lark").write_text('start: "a"\n')
    (tmp_path / "g.rewrites.json").write_text('[{"pattern": "a", "replacement": "b", "inner": [["x", "y"]]}]')
    assert Grammar.from_file(tmp_path / "g.lark").rewrites[0].inner == (("x", "y"),)
    # ``within``: also rewritten inside another rewrite's copied text; a group transform (``within``
    # of expand) is applied to each group's text after ``inner``.
    (tmp_path / "g.rewrites.json").write_text('[{"pattern": "a", "replacement": "b", "within": true}]')
    assert Grammar.from_file(tmp_path / "g.lark").rewrites[0].within
    assert quote.expand(quote.regex.search("a=C:\\new"), str.upper) == '"A":\t"C:\\\\NEW"\\'
    with pytest.raises(GrammarError, match="rewrite pattern"):
        Rewrite("a", "b", inner=(("(unclosed", "x"),))


def test_bad_rewrites_are_grammar_errors(tmp_path: Path):
    with pytest.raises(GrammarError, match="rewrite pattern"):
        Rewrite("(unclosed", "x")
    (tmp_path / "g.lark").write_text('start: "a"\n')
    (tmp_path / "g.rewrites.json").write_text('[\n  {"pattern": "a",}\n]')
    with pytest.raises(GrammarError) as bad_json:
        Grammar.from_file(tmp_path / "g.lark")
    assert (bad_json.value.line, bad_json.value.source) == (2, str(tmp_path / "g.rewrites.json"))
    (tmp_path / "g.rewrites.json").write_text('[{"replacement": "b"}]')
    with pytest.raises(GrammarError, match="needs 'pattern' and 'replacement'"):
        Grammar.from_file(tmp_path / "g.lark")


def test_importing_grammar_guide_does_not_import_torch():
    code = "import sys, grammar_guide; grammar_guide.Grammar.builtin('json'); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
