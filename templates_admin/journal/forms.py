"""The search box with its filters, and the resend confirmation."""

from __future__ import annotations

import re
from datetime import datetime, time
from typing import Any

from django import forms
from django.utils import timezone

from emailops.aws.journal_search import NO_DELIVERY_REPORT
from emailops.core.ports import Status
from templates_admin.forms import reason_field, search_box_field
from templates_admin.journal.delivery import DELIVERY_STATUSES

_RESEND_TOKEN = re.compile(r"^resend-[0-9a-f]{32}$")


class JournalSearchForm(forms.Form):
    q = search_box_field(
        label="Search",
        placeholder="email address, journal Id or SES message id",
        max_length=500,
        size=48,
    )
    message_id = forms.CharField(label="messageId", required=False, max_length=200)
    status = forms.ChoiceField(
        required=False, choices=[("", "any")] + [(s.value, s.value) for s in Status]
    )
    delivery = forms.ChoiceField(
        required=False,
        choices=[("", "any")]
        + [(d, d.lower()) for d in DELIVERY_STATUSES]
        + [(NO_DELIVERY_REPORT, "no report yet")],
    )
    since = forms.DateField(
        label="From", required=False, widget=forms.DateInput(attrs={"type": "date"})
    )
    until = forms.DateField(
        label="To", required=False, widget=forms.DateInput(attrs={"type": "date"})
    )
    cursor = forms.CharField(required=False, widget=forms.HiddenInput)

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        since, until = data.get("since"), data.get("until")
        if since and until and since > until:
            raise forms.ValidationError("The date range ends before it starts.")
        return data

    def search_arguments(self) -> dict[str, Any]:
        """Keyword arguments for journal_search; dates are whole days in the console's zone."""
        data = self.cleaned_data
        zone = timezone.get_current_timezone()
        since, until = data.get("since"), data.get("until")
        return {
            "query": data["q"],
            "message_id": data.get("message_id") or None,
            "status": data.get("status") or None,
            "delivery": data.get("delivery") or None,
            "since": datetime.combine(since, time.min, zone) if since else None,
            "until": datetime.combine(until, time.max, zone) if until else None,
            "cursor": data.get("cursor") or None,
        }


class ResendForm(forms.Form):
    reason = reason_field(label="Why resend?", required_message="Say why you are resending.")
    # Generated when the form is shown: resubmitting the same form resends only once.
    dedupe_id = forms.CharField(widget=forms.HiddenInput)

    def clean_dedupe_id(self) -> str:
        value = self.cleaned_data["dedupe_id"]
        if not _RESEND_TOKEN.match(value):
            raise forms.ValidationError("This form is damaged; open it again.")
        return value
