"""Real Lark grammars from the package index, loaded as their packages open them, against lark.

Each grammar is taken from a pinned release on the package index (``pip download --no-deps``
into the user cache, as the differential suite does: ``tests/support/package_grammars.py``) and
loaded with ``Grammar.from_lark`` with the options of the package's own ``Lark(...)`` call
(parser, start, postlex; options that change trees, not the language, are left out:
``maybe_placeholders``, ``propagate_positions``, transformers). Where it loads, its verdicts are
compared with lark's (with the package's parser) on texts: the package's own test strings where
its archive ships tests, and random derivations of the grammar (``random_derivations`` of the
differential suite: rules to a bounded depth, terminals by random walks on their automata), each
text whole, every prefix (a sample of 24 for longer texts) and two mutations. The comparison is
the differential suite's (``compare`` / ``compare_lalr``); a disagreement is a text on which it
fails. Where a grammar is refused, the table gives the line, column and construct the refusal
names.

``python -m benchmarks.grammar_sweep [--only ID ...] [--texts 30]`` prints a table (grammar,
loads or refused at line:column construct, texts compared, disagreements, load seconds, checker
µs per byte on the texts it accepts whole) and writes ``benchmarks/results/grammar_sweep.json``.
"""

from __future__ import annotations

import argparse
import functools
import random
import re
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Literal

import lark
import lark.indenter

if __package__ in (None, ""):  # run as a script
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import machine, machine_line, markdown_table, write_results
from grammar_guide import Grammar, GrammarError

NAME = "grammar_sweep"


@dataclass(frozen=True)
class Entry:
    """A grammar as its package opens it. ``grammar``: a path in the archive, or
    ``module.py:NAME`` (a string the module assigns to NAME), or ``module.py:Lark(`` (the first
    string given to a ``Lark(`` call in the module)."""

    package: str
    version: str
    grammar: str
    start: str
    parser: Literal["earley", "lalr"] = "lalr"
    postlex: str | None = None  # "python": lark's PythonIndenter
    regex: bool = False
    sdist: bool = False
    texts: tuple[str, ...] = ()  # globs in the sdist: .py modules give their string literals
    replace: tuple[tuple[str, str], ...] = ()  # what the package substitutes before Lark(...)
    suffix: str = ""  # what the package adds to a text before it parses it (vyper: a newline)
    g_regex_flags: int = 0  # lark's option of that name, as the package passes it
    note: str = ""


