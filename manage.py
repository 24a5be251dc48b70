#!/usr/bin/env python
"""Django's command-line utility for emailops.

A setting missing or malformed, or a database not made yet, stops any command in one line that
leads with what to do (``refusal``), never a traceback: ``--traceback`` still shows one."""

import os
import re
import sys

SOURCE_FIRST = "run `source .devstack.env` first (`make run` writes it)"


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "emailops.settings")
    if sys.argv[1:2] == ["devstack"]:
        # The local stack is development by definition: DEBUG on (the dev secret key, plain http)
        # unless the environment says otherwise. Its child processes get the same from devstack.
        os.environ.setdefault("DJANGO_DEBUG", "true")
    from django.core.exceptions import ImproperlyConfigured

    try:
        from django.conf import settings

        settings._setup()  # reads the environment: a missing setting stops here, in one line
    except ImproperlyConfigured as exc:
        sys.exit(environment_missing(sys.argv[1:2], exc))
    run(sys.argv)


def run(argv: list[str]) -> None:
    """Run one command; a setting it finds missing or malformed as it runs ends it in one line."""
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line
    from django.db import DatabaseError

    try:
        execute_from_command_line(argv)
    except (ImproperlyConfigured, DatabaseError) as exc:
        if "--traceback" in argv:
            raise
        sys.exit(refusal(argv[1:2], exc))


def _name(command: list[str]) -> str:
    return f"manage.py {command[0]}" if command else "manage.py"


def _first_sentence(exc: Exception) -> str:
    text = " ".join(str(exc).split())
    return re.split(r"(?<!e\.g)(?<!i\.e)\. ", text)[0].rstrip(".")


def refusal(command: list[str], exc: Exception) -> str:
    """What to do, then what was wrong, in one line."""
    from django.db import DatabaseError

    reason = _first_sentence(exc)
    if isinstance(exc, DatabaseError):
        return (
            f"{_name(command)}: {SOURCE_FIRST}, or set DATABASE_URL and run `manage.py migrate` "
            f"(the console's database: {reason})."
        )
    reason = reason.removesuffix(" (see .env.example)")
    return (
        f"{_name(command)}: {SOURCE_FIRST}, or fix the setting (docs/configuration.md): {reason}."
    )


def environment_missing(command: list[str], exc: Exception) -> str:
    """One line instead of a traceback: a command run outside the stack's environment."""
    from emailops.settings_catalog import SETTINGS

    if not any(s.name in os.environ for s in SETTINGS):
        return (
            f"{_name(command)}: {SOURCE_FIRST}, or set DJANGO_SECRET_KEY (DJANGO_DEBUG=true on "
            "a development machine) and the AWS settings: see docs/configuration.md."
        )
    return refusal(command, exc)


if __name__ == "__main__":
    main()
