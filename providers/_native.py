"""Sending the grammar to a provider's own grammar engine ("native" grammars), and falling back.

Which servers take a grammar, and in which form:

- ``"openai"``: OpenAI's Responses API, a forced custom tool whose input format is a Lark grammar
  (``Grammar.to_plain_lark``); GPT-5 family models. The answer streams as the tool's input.
- ``"vllm"``: ``structured_outputs: {"grammar": G}`` (vLLM >= 0.12; older servers ignore it);
- ``"sglang"``: ``ebnf: G``;
- ``"llama.cpp"``: ``grammar: G`` (llama.cpp's server).

The three serving engines get GBNF (``Grammar.to_gbnf``): their default backends (xgrammar,
llama.cpp) read it, and their llguidance backends read it too.

The grammar is sent on a draft's first call only (nothing accepted yet): the engine then writes
the whole answer. Later calls (after a server ignored the grammar and a repair was made) draft
freely: a grammar sent with a continuation would constrain the continuation as if it were a
whole text. The guide loop checks every byte either way. A grammar a server refused (HTTP 400)
is remembered by the draft and not sent again.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import TYPE_CHECKING, Literal

from grammar_guide import BadRequestError, DraftCall, GrammarError

if TYPE_CHECKING:
    from grammar_guide import Grammar

__all__ = ["GrammarStyle", "NativeGrammar", "NativeGrammarPolicy", "grammar_fields"]

GrammarStyle = Literal["openai", "vllm", "sglang", "llama.cpp"]
GRAMMAR_STYLES: tuple[str, ...] = ("openai", "vllm", "sglang", "llama.cpp")
NativeGrammar = bool | Literal["auto"]

#: Model names that take OpenAI's custom grammar tools (the GPT-5 family, by name).
GRAMMAR_TOOL_MODELS = re.compile(r"^(?:openai/)?gpt-5", re.IGNORECASE)

#: Tokens a native call may write: the engine writes the whole answer in one call, so the loop's
#: lookahead (a few dozen tokens per call) does not cap it; the loop's default text budget
#: (``max_new_tokens``) does. (A server that ignores the grammar may spend all of it on a
#: degenerate repetition: measured once, a 1,024-token run of zeros from SmolLM2.)
NATIVE_MAX_TOKENS = 512


def grammar_fields(style: GrammarStyle, definition: str) -> dict[str, object]:
    """The request-body fields that carry a grammar for a serving engine's chat endpoint."""
    if style == "vllm":
        return {"structured_outputs": {"grammar": definition}}
    if style == "sglang":
        return {"ebnf": definition}
    if style == "llama.cpp":
        return {"grammar": definition}
    raise ValueError(f"style {style!r} does not send the grammar as request fields")


class NativeGrammarPolicy:
    """When a draft sends the grammar, in which form, and what it remembers of refusals.

    ``setting``: ``True`` (send whenever there is a grammar; a grammar that the form cannot
    express raises ``GrammarError``), ``False`` (never), ``"auto"`` (send where the model is
    known to take it: any model for the serving engines, GPT-5 family names for ``"openai"``; a
    grammar the form cannot express is drafted speculatively, the reason recorded).
    """

    def __init__(self, setting: NativeGrammar, style: GrammarStyle, model: str) -> None:
        if setting not in (True, False, "auto"):
            raise ValueError(f"native_grammar must be True, False or 'auto', not {setting!r}")
        if style not in GRAMMAR_STYLES:
            raise ValueError(f"grammar style must be one of {GRAMMAR_STYLES}, not {style!r}")
        self.setting = setting
        self.style: GrammarStyle = style
        self.model = model
        self._refused: dict[str, str] = {}  # grammar text -> the server's message

    @property
    def enabled(self) -> bool:
        if self.setting == "auto":
            return self.style != "openai" or bool(GRAMMAR_TOOL_MODELS.match(self.model))
        return bool(self.setting)

    def definition_for(self, call: DraftCall) -> str | None:
        """The grammar text to send with this call, or None (then ``call.path`` says why)."""
        request = call.request
        if not self.enabled or request.grammar is None or request.accepted_text:
            return None
        try:
            definition = self.export(request.grammar)
        except GrammarError as exc:
            if self.setting is True:
                raise
            call.path, call.fallback_reason = "fallback", f"not sent: {exc}"
            return None
        refused = self._refused.get(definition)
        if refused is not None:
            call.path, call.fallback_reason = "fallback", f"refused before: {refused}"
            return None
        call.path = "native"
        return definition

    def export(self, grammar: Grammar) -> str:
        return grammar.to_plain_lark() if self.style == "openai" else grammar.to_gbnf()

    def refused(self, call: DraftCall, definition: str, error: BadRequestError) -> None:
        """The server refused the grammar: this call drafts freely, and it is not sent again."""
        self._refused[definition] = error.message
        call.path, call.fallback_reason = "fallback", error.message

    async def stream(
        self,
        call: DraftCall,
        definition: str,
        native: AsyncIterator[str],
        free: Callable[[], AsyncIterator[str]],
    ) -> AsyncGenerator[str, None]:
        """The native call's text; on a 400 before any text (the grammar refused), the same call
        drafted freely by ``free()``."""
        async with contextlib.aclosing(native):  # type: ignore[type-var]
            try:
                first = await anext(native)
            except StopAsyncIteration:
                return
            except BadRequestError as exc:
                self.refused(call, definition, exc)
            else:
                yield first
                async for chunk in native:
                    yield chunk
                return
        async with contextlib.aclosing(free()) as text:  # type: ignore[type-var]
            async for chunk in text:
                yield chunk
