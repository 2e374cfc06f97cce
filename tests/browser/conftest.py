"""The `browser` fixture: Debian's headless Chromium driven through its chromedriver."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest
from selenium import webdriver

from jobcore.testing import require
from tests.browser.chromium import chromium_missing
from tests.browser.chromium import start_chromium


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[webdriver.Chrome]:
    """One Chromium per test file (starting one takes about a second), on a fresh profile, its
    console kept for `console_errors`."""
    require(chromium_missing())
    profile = tmp_path_factory.mktemp("chromium-profile")
    driver = start_chromium(profile)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
