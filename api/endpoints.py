"""``/api/v1/``: the synchronous send API (django-ninja). Thin: authenticate, call, answer."""

from __future__ import annotations

import logging
from typing import Any

from django.http import HttpRequest, HttpResponse
from ninja import NinjaAPI, Status
from ninja.errors import AuthenticationError
from ninja.openapi.docs import ABS_TPL_PATH, Swagger
from ninja.openapi.schema import REF_TEMPLATE
from ninja.security.http import HttpAuthBase

from api import selectors, services
from api.models import ApiToken
from api.schemas import (
    EmailRequestDoc,
    ErrorOut,
    JournalRowOut,
    SendOut,
    SendProblemOut,
)
from api.sending import SendResult, email_send, invalid_field, send_request_parse
from api.webhook_schema import openapi_webhooks
from emailops.core.errors import EmailOpsError, InvalidRequest
from emailops.core.events import EventLog
from emailops.core.pipeline import Action
from emailops.redis.token_rate import RateLimitUnavailable, TokenRateLimiter

__all__ = ["api"]

logger = logging.getLogger("emailops.api")

# The largest SQS message: a request that could not go on the queue does not come in this way either.
MAX_BODY_BYTES = 256 * 1024
# What a client is told about transient trouble; the AWS detail (codes, ARNs, account ids) is logged.
UNAVAILABLE = "temporarily unavailable; retry after Retry-After seconds"

DESCRIPTION = """\
Send a transactional email synchronously, through the same pipeline as the queue consumer
(claim → send → mark on the journal, deduplicated by the journal's key), and read journal rows.

Authenticate with `Authorization: Bearer <token>`; tokens are per producer, made in the console
(API tokens) or with `manage.py create_api_token NAME`. Each token has its own limit on emails
(recipients) per minute; each read counts as one.

Each token is its own tenant: the rows it writes are keyed `api:<token id>:<key>` (the queue's
key for the same request, prefixed), so the same `dedupeId` from two tokens is two rows and two
emails, and a token reads (and is answered with) only rows it wrote.

`POST /api/v1/send` answers:

- **200** — every recipient is SENT, now or by an earlier request of this token with the same key
  (a repeated `dedupeId` sends nothing twice and reports the existing rows), or was never sent
  because the address is suppressed (status SUPPRESSED).
- **400** — the body breaks the EmailRequest contract, or has more recipients than the API takes
  in one request (`API_MAX_RECIPIENTS`, default 50) or than the token's per-minute limit; `field`
  names the field at fault. Nothing was written or sent.
- **401** — no token, an unknown one, or a revoked one.
- **413** — the body is larger than 256 KB (the largest SQS message).
- **422** — a permanent failure: unknown messageId, missing template, template error, an address
  SES refuses. The recipients' rows are FAILED (a SENT row is never overwritten) and `results`
  lists them; retrying the same request cannot help until the cause is fixed.
- **429** — this token's emails-per-minute limit; `Retry-After` says when the minute ends.
- **503** — transient trouble (AWS, or the rate limiter's Redis), or another consumer holds a live
  claim on a recipient; `Retry-After` says when to try again. Retrying the identical request is
  safe: rows already SENT are not sent again.
"""

_RETRY_AFTER = {
    "Retry-After": {
        "description": "Seconds to wait before retrying.",
        "schema": {"type": "integer"},
    }
}


class RateLimited(Exception):
    def __init__(self, retry_after: int) -> None:
        self.retry_after = retry_after
        super().__init__(f"rate limit reached; retry after {retry_after}s")


class BearerToken(HttpAuthBase):
    """``Authorization: Bearer <token>`` against ApiToken. (The token's limit is charged by each
    endpoint, which knows how many emails a request costs.)

    (ninja's HttpBearer logs the whole header under DEBUG; this never logs the token.)
    """

    openapi_scheme = "bearer"

    def __call__(self, request: HttpRequest) -> ApiToken | None:
        scheme, _, plaintext = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not plaintext.strip():
            return None
        return services.api_token_authenticate(plaintext.strip())


