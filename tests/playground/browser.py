"""Helpers for the browser tests: Debian's Chromium driven headless by Playwright."""

from __future__ import annotations

import shutil
from typing import Any

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def launch(playwright: Any) -> Any:
    # --no-sandbox: the tests run as root in a container, where Chromium's sandbox cannot start.
    return playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])


def set_text(page: Any, selector: str, text: str) -> None:
    """Replace an editor's text as a paste would (one input event)."""
    page.eval_on_selector(selector, "(el, text) => { el.value = text; el.dispatchEvent(new Event('input')); }", text)


def open_page(page: Any, url: str) -> None:
    page.goto(url)
    page.wait_for_selector("body[data-ready='1']")


def run(page: Any) -> None:
    """Click Run and return once the page has shown the run. The wait polls in the page at each
    animation frame: ``wait_for_selector`` polls with a backoff (0, 20, 50, 100, 100, then every
    500 ms), which added up to half a second to a run that takes about one."""
    page.eval_on_selector("body", "b => delete b.dataset.ran")
    page.click("#run")
    page.wait_for_function("document.body.dataset.ran !== undefined", polling="raf")


def checked(page: Any) -> None:
    """Wait until the diagnostics shown are those of the text as it is now (typing sends a check
    per pause; answers to older texts are dropped)."""
    page.wait_for_function("document.body.dataset.checked === document.body.dataset.edited")
