"""The draft-model interface, and the wrapper that makes any function a draft.

A draft is anything that writes text freely. The guide loop asks it for text with a
``DraftRequest`` and reads the answer as a stream of text chunks; when the checker finds an
invalid byte the loop closes the stream (``aclose`` on the async generator), and a draft must stop
generating then, so no more tokens are paid for.

Async first: ``Draft.stream`` is an async generator. Drafts that are synchronous by nature
(a plain function, a local torch model) subclass ``SyncDraft`` and write ``stream_sync``; the async
face is derived from it, running each step in a worker thread.
"""

from __future__ import annotations

import abc
import asyncio
import concurrent.futures
import contextlib
import inspect
import queue
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ._errors import RateLimitError
from ._rate_gate import RateGate

if TYPE_CHECKING:
    from ._grammar import Grammar

__all__ = [
    "Draft",
    "DraftCall",
    "DraftOutputError",
    "DraftPath",
    "DraftRequest",
    "FunctionDraft",
    "SyncDraft",
    "as_draft",
]

#: How a draft call used the grammar: ``"native"``, the provider's own grammar engine
#: constrained it; ``"speculative"``, it wrote freely (the checker and repairs keep the text
#: valid); ``"fallback"``, the provider refused the grammar and it wrote freely.
DraftPath = Literal["native", "speculative", "fallback"]


@dataclass(frozen=True)
class DraftRequest:
    """What the guide loop asks of a draft.

    ``accepted_text`` is the text accepted so far: a draft with ``continues_prefix`` writes what
    comes after it; one without may restate it (the loop aligns the answer). ``max_new_tokens``
    is this call's budget (the lookahead); ``stop`` are strings the draft should stop at.
    ``grammar`` is the grammar the text must follow: a provider with a grammar engine of its own
    may send it (``OpenAIDraft(native_grammar=...)``); the loop checks every byte either way.
    """

    prompt: str
    accepted_text: str = ""
    max_new_tokens: int = 64
    stop: tuple[str, ...] = ()
    grammar: Grammar | None = None


@dataclass
class DraftCall:
    """One call of a draft: its request, and what the draft reports while streaming.

    Providers fill ``tokens_in``/``tokens_out`` as the API reports usage (``None`` when it does
    not) and ``finish_reason`` ("stop", "length", "closed", ...). The loop also reads:

    - ``continued_prefix``: the mode this call actually used, set before the first chunk (a
      provider that falls back from prefill for one call sets False); ``None`` means the draft's
      ``continues_prefix``;
    - ``whole_answer``: the draft gave its whole answer at once (a function returning a string):
      nothing follows the text streamed so far;
    - ``may_stop_short``: the draft may have stopped at a size limit it does not report (a
      function that ignores ``max_new_tokens`` and returns a string): a complete-looking text then gets one
      continuation call before it is taken as finished, unless ``finish_reason`` is "stop";
    - ``prefill_tokens_saved``: prompt tokens a local draft reused from its cache;
    - ``path``: how the call used the grammar (``DraftPath``), and ``fallback_reason``, the
      provider's message when it refused the grammar.

    ``extra`` holds provider-specific numbers for the curious (``attempts``); the loop never
    reads it.
    """

    request: DraftRequest
    tokens_in: int | None = None
    tokens_out: int | None = None
    finish_reason: str | None = None
    continued_prefix: bool | None = None
    whole_answer: bool = False
    may_stop_short: bool = False
    prefill_tokens_saved: int = 0
    path: DraftPath = "speculative"
    fallback_reason: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class Draft(abc.ABC):
    """A model that writes text freely.

    Subclasses set ``name`` and ``continues_prefix`` and implement ``stream``.
    ``continues_prefix`` is True when the draft truly continues ``accepted_text`` (a completion
    endpoint, assistant prefill, a local model), False when it may restate the answer from the
    start (a chat API without prefill, most plain functions). A provider that falls back to
    another mode for one call (a model that rejects prefill) sets ``call.continued_prefix``
    before yielding its first chunk; the loop reads it there.
    """

    name: str = "draft"
    continues_prefix: bool = True
    #: Whether a new call reads (and bills) the prompt and the accepted text again, as an API
    #: does: after a violation the loop then reads on as far as that would cost rather than ask
    #: again. A local model keeps them in its KV cache (``False``): it stops at the evidence.
    rereads_prompt: bool = True

    @abc.abstractmethod
    def stream(self, call: DraftCall) -> AsyncIterator[str]:
        """Yield text chunks for ``call.request``; fill ``call``'s usage fields as they become known.

        Must be an async generator (or return an async iterator with ``aclose``). Closing it early
        must stop generation and release the connection or thread.
        """

    async def aclose(self) -> None:  # noqa: B027 - a default that does nothing, not abstract
        """Release resources (HTTP clients the provider created itself)."""


