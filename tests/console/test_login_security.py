"""The console's login and session: password guessing is throttled per username and address
together and per address, a username guessed from many addresses makes its failing addresses
wait (templates_admin/login_throttle.py), the client address trusts X-Forwarded-For only behind
DJANGO_TRUSTED_PROXY_COUNT proxies, sessions end after 8 hours (SESSION_COOKIE_AGE) without a
request, and every response (the login page and the page that shows a new API token included)
carries one Content-Security-Policy."""

from __future__ import annotations

import json
import logging
import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.test import override_settings

from emailops.security import BASE_POLICY, client_ip

pytestmark = pytest.mark.django_db

LOGIN = "/admin/login/?next=/admin/"


def attempt(client, username: str, password: str, ip: str = "203.0.113.7", **headers):
    return client.post(
        LOGIN,
        {"username": username, "password": password},
        REMOTE_ADDR=ip,
        follow=False,
        **headers,
    )


def production_setting(name: str):
    """A setting as production reads it (DJANGO_DEBUG unset), in a fresh process."""
    result = subprocess.run(
        [sys.executable, "-c", f"from django.conf import settings; print(repr(settings.{name}))"],
        cwd=Path(__file__).resolve().parents[2],
        env={
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "DJANGO_SETTINGS_MODULE": "emailops.settings",
            "DJANGO_SECRET_KEY": secrets.token_urlsafe(64),
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


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


def test_failures_from_one_address_do_not_lock_the_owner_out_elsewhere(client, make_user):
    """Finding 3: five wrong passwords for a username from one address locked the username, and
    its owner's correct password from anywhere got 429 for 15 minutes, again and again."""
    user = make_user("Support")
    for _ in range(5):
        attempt(client, user.username, "guess", ip="198.51.100.66")
    # The guessing address stays locked, for that username as for any other ...
    assert attempt(client, user.username, "pw-for-tests", ip="198.51.100.66").status_code == 429
    assert not signed_in(client)
    # ... the owner, from an address that has not failed, is not.
    assert attempt(client, user.username, "pw-for-tests", ip="203.0.113.20").status_code == 302
    assert signed_in(client)


def test_spellings_of_a_username_count_as_one(client, make_user):
    """Fullwidth, padded and differently cased spellings are one throttle key (NFKC, strip,
    casefold), so varying them does not spread a guessing run over several counters."""
    from axes.models import AccessAttempt

    user = make_user("Support")
    fullwidth = "".join(chr(ord(c) + 0xFEE0) for c in "SUPPORT")
    spellings = [fullwidth, " support ", "SUPPORT", "Support", "support"]
    for n, spelling in enumerate(spellings):
        attempt(client, spelling, "guess", ip=f"198.51.100.{n}")
    assert set(AccessAttempt.objects.values_list("username", flat=True)) == {"support"}
    # Five failures for "support" across addresses: an address that failed for it must wait.
    assert attempt(client, "SUPPORT", "guess", ip="198.51.100.1").status_code == 429
    # The owner, from an address without failures, signs in at once.
    assert attempt(client, user.username, "pw-for-tests", ip="203.0.113.20").status_code == 302
    assert signed_in(client)


def age_failures(seconds: int) -> None:
    """Move every recorded failure ``seconds`` into the past."""
    from datetime import timedelta

    from axes.models import AccessAttempt
    from django.db.models import F

    AccessAttempt.objects.update(attempt_time=F("attempt_time") - timedelta(seconds=seconds))


def test_a_distributed_run_on_one_username_must_wait_between_guesses(client, make_user):
    """Many addresses, one username: past five failures in all, an address that failed for the
    username waits before its next guess for it (30 s, doubling with each further failure of the
    username, at most the 15-minute cool-off), refused unchecked and uncounted."""
    from axes.models import AccessAttempt

    user = make_user("Support")
    for n in range(5):
        assert attempt(client, user.username, "guess", ip=f"198.51.100.{n}").status_code == 200
    early = attempt(client, user.username, "pw-for-tests", ip="198.51.100.0")
    assert early.status_code == 429 and not signed_in(client)  # even the right password
    assert 25 <= int(early["Retry-After"]) <= 30
    assert re.search(r"From this address, wait \d+ seconds", early.content.decode())
    assert early["Content-Security-Policy"] == BASE_POLICY
    assert AccessAttempt.objects.filter(ip_address="198.51.100.0").get().failures_since_start == 1
    age_failures(31)
    assert attempt(client, user.username, "guess", ip="198.51.100.0").status_code == 200
    # Six failures now: the next wait is twice as long, and every failing address has it.
    assert (
        55 <= int(attempt(client, user.username, "guess", ip="198.51.100.0")["Retry-After"]) <= 60
    )
    assert (
        25 <= int(attempt(client, user.username, "guess", ip="198.51.100.3")["Retry-After"]) <= 29
    )
    for n in range(5, 25):
        attempt(client, user.username, "guess", ip=f"198.51.100.{n}")
    assert (
        890 <= int(attempt(client, user.username, "guess", ip="198.51.100.9")["Retry-After"]) <= 900
    )
    # A correct password from an address without failures is never refused.
    assert attempt(client, user.username, "pw-for-tests", ip="203.0.113.20").status_code == 302
    assert signed_in(client)


def test_an_address_the_owner_signed_in_from_never_waits(client, make_user):
    user = make_user("Support")
    assert attempt(client, user.username, "pw-for-tests", ip="203.0.113.30").status_code == 302
    client.logout()
    for n in range(6):
        attempt(client, user.username, "guess", ip=f"198.51.100.{n}")
    assert attempt(client, user.username, "typo", ip="203.0.113.30").status_code == 200
    assert attempt(client, user.username, "pw-for-tests", ip="203.0.113.30").status_code == 302
    assert signed_in(client)


def test_the_wait_is_logged(client, make_user, caplog):
    user = make_user("Support")
    for n in range(5):
        attempt(client, user.username, "guess", ip=f"198.51.100.{n}")
    with caplog.at_level(logging.WARNING, logger="templates_admin.login"):
        attempt(client, user.username, "guess", ip="198.51.100.2")
    [line] = [r.getMessage() for r in caplog.records if "login.wait" in r.getMessage()]
    assert "username=support" in line and "ip=198.51.100.2" in line and "seconds=" in line


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


def test_forged_forwarded_for_does_not_dodge_the_address_lock_by_default(
    client, make_user, settings
):
    """Finding 10: the app reached directly (no proxy in front) under production defaults; 12
    failures, each claiming another X-Forwarded-For, were never locked. Only
    DJANGO_TRUSTED_PROXY_COUNT=1 (set behind the ALB) makes the header count."""
    settings.TRUSTED_PROXY_COUNT = production_setting("TRUSTED_PROXY_COUNT")
    user = make_user("Support")
    statuses = [
        attempt(
            client, f"user-{n}", "guess", ip="192.0.2.50", HTTP_X_FORWARDED_FOR=f"10.9.8.{n}"
        ).status_code
        for n in range(12)
    ]
    assert statuses == [200] * 4 + [429] * 8
    forged = attempt(
        client, user.username, "pw-for-tests", ip="192.0.2.50", HTTP_X_FORWARDED_FOR="10.9.9.9"
    )
    assert forged.status_code == 429 and not signed_in(client)


@override_settings(TRUSTED_PROXY_COUNT=1)
def test_behind_the_load_balancer_a_forged_prefix_does_not_dodge_the_lock(client, make_user):
    """Behind one proxy, what the client sent is left of the address the proxy appended."""
    user = make_user("Support")
    for n in range(5):
        forwarded = f"10.9.8.{n}, 198.51.100.23"  # the client's invention, then the ALB's entry
        attempt(client, f"someone-{n}", "guess", ip="10.0.0.5", HTTP_X_FORWARDED_FOR=forwarded)
    refused = attempt(
        client,
        user.username,
        "pw-for-tests",
        ip="10.0.0.5",
        HTTP_X_FORWARDED_FOR="10.9.9.9, 198.51.100.23",
    )
    assert refused.status_code == 429
    # Another client behind the same load balancer is not locked out with it.
    other = attempt(
        client, user.username, "pw-for-tests", ip="10.0.0.5", HTTP_X_FORWARDED_FOR="198.51.100.24"
    )
    assert other.status_code == 302 and signed_in(client)


@override_settings(TRUSTED_PROXY_COUNT=1)
def test_behind_the_load_balancer_the_client_is_the_address_it_appended(rf):
    request = rf.get("/", HTTP_X_FORWARDED_FOR="6.6.6.6, 203.0.113.9", REMOTE_ADDR="10.0.0.5")
    assert client_ip(request) == "203.0.113.9"  # 6.6.6.6 is the client's own invention
    assert client_ip(rf.get("/", REMOTE_ADDR="10.0.0.5")) == "10.0.0.5"


@override_settings(TRUSTED_PROXY_COUNT=0)
def test_without_a_proxy_forwarded_for_is_ignored(rf):
    request = rf.get("/", HTTP_X_FORWARDED_FOR="6.6.6.6", REMOTE_ADDR="203.0.113.9")
    assert client_ip(request) == "203.0.113.9"


@override_settings(TRUSTED_PROXY_COUNT=2)
def test_behind_two_proxies_the_client_is_the_second_from_the_right(rf):
    forwarded = "6.6.6.6, 203.0.113.9, 10.0.0.7"  # invented, then what each proxy appended
    request = rf.get("/", HTTP_X_FORWARDED_FOR=forwarded, REMOTE_ADDR="10.0.0.5")
    assert client_ip(request) == "203.0.113.9"
    # Fewer entries than proxies, or one that is no address: the peer.
    assert client_ip(rf.get("/", HTTP_X_FORWARDED_FOR="10.0.0.7", REMOTE_ADDR="10.0.0.5")) == (
        "10.0.0.5"
    )
    garbage = rf.get("/", HTTP_X_FORWARDED_FOR="not-an-ip, 10.0.0.7", REMOTE_ADDR="10.0.0.5")
    assert client_ip(garbage) == "10.0.0.5"


def test_sessions_end_after_the_idle_timeout_and_each_request_extends_them(client, make_user):
    assert settings.SESSION_COOKIE_AGE == 8 * 3600  # fixed (emailops/settings_catalog.py)
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
