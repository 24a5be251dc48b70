"""Email categories on the mapping page: their definitions, the Category select, the audit, the
note on critical mail, the shared label lookup and the mapping loader's Category."""

from __future__ import annotations

import io
import json

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command

from emailops import container
from templates_admin.categories import category_choices, category_label
from templates_admin.display import category_label as display_category_label
from templates_admin.mappings import services
from templates_admin.models import CategoryDefinition, MappingChange

pytestmark = pytest.mark.django_db

ACCEPTED = "dataset-publication-accepted"
ACCEPTED_FILE = "dataset-publication-accepted.html"
BASE = "/admin/templates_admin/templatemappingpage/"
PAGE = f"{BASE}mapping/{ACCEPTED}/"
CATEGORIES = "/admin/templates_admin/categorydefinition/"


@pytest.fixture
def activity(db):
    return CategoryDefinition.objects.create(
        slug="dataset-activity", label="Activity on datasets you follow"
    )


@pytest.fixture
def owner_client(client, owner):
    client.force_login(owner)
    return client


def stored(message_id: str = ACCEPTED):
    return container.current().mapping_store.get_mapping(message_id)


def edit(**fields) -> dict:
    return {"template_file": ACCEPTED_FILE, "subject": "Accepted", "version": "1", **fields}


def test_category_label_is_the_definition_or_the_slug(activity):
    assert category_label("dataset-activity") == "Activity on datasets you follow"
    assert category_label("never-defined") == "never-defined"
    assert category_label("") == ""
    assert display_category_label is category_label  # one lookup, offered where labels are shown


def test_the_choices_start_uncategorised_and_keep_an_undefined_stored_one(activity):
    choices = category_choices(current="legacy")
    assert choices[0][0] == ""
    assert [slug for slug, _ in choices[1:]] == ["dataset-activity", "legacy"]
    # each named once: it read "legacy (not defined in the console) (legacy)"
    assert choices[1:] == [
        ("dataset-activity", "Activity on datasets you follow (dataset-activity)"),
        ("legacy", "legacy (not defined in the console)"),
    ]


def test_template_owners_define_categories_in_the_admin(owner_client):
    response = owner_client.post(
        f"{CATEGORIES}add/",
        {"slug": "newsletter", "label": "Our newsletter", "description": "Monthly news"},
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    category = CategoryDefinition.objects.get(slug="newsletter")
    assert category_label("newsletter") == "Our newsletter"
    # The slug is fixed once made: the change form shows it read only.
    page = owner_client.get(f"{CATEGORIES}{category.pk}/change/").content.decode()
    assert 'name="slug"' not in page and "newsletter" in page


def test_support_cannot_define_categories(client, make_user):
    client.force_login(make_user("Support"))
    assert client.get(f"{CATEGORIES}add/").status_code == 403


def test_the_mapping_page_offers_the_categories_and_saves_one_audited(
    owner_client, samples, activity
):
    page = owner_client.get(PAGE).content.decode()
    assert 'name="category"' in page and "Activity on datasets you follow" in page

    response = owner_client.post(PAGE, edit(category="dataset-activity", priority="bulk"))

    assert response.status_code == 302
    assert stored().category == "dataset-activity"
    change = MappingChange.objects.filter(message_id=ACCEPTED).first()
    assert change.before["category"] == "" and change.after["category"] == "dataset-activity"
    history = owner_client.get(PAGE).content.decode()
    history = history[history.index('id="history"') :]
    assert "category" in history and "dataset-activity" in history


def test_a_blank_category_makes_it_uncategorised_and_an_absent_one_keeps_it(
    owner_client, samples, activity
):
    owner_client.post(PAGE, edit(category="dataset-activity"))
    owner_client.post(PAGE, edit(subject="Kept", version="2"))  # no category field posted
    assert (stored().subject, stored().category) == ("Kept", "dataset-activity")
    owner_client.post(PAGE, edit(subject="Kept", version="3", category=""))
    assert stored().category == ""


def test_an_undefined_category_is_refused_by_its_field(owner_client, samples, activity):
    response = owner_client.post(PAGE, edit(category="made-up"))
    assert response.status_code == 200
    assert stored().category == ""
    with pytest.raises(ValidationError) as refused:
        services.mapping_update(
            message_id=ACCEPTED,
            template_file=ACCEPTED_FILE,
            subject="Accepted",
            expected_version=1,
            user=None,
            category="made-up",
            adapters=container.current(),
        )
    assert "category" in refused.value.message_dict


def test_a_critical_categorised_mapping_is_saved_and_the_page_says_it_is_never_held(
    owner_client, samples, activity
):
    response = owner_client.post(PAGE, edit(category="dataset-activity", priority="critical"))
    assert response.status_code == 302
    assert (stored().priority, stored().category) == ("critical", "dataset-activity")
    page = owner_client.get(PAGE).content.decode()
    assert "critical mail is never unsubscribable" in page
    assert 'id="critical-category-note"' in page


def test_create_takes_a_category(owner_client, samples, activity):
    response = owner_client.post(
        f"{BASE}add/",
        {
            "message_id": "team-news",
            "template_file": "added-to-team.html",
            "subject": "News of {{.teamName}}",
            "priority": "bulk",
            "category": "dataset-activity",
        },
    )
    assert response.status_code == 302
    assert stored("team-news").category == "dataset-activity"


def test_the_loader_and_the_samples_carry_categories(samples, tmp_path):
    assert stored("embargo-access-requested").category == "dataset-activity"
    assert stored(ACCEPTED).category == ""
    rows = [
        {
            "MessageId": "digest",
            "TemplateFile": "added-to-team.html",
            "Subject": "Digest",
            "Priority": "bulk",
            "Category": "weekly-digest",
        }
    ]
    path = tmp_path / "mappings.json"
    path.write_text(json.dumps(rows))
    call_command("load_template_mappings", str(path), stdout=io.StringIO())
    assert (stored("digest").priority, stored("digest").category) == ("bulk", "weekly-digest")

    path.write_text(json.dumps([rows[0] | {"Category": "Not A Slug"}]))
    with pytest.raises(CommandError, match="not a slug"):
        call_command("load_template_mappings", str(path), stdout=io.StringIO())
    path.write_text(json.dumps([rows[0] | {"Priority": "urgent"}]))
    with pytest.raises(CommandError, match="critical, normal or bulk"):
        call_command("load_template_mappings", str(path), stdout=io.StringIO())
