"""Mapping selectors against moto: listing, overrides, history, preview rendering."""

from __future__ import annotations

import json

import pytest

from emailops import container
from emailops.core.ports import Claim
from templates_admin.mappings import selectors, services
from templates_admin.models import EmailAction

pytestmark = pytest.mark.django_db

ACCEPTED = "dataset-publication-accepted"
ACCEPTED_FILE = "dataset-publication-accepted.html"


def upload(key: str, source: str) -> None:
    container.current().template_store.write_template(key, source)


def mapping(message_id: str = ACCEPTED):
    return selectors.mapping_get(
        message_id=message_id, mapping_store=container.current().mapping_store
    )


# --- list and overrides ------------------------------------------------------------------------


def test_list_has_every_mapping_sorted_with_its_overrides(samples):
    rows = selectors.mapping_list(
        mapping_store=container.current().mapping_store,
        template_store=container.current().template_store,
    )

    ids = [row.mapping.message_id for row in rows]
    assert ids == sorted(ids) and len(ids) == 6
    by_id = {row.mapping.message_id: row for row in rows}
    assert by_id[ACCEPTED].override_orgs == ("367",)
    assert by_id["added-to-team"].override_orgs == ()
    assert by_id[ACCEPTED].mapping.updated_by == "load_template_mappings"


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("TEAM", ["added-to-team"]),  # message id, any case
        ("proposal-submitted.html", ["dataset-proposal-submitted"]),  # template file
        ("requested access", ["embargo-access-requested"]),  # subject
        ("o367", [ACCEPTED]),  # an overriding organization
        ("  added-to  ", ["added-to-organization", "added-to-team"]),
        ("nothing like this", []),
    ],
)
def test_list_filter(samples, query, expected):
    assert [
        row.mapping.message_id
        for row in selectors.mapping_list(
            query=query,
            mapping_store=container.current().mapping_store,
            template_store=container.current().template_store,
        )
    ] == expected


def test_override_index_reads_only_well_formed_keys_and_sorts_orgs_numerically(samples):
    upload("custom/O10/added-to-team.html", "x")
    upload("custom/O9/added-to-team.html", "x")
    upload("custom/O10/nested/added-to-team.html", "x")
    upload("custom/readme.txt", "x")
    upload("custom/Oabc/added-to-team.html", "x")

    index = selectors.override_index(template_store=container.current().template_store)

    assert index["added-to-team.html"] == ("9", "10")
    assert index[ACCEPTED_FILE] == ("367",)
    assert set(index) == {"added-to-team.html", ACCEPTED_FILE}


def test_default_template_files(samples):
    files = selectors.default_template_files(template_store=container.current().template_store)
    assert "added-to-team.html" in files and files == sorted(files)
    assert all("/" not in f for f in files)


def test_template_source_of_default_and_override(samples):
    accepted = mapping()
    default = selectors.template_source(
        mapping=accepted, organization_id=None, template_store=container.current().template_store
    )
    branded = selectors.template_source(
        mapping=accepted, organization_id="367", template_store=container.current().template_store
    )
    assert "Pennsieve" in default and "SPARC Portal" in branded
    assert (
        selectors.template_source(
            mapping=accepted, organization_id="1", template_store=container.current().template_store
        )
        is None
    )


# --- history -----------------------------------------------------------------------------------


def test_history_lists_changed_fields_newest_first(samples, make_user):
    owner = make_user("Template owners")
    current = mapping()
    services.mapping_update(
        message_id=ACCEPTED,
        template_file=current.template_file,
        subject="New subject",
        expected_version=current.version,
        user=owner,
        adapters=container.current(),
    )
    services.mapping_create(
        message_id="other",
        template_file="added-to-team.html",
        subject="Hi",
        user=owner,
        adapters=container.current(),
    )

    [entry] = selectors.mapping_history(message_id=ACCEPTED)

    assert entry.change.user == owner and entry.change.action == "update"
    assert [(f.field, f.before, f.after) for f in entry.fields] == [
        ("subject", current.subject, "New subject")
    ]


# --- preview -----------------------------------------------------------------------------------


def test_preview_renders_default_and_branded_side_by_side(samples):
    context = {"datasetName": "Rat atlas", "reviewerName": "Ada", "date": "May 1"}

    preview = selectors.preview_render(
        mapping=mapping(),
        organization_id="367",
        context=context | {"organizationId": 367},
        adapters=container.current(),
    )

    default, branded = preview.panes
    assert (default.template_key, default.is_override) == (f"default/{ACCEPTED_FILE}", False)
    assert (branded.template_key, branded.is_override) == (f"custom/O367/{ACCEPTED_FILE}", True)
    assert "Pennsieve" in default.html and "SPARC Portal" in branded.html
    assert "Rat atlas" in default.html and "Rat atlas" in branded.html
    assert (
        default.subject == branded.subject == "Your dataset Rat atlas was accepted for publication"
    )
    assert preview.report.expected_missing == () and preview.report.unused == ()


def test_preview_without_an_organization_has_one_pane(samples):
    preview = selectors.preview_render(
        mapping=mapping(), organization_id=None, context={}, adapters=container.current()
    )
    assert [pane.label for pane in preview.panes] == ["Default"]


def test_preview_for_an_organization_without_override_shows_the_default_it_would_get(samples):
    preview = selectors.preview_render(
        mapping=mapping(), organization_id="5", context={}, adapters=container.current()
    )
    branded = preview.panes[1]
    assert branded.template_key == f"default/{ACCEPTED_FILE}" and not branded.is_override


