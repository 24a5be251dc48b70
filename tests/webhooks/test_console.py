"""The webhooks area through Django's test client, on in-process moto with a local receiver: who
may open it, the secret shown once, disable/enable/remove, the delivery log (attempts, a masked
payload), replaying one delivery and the failed ones of a range (a job, run in-process as
tests/console/test_ops_views.py does), the test event, and the journal row's deliveries."""

from __future__ import annotations

import json
import logging
from datetime import timedelta
from html import unescape

import pytest
from django.contrib.auth.models import Permission
from django.utils import timezone
from standardwebhooks.webhooks import Webhook

from audit.models import JournalReadAudit
from emailops import container
from emailops.core.masking import MASK
from emailops.core.webhooks import failed_event, sent_event
from jobs.engine import job_run
from jobs.models import Job
from tests.journal_factory import BASE_TIME, journal_row, put_rows
from tests.webhooks.conftest import opened
from webhooks import delivery, endpoints
from webhooks.models import WebhookDelivery, WebhookEndpoint

pytestmark = pytest.mark.django_db

BASE = "/admin/templates_admin/webhookspage/"
OPS = "/admin/templates_admin/operationspage/"
JOURNAL = "/admin/templates_admin/emailjournalpage/"
KEY = "row-with-a-token"
TOKEN = "tok-9f8e7d6c5b4a"  # the row's context value under a sensitive key


def text(response) -> str:
    return unescape(response.content.decode())


@pytest.fixture
def console(aws, loopback_webhooks, receiver, client, make_user):
    """A superuser signed in, the journal row KEY (its context holds a token), and the receiver."""
    put_rows(
        aws.dynamodb,
        "email-journal",
        [
            journal_row(
                "erin@example.com",
                at=BASE_TIME,
                key=KEY,
                Context={"teamName": "Curators", "apiToken": TOKEN},
            )
        ],
    )
    client.force_login(make_user(superuser=True))
    return client


def made_delivery(endpoint: WebhookEndpoint, event) -> WebhookDelivery:
    (delivery_id,) = [
        d
        for d in delivery.fan_out(
            event.to_dict(), journal_reader=container.current().journal_reader
        )
        if WebhookDelivery.objects.get(pk=d).endpoint_id == endpoint.pk
    ]
    return WebhookDelivery.objects.get(pk=delivery_id)


def failed_delivery(endpoint, receiver, n: int = 0) -> WebhookDelivery:
    """A delivery the receiver refused with a 400: given up at once (FAILED)."""
    event = sent_event(KEY, ses_message_id=f"ses-{n}", sent_at=BASE_TIME)
    found = made_delivery(endpoint, event)
    receiver.answers.append(400)
    assert (
        delivery.delivery_attempt(found.pk, adapters=container.current(), now=timezone.now()).state
        == "failed"
    )
    found.refresh_from_db()
    return found


def test_a_support_user_or_a_lead_gets_403_everywhere(aws, loopback_webhooks, client, make_user):
    endpoint, _ = endpoints.endpoint_add(
        adapters=container.current(), url="http://127.0.0.1:9/hooks"
    )
    found = WebhookDelivery.objects.create(
        endpoint=endpoint, event_id="evt_1", event_type="email.sent", journal_key=KEY, event={},
        body="{}",
    )  # fmt: skip
    for group in ("Support", "Support leads"):
        client.force_login(make_user(group))
        for page in (
            BASE,
            BASE + "add/",
            f"{BASE}endpoint/{endpoint.pk}/",
            f"{BASE}endpoint/{endpoint.pk}/rotate/",
            f"{BASE}delivery/{found.pk}/",
            OPS + "webhook-replay/",
        ):
            assert client.get(page).status_code == 403, (group, page)
        for page in (
            BASE + "add/",
            f"{BASE}endpoint/{endpoint.pk}/rotate/",
            f"{BASE}endpoint/{endpoint.pk}/remove/",
            f"{BASE}endpoint/{endpoint.pk}/test/",
            f"{BASE}delivery/{found.pk}/replay/",
        ):
            assert client.post(page, {"url": "https://example.com/x"}).status_code == 403
        assert "superuser" in text(client.get(BASE))
        client.logout()
    endpoint.refresh_from_db()
    assert WebhookEndpoint.objects.count() == 1 and endpoint.previous_secret == ""


