#!/usr/bin/env python
"""Django's command-line utility for emailops."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "emailops.settings")
    if sys.argv[1:2] == ["devstack"]:
        # The local stack is development by definition: DEBUG on (the dev secret key, plain http)
        # unless the environment says otherwise. Its child processes get the same from devstack.
        os.environ.setdefault("DJANGO_DEBUG", "true")
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        from django.conf import settings

        settings._setup()  # reads the environment: a missing setting stops here, in one line
    except ImproperlyConfigured as exc:
        sys.exit(environment_missing(sys.argv[1:2], exc))
    execute_from_command_line(sys.argv)


def environment_missing(command: list[str], exc: Exception) -> str:
    """One line instead of a traceback: a command run outside the stack's environment."""
    reason = " ".join(str(exc).split()).rstrip(".")
    name = f"manage.py {command[0]}" if command else "manage.py"
    return (
        f"{name}: {reason}. Run `source .devstack.env` first (`make run` writes it), or set "
        "DJANGO_SECRET_KEY (or DJANGO_DEBUG=true on a development machine) and the AWS "
        "settings: see docs/configuration.md."
    )


if __name__ == "__main__":
    main()
