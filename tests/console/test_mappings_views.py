"""Mapping pages through Django's test client: permission boundaries, forms, conflicts, preview."""

from __future__ import annotations

import json
import re
import time
from html import unescape
from urllib.parse import quote

import pytest
from django.urls import reverse

from emailops import container
from emailops.core.contract import parse_request
from emailops.core.ports import Claim, TemplateMapping
from templates_admin.models import EmailAction, MappingChange

pytestmark = pytest.mark.django_db

ACCEPTED = "dataset-publication-accepted"
ACCEPTED_FILE = "dataset-publication-accepted.html"
BASE = "/admin/templates_admin/templatemappingpage/"
PAGE = f"{BASE}mapping/{ACCEPTED}/"


@pytest.fixture
def owner_client(client, make_user):
    client.force_login(make_user("Template owners"))
    return client


def stored(message_id: str = ACCEPTED):
    return container.current().mapping_store.get_mapping(message_id)


def preview_query(organization: str = "367", context: dict | None = None, other: str = "") -> dict:
    return {
        "organization": organization,
        "other_organization": other,
        "context": json.dumps(context or {}),
    }


def text(response) -> str:
    return response.content.decode()


# --- Permission boundaries ---------------------------------------------------------------------

READ_PAGES = [
    BASE,
    f"{BASE}?q=team",
    f"{BASE}add/",
    PAGE,
    f"{PAGE}delete/",
    f"{PAGE}source/",
    f"{PAGE}source/O367/",
    f"{PAGE}preview/",
]
WRITES = [
    (
        f"{BASE}add/",
        {"message_id": "new-one", "template_file": "added-to-team.html", "subject": "Hi"},
    ),
    (PAGE, {"template_file": ACCEPTED_FILE, "subject": "Changed", "version": "1"}),
    (f"{PAGE}delete/", {"version": "1"}),
    (f"{PAGE}send-test/", preview_query()),
]


@pytest.mark.parametrize("url", READ_PAGES)
def test_anonymous_users_are_sent_to_the_login(client, samples, url):
    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/?next=")


@pytest.mark.parametrize("group", [None, "Support", "Support leads"])
@pytest.mark.parametrize("url", READ_PAGES)
def test_staff_without_template_permissions_are_refused(client, samples, make_user, group, url):
    client.force_login(make_user(group))
    assert client.get(url).status_code == 403


@pytest.mark.parametrize("group", [None, "Support", "Support leads"])
@pytest.mark.parametrize(("url", "data"), WRITES)
def test_writes_without_permission_change_nothing(client, samples, make_user, group, url, data):
    client.force_login(make_user(group))

    assert client.post(url, data).status_code == 403

    assert stored().subject == "Your dataset {{.datasetName}} was accepted for publication"
    assert stored("new-one") is None
    assert samples.queue_messages(samples.queue_url) == []
    assert not MappingChange.objects.exists() and not EmailAction.objects.exists()


@pytest.mark.parametrize(("url", "data"), WRITES)
def test_anonymous_writes_are_sent_to_the_login(client, samples, url, data):
    response = client.post(url, data)
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
    assert stored("new-one") is None and not MappingChange.objects.exists()


@pytest.mark.parametrize("superuser", [False, True])
@pytest.mark.parametrize("url", READ_PAGES)
def test_template_owners_and_superusers_see_every_page(client, samples, make_user, superuser, url):
    client.force_login(make_user(None if superuser else "Template owners", superuser=superuser))
    response = client.get(url)
    assert response.status_code == 200
    assert "Template mappings" in text(response)  # the admin's breadcrumbs and navigation


def test_admin_index_lists_mappings_only_for_those_who_may_use_them(client, samples, make_user):
    client.force_login(make_user("Template owners"))
    assert "Template mappings" in text(client.get("/admin/"))
    client.force_login(make_user("Support"))
    index = text(client.get("/admin/"))
    assert "Template mappings" not in index and "Email journal" in index
    client.force_login(make_user(None))
    assert "Template mappings" not in text(client.get("/admin/"))


@pytest.mark.parametrize("url", [BASE, PAGE, f"{PAGE}preview/", f"{PAGE}source/"])
def test_pages_send_a_strict_content_security_policy(owner_client, samples, url):
    policy = owner_client.get(url)["Content-Security-Policy"]
    directives = dict(d.strip().split(" ", 1) for d in policy.split(";"))
    assert directives["default-src"] == "'none'"
    assert directives["script-src"] == "'self'"  # no inline scripts, no eval
    assert directives["base-uri"] == "'none'" and directives["form-action"] == "'self'"


