"""Issue 35, finding 4: every console page that shows a recipient's address records the read
(docs/journal.md, "Who read what"). The walk takes every URL pattern under /admin/ from Django's
resolver, fills it from the table below, GETs it as a superuser over sample data that names one
recipient everywhere it can, and fails where a response shows the address and no audit row was
written. A pattern the table does not know fails too: a new page cannot slip by."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from audit.models import JournalReadAudit
from audit.reads import read_record
from emailops import container
from jobs.engine import job_run
from jobs.models import Job, JobStep
from tests.journal_factory import BASE_TIME, journal_row, put_rows

pytestmark = pytest.mark.django_db

ADDRESS = "pat@example.com"
SHOWN = (ADDRESS.encode(), ADDRESS.replace("@", "%40").encode())  # as text, or in a link
ROW = journal_row(ADDRESS, at=BASE_TIME, key=f"welcome-1:{ADDRESS}")  # a key naming her, as many do
LOGGED_ONLY = journal_row(
    ADDRESS, at=BASE_TIME + 1, key=f"welcome-2:{ADDRESS}", LoggedOnly=True, LoggedOnlyReason="loop"
)


Sample = SimpleNamespace  # the primary keys of the sample records, by name


@dataclass(frozen=True)
class Fill:
    """How to GET one pattern: its kwargs (from the sample), a query string, and whether the page
    is expected to show the address (so the walk cannot pass by showing nothing)."""

    kwargs: Callable[[Sample], dict[str, Any]] = lambda s: {}
    query: dict[str, str] = field(default_factory=dict)
    shows: bool = False
    path: Callable[[Sample], str] | None = None  # a pattern without a name: the URL itself


def _key(s: Sample) -> dict[str, Any]:
    return {"key": ROW["Id"]}


def _message_id(s: Sample) -> dict[str, Any]:
    return {"message_id": "added-to-team"}


def _model_admin(prefix: str, pk: Callable[[Sample], Any]) -> dict[str, Fill]:
    """The six URLs Django's ModelAdmin gives every registered model (no recipient addresses in
    any of these models but the read audit's, which lists its own below)."""
    return {
        f"admin/{prefix}/": Fill(),
        f"admin/{prefix}/add/": Fill(),
        f"admin/{prefix}/<path:object_id>/history/": Fill(lambda s: {"object_id": pk(s)}),
        f"admin/{prefix}/<path:object_id>/delete/": Fill(lambda s: {"object_id": pk(s)}),
        f"admin/{prefix}/<path:object_id>/change/": Fill(lambda s: {"object_id": pk(s)}),
        f"admin/{prefix}/<path:object_id>/": Fill(path=lambda s: f"/admin/{prefix}/{pk(s)}/"),
    }


MAPPINGS = "admin/templates_admin/templatemappingpage/"
JOURNAL = "admin/templates_admin/emailjournalpage/"
SUPPRESSION = "admin/templates_admin/suppressionlistpage/"
OPS = "admin/templates_admin/operationspage/"
WEBHOOKS = "admin/templates_admin/webhookspage/"
AUDIT = "admin/templates_admin/journalreadaudit/"


def _catch_all(prefix: str) -> dict[str, Fill]:
    return {f"{prefix}^.+$": Fill(path=lambda s: f"/{prefix}no-such-page/")}


