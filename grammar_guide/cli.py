"""The ``grammar-guide`` command.

::

    grammar-guide "QUESTION" --grammar sqlite|json|PATH [--draft local|openai:MODEL|anthropic:MODEL|URL]
                  [--target MODEL] [--html out.html] [--json]
    grammar-guide check --grammar G FILE
    grammar-guide batch IN.jsonl OUT.jsonl --grammar G [--draft DRAFT] [--concurrency N] [--no-target]
                        [--retry-errors]

The first prints the guided text on stdout (with ``--json`` the whole result) and shows its
progress on stderr when stderr is a terminal: the draft's text as it streams, and each
correction as it happens. The second tells whether a file is valid under a grammar and, when it is
not, where it goes wrong and what was expected there. The third guides every prompt of a JSONL
file and appends one line a row to OUT.jsonl; run again, it resumes (see ``_batch_job``).

Exit status: 0 a valid result (``check``: a valid file; ``batch``: every row written, errors
included), 1 ``check``: an invalid file, 2 bad arguments, a bad grammar, a missing extra or
(``batch``) an output file of another configuration, 3 the draft provider failed, 4 the budgets
ran out before the text could be completed, 5 (with ``--require-faithful``) a valid text that is not
what the draft wrote, 130 interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from ._draft import DraftOutputError
from ._errors import BatchOutputError, GrammarError, GuideExhausted, MissingDependencyError, ProviderError
from ._grammar import Grammar, Terminal
from ._text import line_column

if TYPE_CHECKING:
    from ._batch import RowResult
    from ._batch_job import JobCounts
    from ._draft import Draft
    from ._events import Event
    from ._trace import GuideResult

__all__ = ["main"]

EXIT_OK = 0
EXIT_INVALID = 1
EXIT_USAGE = 2
EXIT_PROVIDER = 3
EXIT_EXHAUSTED = 4
EXIT_UNFAITHFUL = 5
EXIT_INTERRUPTED = 130

PROG = "grammar-guide"


class UsageError(Exception):
    """A command-line mistake: reported in one line, exit status 2."""


# -- shared helpers ---------------------------------------------------------------------------


def load_grammar(spec: str) -> Grammar:
    """A builtin grammar by name, or a ``.lark`` file by path."""
    if spec in Grammar.builtin_names():
        return Grammar.builtin(spec)
    path = Path(spec)
    if path.is_file():
        return Grammar.from_file(path)
    if path.exists():
        raise UsageError(f"grammar {spec!r} is not a file")
    names = ", ".join(Grammar.builtin_names()) or "none"
    if os.sep in spec or "/" in spec or spec.endswith(".lark"):
        raise UsageError(f"grammar file not found: {spec}")
    raise UsageError(f"no builtin grammar named {spec!r} (builtin: {names}); or give the path of a .lark file")


def describe_terminal(terminal: Terminal) -> str:
    """How a terminal is named to a person (see ``Terminal.display``)."""
    return terminal.display


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x80-\x9f]")


def printable(text: str) -> str:
    """Model text made safe for a terminal: control characters (escape sequences) shown, not obeyed."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def quoted(text: str, limit: int = 60) -> str:
    shown = json.dumps(text, ensure_ascii=False)[1:-1]
    if len(shown) > limit:
        shown = shown[: limit - 1] + "…"
    return f'"{printable(shown)}"'


