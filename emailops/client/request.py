"""An email request as a producer builds it: recipients, template variables and the options the
consumer understands (branding organization, dedupe id, subject override).

Every ``Email`` is checked against the consumer's own contract (``emailops.core.contract``) when it
is made, so a request that would be dead-lettered fails here, at the producer's call site.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from emailops.core.contract import organization_id_of, parse_request

__all__ = ["Email", "To"]


@dataclass(frozen=True)
class To:
    """One recipient: a display name (may be empty) and an address."""

    name: str
    email: str

    def payload(self) -> dict[str, str]:
        return {"name": self.name, "email": self.email} if self.name else {"email": self.email}


def _recipients(to: To | Sequence[To]) -> tuple[To, ...]:
    if isinstance(to, To):
        return (to,)
    if isinstance(to, str | bytes) or not isinstance(to, Sequence):
        raise TypeError(f"recipients must be a To or a list of To, got {to!r}")
    if not all(isinstance(item, To) for item in to):
        raise TypeError("every recipient must be a To(name, email)")
    return tuple(to)


@dataclass(frozen=True)
class Email:
    """A request for one messageId. Immutable: the ``with_*`` methods return a changed copy.

    ``delay_seconds`` is not part of the request: it is SQS's DelaySeconds (at most 900).
    """

    message_id: str
    to: tuple[To, ...]
    context: Mapping[str, Any] = field(default_factory=dict)
    dedupe_id: str = ""
    delay_seconds: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "to", _recipients(self.to))
        object.__setattr__(self, "context", dict(self.context))
        if not isinstance(self.delay_seconds, int) or self.delay_seconds < 0:
            raise ValueError(
                f"delay_seconds must be a non-negative int, got {self.delay_seconds!r}"
            )
        parse_request(self.to_json())  # the consumer's rules; raises InvalidRequest (a ValueError)

    @classmethod
    def build(cls, message_id: str, to: To | Sequence[To], variables: Mapping[str, Any]) -> Email:
        """What the generated builders call: every variable must be given as a string."""
        for name, value in variables.items():
            if not isinstance(value, str):
                raise TypeError(
                    f"{message_id}: template variable {name!r} must be a str, got {value!r}"
                )
        return cls(message_id=message_id, to=to, context=variables)

    def with_organization(self, organization_id: int | str) -> Email:
        """Brand the email for this organization (the consumer uses ``custom/O{id}/`` templates)."""
        organization_id_of({"organizationId": organization_id})  # an integer or a string of digits
        return replace(self, context={**self.context, "organizationId": organization_id})

    def with_dedupe_id(self, dedupe_id: str) -> Email:
        """Requests with the same dedupe id send once per recipient, however often they are queued."""
        if not isinstance(dedupe_id, str) or not dedupe_id:
            raise ValueError(f"dedupe_id must be a non-empty string, got {dedupe_id!r}")
        return replace(self, dedupe_id=dedupe_id)

    def with_subject(self, subject: str) -> Email:
        """Override the mapping's subject (a template too: it may use the variables)."""
        if not isinstance(subject, str) or not subject.strip():
            raise ValueError(f"subject must be a non-empty string, got {subject!r}")
        return replace(self, context={**self.context, "subject": subject})

    def with_context(self, **variables: Any) -> Email:
        """Extra variables the manifest does not list (values are sent as given)."""
        return replace(self, context={**self.context, **variables})

    def with_delay(self, seconds: int) -> Email:
        """Let SQS hold the request this long before the consumer sees it (0-900 seconds)."""
        return replace(self, delay_seconds=seconds)

    def payload(self) -> dict[str, Any]:
        """The EmailRequest as JSON-ready data, in the shape of the contract fixtures."""
        data: dict[str, Any] = {
            "messageId": self.message_id,
            "recipients": [recipient.payload() for recipient in self.to],
            "context": dict(self.context),
        }
        if self.dedupe_id:
            data["dedupeId"] = self.dedupe_id
        return data

    def to_json(self) -> str:
        return json.dumps(self.payload(), ensure_ascii=False, allow_nan=False)