class BodyTooLarge(Exception):
    pass


def _charge(limiter: TokenRateLimiter, token: ApiToken, emails: int) -> None:
    """Count ``emails`` against the token's per-minute limit; raises RateLimited or
    RateLimitUnavailable (Redis down: refuse, never allow everything)."""
    decision = limiter.hit(token.token_hash, per_minute=token.emails_per_minute, cost=emails)
    if not decision.allowed:
        raise RateLimited(decision.retry_after)


class EmailOpsApi(NinjaAPI):
    def get_openapi_schema(self, **kwargs: Any):
        """Add the EmailRequest body's schema: the endpoint reads the body itself (validation is
        the core contract's), so ninja does not know it. And the delivery webhooks we POST to a
        producer's endpoint (OpenAPI 3.1 ``webhooks``), so a producer can generate a receiver."""
        schema = super().get_openapi_schema(**kwargs)
        body = EmailRequestDoc.model_json_schema(ref_template=REF_TEMPLATE)
        components = schema["components"].setdefault("schemas", {})
        components |= body.pop("$defs", {})
        components["EmailRequest"] = body
        webhooks, payloads = openapi_webhooks(REF_TEMPLATE)
        clashes = set(payloads) & set(components)
        if clashes:  # a payload shape named like an API schema would silently replace it
            raise RuntimeError(f"webhook payload schemas clash with the API's: {sorted(clashes)}")
        components |= payloads
        schema["webhooks"] = webhooks
        return schema


class BundledSwagger(Swagger):
    """ninja's docs page with the Swagger UI it ships (served by whitenoise, allowed by the CSP),
    not the CDN's: ninja is not an installed app (importing it costs a consumer ~1 s at start-up),
    so its files are found through TEMPLATES' and STATICFILES_DIRS' entries in settings."""

    template_cdn = str(ABS_TPL_PATH / "swagger.html")


api = EmailOpsApi(
    title="emailops send API",
    docs=BundledSwagger(),
    version="1",
    description=DESCRIPTION,
    urls_namespace="api-v1",
    auth=BearerToken(),
)


def _error(request: HttpRequest, status: int, message: str, **headers: str) -> HttpResponse:
    response = api.create_response(request, {"error": message, "field": None}, status=status)
    for name, value in headers.items():
        response[name] = value
    return response


