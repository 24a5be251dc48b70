"""The suppression list's search box and the removal confirmation."""

from __future__ import annotations

from django import forms

from templates_admin.forms import reason_field, search_box_field


class SuppressionSearchForm(forms.Form):
    q = search_box_field(
        label="Address starts with",
        placeholder="an address, or its beginning",
        max_length=320,
        size=40,
    )
    cursor = forms.CharField(required=False, widget=forms.HiddenInput)


class SuppressionRemoveForm(forms.Form):
    reason = reason_field(
        label="Why remove it?", required_message="Say why you are removing this address."
    )
    recipient_asked = forms.BooleanField(
        label="The recipient asked to receive our email again",
        required=False,
        help_text="Required for a complaint: they marked our email as spam.",
    )

    def __init__(self, *args, complaint: bool = False, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.complaint = complaint
        if not complaint:
            del self.fields["recipient_asked"]

    def clean_recipient_asked(self) -> bool:
        asked = self.cleaned_data.get("recipient_asked", False)
        if self.complaint and not asked:
            raise forms.ValidationError(
                "This address complained: confirm that the recipient asked for email again."
            )
        return asked


class ResubscribeForm(forms.Form):
    """Support's re-subscription of an address to one category, at the recipient's request."""

    category = forms.SlugField(max_length=64, widget=forms.HiddenInput)
    reason = reason_field(
        label="Why re-subscribe?", required_message="Say why (e.g. the ticket of their request)."
    )
    recipient_asked = forms.BooleanField(
        label="The recipient asked to receive this category again",
        error_messages={"required": "Only the recipient may ask for it: confirm that they asked."},
    )
