"""/u/<token>: RFC 8058's one-click POST, the page (undo, toggles), bad tokens, the signed links of
before, cookies, limits (bad tokens per client, good ones per address)."""

from __future__ import annotations

import base64
import re
import time

import pytest
from django.contrib.auth import get_user_model
from django.core import signing
from django.test import Client, override_settings
from django.urls import reverse

from emailops import container
from emailops import unsubscribe as tokens
from emailops.core.preferences import HowChanged, Preference
from emailops.unsubscribe import LEGACY_SALT, unsubscribe_token
from tests.preferences.fakes import CountingLimiter, MemoryPreferences, install_fakes

ADDRESS = "erin@example.com"
OLD_KEY = "old-key-" + "o" * 50
NEW_KEY = "new-key-" + "n" * 50

# The page reads the category labels the console defined (the console database).
pytestmark = pytest.mark.django_db


def url_for(address: str = ADDRESS, category: str = "dataset-activity", org=None) -> str:
    return reverse("preferences:unsubscribe", args=[unsubscribe_token(address, category, org)])


def one_click(client: Client, url: str):
    return client.post(url, {"List-Unsubscribe": "One-Click"})


def test_the_url_is_outside_the_console():
    assert url_for().startswith("/u/")


def test_one_click_unsubscribes_at_once_and_sets_no_cookie(store):
    client = Client(enforce_csrf_checks=True)  # as a mailbox provider: no cookie, no CSRF token
    response = one_click(client, url_for('"Erin" <Erin@Example.com>'))
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    assert b"unsubscribed" in response.content and len(response.content) < 200
    assert response.cookies == {} and "Set-Cookie" not in response.headers
    assert "Location" not in response.headers
    preference = store.get(ADDRESS, "dataset-activity")
    assert preference.subscribed is False
    assert preference.how == HowChanged.ONE_CLICK
    assert preference.address == ADDRESS and preference.label == "dataset-activity"
    assert preference.at > 1_700_000_000


def test_one_click_as_multipart_works_too(store):
    response = Client().post(url_for(), {"List-Unsubscribe": "One-Click"}, format="multipart")
    assert response.status_code == 200
    assert store.get(ADDRESS, "dataset-activity").subscribed is False


@pytest.mark.django_db
def test_a_signed_in_operator_gets_no_session_cookie_back(store, settings):
    assert settings.SESSION_SAVE_EVERY_REQUEST  # which would otherwise resend it
    user = get_user_model().objects.create_user("ada", password="pw-for-tests")
    client = Client()
    client.force_login(user)
    for response in (client.get(url_for()), one_click(client, url_for())):
        assert response.status_code == 200
        assert response.cookies == {}, response.cookies


def test_get_changes_nothing_and_offers_to_unsubscribe(store):
    response = Client().get(url_for())
    assert response.status_code == 200
    assert store.items == {}  # link scanners open every link
    html = response.content.decode()
    assert 'lang="en' in html and "dataset-activity" in html
    assert 'value="unsubscribe"' in html and "e***@example.com" in html
    assert ADDRESS not in html
    assert response.cookies == {}
    assert "frame-ancestors 'none'" in response["Content-Security-Policy"]
    assert response["Referrer-Policy"] == "no-referrer"
    assert response["Cache-Control"] == "no-store"


def test_the_page_after_one_click_shows_the_label_and_undo_and_undo_resubscribes(store):
    client = Client(enforce_csrf_checks=True)
    url = url_for()
    one_click(client, url)
    html = client.get(url).content.decode()
    assert "You are unsubscribed from dataset-activity" in html
    assert re.search(r'<button[^>]*name="action" value="undo"[^>]*>\s*Undo', html)
    assert f'action="{url}"' in html
    response = client.post(url, {"action": "undo"})
    assert response.status_code == 200 and response.cookies == {}
    assert "subscribed again" in response.content.decode()
    preference = store.get(ADDRESS, "dataset-activity")
    assert preference.subscribed is True and preference.how == HowChanged.PAGE


def test_the_page_can_unsubscribe_too(store):
    Client().post(url_for(), {"action": "unsubscribe"})
    preference = store.get(ADDRESS, "dataset-activity")
    assert preference.subscribed is False and preference.how == HowChanged.PAGE


def other(category: str, subscribed: bool, address: str = ADDRESS) -> Preference:
    return Preference(address, category, subscribed, how="support", at=1, label=category)


