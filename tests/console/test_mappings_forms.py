"""Mapping forms and the variables helpers: pure, no AWS, no DB."""

from __future__ import annotations

import json

import pytest

from emailops import container
from templates_admin.mappings.forms import MappingCreateForm, MappingEditForm, PreviewForm
from templates_admin.mappings.variables import (
    sample_context,
    template_manifest,
    variable_report,
)


def test_create_form_requires_a_slug_message_id():
    form = MappingCreateForm(
        {"message_id": "Welcome mail!", "template_file": "a.html", "subject": "Hi"}
    )
    assert not form.is_valid()
    assert set(form.errors) == {"message_id"}


def test_create_form_has_no_version_and_keeps_the_fields():
    form = MappingCreateForm(
        {"message_id": "welcome_1", "template_file": "a.html", "subject": "Hi"}
    )
    assert form.is_valid(), form.errors
    assert form.cleaned_data == {
        "message_id": "welcome_1",
        "template_file": "a.html",
        "subject": "Hi",
        "priority": None,  # not posted: the service keeps the current one (normal when new)
        "category": None,  # not posted either: kept (uncategorised when new)
    }


@pytest.mark.parametrize("version", ["", "-1", "two"])
def test_edit_form_requires_the_version_it_was_opened_at(version):
    form = MappingEditForm({"template_file": "a.html", "subject": "Hi", "version": version})
    assert not form.is_valid()
    assert set(form.errors) == {"version"}


def preview_form(organization: str, context: object, other: str = "") -> PreviewForm:
    text = context if isinstance(context, str) else json.dumps(context)
    data = {"organization": organization, "other_organization": other, "context": text}
    return PreviewForm(data, override_orgs=("367", "12"))


def test_branded_choice_sets_organization_id_in_the_context():
    form = preview_form("367", {"datasetName": "Atlas", "organizationId": 1})
    assert form.is_valid(), form.errors
    assert form.cleaned_data["organization_id"] == "367"
    assert form.cleaned_data["context"] == {"datasetName": "Atlas", "organizationId": 367}


def test_default_choice_removes_organization_id_so_the_default_is_what_is_sent():
    form = preview_form("default", {"datasetName": "Atlas", "organizationId": 367})
    assert form.is_valid(), form.errors
    assert form.cleaned_data["organization_id"] is None
    assert form.cleaned_data["context"] == {"datasetName": "Atlas"}


def test_another_organization_takes_the_free_id():
    form = preview_form("other", {}, other=" 999 ")
    assert form.is_valid(), form.errors
    assert form.cleaned_data["organization_id"] == "999"
    assert form.cleaned_data["context"] == {"organizationId": 999}


@pytest.mark.parametrize("other", ["", "O367", "12a", "٣"])
def test_another_organization_must_be_digits(other):
    form = preview_form("other", {}, other=other)
    assert not form.is_valid()
    assert set(form.errors) == {"other_organization"}


def test_organizations_outside_the_choices_are_refused():
    assert not preview_form("5", {}).is_valid()


@pytest.mark.parametrize(
    ("text", "message"),
    [("{not json", "Not valid JSON"), ("[1, 2]", "JSON object"), ('{"a": NaN}', "Not valid JSON")],
)
def test_context_must_be_a_json_object(text, message):
    form = preview_form("default", text)
    assert not form.is_valid()
    assert message in form.errors["context"][0]


def test_manifest_is_read_from_settings(settings, tmp_path):
    path = tmp_path / "vars.json"
    path.write_text(json.dumps({"welcome": ["name", "host"]}))
    settings.TEMPLATE_VARIABLES_PATH = path
    assert template_manifest(adapters=container.current()) == {"welcome": ["name", "host"]}


def test_shipped_manifest_lists_the_sample_templates():
    assert template_manifest(adapters=container.current())["dataset-publication-accepted"] == [
        "datasetName",
        "date",
        "reviewerName",
    ]


@pytest.mark.parametrize("content", [None, "{broken", "[1]"])
def test_unreadable_manifest_is_empty_not_an_error(settings, tmp_path, content):
    path = tmp_path / "vars.json"
    if content is not None:
        path.write_text(content)
    settings.TEMPLATE_VARIABLES_PATH = path
    assert template_manifest(adapters=container.current()) == {}


def test_sample_context_gives_every_name_a_plausible_value():
    sample = sample_context(["ownerEmailAddress", "date", "datasetName", "host"])
    assert list(sample) == ["datasetName", "date", "host", "ownerEmailAddress"]
    assert sample["ownerEmailAddress"] == "someone@example.com"
    assert sample["date"] == "2024-05-01"
    assert sample["host"] == "app.pennsieve.io"  # templates write "https://{{.host}}/…"
    assert sample["datasetName"] == "Sample datasetName"


def test_variable_report_compares_manifest_context_and_templates():
    report = variable_report(
        expected=["datasetName", "date", "reviewerName"],
        given=["datasetName", "color", "organizationId", "subject"],
        used=["datasetName", "reviewerName", "organizationName"],
        rendered_empty=["reviewerName", "organizationName"],
    )
    assert report.in_manifest
    assert report.expected_missing == ("date", "reviewerName")
    assert report.unused == ("color",)  # organizationId and subject mean something to the consumer
    assert report.unknown == ("organizationName",)
    assert report.rendered_empty == ("organizationName", "reviewerName")
    assert not report.is_clean


def test_variable_report_without_a_manifest_entry_reports_no_unknowns():
    report = variable_report(expected=None, given=["a"], used=["a", "b"])
    assert not report.in_manifest
    assert report.unknown == () and report.expected_missing == ()


def test_variable_report_with_an_empty_manifest_entry_flags_every_used_name():
    report = variable_report(expected=[], given=[], used=["a"])
    assert report.unknown == ("a",)


def test_clean_report():
    report = variable_report(expected=["a"], given=["a"], used=["a"])
    assert report.is_clean