def test_unknown_mapping_is_404(owner_client, samples):
    assert owner_client.get(f"{BASE}mapping/no-such-thing/").status_code == 404
    assert owner_client.get(f"{BASE}mapping/no-such-thing/preview/").status_code == 404


@pytest.mark.parametrize("url", ["1/change/", "1/history/", "1/delete/", "mapping/x/nope/"])
def test_the_default_model_pages_do_not_exist(owner_client, samples, url):
    assert owner_client.get(f"{BASE}{url}").status_code == 404


def test_missing_override_source_is_404(owner_client, samples):
    response = owner_client.get(f"{PAGE}source/O99/")
    assert response.status_code == 404
    assert f"custom/O99/{ACCEPTED_FILE}" in text(response)


def test_unreachable_aws_is_an_explained_page_not_a_crash(owner_client, samples, settings):
    settings.TEMPLATES_TABLE = "no-such-table"
    container.reset()
    response = owner_client.get(BASE)
    assert response.status_code == 503
    assert "could not reach" in text(response) and "no-such-table" in text(response)


# --- List --------------------------------------------------------------------------------------


def test_list_shows_each_mapping_with_overrides_and_filters(owner_client, samples):
    page = text(owner_client.get(BASE))
    assert page.index("added-to-organization") < page.index("added-to-team") < page.index(ACCEPTED)
    row = page[page.index(f"mapping/{ACCEPTED}/") :].split("</tr>")[0]
    assert ACCEPTED_FILE in row and "O367" in row and "load_template_mappings" in row

    filtered = text(owner_client.get(BASE, {"q": "team"}))
    assert "added-to-team" in filtered and ACCEPTED not in filtered
    assert 'value="team"' in filtered


# --- Create / edit / delete --------------------------------------------------------------------


def test_create_redirects_to_the_new_mapping(owner_client, samples):
    response = owner_client.post(
        f"{BASE}add/",
        {
            "message_id": "team-hello",
            "template_file": "added-to-team.html",
            "subject": "Hi {{.teamName}}",
        },
    )

    assert response.status_code == 302 and response["Location"] == f"{BASE}mapping/team-hello/"
    assert stored("team-hello").subject == "Hi {{.teamName}}"
    page = text(owner_client.get(response["Location"]))
    assert "Created the mapping team-hello" in page
    assert "History" in page and "Create" in page


def test_create_shows_each_problem_by_its_field(owner_client, samples):
    response = owner_client.post(
        f"{BASE}add/",
        {"message_id": "ok-id", "template_file": "nope.html", "subject": "Hi {{if .x}}"},
    )

    assert response.status_code == 200
    errors = response.context["form"].errors
    assert "default/nope.html" in errors["template_file"][0]
    assert "does not compile" in errors["subject"][0]
    assert stored("ok-id") is None


def test_create_of_an_existing_id_says_so_and_links_to_it(owner_client, samples):
    response = owner_client.post(
        f"{BASE}add/",
        {"message_id": ACCEPTED, "template_file": "added-to-team.html", "subject": "x"},
    )
    assert response.status_code == 200
    assert "already exists" in text(response) and f'href="{PAGE}"' in text(response)
    assert stored().template_file == ACCEPTED_FILE


def test_edit_saves_and_shows_the_change_in_the_history(owner_client, samples):
    response = owner_client.post(
        PAGE,
        {"template_file": ACCEPTED_FILE, "subject": "Accepted: {{.datasetName}}", "version": "1"},
    )

    assert response.status_code == 302
    assert stored().subject == "Accepted: {{.datasetName}}" and stored().version == 2
    page = text(owner_client.get(PAGE))
    assert "Saved dataset-publication-accepted (version 2)" in page
    history = page[page.index('id="history"') :]
    assert "Accepted: {{.datasetName}}" in history and "template-owners" in history
    # When, with its zone, as every console page writes a time
    assert re.search(r"<td>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC</td>", history), history[:600]


@pytest.mark.parametrize(
    ("seconds", "note"),
    [
        (300, "Consumers pick this up within 300 s (TEMPLATE_CACHE_SECONDS)."),
        (0, "Consumers use the change from their next email."),
    ],
)
def test_a_save_says_when_consumers_see_it(owner_client, samples, settings, seconds, note):
    settings.TEMPLATE_CACHE_SECONDS = seconds  # the console reads the consumers' setting
    owner_client.post(PAGE, {"template_file": ACCEPTED_FILE, "subject": "Hi", "version": "1"})
    assert note in text(owner_client.get(PAGE))


