"""``guide`` and ``aguide``: speculative grammar backtracking with a validity guarantee.

The draft writes freely; the checker reads its stream and closes it at the first invalid byte;
the violation is repaired (grammar-forced text, an edit the draft's own text supports, or the
target model under a full token mask), and the draft resumes from the corrected text. When a
budget runs out the target finishes the text under the grammar. The returned text is always
complete and valid; when even that is impossible ``GuideExhausted`` carries the partial result.

The loop (``_loop``) is written once, async (``aguide``); ``guide`` is its synchronous face.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from ._draft import Draft, as_draft
from ._events import Event
from ._grammar import Grammar
from ._limits import GuideLimits
from ._loop import GuideLoop
from ._trace import GuideResult

if TYPE_CHECKING:
    from .local.target import TargetModel

__all__ = ["GuideLimits", "aguide", "guide"]


def guide(
    draft: Draft | Callable[..., Any],
    grammar: Grammar | str,
    prompt: str,
    target: TargetModel | Literal[False] | None = None,
    **options: Any,
) -> GuideResult:
    """Generate text with ``draft`` that is complete and valid under ``grammar``.

    The synchronous face of ``aguide`` (same arguments and semantics). Inside a running event loop
    (a notebook) it runs the loop in a worker thread.
    """
    coroutine = aguide(draft, grammar, prompt, target, **options)
    try:
        asyncio.get_running_loop()
        in_a_loop = True
    except RuntimeError:
        in_a_loop = False
    # Not inside the ``except``: every error of the run would carry "no running event loop" as
    # its context.
    if not in_a_loop:
        return asyncio.run(coroutine)
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="grammar-guide") as pool:
        return pool.submit(asyncio.run, coroutine).result()


async def aguide(
    draft: Draft | Callable[..., Any],
    grammar: Grammar | str,
    prompt: str,
    target: TargetModel | Literal[False] | None = None,
    *,
    lookahead: int = 32,
    max_corrections: int = 16,
    max_draft_calls: int = 256,
    max_new_tokens: int = 8192,
    timeout: float | None = None,
    stop: str | list[str] | tuple[str, ...] | None = None,
    seed_text: str = "",
    limits: GuideLimits | None = None,
    on_event: Callable[[Event], None] | None = None,
    on_draft_text: Callable[[str], None] | None = None,
    on_target_text: Callable[[str], None] | None = None,
) -> GuideResult:
    """Generate text with ``draft`` that is complete and valid under ``grammar``.

    ``draft`` is a ``Draft`` (see ``providers``) or a plain function (wrapped by ``FunctionDraft``).
    ``grammar`` is a ``Grammar`` or the name of a builtin one. ``target`` repairs violations and
    finishes the text when a budget runs out: ``None`` loads the default local model on first use,
    ``False`` means no target model (repairs then use the grammar and the draft's evidence only).
    ``seed_text`` is a valid prefix the text must start with. ``stop`` ends the draft at any of
    these strings; by default (``None``) a code fence at the start of a line after the answer
    ends it (pass ``stop=[]`` for grammars where such a line is part of the text). ``on_event``
    is called with each event as it happens, ``on_draft_text`` with each raw chunk the draft
    streams, ``on_target_text`` with the target's text as it writes it (its ``Correction`` event
    follows). ``limits`` overrides the individual budget arguments.

    Raises ``GuideExhausted`` (with the partial result) when the text cannot be completed, and
    ``ProviderError`` when the draft fails outright.
    """
    if not (target is None or target is False or callable(getattr(target, "acontinue_text", None))):
        raise TypeError(
            "target must be a TargetModel (gg.TargetModel.load()), None for the default model, "
            f"or False for none, not {target!r}"
        )
    if limits is None:
        limits = GuideLimits(
            lookahead=lookahead,
            max_corrections=max_corrections,
            max_draft_calls=max_draft_calls,
            max_new_tokens=max_new_tokens,
            timeout=timeout,
        )
    if isinstance(grammar, str):
        grammar = Grammar.builtin(grammar)
    if target is not False:
        grammar.require_token_masks()
    stops = (stop,) if isinstance(stop, str) else tuple(stop or ())
    loop = GuideLoop(
        as_draft(draft),
        grammar,
        prompt,
        target,
        limits,
        stops=stops,
        fences=stop is None,
        on_event=on_event,
        on_draft_text=on_draft_text,
        on_target_text=on_target_text,
    )
    return await loop.run(seed_text)