def test_the_other_categories_are_toggles_that_save(store):
    store.set(other("digest", True))
    store.set(other("news", False))
    store.set(other("elsewhere", True, address="ada@example.com"))
    client = Client()
    url = url_for()
    html = client.get(url).content.decode()
    assert "elsewhere" not in html
    for slug, checked in (("digest", True), ("news", False)):
        match = re.search(
            rf'<input type="checkbox" id="([^"]+)" name="subscribed" value="{slug}"([^>]*)>', html
        )
        assert match, slug
        assert ("checked" in match[2]) is checked
        assert re.search(rf'<label for="{match[1]}">{slug}</label>', html)
    # news on, digest off; a slug the address has no row for creates nothing
    response = client.post(url, {"action": "set", "subscribed": ["news", "invented"]})
    assert response.status_code == 200 and "saved" in response.content.decode()
    assert store.get(ADDRESS, "news").subscribed is True
    assert store.get(ADDRESS, "news").how == HowChanged.PAGE
    assert store.get(ADDRESS, "digest").subscribed is False
    assert store.get(ADDRESS, "invented") is None
    assert store.get(ADDRESS, "dataset-activity") is None  # the token's own: not a toggle


def test_an_unknown_post_is_a_plain_400_and_changes_nothing(store):
    for data in ({}, {"List-Unsubscribe": "Yes"}, {"action": "delete"}):
        assert Client().post(url_for(), data).status_code == 400
    assert store.items == {}


def legacy_url(address: str = ADDRESS, category: str = "dataset-activity") -> str:
    """A link as emails sent before the tokens were encrypted carry it (signed, readable)."""
    token = signing.Signer(salt=LEGACY_SALT).sign_object([address, category], compress=True)
    return reverse("preferences:unsubscribe", args=[token])


def bad_tokens() -> dict[str, str]:
    good = unsubscribe_token(ADDRESS, "news")
    with override_settings(SECRET_KEY="x" * 50):
        mallory = unsubscribe_token("mallory@example.com", "news")
    return {
        "tampered": good[:-3] + ("aaa" if not good.endswith("aaa") else "bbb"),
        "another key": mallory,
        "another purpose": signing.Signer(salt="other").sign_object([ADDRESS, "news"]),
        "garbage": "not-a-token",
    }


@pytest.mark.parametrize("kind", ["tampered", "another key", "another purpose", "garbage"])
@pytest.mark.parametrize("method", ["get", "post"])
def test_a_bad_token_gets_the_same_plain_400(store, kind, method):
    token = bad_tokens()[kind]
    url = f"/u/{token}"
    response = getattr(Client(), method)(url, {"List-Unsubscribe": "One-Click"})
    assert response.status_code == 400
    html = response.content.decode()
    assert "This link does not work" in html and "@" not in html
    assert response.cookies == {}
    assert store.items == {}
    reference = Client().get("/u/not-a-token").content
    assert response.content == reference  # the same page for every kind


def test_a_token_under_the_previous_key_works_while_it_is_a_fallback(store, settings):
    settings.SECRET_KEY, settings.SECRET_KEY_FALLBACKS = OLD_KEY, []
    url = url_for()
    settings.SECRET_KEY, settings.SECRET_KEY_FALLBACKS = NEW_KEY, [OLD_KEY]
    assert one_click(Client(), url).status_code == 200
    assert store.get(ADDRESS, "dataset-activity").subscribed is False


def test_a_token_under_a_key_no_longer_kept_is_a_400(store, settings):
    settings.SECRET_KEY, settings.SECRET_KEY_FALLBACKS = OLD_KEY, []
    url = url_for()
    settings.SECRET_KEY, settings.SECRET_KEY_FALLBACKS = NEW_KEY, []
    response = one_click(Client(), url)
    assert response.status_code == 400 and "@" not in response.content.decode()
    assert store.items == {}


def test_over_the_address_limit_is_429(store, settings):
    settings.UNSUBSCRIBE_RATE_PER_ADDRESS = 3
    settings.UNSUBSCRIBE_RATE_PER_CLIENT = 0
    client = Client()
    # one address, whatever its category or spelling
    urls = [url_for(), url_for(category="news"), url_for("ERIN@example.com")]
    assert [client.get(u).status_code for u in urls] == [200, 200, 200]
    response = one_click(client, url_for(category="digest"))
    assert response.status_code == 429 and response["Retry-After"] == "60"
    assert response.cookies == {} and "@" not in response.content.decode()
    assert store.get(ADDRESS, "digest") is None
    assert client.get(url_for("ada@example.com")).status_code == 200  # another address


