"""The errors grammar-guide raises.

An invalid draft is not an error: it is data (a ``Violation`` in a check result).
Exceptions are for misuse and for infrastructure failures::

    GrammarGuideError
    ├── GrammarError            a grammar that cannot be loaded or honoured exactly
    ├── MissingDependencyError  an optional extra or the default model is not installed
    ├── ProviderError           a draft provider failed (provider, status_code, retryable);
    │                           inside guide(), ``result`` holds the partial result
    │   ├── AuthenticationError     401/403: bad or missing API key; never retried
    │   ├── BadRequestError         400/404/422: the request itself is wrong; never retried
    │   ├── RateLimitError          429 after the retries ran out
    │   ├── ServerError             5xx after the retries ran out
    │   ├── ProviderConnectionError connection refused/dropped, read timeout, after retries
    │   └── ProviderResponseError   the provider answered something that is not its protocol
    ├── GuideExhausted          the text could not be completed (``reason``: no answer,
    │                           needs invention, budget reached, target unfinished);
    │                           carries the partial ``GuideResult``
    └── BatchOutputError        a batch job's output file cannot be resumed (written under
                                another configuration, or not a batch job's output)

Positions are ``line`` and ``column`` (1-based) and ``offset`` (0-based, in characters),
each ``None`` when unknown.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from ._trace import GuideResult

__all__ = [
    "AuthenticationError",
    "BadRequestError",
    "BatchOutputError",
    "ExhaustedReason",
    "GrammarError",
    "GrammarGuideError",
    "GuideExhausted",
    "MissingDependencyError",
    "ProviderConnectionError",
    "ProviderError",
    "ProviderResponseError",
    "RateLimitError",
    "ServerError",
    "TokenMatcherError",
]


class GrammarGuideError(Exception):
    """Base class of every error grammar-guide raises on purpose."""


class TokenMatcherError(GrammarGuideError, RuntimeError):
    """The target's token matcher (llguidance) failed on a text the grammar allows (``Too many
    items (limit 500000; mask)``): the target could not write there, the guide goes on without it."""


class GrammarError(GrammarGuideError):
    """A grammar has a syntax error or uses a construct that cannot be honoured exactly."""

    def __init__(
        self,
        message: str,
        *,
        line: int | None = None,
        column: int | None = None,
        offset: int | None = None,
        construct: str | None = None,
        expected: tuple[str, ...] = (),
        source: str | None = None,
    ) -> None:
        self.message = message
        self.line = line
        self.column = column
        self.offset = offset
        self.construct = construct
        self.expected = tuple(expected)
        self.source = source
        super().__init__(str(self))

    def __str__(self) -> str:
        where = ""
        if self.line is not None:
            where = f" at line {self.line}, column {self.column}"
            if self.source:
                where = f" in {self.source}{where}"
        elif self.source:
            where = f" in {self.source}"
        text = f"{self.message}{where}"
        if self.expected:
            text += f" (expected one of: {', '.join(self.expected)})"
        return text


class MissingDependencyError(GrammarGuideError, ImportError):
    """An optional extra or model is missing; the message says exactly what to install."""


class ProviderError(GrammarGuideError):
    """A draft provider failed.

    ``provider`` names it (``"openai"``, ``"anthropic"``, ``"http"`` ...), ``status_code`` is the HTTP
    status when there was one, and ``retryable`` tells whether trying again later may succeed.
    The message is the provider's own, with any secret removed.
    """

    retryable: bool = False
    #: Seconds the provider asked to wait (``Retry-After``), when it said.
    retry_after: float | None = None
    #: The partial ``GuideResult`` when the error ended a guided generation.
    result: Any = None

    def __init__(
        self,
        message: str,
        *,
        provider: str,
        status_code: int | None = None,
        retryable: bool | None = None,
    ) -> None:
        self.message = message
        self.provider = provider
        self.status_code = status_code
        if retryable is not None:
            self.retryable = retryable
        super().__init__(str(self))

    def __str__(self) -> str:
        status = f" (HTTP {self.status_code})" if self.status_code is not None else ""
        return f"{self.provider}{status}: {self.message}"


class AuthenticationError(ProviderError):
    """401 or 403: the API key is missing, wrong, or not allowed to do this. Never retried."""


class BadRequestError(ProviderError):
    """400, 404, 422: the request is wrong (unknown model, bad parameter). Never retried."""


class RateLimitError(ProviderError):
    """429 and the retries ran out."""

    retryable = True


class ServerError(ProviderError):
    """5xx and the retries ran out."""

    retryable = True


class ProviderConnectionError(ProviderError):
    """The connection was refused, dropped, or timed out, and the retries ran out."""

    retryable = True


class ProviderResponseError(ProviderError):
    """The provider answered with something that is not its protocol (malformed JSON, bad events)."""


ExhaustedReason = Literal["no answer", "needs invention", "budget reached", "target unfinished"]
"""Why a text was not completed. Without a target: ``no answer`` (nothing of the draft was
kept: prose only, a lone ``]``, ``hello world`` for JSON, all cut, never made into a value);
``needs invention`` (the draft's kept text ends where only a value or word nobody wrote could
finish it, ``-`` for JSON: checked, no close of marks and forced text alone ends it, and taking
the draft's last words back does not either); ``budget reached`` (a budget cut the draft, and
what was kept could not be closed). With a target: ``target unfinished`` (the target wrote
within its budgets and did not reach an end)."""


class GuideExhausted(GrammarGuideError):
    """The text could not be completed without inventing it, or even the target did not
    complete it (``reason``).

    ``result`` is the partial ``GuideResult``: its ``text`` is the longest valid prefix reached
    (never invalid text), with every event up to the failure (the cuts say what of the draft
    was left out and why).
    """

    def __init__(self, message: str, result: GuideResult | Any, reason: ExhaustedReason = "target unfinished") -> None:
        self.result = result
        self.reason: ExhaustedReason = reason
        super().__init__(message)


class BatchOutputError(GrammarGuideError):
    """A batch job's output file cannot be resumed: its rows were made under another
    configuration (grammar, draft, target, options), or a line of it is not a row. ``path`` is
    the file, ``line`` the first line in question (1-based, ``None`` when not one line)."""

    def __init__(self, message: str, *, path: str, line: int | None = None) -> None:
        self.path = path
        self.line = line
        super().__init__(message)
