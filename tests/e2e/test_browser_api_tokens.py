"""API tokens in a real browser: a superuser creates one (shown once), revokes it, and the API
then refuses it."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def api_status(live_server, token: str) -> int:
    request = urllib.request.Request(
        f"{live_server.url}/api/v1/sends/no-such-row", headers={"Authorization": f"Bearer {token}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_superuser_creates_a_token_sees_it_once_and_revokes_it(login, make_user, live_server, aws):
    page = login(make_user(superuser=True))

    page.click("text=API tokens")
    page.click("text=Add API token")
    page.fill("#id_name", "publishing-service")
    page.fill("#id_emails_per_minute", "120")
    page.click("input[name=_save]")

    token = page.locator("#api-token-plaintext").inner_text().strip()
    assert token.startswith("eo_")
    assert api_status(live_server, token) == 404  # authenticated; the row does not exist

    page.click("#api-token-done")
    assert "publishing-service" in page.locator("#result_list").inner_text()
    assert token not in page.content()
    page.click("#result_list a:text('publishing-service')")
    assert token not in page.content()

    page.click("#api-token-revoke")
    assert "no longer authenticates" in page.locator(".messagelist").inner_text()
    assert page.locator("#api-token-revoke").count() == 0
    assert api_status(live_server, token) == 401
