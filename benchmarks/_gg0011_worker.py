"""Runs grammar-guide 0.0.11 (the PyPI reference project) inside its own venv; see baseline_env.py.

Usage: ``python -I _gg0011_worker.py REQUEST.json ANSWER.json``. Only the reference project's
public API is called (``grammar_guide.load_parser``, ``grammar_guide.guide``); nothing of it is
re-implemented. Modes:

- ``sql_generic``: its generic-function path with ``simulated_draft.SimulatedSQLDraft`` as the
  draft function, one query after another;
- ``json_transformers``: its transformers path (KV-cache backtracking, token healing);
- ``json_generic``: its generic path with a plain greedy ``model.generate`` function as the draft;
- ``sql_replay``: its generic path with ``_replay_draft.ReplayDraft`` (a recorded answer replayed)
  as the draft function, one answer after another.

Model loading happens before any timing starts; every run is timed alone.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import time
import traceback
from pathlib import Path


def _load_module(name: str, path: str):  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _error(exc: BaseException) -> str:
    return "".join(traceback.format_exception_only(type(exc), exc)).strip()[-2000:]


def _generic_run(gg, draft_fn, parser, target, prompt: str, req: dict) -> dict:  # type: ignore[no-untyped-def]
    """One run of its generic path: text, corrections, error (recorded, not hidden), seconds."""
    t0 = time.perf_counter()
    try:
        res = gg.guide(
            draft_fn,
            parser=parser,
            prompt=prompt,
            target_model=target,
            max_grammar_corrections=req["max_corrections"],
            token_lookahead=req["lookahead"],
            verbose=False,
        )
        text, corrections, error = res.response, res.num_grammar_corrections, None
    except Exception as exc:
        text, corrections, error = None, None, _error(exc)
    return {"text": text, "corrections": corrections, "error": error, "seconds": time.perf_counter() - t0}


def sql_generic(req: dict) -> dict:
    import guidance

    import grammar_guide as gg

    sim = _load_module("simulated_draft", req["simulated_draft"])
    counter = sim.TokenCounter(req.get("tokenizer_file"))
    rates = sim.MistakeRates(**req["rates"])
    started = time.perf_counter()
    parser = gg.load_parser(req["grammar"])
    parser_seconds = time.perf_counter() - started
    target = guidance.models.Transformers(req["model"], echo=False)
    rows = []
    for q in req["queries"]:
        draft = sim.SimulatedSQLDraft(q["intended"], seed=q["seed"], counter=counter, rates=rates)

        def draft_fn(prefix: str, prompt: str, max_new_tokens: int, _draft=draft) -> str:
            return _draft.complete(prompt, prefix, max_new_tokens)

        rows.append(
            {
                **_generic_run(gg, draft_fn, parser, target, q["prompt"], req),
                "draft_calls": len(draft.calls),
                "tokens_in": draft.tokens_in,
                "tokens_out": draft.tokens_out,
            }
        )
    return {"rows": rows, "parser_seconds": parser_seconds}


def sql_replay(req: dict) -> dict:
    import guidance

    import grammar_guide as gg

    replay = _load_module("_replay_draft", req["replay_draft"])
    parser = gg.load_parser(req["grammar"])
    target = guidance.models.Transformers(req["model"], echo=False)
    rows = []
    for item in req["answers"]:
        draft = replay.ReplayDraft(item["text"])

        def draft_fn(prefix: str, prompt: str, max_new_tokens: int, _draft=draft) -> str:
            return _draft.continue_from(prefix)

        rows.append(
            {**_generic_run(gg, draft_fn, parser, target, item["prompt"], req), "draft_calls": len(draft.calls)}
        )
    return {"rows": rows}


def _json_model(req: dict):  # type: ignore[no-untyped-def]
    import torch
    import transformers

    torch.manual_seed(42)
    model = transformers.AutoModelForCausalLM.from_pretrained(req["model"], torch_dtype=torch.float32)
    model.eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(req["model"])
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer


def json_runs(req: dict) -> dict:
    import guidance
    import torch

    import grammar_guide as gg

    torch.set_num_threads(req.get("threads") or torch.get_num_threads())
    model, tokenizer = _json_model(req)
    target = guidance.models.Transformers(req["model"], echo=False)
    # Warm up (first-call overheads are not generation speed).
    with torch.inference_mode():
        model.generate(**tokenizer("Hello", return_tensors="pt"), max_new_tokens=4, do_sample=False)
    stop = req["stop_at"]

    def generate(prefix: str, prompt: str, max_new_tokens: int) -> str:
        inputs = tokenizer(prompt + prefix, return_tensors="pt")
        with torch.inference_mode():
            out = model.generate(
                **inputs,
                max_new_tokens=max_new_tokens,
                do_sample=False,
                stop_strings=stop,
                tokenizer=tokenizer,
                pad_token_id=tokenizer.eos_token_id,
            )
        return tokenizer.decode(out[0, inputs["input_ids"].shape[-1] :], skip_special_tokens=True)

    rows = []
    for run in req["runs"]:
        parser = gg.load_parser(run["grammar"])
        t0 = time.perf_counter()
        try:
            if req["mode"] == "json_transformers":
                res = gg.guide(
                    model,
                    tokenizer=tokenizer,
                    parser=parser,
                    prompt=run["prompt"],
                    target_model=target,
                    stop_at=stop,
                    max_grammar_corrections=req["max_corrections"],
                    token_lookahead=req["lookahead"],
                    temperature=0.0,
                    token_healing=True,
                    save_html=False,
                    verbose=False,
                )
            else:
                res = gg.guide(
                    generate,
                    parser=parser,
                    prompt=run["prompt"],
                    target_model=target,
                    max_grammar_corrections=req["max_corrections"],
                    token_lookahead=req["lookahead"],
                    verbose=False,
                )
            text, corrections, error = res.response, res.num_grammar_corrections, None
        except Exception as exc:
            text, corrections, error = None, None, _error(exc)
        rows.append(
            {
                "n": run["n"],
                "trial": run["trial"],
                "text": text,
                "corrections": corrections,
                "error": error,
                "seconds": time.perf_counter() - t0,
            }
        )
    return {"rows": rows}


def main() -> None:
    request_file, answer_file = sys.argv[1], sys.argv[2]
    req = json.loads(Path(request_file).read_text())
    import guidance
    import transformers

    import grammar_guide

    versions = {
        "grammar_guide_file": grammar_guide.__file__,
        "guidance": guidance.__version__,
        "transformers": transformers.__version__,
    }
    if req["mode"] == "sql_generic":
        answer = sql_generic(req)
    elif req["mode"] == "sql_replay":
        answer = sql_replay(req)
    else:
        answer = json_runs(req)
    answer["versions"] = versions
    Path(answer_file).write_text(json.dumps(answer))


if __name__ == "__main__":
    main()
