"""Gunicorn's logger class in the image (``--logger-class``, docker/Dockerfile): gunicorn's own,
with ``RedactUnsubscribeTokens`` on its access and error logs, so no line names an unsubscribe
token (the request line, the path, a Referer, an invalid request's text), whatever the access
log format says. Loaded by gunicorn only: nothing else imports gunicorn.
"""

from __future__ import annotations

from typing import Any

from gunicorn.glogging import Logger

from emailops.logging import RedactUnsubscribeTokens

__all__ = ["RedactingLogger"]


class RedactingLogger(Logger):
    def setup(self, cfg: Any) -> None:
        super().setup(cfg)
        # setup runs again on a configuration reload (SIGHUP): one filter per log, not one a run.
        for log in (self.access_log, self.error_log):
            if not any(isinstance(f, RedactUnsubscribeTokens) for f in log.filters):
                log.addFilter(RedactUnsubscribeTokens())