# How each package opens its grammar (read from the pinned release):
# d20's diceast.py: Lark(grammar, start=['expr', 'commented_expr'], parser='lalr'); commentjson's
# commentjson.py: Lark('''...''', parser='lalr'); flloat / ltlf2dfa / pylogics: Lark(<file>,
# parser="lalr", import_paths=[its folder]) (start "start"); vyper's ast/grammar.py:
# Lark.open_from_package(..., parser="lalr", start="module", postlex=PythonIndenter()), its
# venom/parser.py Lark(VENOM_GRAMMAR, parser="lalr"); lark-dbml: Lark(dbml.lark, parser="lalr")
# by default; bqskit's qasm2/parser.py: Lark(r'''...''', parser="lalr", start="mainprogram");
# timefhuman's lalr.py: Lark(grammar with (TIMEZONE_MAPPING) replaced by its zone names,
# parser="lalr", g_regex_flags=re.IGNORECASE); tartiflette's sdl parser: Lark(file,
# parser="lalr", start="document"); lark's own grammars with lark's Earley (its examples' way).
SWEEP: dict[str, Entry] = {
    "d20-expr": Entry("d20", "1.1.2", "d20/grammar.lark", "expr", sdist=True, texts=("tests/*.py",)),
    "d20-commented": Entry("d20", "1.1.2", "d20/grammar.lark", "commented_expr", sdist=True, texts=("tests/*.py",)),
    "commentjson": Entry(
        "commentjson",
        "0.9.0",
        "commentjson/commentjson.py:Lark(",
        "start",
        sdist=True,
        texts=("commentjson/tests/*.py", "commentjson/tests/*.json"),
    ),
    **{
        f"flloat-{name}": Entry("flloat", "0.3.0", f"flloat/parser/{name}.lark", "start")
        for name in ("pl", "ltlf", "ldlf")
    },
    **{
        f"ltlf2dfa-{name}": Entry("ltlf2dfa", "2.0.0", f"ltlf2dfa/parser/{name}.lark", "start")
        for name in ("pl", "ltlf", "ppltl")
    },
    **{
        f"pylogics-{name}": Entry("pylogics", "0.2.1", f"pylogics/parsers/{name}.lark", "start")
        for name in ("pl", "ltl", "pltl", "ldl")
    },
    "vyper": Entry(
        "vyper",
        "0.4.3",
        "vyper/ast/grammar.lark",
        "module",
        postlex="python",
        texts=("examples/*.vy", "tests/functional/grammar/test_grammar.py"),
        suffix="\n",
    ),
    "vyper-venom": Entry("vyper", "0.4.3", "vyper/venom/parser.py:VENOM_GRAMMAR", "start"),
    "lark-dbml": Entry(
        "lark-dbml", "0.7.0", "lark_dbml/dbml.lark", "start", sdist=True, texts=("tests/*.py", "tests/*.dbml")
    ),
    "bqskit-qasm2": Entry("bqskit", "1.2.1", "bqskit/ir/lang/qasm2/parser.py:Lark(", "mainprogram"),
    "timefhuman": Entry(
        "timefhuman",
        "0.1.5",
        "timefhuman/grammar.lark",
        "start",
        replace=(("(TIMEZONE_MAPPING)", "utc|est|pst"),),
        g_regex_flags=re.IGNORECASE,
    ),
    "tartiflette-sdl": Entry(
        "tartiflette",
        "1.4.1",
        "tartiflette/language/parsers/lark/graphql_sdl_grammar.lark",
        "document",
        sdist=True,
    ),
    # Read with lark's Earley (the default of Lark(...)) as well, where the package reads LALR.
    "pylogics-ltl-earley": Entry("pylogics", "0.2.1", "pylogics/parsers/ltl.lark", "start", parser="earley"),
    "pylogics-pltl-earley": Entry("pylogics", "0.2.1", "pylogics/parsers/pltl.lark", "start", parser="earley"),
    "flloat-ltlf-earley": Entry("flloat", "0.3.0", "flloat/parser/ltlf.lark", "start", parser="earley"),
    "pylogics-pl-earley": Entry("pylogics", "0.2.1", "pylogics/parsers/pl.lark", "start", parser="earley"),
    "pylogics-ldl-earley": Entry("pylogics", "0.2.1", "pylogics/parsers/ldl.lark", "start", parser="earley"),
    "d20-expr-earley": Entry("d20", "1.1.2", "d20/grammar.lark", "expr", parser="earley", sdist=True),
    "flloat-pl-earley": Entry("flloat", "0.3.0", "flloat/parser/pl.lark", "start", parser="earley"),
    "commentjson-earley": Entry(
        "commentjson",
        "0.9.0",
        "commentjson/commentjson.py:Lark(",
        "start",
        parser="earley",
        sdist=True,
        texts=("commentjson/tests/*.py",),
    ),
    "lark-common-earley": Entry("lark", "1.3.1", "lark/grammars/lark.lark", "start", parser="earley"),
    # blark's parse.py: Lark.open_from_package("blark", "iec.lark", parser="earley", start=...):
    # iec_source, a whole file. Texts: its own test sources and test_parsing's snippets.
    "blark": Entry(
        "blark",
        "0.8.3",
        "blark/iec.lark",
        "iec_source",
        parser="earley",
        sdist=True,
        texts=("blark/tests/source/*.st", "blark/tests/test_parsing.py"),
    ),
}


