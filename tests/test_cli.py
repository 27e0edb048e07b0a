"""The ``grammar-guide`` command, run as a real subprocess."""

from __future__ import annotations

import json
import os
import pty
import select
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.conftest import SMALL_SQL

TESTS = Path(__file__).resolve().parent
COMMAND = [sys.executable, "-m", "grammar_guide"]


def env(**extra: str) -> dict[str, str]:
    environ = dict(os.environ)
    environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(TESTS / "support"), environ.get("PYTHONPATH", "")]))
    environ["HF_HUB_OFFLINE"] = "1"
    environ.pop("NO_COLOR", None)
    environ.update(extra)
    return environ


def cli(
    *args: str, stdin: str | None = None, stdin_bytes: bytes | None = None, timeout: float = 120, **extra_env: str
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [*COMMAND, *args],
        input=stdin.encode() if stdin is not None else stdin_bytes,
        capture_output=True,
        timeout=timeout,
        env=env(**extra_env),
        cwd=TESTS.parent,
    )
    return subprocess.CompletedProcess(
        done.args, done.returncode, done.stdout.decode("utf-8"), done.stderr.decode("utf-8")
    )


@pytest.fixture
def sql_grammar(tmp_path: Path) -> Path:
    path = tmp_path / "small_sql.lark"
    path.write_text(SMALL_SQL, encoding="utf-8")
    return path


# -- check -----------------------------------------------------------------------------------


def test_check_valid_file(tmp_path: Path) -> None:
    path = tmp_path / "ok.json"
    path.write_text('{"a": [1, 2], "b": null}\n', encoding="utf-8")
    done = cli("check", "--grammar", "json", str(path))
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{path}: valid (json)\n"


def test_check_invalid_file_reports_position_and_expected(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{\n  "a": [1, 2},\n  "b": 3\n}\n', encoding="utf-8")
    done = cli("check", "-g", "json", str(path))
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert lines[0] == f'{path}:2:13: invalid: unexpected "}}"'
    assert lines[1] == '  expected: ",", "]", NUMBER'
    assert lines[2:] == ['    "a": [1, 2},', "              ^"]


def test_check_sql_file_with_a_path_grammar(tmp_path: Path, sql_grammar: Path) -> None:
    query = tmp_path / "q.sql"
    query.write_text("SELECT name FORM users;", encoding="utf-8")
    done = cli("check", "--grammar", str(sql_grammar), str(query))
    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        f'{query}:1:14: invalid: unexpected "FORM"',
        '  expected: "FROM"',
        "  SELECT name FORM users;",
        "               ^",
    ]


def test_check_points_into_a_long_line(tmp_path: Path) -> None:
    members = ", ".join(f'"k{i}": {i}' for i in range(60))
    cut = members.index('"k30"')
    text = "{" + members[:cut] + "x" + members[cut:] + "}"
    path = tmp_path / "minified.json"
    path.write_text(text, encoding="utf-8")
    done = cli("check", "-g", "json", str(path))
    assert done.returncode == 1
    header, expected, source, caret = done.stdout.splitlines()
    assert header.startswith(f'{path}:1:{cut + 2}: invalid: unexpected "x')
    assert expected == "  expected: STRING"
    assert source.startswith("  …") and source.endswith("…") and len(source) < 110
    # The caret stands under the offending character.
    assert source[caret.index("^")] == "x"