def test_the_permission_alone_opens_the_area(aws, client, make_user):
    user = make_user()  # staff, in no group
    user.user_permissions.add(Permission.objects.get(codename="manage_webhooks"))
    client.force_login(user)
    assert client.get(BASE).status_code == 200
    index = text(client.get("/admin/"))
    assert BASE in index


def test_adding_shows_the_secret_once_and_only_on_the_next_page(console, receiver):
    page = console.post(
        BASE + "add/",
        {
            "url": receiver.url,
            "description": "CRM",
            "event_types": ["email.bounced", "email.complained"],
            "message_ids": "added-to-team\nwelcome",
            "organization": "42",
            "producer_scope": "queue",
            "include_context_keys": "on",
        },
    )
    assert page.status_code == 200 and "no-store" in page["Cache-Control"]
    endpoint = WebhookEndpoint.objects.get()
    assert opened(endpoint.secret).startswith("whsec_") and opened(endpoint.secret) in text(page)
    assert endpoint.event_types == ["email.bounced", "email.complained"]
    assert endpoint.message_ids == ["added-to-team", "welcome"]
    assert (endpoint.organization, endpoint.producer) == ("42", "")
    assert endpoint.include_context_keys and endpoint.description == "CRM"
    for later in (BASE, f"{BASE}endpoint/{endpoint.pk}/"):
        shown = text(console.get(later))
        assert receiver.url in shown and opened(endpoint.secret) not in shown
    assert "email.bounced, email.complained" in text(console.get(BASE))


def test_adding_refuses_a_private_address_and_a_token_scope_without_a_namespace(console):
    page = console.post(BASE + "add/", {"url": "http://10.0.0.1/hooks", "producer_scope": "any"})
    assert page.status_code == 400 and "private" in text(page)
    page = console.post(BASE + "add/", {"url": "https://example.com/x", "producer_scope": "token"})
    assert page.status_code == 400 and "namespace" in text(page)
    assert not WebhookEndpoint.objects.exists()


@pytest.mark.parametrize(
    ("url", "resolved", "words"),
    [
        ("https://hooks.example.org/x", "100.64.0.1", "100.64.0.1 is a private address"),
        ("https://[::ffff:100.64.0.1]/x", "::ffff:100.64.0.1", "is a private address"),
        ("https://u:p4ss@example.org/", "93.184.216.34", "user information (user:password@)"),
    ],
)
def test_adding_refuses_shared_addresses_and_user_information(
    console, monkeypatch, url, resolved, words, settings
):
    from webhooks import destination

    settings.WEBHOOK_ALLOW_LOOPBACK = False  # production's posture
    container.reset()
    monkeypatch.setattr(destination, "resolve", lambda host, port: [resolved])
    page = console.post(BASE + "add/", {"url": url, "producer_scope": "any"})
    assert page.status_code == 400 and words in text(page)
    assert "p4ss" not in text(page)  # not even back in the field
    assert not WebhookEndpoint.objects.exists()


def test_rotating_shows_the_new_secret_once_and_the_old_one_signs_until_the_overlap_ends(
    console, receiver
):
    endpoint, old = endpoints.endpoint_add(adapters=container.current(), url=receiver.url)
    assert "Rotate" in text(console.get(f"{BASE}endpoint/{endpoint.pk}/rotate/"))
    page = console.post(f"{BASE}endpoint/{endpoint.pk}/rotate/")
    endpoint.refresh_from_db()
    assert "no-store" in page["Cache-Control"] and opened(endpoint.secret) in text(page)
    assert opened(endpoint.secret) != old and opened(endpoint.previous_secret) == old
    assert endpoint.previous_secret_until > timezone.now() + timedelta(hours=23)
    shown = text(console.get(f"{BASE}endpoint/{endpoint.pk}/"))
    assert opened(endpoint.secret) not in shown and old not in shown and "signs beside" in shown


