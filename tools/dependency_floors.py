"""The lowest versions pyproject.toml declares for the core dependencies, as pip pins.

``python -m tools.dependency_floors [NAME ...]`` prints ``name==floor`` for each
``[project].dependencies`` entry, or for the named dependencies of any extra (``lark>=1.2.1`` gives
``lark==1.2.1``); ``make floors`` installs exactly those in a separate venv and runs the tests of the
core (grammar, checker, export, loop without models), and the local target's tests at the floor of
``transformers``, so a declared floor is a tested one. A dependency declared without a ``>=`` floor is an error: there
would be nothing to test.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent


def floors(pyproject: Path = ROOT / "pyproject.toml", names: tuple[str, ...] = ()) -> list[str]:
    """``name==floor`` for the core dependencies, or for the dependencies ``names`` (of any extra)."""
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    declared = project["dependencies"]
    if names:
        every = [*declared, *(r for extra in project["optional-dependencies"].values() for r in extra)]
        declared = [r for r in every if re.split(r"[\s<>=!~\[;]", r, maxsplit=1)[0] in names]
    pins = []
    for requirement in declared:
        match = re.match(r"^\s*([A-Za-z0-9_.\-\[\]]+)\s*.*?>=\s*([0-9][^,;\s]*)", requirement)
        if match is None:
            raise SystemExit(f"{requirement!r} declares no '>=' floor")
        pins.append(f"{match.group(1)}=={match.group(2)}")
    return pins


if __name__ == "__main__":
    print(" ".join(dict.fromkeys(floors(names=tuple(sys.argv[1:])))))
    sys.exit(0)
