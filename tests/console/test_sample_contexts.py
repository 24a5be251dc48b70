"""Sample contexts fit the templates: a host-like name gets a host, a URL-like name a whole URL,
a node id its kind; no sample link is ever "https://https://"; the enqueue line `make run` prints
renders added-to-team without a missing variable."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from emailops import container
from templates_admin.mappings.selectors import preview_initial_context
from templates_admin.mappings.variables import sample_context, sample_value, template_manifest
from worker.management.commands.devstack import TRY_CONTEXT, try_it

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("host", "app.pennsieve.io"),
        ("discoverHost", "discover.pennsieve.io"),
        ("AppURL", "https://app.pennsieve.io"),
        ("organizationNodeId", "N:organization:c0ffee00-1234-4abc-9def-000000000001"),
        ("datasetNodeId", "N:dataset:c0ffee00-1234-4abc-9def-000000000001"),
        ("WorkspaceNodeId", "N:workspace:c0ffee00-1234-4abc-9def-000000000001"),
    ],
)
def test_a_sample_value_fits_its_name(name, value):
    assert sample_value(name) == value


def test_no_sample_template_renders_a_doubled_scheme(samples):
    composer = container.current().composer()
    rendered = 0
    for message_id in sorted(template_manifest(adapters=container.current())):
        mapping = container.current().mapping_store.get_mapping(message_id)
        if mapping is None:
            continue
        context = preview_initial_context(mapping=mapping, adapters=container.current())
        composed = composer.compose(message_id, context, None)
        assert "https://https://" not in composed.html, message_id
        assert "://." not in composed.html and "https:///" not in composed.html, message_id
        rendered += 1
    assert rendered >= 3


def test_the_printed_enqueue_line_renders_without_a_missing_variable(samples):
    line = try_it(Path(".devstack.env"), Path.cwd()).strip().splitlines()[-1]
    context = json.loads(shlex.split(line)[shlex.split(line).index("--context") + 1])
    assert context == TRY_CONTEXT
    assert set(template_manifest(adapters=container.current())["added-to-team"]) <= set(context)

    composed = container.current().composer().compose("added-to-team", context, None)

    assert composed.missing == ()
    assert 'href="https://app.pennsieve.io/N:organization:' in composed.html


def test_a_sample_context_covers_the_manifest_names():
    names = template_manifest(adapters=container.current())["added-to-organization"]
    assert set(sample_context(names)) == set(names)
