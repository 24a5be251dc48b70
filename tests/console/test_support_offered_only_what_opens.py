"""Issue 36, point 6: Support is offered only what Support can open. From the pages Support uses
to answer "did they get it" (the front page, a search, a row, the address page, the held list, the
suppression list and entry, Operations), every console link Support is shown opens for Support:
none leads to "Not open to you"."""

from __future__ import annotations

import re
from html import unescape

import pytest
from django.urls import reverse

from tests.console.test_address_states import ADDRESS, LOOP, SENT, everything  # noqa: F401
from tests.journal_factory import BASE_TIME, journal_row, put_rows

pytestmark = pytest.mark.django_db

_HREF = re.compile(r'href="(/admin/[^"#]*)')
_SKIP = ("/admin/logout/", "/admin/password_change/")


def test_every_link_support_is_shown_opens_for_support(everything, client, make_user):  # noqa: F811
    everything.load_samples()
    versioned = journal_row(
        ADDRESS, at=BASE_TIME + 9, key=f"welcome-3:{ADDRESS}", TemplateVersion="v1"
    )
    put_rows(everything.dynamodb, "email-journal", [versioned])
    client.force_login(make_user("Support"))
    pages = [
        "/admin/",
        f"/admin/templates_admin/emailjournalpage/?q={ADDRESS}",
        reverse("admin:templates_admin_journal_detail", args=[SENT["Id"]]),
        reverse("admin:templates_admin_journal_detail", args=[LOOP["Id"]]),
        reverse("admin:templates_admin_journal_detail", args=[versioned["Id"]]),
        reverse("admin:templates_admin_journal_address", args=[ADDRESS]),
        "/admin/templates_admin/emailjournalpage/held/",
        "/admin/templates_admin/suppressionlistpage/",
        reverse("admin:templates_admin_suppression_detail", args=[ADDRESS]),
        "/admin/templates_admin/operationspage/",
    ]
    links: dict[str, str] = {}
    for page in pages:
        response = client.get(page)
        assert response.status_code == 200, page
        for href in _HREF.findall(response.content.decode()):
            links.setdefault(unescape(href), page)
    refused = {
        href: found_on
        for href, found_on in links.items()
        if not href.startswith(_SKIP) and client.get(href).status_code == 403
    }
    assert refused == {}, "links Support is shown but may not open (href: the page showing it)"
