"""python manage.py create_console_user NAME --group "Support" — onboard someone to the console."""

from __future__ import annotations

import secrets

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = "Create (or update) a staff user and put them in console groups; prints the password."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--email", default="", help="their address (send-test goes there)")
        parser.add_argument(
            "--group",
            action="append",
            default=[],
            help='a group, e.g. "Support", "Template owners", "Support leads"',
        )
        parser.add_argument("--superuser", action="store_true")
        parser.add_argument("--password", default="", help="default: a random one, printed")

    def handle(self, *args, username, email, group, superuser, password, **options):
        groups = []
        for name in group:
            try:
                groups.append(Group.objects.get(name=name))
            except Group.DoesNotExist:
                known = ", ".join(Group.objects.values_list("name", flat=True)) or "none"
                raise CommandError(f"no group {name!r} (known: {known})") from None
        user, created = get_user_model().objects.get_or_create(username=username)
        password = password or secrets.token_urlsafe(12)
        user.email = email or user.email
        user.is_staff = True
        user.is_superuser = user.is_superuser or superuser
        user.set_password(password)
        user.save()
        user.groups.add(*groups)
        what = "created" if created else "updated"
        self.stdout.write(
            f"{what} {username} (groups: {', '.join(group) or 'none'}) password: {password}"
        )
