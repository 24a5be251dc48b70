"""The real services CI promises: the console's database is the one DATABASE_URL names."""

from __future__ import annotations

import os

import pytest
from django.db import connection

from templates_admin.models import MappingChange
from tests.conftest import skip_or_fail


@pytest.mark.django_db
def test_console_database_is_postgresql_when_configured():
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        pytest.skip("DATABASE_URL is not PostgreSQL here (CI runs the whole suite on PostgreSQL)")
    if connection.vendor != "postgresql":
        skip_or_fail(f"DATABASE_URL names PostgreSQL but Django is on {connection.vendor}")
    change = MappingChange.objects.create(
        message_id="m", action="update", before={"Subject": "a"}, after={"Subject": "b"}
    )
    assert MappingChange.objects.get(pk=change.pk, after__Subject="b").before == {"Subject": "a"}
