"""The `browser` fixture: Debian's headless Chromium driven through its chromedriver."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service

from jobcore.testing import require

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
# No sandbox (tests run as root), nothing fetched in the background, no GPU, /tmp for shared
# memory (a container's /dev/shm is small).
FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1400,900",
)


def _missing() -> str | None:
    for binary in (CHROMIUM, CHROMEDRIVER):
        if not binary.exists():
            return (
                f"no {binary}: scripts/chromium.sh installs Debian's chromium and chromium-driver"
            )
    return None


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[webdriver.Chrome]:
    """One Chromium per test file (starting one takes about a second), on a fresh profile, its
    console kept for `console_errors`. The binaries are named, so Selenium downloads nothing."""
    require(_missing())
    profile = tmp_path_factory.mktemp("chromium-profile")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
