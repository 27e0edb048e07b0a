"""lark's ``Indenter`` postlexers, driven one token at a time with a state that can be copied.

lark runs a postlexer as a generator over the whole token stream (``Indenter.process``), which
cannot be paused at the end of a prefix nor copied. For the ``Indenter`` family the state is two
values (the open brackets, the stack of indentation levels): this module keeps them in an
immutable ``IndentState`` and runs the indenter's own ``handle_NL`` on them, so a subclass's
``NL_type``, bracket types, ``tab_len`` or its own ``handle_NL`` mean what they mean to lark.

An ``Indenter`` subclass with its own ``process`` or ``_process`` (gdtoolkit's GDScriptIndenter
dedents multi-line lambdas at a closing bracket, with state of its own) is read by running it
again over the tokens so far (``ReplayDriver``), stopped where it asks for the next token: what
it yielded by then is what lark's parser receives for them. That is exact for an indenter that
yields a token's output before it asks for the next, as lark's own do. Any other postlexer is
refused (``indenter_of``): its token stream has no state to stop at.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from lark import Token
from lark.exceptions import LarkError
from lark.indenter import Indenter

from .._errors import GrammarError

__all__ = ["IndentDriver", "IndentState", "PostlexError", "ReplayDriver", "driver_of", "indenter_of"]


class PostlexError(LarkError):
    """The postlexer refused the token stream (lark raises an assertion or a ``DedentError``)."""


@dataclass(frozen=True)
class IndentState:
    """The indenter's state between two tokens: open brackets and the indentation stack."""

    paren_level: int = 0
    indent_level: tuple[int, ...] = (0,)
    # For a ``ReplayDriver``: the lexer's tokens so far, and how many tokens the indenter yielded.
    tokens: tuple[Token, ...] = ()
    emitted: int = 0


def indenter_of(postlex: object) -> Indenter | None:
    """``postlex`` as an ``Indenter`` the checker can drive, ``None`` for none; ``GrammarError``
    for any other postlexer."""
    if postlex is None:
        return None
    cls = type(postlex)
    if not isinstance(postlex, Indenter):
        raise GrammarError(
            f"postlex={cls.__name__}: grammar-guide reads lark's Indenter postlexers "
            "(lark.indenter.Indenter subclasses such as PythonIndenter, with your own NL_type, "
            "bracket types, INDENT/DEDENT types, tab_len, handle_NL or process); another postlexer's token "
            "stream cannot be checked on prefixes: write what it does to the tokens in the "
            "grammar's rules (a token it merges into the next as an optional terminal before that "
            "one), or load the grammar without postlex",
            construct="postlex",
        )
    return copy.copy(postlex)


def driver_of(indenter: Indenter) -> IndentDriver:
    """The driver of ``indenter``: token by token through ``handle_NL``, or by replaying it where
    it has its own ``process`` or ``_process``."""
    own = any(getattr(type(indenter), m) is not getattr(Indenter, m) for m in ("process", "_process"))
    return ReplayDriver(indenter) if own else IndentDriver(indenter)


class IndentDriver:
    """Runs one ``Indenter`` token by token (its instance is this driver's own copy)."""

    def __init__(self, indenter: Indenter) -> None:
        self._indenter = indenter
        self.nl_type: str = indenter.NL_type
        self._open = frozenset(indenter.OPEN_PAREN_types)
        self._close = frozenset(indenter.CLOSE_PAREN_types)
        self.dedent_type: str = indenter.DEDENT_type

    def emit(self, state: IndentState, token: Token) -> tuple[list[Token], IndentState]:
        """The tokens lark's parser receives for ``token``, and the state before its bracket count
        (``count_brackets`` follows, once the parser took them)."""
        if token.type != self.nl_type:
            return [token], state
        indenter = self._indenter
        indenter.paren_level = state.paren_level
        indenter.indent_level = list(state.indent_level)
        try:
            out = list(indenter.handle_NL(token))
        except LarkError:
            raise
        except Exception as exc:
            raise PostlexError(f"{type(exc).__name__}: {exc}") from None
        return out, IndentState(state.paren_level, tuple(indenter.indent_level))

    def count_brackets(self, state: IndentState, token: Token) -> IndentState:
        """The state after ``token`` opened or closed a bracket (lark asserts none closes below 0)."""
        if token.type in self._open:
            return IndentState(state.paren_level + 1, state.indent_level)
        if token.type in self._close:
            if state.paren_level <= 0:
                raise PostlexError("closing bracket without an open one")
            return IndentState(state.paren_level - 1, state.indent_level)
        return state

    def end(self, state: IndentState) -> list[Token]:
        """The tokens lark's indenter adds at the end of the text (a ``DEDENT`` per open level)."""
        return [Token(self.dedent_type, "") for _ in state.indent_level[1:]]

    def newline_values(self, value: str, state: IndentState) -> list[str]:
        """Values the newline token in progress, ``value``, could end with: its own indentation
        grown to each open level or one deeper, or a further line at each of those levels."""
        last = value.rsplit("\n", 1)[-1]
        if "\n" not in value:
            last = ""
        blank = last.strip("\t ") == ""
        width = last.count(" ") + last.count("\t") * self._indenter.tab_len
        levels = sorted({*state.indent_level, state.indent_level[-1] + 1})
        values = [value]
        for level in levels:
            if blank and "\n" in value and level > width:
                values.append(value + " " * (level - width))
            values.append(value + "\n" + " " * level)
        return values


class _Exhausted(Exception):
    """The tokens so far are all read: the indenter asks for one more."""


def _then_stop(tokens: tuple[Token, ...]) -> Iterator[Token]:
    yield from tokens
    raise _Exhausted


class ReplayDriver(IndentDriver):
    """Runs an ``Indenter`` with its own ``process`` over all the tokens so far at each token
    (its state may be anything it keeps, local variables of its generator too)."""

    def emit(self, state: IndentState, token: Token) -> tuple[list[Token], IndentState]:
        tokens = (*state.tokens, token)
        out = self._run(tokens, to_end=False)
        indenter = self._indenter
        after = IndentState(indenter.paren_level, tuple(indenter.indent_level), tokens, len(out))
        return out[state.emitted :], after

    def count_brackets(self, state: IndentState, token: Token) -> IndentState:
        return state  # the replay counted them, as the indenter does

    def end(self, state: IndentState) -> list[Token]:
        return self._run(state.tokens, to_end=True)[state.emitted :]

    def _run(self, tokens: tuple[Token, ...], *, to_end: bool) -> list[Token]:
        """What the indenter yields for ``tokens``: up to where it asks for another (``to_end``:
        up to the end of the stream, the closing tokens too)."""
        out: list[Token] = []
        process: Callable[[Iterator[Token]], Iterator[Token]] = self._indenter.process  # lark's is untyped
        try:
            for each in process(iter(tokens) if to_end else _then_stop(tokens)):
                out.append(each)
        except _Exhausted:
            pass
        except LarkError:
            raise
        except Exception as exc:
            raise PostlexError(f"{type(exc).__name__}: {exc}") from None
        return out
