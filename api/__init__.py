"""The synchronous send API (``/api/v1/``), its producer tokens, and the journal-read audit.

- ``endpoints``: the django-ninja API: thin, it calls ``sending`` and the services.
- ``sending``: one request through the consumer's own pipeline, inline.
- ``services``: tokens (create, revoke, authenticate) and their journal reads audited.
- ``selectors``: a token's own journal rows, through the manifest's allow-list.
- each token's emails-per-minute: a fixed window in Redis (``emailops.redis.token_rate``).
"""