def test_disable_and_enable_need_a_reason_and_are_logged(console, receiver, caplog):
    endpoint, _ = endpoints.endpoint_add(adapters=container.current(), url=receiver.url)
    switch = f"{BASE}endpoint/{endpoint.pk}/switch/"
    assert console.post(switch, {"reason": " "}).status_code == 400
    caplog.set_level("INFO", logger="webhooks")
    assert console.post(switch, {"reason": "receiver migrating"}).status_code == 302
    endpoint.refresh_from_db()
    assert not endpoint.enabled and endpoint.disabled_reason == "receiver migrating"
    assert "receiver migrating" in text(console.get(BASE))
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(failing=True, consecutive_failures=12)
    assert console.post(switch, {"reason": "migrated"}).status_code == 302
    endpoint.refresh_from_db()
    assert endpoint.enabled and not endpoint.failing and endpoint.consecutive_failures == 0
    logged = caplog.text
    assert "webhook.endpoint_disabled" in logged and "webhook.endpoint_enabled" in logged
    assert "user=root" in logged


def test_removing_deletes_the_endpoint_and_its_log(console, receiver):
    endpoint, _ = endpoints.endpoint_add(adapters=container.current(), url=receiver.url)
    failed_delivery(endpoint, receiver)
    assert "1 delivery" in text(console.get(f"{BASE}endpoint/{endpoint.pk}/remove/"))
    assert console.post(f"{BASE}endpoint/{endpoint.pk}/remove/").status_code == 302
    assert not WebhookEndpoint.objects.exists() and not WebhookDelivery.objects.exists()


def test_the_delivery_log_shows_attempts_and_masks_sensitive_values(console, receiver):
    endpoint, _ = endpoints.endpoint_add(
        adapters=container.current(), url=receiver.url, include_context_keys=True
    )
    event = failed_event(
        KEY, error=f"template said: token {TOKEN} expired", error_kind="Render", permanent=True,
        at=BASE_TIME,
    )  # fmt: skip
    found = made_delivery(endpoint, event)
    assert TOKEN in found.body  # the receiver is sent the error as it is
    receiver.answers = [503]
    assert (
        delivery.delivery_attempt(found.pk, adapters=container.current(), now=timezone.now()).state
        == "pending"
    )
    log = text(console.get(f"{BASE}endpoint/{endpoint.pk}/"))
    assert "email.failed" in log and found.event_id in log and "503" in log
    assert f"{JOURNAL}entry/{KEY}/" in log
    assert "email.failed" not in text(console.get(f"{BASE}endpoint/{endpoint.pk}/?state=failed"))

    page = text(console.get(f"{BASE}delivery/{found.pk}/"))
    assert "503" in page and "ms" in page  # the attempt: its status and latency
    payload = json.loads(page.split('<pre id="webhooks-payload">')[1].split("</pre>")[0])
    assert TOKEN not in page
    assert payload["data"]["error"] == f"template said: token {MASK} expired"
    assert payload["data"]["journalKey"] == KEY  # a row key, not a secret
    assert payload["data"]["contextKeys"] == ["apiToken", "teamName"]  # names, no values
    assert payload["data"]["recipient"] == "erin@example.com"
    audit = JournalReadAudit.objects.get(action="webhook-delivery")
    assert (audit.query, audit.actor) == (KEY, "root")


def test_a_payload_key_that_names_a_secret_is_masked_without_the_row(console, receiver):
    endpoint, _ = endpoints.endpoint_add(adapters=container.current(), url=receiver.url)
    found = WebhookDelivery.objects.create(
        endpoint=endpoint, event_id="evt_click", event_type="email.clicked",
        journal_key="expired-row", event={},
        body=json.dumps({"type": "email.clicked", "data": {"link": "https://x.test/?t=abc"}}),
    )  # fmt: skip
    page = text(console.get(f"{BASE}delivery/{found.pk}/"))
    assert "https://x.test/?t=abc" not in page and MASK in page
    assert "under their keys only" in page


