"""Forms for the draft pages: shape and syntax only; the services own the business rules."""

from __future__ import annotations

from typing import Any

from django import forms

from emailops.core.ports import custom_template_key, default_template_key
from emailops.core.render_limits import MAX_TEMPLATE_SOURCE
from templates_admin.forms import organization_id_field, source_text_field

DEFAULT_TARGET = "default"
NEW_ORG_TARGET = "new"


class DraftCreateForm(forms.Form):
    """Which file the draft changes (the default, one organization's branded copy, or a new
    organization's), its source (pasted, uploaded or edited from the current one), and the subject.

    ``cleaned_data["key"]`` is the object key; ``cleaned_data["source"]`` is "" when the draft
    only changes the subject; ``cleaned_data["from_editor"]`` says it came from the text box (whose
    line breaks the browser sent as CRLF), not from an uploaded file (kept byte for byte).
    """

    target = forms.ChoiceField(label="File")
    new_organization = organization_id_field(
        label="New organization id",
        help_text="For a new organization's branded copy: digits only (custom/O{id}/…).",
        digits_only=True,
    )
    source = source_text_field(
        max_length=MAX_TEMPLATE_SOURCE,
        rows=24,
        cols=100,
        help_text="Paste or edit the HTML (Go or Jinja2 syntax). Leave empty to change only the subject.",
        required=False,
        label="Template source",
    )
    upload = forms.FileField(
        required=False,
        label="…or upload a file",
        help_text="UTF-8 HTML; replaces the text above.",
    )
    subject = forms.CharField(
        required=False,
        max_length=998,
        label="New subject",
        help_text="Blank keeps the mapping's subject.",
        widget=forms.TextInput(attrs={"size": 80}),
    )

    def __init__(self, *args: Any, template_file: str, override_orgs: tuple[str, ...], **kwargs):
        super().__init__(*args, **kwargs)
        self.template_file = template_file
        self.fields["target"].choices = [
            (DEFAULT_TARGET, f"default/{template_file}"),
            *[(f"O{org}", f"custom/O{org}/{template_file}") for org in override_orgs],
            (NEW_ORG_TARGET, "a new organization's branded copy"),
        ]

    def target_key(self, target: str, new_organization: str = "") -> str | None:
        if target == DEFAULT_TARGET:
            return default_template_key(self.template_file)
        if target == NEW_ORG_TARGET:
            return (
                custom_template_key(new_organization, self.template_file)
                if new_organization
                else None
            )
        return custom_template_key(target[1:], self.template_file)

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        target = data.get("target")
        if target == NEW_ORG_TARGET and not data.get("new_organization"):
            self.add_error("new_organization", "Give the new organization's id.")
        upload = data.get("upload")
        data["from_editor"] = upload is None
        if upload is not None:
            if upload.size > MAX_TEMPLATE_SOURCE * 4:
                self.add_error("upload", "The file is too large for a template.")
                return data
            try:
                data["source"] = upload.read().decode("utf-8")
            except UnicodeDecodeError:
                self.add_error("upload", "The file is not UTF-8 text.")
                return data
        if not data.get("source") and not data.get("subject"):
            raise forms.ValidationError(
                "Give a template source (or a file), a new subject, or both."
            )
        if target:
            data["key"] = self.target_key(target, data.get("new_organization") or "")
        return data


class PublishForm(forms.Form):
    reason = forms.CharField(
        max_length=500,
        label="Reason",
        help_text="Recorded with the version, e.g. “fix the logo link”.",
        widget=forms.TextInput(attrs={"size": 80}),
    )
    accept_warnings = forms.BooleanField(
        required=False, label="Publish despite the check's warnings"
    )


class RollbackForm(forms.Form):
    version = forms.CharField(max_length=200, widget=forms.HiddenInput)
    reason = forms.CharField(
        max_length=500,
        label="Reason",
        help_text="Why this version comes back; recorded and audited.",
        widget=forms.TextInput(attrs={"size": 60}),
    )


class ReplayForm(forms.Form):
    """Which context the preview renders with: the sample, or one of the last ``count`` sends."""

    send = forms.CharField(required=False, max_length=300)
    count = forms.IntegerField(required=False, min_value=1, max_value=100, initial=20)
