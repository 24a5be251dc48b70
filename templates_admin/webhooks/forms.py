"""The webhooks pages' forms: a new endpoint, and why an endpoint is disabled or enabled."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django import forms

from emailops.core.webhook_delivery import USERINFO_REFUSED, url_without_userinfo
from emailops.core.webhooks import EVENT_TYPES

ANY_PRODUCER, QUEUE_ONLY, ONE_TOKEN = "any", "queue", "token"


class EndpointForm(forms.Form):
    url = forms.URLField(
        label="URL",
        max_length=2000,
        assume_scheme="https",
        help_text="HTTPS, without user:password@. Checked now and before every delivery: only "
        "a public (globally routable) address, never a private, shared, loopback or link-local "
        "one.",
    )
    # In development (DJANGO_DEBUG on) the check lets plain http to this machine through.
    LOOPBACK_HELP = (
        "HTTPS, without user:password@, or in development (DJANGO_DEBUG on) also http to this "
        "machine, e.g. http://127.0.0.1:9000/hook. Checked now and before every delivery: no "
        "other private, shared or link-local address."
    )

    def __init__(self, *args: Any, allow_loopback: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if allow_loopback:
            self.fields["url"].help_text = self.LOOPBACK_HELP

    description = forms.CharField(max_length=200, required=False)
    event_types = forms.MultipleChoiceField(
        label="Event types",
        choices=[(t, t) for t in EVENT_TYPES],
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="None ticked: every event type.",
    )
    message_ids = forms.CharField(
        label="messageIds",
        required=False,
        widget=forms.Textarea(attrs={"rows": 2, "cols": 60}),
        help_text="Optional, one per line (or separated by spaces): only these emails.",
    )
    organization = forms.CharField(
        max_length=50, required=False, help_text="Optional: only this organization's emails."
    )
    producer_scope = forms.ChoiceField(
        label="Producer",
        choices=[
            (ANY_PRODUCER, "Any producer"),
            (QUEUE_ONLY, "Only requests from the queue"),
            (ONE_TOKEN, "Only one API token's requests (its namespace below)"),
        ],
        initial=ANY_PRODUCER,
        widget=forms.RadioSelect,
    )
    producer = forms.CharField(
        label="API token namespace", max_length=200, required=False, strip=True
    )
    include_context_keys = forms.BooleanField(
        label="Include the context's key names",
        required=False,
        help_text="The names only, never the values.",
    )

    def clean_url(self) -> str:
        """Refused here too (the service refuses it for the command), and the password is not
        shown back in the field."""
        url = self.cleaned_data["url"]
        if "@" in urlsplit(url).netloc:
            self.data = self.data.copy()
            self.data["url"] = url_without_userinfo(url)
            raise forms.ValidationError(USERINFO_REFUSED[0].upper() + USERINFO_REFUSED[1:] + ".")
        return url

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        scope = data.get("producer_scope")
        if scope == ONE_TOKEN and not data.get("producer"):
            self.add_error("producer", "Name the API token's namespace.")
        data["producer"] = {ANY_PRODUCER: None, QUEUE_ONLY: ""}.get(scope, data.get("producer"))
        data["message_ids"] = (data.get("message_ids") or "").split()
        return data

    def service_arguments(self) -> dict[str, Any]:
        """What ``endpoint_add`` takes."""
        data = self.cleaned_data
        return {
            "url": data["url"],
            "event_types": data["event_types"],
            "message_ids": data["message_ids"],
            "organization": data["organization"].strip(),
            "producer": data["producer"],
            "include_context_keys": data["include_context_keys"],
            "description": data["description"].strip(),
        }


class ReasonForm(forms.Form):
    reason = forms.CharField(
        label="Why?",
        max_length=200,
        help_text="Required. Kept in the log with your name; a disabled endpoint shows it.",
    )