def test_replaying_one_delivery_posts_it_again_now_with_the_same_event_id(console, receiver):
    endpoint, _ = endpoints.endpoint_add(adapters=container.current(), url=receiver.url)
    found = failed_delivery(endpoint, receiver)
    response = console.post(f"{BASE}delivery/{found.pk}/replay/")
    assert response.status_code == 302 and response["Location"] == f"{BASE}delivery/{found.pk}/"
    found.refresh_from_db()
    assert found.state == "delivered" and found.attempts == 2 and found.last_status == 200
    assert [h["webhook-id"] for h, _ in receiver.received] == [found.event_id] * 2
    page = text(console.get(response["Location"]))
    assert "HTTP 200, now delivered" in page
    assert [a.status_code for a in found.log.all()] == [400, 200]


def test_replaying_to_a_disabled_endpoint_is_refused(console, receiver):
    endpoint, _ = endpoints.endpoint_add(adapters=container.current(), url=receiver.url)
    found = failed_delivery(endpoint, receiver)
    endpoints.endpoint_set_enabled(endpoint_id=endpoint.pk, enabled=False, reason="off")
    page = text(console.post(f"{BASE}delivery/{found.pk}/replay/", follow=True))
    assert "enable it before replaying" in page and len(receiver.received) == 1


def local_minute(when) -> str:
    return timezone.localtime(when).strftime("%Y-%m-%dT%H:%M")


def test_replaying_the_failed_deliveries_of_a_range_is_a_job(
    console, receiver, make_user, django_capture_on_commit_callbacks
):
    endpoint, _ = endpoints.endpoint_add(adapters=container.current(), url=receiver.url)
    other, _ = endpoints.endpoint_add(adapters=container.current(), url=receiver.url)
    chosen = [failed_delivery(endpoint, receiver, n) for n in range(2)]
    old = failed_delivery(endpoint, receiver, 9)
    WebhookDelivery.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=3))
    WebhookDelivery.objects.filter(endpoint=other).delete()
    posted = len(receiver.received)
    start = text(console.get(f"{BASE}endpoint/{endpoint.pk}/"))
    assert f"{OPS}webhook-replay/?endpoint={endpoint.pk}" in start
    form = text(console.get(f"{OPS}webhook-replay/?endpoint={endpoint.pk}"))
    assert f'<option value="{endpoint.pk}" selected>' in form

    now = timezone.now()
    with django_capture_on_commit_callbacks() as callbacks:
        response = console.post(
            OPS + "webhook-replay/",
            {
                "endpoint": endpoint.pk,
                "since": local_minute(now - timedelta(hours=1)),
                "until": local_minute(now + timedelta(minutes=2)),
            },
        )
    job = Job.objects.get(kind=Job.Kind.WEBHOOK_REPLAY)
    assert response.status_code == 302 and response["Location"] == f"{OPS}job/{job.pk}/"
    assert len(callbacks) == 1  # handed to a worker on commit; here it runs in-process
    assert job.inputs["endpoint"] == endpoint.pk and job.created_by.username == "root"
    assert job_run(job_id=job.pk, adapters=container.current()).state == Job.State.SUCCEEDED
    job.refresh_from_db()
    assert (job.done, job.total) == (2, 2)
    assert job.result["delivered"] == 2 and job.result["selection"]["matched"] == 2
    assert len(receiver.received) == posted + 2
    states = dict(WebhookDelivery.objects.values_list("pk", "state"))
    assert [states[d.pk] for d in chosen] == ["delivered", "delivered"]
    assert states[old.pk] == "failed"  # outside the range
    page = text(console.get(f"{OPS}job/{job.pk}/"))
    assert "2</strong> delivered" in page and str(chosen[0].pk) in page
    # Run again (a redelivered task): nothing is replayed twice.
    assert job_run(job_id=job.pk, adapters=container.current()).state == Job.State.SUCCEEDED
    assert len(receiver.received) == posted + 2
    # The job names the endpoint: its page is for those who manage webhooks, as the area is.
    console.force_login(make_user("Support leads"))
    assert console.get(f"{OPS}job/{job.pk}/").status_code == 403


def test_the_replay_job_refuses_a_range_that_ends_before_it_starts(console, receiver):
    endpoint, _ = endpoints.endpoint_add(adapters=container.current(), url=receiver.url)
    now = timezone.now()
    page = console.post(
        OPS + "webhook-replay/",
        {
            "endpoint": endpoint.pk,
            "since": local_minute(now),
            "until": local_minute(now - timedelta(hours=1)),
        },
    )
    assert page.status_code == 400 and "ends before it starts" in text(page)
    assert not Job.objects.exists()


