"""A real headless Chromium for the tests that render a page (the HTML report, the operators'
console): the Debian package (``make browser`` installs it), driven by playwright. Without either,
the test skips and says which is missing."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@contextmanager
def headless_chromium() -> Iterator[Any]:
    """A launched browser, closed on exit (start it after any asyncio run of the module:
    playwright's sync API holds an event loop in this thread)."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    if CHROMIUM is None:
        pytest.skip("no chromium on PATH: `make browser` installs the Debian package")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield browser
        finally:
            browser.close()
