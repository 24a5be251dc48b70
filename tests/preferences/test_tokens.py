"""Unsubscribe tokens: encrypted (no address to read in the URL, no lookup to verify), one per
recipient and category, no expiry, still valid under a retired key kept in SECRET_KEY_FALLBACKS;
the signed tokens of before read until LEGACY_ACCEPTED_UNTIL; and the links built on them."""

from __future__ import annotations

import base64
import binascii
import json
import zlib

import pytest
from django.core import signing
from django.core.exceptions import ImproperlyConfigured

from emailops import container
from emailops.config import Config
from emailops.unsubscribe import (
    LEGACY_ACCEPTED_UNTIL,
    LEGACY_SALT,
    PURPOSE,
    BadToken,
    EncryptedUnsubscribeLinks,
    ExpiredLegacyToken,
    _cipher,
    read_link,
    read_token,
    unsubscribe_links_from_config,
    unsubscribe_token,
)

OLD_KEY = "old-key-" + "o" * 50
NEW_KEY = "new-key-" + "n" * 50
ADDRESS = "a.rather.long.name@university.example.edu"


def legacy_token(payload: list[str]) -> str:
    """A token as emailops.unsubscribe made them before they were encrypted."""
    return signing.Signer(salt=LEGACY_SALT).sign_object(payload, compress=True)


def sealed(plain: bytes, *, key: str, purpose: bytes = PURPOSE) -> str:
    data = _cipher(key).encrypt(plain, [purpose])
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


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
    token = unsubscribe_token(ADDRESS, "dataset-activity", "367")
    assert len(token) < 130  # the payload and the 16-byte synthetic IV, base64
    assert all(c.isalnum() or c in "-_" for c in token)
    assert read_link(token).organization == "367"


def decodings(token: str) -> list[bytes]:
    """Every way someone reading a log might try to decode the token."""
    found = []
    for decode in (base64.urlsafe_b64decode, base64.b64decode, base64.b32decode):
        for text in (token, token + "=" * (-len(token) % 4), token.replace("-", "+")):
            try:
                found.append(decode(text))
            except (binascii.Error, ValueError):
                continue
    for data in list(found):
        for wbits in (15, -15, 31):
            try:
                found.append(zlib.decompress(data, wbits))
            except zlib.error:
                continue
    return found


def test_a_token_decodes_to_no_address_and_no_category():
    """Issue 35, finding 5: the signed token's payload base64-decoded to the address."""
    token = unsubscribe_token(ADDRESS, "dataset-activity", "367")
    found = decodings(token)
    assert found  # base64 it is: what it decodes to is ciphertext
    for data in [*found, token.encode()]:
        text = data.decode("latin-1").casefold()
        for secret in ("a.rather", "long.name", "university", "example.edu", "dataset", "367"):
            assert secret not in text, (secret, data)
    # what the legacy token gave away, for comparison
    legacy = legacy_token([ADDRESS, "dataset-activity"])
    assert any(ADDRESS.encode() in data for data in decodings(legacy.split(":")[0].lstrip(".")))


@pytest.mark.parametrize(
    "token",
    [
        "",
        "garbage",
        "erin@example.com:news",
        "A" * 601,
        unsubscribe_token("erin@example.com", "news")[:-2],  # truncated
        unsubscribe_token("erin@example.com", "news")[2:],
        "=" * 8,
        unsubscribe_token("erin@example.com", "news") + "!",  # outside the alphabet
        "!" + unsubscribe_token("erin@example.com", "news"),
        unsubscribe_token("erin@example.com", "news").replace("-", "+").replace("_", "/"),
    ],
)
def test_a_bad_token_is_refused(token):
    with pytest.raises(BadToken):
        read_token(token)


def test_any_changed_character_is_refused():
    token = unsubscribe_token("erin@example.com", "news")
    for i in range(0, len(token) - 1):  # the last character may carry padding bits only
        changed = token[:i] + ("A" if token[i] != "A" else "B") + token[i + 1 :]
        with pytest.raises(BadToken):
            read_token(changed)


def test_a_value_sealed_under_another_key_or_for_another_purpose_is_refused(settings):
    plain = json.dumps(["mallory@example.com", "news"]).encode()
    with pytest.raises(BadToken):
        read_token(sealed(plain, key="x" * 50))
    with pytest.raises(BadToken):
        read_token(sealed(plain, key=settings.SECRET_KEY, purpose=b"another.purpose"))
    assert read_token(sealed(plain, key=settings.SECRET_KEY)) == ("mallory@example.com", "news")


def test_a_payload_of_the_wrong_shape_is_refused_even_when_sealed_with_our_key(settings):
    for payload in (["erin@example.com"], {"a": "b"}, ["erin@example.com", ""], [1, 2]):
        with pytest.raises(BadToken):
            read_token(sealed(json.dumps(payload).encode(), key=settings.SECRET_KEY))
    with pytest.raises(BadToken):
        read_token(sealed(b"not json", key=settings.SECRET_KEY))


def test_a_token_under_a_retired_key_reads_while_it_is_a_fallback(settings):
    settings.SECRET_KEY, settings.SECRET_KEY_FALLBACKS = OLD_KEY, []
    token = unsubscribe_token("erin@example.com", "news")
    settings.SECRET_KEY, settings.SECRET_KEY_FALLBACKS = NEW_KEY, [OLD_KEY]
    assert read_token(token) == ("erin@example.com", "news")
    assert unsubscribe_token("erin@example.com", "news") != token  # new links: the new key
    settings.SECRET_KEY_FALLBACKS = []
    with pytest.raises(BadToken):
        read_token(token)


def test_a_signed_token_of_before_reads_until_the_legacy_deadline():
    token = legacy_token(["erin@example.com", "news", "367"])
    before, after = LEGACY_ACCEPTED_UNTIL - 1, LEGACY_ACCEPTED_UNTIL
    assert read_link(token, now=before).organization == "367"
    assert read_link(token, now=before).address == "erin@example.com"
    with pytest.raises(ExpiredLegacyToken):
        read_link(token, now=after)


def test_a_signed_token_must_still_be_ours_and_of_the_right_shape():
    before = LEGACY_ACCEPTED_UNTIL - 1
    good = legacy_token(["erin@example.com", "news"])
    forged = signing.Signer(salt="another").sign_object(["mallory@example.com", "news"])
    for token in (
        f"{forged.rsplit(':', 1)[0]}:{good.rsplit(':', 1)[1]}",
        signing.Signer(salt="django.contrib.sessions").sign_object(["e@example.com", "n"]),
        signing.dumps(["erin@example.com", "news"], compress=True),
        good[:-2],
        legacy_token(["erin@example.com"]),
    ):
        with pytest.raises(BadToken) as refused:
            read_link(token, now=before)
        assert not isinstance(refused.value, ExpiredLegacyToken)


def test_a_signed_token_under_a_retired_key_reads_while_it_is_a_fallback(settings):
    settings.SECRET_KEY, settings.SECRET_KEY_FALLBACKS = OLD_KEY, []
    token = legacy_token(["erin@example.com", "news"])
    settings.SECRET_KEY, settings.SECRET_KEY_FALLBACKS = NEW_KEY, [OLD_KEY]
    assert read_link(token, now=LEGACY_ACCEPTED_UNTIL - 1).address == "erin@example.com"


def test_a_token_needs_a_category():
    with pytest.raises(ValueError):
        unsubscribe_token("erin@example.com", "")


def test_the_links_are_on_the_public_base_url():
    links = EncryptedUnsubscribeLinks("https://emails.example.org/")
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
