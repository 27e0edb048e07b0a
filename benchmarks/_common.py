"""Helpers shared by the benchmark modules: the machine, results files, tables, text metrics."""

from __future__ import annotations

import json
import os
import platform
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from grammar_guide._repair import levenshtein

RESULTS = Path(__file__).with_name("results")


def machine() -> dict[str, Any]:
    """The machine the figures were measured on."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover
        cores = os.cpu_count() or 0
    info: dict[str, Any] = {"cpu": cpu, "cores": cores, "gpu": None, "python": platform.python_version()}
    try:
        import torch

        info["torch"] = torch.__version__
        info["torch_threads"] = torch.get_num_threads()
        if torch.cuda.is_available():
            info["gpu"] = torch.cuda.get_device_name(0)
    except ImportError:
        pass
    return info


def machine_line(info: dict[str, Any]) -> str:
    return f"{info['cpu']}, {info['cores']} cores, {info.get('gpu') or 'no GPU'}"


def write_results(name: str, payload: dict[str, Any], results_dir: Path | None = None) -> Path:
    path = (results_dir or RESULTS) / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    def cell(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:.3g}" if abs(v) < 100 else f"{v:.0f}"
        return str(v)

    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def normalized_edit_distance(a: str, b: str) -> float:
    """Levenshtein distance over the longer length, on white-space-collapsed texts (0 = equal)."""
    a, b = " ".join(a.split()), " ".join(b.split())
    if not a and not b:
        return 0.0
    return levenshtein(a, b) / max(len(a), len(b))


def attempt(
    bench: str, name: str, count: int, produce: Callable[[], list[dict[str, Any]]]
) -> tuple[list[dict[str, Any]] | None, str | None]:
    """Run one method's ``produce()`` on ``count`` items: (rows, None), or (None, why) when it cannot
    run (a method that fails is reported, not faked). Progress goes to stderr."""
    print(f"[{bench}] {name} on {count} items ...", file=sys.stderr, flush=True)
    try:
        return produce(), None
    except Exception as exc:
        note = f"{type(exc).__name__}: {exc}"
        print(f"[{bench}] {name} failed: {note}", file=sys.stderr, flush=True)
        return None, note
