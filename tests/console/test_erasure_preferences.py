"""Erasure removes the address's preferences too, unless asked to keep them, and says how many."""

from __future__ import annotations

import pytest

from emailops import container
from emailops.core.preferences import Preference
from jobs.engine import job_run
from jobs.models import Job
from templates_admin.journal.erasure import recipient_erase_preview
from tests.fake_preferences import install_fake_preferences
from tests.journal_factory import BASE_TIME

pytestmark = pytest.mark.django_db

BASE = "/admin/templates_admin/operationspage/"
DANA = "dana@example.com"


@pytest.fixture
def store(aws):
    store = install_fake_preferences()
    store.set(Preference(DANA, "dataset-activity", False, "one-click", BASE_TIME))
    store.set(Preference(DANA, "newsletter", False, "page", BASE_TIME))
    store.set(Preference("eve@example.com", "newsletter", False, "page", BASE_TIME))
    return store


def erase(client, make_user, django_capture_on_commit_callbacks, **extra) -> Job:
    client.force_login(make_user("Support leads"))
    form = {"address": "Dana@Example.com", "confirm": DANA, "reason": "ticket 12"} | extra
    with django_capture_on_commit_callbacks():
        assert client.post(BASE + "erase-recipient/", form).status_code == 302
    job = Job.objects.get(kind=Job.Kind.ERASE_RECIPIENT)
    job = job_run(job_id=job.pk, adapters=container.current())
    assert job.state == Job.State.SUCCEEDED, job.error
    return job


def test_erasure_removes_the_preferences_and_reports_the_count(
    store, client, make_user, django_capture_on_commit_callbacks
):
    assert recipient_erase_preview(adapters=container.current(), address=DANA).preferences == 2
    job = erase(client, make_user, django_capture_on_commit_callbacks)
    assert store.of_address(DANA) == []
    assert len(store.of_address("eve@example.com")) == 1
    assert job.result["preferences"] == 2 and job.result["preferences_kept"] is False
    assert "removed 2 preference(s) (categories unsubscribed from)" in job.result["lines"]


def test_keep_preferences_keeps_them(store, client, make_user, django_capture_on_commit_callbacks):
    job = erase(client, make_user, django_capture_on_commit_callbacks, keep_preferences="on")
    # Kept under the tombstone's name, where the consumers look an erased recipient up: the
    # address itself is no longer in the table.
    assert store.of_address(DANA) == []
    kept = container.current().tombstones.name(DANA)
    assert kept.startswith("erased:")
    assert {p.category for p in store.of_address(kept)} == {"dataset-activity", "newsletter"}
    assert job.inputs["keepPreferences"] is True
    assert "kept its 2 preference(s), as asked" in job.result["lines"]
