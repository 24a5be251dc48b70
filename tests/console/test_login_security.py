"""The console's login and session: password guessing is throttled per username and per address,
sessions end after DJANGO_SESSION_IDLE_SECONDS without a request, and every response (the login
page and the page that shows a new API token included) carries one Content-Security-Policy."""

from __future__ import annotations

import logging

import pytest
from django.conf import settings
from django.test import override_settings

from emailops.security import BASE_POLICY, client_ip

pytestmark = pytest.mark.django_db

LOGIN = "/admin/login/?next=/admin/"


def attempt(client, username: str, password: str, ip: str = "203.0.113.7"):
    return client.post(
        LOGIN, {"username": username, "password": password}, REMOTE_ADDR=ip, follow=False
    )


def signed_in(client) -> bool:
    return "_auth_user_id" in client.session


def test_eight_wrong_passwords_then_the_right_one_is_refused(client, make_user):
    """The finding: 8 wrong passwords, then the 9th (correct) signed in."""
    user = make_user("Support")
    for n in range(8):
        response = attempt(client, user.username, "guess")
        assert response.status_code == (200 if n < 4 else 429)  # the form, then the refusal
        assert not signed_in(client)
    response = attempt(client, user.username, "pw-for-tests")
    assert response.status_code == 429
    assert not signed_in(client)
    assert "Too many failed sign-ins (5)" in response.content.decode()
    assert response["Content-Security-Policy"] == BASE_POLICY


def test_the_lockout_is_logged(client, make_user, caplog):
    user = make_user("Support")
    with caplog.at_level(logging.WARNING, logger="templates_admin.login"):
        for _ in range(5):
            attempt(client, user.username, "guess")
    [line] = [r.getMessage() for r in caplog.records if "login.locked_out" in r.getMessage()]
    assert f"username={user.username}" in line and "ip=203.0.113.7" in line


def test_one_username_from_many_addresses_is_locked(client, make_user):
    user = make_user("Support")
    for n in range(5):
        attempt(client, user.username, "guess", ip=f"198.51.100.{n}")
    response = attempt(client, user.username, "pw-for-tests", ip="198.51.100.99")
    assert response.status_code == 429 and not signed_in(client)


def test_many_usernames_from_one_address_are_locked(client, make_user):
    user = make_user("Support")
    for n in range(5):
        attempt(client, f"someone-{n}", "guess", ip="192.0.2.1")
    assert attempt(client, user.username, "pw-for-tests", ip="192.0.2.1").status_code == 429
    # Another address, same user: still allowed (the user itself failed nowhere).
    assert attempt(client, user.username, "pw-for-tests", ip="192.0.2.2").status_code == 302
    assert signed_in(client)


def test_four_failures_do_not_lock(client, make_user):
    user = make_user("Support")
    for _ in range(4):
        attempt(client, user.username, "guess")
    assert attempt(client, user.username, "pw-for-tests").status_code == 302
    assert signed_in(client)


@override_settings(TRUSTED_PROXY_COUNT=1)
def test_behind_the_load_balancer_the_client_is_the_address_it_appended(rf):
    request = rf.get("/", HTTP_X_FORWARDED_FOR="6.6.6.6, 203.0.113.9", REMOTE_ADDR="10.0.0.5")
    assert client_ip(request) == "203.0.113.9"  # 6.6.6.6 is the client's own invention
    assert client_ip(rf.get("/", REMOTE_ADDR="10.0.0.5")) == "10.0.0.5"


@override_settings(TRUSTED_PROXY_COUNT=0)
def test_without_a_proxy_forwarded_for_is_ignored(rf):
    request = rf.get("/", HTTP_X_FORWARDED_FOR="6.6.6.6", REMOTE_ADDR="203.0.113.9")
    assert client_ip(request) == "203.0.113.9"


def test_sessions_end_after_the_idle_timeout_and_each_request_extends_them(client, make_user):
    assert settings.SESSION_COOKIE_AGE == 8 * 3600  # DJANGO_SESSION_IDLE_SECONDS's default
    client.force_login(make_user("Support"))
    first = client.session.get_expiry_date()
    client.get("/admin/")
    response = client.get("/admin/")
    assert response.cookies["sessionid"]["max-age"] == 8 * 3600
    assert client.session.get_expiry_date() > first  # slid forward: idle, not absolute


def test_the_login_page_and_the_new_token_page_carry_the_policy(client, make_user):
    response = client.get("/admin/login/")
    assert response["Content-Security-Policy"] == BASE_POLICY
    client.force_login(make_user(superuser=True))
    response = client.post(  # either name of the per-token limit field
        "/admin/api/apitoken/add/",
        {"name": "producer-a", "requests_per_minute": 60, "emails_per_minute": 60},
    )
    assert response.status_code == 200 and "producer-a" in response.content.decode()
    assert response["Content-Security-Policy"] == BASE_POLICY
