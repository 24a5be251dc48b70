"""Unsubscribe tokens: signed (no lookup to verify), one per recipient and category, no expiry,
still valid under a retired key kept in SECRET_KEY_FALLBACKS; and the links built on them."""

from __future__ import annotations

import pytest
from django.core import signing
from django.core.exceptions import ImproperlyConfigured

from emailops import container
from emailops.config import Config
from emailops.unsubscribe import (
    SALT,
    BadToken,
    SignedUnsubscribeLinks,
    read_link,
    read_token,
    unsubscribe_links_from_config,
    unsubscribe_token,
)

OLD_KEY = "old-key-" + "o" * 50
NEW_KEY = "new-key-" + "n" * 50


def test_a_token_reads_back_as_the_normalised_address_and_its_category():
    token = unsubscribe_token('"Erin" <Erin@Example.COM>', "dataset-activity")
    assert read_token(token) == ("erin@example.com", "dataset-activity")
    assert read_link(token).organization == ""


def test_a_token_is_per_recipient_and_category_and_the_same_for_two_spellings():
    one = unsubscribe_token("erin@example.com", "news")
    assert unsubscribe_token(" ERIN@example.com ", "news") == one
    assert unsubscribe_token("ada@example.com", "news") != one
    assert unsubscribe_token("erin@example.com", "digest") != one


def test_a_token_is_compact_and_url_safe():
    token = unsubscribe_token(
        "a.rather.long.name@university.example.edu", "dataset-activity", "367"
    )
    assert len(token) < 160  # the payload (compressed when that is shorter) and 43 of signature
    assert all(c.isalnum() or c in "-_:." for c in token)
    assert read_link(token).organization == "367"


@pytest.mark.parametrize(
    "token",
    [
        "",
        "garbage",
        "erin@example.com:news",
        unsubscribe_token("erin@example.com", "news")[:-2],  # truncated signature
    ],
)
def test_a_bad_token_is_refused(token):
    with pytest.raises(BadToken):
        read_token(token)


def test_an_edited_payload_is_refused():
    token = unsubscribe_token("erin@example.com", "news")
    value, signature = token.rsplit(":", 1)
    forged = signing.Signer(salt="another").sign_object(["mallory@example.com", "news"])
    other_value = forged.rsplit(":", 1)[0]
    with pytest.raises(BadToken):
        read_token(f"{other_value}:{signature}")
    assert value != other_value


def test_a_value_signed_for_another_purpose_is_refused():
    other_purpose = signing.Signer(salt="django.contrib.sessions").sign_object(
        ["erin@example.com", "news"], compress=True
    )
    with pytest.raises(BadToken):
        read_token(other_purpose)
    # and signing.dumps (a timestamp, the default salt) neither
    with pytest.raises(BadToken):
        read_token(signing.dumps(["erin@example.com", "news"], compress=True))


def test_a_payload_of_the_wrong_shape_is_refused_even_when_signed_with_our_salt():
    for payload in (["erin@example.com"], {"a": "b"}, ["erin@example.com", ""], [1, 2]):
        with pytest.raises(BadToken):
            read_token(signing.Signer(salt=SALT).sign_object(payload))


def test_a_token_signed_under_a_retired_key_verifies_while_it_is_a_fallback(settings):
    settings.SECRET_KEY, settings.SECRET_KEY_FALLBACKS = OLD_KEY, []
    token = unsubscribe_token("erin@example.com", "news")
    settings.SECRET_KEY, settings.SECRET_KEY_FALLBACKS = NEW_KEY, [OLD_KEY]
    assert read_token(token) == ("erin@example.com", "news")
    settings.SECRET_KEY_FALLBACKS = []
    with pytest.raises(BadToken):
        read_token(token)


def test_a_token_needs_a_category():
    with pytest.raises(ValueError):
        unsubscribe_token("erin@example.com", "")


def test_the_links_are_on_the_public_base_url():
    links = SignedUnsubscribeLinks("https://emails.example.org/")
    url = links.url(address="Erin@example.com", category="news", organization=None)
    assert url is not None and url.startswith("https://emails.example.org/u/")
    assert read_token(url.removeprefix("https://emails.example.org/u/")) == (
        "erin@example.com",
        "news",
    )
    assert links.url(address="erin@example.com", category="", organization=None) is None


def test_no_base_url_no_link(settings):
    settings.PUBLIC_BASE_URL = ""
    links = unsubscribe_links_from_config()
    assert links.url(address="erin@example.com", category="news", organization="1") is None


def test_the_factory_reads_the_setting_through_the_config(settings):
    settings.PUBLIC_BASE_URL = "https://emails.example.org/"
    config = container.current().config
    assert config.preferences.public_base_url == "https://emails.example.org"
    url = unsubscribe_links_from_config(config).url(
        address="erin@example.com", category="news", organization="7"
    )
    assert read_link(url.rsplit("/", 1)[1]).organization == "7"


@pytest.mark.parametrize(
    "value", ["emails.example.org", "ftp://x.example", "https://x.example/?a=1", "https://"]
)
def test_a_public_base_url_that_is_not_one_is_refused(settings, value):
    settings.PUBLIC_BASE_URL = value
    with pytest.raises(ImproperlyConfigured, match="PUBLIC_BASE_URL"):
        Config.from_settings()


@pytest.mark.parametrize("name", ["UNSUBSCRIBE_RATE_PER_ADDRESS", "UNSUBSCRIBE_RATE_PER_CLIENT"])
def test_a_negative_limit_is_refused(settings, name):
    setattr(settings, name, -1)
    with pytest.raises(ImproperlyConfigured, match=name):
        Config.from_settings()
