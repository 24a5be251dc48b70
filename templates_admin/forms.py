"""Form fields more than one console area asks for (shared, the bottom layer)."""

from __future__ import annotations

from django import forms


def reason_field(*, label: str, required_message: str) -> forms.CharField:
    """The "why" of an audited change (a resend, a removal): required, kept with the name."""
    return forms.CharField(
        label=label,
        max_length=2000,
        widget=forms.Textarea(attrs={"rows": 3, "cols": 60}),
        help_text="Required. Kept in the audit trail with your name.",
        error_messages={"required": required_message},
    )


def organization_id_field(*, label: str, help_text: str, digits_only: bool) -> forms.CharField:
    """An optional organization id typed by hand; ``digits_only`` refuses anything else here,
    otherwise the form's own ``clean`` words the refusal."""
    options = {
        "required": False,
        "label": label,
        "help_text": help_text,
        "widget": forms.TextInput(attrs={"inputmode": "numeric", "size": 10}),
    }
    if digits_only:
        return forms.RegexField(regex=r"^\d{1,20}$", **options)
    return forms.CharField(max_length=20, **options)


def search_box_field(
    *, label: str, placeholder: str, max_length: int, size: int
) -> forms.CharField:
    """A page's search box: optional (an empty search shows the page's start), focused on load."""
    return forms.CharField(
        label=label,
        required=False,
        max_length=max_length,
        widget=forms.TextInput(attrs={"placeholder": placeholder, "size": size, "autofocus": True}),
    )


def source_text_field(
    *, max_length: int, rows: int, cols: int, help_text: str, **options: object
) -> forms.CharField:
    """A box for source text pasted as is (a template, a JSON context): never stripped, no
    spell-checking."""
    return forms.CharField(
        max_length=max_length,
        strip=False,
        help_text=help_text,
        widget=forms.Textarea(attrs={"rows": rows, "cols": cols, "spellcheck": "false"}),
        **options,
    )
