"""Fixtures shared by the console's template tests (drafts, mappings, publishing)."""

from __future__ import annotations

import pytest


@pytest.fixture
def samples(aws):
    """The moto stack with the sample mappings and templates loaded."""
    aws.load_samples()
    return aws


@pytest.fixture
def owner(make_user):
    return make_user("Template owners")