class _Style:
    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __call__(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.enabled else text

    def dim(self, text: str) -> str:
        return self(text, "2")

    def red(self, text: str) -> str:
        return self(text, "31")

    def green(self, text: str) -> str:
        return self(text, "32")

    def blue(self, text: str) -> str:
        return self(text, "34")

    def magenta(self, text: str) -> str:
        return self(text, "35")

    def cyan(self, text: str) -> str:
        return self(text, "36")

    def bold(self, text: str) -> str:
        return self(text, "1")


def _wants_color(stream: IO[str]) -> bool:
    return _isatty(stream) and "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"


def _isatty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _error(message: str) -> None:
    print(f"{PROG}: error: {printable(message)}", file=sys.stderr)


# -- check ------------------------------------------------------------------------------------


def _check_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=f"{PROG} check",
        description="Tell whether a file is valid under a grammar; if not, where and what was expected.",
        epilog="Exit status: 0 valid, 1 invalid or incomplete, 2 bad arguments or grammar.",
    )
    parser.add_argument("file", metavar="FILE", help="the file to check, or - for standard input")
    parser.add_argument(
        "--grammar", "-g", required=True, metavar="G", help="a builtin grammar name or the path of a .lark file"
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    return parser


def _read_input(name: str) -> bytes:
    if name == "-":
        return sys.stdin.buffer.read()
    path = Path(name)
    if not path.is_file():
        raise UsageError(f"no such file: {name}" if not path.exists() else f"not a file: {name}")
    return path.read_bytes()


_TOKEN = re.compile(r"\w+|[^\S\n]+|\r?\n|.", re.DOTALL)


def offending_token(text: str, offset: int, limit: int = 40) -> str:
    """The token the character at ``offset`` belongs to: its whole word (``FORM`` for the ``O``
    a ``FROM`` could not take), a run of blanks, a line break, or the one character."""
    start = offset
    if offset < len(text) and (text[offset].isalnum() or text[offset] == "_"):
        while start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
            start -= 1
    match = _TOKEN.match(text, start)
    token = match.group() if match else text[offset : offset + 1]
    return token[:limit] + ("…" if len(token) > limit else "")


def shown(text: str) -> str:
    """``text`` in quotes with one layer of escapes, as Python writes a string (``"\\x1b[31m"``,
    ``'"'``): what a terminal would obey or hide is shown, and nothing is escaped twice."""
    quote = "'" if '"' in text and "'" not in text else '"'
    out = []
    for ch in text:
        if ch in ("\\", quote):
            out.append("\\" + ch)
        elif ch in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[ch])
        elif not ch.isprintable():
            code = ord(ch)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
        else:
            out.append(ch)
    return quote + "".join(out) + quote


_SIMPLE_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def run_check(args: argparse.Namespace) -> int:
    grammar = load_grammar(args.grammar)
    data = _read_input(args.file)
    label = "<stdin>" if args.file == "-" else args.file
    try:
        text, bad_byte = data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        # Binary (or not UTF-8) input is invalid input, not a usage error: it is checked up to
        # the first byte that is not UTF-8, which is reported unless the grammar failed before.
        text, bad_byte = data[: exc.start].decode("utf-8"), exc.start
    checker = grammar.checker()
    checker.feed(text)
    violation = checker.violation
    complete = violation is None and bad_byte is None and checker.is_complete
    report: dict[str, Any] = {"file": label, "grammar": grammar.name, "valid": complete}
    if complete:
        if args.json:
            print(json.dumps(report, ensure_ascii=False))
        else:
            print(f"{label}: valid ({grammar.name})")
        return EXIT_OK
    expected = sorted({describe_terminal(t) for t in checker.expected()})
    found: str | None
    if violation is not None:
        offset, line, column = violation.offset, violation.line, violation.column
        found = offending_token(text, offset)
        problem = f"unexpected {shown(found)}"
    elif bad_byte is not None:
        offset = len(text)
        line, column = line_column(text, offset)
        found = None
        problem = f"not UTF-8 text: byte 0x{data[bad_byte]:02x} at byte offset {bad_byte} (a binary file?)"
    else:
        offset = len(text)
        line, column = line_column(text, offset)
        problem, found = "the text ends before it is complete", None
    report.update(
        {
            "complete": False,
            "offset": offset,
            "byte_offset": len(text[:offset].encode("utf-8")),
            "line": line,
            "column": column,
            "found": found,
            "expected": expected,
            "message": problem,
        }
    )
    if args.json:
        print(json.dumps(report, ensure_ascii=False))
        return EXIT_INVALID
    print(f"{label}:{line}:{column}: invalid: {problem}")
    if expected:
        print(f"  expected: {', '.join(printable(e) for e in expected)}")
    source, caret = _pointer(text, line, column)
    if source:
        print(f"  {source}\n  {caret}")
    return EXIT_INVALID


