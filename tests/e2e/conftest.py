"""Real-browser fixtures: Debian's chromium driven by Playwright against pytest-django's live server.

The live server runs in this process, so in-process moto (the ``aws`` fixture) serves it too. The
stack of real processes for the other end-to-end tests is ``e2e_stack`` in tests/conftest.py.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.conftest import skip_or_fail

CHROMIUM = "/usr/bin/chromium"
# Screenshots the browser tests keep (CI uploads the folder as an artifact; it is gitignored).
SCREENSHOTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="session")
def browser():
    if not os.path.exists(CHROMIUM):
        skip_or_fail(f"{CHROMIUM} is not installed (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        skip_or_fail("playwright is not installed (pip install -e '.[dev]')")
    # Playwright's sync API keeps an event loop running in this thread; Django's ORM calls made by
    # the test itself (creating users) are still synchronous and safe.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    context.close()


@pytest.fixture
def login(page, live_server):
    """login(user) signs in through the admin's own login form; returns the page."""

    def sign_in(user, password: str = "pw-for-tests"):
        page.goto(f"{live_server.url}/admin/login/")
        page.fill("#id_username", user.username)
        page.fill("#id_password", password)
        page.click("input[type=submit]")
        page.wait_for_url(f"{live_server.url}/admin/")
        return page

    return sign_in


@pytest.fixture
def screenshot(request):
    """screenshot(page, name) saves a full-page PNG as artifacts/screenshots/<test>-<name>.png."""
    test = re.sub(r"[^A-Za-z0-9_.-]+", "-", request.node.name).strip("-")

    def take(page, name: str) -> Path:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / f"{test}-{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return take
