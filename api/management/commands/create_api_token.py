"""python manage.py create_api_token NAME [--rate N] — a producer's token for the send API.

The token is printed once, alone on the last line (so `| tail -n 1` captures it); only its hash
is stored.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from api.services import api_token_create


class Command(BaseCommand):
    help = "Create an API token for a producer; prints it once, on the last line."

    def add_arguments(self, parser):
        parser.add_argument("name", help="the producer, e.g. publishing-service")
        parser.add_argument(
            "--rate",
            type=int,
            default=60,
            help="emails per minute this token may send (0: no limit; default 60)",
        )

    def handle(self, *args, name: str, rate: int, **options) -> None:
        if not name.strip():
            raise CommandError("NAME must not be empty")
        if rate < 0:
            raise CommandError("--rate must be 0 (no limit) or more")
        new = api_token_create(name=name.strip(), emails_per_minute=rate)
        limit = f"{rate} emails per minute" if rate else "no rate limit"
        self.stdout.write(
            f"Created API token {new.token.prefix}… for {new.token.name} ({limit}). "
            "It is shown once, below; only its hash is stored."
        )
        self.stdout.write(new.plaintext)
