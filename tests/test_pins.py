"""The suite runs on the tested set of versions: ``constraints.txt`` is what ``make install``
installed, complete (every distribution the development install needs, transitively) and exact."""

from __future__ import annotations

import re
from pathlib import Path

from tools.pin_versions import pins, public_version, read_pins

ROOT = Path(__file__).resolve().parent.parent


def test_the_environment_is_the_pinned_set_exactly() -> None:
    pinned = read_pins((ROOT / "constraints.txt").read_text(encoding="utf-8"))
    installed = pins()
    assert sorted(set(installed) - set(pinned)) == []  # installed otherwise, or missing from the pins
    assert sorted(set(pinned) - set(installed)) == []  # pinned but not needed, or not installed


def test_the_makefiles_torch_and_model_are_the_pinned_ones() -> None:
    """``make pins`` installs the Makefile's TORCH and SMOLLM2 by hand: the pins must agree."""
    pinned = read_pins((ROOT / "constraints.txt").read_text(encoding="utf-8"))
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    by_hand = re.findall(r"^(?:TORCH|SMOLLM2)\s*:=\s*(\S+)$", makefile, flags=re.MULTILINE)
    assert len(by_hand) == 2
    assert set(by_hand) <= set(pinned)
    assert public_version("2.13.0+cpu") == "2.13.0"
