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
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
