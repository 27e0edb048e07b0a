"""grammar-guide: make any LLM produce text that follows a context-free grammar.

The draft model writes freely; an incremental Earley checker finds the longest valid prefix as
the text streams in; a small local target model repairs the text at the first invalid byte under
a full token mask; the draft resumes. The result is always complete and valid.

Importing this package imports neither torch nor any provider SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._changes import Changes
from ._checker import Checker, CheckerState, Violation
from ._draft import Draft, DraftCall, DraftPath, DraftRequest, FunctionDraft, SyncDraft, as_draft
from ._errors import (
    AuthenticationError,
    BadRequestError,
    BatchOutputError,
    ExhaustedReason,
    GrammarError,
    GrammarGuideError,
    GuideExhausted,
    MissingDependencyError,
    ProviderConnectionError,
    ProviderError,
    ProviderResponseError,
    RateLimitError,
    ServerError,
    TokenMatcherError,
)
from ._events import (
    Alternative,
    Correction,
    CorrectionReason,
    Cut,
    CutReason,
    DraftSpan,
    EditRule,
    Event,
    GrammarRefused,
    GrammarViolation,
    GuideStats,
)
from ._grammar import Grammar, Rewrite, Terminal
from ._provenance import Dropped, Origin
from ._rate_gate import RateGate
from ._trace import GuideResult

if TYPE_CHECKING:
    from ._batch import BatchRow, RowError, RowResult, guide_many
    from ._guide import GuideLimits, aguide, guide
    from .local.decoding import Continuation
    from .local.target import TargetModel

__version__ = "0.1.0"

__all__ = [
    "Alternative",
    "AuthenticationError",
    "BadRequestError",
    "BatchOutputError",
    "BatchRow",
    "Changes",
    "Checker",
    "CheckerState",
    "Continuation",
    "Correction",
    "CorrectionReason",
    "Cut",
    "CutReason",
    "Draft",
    "DraftCall",
    "DraftPath",
    "DraftRequest",
    "DraftSpan",
    "Dropped",
    "EditRule",
    "Event",
    "ExhaustedReason",
    "FunctionDraft",
    "Grammar",
    "GrammarError",
    "GrammarGuideError",
    "GrammarRefused",
    "GrammarViolation",
    "GuideExhausted",
    "GuideLimits",
    "GuideResult",
    "GuideStats",
    "MissingDependencyError",
    "Origin",
    "ProviderConnectionError",
    "ProviderError",
    "ProviderResponseError",
    "RateGate",
    "RateLimitError",
    "Rewrite",
    "RowError",
    "RowResult",
    "ServerError",
    "SyncDraft",
    "TargetModel",
    "Terminal",
    "TokenMatcherError",
    "Violation",
    "aguide",
    "as_draft",
    "guide",
    "guide_many",
]

# Names whose modules are imported on first use (the target pulls in torch).
_LAZY = {
    "guide": "._guide",
    "aguide": "._guide",
    "GuideLimits": "._guide",
    "guide_many": "._batch",
    "BatchRow": "._batch",
    "RowError": "._batch",
    "RowResult": "._batch",
    "TargetModel": ".local.target",
    "Continuation": ".local.decoding",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'grammar_guide' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value
