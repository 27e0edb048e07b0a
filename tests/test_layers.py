"""The grammar layer's shape: no import cycles and no private names imported across its modules."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from grammar_guide._text import line_column, offset_of

PACKAGE = Path(__file__).resolve().parent.parent / "grammar_guide"
# Bottom to top: each module may import only modules listed before it (at import time).
GRAMMAR_LAYER = [
    "_errors",
    "_text",
    "_regex",
    "_charclass",
    "_matcher",
    "_exact",
    "_hazards",
    "_lark_load",
    "_compile",
    "_export",
    "_grammar",
    "_checker",
]


def _imports(module: str) -> list[tuple[str, str, bool]]:
    """(imported module, imported name, at import time) for each ``from .x import y``."""
    tree = ast.parse((PACKAGE / f"{module}.py").read_text(encoding="utf-8"))
    found: list[tuple[str, str, bool]] = []

    def visit(node: ast.AST, runtime: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                visit(child, False)
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(child, False)  # imported on first call, not at import time
            elif isinstance(child, ast.ImportFrom) and child.level == 1 and child.module:
                found.extend((child.module, alias.name, runtime) for alias in child.names)
            else:
                visit(child, runtime)

    visit(tree, True)
    return found


@pytest.mark.parametrize("module", GRAMMAR_LAYER)
def test_grammar_layer_imports_only_public_names_from_lower_modules(module: str) -> None:
    allowed = set(GRAMMAR_LAYER[: GRAMMAR_LAYER.index(module)])
    for imported, name, runtime in _imports(module):
        assert not name.startswith("_"), f"{module} imports the private {imported}.{name}"
        if runtime and imported in GRAMMAR_LAYER:
            assert imported in allowed, f"{module} imports {imported} at import time (a cycle)"


@pytest.mark.parametrize(
    ("text", "offset", "expected"),
    [("", 0, (1, 1)), ("ab", 2, (1, 3)), ("a\nbc", 2, (2, 1)), ("a\nbc", 4, (2, 3)), ("\n\n", 2, (3, 1))],
)
def test_line_column_and_its_inverse(text: str, offset: int, expected: tuple[int, int]) -> None:
    assert line_column(text, offset) == expected
    assert offset_of(text, *expected) == offset