def test_preview_escapes_context_values_as_the_consumer_does(samples):
    payload = '<script>alert(1)</script><img src=x onerror="alert(2)">'

    preview = selectors.preview_render(
        mapping=mapping(),
        organization_id=None,
        context={"datasetName": payload},
        adapters=container.current(),
    )

    html = preview.panes[0].html
    assert "<script>" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert preview.panes[0].subject.startswith("Your dataset <script>")  # plain text, not HTML


def test_a_broken_branded_template_is_a_problem_with_its_line_not_an_exception(samples):
    upload(
        f"custom/O367/{ACCEPTED_FILE}",
        "<html>\n<body>\n<p>{{.datasetName}}</p>\n<p>{{if .date}}\n</body>\n</html>\n",
    )

    preview = selectors.preview_render(
        mapping=mapping(), organization_id="367", context={}, adapters=container.current()
    )

    default, branded = preview.panes
    assert default.html and default.body_problem is None  # the other side still renders
    assert branded.html is None
    problem = branded.body_problem
    assert "never closed" in problem.message and problem.line is not None
    [error_line] = [line for line in problem.excerpt if line.is_error]
    assert error_line.number == problem.line


def test_a_render_time_error_names_its_line(samples):
    upload(f"custom/O367/{ACCEPTED_FILE}", "line one\nline two\n{{ 1 // zero }}\nline four\n")

    preview = selectors.preview_render(
        mapping=mapping(), organization_id="367", context={"zero": 0}, adapters=container.current()
    )

    problem = preview.panes[1].body_problem
    assert problem.line == 3
    assert [line.text for line in problem.excerpt if line.is_error] == ["{{ 1 // zero }}"]


def test_a_sandbox_escape_attempt_is_a_problem(samples):
    upload(f"custom/O367/{ACCEPTED_FILE}", "{{ ''.__class__.__mro__ }}")

    preview = selectors.preview_render(
        mapping=mapping(), organization_id="367", context={}, adapters=container.current()
    )

    assert "sandbox" in preview.panes[1].body_problem.message


def test_a_broken_subject_is_a_problem_in_each_pane(samples):
    preview = selectors.preview_render(
        mapping=mapping(),
        organization_id="367",
        context={"subject": "Hi {{if .x}}"},
        adapters=container.current(),
    )
    assert all(pane.subject is None and pane.subject_problem for pane in preview.panes)
    assert all(pane.html for pane in preview.panes)  # bodies still render


def test_a_missing_default_template_is_a_problem(samples):
    container.current().template_store.client.delete_object(
        Bucket=container.current().template_store.bucket, Key=f"default/{ACCEPTED_FILE}"
    )

    preview = selectors.preview_render(
        mapping=mapping(), organization_id=None, context={}, adapters=container.current()
    )

    assert "no such object" in preview.panes[0].body_problem.message


def test_preview_report_compares_manifest_context_and_templates(samples, settings, tmp_path):
    manifest = tmp_path / "vars.json"
    manifest.write_text(json.dumps({ACCEPTED: ["datasetName", "date", "reviewerName", "extra"]}))
    settings.TEMPLATE_VARIABLES_PATH = manifest

    preview = selectors.preview_render(
        mapping=mapping(),
        organization_id="367",
        context={"datasetName": "A", "date": "d", "color": "red", "organizationId": 367},
        adapters=container.current(),
    )

    report = preview.report
    assert report.expected_missing == ("extra", "reviewerName")
    assert report.unused == ("color",)
    assert report.unknown == ("organizationName",)  # the default template's optional line
    assert "reviewerName" in report.rendered_empty


def test_initial_context_has_a_sample_for_each_manifest_variable(samples):
    context = selectors.preview_initial_context(mapping=mapping(), adapters=container.current())
    assert set(context) == {"datasetName", "date", "reviewerName"}


def test_initial_context_falls_back_to_the_template_variables(samples, settings, tmp_path):
    manifest = tmp_path / "vars.json"
    manifest.write_text("{}")
    settings.TEMPLATE_VARIABLES_PATH = manifest

    context = selectors.preview_initial_context(mapping=mapping(), adapters=container.current())

    assert set(context) == {"datasetName", "date", "reviewerName", "organizationName"}


# --- test sends --------------------------------------------------------------------------------


def test_sent_tests_link_to_the_journal_once_the_row_exists(samples, make_user):
    owner = make_user("Template owners")
    action = services.send_test_email(
        message_id=ACCEPTED, context={}, user=owner, queue=container.current().queue
    )

    [before] = selectors.sent_test_list(
        user=owner, message_id=ACCEPTED, adapters=container.current()
    )
    assert before.action == action and before.journal_url is None and before.status is None

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
    [after] = selectors.sent_test_list(
        user=owner, message_id=ACCEPTED, adapters=container.current()
    )
    assert after.status == "QUEUED"
    assert after.journal_url == (
        "/admin/templates_admin/emailjournalpage/entry/"
        f"{action.dedupe_id}%3Aowner%40example.com/".replace("owner", owner.username)
    )


def test_sent_tests_are_the_users_own(samples, make_user):
    owner = make_user("Template owners")
    other = make_user(superuser=True)
    services.send_test_email(
        message_id=ACCEPTED, context={}, user=other, queue=container.current().queue
    )

    assert (
        selectors.sent_test_list(user=owner, message_id=ACCEPTED, adapters=container.current())
        == []
    )
    assert EmailAction.objects.count() == 1