def test_bad_tokens_count_against_the_client_and_then_it_gets_429(store, settings):
    settings.UNSUBSCRIBE_RATE_PER_ADDRESS = 0
    settings.UNSUBSCRIBE_RATE_PER_CLIENT = 2
    client = Client(REMOTE_ADDR="192.0.2.7")
    assert client.get("/u/guess-1").status_code == 400
    assert client.get(url_for()).status_code == 200  # a good one: not counted
    assert client.get("/u/guess-2").status_code == 400
    response = client.get("/u/guess-3")
    assert response.status_code == 429 and response["Retry-After"] == "60"
    # over its bad tokens, it gets no more read, good ones included: guessing stays bounded
    assert one_click(client, url_for()).status_code == 429
    assert store.items == {}
    assert Client(REMOTE_ADDR="192.0.2.8").get("/u/guess-1").status_code == 400


def test_the_client_limit_counts_the_trusted_proxys_address(store, settings):
    settings.UNSUBSCRIBE_RATE_PER_ADDRESS = 0
    settings.UNSUBSCRIBE_RATE_PER_CLIENT = 1
    settings.TRUSTED_PROXY_COUNT = 1
    alb = Client(REMOTE_ADDR="10.0.0.1")
    assert alb.get("/u/guess", HTTP_X_FORWARDED_FOR="192.0.2.7").status_code == 400
    assert alb.get("/u/guess", HTTP_X_FORWARDED_FOR="192.0.2.7").status_code == 429
    assert alb.get("/u/guess", HTTP_X_FORWARDED_FOR="192.0.2.9").status_code == 400


def real_limiter(monkeypatch, settings, redis_key):
    """The Redis limiter the container builds, under this test's key, on a clock that stays in
    one window (a test that crossed a minute would start counting again)."""
    from emailops.redis.client import connect
    from emailops.redis.token_rate import TokenRateLimiter

    now = time.time()
    limiter = TokenRateLimiter(
        connect(settings.REDIS_URL, retries=0), prefix=f"{redis_key}:", clock=lambda: now
    )
    return install_fakes(monkeypatch, MemoryPreferences(), limiter)


def test_a_mailbox_providers_valid_one_clicks_are_never_refused_per_client(
    monkeypatch, settings, redis_key
):
    """Issue 35, finding 7: one provider server posts every recipient's one-click; the
    per-client limit counted them (the 4th post here was a 429)."""
    store = real_limiter(monkeypatch, settings, redis_key)
    settings.UNSUBSCRIBE_RATE_PER_CLIENT = 3
    settings.UNSUBSCRIBE_RATE_PER_ADDRESS = 30
    gmail = Client(REMOTE_ADDR="209.85.220.41")
    recipients = [f"r{i}@example.com" for i in range(12)]
    codes = [one_click(gmail, url_for(address, "news")).status_code for address in recipients]
    assert codes == [200] * 12
    assert all(store.get(address, "news").subscribed is False for address in recipients)


def test_invalid_tokens_from_one_client_get_429_after_the_limit_on_redis(
    monkeypatch, settings, redis_key
):
    real_limiter(monkeypatch, settings, redis_key)
    settings.UNSUBSCRIBE_RATE_PER_CLIENT = 3
    settings.UNSUBSCRIBE_RATE_PER_ADDRESS = 0
    guesser = Client(REMOTE_ADDR="198.51.100.9")
    codes = [one_click(guesser, f"/u/guess-{i}").status_code for i in range(6)]
    assert codes == [400, 400, 400, 429, 429, 429]
    assert one_click(guesser, url_for()).status_code == 429
    assert one_click(Client(REMOTE_ADDR="198.51.100.10"), url_for()).status_code == 200


def test_redis_unreachable_lets_the_unsubscribe_through(monkeypatch, settings):
    from emailops.redis.token_rate import RateLimitUnavailable

    class Down(CountingLimiter):
        def hit(self, token_key, *, per_minute, cost=1):
            raise RateLimitUnavailable("down")

    store = install_fakes(monkeypatch, MemoryPreferences(), Down())
    assert one_click(Client(), url_for()).status_code == 200
    assert store.get(ADDRESS, "dataset-activity").subscribed is False


def test_the_address_limit_holds_on_the_real_redis(monkeypatch, settings, redis_key):
    real_limiter(monkeypatch, settings, redis_key)
    settings.UNSUBSCRIBE_RATE_PER_ADDRESS = 2
    codes = [Client().get(url_for()).status_code for _ in range(3)]
    assert codes == [200, 200, 429]


def test_the_container_builds_a_redis_limiter_of_its_own_prefix():
    from emailops.config import Config
    from emailops.container import Container
    from emailops.redis.token_rate import TokenRateLimiter

    limiter = Container(Config.from_settings()).unsubscribe_rate_limiter
    assert isinstance(limiter, TokenRateLimiter) and limiter.prefix == "emailops:unsubscribe:"