class SyncDraft(Draft):
    """A draft written synchronously: implement ``stream_sync``; ``stream`` runs it in a thread."""

    @abc.abstractmethod
    def stream_sync(self, call: DraftCall) -> Iterator[str]:
        """Yield text chunks; closing the generator must stop generation."""

    async def stream(self, call: DraftCall) -> AsyncIterator[str]:
        async with contextlib.aclosing(iterate_in_thread(self.stream_sync(call))) as chunks:
            async for chunk in chunks:
                if chunk:
                    yield chunk


class Worker:
    """One daemon thread that runs blocking calls one after another.

    Awaiting a call (``asyncio.wrap_future(worker.submit(...))``) can be abandoned: a timeout or a
    cancellation stops the waiting at once, while the call itself runs on to its end in the
    thread, which nothing joins (not ``asyncio.run``'s executor shutdown, not the interpreter's
    exit). A blocking draft therefore cannot hold a run past its ``timeout``.
    """

    def __init__(self, name: str = "grammar-guide-draft") -> None:
        self._tasks: queue.SimpleQueue[
            tuple[concurrent.futures.Future[Any], Callable[..., Any], tuple[Any, ...]] | None
        ]
        self._tasks = queue.SimpleQueue()
        threading.Thread(target=self._serve, name=name, daemon=True).start()

    @classmethod
    def borrow(cls) -> Worker:
        """An idle worker (see ``give_back``), or a new one: a thread's start costs more than a
        short call (about 60 µs of CPU and 150 µs of waiting against 20 µs), which a run of many
        small draft calls would pay each time."""
        with _IDLE_LOCK:
            if _IDLE:
                return _IDLE.pop()
        return cls()

    def give_back(self, last: concurrent.futures.Future[Any]) -> None:
        """Keep this worker for the next ``borrow`` if ``last``, its last call, is done (an idle
        one ends after ``_IDLE_SECONDS``); one whose call runs on (abandoned) ends after it."""
        if last.done():
            with _IDLE_LOCK:
                if len(_IDLE) < _MAX_IDLE:
                    _IDLE.append(self)
                    return
        self.shutdown()

    def _serve(self) -> None:
        while (task := self._next_task()) is not None:
            future, fn, args = task
            if not future.set_running_or_notify_cancel():
                continue
            try:
                result = fn(*args)
            except BaseException as exc:  # handed to the waiting side, if any
                future.set_exception(exc)
            else:
                future.set_result(result)

    def _next_task(self) -> tuple[concurrent.futures.Future[Any], Callable[..., Any], tuple[Any, ...]] | None:
        """The next call, or ``None``: shut down, or idle (given back) for ``_IDLE_SECONDS``."""
        while True:
            try:
                return self._tasks.get(timeout=_IDLE_SECONDS)
            except queue.Empty:
                with _IDLE_LOCK:
                    if self in _IDLE:  # (not if it was borrowed meanwhile: a call is coming)
                        _IDLE.remove(self)
                        return None

    def submit(self, fn: Callable[..., Any], *args: Any) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._tasks.put((future, fn, args))
        return future

    def shutdown(self) -> None:
        """End the thread once the calls already submitted are done."""
        self._tasks.put(None)


