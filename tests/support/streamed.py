"""A draft that writes a fixed answer once, streamed in pieces, and nothing when asked to go on."""

from __future__ import annotations

from grammar_guide import FunctionDraft


def streamed(answer: str, chunk: int) -> FunctionDraft:
    """``answer`` in pieces of ``chunk`` characters, then nothing (a finished draft)."""
    pieces = [answer[i : i + chunk] for i in range(0, len(answer), chunk)]
    return FunctionDraft(lambda prompt, prefix: iter(() if prefix else pieces))
