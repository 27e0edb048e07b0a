"""A real headless Chromium for the HTML tests, driven by Playwright.

Uses Debian's ``chromium`` at /usr/bin/chromium (``make test`` installs it); Playwright's own
browser downloads are never used. Each session gets a fresh, throw-away user-data directory.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

CHROMIUM = os.environ.get("GRAMMAR_GUIDE_CHROMIUM", "/usr/bin/chromium")

ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"


def chromium_path() -> str:
    """The browser executable; fails loudly (not a skip) when it is missing."""
    path = shutil.which(CHROMIUM) or (CHROMIUM if os.access(CHROMIUM, os.X_OK) else None)
    if path is None:
        raise RuntimeError(
            f"{CHROMIUM} not found: install Debian's chromium (apt-get install chromium) or run `make install`"
        )
    return path


@contextlib.contextmanager
def browser_context(viewport: tuple[int, int] = (1100, 800)) -> Iterator[object]:
    """A Playwright browser context in a fresh profile; closed and deleted on exit."""
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="gg-chromium-") as profile, sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            profile,
            executable_path=chromium_path(),
            headless=True,
            args=ARGS,
            viewport={"width": viewport[0], "height": viewport[1]},
            offline=True,
        )
        try:
            yield context
        finally:
            context.close()


def screenshot_path(name: str) -> Path:
    """Where a screenshot artifact goes (``artifacts/`` at the repository root, git-ignored)."""
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS / name