def grammar_text(entry: Entry) -> tuple[str, Path]:
    """The grammar's text as the package gives it to lark, and the folder its imports resolve in."""
    from tests.support.package_grammars import grammar_file, lark_call_string, package_files, python_string

    if ":" not in entry.grammar:
        path = grammar_file(entry.package, entry.version, entry.grammar, sdist=entry.sdist)
        text = path.read_text(encoding="utf-8")
    else:
        module, name = entry.grammar.split(":")
        (path,) = package_files(entry.package, entry.version, module, sdist=entry.sdist)
        if name == "Lark(":
            text = lark_call_string(entry.package, entry.version, module, sdist=entry.sdist)
        else:
            text = python_string(entry.package, entry.version, module, name, sdist=entry.sdist)
    for old, new in entry.replace:
        text = text.replace(old, new)
    return text, path.parent


def postlexer(entry: Entry) -> object:
    return lark.indenter.PythonIndenter() if entry.postlex == "python" else None


def package_texts(entry: Entry, limit: int) -> list[str]:
    from tests.support.package_grammars import module_strings, package_files

    found: dict[str, None] = {}
    for pattern in entry.texts:
        try:
            paths = package_files(entry.package, entry.version, pattern, sdist=True)
        except FileNotFoundError:
            continue
        for path in paths:
            if path.suffix == ".py":
                found.update(dict.fromkeys(s for s in module_strings(path) if 0 < len(s) <= 400))
            else:
                found[path.read_text(encoding="utf-8")[:3000]] = None
    texts = [text + entry.suffix for text in found]
    return random.Random(entry.package).sample(texts, min(limit, len(texts)))


