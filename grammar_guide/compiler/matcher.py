"""The byte-level matcher: llguidance's ``LLMatcher`` over a vocabulary of the 256 single bytes.

Used by the rest of the compiler, by ``Grammar`` (the front end) and by ``_checker``, and
imports none of them. Consuming a "token" is consuming one byte, so the matcher answers, byte by
byte, whether text is still a prefix of some valid text.
"""

from __future__ import annotations

import functools
from typing import ClassVar

import llguidance as llg

from .._errors import GrammarError

__all__ = [
    "EOS",
    "ByteMatcherFactory",
    "byte_tokenizer",
    "regex_accepts_prefix",
    "regex_is_void",
    "regex_start_bytes",
]

#: The end-of-text token of the byte vocabulary.
EOS = 256


class _ByteTokenizer:
    """The 256 bytes as a vocabulary, in the shape ``llguidance.TokenizerWrapper`` reads."""

    eos_token_id = EOS
    bos_token_id = None
    tokens: ClassVar[list[bytes]] = [*(bytes([i]) for i in range(256)), b"<|end|>"]
    special_token_ids: ClassVar[list[int]] = [EOS]

    def __call__(self, text: str | bytes) -> list[int]:
        return list(text.encode("utf-8") if isinstance(text, str) else text)


@functools.lru_cache(maxsize=1)
def byte_tokenizer() -> llg.LLTokenizer:
    """The shared llguidance tokenizer whose tokens are single bytes."""
    return llg.LLTokenizer(llg.TokenizerWrapper(_ByteTokenizer()), slices=[])


#: A character-level reading (``compile``) holds an Earley item per rule variant a character may
#: continue: eql's grammar has rows of 2,543 items where the text begins, over llguidance's default
#: of 2,000 (the matcher then stops: "Current row has ... items").
_LIMITS = llg.LLParserLimits(max_items_in_row=20000)


class ByteMatcherFactory:
    """Makes byte-level matchers for one compiled grammar (the grammar is compiled once)."""

    def __init__(self, llguidance_grammar: str, name: str) -> None:
        self._proto = llg.LLMatcher(byte_tokenizer(), llguidance_grammar, log_level=0, limits=_LIMITS)
        if self._proto.is_error():
            raise GrammarError(f"the matcher rejected grammar {name}: {self._proto.get_error()}")

    def new(self) -> llg.LLMatcher:
        """A fresh matcher at the start of the text."""
        return self._proto.deep_copy()


@functools.lru_cache(maxsize=4096)
def _regex_factory(pattern: str) -> ByteMatcherFactory:
    return ByteMatcherFactory(llg.LLMatcher.grammar_from_regex(pattern), f"regex {pattern!r}")


def regex_accepts_prefix(pattern: str, text: str) -> bool:
    """Whether ``text`` is a prefix of some full match of ``pattern`` (``True`` when the matcher
    cannot compile the pattern: no claim either way)."""
    try:
        matcher = _regex_factory(pattern).new()
    except (GrammarError, ValueError):
        return True
    data = list(text.encode("utf-8"))
    return matcher.validate_tokens(data) == len(data)


@functools.lru_cache(maxsize=1024)
def regex_is_void(pattern: str) -> bool:
    """Whether ``pattern`` matches no text at all (a dead-end guard such as ``/[^\\s\\S]/``)."""
    try:
        matcher = _regex_factory(pattern).new()
    except (GrammarError, ValueError):
        return False
    return not matcher.is_accepting() and not any(matcher.compute_bitmask()[:32])


def regex_start_bytes(pattern: str) -> frozenset[int]:
    """The bytes that can begin a match of ``pattern``."""
    mask = _regex_factory(pattern).new().compute_bitmask()
    return frozenset(b for b in range(256) if mask[b >> 3] >> (b & 7) & 1)