def test_a_delete_says_how_long_consumers_may_still_use_it(owner_client, samples, settings):
    settings.TEMPLATE_CACHE_SECONDS = 60
    response = owner_client.post(f"{PAGE}delete/", {"version": "1"}, follow=True)
    assert "Consumers may still use it for up to 60 s (TEMPLATE_CACHE_SECONDS)." in text(response)


def test_the_second_editor_is_told_and_shown_the_current_values(client, samples, make_user):
    first, second = make_user("Template owners"), make_user(superuser=True)
    client.force_login(first)
    opened_version = re.search(r'name="version" value="(\d+)"', text(client.get(PAGE)))[1]
    client.post(
        PAGE, {"template_file": ACCEPTED_FILE, "subject": "First!", "version": opened_version}
    )

    client.force_login(second)
    response = client.post(
        PAGE, {"template_file": ACCEPTED_FILE, "subject": "Second!", "version": opened_version}
    )

    assert response.status_code == 200
    page = text(response)
    assert "changed since you opened it" in page
    assert '<code class="current-subject">First!</code>' in page
    assert 'value="Second!"' in page  # their own input is kept
    assert 'name="version" value="2"' in page  # saving again is now a deliberate overwrite
    assert stored().subject == "First!"


def test_saving_a_mapping_someone_deleted_says_so(owner_client, samples):
    container.current().mapping_store.delete_mapping(ACCEPTED, expected_version=1)

    response = owner_client.post(
        PAGE, {"template_file": ACCEPTED_FILE, "subject": "Too late", "version": "1"}
    )

    assert response.status_code == 200
    assert "deleted since you opened it" in text(response)
    assert stored() is None  # not silently recreated


def test_confirming_a_delete_someone_else_made_says_so(owner_client, samples):
    container.current().mapping_store.delete_mapping(ACCEPTED, expected_version=1)

    response = owner_client.post(f"{PAGE}delete/", {"version": "1"})

    assert response.status_code == 200
    assert "Not deleted: it was deleted since you opened it" in text(response)
    assert not MappingChange.objects.exists()


def test_edit_refuses_a_subject_that_does_not_compile(owner_client, samples):
    response = owner_client.post(
        PAGE, {"template_file": ACCEPTED_FILE, "subject": "{% if x %}", "version": "1"}
    )
    assert response.status_code == 200
    assert "does not compile" in text(response)
    assert stored().version == 1


def test_delete_asks_then_deletes(owner_client, samples):
    confirm = text(owner_client.get(f"{PAGE}delete/"))
    assert 'name="version" value="1"' in confirm

    response = owner_client.post(f"{PAGE}delete/", {"version": "1"})

    assert response.status_code == 302 and response["Location"] == BASE
    assert stored() is None
    assert MappingChange.objects.get().action == "delete"


def test_delete_with_a_stale_version_is_refused(owner_client, samples):
    owner_client.post(PAGE, {"template_file": ACCEPTED_FILE, "subject": "Newer", "version": "1"})

    response = owner_client.post(f"{PAGE}delete/", {"version": "1"})

    assert response.status_code == 200 and "changed since you opened it" in text(response)
    assert stored().subject == "Newer"


# --- Sources -----------------------------------------------------------------------------------


def test_source_pages_show_the_raw_templates_escaped(owner_client, samples):
    default = text(owner_client.get(f"{PAGE}source/"))
    branded = text(owner_client.get(f"{PAGE}source/O367/"))
    assert "{{.reviewerName}} accepted" in default
    assert "&lt;h1&gt;SPARC Portal&lt;/h1&gt;" in branded and "<h1>SPARC Portal" not in branded


def test_detail_links_each_override_source(owner_client, samples):
    page = text(owner_client.get(PAGE))
    assert f'href="{PAGE}source/O367/"' in page and f'href="{PAGE}source/"' in page


# --- Preview -----------------------------------------------------------------------------------


def iframes(page: str) -> list[str]:
    return re.findall(r"<iframe[^>]*>", page)


def test_first_preview_is_prefilled_and_side_by_side(owner_client, samples):
    response = owner_client.get(f"{PAGE}preview/")

    page = text(response)
    context = json.loads(unescape(re.search(r"<textarea[^>]*>(.*?)</textarea>", page, re.S)[1]))
    assert set(context) == {"datasetName", "date", "reviewerName"}
    assert response.context["form"]["organization"].value() == "367"
    frames = iframes(page)
    assert len(frames) == 2
    assert "SPARC Portal" in unescape(frames[1]) and "Pennsieve" in unescape(frames[0])
    assert page.count('class="subject"') == 2


