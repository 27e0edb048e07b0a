"""Sending the grammar to a provider's own grammar engine ("native" grammars), and falling back.

Which servers take a grammar, and in which form:

- ``"openai"``: OpenAI's Responses API, a forced custom tool whose input format is a Lark grammar
  (``Grammar.to_plain_lark``); GPT-5 family models. The answer streams as the tool's input.
- ``"vllm"``: ``structured_outputs: {"grammar": G}`` (vLLM >= 0.12; older servers ignore it);
- ``"sglang"``: ``ebnf: G``;
- ``"llama.cpp"``: ``grammar: G`` (llama.cpp's server).

The three serving engines get GBNF (``Grammar.to_gbnf``): their default backends (xgrammar,
llama.cpp) read it, and their llguidance backends read it too.

The grammar is sent on a draft's first call only (nothing accepted yet, or only the text the
grammar forces at its start, such as the ``{`` of a JSON object, which the guide loop writes
before the first call), with the prompt alone: the engine then writes the whole answer, and the
draft hands on what follows the accepted text (or, when the answer does not start with it, the
whole answer as a restatement, ``call.continued_prefix = False``, which the loop aligns). Later
calls (after a server ignored the grammar and a repair was made) draft freely: a grammar sent
with a continuation would constrain the continuation as if it were a whole text. The guide loop
checks every byte either way. A grammar a server refused (HTTP 400) is remembered by the draft
and not sent again.

Anthropic has no grammars, only JSON-schema outputs: ``AnthropicDraft(native_schema=...)`` sends a
grammar built from a JSON Schema (``Grammar.json_schema``) as ``output_config.format``
(``NativeSchemaPolicy``); any other grammar is drafted speculatively, nothing recorded.
"""

from __future__ import annotations

import abc
import contextlib
import dataclasses
import json
import re
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import TYPE_CHECKING, Literal

from grammar_guide import BadRequestError, DraftCall, DraftRequest, GrammarError

if TYPE_CHECKING:
    from grammar_guide import Grammar

__all__ = [
    "GrammarStyle",
    "NativeGrammar",
    "NativeGrammarPolicy",
    "NativePolicy",
    "NativeSchemaPolicy",
    "grammar_fields",
    "whole_answer_request",
]

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


def whole_answer_request(request: DraftRequest) -> DraftRequest:
    """What a native call asks: the prompt alone, since the engine writes the whole answer (the
    text accepted so far, at most what the grammar forces at its start, is not sent)."""
    return dataclasses.replace(request, accepted_text="")


def grammar_fields(style: GrammarStyle, definition: str) -> dict[str, object]:
    """The request-body fields that carry a grammar for a serving engine's chat endpoint."""
    if style == "vllm":
        return {"structured_outputs": {"grammar": definition}}
    if style == "sglang":
        return {"ebnf": definition}
    if style == "llama.cpp":
        return {"grammar": definition}
    raise ValueError(f"style {style!r} does not send the grammar as request fields")


class NativePolicy(abc.ABC):
    """When a draft sends the grammar to the provider's engine, in which form, and what it
    remembers of refusals; subclasses say which models take it (``known``) and the form
    (``export``).

    ``setting``: ``True`` (send whenever the grammar has this form; a grammar that the form
    cannot express raises ``GrammarError``), ``False`` (never), ``"auto"`` (send where the model
    is known to take it, ``known``; a grammar the form cannot express is drafted speculatively,
    the reason recorded).
    """

    #: The draft's argument that holds the setting, for error messages.
    argument = "native_grammar"

    def __init__(self, setting: NativeGrammar, model: str, *, known: bool) -> None:
        if setting not in (True, False, "auto"):
            raise ValueError(f"{self.argument} must be True, False or 'auto', not {setting!r}")
        self.setting = setting
        self.model = model
        self.known = known
        self._refused: dict[str, str] = {}  # definition text -> the server's message

    @property
    def enabled(self) -> bool:
        return self.known if self.setting == "auto" else bool(self.setting)

    def definition_for(self, call: DraftCall) -> str | None:
        """The grammar text to send with this call, or None (then ``call.path`` says why)."""
        request = call.request
        if not self.enabled or request.grammar is None:
            return None
        if request.accepted_text and request.accepted_text != request.grammar.checker().forced_text():
            return None  # a continuation: a grammar sent with it would constrain it as a whole text
        try:
            definition = self.export(request.grammar)
        except GrammarError as exc:
            if self.setting is True:
                raise
            call.path, call.fallback_reason = "fallback", f"not sent: {exc}"
            return None
        if definition is None:
            return None
        refused = self._refused.get(definition)
        if refused is not None:
            call.path, call.fallback_reason = "fallback", f"refused before: {refused}"
            return None
        call.path = "native"
        return definition

    @abc.abstractmethod
    def export(self, grammar: Grammar) -> str | None:
        """The grammar in the form this provider takes; ``None`` when it has no such form and
        nothing is sent (the call drafts speculatively)."""

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
        """The native call's text after the accepted text (see the module docstring); on a 400
        before any text (the grammar refused), the same call drafted freely by ``free()``."""
        async with contextlib.aclosing(native):  # type: ignore[type-var]
            try:
                first = await anext(native)
            except StopAsyncIteration:
                return
            except BadRequestError as exc:
                self.refused(call, definition, exc)
            else:
                accepted = call.request.accepted_text
                head = first
                if len(head) < len(accepted) and accepted.startswith(head):
                    async for chunk in native:  # read until the answer covers the accepted text
                        head += chunk
                        if len(head) >= len(accepted) or not accepted.startswith(head):
                            break
                if accepted:
                    call.continued_prefix = head.startswith(accepted)
                    if call.continued_prefix:
                        head = head[len(accepted) :]
                if head:
                    yield head
                async for chunk in native:
                    yield chunk
                return
        async with contextlib.aclosing(free()) as text:  # type: ignore[type-var]
            async for chunk in text:
                yield chunk


class NativeGrammarPolicy(NativePolicy):
    """Grammars for OpenAI's custom grammar tools (Lark) and the serving engines (GBNF): any model
    for the serving engines, GPT-5 family names for ``"openai"``, are known to take them."""

    def __init__(self, setting: NativeGrammar, style: GrammarStyle, model: str) -> None:
        if style not in GRAMMAR_STYLES:
            raise ValueError(f"grammar style must be one of {GRAMMAR_STYLES}, not {style!r}")
        super().__init__(setting, model, known=style != "openai" or bool(GRAMMAR_TOOL_MODELS.match(model)))
        self.style: GrammarStyle = style

    def export(self, grammar: Grammar) -> str:
        return grammar.to_plain_lark() if self.style == "openai" else grammar.to_gbnf()


class NativeSchemaPolicy(NativePolicy):
    """JSON-schema outputs (Anthropic's ``output_config.format``): a grammar built from a JSON
    Schema is sent as that schema (its JSON text is the definition); any other grammar has no
    such form and is drafted speculatively, even with ``True``. Whether the model is known to take
    it is the provider's rule (``known``)."""

    argument = "native_schema"

    def export(self, grammar: Grammar) -> str | None:
        return None if grammar.json_schema is None else json.dumps(grammar.json_schema)
