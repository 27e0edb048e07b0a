"""The grammar layer's shape: imports only go down, and only public names cross modules."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from grammar_guide._text import line_column, offset_of

PACKAGE = Path(__file__).resolve().parent.parent / "grammar_guide"
# Bottom to top: each module may import only modules listed before it, at import time, inside a
# function or under ``TYPE_CHECKING`` alike (any import back up is a cycle). The ``compiler``
# package in lark's phase order, then the checkers, then the ``Grammar`` front end.
GRAMMAR_LAYER = [
    "_errors",
    "_text",
    "_lexemes",
    "compiler.regex",
    "compiler.charclass",
    "compiler.unicode_classes",
    "compiler.automaton",
    "compiler.languages",
    "compiler.exact",
    "compiler.lazy",
    "compiler.lookahead",
    "compiler.matcher",
    "compiler.terminal",
    "compiler.load",
    "compiler.hazards",
    "compiler.rule_shape",
    "compiler.watchers",
    "compiler.character_level",
    "compiler.compile",
    "compiler.terminal_costs",
    "compiler.completion_chart",
    "compiler.first_path",
    "compiler.postlex",
    "compiler.lalr",
    "compiler.export",
    "_rewrites",
    "_feed_costs",
    "_checker",
    "_lalr_checker",
    "_terminal_completion",
    "_grammar",
]


def _path(module: str) -> Path:
    return PACKAGE.joinpath(*module.split(".")).with_suffix(".py")


def _absolute(module: str, node: ast.ImportFrom) -> str:
    """The module ``from .x import y`` names, relative to ``grammar_guide``."""
    package = module.split(".")[: -node.level]
    return ".".join([*package, *(node.module or "").split(".")]).strip(".")


def _imports(module: str, source: str | None = None) -> list[tuple[str, str]]:
    """(imported module, imported name) for each relative import in ``module``'s source, wherever
    it is: at the top, inside a function or under ``TYPE_CHECKING``."""
    tree = ast.parse(_path(module).read_text(encoding="utf-8") if source is None else source)
    return [
        (_absolute(module, node), alias.name)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.level
        for alias in node.names
    ]


def _public_names(module: str) -> set[str]:
    """The names in ``module``'s ``__all__``."""
    tree = ast.parse(_path(module).read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return set(ast.literal_eval(node.value))
    raise AssertionError(f"{module} has no __all__")


def test_grammar_layer_lists_every_module_of_the_compiler_package() -> None:
    modules = {f"compiler.{p.stem}" for p in (PACKAGE / "compiler").glob("*.py") if p.stem != "__init__"}
    assert modules <= set(GRAMMAR_LAYER), f"not placed in GRAMMAR_LAYER: {sorted(modules - set(GRAMMAR_LAYER))}"


@pytest.mark.parametrize("module", GRAMMAR_LAYER)
def test_grammar_layer_imports_only_public_names_from_lower_modules(module: str) -> None:
    allowed = set(GRAMMAR_LAYER[: GRAMMAR_LAYER.index(module)])
    for imported, name in _imports(module):
        assert not name.startswith("_"), f"{module} imports the private {imported}.{name}"
        if imported in GRAMMAR_LAYER:
            assert imported in allowed, f"{module} imports {imported}, which is not below it (a cycle)"
            assert name in _public_names(imported), f"{module} imports {imported}.{name}, not in its __all__"


def test_imports_inside_functions_and_for_type_checking_count() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from .._grammar import Grammar\n"
        "def export():\n    from .lalr import LalrLanguage\n"
    )
    assert _imports("compiler.export", source) == [("_grammar", "Grammar"), ("compiler.lalr", "LalrLanguage")]
    assert _imports("_checker", "from .compiler.compile import Terminal") == [("compiler.compile", "Terminal")]


@pytest.mark.parametrize(
    ("text", "offset", "expected"),
    [("", 0, (1, 1)), ("ab", 2, (1, 3)), ("a\nbc", 2, (2, 1)), ("a\nbc", 4, (2, 3)), ("\n\n", 2, (3, 1))],
)
def test_line_column_and_its_inverse(text: str, offset: int, expected: tuple[int, int]) -> None:
    assert line_column(text, offset) == expected
    assert offset_of(text, *expected) == offset
