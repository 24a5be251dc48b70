"""The template check: what a template render must not do before it is published.

One engine for the console's drafts, ``manage.py templates check`` and the daily
``check_templates``. It takes sources and contexts and returns findings; it reads nothing itself
(no Django, no boto3), so every caller gathers the sources its own way.

Errors block a publish:
- the body or subject does not compile (Go ``text/template`` syntax or Jinja2);
- a render fails under the bounded renderer;
- the email (subject, HTML and plain text, MIME encoded as sent) is ``GMAIL_CLIP_BYTES`` or more,
  the size at which Gmail clips a message behind "[Message clipped]";
- a ``javascript:`` link;
- a subject longer than 998 characters (RFC 5322's line limit) or holding a newline.
Warnings must be confirmed: ``SIZE_WARNING_BYTES`` or more, ``http:`` links and images, images
without ``alt``, variables that recent sends did not provide, and an empty plain-text part; and for
mail a recipient may unsubscribe from (a categorised, non-critical mapping: docs/preferences.md), a
template without the visible unsubscribe link (``unsubscribeUrl``) and, while PUBLIC_BASE_URL is
unset, that no link or List-Unsubscribe header can be made at all. The link and image rules are
``emailops.core.template_links``'s; what a finding is, ``emailops.core.template_findings``'.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from email.charset import QP, Charset
from email.mime.multipart import MIMEMultipart
from email.mime.text import MIMEText
from typing import Any

from emailops.core.compose import html_to_text
from emailops.core.errors import TemplateError
from emailops.core.rendering import ONE_LINE_REASON, Renderer, is_control_reason
from emailops.core.template_findings import ERROR, WARNING, Finding, dedupe
from emailops.core.template_gate import (
    GateOptions,
    apply_off,
    gate_findings,
    spam_score_findings,
)
from emailops.core.template_links import link_findings
from emailops.core.template_source import TemplateSourceError, directives, inline_css, is_mjml
from emailops.core.template_source import compile_mjml as _compile_mjml

__all__ = [
    "GMAIL_CLIP_BYTES",
    "MAX_SUBJECT_LENGTH",
    "SIZE_WARNING_BYTES",
    "UNSUBSCRIBE_VARIABLE",
    "check_render",
    "mime_size",
    "missing_in_contexts",
    "unsubscribe_findings",
]

GMAIL_CLIP_BYTES = 102 * 1024  # Gmail clips a message at about 102 KB
SIZE_WARNING_BYTES = 90 * 1024
MAX_SUBJECT_LENGTH = 998  # RFC 5322: a header line is at most 998 characters
UNSUBSCRIBE_VARIABLE = "unsubscribeUrl"  # the /u/<token> link the consumer provides
DEFAULT_GATE = GateOptions()

# --- size --------------------------------------------------------------------------------------


def mime_size(*, subject: str, html: str, text: str) -> int:
    """Bytes of the message as SES builds it from SendEmail's Html and Text (UTF-8,
    quoted-printable, multipart/alternative); addresses are left out, they are a few bytes."""
    charset = Charset("utf-8")
    charset.body_encoding = QP
    message = MIMEMultipart("alternative")
    message["Subject"] = subject
    for body, subtype in ((text, "plain"), (html, "html")):
        if subtype == "plain" and not body:
            continue
        part = MIMEText(body, subtype, charset)  # type: ignore[arg-type]
        message.attach(part)
    return len(message.as_bytes())


def _kb(size: int) -> str:
    return f"{size / 1024:.1f} KB ({size:,} bytes)"


# --- the checks --------------------------------------------------------------------------------


def _error_finding(
    exc: TemplateError, *, code: str, key: str, organization: str | None, what: str
) -> Finding:
    return Finding(
        ERROR, code, f"{what}: {exc.reason or exc.describe()}", key, organization, exc.line
    )


def check_render(
    *,
    renderer: Renderer,
    key: str,
    source: str,
    subject_source: str | None,
    contexts: Sequence[Mapping[str, Any]],
    organization: str | None = None,
    gate: GateOptions | None = DEFAULT_GATE,
) -> list[Finding]:
    """Every check on one file (default or one organization's branded copy) rendered with each
    of ``contexts``; ``subject_source`` None leaves the subject out (a file without a mapping).
    An MJML source is checked as the HTML it compiles to (with its CSS inlined if it asks), as
    it would be published; ``gate`` None leaves out the publish gate's rules
    (``emailops.core.template_gate``)."""
    written = source
    try:
        source = _publishable(key, source)
    except TemplateSourceError as exc:
        return [_source_finding(exc, key=key, organization=organization, source=written)]
    found: list[Finding] = []
    try:
        renderer.check(source, html=True, name=key)
    except TemplateError as exc:
        return [
            _error_finding(
                exc,
                code="compile",
                key=key,
                organization=organization,
                what="the template does not compile",
            )
        ]
    if subject_source is not None:
        try:
            renderer.check(subject_source, html=False, name="subject")
        except TemplateError as exc:
            found.append(
                _error_finding(
                    exc,
                    code="subject-compile",
                    key=key,
                    organization=organization,
                    what="the subject does not compile",
                )
            )
            subject_source = None
    mjml = written if source != written and is_mjml(key, written) else None
    for context in contexts or ({},):
        found += _check_one_render(
            renderer, key, source, subject_source, dict(context), organization, gate, mjml
        )
    return dedupe(apply_off(found, written))


def _publishable(key: str, source: str) -> str:
    html = _compile_mjml(source) if is_mjml(key, source) else source
    return inline_css(html) if directives(source).inline_css else html


def _source_finding(
    exc: TemplateSourceError, *, key: str, organization: str | None, source: str
) -> Finding:
    lines = source.splitlines()
    element = lines[exc.line - 1].strip()[:120] if exc.line and exc.line <= len(lines) else ""
    return Finding(
        ERROR,
        "mjml",
        exc.message,
        key,
        organization,
        exc.line,
        element,
        "fix the MJML at that line (https://documentation.mjml.io lists the elements)",
    )


def _check_one_render(
    renderer: Renderer,
    key: str,
    source: str,
    subject_source: str | None,
    context: dict[str, Any],
    organization: str | None,
    gate: GateOptions | None = None,
    mjml: str | None = None,
) -> list[Finding]:
    found: list[Finding] = []
    subject = ""
    if subject_source is not None:
        try:
            subject = renderer.render_subject(subject_source, context, name="subject").text
        except TemplateError as exc:
            if exc.reason == ONE_LINE_REASON:
                found.append(
                    Finding(
                        ERROR, "subject-newline", "the subject holds a newline", key, organization
                    )
                )
            elif is_control_reason(exc.reason):
                found.append(Finding(ERROR, "subject-control", exc.reason, key, organization))
            else:
                found.append(
                    _error_finding(
                        exc,
                        code="subject-render",
                        key=key,
                        organization=organization,
                        what="the subject does not render",
                    )
                )
        else:
            if len(subject) > MAX_SUBJECT_LENGTH:
                found.append(
                    Finding(
                        ERROR,
                        "subject-length",
                        f"the subject is {len(subject):,} characters; at most {MAX_SUBJECT_LENGTH} fit "
                        "on a header line",
                        key,
                        organization,
                    )
                )
    try:
        html = renderer.render_body(source, context, name=key).text
    except TemplateError as exc:
        found.append(
            _error_finding(
                exc,
                code="render",
                key=key,
                organization=organization,
                what="the template does not render",
            )
        )
        return found
    text = html_to_text(html)
    size = mime_size(subject=subject, html=html, text=text)
    if size >= GMAIL_CLIP_BYTES:
        found.append(
            Finding(
                ERROR,
                "size",
                f"the email is {_kb(size)} MIME encoded; Gmail clips messages at "
                f"{GMAIL_CLIP_BYTES // 1024} KB ({GMAIL_CLIP_BYTES:,} bytes)",
                key,
                organization,
            )
        )
    elif size >= SIZE_WARNING_BYTES:
        found.append(
            Finding(
                WARNING,
                "size",
                f"the email is {_kb(size)} MIME encoded, close to Gmail's "
                f"{GMAIL_CLIP_BYTES // 1024} KB clipping limit",
                key,
                organization,
            )
        )
    if not text.strip():
        found.append(
            Finding(
                WARNING,
                "empty-text",
                "the plain-text part is empty (the HTML has no text)",
                key,
                organization,
            )
        )
    found += link_findings(html, source, key=key, organization=organization)
    if gate is not None:
        found += gate_findings(
            html=html,
            source=source,
            key=key,
            organization=organization,
            options=gate,
            written=mjml,
        )
        if size < GMAIL_CLIP_BYTES:  # over it the draft cannot go out: no 5 s score of it
            found += spam_score_findings(
                subject=subject,
                html=html,
                text=text,
                source=mjml or source,
                key=key,
                organization=organization,
                options=gate,
            )
    return found


def missing_in_contexts(
    used: Iterable[str], contexts: Sequence[Mapping[str, Any]], *, ignore: Iterable[str] = ()
) -> dict[str, int]:
    """Variable -> in how many of ``contexts`` it is absent (only those absent from some)."""
    skipped = set(ignore)
    counts = {}
    for name in sorted(set(used) - skipped):
        absent = sum(1 for context in contexts if name not in context)
        if absent:
            counts[name] = absent
    return counts


def unsubscribe_findings(
    *, key: str, organization: str | None, variables: Iterable[str], base_url_set: bool
) -> list[Finding]:
    """For a template of mail a recipient may unsubscribe from: warn when it shows no
    unsubscribe link (it never reads ``unsubscribeUrl``; the List-Unsubscribe header alone is
    not visible in every mail client) and when PUBLIC_BASE_URL is unset (no link can be made:
    neither the header nor the footer's variable)."""
    found = []
    if UNSUBSCRIBE_VARIABLE not in set(variables):
        found.append(
            Finding(
                WARNING,
                "unsubscribe-link",
                f"this mail is categorised (recipients may unsubscribe) but the template has no "
                f"visible unsubscribe link: add one to {{{{ {UNSUBSCRIBE_VARIABLE} }}}}",
                key,
                organization,
            )
        )
    if not base_url_set:
        found.append(
            Finding(
                WARNING,
                "unsubscribe-base-url",
                "PUBLIC_BASE_URL is not set: categorised mail goes out without a "
                "List-Unsubscribe header or unsubscribe link",
                key,
                organization,
            )
        )
    return found
