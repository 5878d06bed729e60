"""Fixtures for the real-VS-Code suite; the machinery is in code_server.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from code_server import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS


@pytest.fixture(scope="module")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield chromium
        chromium.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A screenshot of the page when a step fails (next to the step screenshots)."""
    outcome = yield
    report = outcome.get_result()
    ui = item.funcargs.get("vscode") if report.when == "call" and report.failed else None
    if ui is not None:
        ui.shot("FAILED-" + item.name.replace("/", "_")[:80])
