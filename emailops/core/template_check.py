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
unset, that no link or List-Unsubscribe header can be made at all.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from email.charset import QP, Charset
from email.mime.multipart import MIMEMultipart
from email.mime.text import MIMEText
from html.parser import HTMLParser
from typing import Any

from emailops.core.compose import html_to_text
from emailops.core.errors import TemplateError
from emailops.core.rendering import ONE_LINE_REASON, Renderer, is_control_reason

__all__ = [
    "ERROR",
    "GMAIL_CLIP_BYTES",
    "MAX_SUBJECT_LENGTH",
    "SIZE_WARNING_BYTES",
    "UNSUBSCRIBE_VARIABLE",
    "WARNING",
    "Finding",
    "check_render",
    "dedupe",
    "mime_size",
    "missing_in_contexts",
    "organization_of_key",
    "unsubscribe_findings",
]

ERROR = "error"
WARNING = "warning"
GMAIL_CLIP_BYTES = 102 * 1024  # Gmail clips a message at about 102 KB
SIZE_WARNING_BYTES = 90 * 1024
MAX_SUBJECT_LENGTH = 998  # RFC 5322: a header line is at most 998 characters
UNSUBSCRIBE_VARIABLE = "unsubscribeUrl"  # the /u/<token> link the consumer provides

_CUSTOM_KEY = re.compile(r"^custom/O(\d+)/[^/]+$")
# Browsers ignore ASCII whitespace and control characters inside a scheme ("java\tscript:").
_IGNORED_IN_SCHEME = re.compile(r"[\x00-\x20]")
# Attributes that load or navigate to a URL.
_URL_ATTRIBUTES = {
    "a": ("href",),
    "area": ("href",),
    "img": ("src",),
    "link": ("href",),
    "form": ("action",),
    "iframe": ("src",),
    "script": ("src",),
    "input": ("src", "formaction"),
    "button": ("formaction",),
    "source": ("src",),
    "video": ("src", "poster"),
    "audio": ("src",),
}


@dataclass(frozen=True)
class Finding:
    severity: str  # "error" | "warning"
    code: str  # a stable name: compile, render, size, javascript-link, http-link, ...
    message: str
    file: str  # the object key (e.g. "custom/O367/welcome.html")
    organization: str | None
    line: int | None = None

    @property
    def is_error(self) -> bool:
        return self.severity == ERROR


def organization_of_key(key: str) -> str | None:
    """ "367" for ``custom/O367/file``; None for the default file."""
    match = _CUSTOM_KEY.match(key)
    return match[1] if match else None


def dedupe(findings: Iterable[Finding]) -> list[Finding]:
    """Each finding once (several contexts often find the same thing), errors first."""
    unique = list(dict.fromkeys(findings))
    return sorted(unique, key=lambda f: (not f.is_error, f.file, f.line or 0))


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


# --- links and images --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Tag:
    name: str
    attrs: dict[str, str | None]
    line: int


class _TagCollector(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[_Tag] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(_Tag(tag, dict(attrs), self.getpos()[0]))

    handle_startendtag = handle_starttag


def _tags(html: str) -> list[_Tag]:
    parser = _TagCollector()
    try:
        parser.feed(html)
        parser.close()
    except (AssertionError, ValueError):  # html.parser gives up on some broken markup
        pass
    return parser.tags


def _scheme(url: str) -> str:
    cleaned = _IGNORED_IN_SCHEME.sub("", url).lower()
    return cleaned.split(":", 1)[0] if ":" in cleaned else ""


def _source_line(source: str, needle: str) -> int | None:
    """The source line holding ``needle`` (a rendered attribute value), if it is written there."""
    needle = needle.strip()[:80]
    if not needle:
        return None
    at = source.find(needle)
    return source.count("\n", 0, at) + 1 if at >= 0 else None


def _link_findings(html: str, source: str, *, key: str, organization: str | None) -> list[Finding]:
    found: list[Finding] = []
    rendered, written = _tags(html), _tags(source)
    # The nth <img> of the render is the nth of the source when no loop or condition changed them.
    rendered_imgs = [t for t in rendered if t.name == "img"]
    written_imgs = [t for t in written if t.name == "img"]
    same_imgs = len(rendered_imgs) == len(written_imgs)

    def finding(severity: str, code: str, message: str, line: int | None) -> None:
        found.append(Finding(severity, code, message, key, organization, line))

    for tag in rendered:
        for attr in _URL_ATTRIBUTES.get(tag.name, ()):
            url = tag.attrs.get(attr) or ""
            scheme = _scheme(url)
            line = _source_line(source, url)
            if scheme == "javascript":
                finding(ERROR, "javascript-link", f"<{tag.name} {attr}> is a javascript: URL", line)
            elif scheme == "http" and tag.name in ("a", "area", "img", "link"):
                what = "image" if tag.name == "img" else "link"
                shown = url if len(url) <= 80 else url[:77] + "..."
                finding(
                    WARNING,
                    f"http-{what}",
                    f"insecure http: {what} {shown} (use https:)",
                    line,
                )
    for index, tag in enumerate(rendered_imgs):
        if "alt" not in tag.attrs:
            line = written_imgs[index].line if same_imgs else _source_line(source, "<img")
            src = tag.attrs.get("src") or ""
            finding(WARNING, "img-no-alt", f"image without alt text ({src[:80] or 'no src'})", line)
    return found


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
) -> list[Finding]:
    """Every check on one file (default or one organization's branded copy) rendered with each
    of ``contexts``; ``subject_source`` None leaves the subject out (a file without a mapping)."""
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
    for context in contexts or ({},):
        found += _check_one_render(
            renderer, key, source, subject_source, dict(context), organization
        )
    return dedupe(found)


def _check_one_render(
    renderer: Renderer,
    key: str,
    source: str,
    subject_source: str | None,
    context: dict[str, Any],
    organization: str | None,
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
    found += _link_findings(html, source, key=key, organization=organization)
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
