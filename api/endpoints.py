"""``/api/v1/``: the synchronous send API (django-ninja). Thin: authenticate, call, answer."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from ninja import NinjaAPI, Status
from ninja.errors import AuthenticationError
from ninja.openapi.schema import REF_TEMPLATE
from ninja.security.http import HttpAuthBase

from api import ratelimit, services
from api.models import ApiToken
from api.schemas import (
    EmailRequestDoc,
    ErrorOut,
    JournalRowOut,
    SendOut,
    SendProblemOut,
)
from api.sending import SendResult, email_send, invalid_field
from emailops import wiring
from emailops.core.errors import EmailOpsError, InvalidRequest
from emailops.core.pipeline import Action
from templates_admin.journal.presentation import masked_row

__all__ = ["api"]

DESCRIPTION = """\
Send a transactional email synchronously, through the same pipeline as the queue consumer
(claim → send → mark on the journal, deduplicated by the journal's key), and read journal rows.

Authenticate with `Authorization: Bearer <token>`; tokens are per producer, made in the console
(API tokens) or with `manage.py create_api_token NAME`. Each token has its own requests-per-minute
limit.

`POST /api/v1/send` answers:

- **200** — every recipient is SENT, now or by an earlier request with the same key (a repeated
  `dedupeId` sends nothing twice and reports the existing rows), or was never sent because the
  address is suppressed (status SUPPRESSED).
- **400** — the body breaks the EmailRequest contract; `field` names the field at fault. Nothing
  was written.
- **401** — no token, an unknown one, or a revoked one.
- **422** — a permanent failure: unknown messageId, missing template, template error, an address
  SES refuses. The recipients' rows are FAILED (a SENT row is never overwritten) and `results`
  lists them; retrying the same request cannot help until the cause is fixed.
- **429** — this token's own rate limit; `Retry-After` says when the minute ends.
- **503** — transient AWS trouble, or another consumer holds a live claim on a recipient;
  `Retry-After` says when to try again. Retrying the identical request is safe: rows already
  SENT are not sent again.
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
    """``Authorization: Bearer <token>`` against ApiToken, then the token's own rate limit.

    (ninja's HttpBearer logs the whole header under DEBUG; this never logs the token.)
    """

    openapi_scheme = "bearer"

    def __call__(self, request: HttpRequest) -> ApiToken | None:
        scheme, _, plaintext = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not plaintext.strip():
            return None
        token = services.api_token_authenticate(plaintext.strip())
        if token is None:
            return None
        decision = ratelimit.token_rate_limiter().hit(
            token.token_hash, per_minute=token.requests_per_minute
        )
        if not decision.allowed:
            raise RateLimited(decision.retry_after)
        return token


class EmailOpsApi(NinjaAPI):
    def get_openapi_schema(self, **kwargs: Any):
        """Add the EmailRequest body's schema: the endpoint reads the body itself (validation is
        the core contract's), so ninja does not know it."""
        schema = super().get_openapi_schema(**kwargs)
        body = EmailRequestDoc.model_json_schema(ref_template=REF_TEMPLATE)
        components = schema["components"].setdefault("schemas", {})
        components |= body.pop("$defs", {})
        components["EmailRequest"] = body
        return schema


api = EmailOpsApi(
    title="emailops send API",
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


@api.exception_handler(EmailOpsError)
def _aws_trouble(request: HttpRequest, exc: EmailOpsError) -> HttpResponse:
    # Reading the journal failed. For a send, the rows' keys make the identical retry safe.
    return _error(request, 503, exc.describe(), **{"Retry-After": "5"})


def _result(item) -> dict[str, Any]:
    row = item.row or {}
    return {
        "recipient": item.recipient,
        "id": item.id,
        "status": row.get("Status"),
        "sesMessageId": row.get("SesMessageId"),
        "error": row.get("Error"),
    }


_STATUS = {Action.DELETE: 200, Action.DEAD_LETTER: 422, Action.RETRY: 503, Action.WAIT: 503}


@api.post(
    "/send",
    response={
        200: SendOut,
        400: ErrorOut,
        401: ErrorOut,
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
    try:
        sent: SendResult = email_send(body=request.body)
    except InvalidRequest as exc:
        return Status(400, {"error": exc.describe(), "field": invalid_field(exc)})
    results = [_result(item) for item in sent.results]
    status = _STATUS[sent.outcome.action]
    if status == 200:
        return Status(200, {"messageId": sent.request.message_id, "results": results})
    if sent.retry_after:
        response["Retry-After"] = str(sent.retry_after)
    problem = {"error": sent.outcome.reason, "messageId": sent.request.message_id}
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
    description="The journal row with this Id (a `results[].id` of a send), attributes as stored; "
    "context values under sensitive keys are masked as in the console. Every read is audited.",
    openapi_extra={"responses": {429: {"headers": _RETRY_AFTER}, 503: {"headers": _RETRY_AFTER}}},
)
def send_detail(request: HttpRequest, id: str):
    services.journal_read_by_token(token=request.auth, action="get", query=id)
    try:
        row = wiring.journal().get(id)
    except EmailOpsError as exc:
        if not exc.permanent:
            raise
        return Status(400, {"error": exc.describe(), "field": "id"})  # e.g. longer than a key
    if row is None:
        return Status(404, {"error": f"no journal row has Id {id!r}", "field": None})
    return Status(200, masked_row(row))
