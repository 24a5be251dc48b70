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
        parser.add_argument(
            "--reset-password",
            action="store_true",
            help="give an existing user a new password (without it their password is kept)",
        )

    def handle(self, *args, username, email, group, superuser, password, reset_password, **options):
        groups = []
        for name in group:
            try:
                groups.append(Group.objects.get(name=name))
            except Group.DoesNotExist:
                known = ", ".join(Group.objects.values_list("name", flat=True)) or "none"
                raise CommandError(f"no group {name!r} (known: {known})") from None
        user = get_user_model().objects.filter(username=username).first()
        if user is not None and password and not reset_password:
            raise CommandError(f"{username} exists: add --reset-password to change their password")
        created = user is None
        if created:
            user = get_user_model()(username=username)
        user.email = email or user.email
        user.is_staff = True
        user.is_superuser = user.is_superuser or superuser
        said = "password unchanged (--reset-password sets a new one)"
        if created or reset_password:
            password = password or secrets.token_urlsafe(12)
            user.set_password(password)
            said = f"password: {password}"
        user.save()
        user.groups.add(*groups)
        what = "created" if created else "updated"
        names = ", ".join(user.groups.order_by("name").values_list("name", flat=True)) or "none"
        self.stdout.write(f"{what} {username} (groups: {names}) {said}")