TABLE: dict[str, Fill | list[Fill]] = {
    "admin/": Fill(),
    "admin/login/": Fill(),
    "admin/logout/": Fill(),
    "admin/password_change/": Fill(),
    "admin/password_change/done/": Fill(),
    "admin/autocomplete/": Fill(),
    "admin/jsi18n/": Fill(),
    "admin/r/<path:content_type_id>/<path:object_id>/": Fill(
        lambda s: {"content_type_id": s.user_type, "object_id": s.user}
    ),
    "admin/^(?P<app_label>auth|templates_admin|api|axes)/$": [
        Fill(lambda s, app=app: {"app_label": app})
        for app in ("auth", "templates_admin", "api", "axes")
    ],
    "admin/(?P<url>.*)$": Fill(path=lambda s: "/admin/no-such-page/"),
    **_model_admin("auth/group", lambda s: s.group),
    **_model_admin("auth/user", lambda s: s.user),
    "admin/auth/user/<id>/password/": Fill(lambda s: {"id": s.user}),
    **_model_admin("templates_admin/categorydefinition", lambda s: "newsletters"),
    **_model_admin("api/apitoken", lambda s: s.token),
    "admin/api/apitoken/<path:object_id>/revoke/": Fill(lambda s: {"object_id": s.token}),
    **_model_admin("axes/accessattempt", lambda s: s.attempt),
    **_model_admin("axes/accesslog", lambda s: s.access_log),
    **_model_admin("axes/accessfailurelog", lambda s: s.failure_log),
    # The read audit: its queries name the addresses searched for.
    **_model_admin("templates_admin/journalreadaudit", lambda s: s.audit),
    AUDIT: Fill(shows=True),
    f"{AUDIT}<path:object_id>/change/": Fill(lambda s: {"object_id": s.audit}, shows=True),
    # Mappings and drafts.
    MAPPINGS: Fill(),
    f"{MAPPINGS}add/": Fill(),
    f"{MAPPINGS}mapping/<path:message_id>/": Fill(_message_id),
    f"{MAPPINGS}mapping/<path:message_id>/delete/": Fill(_message_id),
    f"{MAPPINGS}^mapping/(?P<message_id>.+)/source/O(?P<org>\\d+)/$": Fill(
        lambda s: {"message_id": "added-to-team", "org": "367"}
    ),
    f"{MAPPINGS}mapping/<path:message_id>/source/": Fill(_message_id),
    f"{MAPPINGS}mapping/<path:message_id>/preview/": Fill(_message_id),
    f"{MAPPINGS}mapping/<path:message_id>/send-test/": Fill(_message_id),
    f"{MAPPINGS}mapping/<path:message_id>/drafts/new/": Fill(_message_id),
    f"{MAPPINGS}mapping/<path:message_id>/drafts/": Fill(_message_id),
    f"{MAPPINGS}draft/<int:draft_id>/": Fill(lambda s: {"draft_id": s.draft}, shows=True),
    f"{MAPPINGS}draft/<int:draft_id>/publish/": Fill(lambda s: {"draft_id": s.draft}),
    f"{MAPPINGS}draft/<int:draft_id>/discard/": Fill(lambda s: {"draft_id": s.draft}),
    f"{MAPPINGS}history/<path:key>/": Fill(lambda s: {"key": "default/added-to-team.html"}),
    f"{MAPPINGS}history/<path:key>/rollback/": Fill(
        lambda s: {"key": "default/added-to-team.html"}
    ),
    **_catch_all(MAPPINGS),
    # The journal.
    JOURNAL: [Fill(), Fill(query={"q": ADDRESS}, shows=True)],
    f"{JOURNAL}held/": Fill(shows=True),
    f"{JOURNAL}address/<path:address>/": Fill(lambda s: {"address": ADDRESS}, shows=True),
    f"{JOURNAL}export.csv": Fill(query={"q": ADDRESS}, shows=True),
    f"{JOURNAL}entry/<path:key>/": Fill(_key, shows=True),
    f"{JOURNAL}entry/<path:key>/email/": Fill(_key),
    f"{JOURNAL}entry/<path:key>/resend/": Fill(_key, shows=True),
    **_catch_all(JOURNAL),
    # The suppression list and an address's page.
    SUPPRESSION: [Fill(shows=True), Fill(query={"q": "pat"}, shows=True)],
    f"{SUPPRESSION}entry/<path:address>/": Fill(lambda s: {"address": ADDRESS}, shows=True),
    f"{SUPPRESSION}entry/<path:address>/remove/": Fill(lambda s: {"address": ADDRESS}, shows=True),
    f"{SUPPRESSION}entry/<path:address>/resubscribe/": Fill(lambda s: {"address": ADDRESS}),
    **_catch_all(SUPPRESSION),
    # Operations: the dashboard's controls, dead letters, jobs.
    OPS: Fill(),
    f"{OPS}pause/": Fill(),
    f"{OPS}send-stop/": Fill(),
    f"{OPS}dlq/": Fill(shows=True),
    f"{OPS}bulk-resend/": Fill(query={"message_id": "added-to-team"}),
    f"{OPS}template-check/": Fill(),
    f"{OPS}erase-recipient/": Fill(),
    f"{OPS}webhook-replay/": Fill(),
    **{
        f"{OPS}job/<int:pk>/{suffix}": [
            Fill(lambda s, kind=kind: {"pk": getattr(s, kind)})
            for kind in ("dlq_job", "resend_job")
        ]
        for suffix in ("", "progress/", "retry/")
    },
    **_catch_all(OPS),
    # Webhooks: a delivery's payload names its recipient.
    WEBHOOKS: Fill(),
    f"{WEBHOOKS}add/": Fill(),
    **{
        f"{WEBHOOKS}endpoint/<int:pk>/{suffix}": Fill(lambda s: {"pk": s.endpoint})
        for suffix in ("", "rotate/", "switch/", "remove/", "test/")
    },
    f"{WEBHOOKS}delivery/<int:pk>/": Fill(lambda s: {"pk": s.delivery}, shows=True),
    f"{WEBHOOKS}delivery/<int:pk>/replay/": Fill(lambda s: {"pk": s.delivery}),
    **_catch_all(WEBHOOKS),
}


def console_patterns() -> Iterator[tuple[str, str | None]]:
    """(route, name) of every URL pattern under /admin/, as Django's resolver holds them."""

    def walk(patterns, prefix: str) -> Iterator[tuple[str, str | None]]:
        for pattern in patterns:
            route = prefix + str(pattern.pattern)
            if isinstance(pattern, URLResolver):
                yield from walk(pattern.url_patterns, route)
            elif isinstance(pattern, URLPattern):
                yield route, pattern.name

    return (p for p in walk(get_resolver().url_patterns, "") if p[0].startswith("admin/"))


