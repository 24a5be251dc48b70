"""Settings for the test suite: emailops.settings on the local profile.

pytest-django imports the settings before any conftest runs, so this is the place to choose the
profile: DJANGO_DEBUG=true allows the development secret key and plain http (the production
defaults would redirect the test client to https). pytest-django still runs each test with
DEBUG off. Subprocesses the tests start (e2e) inherit the variable.
"""

import os
import tempfile
import uuid

os.environ["DJANGO_DEBUG"] = "true"
# Webhook events are on by default; the suite's processes (and the e2e children, who inherit this)
# emit none unless a test asks, or every send would leave a task in a shared Redis queue that no
# worker reads. The default itself is tested in a fresh process (tests/test_capabilities.py).
os.environ.setdefault("WEBHOOK_OUTBOX", "off")

from emailops.settings import *  # noqa: F403

# Tests reset moto's tables between cases; a Redis set of suppressed addresses would outlive them.
# The tests of the index give it a key of their own.
SUPPRESSION_INDEX_REDIS_KEY = ""
# The draft check scores every render with spamd (~0.4 s each): only the tests of the spam score
# point it at one (tests/console/test_templates_lint.py).
SPAMD_ADDRESS = ""
# The send-rate bucket and the reputation flags are keyed under this name: test processes running
# side by side (pytest-xdist) must not pace or pause each other.
SES_RATE_REDIS_KEY = f"emailops-test:{uuid.uuid4().hex}:ses-rate"

# SQLite: a file, not pytest-django's in-memory database. Tests that run a Celery worker thread
# write from two connections at once; the in-memory database (one shared cache) answers "database
# table is locked" at once, a file makes the second writer wait its turn (the busy timeout of emailops.settings).
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":  # noqa: F405
    DATABASES["default"]["TEST"] = {  # noqa: F405
        "NAME": os.path.join(
            tempfile.gettempdir(), f"emailops-test-{uuid.uuid4().hex[:12]}.sqlite3"
        )
    }
