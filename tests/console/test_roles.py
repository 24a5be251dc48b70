"""The console's groups (data migration) and the onboarding command."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management import CommandError, call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from templates_admin import roles
from tests.conftest import ensure_console_groups


@pytest.mark.django_db(transaction=True)
def test_the_migrations_create_each_group_with_exactly_its_permissions():
    # Run them here: transactional tests elsewhere flush the tables, the migrations' rows included,
    # and pytest-xdist does not fix which test files come before this one.
    executor = MigrationExecutor(connection)
    executor.migrate([("templates_admin", "0001_initial")])
    assert not Group.objects.filter(name__in=roles.GROUP_PERMISSIONS).exists()
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())

    for name, permissions in roles.GROUP_PERMISSIONS.items():
        group = Group.objects.get(name=name)
        granted = {f"{p.content_type.app_label}.{p.codename}" for p in group.permissions.all()}
        assert granted == set(permissions), name


@pytest.mark.django_db
def test_create_console_user_onboards_someone_into_a_group():
    ensure_console_groups()
    out = io.StringIO()
    call_command(
        "create_console_user", "ann", "--group", "Support", "--email", "ann@example.com", stdout=out
    )
    user = get_user_model().objects.get(username="ann")
    assert user.is_staff and not user.is_superuser and user.email == "ann@example.com"
    assert user.has_perm(roles.SEARCH_JOURNAL) and not user.has_perm(roles.RESEND_EMAIL)
    password = out.getvalue().rsplit("password: ", 1)[1].strip()
    assert user.check_password(password)


@pytest.mark.django_db
def test_create_console_user_refuses_an_unknown_group_and_creates_nobody():
    ensure_console_groups()
    with pytest.raises(CommandError, match=r"no group 'Admins'.*Support"):
        call_command("create_console_user", "bob", "--group", "Admins")
    assert not get_user_model().objects.filter(username="bob").exists()


@pytest.mark.django_db
def test_create_console_user_again_keeps_the_password_unless_asked_to_reset_it():
    ensure_console_groups()
    call_command("create_console_user", "sam", "--group", "Support", "--password=first-pass-1")
    out = io.StringIO()
    call_command("create_console_user", "sam", "--group", "Support leads", stdout=out)

    sam = get_user_model().objects.get(username="sam")
    assert sam.check_password("first-pass-1")
    assert out.getvalue().strip() == (
        "updated sam (groups: Support, Support leads) password unchanged "
        "(--reset-password sets a new one)"
    )
    with pytest.raises(CommandError, match="sam exists: add --reset-password"):
        call_command("create_console_user", "sam", "--password=second-pass-2")
    assert get_user_model().objects.get(username="sam").check_password("first-pass-1")

    call_command("create_console_user", "sam", "--reset-password", "--password=third-pass-3")
    assert get_user_model().objects.get(username="sam").check_password("third-pass-3")