def generated_texts(parser: lark.Lark, count: int) -> list[str]:
    from tests.test_differential import random_derivations

    declared = {t.name for t in parser.terminals}
    used = {s.name for r in parser.rules for s in r.expansion if isinstance(s, lark.grammar.Terminal)}
    if used - declared:  # %declare'd terminals (an indenter's): no pattern to walk
        return []
    rng = random.Random(count)
    out = []
    generator = _without_lookarounds(parser)
    for depth in (4, 6, 10):
        try:
            out += [t[:300] for t in random_derivations(generator, rng, count // 3, depth=depth)]
        except (KeyError, RecursionError, IndexError, GrammarError):  # a look-around: no automaton
            continue
    return list(dict.fromkeys(out))


def _without_lookarounds(parser: lark.Lark) -> Any:
    """The parser's rules and terminals for ``random_derivations``, each terminal's look-arounds
    left out (an automaton has none): the texts are drawn, lark judges them."""
    from tests.test_differential import without_lookarounds

    terminals = [
        SimpleNamespace(name=t.name, pattern=SimpleNamespace(to_regexp=functools.partial(str, pattern)))
        for t in parser.terminals
        for pattern in [without_lookarounds(t.pattern.to_regexp())]
    ]
    return SimpleNamespace(
        rules=parser.rules, terminals=terminals, ignore_tokens=parser.ignore_tokens, options=parser.options
    )


def candidates(text: str, rng: random.Random) -> list[str]:
    from tests.test_differential import mutations

    ends = list(range(len(text)))
    if len(ends) > 24:
        ends = sorted(rng.sample(ends, 24))
    return [text, *(text[:e] for e in ends), *mutations(text, rng, 2)]


@dataclass
class Row:
    name: str
    status: str = ""
    texts: int = 0
    compared: int = 0
    disagreements: int = 0
    crashes: int = 0
    lark_errors: int = 0
    load_s: float = 0.0
    us_per_byte: float | None = None
    examples: list[str] = field(default_factory=list)


def sweep_one(name: str, entry: Entry, n_texts: int) -> Row:
    from tests.test_differential import LalrReference, Reference, Tally, compare, compare_lalr

    row = Row(name)
    try:
        text, folder = grammar_text(entry)
    except Exception as exc:
        row.status = f"not fetched: {exc}"[:80]
        return row
    started = time.perf_counter()
    try:
        grammar = Grammar.from_lark(
            text,
            entry.start,
            name=name,
            import_paths=[folder],
            parser=entry.parser,
            postlex=postlexer(entry),
            regex=entry.regex,
            g_regex_flags=entry.g_regex_flags,
        )
    except GrammarError as error:
        row.load_s = time.perf_counter() - started
        where = f"{error.line}:{error.column}" if error.line is not None else "no location"
        row.status = f"refused {where} {error.construct or '?'}"
        row.examples.append(str(error)[:300])
        return row
    except Exception as exc:
        row.load_s = time.perf_counter() - started
        row.status = f"CRASH {type(exc).__name__}"
        row.examples.append("".join(traceback.format_exception_only(exc)).strip()[:300])
        return row
    row.load_s = time.perf_counter() - started
    row.status = "loads"
    parser = grammar.lark_parser
    assert parser is not None
    # Random derivations come from an Earley reading of the same rules (lark's own LALR table
    # has the rules too): the generator reads the rules, not the parse table.
    texts = package_texts(entry, n_texts) + generated_texts(parser, n_texts)
    row.texts = len(texts)
    rng = random.Random(name)
    tally = Tally()
    if entry.parser == "lalr":
        reference: Any = LalrReference.of(grammar, texts)
        check: Any = compare_lalr
    else:
        reference, check = Reference.of(grammar), compare
    for text in texts:
        for candidate in candidates(text, rng):
            row.compared += 1
            try:
                check(reference, candidate, tally)
            except AssertionError as exc:
                row.disagreements += 1
                if len(row.examples) < 8:
                    row.examples.append(f"…{candidate[-100:]!r}: {str(exc)[-200:]}")
            except Exception as exc:
                if lark_raises(parser, candidate):
                    row.lark_errors += 1  # lark's own parse raises (vyper's indenter at a text's end)
                    continue
                row.crashes += 1
                if len(row.examples) < 4:
                    row.examples.append(f"{candidate!r}: {type(exc).__name__}: {exc}"[:300])
    row.us_per_byte = checker_speed(grammar, texts)
    return row


def lark_raises(parser: lark.Lark, text: str) -> bool:
    """Whether lark's own parse of ``text`` raises something other than a parse error."""
    try:
        parser.parse(text)
    except (lark.exceptions.LarkError, lark.indenter.DedentError, AssertionError):
        return False
    except Exception:
        return True
    return False


def checker_speed(grammar: Grammar, texts: list[str]) -> float | None:
    """Microseconds per byte to feed the texts the checker accepts whole."""
    total, size = 0.0, 0
    for text in texts:
        checker = grammar.checker()
        started = time.perf_counter()
        try:
            fed = checker.feed(text)
        except Exception:
            continue
        elapsed = time.perf_counter() - started
        if fed == len(text) and checker.is_complete:
            total += elapsed
            size += len(text.encode())
    return total / size * 1e6 if size else None


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="*", default=None, help="grammar ids (default: all)")
    ap.add_argument("--texts", type=int, default=30, help="package texts and generated texts, each (default 30)")
    ap.add_argument("--verbose", action="store_true", help="print refusal messages and disagreements")
    ap.add_argument("--results-dir", type=Path, default=None)
    args = ap.parse_args(argv)
    rows = []
    for name in args.only or list(SWEEP):
        row = sweep_one(name, SWEEP[name], args.texts)
        rows.append(row)
        print(f"{name}: {row.status}, {row.compared} compared, {row.disagreements} disagree", flush=True)
        if args.verbose:
            for example in row.examples:
                print(f"    {example}")
    table = markdown_table(
        [
            "grammar",
            "package",
            "loads / refused",
            "texts",
            "compared",
            "disagree",
            "crashes",
            "lark raises",
            "load s",
            "µs / byte",
        ],
        [
            [
                r.name,
                f"{SWEEP[r.name].package} {SWEEP[r.name].version}",
                r.status,
                r.texts,
                r.compared,
                r.disagreements,
                r.crashes,
                r.lark_errors,
                r.load_s,
                r.us_per_byte if r.us_per_byte is not None else "-",
            ]
            for r in rows
        ],
    )
    info = machine()
    print(f"\n{machine_line(info)}")
    print(table)
    payload = {"machine": info, "rows": [vars(r) for r in rows]}
    write_results(NAME, payload, args.results_dir)
    return payload


if __name__ == "__main__":
    main()
