"""The commands an operator (and the end-to-end tests) run many times start without Django's
system checks: those import the URLconf, the console and the API, for 0.4 s of every run.
``manage.py check`` still runs them (CI, the deploy)."""

from __future__ import annotations

import pytest
from django.core.management import load_command_class

QUICK_COMMANDS = [
    ("templates_admin", "templates"),
    ("templates_admin", "reputation"),
    ("templates_admin", "webhooks"),
    ("worker", "bootstrap_aws"),
    ("worker", "migrate_suppression_table"),
    ("worker", "load_templates"),
    ("worker", "load_template_mappings"),
    ("worker", "consume_emails"),
    ("worker", "consume_ses_events"),
]


@pytest.mark.parametrize(("app", "name"), QUICK_COMMANDS, ids=[n for _, n in QUICK_COMMANDS])
def test_the_command_starts_without_the_system_checks(app, name):
    assert load_command_class(app, name).requires_system_checks == []
