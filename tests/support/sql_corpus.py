"""The third-party SQL corpus that the SQLite grammar is measured on, labelled by SQLite itself.

Statements come from the source distributions of ``sqlglot`` (its test fixtures: identity.sql,
pretty.sql, the TPC-H and TPC-DS optimizer fixtures) and ``pglast`` (libpg_query's copy of the
PostgreSQL regression scripts). The sdists are downloaded with pip into a cache outside the
repository, the statements are split out (strings, quoted identifiers, comments, dollar quotes,
psql meta-commands, COPY data and BEGIN ... END bodies respected), and each is labelled with
``tests.support.sqlite_oracle``. Run ``python -m tests.support.sql_corpus`` to build or refresh the cache; the
tests build it when it is missing.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tarfile
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):  # run as a script: python tests/support/sql_corpus.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from tests.support import sqlite_oracle
    from tests.support.package_grammars import pip_download
else:
    from . import sqlite_oracle
    from .package_grammars import pip_download

__all__ = ["CorpusStatement", "build_corpus", "cache_dir", "load_corpus", "split_script"]

# Pinned so that the measured figures are reproducible.
PACKAGES = {"sqlglot": "30.30.0", "pglast": "8.8"}
SQLGLOT_FILES = [
    "tests/fixtures/identity.sql",
    "tests/fixtures/pretty.sql",
    "tests/fixtures/optimizer/tpc-h/tpc-h.sql",
    "tests/fixtures/optimizer/tpc-ds/tpc-ds.sql",
]
PGLAST_DIR = "libpg_query/test/sql/postgres_regress/"
# Bumped whenever the oracle's labels change, so that cached corpora are labelled again
# (2: the oracle attaches a schema it creates a table in, strips quotes from database names and
# renames its placeholder column when a statement adds a column of that name; a DEFAULT that is
# not constant and a qualified temporary name count as the text-only errors they are).
FORMAT = 2


@dataclass(frozen=True)
class CorpusStatement:
    source: str  # package/path inside the sdist
    sql: str
    label: str  # a sqlite_oracle.Label value
    message: str | None = None


def cache_dir() -> Path:
    """Where the corpus lives: ``$GRAMMAR_GUIDE_SQL_CORPUS`` or the user cache directory."""
    env = os.environ.get("GRAMMAR_GUIDE_SQL_CORPUS")
    if env:
        return Path(env)
    try:
        import platformdirs

        base = Path(platformdirs.user_cache_dir("grammar-guide"))
    except ImportError:  # pragma: no cover
        base = Path.home() / ".cache" / "grammar-guide"
    return base / "sql-corpus"


def _corpus_file() -> Path:
    versions = "-".join(f"{k}{v}" for k, v in sorted(PACKAGES.items()))
    return cache_dir() / f"corpus-v{FORMAT}-{versions}-sqlite{sqlite_oracle.sqlite_version()}.json"


# -- splitting ---------------------------------------------------------------------------------

_DOLLAR_TAG = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)?\$")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")
_COPY_FROM_STDIN = re.compile(r"^\s*COPY\b.*\bFROM\s+STDIN\b", re.IGNORECASE | re.DOTALL)
_BLOCK_START = re.compile(
    r"^\s*CREATE\s+(?:OR\s+REPLACE\s+)?(?:TEMP\s+|TEMPORARY\s+)?(?:TRIGGER|FUNCTION|PROCEDURE)\b",
    re.IGNORECASE,
)


def split_script(text: str, *, psql: bool = False) -> list[str]:
    """Split SQL text into statements at top-level ``;`` (the ``;`` itself is dropped).

    Respects '...' strings (E'...' with backslash escapes), "..." and `...` and [...] identifiers,
    $tag$ quotes, -- and nested /* */ comments, and BEGIN ... END bodies of CREATE TRIGGER /
    FUNCTION / PROCEDURE. With ``psql``, backslash meta-commands are dropped (and end the
    statement they follow) and the data lines of ``COPY ... FROM stdin`` are skipped.
    """
    statements: list[str] = []
    buf: list[str] = []
    i, n = 0, len(text)
    block_depth = 0  # BEGIN/CASE ... END nesting inside a trigger or routine body
    at_line_start = True

    def flush() -> None:
        nonlocal block_depth
        stmt = "".join(buf).strip()
        buf.clear()
        block_depth = 0
        if stmt and not _only_comments(stmt):
            statements.append(stmt)

    while i < n:
        c = text[i]
        if psql and at_line_start and c == "\\" and not "".join(buf).strip():
            # A meta-command line.
            j = text.find("\n", i)
            i = n if j < 0 else j + 1
            continue
        if psql and c == "\\":
            # A meta-command after a statement (\gset, \g, \crosstabview ...) ends it.
            flush()
            j = text.find("\n", i)
            i = n if j < 0 else j + 1
            at_line_start = True
            continue
        at_line_start = False
        if c == "\n":
            at_line_start = True
            buf.append(c)
            i += 1
        elif c == "-" and text.startswith("--", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            buf.append(text[i:j])
            i = j
        elif c == "/" and text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            buf.append(text[i:j])
            i = j
        elif c == "'":
            escapes = i > 0 and text[i - 1] in "eE" and (i < 2 or not (text[i - 2].isalnum() or text[i - 2] == "_"))
            j = i + 1
            while j < n:
                if escapes and text[j] == "\\":
                    j += 2
                    continue
                if text[j] == "'":
                    if text.startswith("''", j):
                        j += 2
                        continue
                    break
                j += 1
            buf.append(text[i : j + 1])
            i = j + 1
        elif c in '"`':
            j = text.find(c, i + 1)
            while j >= 0 and text.startswith(c * 2, j):
                j = text.find(c, j + 2)
            j = n - 1 if j < 0 else j
            buf.append(text[i : j + 1])
            i = j + 1
        elif (
            c == "$"
            and (m := _DOLLAR_TAG.match(text, i))
            and not (i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_"))
        ):
            tag = m.group(0)
            j = text.find(tag, m.end())
            j = n if j < 0 else j + len(tag)
            buf.append(text[i:j])
            i = j
        elif c.isalpha() or c == "_":
            m = _WORD.match(text, i)
            assert m is not None
            word = m.group(0).upper()
            if _BLOCK_START.match("".join(buf) + " " + word + " "):
                if word == "BEGIN" or (word == "CASE" and block_depth):
                    block_depth += 1
                elif word == "END" and block_depth:
                    block_depth -= 1
            buf.append(m.group(0))
            i = m.end()
        elif c == ";" and block_depth == 0:
            stmt = "".join(buf)
            flush()
            i += 1
            if psql and _COPY_FROM_STDIN.match(stmt):
                # Skip the data up to the terminating "\." line.
                j = text.find("\n\\.", i)
                if j < 0:
                    break
                k = text.find("\n", j + 1)
                i = n if k < 0 else k + 1
                at_line_start = True
        else:
            buf.append(c)
            i += 1
    flush()
    return statements


def _only_comments(stmt: str) -> bool:
    return not re.sub(r"--[^\n]*|/\*.*?\*/|\s", "", stmt, flags=re.DOTALL)


def _sqlglot_statements(path: str, text: str) -> list[str]:
    if path.endswith("identity.sql"):
        # One statement (or expression) per line.
        return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("--")]
    # Optimizer fixtures put "# key: value" metadata lines before each case.
    text = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
    return split_script(text)


# -- building ----------------------------------------------------------------------------------


def _download(dest: Path) -> dict[str, Path]:
    dest.mkdir(parents=True, exist_ok=True)
    archives = {}
    for name, version in PACKAGES.items():
        found = sorted(dest.glob(f"{name}-{version}.tar.gz"))
        if not found:
            pip_download(f"{name}=={version}", dest, sdist=True)
            found = sorted(dest.glob(f"{name}-{version}.tar.gz"))
        if not found:
            raise RuntimeError(f"pip did not download the {name} {version} sdist into {dest}")
        archives[name] = found[0]
    return archives


def _read_sources(archives: dict[str, Path]) -> list[tuple[str, str]]:
    """(source name, statement) pairs, in file order."""
    out: list[tuple[str, str]] = []
    with tarfile.open(archives["sqlglot"]) as tar:
        members = {m.name.split("/", 1)[1]: m for m in tar.getmembers() if "/" in m.name}
        for rel in SQLGLOT_FILES:
            data = tar.extractfile(members[rel]).read().decode("utf-8")  # type: ignore[union-attr]
            out += [(f"sqlglot/{rel}", s) for s in _sqlglot_statements(rel, data)]
    with tarfile.open(archives["pglast"]) as tar:
        for m in sorted(tar.getmembers(), key=lambda m: m.name):
            rel = m.name.split("/", 1)[1] if "/" in m.name else m.name
            if rel.startswith(PGLAST_DIR) and rel.endswith(".sql") and m.isfile():
                data = tar.extractfile(m).read().decode("utf-8", "replace")  # type: ignore[union-attr]
                out += [(f"pglast/{rel}", s) for s in split_script(data, psql=True)]
    return out


def build_corpus(force: bool = False) -> Path:
    """Download, split and label the corpus into the cache (unless it is there); return its file."""
    path = _corpus_file()
    if path.exists() and not force:
        return path
    with tempfile.TemporaryDirectory() as tmp:
        archives = _download(cache_dir() / "sdists")
        seen: set[str] = set()
        records = []
        for source, sql in _read_sources(archives):
            if sql in seen:
                continue
            seen.add(sql)
            verdict = sqlite_oracle.check(sql)
            records.append({"source": source, "sql": sql, "label": verdict.label.value, "message": verdict.message})
        payload = {
            "format": FORMAT,
            "packages": PACKAGES,
            "sqlite_version": sqlite_oracle.sqlite_version(),
            "compile_options": sqlite_oracle.compile_options(),
            "statements": records,
        }
        tmp_file = Path(tmp) / "corpus.json"
        tmp_file.write_text(json.dumps(payload, ensure_ascii=False, indent=0), encoding="utf-8")
        path.parent.mkdir(parents=True, exist_ok=True)
        os.replace(tmp_file, path) if tmp_file.stat().st_dev == path.parent.stat().st_dev else path.write_text(
            tmp_file.read_text(encoding="utf-8"), encoding="utf-8"
        )
    return path


def load_corpus() -> list[CorpusStatement]:
    """The labelled corpus, building the cache first when it is missing."""
    payload = json.loads(build_corpus().read_text(encoding="utf-8"))
    return [CorpusStatement(**r) for r in payload["statements"]]


def main() -> None:
    force = "--force" in sys.argv[1:]
    path = build_corpus(force=force)
    corpus = load_corpus()
    print(f"corpus: {path}")
    print(f"SQLite {sqlite_oracle.sqlite_version()} ({sqlite_oracle.library_path()})")
    counts = Counter((s.source.split("/")[0], s.label) for s in corpus)
    for (pkg, label), count in sorted(counts.items()):
        print(f"  {pkg:8} {label:13} {count}")
    print(f"  total    {len(corpus)}")


if __name__ == "__main__":
    main()
