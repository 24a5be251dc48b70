"""The periodic checks Celery beat runs and their last readings (``OpsReading``): the dead-letter
depth and stuck claims here, and the checks other apps register (``checks.periodic``). Below the
console, which shows the readings (the dashboard, the index banner)."""
