"""Issue 36, points 1-3: "did they get it" covers every state. A search for an address that has a
held request, a log-only row, an unsubscribe or a suppression says so first, in words, with the
time, the reason and a link to act; a held request is found by recipient while it waits; the held
and log-only page is linked from the journal, the dashboard and Operations; one address page
gathers its sends, suppression and preferences, reachable from every place that shows it."""

from __future__ import annotations

import json
from html import unescape

import pytest
from django.urls import reverse

from audit.models import JournalReadAudit
from emailops import container
from emailops.core.pipeline import Action
from emailops.core.ports import TemplateMapping
from emailops.core.preferences import Preference
from templates_admin.models import CategoryDefinition
from tests.fake_preferences import install_fake_preferences
from tests.journal_factory import BASE_TIME, journal_row, put_rows

pytestmark = pytest.mark.django_db

SEARCH = "/admin/templates_admin/emailjournalpage/"
HELD = "/admin/templates_admin/emailjournalpage/held/"
ADDRESS = "pat@example.com"
LOOP = journal_row(
    ADDRESS,
    at=BASE_TIME + 5,
    key=f"welcome-2:{ADDRESS}",
    LoggedOnly=True,
    LoggedOnlyReason="loop",
    LoggedOnlyDetail="loop: more than 5 requests for messageId added-to-team to this recipient "
    "within the hour",
)
SENT = journal_row(ADDRESS, at=BASE_TIME, key=f"welcome-1:{ADDRESS}")


def text(response) -> str:
    return unescape(response.content.decode())


@pytest.fixture
def everything(aws):
    """ADDRESS with a sent row, a loop's log-only row, an unsubscribe and a suppression."""
    put_rows(aws.dynamodb, "email-journal", [SENT, LOOP])
    CategoryDefinition.objects.create(slug="dataset-activity", label="Activity on datasets")
    install_fake_preferences().set(
        Preference(ADDRESS, "dataset-activity", False, "one-click", BASE_TIME + 2)
    )
    container.current().suppression_list.add(
        ADDRESS, reason="complaint", detail="abuse", source="ses-1", now=BASE_TIME + 3
    )
    return aws


def _states(page: str) -> str:
    start = page.index('id="address-states"')
    return page[start : page.index("</div>", start)]


def test_a_search_says_each_state_first_with_its_time_reason_and_link(
    everything, client, make_user
):
    client.force_login(make_user("Support leads"))
    page = text(client.get(SEARCH, {"q": ADDRESS}))

    assert page.index('id="address-states"') < page.index('id="journal-results"')  # first
    states = _states(page)
    assert [s.split('"')[0] for s in states.split('data-state="')[1:]] == [
        "not-delivered",
        "unsubscribed",
        "suppressed",
    ]
    assert "a loop: more than 5 different requests for messageId added-to-team" in states
    assert reverse("admin:templates_admin_journal_detail", args=[LOOP["Id"]]) in states
    assert "Release it (Held and log-only)" in states  # a lead may release a loop's row
    assert "Unsubscribed</strong> from Activity on datasets since" in states
    address_page = reverse("admin:templates_admin_journal_address", args=[ADDRESS])
    assert f'href="{address_page}#preferences-heading"' in states
    assert "Suppressed</strong> since" in states and ": complaint (abuse)" in states
    assert reverse("admin:templates_admin_suppression_detail", args=[ADDRESS]) in states
    assert states.count("<time") == 3  # each with its time
    assert f'href="{address_page}" class="journal-address"' in page  # the result list's address


def test_support_is_not_offered_the_release(everything, client, make_user):
    client.force_login(make_user("Support"))
    states = _states(text(client.get(SEARCH, {"q": ADDRESS})))
    assert 'data-state="not-delivered"' in states and "Release it" not in states


@pytest.fixture
def held(aws, settings):
    """p2@example.com's request held by the rate safeguard (a cap of one a minute)."""
    settings.SEND_RATE_LIMIT_PER_MINUTE = 1
    settings.RATE_SAFEGUARD_OVER_CAP = "hold"
    container.reset()
    adapters = container.current()
    adapters.mapping_store.save_mapping(
        TemplateMapping("invite", "invite.html", "Invitation"), expected_version=None
    )
    adapters.template_store.write_template("default/invite.html", "<p>Come</p>")
    pipeline = adapters.build_pipeline(lease_seconds=30)
    for n in (1, 2):
        request = {"messageId": "invite", "recipients": [{"email": f"p{n}@example.com"}]}
        outcome = pipeline.process(json.dumps(request))
    assert outcome.action is Action.WAIT
    return aws


def test_a_held_request_is_found_by_its_recipient_while_it_waits(held, client, make_user):
    client.force_login(make_user("Support"))
    page = text(client.get(SEARCH, {"q": "P2@example.com"}))

    states = _states(page)
    assert 'data-state="held"' in states and "over 1 per minute" in states and "<time" in states
    assert f'href="{HELD}"' in states
    assert 'id="journal-empty-held"' in page and "never queued" not in page
    assert 'data-state="held"' not in text(client.get(SEARCH, {"q": "p1@example.com"}))


