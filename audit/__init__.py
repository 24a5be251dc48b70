"""The trails of who did what: the read audit (every read of personal data, through any door) and
the retention that prunes every audit trail after AUDIT_RETENTION_DAYS. Below the console, the API
and the worker: each of them records here; the console shows the trail."""
