"""Template drafts, the check, publish, history and rollback (issue 16).

Published templates stay where the Go service and the consumer read them (``default/{file}``,
``custom/O{org}/{file}``); drafts and the exact bytes of every version live under ``_emailops/`` in
the same bucket (see ``layout``), and the Django DB keeps their records (TemplateDraft,
TemplateVersion). Services write, selectors read; the console pages and ``manage.py templates``
are thin layers over them.
"""
