"""Lark grammars that other projects ship in their packages, taken from the package index at test
time (pinned versions; CI reaches only the package registries).

``pip download --no-deps`` fetches the package (a wheel or an sdist) into the user cache, and its
grammar files (``.lark``, and ``.g`` as eql names its own) are extracted beside it, keeping their
folders so that a grammar's ``%import`` of a sibling (outlines' ``common.lark``) still resolves.
Installing the packages instead is not possible: their pins on lark conflict (pyquil 3.5.4 wants
lark<0.12, gdtoolkit 4.5.0 lark==1.2.2).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

__all__ = ["grammar_file", "pip_download", "terminal_definition"]


def _cache_dir() -> Path:
    return Path(os.environ.get("GRAMMAR_GUIDE_CACHE") or Path.home() / ".cache" / "grammar-guide") / "packages"


def grammar_file(package: str, version: str, path: str) -> Path:
    """The extracted ``path`` (relative to the package's root folder) of ``package==version``."""
    root = _cache_dir() / f"{package}-{version}"
    if not (root / ".extracted").is_file():
        _extract(_download(package, version), root)
    found = root / path
    if not found.is_file():
        raise FileNotFoundError(f"{package} {version} has no {path}")
    return found


def terminal_definition(package: str, version: str, path: str, name: str) -> str:
    """A terminal's definition as the package's grammar file writes it (continuation lines too)."""
    text = grammar_file(package, version, path).read_text()
    found = re.search(rf"(?m)^{name}(?:\.\d+)?\s*:.*(?:\n[ \t]+\|.*)*", text)
    if not found:
        raise LookupError(f"{name} is not defined in {package} {version}'s {path}")
    return found.group()


def _download(package: str, version: str) -> Path:
    dest = _cache_dir() / "downloads"
    dest.mkdir(parents=True, exist_ok=True)
    stem = package.replace("-", "_")

    def archives() -> list[Path]:
        return sorted(
            p
            for p in dest.iterdir()
            if p.name.lower().startswith(f"{stem}-{version}".lower()) and p.suffix in (".whl", ".gz")
        )

    if not archives():
        pip_download(f"{package}=={version}", dest)
    if not archives():
        raise RuntimeError(f"pip did not download {package} {version} into {dest}")
    return archives()[0]


def pip_download(requirement: str, dest: Path, *, sdist: bool = False) -> None:
    """``pip download --no-deps`` of one requirement into ``dest`` (``sdist``: the source
    archive, never a wheel)."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            *(["--no-binary", ":all:"] if sdist else []),
            "--disable-pip-version-check",
            requirement,
            "-d",
            str(dest),
        ],
        check=True,
    )


_GRAMMAR_SUFFIXES = (".lark", ".g")


def _extract(archive: Path, root: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    if archive.suffix == ".whl":
        with zipfile.ZipFile(archive) as wheel:
            for name in wheel.namelist():
                if name.endswith(_GRAMMAR_SUFFIXES):
                    _write(root / name, wheel.read(name))
    else:
        with tarfile.open(archive) as sdist:
            for member in sdist.getmembers():
                if member.isfile() and member.name.endswith(_GRAMMAR_SUFFIXES) and "/" in member.name:
                    data = sdist.extractfile(member)
                    assert data is not None
                    _write(root / member.name.split("/", 1)[1], data.read())
    (root / ".extracted").write_text(archive.name)


def _write(target: Path, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