@api.exception_handler(AuthenticationError)
def _unauthorized(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    return _error(
        request, 401, "missing, unknown or revoked bearer token", **{"WWW-Authenticate": "Bearer"}
    )


@api.exception_handler(RateLimited)
def _rate_limited(request: HttpRequest, exc: RateLimited) -> HttpResponse:
    return _error(request, 429, str(exc), **{"Retry-After": str(exc.retry_after)})


@api.exception_handler(RateLimitUnavailable)
def _limiter_down(request: HttpRequest, exc: RateLimitUnavailable) -> HttpResponse:
    return _error(request, 503, UNAVAILABLE, **{"Retry-After": str(exc.retry_after)})


@api.exception_handler(BodyTooLarge)
def _too_large(request: HttpRequest, exc: BodyTooLarge) -> HttpResponse:
    return _error(request, 413, f"the body is larger than {MAX_BODY_BYTES} bytes (256 KB)")


@api.exception_handler(EmailOpsError)
def _aws_trouble(request: HttpRequest, exc: EmailOpsError) -> HttpResponse:
    # Reading the journal failed. For a send, the rows' keys make the identical retry safe.
    EventLog(logger).warning("api.unavailable", path=request.path, error=exc.describe())
    return _error(request, 503, UNAVAILABLE, **{"Retry-After": "5"})


def _body(request: HttpRequest) -> bytes:
    # The header first: a huge body is refused before Django reads it into memory.
    try:
        declared = int(request.headers.get("Content-Length") or 0)
    except ValueError:
        declared = 0
    if declared > MAX_BODY_BYTES:
        raise BodyTooLarge
    body = request.body
    if len(body) > MAX_BODY_BYTES:
        raise BodyTooLarge
    return body


def _result(item) -> dict[str, Any]:
    row = item.row
    return {
        "recipient": item.recipient,
        "id": item.id,
        "status": row.status or None if row else None,
        "sesMessageId": row.ses_message_id or None if row else None,
        "error": row.error or None if row else None,
    }


_STATUS = {Action.DELETE: 200, Action.DEAD_LETTER: 422, Action.RETRY: 503, Action.WAIT: 503}


@api.post(
    "/send",
    response={
        200: SendOut,
        400: ErrorOut,
        401: ErrorOut,
        413: ErrorOut,
        422: SendProblemOut,
        429: ErrorOut,
        503: SendProblemOut | ErrorOut,
    },
    summary="Send an EmailRequest now",
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {"schema": {"$ref": "#/components/schemas/EmailRequest"}}
            },
        },
        "responses": {429: {"headers": _RETRY_AFTER}, 503: {"headers": _RETRY_AFTER}},
    },
)
def send(request: HttpRequest, response: HttpResponse):
    token: ApiToken = request.auth
    adapters = request.container
    try:
        parsed = send_request_parse(
            body=_body(request),
            namespace=token.namespace,
            max_recipients=adapters.config.api.max_recipients,
        )
    except InvalidRequest as exc:
        return Status(400, {"error": exc.describe(), "field": invalid_field(exc)})
    if 0 < token.emails_per_minute < parsed.emails:
        message = (
            f"recipients has {parsed.emails} entries, more than this token may send in a "
            f"minute ({token.emails_per_minute})"
        )
        return Status(400, {"error": message, "field": "recipients"})
    _charge(adapters.token_rate_limiter, token, parsed.emails)
    sent: SendResult = email_send(parsed=parsed, adapters=adapters)
    # The rows handed back are journal reads too: audited like a GET of each.
    services.journal_read_by_token(
        token=token, action="send", queries=[item.id for item in sent.results if item.row]
    )
    results = [_result(item) for item in sent.results]
    status = _STATUS[sent.outcome.action]
    if status == 200:
        return Status(200, {"messageId": sent.request.message_id, "results": results})
    if sent.retry_after:
        response["Retry-After"] = str(sent.retry_after)
    reason = sent.outcome.reason
    if status == 503:  # transient trouble's text is AWS detail: the log has it, the client not
        EventLog(logger).warning(
            "api.send_unavailable", messageId=sent.request.message_id, error=reason
        )
        reason = UNAVAILABLE
        results = [r | {"error": None} for r in results]
    problem = {"error": reason, "messageId": sent.request.message_id}
    return Status(status, problem | {"results": results})


@api.get(
    "/sends/{path:id}",
    response={
        200: JournalRowOut,
        400: ErrorOut,
        401: ErrorOut,
        404: ErrorOut,
        429: ErrorOut,
        503: ErrorOut,
    },
    summary="One journal row",
    description="The journal row with this Id (a `results[].id` of a send) if this token wrote "
    "it (any other row is a 404), attributes as stored; of the context, only the variables the "
    "template manifest declares for its messageId, sensitive-looking ones masked as in the "
    "console. The camelCase fields read the row as the console does: `state`, `stuck` and "
    "`stuckSince` (the same lease rule), `delivery` and `failure` (the same words). Every read "
    "is audited.",
    openapi_extra={"responses": {429: {"headers": _RETRY_AFTER}, 503: {"headers": _RETRY_AFTER}}},
)
def send_detail(request: HttpRequest, id: str):
    token: ApiToken = request.auth
    adapters = request.container
    _charge(adapters.token_rate_limiter, token, 1)
    services.journal_read_by_token(token=token, action="get", queries=[id])
    try:
        row = selectors.journal_row_for_token(token=token, id=id, adapters=adapters)
    except EmailOpsError as exc:
        if not exc.permanent:
            raise
        return Status(400, {"error": "not a journal row Id", "field": "id"})  # e.g. too long
    if row is None:
        return Status(
            404, {"error": f"this token wrote no journal row with Id {id!r}", "field": None}
        )
    return Status(200, row)