def test_the_table_covers_every_console_url_pattern():
    routes = {route for route, _ in console_patterns()}
    assert sorted(routes - TABLE.keys()) == [], "a new console URL: say in TABLE how to fill it"
    assert sorted(TABLE.keys() - routes) == [], "TABLE names a URL the console no longer has"


@pytest.fixture
def sample(aws, make_user) -> Sample:
    """One recipient, ADDRESS, named by a journal row, a log-only row, a suppression entry, a
    dead letter (read by a listing job), a bulk resend's step, a webhook delivery and a search in
    the read audit."""
    from axes.models import AccessAttempt, AccessFailureLog, AccessLog
    from django.contrib.auth.models import Group
    from django.contrib.contenttypes.models import ContentType

    from api.models import ApiToken
    from templates_admin.drafts.services import draft_create
    from templates_admin.models import CategoryDefinition
    from webhooks.models import WebhookDelivery, WebhookEndpoint

    aws.load_samples()
    put_rows(aws.dynamodb, "email-journal", [ROW, LOGGED_ONLY])
    container.current().suppression_list.add(
        ADDRESS, reason="bounce", detail="550 5.1.1", source="t", now=BASE_TIME
    )
    aws.sqs.send_message(
        QueueUrl=aws.dlq_url,
        MessageBody=json.dumps({"messageId": "added-to-team", "recipients": [{"email": ADDRESS}]}),
    )
    user = make_user(superuser=True)
    dlq_job = Job.objects.create(kind=Job.Kind.DLQ_LIST, inputs={}, created_by=user)
    job_run(job_id=dlq_job.pk, adapters=container.current())
    resend_job = Job.objects.create(
        kind=Job.Kind.BULK_RESEND,
        state=Job.State.SUCCEEDED,
        inputs={"message_id": "added-to-team"},
        created_by=user,
        total=1,
        done=1,
        result={"resent": 1, "skipped": 0, "failed": 0},
    )
    JobStep.objects.create(
        job=resend_job, key=ROW["Id"], outcome="done", detail={"journal_key": ROW["Id"]}
    )
    draft = draft_create(
        key="default/added-to-team.html", source="<p>x</p>", subject=None,
        message_id="added-to-team", user=user, adapters=container.current(),
    )  # fmt: skip
    CategoryDefinition.objects.get_or_create(slug="newsletters", defaults={"label": "News"})
    endpoint = WebhookEndpoint.objects.create(url="https://hooks.example.net/in", secret="s3")
    delivery = WebhookDelivery.objects.create(
        endpoint=endpoint, event_id="evt_1", event_type="email.sent", journal_key=ROW["Id"],
        event={}, body=json.dumps({"type": "email.sent", "data": {"recipient": ADDRESS}}),
    )  # fmt: skip
    token = ApiToken.objects.create(name="producer")
    attempt = AccessAttempt.objects.create(username="someone", failures_since_start=1)
    access_log = AccessLog.objects.create(username="someone")
    failure_log = AccessFailureLog.objects.create(username="someone")
    audit = read_record(channel=JournalReadAudit.Channel.CLI, action="recipient", query=ADDRESS)
    return Sample(
        user=user.pk,
        user_type=ContentType.objects.get_for_model(user).pk,
        group=Group.objects.get(name="Support").pk,
        draft=draft.pk,
        dlq_job=dlq_job.pk,
        resend_job=resend_job.pk,
        endpoint=endpoint.pk,
        delivery=delivery.pk,
        token=token.pk,
        attempt=attempt.pk,
        access_log=access_log.pk,
        failure_log=failure_log.pk,
        audit=audit.pk,
    )


def _url(name: str | None, fill: Fill, sample: Sample) -> str:
    if fill.path is not None:
        return fill.path(sample)
    return reverse(f"admin:{name}", kwargs=fill.kwargs(sample))


def _body(response) -> bytes:
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content)
    return response.content


def test_every_console_page_that_shows_an_address_records_the_read(client, sample):
    superuser = get_user_model().objects.get(pk=sample.user)  # allowed everywhere
    client.force_login(superuser)
    unaudited, silent = [], []
    for route, name in console_patterns():
        entry = TABLE[route]
        for fill in entry if isinstance(entry, list) else [entry]:
            url = _url(name, fill, sample)
            before = JournalReadAudit.objects.count()
            response = client.get(url, fill.query)
            body = _body(response).lower()
            shown = any(spelling in body for spelling in SHOWN)
            if shown and JournalReadAudit.objects.count() == before:
                unaudited.append(f"{url} ({response.status_code})")
            if fill.shows and not shown:
                silent.append(f"{url} ({response.status_code})")
            if route == "admin/logout/":
                client.force_login(superuser)
    assert not unaudited, "shown, not audited:\n" + "\n".join(unaudited)
    assert not silent, "the sample no longer puts the address on:\n" + "\n".join(silent)
