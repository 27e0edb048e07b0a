"""``LalrGrammar``: a Lark grammar read by lark's LALR parser (``Grammar.from_lark(parser="lalr")``).

Its checker is ``LalrChecker``, which drives lark's own parse table, contextual lexer and
``Indenter``. It has no llguidance form: the contextual lexer and the indenter are not a
context-free grammar over characters, so the token masks of a local target (which llguidance
computes) and the exports to plain Lark and GBNF are refused with a ``GrammarError``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NoReturn

import lark

from ._errors import GrammarError
from ._grammar import Grammar, Rewrite
from ._lalr import LalrLanguage
from ._postlex import IndentDriver, indenter_of

if TYPE_CHECKING:
    import llguidance as llg

    from ._lalr_checker import LalrChecker

__all__ = ["LalrGrammar"]


class LalrGrammar(Grammar):
    """A grammar whose language is lark's LALR parser's (contextual lexer, optional ``Indenter``)."""

    def __init__(
        self, parser: lark.Lark, postlex: object, *, name: str, lark_source: str, rewrites: Sequence[Rewrite] = ()
    ) -> None:
        indenter = indenter_of(postlex)
        self.language = LalrLanguage(parser, IndentDriver(indenter) if indenter is not None else None)
        self.name = name
        self.json_schema = None
        self.lexer = None
        self.rewrites = tuple(rewrites)
        self.captured_grammar = None
        self.lark_source = lark_source
        self.terminals = dict(self.language.terminals)
        self.character_level = False
        self._lark = parser
        #: The postlexer lark's parser runs (``None`` for none).
        self.postlex = postlex

    @property
    def llguidance_grammar(self) -> str:
        self._no_llguidance("llguidance grammar for token masks")

    @llguidance_grammar.setter
    def llguidance_grammar(self, value: str) -> None:
        raise AttributeError("an LALR grammar has no llguidance form")

    def _no_llguidance(self, what: str) -> NoReturn:
        postlex = f" with postlex={type(self.postlex).__name__}" if self.postlex is not None else ""
        raise GrammarError(
            f"{self.name}: a grammar read with parser='lalr'{postlex} has no llguidance form "
            f"(lark's contextual lexer and indenter are not a character-level grammar): no {what}; "
            "its checker and the guide loop with target=False (repairs from the grammar and the "
            "draft's own text) work"
        )

    def require_token_masks(self) -> NoReturn:
        self._no_llguidance("token masks for a target model")

    def new_matcher(self) -> llg.LLMatcher:
        self._no_llguidance("byte-level matchers")

    def to_plain_lark(self) -> str:
        self._no_llguidance("an export to plain Lark")

    def to_gbnf(self) -> str:
        self._no_llguidance("an export to GBNF")

    def checker(self, *, probe_from: int | None = None) -> LalrChecker:
        """A new checker at the start of the text (``probe_from`` has no use here: the checker's
        diagnostics always come from lark's own parse table)."""
        from ._lalr_checker import LalrChecker

        return LalrChecker(self)
