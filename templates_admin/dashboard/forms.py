"""A Support lead's pause or resume of one priority, account-wide or for one organization."""

from __future__ import annotations

from django import forms

# Critical mail (password resets, verification) is never paused: the guard exists to keep it going.
PRIORITIES = [("bulk", "bulk"), ("normal", "normal")]


class PauseForm(forms.Form):
    # Its own ids: the Emergency stop form beside it on the dashboard has an action and a reason too
    # (a shared id_reason made its label focus the other form's field).
    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("auto_id", "id_pause_%s")
        super().__init__(*args, **kwargs)

    action = forms.ChoiceField(choices=[("set", "Pause"), ("lift", "Resume")])
    priority = forms.ChoiceField(choices=PRIORITIES)
    organization = forms.RegexField(
        regex=r"^\d+$",
        required=False,
        max_length=20,
        help_text="Empty: account-wide.",
        error_messages={"invalid": "An organization is its number, e.g. 367."},
    )
    reason = forms.CharField(
        max_length=500,
        widget=forms.TextInput(attrs={"size": 40}),
        help_text="Required. Kept in the audit trail with your name.",
        error_messages={"required": "Say why."},
    )


class SendStopForm(forms.Form):
    """The emergency stop: every request journaled log-only, none sent, until it is lifted."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("auto_id", "id_stop_%s")
        super().__init__(*args, **kwargs)

    action = forms.ChoiceField(choices=[("set", "Stop all sending"), ("lift", "Resume sending")])
    reason = forms.CharField(
        max_length=500,
        widget=forms.TextInput(attrs={"size": 40}),
        help_text="Required. Kept in the audit trail with your name.",
        error_messages={"required": "Say why."},
    )