def test_preview_frames_are_sandboxed_without_scripts(owner_client, samples):
    page = text(owner_client.post(f"{PAGE}preview/", preview_query()))
    for frame in iframes(page):
        assert 'sandbox=""' in frame and "allow-" not in frame


def test_preview_never_lets_markup_out_of_the_context(owner_client, samples):
    payload = '<img src=x onerror="window.parent.__pwned=1"><script>document.title="pwned"</script>'

    page = text(
        owner_client.post(f"{PAGE}preview/", preview_query(context={"datasetName": payload}))
    )

    assert "<img src=x" not in page and "<script>document" not in page
    srcdoc = unescape(re.search(r'srcdoc="([^"]*)"', page)[1])  # what the frame parses
    assert "&lt;img src=x onerror=" in srcdoc and "<img src=x" not in srcdoc


def test_preview_of_the_default_only(owner_client, samples):
    page = text(owner_client.post(f"{PAGE}preview/", preview_query("default")))
    assert len(iframes(page)) == 1


def test_preview_of_an_organization_without_override_says_so(owner_client, samples):
    page = text(owner_client.post(f"{PAGE}preview/", preview_query("other", other="42")))
    assert len(iframes(page)) == 2 and "Organization 42 has no branded copy" in page


def test_preview_shows_the_variable_report(owner_client, samples):
    page = text(
        owner_client.post(
            f"{PAGE}preview/", preview_query(context={"datasetName": "A", "colour": "red"})
        )
    )
    report = page[page.index('id="variable-report"') :]
    assert re.search(r'class="expected-missing">.*date.*reviewerName', report)
    assert re.search(r'class="unused"><code>colour</code>', report)
    assert re.search(r'class="unknown"><code>organizationName</code>', report)


def test_a_broken_template_shows_inline_with_its_line(owner_client, samples):
    container.current().template_store.write_template(
        f"custom/O367/{ACCEPTED_FILE}", "<p>ok</p>\n<p>{{if .date}}</p>\n"
    )

    response = owner_client.post(f"{PAGE}preview/", preview_query())

    assert response.status_code == 200
    page = text(response)
    assert "never closed" in page and "(line" in page
    assert 'class="error-line"' in page
    assert len(iframes(page)) == 1  # the default still renders


RECURSIVE_MACRO = "<p>ok</p>\n{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}\n"


def test_a_recursive_macro_shows_inline_not_a_server_error(owner_client, samples):
    container.current().template_store.write_template(
        f"custom/O367/{ACCEPTED_FILE}", RECURSIVE_MACRO
    )

    response = owner_client.post(f"{PAGE}preview/", preview_query())

    assert response.status_code == 200
    page = unescape(text(response))
    assert "calls nested more than 50 deep" in page and "(line 2)" in page
    assert len(iframes(page)) == 1  # the default still renders


def test_a_subject_override_that_would_build_a_gigabyte_shows_inline(owner_client, samples):
    """``context.subject`` comes from producers: 27 characters used to fold into a 1 GB string."""
    context = {"subject": "{{ '%0999999999d' % 1 }}"}
    started = time.monotonic()

    response = owner_client.post(f"{PAGE}preview/", preview_query(context=context))

    assert response.status_code == 200
    assert time.monotonic() - started < 10
    page = unescape(text(response))
    assert page.count("format width 999999999 is too large") == 2  # both panes


def test_invalid_context_is_a_form_error_not_a_crash(owner_client, samples):
    response = owner_client.post(
        f"{PAGE}preview/", {"organization": "367", "other_organization": "", "context": "{oops"}
    )
    assert response.status_code == 200
    assert "Not valid JSON" in text(response) and iframes(text(response)) == []


# --- Send a test -------------------------------------------------------------------------------


def test_send_test_queues_to_me_and_returns_to_the_preview(client, samples, make_user):
    owner = make_user("Template owners")
    client.force_login(owner)
    data = preview_query(context={"datasetName": "Atlas"})

    response = client.post(f"{PAGE}send-test/", data)

    assert response.status_code == 302
    assert response["Location"].startswith(f"{PAGE}preview/?organization=367")
    [message] = samples.queue_messages(samples.queue_url)
    request = parse_request(message["Body"])
    assert [r.email for r in request.recipients] == [owner.email]
    assert request.context == {"datasetName": "Atlas", "organizationId": 367}
    action = EmailAction.objects.get()
    assert action.dedupe_id == request.dedupe_id and action.user == owner

    page = text(client.get(response["Location"]))
    assert "Test email queued to" in page and action.dedupe_id in page
    assert "not in the journal yet" in page


