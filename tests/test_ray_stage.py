"""The Ray Data stage (``grammar_guide.ray.GuideStage``): the loop without Ray (batches in order,
errors as columns, id-keyed resume from the actors' files), then on a real local Ray
(``ray.init(num_cpus=2)``, the actor at one CPU) with the real SmolLM2 target and a draft served
by the local OpenAI-compatible test server."""

from __future__ import annotations

import gc
import json
import os
from pathlib import Path

import numpy as np
import pytest

from grammar_guide import BatchOutputError, Grammar
from grammar_guide.ray import COLUMNS, GuideStage, run_stage

ANSWERS = {
    "a": "SELECT name FROM users WHERE name ILIKE 'ä%'",  # non-ASCII: respelt, not a rewrite
    "b": "Sure! ```sql\nSELECT count(*) FROM orders\n```",
    "boom": "",
}


def draft(calls: list[str]):  # type: ignore[no-untyped-def]
    def answer(prompt: str) -> str:
        calls.append(prompt)
        if prompt == "boom":
            raise RuntimeError("the API fell over")
        return ANSWERS[prompt]

    return answer


def batch(*ids_prompts: tuple[object, str]) -> dict[str, np.ndarray]:
    """A batch as Ray Data gives it by default: columns as numpy arrays."""
    ids, prompts = zip(*ids_prompts, strict=True)
    return {"id": np.array(ids), "prompt": np.array(prompts)}


def test_a_batch_comes_back_in_its_order_with_the_batch_jobs_columns() -> None:
    calls: list[str] = []
    stage = GuideStage("sqlite", draft(calls), target=False, concurrency=3)
    out = run_stage(stage, batch((7, "a"), (3, "boom"), (5, "b")))
    assert tuple(out) == COLUMNS
    assert out["id"] == [7, 3, 5] and all(type(i) is int for i in out["id"])
    assert out["text"] == ["SELECT name FROM users WHERE name LIKE 'ä%'", None, "SELECT count(*) FROM orders"]
    assert out["valid"] == [True, False, True]
    assert out["faithful"] == [False, None, True]
    assert out["status"] == ["guided", "error", "guided"]
    assert out["error_kind"] == [None, "RuntimeError", None]
    assert out["error_message"][1] == "the API fell over"
    assert out["corrections"][0] == 1 and out["draft_calls"][2] >= 1
    assert sorted(calls) == ["a", "b", "boom"]


def test_rows_done_are_read_back_not_guided_again(tmp_path: Path) -> None:
    calls: list[str] = []
    first = GuideStage(Grammar.builtin("sqlite"), draft(calls), target=False, output=tmp_path)
    done = run_stage(first, batch(("x", "a"), ("y", "boom")))
    first.close()
    assert len(list(tmp_path.glob("part-*.jsonl"))) == 1
    calls.clear()
    # Another actor (or the job run again) on the same folder and configuration.
    again = GuideStage(Grammar.builtin("sqlite"), draft(calls), target=False, output=tmp_path)
    out = run_stage(again, batch(("x", "a"), ("y", "boom"), ("z", "b")))
    assert calls == ["b"]  # x and y (its error kept) are read back
    assert out["status"][:2] == ["resumed", "resumed"] and out["text"][0] == done["text"][0]
    assert out["error_kind"][1] == "RuntimeError"
    assert out["status"][2] == "guided"
    again.close()
    # Errors are kept unless asked to be tried again.
    calls.clear()
    retry = GuideStage(Grammar.builtin("sqlite"), draft(calls), target=False, output=tmp_path, retry_errors=True)
    out = run_stage(retry, batch(("x", "a"), ("y", "boom")))
    assert calls == ["boom"] and out["status"] == ["resumed", "error"]
    retry.close()
    lines = [json.loads(line) for p in tmp_path.glob("*.jsonl") for line in p.read_text().splitlines()]
    assert sorted(r["id"] for r in lines) == ["x", "y", "y", "z"]


def test_a_folder_of_another_configuration_is_refused(tmp_path: Path) -> None:
    calls: list[str] = []
    GuideStage("sqlite", draft(calls), target=False, output=tmp_path).close()
    run = GuideStage("sqlite", draft(calls), target=False, output=tmp_path)
    run_stage(run, batch(("x", "a")))
    run.close()
    with pytest.raises(BatchOutputError, match="another configuration"):
        GuideStage("json", draft(calls), target=False, output=tmp_path)


@pytest.fixture(scope="module")
def llm_server():  # type: ignore[no-untyped-def]
    from tests.support.llm_server import get_server

    return get_server()


@pytest.mark.model
# Ray Data's DataContext warns about its own deprecated fields when it is built (ray 2.60: Ray's
# calls, not ours): only deprecation warnings raised in that module are let through.
@pytest.mark.filterwarnings("ignore::DeprecationWarning:ray.data.context")
# Each dataset's run replaces Ray Data's log handler without closing the last one's file (ray
# 2.60): collected at the end of this test (gc.collect below), under these two filters only.
@pytest.mark.filterwarnings("ignore:unclosed file .*ray-data:ResourceWarning")
@pytest.mark.filterwarnings("ignore:Exception ignored in.*ray-data:pytest.PytestUnraisableExceptionWarning")
def test_a_ray_data_job_on_a_local_cluster(llm_server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import ray

    from tests.support.llm_server import API_KEY

    env = {
        "OPENAI_BASE_URL": f"{llm_server.base_url}/v1",
        "OPENAI_API_KEY": API_KEY,
        "RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO": "0",
        "HF_HUB_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "OMP_NUM_THREADS": "1",
    }
    os.environ["RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO"] = "0"
    ray.init(num_cpus=2, include_dashboard=False, runtime_env={"env_vars": env}, log_to_driver=False)
    try:
        rows = [{"id": i, "prompt": f"Give a JSON object with one key 'n' set to {i}, nothing else."} for i in range(3)]
        kwargs = dict(grammar="json", draft="openai:smollm2", target=None, output=str(tmp_path), max_new_tokens=160)

        def job() -> list[dict[str, object]]:
            ds = ray.data.from_items(rows).map_batches(
                GuideStage,
                fn_constructor_kwargs=kwargs,
                compute=ray.data.ActorPoolStrategy(size=1, max_concurrent_calls_per_actor=2),
                num_cpus=1,
                batch_size=2,
            )
            return sorted(ds.take_all(), key=lambda r: r["id"])

        before = len(llm_server.records)
        out = job()
        assert [r["id"] for r in out] == [0, 1, 2]
        assert all(r["status"] == "guided" and r["valid"] for r in out), out
        assert all(isinstance(json.loads(str(r["text"])), (dict, list, str, int, float, bool)) for r in out)
        assert len(llm_server.records) > before  # the draft was the server's model, over HTTP
        # The same job again: every row is read back from the actors' files, none guided again.
        asked = len(llm_server.records)
        again = job()
        assert [r["status"] for r in again] == ["resumed"] * 3
        assert [r["text"] for r in again] == [r["text"] for r in out]
        assert len(llm_server.records) == asked
    finally:
        ray.shutdown()
        gc.collect()