def test_check_shows_the_offending_token_escaped_once(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    # An escape sequence a terminal would obey, then the rest of a long line.
    path.write_text('{"a": 1,\t\x1b[31m "b": "' + "x" * 200 + '"}\n', encoding="utf-8")
    done = cli("check", "-g", "json", str(path))
    assert done.returncode == 1
    header = done.stdout.splitlines()[0]
    assert header == f'{path}:1:10: invalid: unexpected "\\x1b"'  # the token, not the rest of the line
    assert "\x1b" not in done.stdout
    path.write_text(r'{"a": "x\\y", ' + "'b': 1}", encoding="utf-8")  # an escaped backslash, then a bad quote
    header = cli("check", "-g", "json", str(path)).stdout.splitlines()[0]
    assert header.endswith('invalid: unexpected "\'"')
    path.write_text('{"a": tru"e"}', encoding="utf-8")
    header = cli("check", "-g", "json", str(path)).stdout.splitlines()[0]
    assert header.endswith("invalid: unexpected '\"'")  # a quote is quoted with the other quote


def test_check_reports_the_offending_token_in_json(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{"a": nulx, "b": 2}', encoding="utf-8")
    report = json.loads(cli("check", "-g", "json", "--json", str(path)).stdout)
    assert (report["found"], report["offset"], report["byte_offset"]) == (
        "nulx",
        9,
        9,
    )  # the word the bad character is in


@pytest.mark.parametrize(
    "data, offset, shown",
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", 0, "0x89"),
        ('{"caf\u00e9": [1, 2, '.encode() + b"\xff\xfe]}", 17, "0xff"),  # é is two bytes
    ],
    ids=["png", "stray-byte"],
)
def test_check_binary_input_is_invalid_with_its_byte_offset(
    tmp_path: Path, data: bytes, offset: int, shown: str
) -> None:
    path = tmp_path / "data.bin"
    path.write_bytes(data)
    done = cli("check", "-g", "json", str(path))
    assert done.returncode == 1, done.stderr  # invalid input, not a usage error (2)
    assert f"invalid: not UTF-8 text: byte {shown} at byte offset {offset}" in done.stdout
    assert done.stderr == ""
    report = json.loads(cli("check", "-g", "json", "--json", "-", stdin_bytes=data).stdout)
    assert report["valid"] is False and report["byte_offset"] == offset
    assert report["offset"] == len(data[:offset].decode())


def test_check_binary_input_after_a_grammar_error_reports_the_grammar_error(tmp_path: Path) -> None:
    path = tmp_path / "data.bin"
    path.write_bytes(b'{"a" 1}\xff')
    done = cli("check", "-g", "json", str(path))
    assert done.returncode == 1
    assert done.stdout.splitlines()[0] == f'{path}:1:6: invalid: unexpected "1"'


def test_check_incomplete_text_from_stdin_as_json() -> None:
    done = cli("check", "--grammar", "json", "--json", "-", stdin='{"a": ')
    assert done.returncode == 1
    report = json.loads(done.stdout)
    assert report["file"] == "<stdin>"
    assert report["valid"] is False
    assert (report["line"], report["column"], report["offset"]) == (1, 7, 6)
    assert report["found"] is None
    assert set(report["expected"]) == {'"false"', '"true"', '"null"', '"{"', '"["', "STRING", "NUMBER"}


def test_check_bad_grammar_exits_2(tmp_path: Path) -> None:
    grammar = tmp_path / "broken.lark"
    grammar.write_text('start: "a" (\n', encoding="utf-8")
    path = tmp_path / "x.txt"
    path.write_text("a", encoding="utf-8")
    done = cli("check", "--grammar", str(grammar), str(path))
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith("grammar-guide: error: syntax error in grammar")
    assert "broken.lark" in done.stderr


def test_check_unknown_grammar_and_missing_file_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text("{}", encoding="utf-8")
    done = cli("check", "--grammar", "no-such-grammar", str(path))
    assert done.returncode == 2
    assert "no builtin grammar named 'no-such-grammar'" in done.stderr and "json" in done.stderr
    done = cli("check", "--grammar", "json", str(tmp_path / "missing.json"))
    assert done.returncode == 2
    assert "no such file" in done.stderr
    done = cli("check", "--grammar", str(tmp_path / "missing.lark"), str(path))
    assert done.returncode == 2
    assert "grammar file not found" in done.stderr


def test_check_imports_no_model_or_sdk(tmp_path: Path) -> None:
    path = tmp_path / "ok.json"
    path.write_text("[1]", encoding="utf-8")
    code = (
        "import sys\n"
        "from grammar_guide.cli import main\n"
        f"status = main(['check', '-g', 'json', {str(path)!r}])\n"
        "heavy = ('torch', 'transformers', 'openai', 'anthropic', 'grammar_guide.providers')\n"
        "heavy = [m for m in heavy if m in sys.modules]\n"
        "print(status, heavy)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env(), timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "0 []"


def test_check_requires_a_grammar() -> None:
    done = cli("check", "file.json")
    assert done.returncode == 2
    assert "--grammar" in done.stderr


# -- guide: arguments -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, message",
    [
        (["q"], "--grammar"),
        ([], "QUESTION"),
        (["q", "-g", "json", "--draft", "gopher:thing"], "unknown draft 'gopher:thing'"),
        (["q", "-g", "json", "--draft", "http://127.0.0.1:9/v1"], "needs --model"),
        (["q", "-g", "json", "--draft", "openai:"], "needs a model name"),
        (["q", "-g", "json", "--draft", "python:no_such_module_here:f"], "cannot import no_such_module_here"),
        (["q", "-g", "json", "--draft", "python:cli_drafts:nothing"], "has no attribute nothing"),
        (["q", "-g", "json", "--draft", "python:cli_drafts:takes_no_prompt"], "takes no positional argument"),
        (["q", "-g", "json", "--lookahead", "0"], "must be at least 1"),
        (["q", "-g", "json", "--timeout", "soon"], "not a number"),
        (["q", "-g", "json", "--seed-text", "]"], "--seed-text is not a valid start"),
        (["q", "-g", "json", "--html", "/no/such/dir/out.html"], "no directory /no/such/dir"),
        (["q", "-g", "json", "--target", "m", "--no-target"], "not allowed with argument"),
        (["", "-g", "json"], "the question is empty"),
    ],
)
def test_bad_arguments_exit_2(args: list[str], message: str) -> None:
    if "--draft" not in args:
        args = [*args, "--draft", "python:cli_drafts:silent"]
    done = cli(*args)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
    assert done.stdout == ""


def test_help_names_both_commands() -> None:
    done = cli("--help")
    assert done.returncode == 0
    assert "grammar-guide check --grammar G FILE" in done.stdout
    assert "--draft" in done.stdout and "4 budget exhausted" in done.stdout


# -- guide: runs with a deterministic draft -----------------------------------------------------


def test_guided_run_prints_the_text(sql_grammar: Path) -> None:
    done = cli(
        "Names by age", "--grammar", str(sql_grammar), "--draft", "python:cli_drafts:sql_with_typo", "--no-target"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "SELECT name FROM users ORDER BY age DESC LIMIT 5;\n"
    assert done.stderr == ""  # not a terminal: quiet


def test_guided_run_json_and_html(sql_grammar: Path, tmp_path: Path) -> None:
    html = tmp_path / "trace.html"
    done = cli(
        "Names by age",
        "-g",
        str(sql_grammar),
        "-d",
        "python:cli_drafts:sql_with_typo",
        "--no-target",
        "--json",
        "--html",
        str(html),
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["text"] == "SELECT name FROM users ORDER BY age DESC LIMIT 5;"
    assert result["complete"] is True and result["prompt"] == "Names by age"
    assert [e["kind"] for e in result["events"]] == ["draft", "violation", "correction", "draft"]
    assert result["stats"]["draft_calls"] == 1 and result["stats"]["corrections"] == 1
    page = html.read_text(encoding="utf-8")
    assert page.startswith("<!doctype html>")
    assert 'data-exact="true"' in page and "LIMT" in page


def test_question_from_stdin_and_a_draft_object(tmp_path: Path) -> None:
    done = cli(
        "-", "-g", "json", "-d", "python:cli_drafts:continuing", "--no-target", "--json", stdin="Numbers, please"
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["prompt"] == "Numbers, please"
    assert result["text"] == '{"a": [1, 2, 3]}'


def test_progress_on_request_shows_draft_and_each_correction(sql_grammar: Path) -> None:
    done = cli("q", "-g", str(sql_grammar), "-d", "python:cli_drafts:chatty_sql", "--no-target", "--progress", "always")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "SELECT name, age FROM users WHERE age > 30;\n"  # the comma where a person puts it
    err = done.stderr
    assert "\x1b[" not in err  # not a terminal: no colour
    assert "Sure! Here is the query:" in err  # the draft's text as it streamed
    assert '✂ cut "Sure! Here is the query:\\n" (preamble)' in err
    assert '✗ 1:12 rejected " age FROM users WHERE age > 30;"' in err
    assert '✓ repaired with ","' in err
    # The summary says what was changed of the draft's answer: one edit (the comma).
    assert err.rstrip().splitlines()[-1].startswith("✓ valid · 1 edit · small_sql · ")
    # Events are reported in the order they happened.
    assert err.index("✂ cut") < err.index("✗ 1:12") < err.index("✓ repaired")


def test_require_faithful_fails_a_valid_text_that_is_not_what_the_draft_wrote(sql_grammar: Path) -> None:
    edited = cli("q", "-g", str(sql_grammar), "-d", "python:cli_drafts:chatty_sql", "--no-target", "--require-faithful")
    assert edited.returncode == 5
    assert edited.stdout == "SELECT name, age FROM users WHERE age > 30;\n"  # the text is still written
    assert "not what the draft wrote: 1 edit" in edited.stderr
    kept = cli("q", "-g", "json", "-d", "python:cli_drafts:continuing", "--no-target", "--require-faithful")
    assert kept.returncode == 0, kept.stderr


def test_a_note_cut_after_a_complete_statement_is_faithful_and_said_so(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The note after the answer is cut and shown as cut, and the text is what the draft wrote:
    before, the note was left out as unrepaired, ``1 dropped``, and ``--require-faithful`` failed.
    In-process: the builtin grammar is compiled once per test session and shared."""
    from grammar_guide.cli import main

    monkeypatch.syspath_prepend(str(TESTS / "support"))
    args = ["q", "-g", "sqlite", "-d", "python:cli_drafts:explained_sql", "--no-target", "--require-faithful"]
    assert main([*args, "--progress", "always"]) == 0
    out, err = capsys.readouterr()
    assert out == "SELECT name FROM users;\n"
    assert "(after complete text)" in err and "✓ valid · faithful ·" in err


def run_with_tty_stderr(args: list[str], timeout: float = 60) -> tuple[int, str, str]:
    """Run the command with stderr on a pseudo-terminal (stdout on a pipe)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [*COMMAND, *args],
        stdout=subprocess.PIPE,
        stderr=slave,
        stdin=subprocess.DEVNULL,
        env=env(TERM="xterm"),
        cwd=TESTS.parent,
    )
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        elif proc.poll() is not None:
            break
    assert proc.stdout is not None
    with proc.stdout:
        out = proc.stdout.read().decode("utf-8")
    code = proc.wait(timeout=10)
    os.close(master)
    return code, out, b"".join(chunks).decode("utf-8", errors="replace")


def test_progress_appears_on_a_terminal_in_colour(sql_grammar: Path) -> None:
    code, out, err = run_with_tty_stderr(
        ["q", "-g", str(sql_grammar), "-d", "python:cli_drafts:sql_with_typo", "--no-target"]
    )
    assert code == 0
    assert out == "SELECT name FROM users ORDER BY age DESC LIMIT 5;\n"
    assert "\x1b[31m" in err  # the violation, in red
    assert "rejected" in err and "LIMT 5;" in err
    assert "repaired with" in err and "LIMIT" in err
    code, out, err = run_with_tty_stderr(
        ["q", "-g", str(sql_grammar), "-d", "python:cli_drafts:sql_with_typo", "--no-target", "--quiet"]
    )
    assert code == 0 and err == ""


def test_model_text_cannot_drive_the_terminal(sql_grammar: Path) -> None:
    code, out, err = run_with_tty_stderr(["q", "-g", "json", "-d", "python:cli_drafts:hostile", "--no-target"])
    assert code == 0, err
    assert out == '{"a": 1}\n'
    assert "\x1b]0;pwned" not in err and "\x1b[2J" not in err
    assert "\\x1b]0;pwned" in err  # shown, not obeyed


def test_budget_exhausted_exits_4_with_the_partial_result(tmp_path: Path) -> None:
    html = tmp_path / "partial.html"
    done = cli("q", "-g", "json", "-d", "python:cli_drafts:silent", "--no-target", "--json", "--html", str(html))
    assert done.returncode == 4
    assert "could not complete the text" in done.stderr
    partial = json.loads(done.stdout)
    assert partial["complete"] is False
    assert 'data-valid="false"' in html.read_text(encoding="utf-8")
    # Without --json nothing incomplete goes to stdout.
    done = cli("q", "-g", "json", "-d", "python:cli_drafts:silent", "--no-target")
    assert done.returncode == 4 and done.stdout == ""


# -- provider failure ------------------------------------------------------------------------------


class _ErrorAnswer(BaseHTTPRequestHandler):
    """A server whose every answer is an HTTP error: ``status`` with ``message(request)``."""

    status = 500
    kind = "server_error"

    def message(self) -> str:
        return "The server had an error."

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        body = json.dumps({"error": {"message": self.message(), "type": self.kind}})
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args: object) -> None:
        pass


class _Unauthorized(_ErrorAnswer):
    status = 401
    kind = "invalid_request_error"

    def message(self) -> str:
        given = self.headers.get("Authorization", "").removeprefix("Bearer ")
        return f"Incorrect API key provided: {given}."  # as some servers do: echoes the key


@pytest.fixture
def unauthorized_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Unauthorized)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_provider_failure_exits_3_without_leaking_the_key(unauthorized_server: str) -> None:
    secret = "sk-test-0123456789abcdef"
    done = cli(
        "q", "-g", "json", "-d", unauthorized_server, "--model", "m", "--no-target", GRAMMAR_GUIDE_API_KEY=secret
    )
    assert done.returncode == 3, done.stderr
    assert done.stderr.startswith("grammar-guide: error: http (HTTP 401)")
    assert secret not in done.stderr and secret not in done.stdout
    assert done.stdout == ""


def test_a_server_failing_every_time_exits_3_with_the_partial_result(tmp_path: Path) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ErrorAnswer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        html = tmp_path / "partial.html"
        done = cli("q", "-g", "json", "-d", url, "--model", "m", "--no-target", "--json", "--html", str(html))
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    # A provider failure, not an exhausted budget (exit 4): after the provider's own retries.
    assert done.returncode == 3, done.stderr
    assert done.stderr.startswith("grammar-guide: error: http (HTTP 500): The server had an error.")
    partial = json.loads(done.stdout)
    assert partial["complete"] is False and partial["text"] == "" and partial["stats"]["draft_calls"] == 1
    assert html.is_file()


def test_a_draft_function_returning_no_text_exits_2(tmp_path: Path, sql_grammar: Path) -> None:
    done = cli("q", "-g", str(sql_grammar), "-d", "python:cli_drafts:returns_a_dict", "--no-target")
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        "grammar-guide: error: draft function returns_a_dict must return str or yield str, "
        "but it returned dict {'choices': 'SELECT name FROM users'}\n"
    )


def test_a_refused_connection_exits_3() -> None:
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    done = cli("q", "-g", "json", "-d", f"http://127.0.0.1:{port}/v1", "--model", "m", "--no-target")
    assert done.returncode == 3, done.stderr
    assert done.stderr.startswith("grammar-guide: error: http: ConnectError")
    assert done.stdout == ""


# -- real providers over HTTP on 127.0.0.1 (the SmolLM2 test server) -------------------------------

ANY_TEXT = "start: TEXT\nTEXT: /[^\\x00]+/\n"


@pytest.fixture(scope="module")
def llm_server():  # type: ignore[no-untyped-def]
    from tests.support.llm_server import get_server

    return get_server()


@pytest.fixture
def any_text_grammar(tmp_path: Path) -> Path:
    path = tmp_path / "any_text.lark"
    path.write_text(ANY_TEXT, encoding="utf-8")
    return path


@pytest.mark.model
@pytest.mark.parametrize("kind", ["openai", "url"])
def test_provider_drafts_from_the_command_line(kind: str, llm_server, any_text_grammar: Path) -> None:  # type: ignore[no-untyped-def]
    from tests.support.llm_server import API_KEY

    base = llm_server.base_url
    before = len(llm_server.records)
    if kind == "openai":
        args, extra = ["--draft", "openai:smollm2"], {"OPENAI_BASE_URL": f"{base}/v1", "OPENAI_API_KEY": API_KEY}
    else:
        args, extra = ["--draft", f"{base}/v1", "--model", "smollm2"], {"GRAMMAR_GUIDE_API_KEY": API_KEY}
    done = cli(
        "Say hello in five words.",
        "-g",
        str(any_text_grammar),
        *args,
        "--no-target",
        "--json",
        "--max-new-tokens",
        "64",
        "--lookahead",
        "4",
        "--progress",
        "always",
        **extra,
    )
    # The model ends its short answer itself (a budget reached would be an incomplete result).
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["complete"] is True and result["text"].strip()
    assert result["stats"]["draft_calls"] >= 1
    records = llm_server.records[before:]
    assert records and all(r.status == 200 for r in records)
    assert all(r.body.get("model") == "smollm2" for r in records)
    paths = {r.path for r in records}
    assert paths == {"/v1/chat/completions"}
    # What the server generated is what streamed (progress) and what the text was built from.
    first = records[0].text
    assert first and first[:5] in done.stderr
    assert API_KEY not in done.stderr


# -- with the real target model ------------------------------------------------------------------


@pytest.mark.model
def test_guided_run_with_the_target_model(tmp_path: Path) -> None:
    html = tmp_path / "trace.html"
    done = cli(
        "Describe Ada Lovelace as JSON",
        "-g",
        "json",
        "-d",
        "python:cli_drafts:silent",  # the target writes the whole answer
        "--json",
        "--html",
        str(html),
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    parsed = json.loads(result["text"])
    assert parsed is not None  # valid JSON, whatever the target chose
    sources = [e.get("source") for e in result["events"] if e["kind"] == "correction"]
    assert "target" in sources
    assert 'data-kind="target"' in html.read_text(encoding="utf-8")


@pytest.mark.model
def test_local_draft_is_the_default(any_text_grammar: Path) -> None:
    done = cli(
        "Say hello.", "-g", str(any_text_grammar), "--max-new-tokens", "8", "--lookahead", "8", "--json", timeout=600
    )
    # 8 tokens are a budget the draft reaches: the text is closed but not complete, and exit 4.
    assert done.returncode == 4, done.stderr
    assert done.stderr == ""  # no model-loading progress bars or warnings when stderr is not a terminal
    result = json.loads(done.stdout)
    assert result["complete"] is False and result["text"].strip()
    assert [e["detail"] for e in result["events"] if e.get("reason") == "budget"] == ["max_new_tokens (8) reached"]
    assert result["stats"]["draft_calls"] >= 1
    assert result["stats"]["draft_tokens_out"] >= 1  # the local draft reports its tokens


def test_check_sql_with_the_builtin_sqlite_grammar(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # In-process: the builtin grammar is compiled once per test session and shared.
    from grammar_guide.cli import main

    query = tmp_path / "q.sql"
    query.write_text("SELECT name, age\nFROM users\nWHERE age > 30\nORDER BY age DESK;\n", encoding="utf-8")
    assert main(["check", "--grammar", "sqlite", str(query)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f'{query}:4:17: invalid: unexpected "DESK"'
    assert out[1] == '  expected: "DESC"'  # keyword terminals are named by their keyword
    assert out[2:] == ["  ORDER BY age DESK;", "                  ^"]
    query.write_text("SELECT name, age FROM users WHERE age > 30 ORDER BY age DESC;\n", encoding="utf-8")
    assert main(["check", "--grammar", "sqlite", str(query)]) == 0
    assert capsys.readouterr().out == f"{query}: valid (sqlite)\n"


@pytest.mark.model
def test_progress_shows_the_model_loading_and_the_target_writing() -> None:
    done = cli(
        "Describe Ada Lovelace as JSON",
        "-g",
        "json",
        "-d",
        "python:cli_drafts:silent",
        "--threads",
        "1",
        "--progress",
        "always",
        timeout=600,
        NO_COLOR="1",
    )
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    loading = next(i for i, line in enumerate(lines) if line.startswith("loading SmolLM2-135M-Instruct"))
    assert lines[loading + 1].startswith("loaded SmolLM2-135M-Instruct in ") and lines[loading + 1].endswith(
        ", 1 CPU thread"
    )
    written = [line for line in lines if line.startswith("  target: ")]
    assert written and all(len(line) > len("  target: ") for line in written)
