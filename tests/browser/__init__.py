"""Helpers for tests that drive a real headless Chromium (the `browser` fixture in conftest).

Selenium blocks, and the dashboard a test drives is served by that test's own event loop: an
async test calls each Selenium step through `drive`, in a thread, so the loop goes on serving.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import ParamSpec
from typing import TypeVar

from selenium.common.exceptions import StaleElementReferenceException
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.command import Command
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import WebDriverWait

P = ParamSpec("P")
T = TypeVar("T")


async def drive(step: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """`step(*args, **kwargs)` in a worker thread, so the test's event loop keeps serving."""
    return await asyncio.to_thread(step, *args, **kwargs)


def wait_for(
    browser: WebDriver, css: str, text: str | None = None, timeout: float = 10.0
) -> WebElement:
    """The first element matching `css` once it is there and, given `text`, once its text holds
    `text`; a timeout names what was awaited and what the element held."""
    found: list[WebElement] = []

    def ready(driver: WebDriver) -> bool:
        found[:] = driver.find_elements(By.CSS_SELECTOR, css)[:1]
        return bool(found) and (text is None or text in found[0].text)

    try:
        # A live page replaces its parts: an element found may be gone when its text is read.
        stale = (StaleElementReferenceException,)
        WebDriverWait(browser, timeout, poll_frequency=0.05, ignored_exceptions=stale).until(ready)
    except TimeoutException as error:
        raise AssertionError(_waited(css, text, timeout, found)) from error
    return found[0]


def _waited(css: str, text: str | None, timeout: float, found: list[WebElement]) -> str:
    wanted = css if text is None else f"{css} holding {text!r}"
    held = f"; it holds {found[0].text!r}" if found else "; there is none"
    return f"no {wanted} within {timeout} s{held}"


def console_errors(browser: WebDriver) -> list[str]:
    """The browser console's errors since the last call (a CSP violation, an uncaught
    exception, a failed load): the messages of its SEVERE entries."""
    entries = browser.execute(Command.GET_LOG, {"type": "browser"})["value"]
    return [entry["message"] for entry in entries if entry["level"] == "SEVERE"]


def save_screenshot(browser: WebDriver, path: Path) -> Path:
    """The browser's viewport as a PNG at `path` (its folders made as needed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not browser.save_screenshot(str(path)):
        raise AssertionError(f"the browser could not write a screenshot to {path}")
    return path
