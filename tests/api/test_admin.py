"""API tokens in the admin: superusers create (the plaintext is shown once), list and revoke."""

from __future__ import annotations

import pytest

from api.models import ApiToken
from api.services import api_token_authenticate, api_token_create

pytestmark = pytest.mark.django_db

TOKENS = "/admin/api/apitoken/"


@pytest.fixture
def superuser_client(client, make_user):
    client.force_login(make_user(superuser=True))
    return client


def test_a_created_token_is_shown_once_and_never_again(superuser_client):
    response = superuser_client.post(
        f"{TOKENS}add/", {"name": "publishing", "emails_per_minute": "10"}
    )

    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    plaintext = response.context["plaintext"]
    assert plaintext in response.content.decode()
    token = api_token_authenticate(plaintext)
    assert token.name == "publishing" and token.emails_per_minute == 10
    assert token.created_by.is_superuser
    for page in (TOKENS, f"{TOKENS}{token.pk}/change/"):
        content = superuser_client.get(page).content.decode()
        assert token.prefix in content
        assert plaintext not in content and token.token_hash not in content


def test_revoking_from_the_change_page(superuser_client):
    new = api_token_create(name="billing")
    change = f"{TOKENS}{new.token.pk}/change/"
    assert "api-token-revoke" in superuser_client.get(change).content.decode()

    assert superuser_client.get(f"{TOKENS}{new.token.pk}/revoke/").status_code == 405
    response = superuser_client.post(f"{TOKENS}{new.token.pk}/revoke/")

    assert response.status_code == 302 and response["Location"] == change
    assert api_token_authenticate(new.plaintext) is None
    assert "api-token-revoke" not in superuser_client.get(change).content.decode()


def test_revoking_with_the_changelist_action(superuser_client):
    tokens = [api_token_create(name=f"p{i}") for i in range(3)]

    superuser_client.post(
        TOKENS,
        {"action": "revoke_selected", "_selected_action": [t.token.pk for t in tokens[:2]]},
    )

    assert [api_token_authenticate(t.plaintext) is None for t in tokens] == [True, True, False]


def test_tokens_cannot_be_deleted(superuser_client):
    new = api_token_create(name="keep")
    assert superuser_client.get(f"{TOKENS}{new.token.pk}/delete/").status_code == 403
    assert ApiToken.objects.count() == 1


@pytest.mark.parametrize("group", ["Support", "Support leads", "Template owners"])
def test_console_groups_cannot_manage_tokens(client, make_user, group):
    client.force_login(make_user(group))
    assert client.get(TOKENS).status_code == 403
    assert client.post(f"{TOKENS}add/", {"name": "x", "emails_per_minute": "1"}).status_code == 403
    assert not ApiToken.objects.exists()