# Workers given back after their call, for the next one (``Worker.borrow``).
_IDLE: list[Worker] = []
_IDLE_LOCK = threading.Lock()
_MAX_IDLE = 8
_IDLE_SECONDS = 1.0


async def iterate_in_thread(iterator: Iterator[Any]) -> AsyncGenerator[Any, None]:
    """Drive a blocking iterator from async code, one ``next`` at a time in a ``Worker`` thread.

    Every item is passed on as it is (empty ones too): the caller judges them.

    When the consumer stops early (closes this generator, or is cancelled), the iterator is closed
    at once, or right after the step in flight ends: no thread is left generating.
    """
    done = object()
    step: concurrent.futures.Future[Any] | None = None
    # One thread for the whole iterator: a local model then runs every step on the same thread
    # (torch's CPU thread pool is per calling thread: steps hopping between pool threads ran
    # about 20% slower, measured on SmolLM2 with 2 cores).
    worker = Worker()
    try:
        while True:
            step = worker.submit(next, iterator, done)
            chunk = await asyncio.wrap_future(step)
            if chunk is done:
                return
            yield chunk
    finally:
        close = getattr(iterator, "close", None)
        if close is not None:
            if step is not None and not step.done():
                # The step in flight cannot be interrupted; close the iterator as soon as it ends,
                # without making the consumer wait for it.
                step.add_done_callback(lambda _: close())
            else:
                close()
        worker.shutdown()


class DraftOutputError(TypeError):
    """A draft function returned or yielded something that is not text (``None``, a dict, bytes)."""


_PREFIX_NAMES = {"prefix", "accepted_text", "accepted", "text", "prefill", "partial"}


