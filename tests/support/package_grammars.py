"""Lark grammars that other projects ship in their packages, taken from the package index at test
time (pinned versions; CI reaches only the package registries).

``pip download --no-deps`` fetches the package (a wheel or an sdist) into the user cache, and its
grammar files (``.lark``, and ``.g`` as eql names its own) are extracted beside it, keeping their
folders so that a grammar's ``%import`` of a sibling (outlines' ``common.lark``) still resolves.
Installing the packages instead is not possible: their pins on lark conflict (pyquil 3.5.4 wants
lark<0.12, gdtoolkit 4.5.0 lark==1.2.2).

A package's own test data comes from the same archive (``sdist=True``: the source archive, where
the tests are): ``package_files`` extracts the files a glob names, ``module_strings`` reads the
string literals of a test module, and ``python_string`` a grammar kept in a Python string (pytket's).
"""

from __future__ import annotations

import ast
import fnmatch
import hashlib
import os
import re
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path

__all__ = [
    "grammar_file",
    "lark_call_string",
    "module_strings",
    "package_files",
    "pip_download",
    "python_string",
    "terminal_definition",
]


def _cache_dir() -> Path:
    return Path(os.environ.get("GRAMMAR_GUIDE_CACHE") or Path.home() / ".cache" / "grammar-guide") / "packages"


def grammar_file(package: str, version: str, path: str, *, sdist: bool = False) -> Path:
    """The extracted ``path`` (relative to the package's root folder) of ``package==version``
    (``sdist``: of its source archive)."""
    root = _root(package, version, sdist)
    if not (root / ".extracted").is_file():
        _extract(_download(package, version, sdist), root, lambda name: name.endswith(_GRAMMAR_SUFFIXES))
        (root / ".extracted").write_text("grammars")
    found = root / path
    if not found.is_file():
        raise FileNotFoundError(f"{package} {version} has no {path}")
    return found


def package_files(package: str, version: str, pattern: str, *, sdist: bool = False) -> list[Path]:
    """The files of ``package==version`` whose path (relative to its root folder) matches the glob
    ``pattern`` (``*`` crosses folders), extracted once; sorted by path."""
    root = _root(package, version, sdist)
    listing = root / f".files-{hashlib.sha1(pattern.encode()).hexdigest()[:12]}"
    if not listing.is_file():
        names = _extract(_download(package, version, sdist), root, lambda name: fnmatch.fnmatch(name, pattern))
        listing.write_text("".join(f"{name}\n" for name in names))
    found = sorted(root / name for name in listing.read_text().splitlines())
    if not found:
        raise FileNotFoundError(f"{package} {version} has no file matching {pattern}")
    return found


def python_string(package: str, version: str, path: str, name: str, *, sdist: bool = False) -> str:
    """The string a module of the package assigns to ``name`` at its top level."""
    (module,) = package_files(package, version, path, sdist=sdist)
    for node in ast.parse(module.read_text(encoding="utf-8")).body:
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            return node.value.value
    raise LookupError(f"{package} {version}'s {path} assigns no string to {name}")


def lark_call_string(package: str, version: str, path: str, *, sdist: bool = False) -> str:
    """The grammar a module of the package gives as the first argument of a ``Lark(...)`` call
    (commentjson's, bqskit's)."""
    (module,) = package_files(package, version, path, sdist=sdist)
    for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "Lark":
            first = node.args[0] if node.args else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                return first.value
    raise LookupError(f"{package} {version}'s {path} gives no string to Lark(...)")


def module_strings(path: Path) -> list[str]:
    """Every string literal of a Python module, once each, in the order they are written; left
    out: docstrings, f-strings' constant parts and the argument names ``pytest.mark.parametrize``
    is given first (``"marker, expected"``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    formatted = {id(part) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for part in node.values}
    names = {
        id(node.args[0])
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "parametrize"
        and node.args
    }
    found = {
        node.value: None
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings | formatted | names
    }
    return list(found)


def _root(package: str, version: str, sdist: bool) -> Path:
    return _cache_dir() / f"{package}-{version}{'-sdist' if sdist else ''}"


def terminal_definition(package: str, version: str, path: str, name: str) -> str:
    """A terminal's definition as the package's grammar file writes it (continuation lines too)."""
    text = grammar_file(package, version, path).read_text()
    found = re.search(rf"(?m)^{name}(?:\.\d+)?\s*:.*(?:\n[ \t]+\|.*)*", text)
    if not found:
        raise LookupError(f"{name} is not defined in {package} {version}'s {path}")
    return found.group()


def _download(package: str, version: str, sdist: bool = False) -> Path:
    dest = _cache_dir() / "downloads"
    dest.mkdir(parents=True, exist_ok=True)
    stem = package.replace("-", "_")

    def archives() -> list[Path]:
        return sorted(
            p
            for p in dest.iterdir()
            if p.name.lower().startswith(f"{stem}-{version}".lower())
            and p.suffix in ((".gz",) if sdist else (".whl", ".gz"))
        )

    if not archives():
        pip_download(f"{package}=={version}", dest, sdist=sdist)
    if not archives():
        raise RuntimeError(f"pip did not download {package} {version} into {dest}")
    return archives()[0]


def pip_download(requirement: str, dest: Path, *, sdist: bool = False) -> None:
    """``pip download --no-deps`` of one requirement into ``dest`` (``sdist``: the source
    archive, never a wheel). Only the named package is taken as source: pip prepares an sdist's
    metadata in a build environment, and ``--no-binary :all:`` would build every one of its build
    requirements from source too (Cython alone takes minutes on a fresh machine)."""
    name = re.split(r"[=<>!~\[; ]", requirement, maxsplit=1)[0]
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            *(["--no-binary", name] if sdist else []),
            "--disable-pip-version-check",
            requirement,
            "-d",
            str(dest),
        ],
        check=True,
    )


_GRAMMAR_SUFFIXES = (".lark", ".g")


def _extract(archive: Path, root: Path, wanted: Callable[[str], bool]) -> list[str]:
    """Write the archive's files whose path (without an sdist's top folder) is ``wanted`` under
    ``root``; their paths."""
    root.mkdir(parents=True, exist_ok=True)
    names = []
    if archive.suffix == ".whl":
        with zipfile.ZipFile(archive) as wheel:
            for name in wheel.namelist():
                if wanted(name):
                    _write(root / name, wheel.read(name))
                    names.append(name)
    else:
        with tarfile.open(archive) as sdist:
            for member in sdist.getmembers():
                name = member.name.split("/", 1)[-1]
                if member.isfile() and "/" in member.name and wanted(name):
                    data = sdist.extractfile(member)
                    assert data is not None
                    _write(root / name, data.read())
                    names.append(name)
    return names


def _write(target: Path, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
