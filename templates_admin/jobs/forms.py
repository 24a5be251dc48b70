"""The forms that start jobs: a redrive (from the dead-letter page), a bulk resend, a recipient
erasure and a webhook replay."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from django import forms
from django.utils import timezone

from emailops.core.contract import address_key
from templates_admin.jobs import bulk_resend, dlq, erasure
from templates_admin.webhooks import replay as webhook_replay
from webhooks.models import WebhookEndpoint

if TYPE_CHECKING:
    from emailops.container import Container


class RedriveForm(forms.Form):
    ids = forms.MultipleChoiceField(required=False)  # choices: the ids the page listed
    rate = forms.FloatField(
        label="Rate (messages per second)", min_value=0.1, max_value=100, initial=5
    )
    redrive_all = forms.BooleanField(required=False, widget=forms.HiddenInput)

    def __init__(self, *args: Any, ids: list[str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if ids is not None:
            self.fields["ids"].choices = [(i, i) for i in ids]
        else:  # a POST: any id the page offered; the job reports ids no longer there
            self.fields["ids"].choices = [(i, i) for i in self.data.getlist("ids")]

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if "rate" in data:
            try:
                data["inputs"] = dlq.redrive_inputs(
                    ids=data.get("ids"),
                    redrive_all=bool(data.get("redrive_all")),
                    rate=data["rate"],
                )
            except ValueError as exc:
                raise forms.ValidationError(str(exc)) from None
        return data


def _default_since():
    return (timezone.localtime() - timedelta(days=1)).replace(second=0, microsecond=0)


def _default_until():
    return timezone.localtime().replace(second=0, microsecond=0)


def _moment_field(label: str, initial) -> forms.DateTimeField:
    """One end of a time range, picked in the browser's own date-and-time input."""
    return forms.DateTimeField(
        label=label,
        initial=initial,
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"),
    )


class BulkResendForm(forms.Form):
    message_id = forms.CharField(label="messageId", max_length=200)
    since = _moment_field("From", _default_since)
    until = _moment_field("To", _default_until)
    selections = forms.MultipleChoiceField(
        label="Rows",
        choices=list(bulk_resend.SELECTIONS.items()),
        initial=[bulk_resend.FAILED],
        widget=forms.CheckboxSelectMultiple,
    )
    recipients = forms.CharField(
        label="Only these recipients",
        required=False,
        widget=forms.Textarea(attrs={"rows": 2, "cols": 60}),
        help_text="Optional, one per line. Without recipients the journal is scanned "
        "(it has no messageId index), within a bounded read.",
    )
    reason = forms.CharField(
        label="Why resend?",
        max_length=2000,
        widget=forms.Textarea(attrs={"rows": 2, "cols": 60}),
        help_text="Required. Kept with every resend in the audit trail, with your name.",
    )
    rate = forms.FloatField(
        label="Rate (emails per second)",
        min_value=0.1,
        max_value=100,
        help_text="Enqueues are paced at this rate; the consumers still apply the shared send rate.",
    )  # its initial value, the configured send rate, is given by the view (``default_rate``)

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if self.errors:
            return data
        try:
            data["inputs"] = bulk_resend.bulk_resend_inputs(
                message_id=data["message_id"],
                since=data["since"],
                until=data["until"],
                selections=data["selections"],
                reason=data["reason"],
                rate=data["rate"],
                recipients=data.get("recipients", "").split(),
            )
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None
        return data


class EraseRecipientForm(forms.Form):
    address = forms.CharField(label="Email address", max_length=320)
    confirm = forms.CharField(
        label="Type the address again",
        max_length=320,
        help_text="Erasure cannot be undone.",
    )
    reason = forms.CharField(
        label="Why erase?",
        max_length=2000,
        widget=forms.Textarea(attrs={"rows": 2, "cols": 60}),
        help_text="Required, e.g. the erasure request's reference. Kept with the job, with your "
        "name.",
    )
    also_suppress = forms.BooleanField(
        label="Also suppress",
        required=False,
        help_text="For someone who asked to receive no more mail: adds a suppression entry (it "
        "holds the address). Without it, later requests to the address are still sent, and "
        "journalled with the address hashed.",
    )

    keep_preferences = forms.BooleanField(
        label="Keep preferences",
        required=False,
        help_text="Keep the categories the address unsubscribed from (they hold the address). "
        "Without it they are removed too, and its categorised mail is sent again.",
    )

    def __init__(self, *args: Any, adapters: Container, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.adapters = adapters  # the erasure's inputs hash and seal the address with its keys

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if self.errors:
            return data
        if address_key(data["address"]) != address_key(data["confirm"]):
            raise forms.ValidationError("the two addresses differ")
        try:
            data["inputs"] = erasure.erasure_inputs(
                adapters=self.adapters,
                address=data["address"],
                reason=data["reason"],
                also_suppress=bool(data.get("also_suppress")),
                keep_preferences=bool(data.get("keep_preferences")),
            )
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None
        return data


class WebhookReplayForm(forms.Form):
    endpoint = forms.ModelChoiceField(
        queryset=WebhookEndpoint.objects.all(),
        help_text="Its deliveries that failed (gave up) are posted again, each once.",
    )
    since = _moment_field("Made from", _default_since)
    until = _moment_field("To", _default_until)

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if self.errors:
            return data
        try:
            data["inputs"] = webhook_replay.webhook_replay_inputs(
                endpoint_id=data["endpoint"].pk, since=data["since"], until=data["until"]
            )
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None
        return data