class FunctionDraft(Draft):
    """Any text-generating function as a draft; also the natural test fake.

    Accepted shapes, sync or async, returning a string, an iterable of chunks (streaming), or an
    async iterable of chunks:

    - ``generate(prompt)``: called with the prompt followed by the accepted text;
    - ``generate(prompt, prefix)``: called with the prompt and the accepted text;
    - either of those with a ``max_new_tokens`` keyword.

    A function with a parameter named ``call`` receives the ``DraftCall`` and may fill in its
    usage (``tokens_in``, ``tokens_out``); otherwise its tokens are reported as unknown.
    ``continues_prefix`` defaults to False: the loop then aligns answers that restate the text.

    Anything else it returns or yields (``None``, a dict, bytes, a number) is a ``TypeError`` at
    the first call, naming the function and what it gave.

    In a batch job (``guide_many``) each call waits at the job's ``RateGate`` first, and a
    ``RateLimitError`` the function raises with ``retry_after`` set closes the gate for that long:
    every row waits, as with the providers.
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        continues_prefix: bool = False,
    ) -> None:
        if not callable(fn):
            raise TypeError(f"a draft must be callable or a Draft, not {type(fn).__name__}")
        self.fn = fn
        self.name = name or getattr(fn, "__name__", None) or type(fn).__name__
        self.continues_prefix = continues_prefix
        try:
            params = inspect.signature(fn).parameters
            known = True
        except (TypeError, ValueError):  # builtins without signatures
            params, known = {}, False  # type: ignore[assignment]
        positional = [
            p
            for p in params.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name not in ("max_new_tokens", "call")
        ]
        has_var = any(p.kind == p.VAR_KEYWORD for p in params.values())
        if known and not positional and not any(p.kind == p.VAR_POSITIONAL for p in params.values()):
            raise TypeError(
                f"draft function {self.name} takes no positional argument: it must take the prompt, "
                "as generate(prompt) or generate(prompt, prefix)"
            )
        required = [p for p in positional if p.default is p.empty]
        named_prefix = len(positional) >= 2 and positional[1].name in _PREFIX_NAMES
        self._takes_prefix = len(required) >= 2 or named_prefix
        self._takes_max = "max_new_tokens" in params or has_var
        self._takes_call = "call" in params

    def _invoke(self, call: DraftCall) -> Any:
        try:
            return self._call_fn(call)
        except StopIteration as exc:  # cannot travel through a Future: it would hang the loop
            raise RuntimeError(f"draft function {self.name} raised StopIteration") from exc

    def _call_fn(self, call: DraftCall) -> Any:
        request = call.request
        kwargs: dict[str, Any] = {}
        if self._takes_max:
            kwargs["max_new_tokens"] = request.max_new_tokens
        if self._takes_call:
            kwargs["call"] = call
        if self._takes_prefix:
            return self.fn(request.prompt, request.accepted_text, **kwargs)
        return self.fn(request.prompt + request.accepted_text, **kwargs)

    async def stream(self, call: DraftCall) -> AsyncIterator[str]:
        gate = RateGate.current()
        if gate is not None:
            await gate.wait()
        try:
            async with contextlib.aclosing(self._chunks(call)) as chunks:
                async for chunk in chunks:
                    yield chunk
        except RateLimitError as exc:
            if gate is not None and exc.retry_after is not None:
                gate.hold(exc.retry_after)
            raise

    async def _chunks(self, call: DraftCall) -> AsyncGenerator[str, None]:
        if inspect.iscoroutinefunction(self.fn) or inspect.isasyncgenfunction(self.fn):
            out = self._invoke(call)
        else:
            # Its own thread, not the event loop's executor: a run's timeout may abandon a call
            # that blocks (asyncio.run would wait for the executor's threads at its end).
            worker = Worker.borrow()
            step = worker.submit(self._invoke, call)
            try:
                out = await asyncio.wrap_future(step)
            finally:
                worker.give_back(step)
        if inspect.isawaitable(out):
            out = await out
        if isinstance(out, str):
            call.whole_answer = True  # nothing follows this chunk
            # A function that ignores max_new_tokens may return pieces of any size: it cannot
            # say whether its answer ended (unless it sets call.finish_reason itself).
            call.may_stop_short = not self._takes_max
            if out:
                yield out
            return
        if hasattr(out, "__aiter__"):
            try:
                async for chunk in out:
                    if self._checked(chunk):
                        yield chunk
            finally:
                aclose = getattr(out, "aclose", None)
                if aclose is not None:
                    await aclose()
            return
        if out is None or isinstance(out, (bytes, bytearray, memoryview, Mapping)) or not hasattr(out, "__iter__"):
            raise DraftOutputError(
                f"draft function {self.name} must return str or yield str, but it returned {_describe(out)}"
            )
        async with contextlib.aclosing(iterate_in_thread(iter(out))) as chunks:
            async for chunk in chunks:
                if self._checked(chunk):
                    yield chunk

    def _checked(self, chunk: object) -> bool:
        """Whether ``chunk`` is text to pass on (not empty); a ``TypeError`` when it is not a str."""
        if not isinstance(chunk, str):
            raise DraftOutputError(
                f"draft function {self.name} must yield str chunks, but it yielded {_describe(chunk)}"
            )
        return bool(chunk)


def _describe(value: object) -> str:
    """A short description of a wrong value: its type and the start of its repr."""
    if value is None:
        return "None"
    text = repr(value)
    return f"{type(value).__name__} {text[:40]}{'...' if len(text) > 40 else ''}"


def as_draft(draft: Draft | Callable[..., Any]) -> Draft:
    """A ``Draft`` as is; a function wrapped in ``FunctionDraft``."""
    if isinstance(draft, Draft):
        return draft
    return FunctionDraft(draft)