def test_an_organization_in_the_token_or_the_query_is_a_css_class(store):
    assert 'class="org org-367"' in Client().get(url_for(org="367")).content.decode()
    assert 'class="org org-12"' in Client().get(url_for() + "?org=12").content.decode()
    neutral = Client().get(url_for() + '?org="><script>').content.decode()
    assert 'class="neutral"' in neutral and "<script>" not in neutral


def test_the_page_is_in_the_active_language(store):
    from django.utils import translation

    assert Client().get(url_for()).content.decode().startswith('<!doctype html>\n<html lang="en')
    with translation.override("fr"):
        assert '<html lang="fr">' in Client().get(url_for()).content.decode()


def test_head_and_other_methods(store):
    assert Client().head(url_for()).status_code == 200
    assert Client().put(url_for()).status_code == 405
    assert store.items == {}


def test_the_page_and_the_store_use_the_consoles_label_and_the_dashboard_counts_it(store, aws):
    from templates_admin.models import CategoryDefinition

    CategoryDefinition.objects.create(slug="dataset-activity", label="Activity on your datasets")
    response = one_click(Client(), url_for())
    assert response.status_code == 200
    assert store.get(ADDRESS, "dataset-activity").label == "Activity on your datasets"
    page = Client().get(url_for()).content.decode()
    assert "Activity on your datasets" in page
    items = aws.dynamodb.scan(TableName="email-stats")["Items"]
    assert any("unsubscribed:dataset-activity" in item for item in items), items


def test_an_erased_recipients_old_link_keeps_no_address(store):
    """After an erasure, a click on an email sent before it: the preference is written under the
    tombstone's name (where the consumers look an erased recipient up), never the address."""
    tombstones = container.current().tombstones
    tombstones.erased.add(ADDRESS)
    assert one_click(Client(), url_for()).status_code == 200
    assert store.get(ADDRESS, "dataset-activity") is None
    kept = store.get(tombstones.name(ADDRESS), "dataset-activity")
    assert kept is not None and kept.subscribed is False


def test_an_unreadable_console_database_never_fails_an_unsubscribe(store, monkeypatch):
    """The label comes from the console's database; when it cannot be read, the slug stands in
    and the one-click still unsubscribes."""
    from django.db import OperationalError

    from templates_admin import categories

    def unreadable(slug):
        raise OperationalError("database is locked")

    monkeypatch.setattr(categories, "category_label", unreadable)
    assert one_click(Client(), url_for()).status_code == 200
    preference = store.get(ADDRESS, "dataset-activity")
    assert preference.subscribed is False and preference.label == "dataset-activity"


def test_the_pipelines_link_names_no_address_and_one_click_works_through_it(store, settings):
    """Issue 35, finding 5: the List-Unsubscribe URL's token base64-decoded to the address."""
    settings.PUBLIC_BASE_URL = "https://emails.example.org"
    container.install(None)
    url = container.current().unsubscribe_links.url(
        address='"Erin" <Erin@Example.com>', category="dataset-activity", organization="367"
    )
    path = url.removeprefix("https://emails.example.org")
    token = path.removeprefix("/u/")
    data = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    for readable in (token.encode(), data, data.lower()):
        assert b"erin" not in readable and b"example" not in readable, readable
    assert one_click(Client(), path).status_code == 200
    assert store.get(ADDRESS, "dataset-activity").subscribed is False
    assert 'class="org org-367"' in Client().get(path).content.decode()


def test_a_link_sent_before_the_encryption_works_until_the_legacy_deadline(
    store, monkeypatch, settings
):
    settings.UNSUBSCRIBE_RATE_PER_CLIENT = 1
    assert one_click(Client(), legacy_url()).status_code == 200
    assert store.get(ADDRESS, "dataset-activity").subscribed is False
    assert "You are unsubscribed" in Client().get(legacy_url()).content.decode()

    monkeypatch.setattr(tokens, "LEGACY_ACCEPTED_UNTIL", time.time() - 1)
    bad_link_page = Client(REMOTE_ADDR="203.0.113.1").get("/u/not-a-token").content
    provider = Client(REMOTE_ADDR="192.0.2.7")
    for _ in range(3):
        response = one_click(provider, legacy_url(category="news"))
        assert response.status_code == 400 and response.content == bad_link_page
    assert store.get(ADDRESS, "news") is None
    # ours, only old: not counted as guesses, so the provider's good posts still go through
    assert one_click(provider, url_for(category="news")).status_code == 200
