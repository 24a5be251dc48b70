"""Settings for the test suite: emailops.settings on the local profile.

pytest-django imports the settings before any conftest runs, so this is the place to choose the
profile: DJANGO_DEBUG=true allows the development secret key and plain http (the production
defaults would redirect the test client to https). pytest-django still runs each test with
DEBUG off. Subprocesses the tests start (e2e) inherit the variable.
"""

import os

os.environ["DJANGO_DEBUG"] = "true"

from emailops.settings import *  # noqa: F403

# SQLite's in-memory test database locks whole tables between connections and fails at once
# ("database table is locked") when a Celery worker thread writes beside the test; a file with a
# busy timeout makes such writers wait their turn instead.
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):  # noqa: F405
    DATABASES["default"]["TEST"] = {"NAME": str(BASE_DIR / ".test-db.sqlite3")}  # noqa: F405
    DATABASES["default"].setdefault("OPTIONS", {})["timeout"] = 20  # noqa: F405