def _pointer(text: str, line: int, column: int, width: int = 100) -> list[str]:
    """The offending line (a window of it when long) and a caret under ``column``."""
    lines = text.split("\n")
    source = lines[line - 1] if 0 < line <= len(lines) else ""
    source = source.rstrip("\r")
    start = max(0, min(column - 1 - width // 2, len(source) - width))
    window = source[start : start + width]
    head = "…" if start > 0 else ""
    tail = "…" if start + width < len(source) else ""
    shown = printable(window)
    before = printable(window[: column - 1 - start])
    caret = "".join("\t" if ch == "\t" else " " for ch in head + before) + "^"
    return [head + shown + tail, caret]


# -- guide ------------------------------------------------------------------------------------


def _number(parse: Callable[[str], Any], kind: str, ok: Callable[[Any], bool], rule: str) -> Callable[[str], Any]:
    """An argparse ``type``: ``parse`` the value (else "not a KIND"), then check it with ``ok``
    (else "RULE, not VALUE")."""

    def read(value: str) -> Any:
        try:
            number = parse(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not {kind}: {value!r}") from None
        if not ok(number):
            raise argparse.ArgumentTypeError(f"{rule}, not {value}")
        return number

    return read


_positive_int = _number(int, "a whole number", lambda n: n >= 1, "must be at least 1")
_nonnegative_int = _number(int, "a whole number", lambda n: n >= 0, "must be 0 or more")
_positive_float = _number(float, "a number", lambda n: n > 0, "must be positive")


def _guide_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        usage=(
            f'{PROG} "QUESTION" --grammar G [options]\n       {PROG} check --grammar G FILE\n'
            f"       {PROG} batch IN.jsonl OUT.jsonl --grammar G [options]"
        ),
        description=(
            "Answer QUESTION with text that is guaranteed valid under a grammar: a draft model writes,\n"
            "the grammar checks, a small local target model repairs. The text goes to stdout; live\n"
            "progress goes to stderr when it is a terminal.\n\n"
            f"To check a file against a grammar: {PROG} check --grammar G FILE (see {PROG} check --help).\n"
            f"To guide every prompt of a JSONL file: {PROG} batch IN.jsonl OUT.jsonl --grammar G "
            f"(see {PROG} batch --help)."
        ),
        epilog=(
            "Exit status: 0 valid result, 2 bad arguments or grammar, 3 provider failure, "
            "4 budget exhausted before the text was complete, 5 (--require-faithful) a valid text that "
            "is not what the draft wrote."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("question", metavar="QUESTION", help="the prompt; - reads it from standard input")
    parser.add_argument(
        "--require-faithful",
        action="store_true",
        help="fail (exit 5) when the text is not what the draft wrote: an edit, invented or dropped text",
    )
    parser.add_argument(
        "--grammar", "-g", required=True, metavar="G", help="a builtin grammar (sqlite, json, ...) or a .lark file"
    )
    _add_model_options(parser)
    parser.add_argument("--html", metavar="PATH", help="also write the corrections as an HTML page")
    parser.add_argument("--json", action="store_true", help="print the whole result as JSON instead of the text")
    _add_loop_options(parser)
    _add_progress_options(parser, "live progress", quiet="same as --progress never")
    return parser


def _add_progress_options(parser: argparse.ArgumentParser, shown: str, *, quiet: str) -> None:
    """--progress (``shown`` on stderr: auto, always, never) and --quiet."""
    parser.add_argument(
        "--progress",
        choices=("auto", "always", "never"),
        default="auto",
        help=f"{shown} on stderr: auto (when stderr is a terminal), always, never",
    )
    parser.add_argument("--quiet", "-q", action="store_true", help=quiet)


def _add_model_options(parser: argparse.ArgumentParser) -> None:
    """--draft, --model, --endpoint, --target/--no-target, --threads."""
    parser.add_argument(
        "--draft",
        "-d",
        default="local",
        metavar="DRAFT",
        help=(
            "local (default: the local target model, one copy shared with the target) or local:MODEL, "
            "openai:MODEL, anthropic:MODEL, an http(s) URL of an OpenAI-compatible server (with --model), "
            "or python:MODULE:FUNCTION (any generate(prompt) function)"
        ),
    )
    parser.add_argument("--model", metavar="NAME", help="the model name a URL draft's server expects")
    parser.add_argument(
        "--endpoint",
        choices=("chat", "completions"),
        default="chat",
        help="for a URL draft: the chat or the legacy completions endpoint (default: chat)",
    )
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--target", metavar="MODEL", help="the local target model (default: the builtin one)")
    target.add_argument(
        "--no-target", action="store_true", help="repair with the grammar and the draft's own text only"
    )
    parser.add_argument(
        "--threads",
        type=_positive_int,
        metavar="N",
        help="CPU threads for local models (default: half the cores, 1 to 4, unless OMP_NUM_THREADS is set)",
    )


def _add_loop_options(parser: argparse.ArgumentParser) -> None:
    """--seed-text, --stop and the budgets."""
    parser.add_argument("--seed-text", metavar="TEXT", default="", help="a valid prefix the text must start with")
    parser.add_argument("--stop", action="append", metavar="TEXT", help="a string the draft stops at (repeatable)")
    budgets = parser.add_argument_group("budgets")
    budgets.add_argument("--lookahead", type=_positive_int, metavar="N", help="draft tokens per call")
    budgets.add_argument("--max-corrections", type=_nonnegative_int, metavar="N", help="violations repaired")
    budgets.add_argument("--max-draft-calls", type=_positive_int, metavar="N", help="calls of the draft")
    budgets.add_argument("--max-new-tokens", type=_positive_int, metavar="N", help="length of the text")
    budgets.add_argument("--timeout", type=_positive_float, metavar="SECONDS", help="seconds of drafting")


def _loop_options(args: argparse.Namespace) -> dict[str, Any]:
    """The options for ``aguide`` given on the command line (budgets, stop strings, seed text)."""
    options: dict[str, Any] = {}
    for name in ("lookahead", "max_corrections", "max_draft_calls", "max_new_tokens", "timeout"):
        value = getattr(args, name)
        if value is not None:
            options[name] = value
    if args.stop:
        options["stop"] = tuple(args.stop)
    if args.seed_text:
        options["seed_text"] = args.seed_text
    return options


def make_target(name: str | None, disabled: bool, *, threads: int | None = None, load: bool = False) -> Any:
    """``False`` (no target), ``None`` (the default, loaded by the loop when first needed), or a
    loaded ``TargetModel`` (when named, or when ``load``: a local draft shares it)."""
    if disabled:
        return False
    if name is None and not load:
        if threads is not None:
            from .local import set_threads

            set_threads(threads)
        return None
    from .local import TargetModel

    return TargetModel.load(name, threads=threads)


def make_draft(
    spec: str, *, model: str | None = None, endpoint: str = "chat", target: Any = None, threads: int | None = None
) -> Draft:
    """The draft a ``--draft`` value names, from ``grammar_guide.providers`` (imported only here)."""
    from .providers import draft_from_spec

    if spec.startswith(("http://", "https://")) and not model:
        raise UsageError("a URL draft needs --model NAME (the model name its server expects)")
    try:
        # Any to mypy, which checks providers/ as the top-level package ``providers`` (setuptools
        # installs it here, a mapping mypy cannot follow).
        draft: Draft = draft_from_spec(spec, model=model, endpoint=endpoint, target=target or None, threads=threads)
        return draft
    except ValueError as exc:
        raise UsageError(f"--draft: {exc}") from None


class Progress:
    """Live progress on a terminal: the draft's text as it streams (dim), and one line per event."""

    def __init__(self, stream: IO[str], color: bool, grammar: Grammar | None = None) -> None:
        self.stream = stream
        self.terminals = dict(grammar.terminals) if grammar is not None else {}
        self.style = _Style(color)
        self.at_line_start = True

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()
        if text:
            self.at_line_start = text.endswith("\n")

    def _line(self, text: str) -> None:
        if not self.at_line_start:
            self._write("\n")
        self._write(text + "\n")

    def status(self, text: str) -> None:
        self._line(self.style.dim(text))

    def _describe(self, name: str) -> str:
        terminal = self.terminals.get(name)
        return describe_terminal(terminal) if terminal is not None else name

    def draft_text(self, chunk: str) -> None:
        self._write(self.style.dim(printable(chunk)))

    def target_text(self, chunk: str) -> None:
        if self.at_line_start:
            self._write(self.style.blue("  target: "))
        self._write(self.style.blue(printable(chunk)))

    @contextlib.contextmanager
    def showing_model_loads(self) -> Iterator[None]:
        """Show ``grammar_guide.local``'s loading messages (loading takes seconds) while inside."""
        progress = self

        class Handler(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                progress.status(record.getMessage())

        logger = logging.getLogger("grammar_guide.local")
        handler, level = Handler(logging.INFO), logger.level
        logger.addHandler(handler)
        if logger.getEffectiveLevel() > logging.INFO:
            logger.setLevel(logging.INFO)
        try:
            yield
        finally:
            logger.removeHandler(handler)
            logger.setLevel(level)

    def event(self, event: Event) -> None:
        from ._events import Correction, Cut, GrammarViolation

        s = self.style
        if isinstance(event, GrammarViolation):
            names = sorted({self._describe(name) for name in event.expected})
            expected = ", ".join(names[:8]) + (", …" if len(names) > 8 else "")
            line = f"  ✗ {event.line}:{event.column} rejected {quoted(event.rejected, 48)}"
            if expected:
                line += f"  expected {printable(expected)}"
            self._line(s.red(line))
        elif isinstance(event, Correction):
            if event.source == "healed":
                line = f"  ⟲ healed {quoted(event.text)} at the token boundary"
                self._line(s.cyan(line))
                return
            verb = {"target": "target wrote", "forced": "grammar forced", "repair": "repaired with"}.get(
                event.source, f"{event.source} wrote"
            )
            line = f"  ✓ {verb} {quoted(event.text)}"
            notes = []
            if event.detail:
                notes.append(printable(event.detail))
            if event.reason and event.reason not in ("violation", "forced"):
                notes.append(printable(event.reason))
            if event.seconds:
                notes.append(f"{event.seconds:.2f} s")
            if notes:
                line += f"  ({'; '.join(notes)})"
            color = {"target": s.blue, "forced": s.magenta, "repair": s.green}.get(event.source, s.blue)
            self._line(color(line))
        elif isinstance(event, Cut):
            why = f"{event.reason}: {event.detail}" if event.detail else event.reason
            self._line(s.dim(f"  ✂ cut {quoted(event.text, 48)} ({printable(why)})"))

    def finished(self, result: GuideResult) -> None:
        st = result.stats
        state = self.style.green("✓ valid") if result.complete else self.style.red("✗ incomplete")

        def plural(n: int, word: str) -> str:
            return f"{n} {word}{'' if n == 1 else 's'}"

        changes = result.changes
        said = changes.summary().removesuffix("incomplete").removesuffix(", ") or "nothing changed so far"
        said = self.style.green(said) if changes.faithful else self.style.red(said)
        self._line(
            f"{state} · {said} · {result.grammar_name} · {plural(st.draft_calls, 'draft call')} · "
            f"{plural(st.corrections, 'correction')} · {st.total_seconds:.1f} s"
        )


def _read_question(value: str) -> str:
    if value == "-":
        return sys.stdin.read()
    return value


def run_guide(args: argparse.Namespace) -> int:
    grammar = load_grammar(args.grammar)
    question = _read_question(args.question)
    if not question.strip():
        raise UsageError("the question is empty")
    if args.seed_text and grammar.valid_prefix(args.seed_text) != len(args.seed_text):
        raise UsageError(f"--seed-text is not a valid start of a {grammar.name} text")
    html_path = Path(args.html) if args.html else None
    if html_path is not None and not html_path.parent.is_dir():
        raise UsageError(f"cannot write {args.html}: no directory {html_path.parent}")
    show = args.progress == "always" or (args.progress == "auto" and _isatty(sys.stderr))
    if args.quiet:
        show = False
    progress = Progress(sys.stderr, _wants_color(sys.stderr), grammar) if show else None
    with progress.showing_model_loads() if progress is not None else contextlib.nullcontext():
        return _guide(args, grammar, question, html_path, progress)


def _guide(
    args: argparse.Namespace, grammar: Grammar, question: str, html_path: Path | None, progress: Progress | None
) -> int:
    from ._guide import guide

    # Model loading must not write progress bars or advice over our output (a user's setting wins).
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    local_draft = args.draft == "local" or args.draft.startswith("local:")
    target = make_target(args.target, args.no_target, threads=args.threads, load=local_draft)
    draft = make_draft(args.draft, model=args.model, endpoint=args.endpoint, target=target, threads=args.threads)
    options = _loop_options(args)
    if progress is not None:
        options["on_event"] = progress.event
        options["on_draft_text"] = progress.draft_text
        options["on_target_text"] = progress.target_text
        progress.status(f"guiding {draft.name} with the {grammar.name} grammar …")

    try:
        result = guide(draft, grammar, question, target, **options)
    except DraftOutputError as exc:  # a python: draft that returns no text is a wrong argument
        raise UsageError(str(exc)) from None
    except (GuideExhausted, ProviderError) as exc:
        # The partial result (the valid prefix and its events) still goes to --json and --html.
        partial = exc.result
        if progress is not None and partial is not None:
            progress.finished(partial)
        if partial is not None:
            _write_outputs(partial, args, html_path, text=False)
        _error(str(exc))
        return EXIT_PROVIDER if isinstance(exc, ProviderError) else EXIT_EXHAUSTED
    if progress is not None:
        progress.finished(result)
    _write_outputs(result, args, html_path, text=True)
    if html_path is not None and progress is not None:
        progress.status(f"wrote {html_path}")
    if not result.complete:
        return EXIT_EXHAUSTED
    if args.require_faithful and not result.faithful:
        _error(f"the text is not what the draft wrote: {result.changes.summary()}")
        return EXIT_UNFAITHFUL
    return EXIT_OK


def _write_outputs(result: GuideResult, args: argparse.Namespace, html_path: Path | None, *, text: bool) -> None:
    if html_path is not None:
        result.save_html(html_path)
    if args.json:
        sys.stdout.write(result.to_json(indent=2, ensure_ascii=False) + "\n")
    elif text:
        sys.stdout.write(result.text if result.text.endswith("\n") else result.text + "\n")
    sys.stdout.flush()


# -- batch ------------------------------------------------------------------------------------


def _batch_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=f"{PROG} batch",
        description=(
            "Guide every prompt of IN.jsonl (one JSON object a line: prompt, optional id) and append one\n"
            "line a row to OUT.jsonl: id, line, text, valid, faithful, error,\n"
            "stats, config. Run the same command again to resume: rows already in OUT.jsonl under the\n"
            "same grammar, draft, target and options are skipped."
        ),
        epilog=(
            "Exit status: 0 every row written (errors are rows), 2 bad arguments or an OUT of another "
            "configuration, 130 interrupted."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("input", metavar="IN.jsonl", help="the prompts, one JSON object a line")
    parser.add_argument("output", metavar="OUT.jsonl", help="the results, appended (created if missing)")
    parser.add_argument(
        "--grammar", "-g", required=True, metavar="G", help="a builtin grammar (sqlite, json, ...) or a .lark file"
    )
    _add_model_options(parser)
    parser.add_argument("--concurrency", "-c", type=_positive_int, default=4, metavar="N", help="rows at once (4)")
    parser.add_argument("--retry-errors", action="store_true", help="redo the rows that ended in an error")
    _add_loop_options(parser)
    _add_progress_options(parser, "a progress line", quiet="no progress line and no summary")
    return parser


def _job_settings(args: argparse.Namespace) -> dict[str, Any]:
    """What the rows' results depend on besides the grammar (the configuration a resumed job
    must share): the draft, the target and the loop's options."""
    url_draft = args.draft.startswith(("http://", "https://"))
    return {
        "draft": args.draft,
        "model": args.model if url_draft else None,
        "endpoint": args.endpoint if url_draft else None,
        "target": False if args.no_target else (args.target or "default"),
        "options": _loop_options(args),
    }


class BatchProgress:
    """A progress line on a terminal (rewritten in place) and the summary at the end."""

    def __init__(self, stream: IO[str], live: bool) -> None:
        self.stream = stream
        self.live = live
        self.shown = False

    def row(self, counts: JobCounts, outcome: RowResult) -> None:
        if not self.live:
            return
        eta = counts.eta_seconds
        line = (
            f"{counts.skipped + counts.done}/{counts.total} rows · {counts.rows_per_second:.2f} rows/s · "
            f"{counts.errors} error{'' if counts.errors == 1 else 's'} · {counts.billed_tokens:,} billed tokens"
            f" · ETA {_duration(eta) if eta is not None else '?'}"
        )
        self.stream.write("\r\x1b[K" + line)
        self.stream.flush()
        self.shown = True

    def summary(self, counts: JobCounts, *, interrupted: bool = False) -> None:
        if self.shown:
            self.stream.write("\n")
        valid = f"{100 * counts.valid / counts.done:.1f}%" if counts.done else "-"
        faithful = f"{100 * counts.faithful / counts.done:.1f}%" if counts.done else "-"
        head = "interrupted" if interrupted else "done"
        skipped = f" ({counts.skipped} done before, skipped)" if counts.skipped else ""
        left = counts.total - counts.skipped - counts.done
        self.stream.write(
            f"{PROG} batch: {head}: {counts.done} rows this run{skipped}, {left} left; valid {valid}, "
            f"faithful {faithful}, "
            f"{counts.errors} error{'' if counts.errors == 1 else 's'}, {counts.corrections} corrections, "
            f"{counts.billed_tokens:,} billed tokens, {_duration(counts.seconds)}\n"
        )
        if interrupted:
            self.stream.write(f"{PROG} batch: run the same command again to resume\n")
        self.stream.flush()


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def run_batch(args: argparse.Namespace) -> int:
    import asyncio

    from ._batch_job import run_job

    in_path, out_path = Path(args.input), Path(args.output)
    if not in_path.is_file():
        raise UsageError(f"no such file: {args.input}" if not in_path.exists() else f"not a file: {args.input}")
    if not out_path.parent.is_dir():
        raise UsageError(f"cannot write {args.output}: no directory {out_path.parent}")
    grammar = load_grammar(args.grammar)
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    local_draft = args.draft == "local" or args.draft.startswith("local:")
    target = make_target(args.target, args.no_target, threads=args.threads, load=local_draft)
    draft = make_draft(args.draft, model=args.model, endpoint=args.endpoint, target=target, threads=args.threads)
    live = not args.quiet and (args.progress == "always" or (args.progress == "auto" and _isatty(sys.stderr)))
    progress = BatchProgress(sys.stderr, live)
    last: list[JobCounts] = []

    def on_row(counts: JobCounts, outcome: RowResult) -> None:
        last[:] = [counts]
        progress.row(counts, outcome)

    job = run_job(
        in_path,
        out_path,
        draft,
        grammar,
        target,
        settings=_job_settings(args),
        concurrency=args.concurrency,
        retry_errors=args.retry_errors,
        options=_loop_options(args),
        on_row=on_row,
    )
    try:
        counts = asyncio.run(job)
    except KeyboardInterrupt:
        if not args.quiet and last:
            progress.summary(last[0], interrupted=True)
        raise
    except BatchOutputError as exc:
        raise UsageError(str(exc)) from None
    if not args.quiet:
        progress.summary(counts)
    return EXIT_OK


# -- entry point --------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    runner: Callable[[argparse.Namespace], int]
    if args_list[:1] == ["check"]:
        args = _check_parser().parse_args(args_list[1:])
        runner = run_check
    elif args_list[:1] == ["batch"]:
        args = _batch_parser().parse_args(args_list[1:])
        runner = run_batch
    else:
        args = _guide_parser().parse_args(args_list)
        runner = run_guide
    try:
        return runner(args)
    except UsageError as exc:
        _error(str(exc))
        return EXIT_USAGE
    except GrammarError as exc:
        _error(str(exc))
        return EXIT_USAGE
    except MissingDependencyError as exc:
        _error(str(exc))
        return EXIT_USAGE
    except ProviderError as exc:
        _error(str(exc))
        return EXIT_PROVIDER
    except KeyboardInterrupt:
        _error("interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (``| head``): not an error of ours.
        with contextlib.suppress(OSError):
            sys.stdout.close()
        return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
