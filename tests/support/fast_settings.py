"""emailops.settings with two fixed waits shortened, for the real processes of the fault suite and
the reputation end-to-end test (``DJANGO_SETTINGS_MODULE=tests.support.fast_settings`` in their
environment). Those values are constants now, not variables (emailops/settings_catalog.py's
FIXED), so a child process cannot be handed them through its environment; tests in this process
set the Django setting instead."""

from emailops.settings import *  # noqa: F403

RETRY_BACKOFF_CAP_SECONDS = 2  # with RETRY_BACKOFF_BASE_SECONDS=1: a retry within seconds
REPUTATION_PAUSE_WAIT_SECONDS = 2  # a paused record is back within seconds
