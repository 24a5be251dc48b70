"""SES's own view of the account's reputation, shown beside ours (SES computes over its own
representative volume): sesv2 ``GetAccount`` and CloudWatch's ``Reputation.*`` metrics.

Parts SES (or moto) cannot give are left out with a readable note; nothing here raises.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

__all__ = ["SesAccountView"]

_METRICS = {"bounce_rate": "Reputation.BounceRate", "complaint_rate": "Reputation.ComplaintRate"}


def _problem(exc: Exception) -> str:
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        return f"{error.get('Code', 'error')}: {error.get('Message', '')}".strip()
    return f"{type(exc).__name__}: {exc}"


class SesAccountView:
    def __init__(self, sesv2: Any, cloudwatch: Any) -> None:
        self.sesv2 = sesv2
        self.cloudwatch = cloudwatch

    def view(self) -> dict[str, Any]:
        """``enforcement_status`` (HEALTHY | PROBATION | SHUTDOWN), ``sending_enabled``,
        ``max_24_hour_send``, ``max_send_rate``, ``sent_last_24_hours``, ``bounce_rate`` and
        ``complaint_rate`` (fractions, CloudWatch) and ``notes``; ``{"error": ...}`` when SES
        could not be read at all."""
        try:
            account = self.sesv2.get_account()
        except (ClientError, BotoCoreError, NotImplementedError) as exc:
            return {"error": f"sesv2 GetAccount failed: {_problem(exc)}"}
        quota = account.get("SendQuota") or {}
        view: dict[str, Any] = {
            "enforcement_status": account.get("EnforcementStatus", ""),
            "sending_enabled": bool(account.get("SendingEnabled", True)),
            "production_access": bool(account.get("ProductionAccessEnabled", False)),
            "max_24_hour_send": quota.get("Max24HourSend"),
            "max_send_rate": quota.get("MaxSendRate"),
            "sent_last_24_hours": quota.get("SentLast24Hours"),
            "notes": [],
        }
        end = datetime.now(UTC)
        for name, metric in _METRICS.items():
            try:
                points = self.cloudwatch.get_metric_statistics(
                    Namespace="AWS/SES",
                    MetricName=metric,
                    StartTime=end - timedelta(hours=6),
                    EndTime=end,
                    Period=3600,
                    Statistics=["Average"],
                ).get("Datapoints", [])
            except (ClientError, BotoCoreError, NotImplementedError) as exc:
                view[name] = None
                view["notes"].append(f"CloudWatch {metric} unavailable: {_problem(exc)}")
                continue
            if points:
                latest = max(points, key=lambda p: p["Timestamp"])
                view[name] = float(latest["Average"])
            else:
                view[name] = None
                view["notes"].append(
                    f"CloudWatch {metric}: no data points (SES publishes it only for accounts "
                    "with enough sending)"
                )
        return view
