"""The template check's unsubscribe warnings: categorised, non-critical mail needs a visible
unsubscribe link (``unsubscribeUrl``) and PUBLIC_BASE_URL to make it from."""

from __future__ import annotations

from dataclasses import replace

import pytest

from emailops import container
from emailops.core.template_check import unsubscribe_findings
from templates_admin.drafts.check import check_sources

pytestmark = pytest.mark.django_db

MESSAGE = "embargo-access-requested"  # categorised (dataset-activity) in the samples
KEY = "default/embargo-access-requested.html"
WITH_LINK = '<p>Hi</p><p><a href="{{ unsubscribeUrl }}">Unsubscribe</a></p>'


def codes(findings) -> set[str]:
    return {f.code for f in findings if f.code.startswith("unsubscribe")}


def test_the_engine_warns_without_the_variable_and_without_a_base_url():
    found = unsubscribe_findings(key=KEY, organization=None, variables={"x"}, base_url_set=False)
    assert {f.code for f in found} == {"unsubscribe-link", "unsubscribe-base-url"}
    assert all(f.severity == "warning" for f in found)
    assert (
        unsubscribe_findings(
            key=KEY, organization=None, variables={"unsubscribeUrl"}, base_url_set=True
        )
        == []
    )


def test_a_categorised_template_without_a_link_is_warned(samples, settings):
    settings.PUBLIC_BASE_URL = "https://email.example.org"
    found = check_sources(
        message_id=MESSAGE,
        sources={KEY: "<p>Hi {{ userName }}</p>"},
        subject="Hi",
        adapters=container.current(),
    )
    assert codes(found) == {"unsubscribe-link"}
    assert (
        codes(
            check_sources(
                message_id=MESSAGE,
                sources={KEY: WITH_LINK},
                subject="Hi",
                adapters=container.current(),
            )
        )
        == set()
    )


def test_an_unset_base_url_is_warned(samples, settings):
    settings.PUBLIC_BASE_URL = ""
    found = check_sources(
        message_id=MESSAGE, sources={KEY: WITH_LINK}, subject="Hi", adapters=container.current()
    )
    assert codes(found) == {"unsubscribe-base-url"}


def test_uncategorised_and_critical_mail_need_no_link(samples, settings):
    settings.PUBLIC_BASE_URL = ""
    accepted = "default/dataset-publication-accepted.html"
    found = check_sources(
        message_id="dataset-publication-accepted",
        sources={accepted: "<p>Hi</p>"},
        subject="Hi",
        adapters=container.current(),
    )
    assert codes(found) == set()
    store = container.current().mapping_store
    mapping = store.get_mapping(MESSAGE)
    store.save_mapping(replace(mapping, priority="critical"), expected_version=mapping.version)
    found = check_sources(
        message_id=MESSAGE, sources={KEY: "<p>Hi</p>"}, subject="Hi", adapters=container.current()
    )
    assert codes(found) == set()