def test_a_test_event_reaches_the_receiver_signed_and_its_status_is_shown(console, receiver):
    endpoint, secret = endpoints.endpoint_add(
        adapters=container.current(), url=receiver.url, event_types=["email.bounced"]
    )
    page = text(console.post(f"{BASE}endpoint/{endpoint.pk}/test/", follow=True))
    ((headers, body),) = receiver.received
    event = Webhook(secret).verify(body, headers)
    assert event["type"] == "email.test" and event["data"]["test"] is True
    assert event["data"]["messageId"] == "emailops-test"
    assert f"Test event {headers['webhook-id']} (email.test): HTTP 200" in page
    receiver.answers = [500]
    page = text(console.post(f"{BASE}endpoint/{endpoint.pk}/test/", follow=True))
    assert "HTTP 500" in page
    endpoint.refresh_from_db()
    assert endpoint.consecutive_failures == 0 and not WebhookDelivery.objects.exists()


def test_the_journal_row_page_lists_its_webhook_deliveries(console, receiver, client, make_user):
    endpoint, _ = endpoints.endpoint_add(adapters=container.current(), url=receiver.url)
    found = failed_delivery(endpoint, receiver)
    page = text(console.get(f"{JOURNAL}entry/{KEY}/"))
    listed = page.split('id="journal-webhook-deliveries"')[1].split("</table>")[0]
    assert receiver.url in listed and "email.sent" in listed and "failed" in listed
    assert "400" in listed and f"{BASE}delivery/{found.pk}/" in listed
    client.force_login(make_user("Support"))  # reads the row; no endpoint URL, no log link
    listed = text(client.get(f"{JOURNAL}entry/{KEY}/")).split('id="journal-webhook-deliveries"')[1]
    listed = listed.split("</table>")[0]
    assert f"endpoint #{endpoint.pk}" in listed and "email.sent" in listed
    assert receiver.url not in listed and BASE not in listed


def test_after_creation_no_page_and_no_log_line_shows_a_secret(console, receiver, caplog):
    """Issue 32: the secret is on the one answer that made it, and nowhere after: not on any page
    of the area (the list, the endpoint, its delivery log and a delivery, the confirmations), not
    in a log line; nor the sealed form the database keeps."""
    caplog.set_level(logging.DEBUG)
    added = console.post(BASE + "add/", {"url": receiver.url, "producer_scope": "any"})
    endpoint = WebhookEndpoint.objects.get()
    first = opened(endpoint.secret)
    assert first in text(added)
    rotated = console.post(f"{BASE}endpoint/{endpoint.pk}/rotate/")
    endpoint.refresh_from_db()
    second = opened(endpoint.secret)
    assert second in text(rotated) and first not in text(rotated)
    found = made_delivery(endpoint, sent_event(KEY, ses_message_id="ses-s", sent_at=BASE_TIME))
    delivery.delivery_attempt(found.pk, adapters=container.current(), now=timezone.now())
    assert console.post(f"{BASE}endpoint/{endpoint.pk}/test/").status_code == 302
    assert len(receiver.received) == 2  # both signed, by both secrets (the overlap)
    pages = [
        BASE,
        f"{BASE}endpoint/{endpoint.pk}/",
        f"{BASE}endpoint/{endpoint.pk}/rotate/",
        f"{BASE}endpoint/{endpoint.pk}/switch/",
        f"{BASE}endpoint/{endpoint.pk}/remove/",
        f"{BASE}delivery/{found.pk}/",
        f"{BASE}add/",
    ]
    for page in pages:
        shown = console.get(page)
        assert shown.status_code == 200, page
        for value in (first, second, endpoint.secret, endpoint.previous_secret):
            assert value not in text(shown), page
        assert "whsec_" not in text(shown), page
    for value in (first, second, endpoint.secret, endpoint.previous_secret):
        assert value not in caplog.text
    assert "webhook.endpoint_added" in caplog.text and "webhook.endpoint_rotated" in caplog.text