def test_the_held_page_is_linked_from_the_journal_the_dashboard_and_operations(
    everything, client, make_user
):
    client.force_login(make_user("Support"))
    for url in (SEARCH, "/admin/", "/admin/templates_admin/operationspage/"):
        page = text(client.get(url))
        assert f'href="{HELD}"' in page, url
    row = reverse("admin:templates_admin_journal_detail", args=[LOOP["Id"]])
    assert f'href="{HELD}"' in text(client.get(row))
    assert client.get(HELD).status_code == 200


def test_the_address_page_gathers_sends_suppression_and_preferences(everything, client, make_user):
    client.force_login(make_user("Support"))
    url = reverse("admin:templates_admin_journal_address", args=[ADDRESS])
    page = text(client.get(url))

    assert 'id="address-states"' in page
    sends = page[page.index('id="address-sends"') :]
    for row in (SENT, LOOP):
        assert reverse("admin:templates_admin_journal_detail", args=[row["Id"]]) in sends
    assert 'id="address-suppressed"' in page
    assert "Activity on datasets" in page[page.index('id="preferences"') :]
    assert 'id="preference-history"' in page
    audit = JournalReadAudit.objects.filter(action="address").get()
    assert (audit.query, audit.rows) == (ADDRESS, 2)


def test_the_address_page_is_reachable_from_every_place_that_shows_the_address(
    everything, client, make_user
):
    client.force_login(make_user("Support"))
    url = reverse("admin:templates_admin_journal_address", args=[ADDRESS])
    places = {
        "search": SEARCH + f"?q={ADDRESS}",
        "row": reverse("admin:templates_admin_journal_detail", args=[SENT["Id"]]),
        "suppression list": "/admin/templates_admin/suppressionlistpage/?q=pat",
        "suppression entry": reverse("admin:templates_admin_suppression_detail", args=[ADDRESS]),
    }
    for place, where in places.items():
        assert f'href="{url}' in text(client.get(where)), place


def test_an_unsubscribed_address_not_suppressed_is_one_click_from_its_preferences(
    aws, client, make_user
):
    """The suppression list's empty answer for a whole address links to its address page."""
    install_fake_preferences().set(
        Preference("uma@example.com", "dataset-activity", False, "one-click", BASE_TIME)
    )
    client.force_login(make_user("Support"))
    page = text(client.get("/admin/templates_admin/suppressionlistpage/", {"q": "uma@example.com"}))
    url = reverse("admin:templates_admin_journal_address", args=["uma@example.com"])
    assert f'href="{url}' in page


def test_the_address_page_is_refused_without_the_journal_and_hides_what_the_reader_cannot_see(
    everything, client, make_user
):
    url = reverse("admin:templates_admin_journal_address", args=[ADDRESS])
    client.force_login(make_user(None))  # staff, no group
    assert client.get(url).status_code == 403

    from django.contrib.auth.models import Permission

    reader = make_user(None, username="journal-only")
    reader.user_permissions.add(Permission.objects.get(codename="search_journal"))
    client.force_login(reader)
    page = text(client.get(url))
    assert 'id="address-sends"' in page
    assert 'id="preferences-heading"' not in page and "suppressionlistpage" not in page


@pytest.mark.parametrize(
    ("reason", "group", "words"),
    [
        ("unsubscribed", "Support", "The address's preferences"),
        ("loop", "Support leads", "Release it (Held and log-only)"),
        ("loop", "Support", None),  # Support cannot release: not offered
        ("template-off", "Template owners", "The template mapping (sending off)"),
        ("template-off", "Support", None),
    ],
)
def test_a_log_only_rows_page_links_to_where_its_cause_is_lifted(
    aws, client, make_user, reason, group, words
):
    aws.load_samples()  # the mapping of added-to-team
    row = journal_row("ray@example.com", at=BASE_TIME, LoggedOnly=True, LoggedOnlyReason=reason)
    put_rows(aws.dynamodb, "email-journal", [row])
    client.force_login(make_user(group))
    page = text(client.get(reverse("admin:templates_admin_journal_detail", args=[row["Id"]])))
    if words is None:
        assert 'id="journal-act-link"' not in page
        return
    link = page.split('id="journal-act-link">')[0].rsplit('href="', 1)[1].split('"')[0]
    assert f'id="journal-act-link">{words}</a>' in page
    assert client.get(link).status_code == 200


def test_the_suppression_pages_offer_the_address_page_only_to_journal_readers(
    everything, client, make_user
):
    from django.contrib.auth.models import Permission

    reader = make_user(None, username="suppressions-only")
    reader.user_permissions.add(Permission.objects.get(codename="view_suppressions"))
    client.force_login(reader)
    url = reverse("admin:templates_admin_journal_address", args=[ADDRESS])
    for where in (
        "/admin/templates_admin/suppressionlistpage/?q=pat",
        reverse("admin:templates_admin_suppression_detail", args=[ADDRESS]),
    ):
        page = text(client.get(where))
        assert 'id="suppression-results"' in page or 'id="suppression-status"' in page
        assert f'href="{url}' not in page, where
