"""Forms for the mapping pages: shape and syntax only; the services own the business rules."""

from __future__ import annotations

import functools
from typing import Any

from django import forms

from emailops.core.contract import loads
from templates_admin.categories import category_choices
from templates_admin.forms import organization_id_field, source_text_field

DEFAULT_ORG = "default"
OTHER_ORG = "other"
MAX_CONTEXT_CHARS = 100_000


class MappingEditForm(forms.Form):
    template_file = forms.CharField(
        max_length=200,
        help_text="A file under default/ in the templates bucket, e.g. welcome.html.",
        widget=forms.TextInput(attrs={"list": "template-files", "size": 50}),
    )
    subject = forms.CharField(
        max_length=998,  # RFC 5322's line limit
        help_text="Go ({{.name}}) or Jinja2 ({{ name }}) syntax; context.subject overrides it.",
        widget=forms.TextInput(attrs={"size": 80}),
    )
    priority = forms.ChoiceField(
        required=False,
        choices=[
            ("critical", "Critical: password resets, verification; never held back"),
            ("normal", "Normal (the default): slowed while the reputation guard acts"),
            ("bulk", "Bulk: paused while the reputation guard acts"),
        ],
        initial="normal",
        help_text="What the reputation guard holds back when bounce or complaint rates are high.",
    )
    category = forms.ChoiceField(
        required=False,
        label="Category",
        help_text=(
            "What a recipient may unsubscribe from (List-Unsubscribe, the preference page). "
            "Uncategorised mail is transactional and always sent; critical mail is never "
            "unsubscribable, whatever its category."
        ),
    )
    sending_off = forms.BooleanField(
        required=False,
        label="Sending off (log-only)",
        help_text=(
            "Requests for this messageId are journaled as not delivered and never sent "
            "(SendDisabled on the mapping: the Go service obeys it too)."
        ),
    )
    # The version the editor saw: the save is conditional on it still being current.
    version = forms.IntegerField(min_value=0, widget=forms.HiddenInput)

    def __init__(self, *args: Any, current_category: str = "", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # The stored category stays choosable even when the console has no definition of it.
        # A callable: read from the database only when rendered or a category is posted.
        self.fields["category"].choices = functools.partial(
            category_choices, current=current_category
        )

    def clean_priority(self) -> str | None:
        return self.cleaned_data.get("priority") or None  # absent: keep (or default to normal)

    def clean_category(self) -> str | None:
        if self.is_bound and "category" not in self.data:
            return None  # not posted at all: keep the stored one
        return self.cleaned_data.get("category") or ""  # "" = uncategorised


class MappingCreateForm(MappingEditForm):
    message_id = forms.SlugField(
        max_length=200,
        label="Message id",
        help_text="Letters, digits, hyphens and underscores, as producers send it.",
    )
    version = None  # a new mapping has no version yet
    sending_off = None  # a new mapping sends; the switch is on its page

    field_order = ["message_id", "template_file", "subject", "priority", "category"]


class MappingDeleteForm(forms.Form):
    version = forms.IntegerField(min_value=0, widget=forms.HiddenInput)


class PreviewForm(forms.Form):
    """Which organization to brand for, and the context to render with.

    ``cleaned_data["context"]`` is the context the consumer would see: ``organizationId`` is set
    from the organization chosen here (removed for "default"), so preview and test send agree.
    """

    organization = forms.ChoiceField(label="Organization")
    other_organization = organization_id_field(
        label="Other organization id",
        help_text="Used when the organization is “another”; digits only.",
        digits_only=False,
    )
    context = source_text_field(
        max_length=MAX_CONTEXT_CHARS,
        rows=14,
        cols=70,
        help_text="A JSON object, as producers send it. organizationId comes from the choice above.",
    )

    def __init__(self, *args: Any, override_orgs: tuple[str, ...] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["organization"].choices = [
            (DEFAULT_ORG, "Default (no organization)"),
            *[(org, f"Organization {org} (branded)") for org in override_orgs],
            (OTHER_ORG, "Another organization id…"),
        ]

    def clean_context(self) -> dict[str, Any]:
        try:
            context = loads(self.cleaned_data["context"])
        except (ValueError, RecursionError) as exc:
            raise forms.ValidationError(f"Not valid JSON: {exc}") from None
        if not isinstance(context, dict):
            raise forms.ValidationError('The context must be a JSON object, e.g. {"name": "Ada"}.')
        return context

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        choice = cleaned.get("organization")
        organization_id = None
        if choice == OTHER_ORG:
            organization_id = (cleaned.get("other_organization") or "").strip()
            if not (organization_id.isascii() and organization_id.isdigit()):
                self.add_error("other_organization", "Give the organization's numeric id.")
                organization_id = None
        elif choice and choice != DEFAULT_ORG:
            organization_id = choice
        cleaned["organization_id"] = organization_id
        if isinstance(cleaned.get("context"), dict):
            context = {k: v for k, v in cleaned["context"].items() if k != "organizationId"}
            if organization_id is not None:
                context["organizationId"] = int(organization_id)
            cleaned["context"] = context
        return cleaned