def test_send_test_links_to_the_journal_row_once_it_exists(client, samples, make_user):
    owner = make_user("Template owners")
    client.force_login(owner)
    client.post(f"{PAGE}send-test/", preview_query())
    action = EmailAction.objects.get()
    container.current().journal.claim(
        Claim(
            key=action.journal_key,
            message_id=ACCEPTED,
            recipient=owner.email,
            context={},
            now=1_700_000_000,
            lease_seconds=30,
            ttl_seconds=3600,
        )
    )

    page = text(client.get(f"{PAGE}preview/"))

    link = f"/admin/templates_admin/emailjournalpage/entry/{quote(action.journal_key, safe='')}/"
    assert f'href="{link}"' in page


def test_the_test_send_list_survives_a_journal_the_console_cannot_reach(
    client, samples, make_user, settings
):
    """The list of one's test sends reads the journal for their status; a journal that is not
    configured leaves each send without one, it does not take the preview page down."""
    client.force_login(make_user("Template owners"))
    client.post(f"{PAGE}send-test/", preview_query())
    action = EmailAction.objects.get()
    settings.JOURNAL_TABLE = ""

    response = client.get(f"{PAGE}preview/")

    assert response.status_code == 200
    assert action.dedupe_id in text(response) and "not in the journal yet" in text(response)


def test_send_test_refuses_a_user_without_email(client, samples, make_user):
    user = make_user("Template owners")
    user.email = ""
    user.save()
    client.force_login(user)

    assert "no email address" in text(client.get(f"{PAGE}preview/"))
    response = client.post(f"{PAGE}send-test/", preview_query(), follow=True)

    assert "Not sent: Your account has no email address" in text(response)
    assert samples.queue_messages(samples.queue_url) == []
    assert not EmailAction.objects.exists()


def test_send_test_is_post_only(owner_client, samples):
    assert owner_client.get(f"{PAGE}send-test/").status_code == 405


def test_send_test_with_a_bad_context_sends_nothing(owner_client, samples):
    response = owner_client.post(
        f"{PAGE}send-test/", {"organization": "367", "context": "[]"}, follow=True
    )
    assert "Not sent" in text(response)
    assert samples.queue_messages(samples.queue_url) == []


def test_url_names_resolve_to_the_agreed_paths():
    assert reverse("admin:templates_admin_mapping_preview", kwargs={"message_id": "x"}) == (
        f"{BASE}mapping/x/preview/"
    )


@pytest.mark.django_db
@pytest.mark.parametrize("model", ["templatemappingpage", "emailjournalpage"])
@pytest.mark.parametrize("suffix", ["1/change/", "1/history/", "1/delete/"])
def test_default_admin_object_pages_are_404_not_500(client, make_user, model, suffix):
    client.force_login(make_user(superuser=True))
    assert client.get(f"/admin/templates_admin/{model}/{suffix}").status_code == 404


def test_a_message_id_with_a_slash_still_gets_working_pages(samples, owner_client):
    """Rows written by hand need not be slugs; the list must not break on them."""
    odd = "legacy/welcome"
    container.current().mapping_store.save_mapping(
        TemplateMapping(message_id=odd, template_file=ACCEPTED_FILE, subject="Hi"),
        expected_version=None,
    )
    listing = owner_client.get(BASE)
    assert listing.status_code == 200
    for suffix in ("", "preview/", "source/", "delete/"):
        page = owner_client.get(f"{BASE}mapping/{odd}/{suffix}")
        assert page.status_code == 200, suffix
        assert odd in page.content.decode()


def test_the_preview_context_travels_in_the_post_body_never_the_url(client, samples, make_user):
    """Access logs keep URLs: the context (names, addresses, tokens) must never be in one."""
    owner = make_user("Template owners")
    client.force_login(owner)
    page = text(client.get(f"{PAGE}preview/"))
    assert '<form method="post" id="preview-form">' in page
    secret = preview_query(context={"datasetName": "Secret Atlas"})
    response = client.post(f"{PAGE}send-test/", secret)
    assert "Secret" not in response["Location"]
    back = text(client.get(response["Location"]))
    assert "Secret Atlas" in back  # the page comes back with what was previewed
    assert "Secret Atlas" not in text(client.get(f"{PAGE}preview/"))  # once
