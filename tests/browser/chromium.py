"""Debian's headless Chromium through its chromedriver, for the browser tests and the
dashboard's benchmark. The binaries are named, so Selenium downloads nothing."""

from __future__ import annotations

from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

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


def chromium_missing() -> str | None:
    """Why Chromium cannot run here, or None."""
    for binary in (CHROMIUM, CHROMEDRIVER):
        if not binary.exists():
            return (
                f"no {binary}: scripts/chromium.sh installs Debian's chromium and chromium-driver"
            )
    return None


def start_chromium(profile: Path | None = None) -> webdriver.Chrome:
    """A headless Chromium, on the fresh profile folder `profile` (else a temporary one), its
    console kept for `console_errors`."""
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in FLAGS:
        options.add_argument(flag)
    if profile is not None:
        options.add_argument(f"--user-data-dir={profile}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
