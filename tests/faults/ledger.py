"""What happened, from the proxy's records: delivered, lost, duplicated, and why each duplicate.

A duplicate is an SES send that moto accepted for a (request, recipient) that already had one. Its
cause is read off the send before it (the one that "should have been the only one"):

- lost SES reply: the proxy dropped that send's reply on purpose, so the sender could not know;
- kill between send and mark: the consumer that made it was SIGKILLed (or went away mid-call)
  before a mark SENT for that journal key succeeded;
- mark failed: the consumer lived, but its mark never landed (a DynamoDB fault ate it);
- lease lost: its mark was refused because another claim had taken the row meanwhile;
- sent again although marked SENT / unexplained: a bug.

The first two are the allowed ones (issue 8): duplicates ≤ lost SES replies + kills that landed
between a send and its mark.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from tests.support.aws_proxy import Call

ALLOWED = ("lost SES reply", "kill between send and mark")


@dataclass
class Ledger:
    expected: dict[str, str]  # recipient address (lowercased) → journal key
    sends: list[Call]  # every accepted SES send, oldest first
    calls: list[Call]  # every call the proxy saw
    kills: dict[str, float]  # consumer name → when it was SIGKILLed
    delivered: int = 0
    lost: list[str] = field(default_factory=list)
    duplicates: int = 0
    causes: Counter[str] = field(default_factory=Counter)
    unexpected: int = 0
    lost_replies: int = 0
    kills_between: int = 0
    examples: dict[str, str] = field(default_factory=dict)  # a cause → one recipient it hit

    def __post_init__(self) -> None:
        # Every SENT write per key, whoever made it: the sender's own mark, or another consumer
        # marking a send it learned about (an "accepted" key carried with a retried record).
        marks: dict[str, list[Call]] = defaultdict(list)
        for call in self.calls:
            if call.service == "dynamodb" and call.sets_status == "SENT" and call.key:
                marks[call.key].append(call)
        per_recipient: dict[str, list[Call]] = defaultdict(list)
        for send in self.sends:
            for address in send.recipients:
                per_recipient[address].append(send)
        self.unexpected = sum(
            len(v) for address, v in per_recipient.items() if address not in self.expected
        )
        for address, key in self.expected.items():
            sends = sorted(per_recipient.get(address, []), key=lambda c: c.at)
            if not sends:
                self.lost.append(address)
                continue
            self.delivered += 1
            self.duplicates += len(sends) - 1
            for i, send in enumerate(sends):
                later = sends[i + 1].at if i + 1 < len(sends) else float("inf")
                cause = self._cause(send, [m for m in marks[key] if send.at <= m.at <= later])
                self.lost_replies += cause == ALLOWED[0]
                self.kills_between += cause == ALLOWED[1]
                if i + 1 < len(sends):
                    self.causes[cause] += 1
                    self.examples.setdefault(cause, address)

    def _cause(self, send: Call, marks: list[Call]) -> str:
        """Why another send may follow ``send``; ``marks`` are the SENT writes for its key between
        it and the next send (see the module's docstring)."""
        if send.reply_lost:
            return ALLOWED[0]
        if any(m.accepted for m in marks):
            return "sent again although marked SENT"
        own = [m for m in marks if m.client == send.client]
        if send.client_gone or send.client in self.kills:
            return ALLOWED[1]
        if any(m.error_code == "ConditionalCheckFailedException" for m in own):
            return "lease lost before the mark"
        failed = [m.fault or m.error_code for m in own if m.fault or m.status >= 500]
        if failed:
            return f"mark failed ({failed[0]})"
        return "unexplained (no mark attempt seen)"

    @property
    def allowance(self) -> int:
        return self.lost_replies + self.kills_between

    def report(self) -> str:
        lines = [
            f"expected recipients   {len(self.expected)}",
            f"delivered             {self.delivered}",
            f"lost                  {len(self.lost)}",
            f"duplicated            {self.duplicates}",
            f"sends accepted        {len(self.sends)}",
            f"sends to unexpected   {self.unexpected}",
            f"kills                 {len(self.kills)}",
            f"lost SES replies      {self.lost_replies}  (accepted sends whose reply was dropped)",
            f"kills send->mark      {self.kills_between}  (accepted sends left unmarked by a kill)",
            f"allowed duplicates    {self.allowance}",
        ]
        for cause, count in self.causes.most_common():
            lines.append(f"  duplicate cause: {cause}: {count} (e.g. {self.examples[cause]})")
        if self.lost:
            lines.append(f"  lost, e.g.: {', '.join(self.lost[:5])}")
        return "\n".join(lines)
