"""A fault- and latency-injecting HTTP proxy for AWS calls, in front of moto server.

boto3 clients reach it through ``AWS_ENDPOINT_URL``. It names each call's service and operation
(the SigV4 credential scope, then ``X-Amz-Target``, form ``Action=`` or the S3 path), applies the
faults the harness has switched on (each with a probability, a time window and an optional count),
forwards everything else to moto unchanged and records every call: who made it, what it was, how it
ended. The harness reads the records to count SES sends per second, per recipient and per cause.

Loopback only, a bounded number of connections, one thread per client connection. botocore
retries injected errors like real ones (standard mode, 3 attempts), so one logical send can show
up as several calls here; the records keep every one.

Client identity: a process started with ``AWS_SDK_UA_APP_ID=<name>`` puts ``app/<name>`` in its
User-Agent; the records carry that name, so the fault suite knows which consumer made a call.
"""

from __future__ import annotations

import contextlib
import http.client
import http.server
import json
import random
import re
import socket
import socketserver
import struct
import sys
import threading
import time
import uuid
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from email.utils import parseaddr
from urllib.parse import parse_qs, urlsplit

__all__ = [
    "AwsProxy",
    "Call",
    "Fault",
    "dynamodb_throttling",
    "hung",
    "latency",
    "lost_ses_replies",
    "max_in_window",
    "ses_5xx",
    "ses_throttling",
    "sqs_5xx",
    "visibility_failures",
]

SES_SEND_OPERATIONS = frozenset({"SendEmail", "SendRawEmail"})
VISIBILITY_OPERATIONS = frozenset({"ChangeMessageVisibility", "ChangeMessageVisibilityBatch"})
_HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "content-length",
}
_SCOPE = re.compile(r"Credential=[^/]+/\d{8}/[^/]+/([^/]+)/aws4_request")
_APP_ID = re.compile(r"\bapp/([^\s]+)")
_XML_CODE = re.compile(rb"<Code>([^<]*)</Code>")
_SES_ID = re.compile(rb"<MessageId>([^<]*)</MessageId>")


# --- Faults -------------------------------------------------------------------------------------


@dataclass
class Fault:
    """One rule. ``kind`` is "latency" (add ``latency`` seconds, half before forwarding and half
    after), "hang" (take the call, never forward it, say nothing for ``latency`` seconds, then
    reset the connection), "error" (answer ``status``/``code``/``message`` without forwarding) or "lost_reply"
    (forward, so the call takes effect, then reset the connection, or answer ``status`` if it is
    set: the client never sees the real reply). A rule applies to matching calls inside [start, end) (epoch seconds, None = open)
    with ``probability``, at most ``limit`` times."""

    kind: str
    service: str = "*"
    operations: frozenset[str] | None = None  # None: every operation of the service
    probability: float = 1.0
    start: float | None = None
    end: float | None = None
    limit: int | None = None
    latency: float = 0.0
    status: int = 500
    code: str = "InternalFailure"
    message: str = "injected by the test proxy"
    name: str = ""
    hits: int = 0

    def matches(self, service: str, operation: str, now: float) -> bool:
        if self.service != "*" and self.service != service:
            return False
        if self.operations is not None and operation not in self.operations:
            return False
        if self.start is not None and now < self.start:
            return False
        if self.end is not None and now >= self.end:
            return False
        return self.limit is None or self.hits < self.limit

    def during(self, seconds: float, *, after: float = 0.0) -> Fault:
        """The same rule, active from ``after`` seconds from now for ``seconds``."""
        start = time.time() + after
        return replace(self, start=start, end=start + seconds, hits=0)


def _ops(operations: Iterable[str] | None) -> frozenset[str] | None:
    return None if operations is None else frozenset(operations)


def latency(
    seconds: float, *, service: str = "*", operations: Iterable[str] | None = None
) -> Fault:
    return Fault("latency", service, _ops(operations), latency=seconds, name=f"latency {seconds}s")


def ses_throttling(probability: float = 1.0) -> Fault:
    return Fault(
        "error",
        "ses",
        SES_SEND_OPERATIONS,
        probability,
        status=400,
        code="Throttling",
        message="Maximum sending rate exceeded.",
        name="SES throttling",
    )


def ses_5xx(
    probability: float = 1.0, *, operations: Iterable[str] | None = SES_SEND_OPERATIONS
) -> Fault:
    return Fault(
        "error",
        "ses",
        _ops(operations),
        probability,
        status=503,
        code="ServiceUnavailable",
        name="SES 5xx",
    )


def lost_ses_replies(probability: float = 1.0, *, as_500: bool = False) -> Fault:
    """SES takes the send; the caller gets a reset connection (or, ``as_500``, a 500 error)."""
    return Fault(
        "lost_reply",
        "ses",
        SES_SEND_OPERATIONS,
        probability,
        status=500 if as_500 else 0,
        name="lost SES reply",
    )


def hung(
    probability: float = 1.0,
    *,
    service: str = "*",
    operations: Iterable[str] | None = None,
    seconds: float = 60.0,
) -> Fault:
    """A connection that accepts the call and does not answer for ``seconds`` (never forwarded)."""
    return Fault(
        "hang", service, _ops(operations), probability, latency=seconds, name=f"hung {service}"
    )


def visibility_failures(probability: float = 1.0) -> Fault:
    """ChangeMessageVisibility(Batch) refused with a 500."""
    return replace(
        sqs_5xx(probability, operations=VISIBILITY_OPERATIONS), name="visibility change failed"
    )


def dynamodb_throttling(
    probability: float = 1.0, *, operations: Iterable[str] | None = None
) -> Fault:
    return Fault(
        "error",
        "dynamodb",
        _ops(operations),
        probability,
        status=400,
        code="ProvisionedThroughputExceededException",
        message="The level of configured provisioned throughput for the table was exceeded.",
        name="DynamoDB throttling",
    )


def sqs_5xx(probability: float = 1.0, *, operations: Iterable[str] | None = None) -> Fault:
    return Fault(
        "error",
        "sqs",
        _ops(operations),
        probability,
        status=500,
        code="InternalError",
        name="SQS 5xx",
    )


# --- Records ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    """One call as the proxy saw it. ``at`` is when moto answered (or the fault was decided)."""

    at: float
    client: str  # the caller's app id, "" when it sent none
    service: str
    operation: str
    status: int  # what moto answered (0: not forwarded); an injected error's status otherwise
    fault: str = ""  # the rule that hit this call, "" for none
    error_code: str = ""  # moto's error code, or the injected one
    key: str = ""  # DynamoDB item key ("Id"), when the call names one
    table: str = ""  # DynamoDB: the table the call names
    sets_status: str = ""  # DynamoDB writes: the Status value the write sets
    recipients: tuple[str, ...] = ()  # SES sends: plain addresses, lowercased
    tags: tuple[tuple[str, str], ...] = ()  # SES sends: message tags
    provider_id: str = ""  # SES sends: the MessageId moto gave
    reply_lost: bool = False  # the call took effect but its reply was dropped on purpose
    client_gone: bool = False  # the reply could not be written: the caller went away
    arrived: float = 0.0  # when the request reached the proxy (SES counts a send's rate here)
    upstream_seconds: float = 0.0  # how long moto took to answer (0: not forwarded)

    @property
    def accepted(self) -> bool:
        """The call took effect at moto (whether or not the caller heard about it)."""
        return 200 <= self.status < 300

    @property
    def delivered(self) -> bool:
        """The caller got a success reply."""
        return self.accepted and not self.reply_lost and not self.client_gone

    @property
    def journal_key(self) -> str:
        return next((v for k, v in self.tags if "key" in k.lower()), "")


def max_in_window(times: Iterable[float], window: float = 1.0) -> int:
    """The highest number of events in any half-open interval of ``window`` seconds."""
    ordered = sorted(times)
    best = 0
    for i, start in enumerate(ordered):
        best = max(best, bisect_right(ordered, start + window - 1e-9, lo=i) - i)
    return best


# --- Identification -----------------------------------------------------------------------------


def identify(method: str, path: str, headers: dict[str, str], body: bytes) -> tuple[str, str, dict]:
    """(service, operation, parsed form or JSON body) for one request."""
    scope = _SCOPE.search(headers.get("authorization", ""))
    service = scope.group(1) if scope else ""
    target = headers.get("x-amz-target", "")
    parsed: dict = {}
    if target:
        prefix, _, operation = target.rpartition(".")
        service = service or ("dynamodb" if prefix.startswith("DynamoDB") else "sqs")
        with contextlib.suppress(ValueError):
            parsed = json.loads(body or b"{}")
        return service, operation, parsed
    if body and "x-www-form-urlencoded" in headers.get("content-type", ""):
        form = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
        operation = form.get("Action", [""])[0]
        return service or "query", operation, form
    if service == "ses" and path.startswith("/v2/email/outbound-emails"):
        with contextlib.suppress(ValueError):
            parsed = json.loads(body or b"{}")
        return "ses", "SendEmail", parsed
    url = urlsplit(path)
    return service or "s3", f"{method} {'object' if url.path.count('/') > 1 else 'bucket'}", parsed


def _addresses(values: Iterable[str]) -> tuple[str, ...]:
    return tuple(parseaddr(v)[1].lower() or v.lower() for v in values)


def _ses_details(parsed: dict) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """Recipients and message tags of an SES send, from the query form or the v2 JSON body."""
    if "Destination" in parsed or "EmailTags" in parsed:  # SESv2 JSON
        dest = parsed.get("Destination") or {}
        to = [
            a for part in ("ToAddresses", "CcAddresses", "BccAddresses") for a in dest.get(part, [])
        ]
        tags = tuple((t.get("Name", ""), t.get("Value", "")) for t in parsed.get("EmailTags", []))
        return _addresses(to), tags
    members = sorted(
        (k, v[0])
        for k, v in parsed.items()
        if re.fullmatch(r"(Destination\.(To|Cc|Bcc)Addresses|Destinations)\.member\.\d+", k)
    )
    tag_numbers = sorted(
        {int(m.group(1)) for k in parsed if (m := re.fullmatch(r"Tags\.member\.(\d+)\.Name", k))}
    )
    tags = tuple(
        (parsed[f"Tags.member.{n}.Name"][0], parsed.get(f"Tags.member.{n}.Value", [""])[0])
        for n in tag_numbers
    )
    return _addresses(v for _, v in members), tags


def _dynamodb_details(parsed: dict) -> tuple[str, str]:
    """(item key, Status value set) of a DynamoDB item write or read."""
    item = parsed.get("Key") or parsed.get("Item") or {}
    key = next((v.get("S", "") for v in item.values() if isinstance(v, dict)), "") if item else ""
    status = ""
    if "Item" in parsed:
        status = (parsed["Item"].get("Status") or {}).get("S", "")
    elif expression := parsed.get("UpdateExpression"):
        names = parsed.get("ExpressionAttributeNames") or {}
        values = parsed.get("ExpressionAttributeValues") or {}
        for name, placeholder in re.findall(r"([#\w]+)\s*=\s*(:\w+)", expression):
            if names.get(name, name) == "Status":
                status = (values.get(placeholder) or {}).get("S", "")
    return key, status


def _error_body(service: str, json_protocol: bool, status: int, code: str, message: str):
    """(headers, body) of an AWS error in the protocol the caller speaks."""
    request_id = str(uuid.uuid4())
    if json_protocol:
        prefix = (
            "com.amazonaws.dynamodb.v20120810" if service == "dynamodb" else "com.amazonaws.sqs"
        )
        body = json.dumps({"__type": f"{prefix}#{code}", "message": message}).encode()
        headers = {
            "Content-Type": "application/x-amz-json-1.0",
            "x-amzn-RequestId": request_id,
            "x-amzn-query-error": f"{code};{'Sender' if status < 500 else 'Receiver'}",
        }
        return headers, body
    if service == "s3":
        body = f"<Error><Code>{code}</Code><Message>{message}</Message></Error>".encode()
    else:
        kind = "Sender" if status < 500 else "Receiver"
        body = (
            f'<ErrorResponse xmlns="http://{service}.amazonaws.com/doc/2010-12-01/">'
            f"<Error><Type>{kind}</Type><Code>{code}</Code><Message>{message}</Message></Error>"
            f"<RequestId>{request_id}</RequestId></ErrorResponse>"
        ).encode()
    return {"Content-Type": "text/xml", "x-amzn-RequestId": request_id}, body


# --- The server ---------------------------------------------------------------------------------


class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    request_queue_size = 256

    def __init__(self, address, proxy: AwsProxy, max_connections: int) -> None:
        super().__init__(address, _Handler)
        self.proxy = proxy
        self.slots = threading.BoundedSemaphore(max_connections)
        self.stopping = False
        self.open: set[socket.socket] = set()  # client connections, closed on stop
        self.open_lock = threading.Lock()

    def process_request(self, request, client_address):
        # Bounded: past max_connections the accept loop waits; the kernel's backlog holds the rest.
        while not self.slots.acquire(timeout=0.5):
            if self.stopping:
                self.shutdown_request(request)
                return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self.slots.release()
            raise

    def handle_error(self, request, client_address):
        # Clients that go away (a SIGKILLed consumer, a reset) are part of the game, not news.
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)

    def process_request_thread(self, request, client_address):
        with self.open_lock:
            self.open.add(request)
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self.open_lock:
                self.open.discard(request)
            self.slots.release()

    def close_connections(self) -> None:
        """End every client connection, so no handler thread outlives the proxy."""
        with self.open_lock:
            connections = list(self.open)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as botocore's pools expect
    timeout = 30  # an idle client connection is closed after this long
    server: _Server

    def log_message(self, format, *args):  # quiet: the records say what happened
        pass

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                pass
            return b"".join(chunks)
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _handle(self) -> None:
        self.server.proxy._serve(self, self._read_body())

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = _handle

    def upstream(self, service: str) -> http.client.HTTPConnection:
        """This client connection's kept connection to the moto that serves ``service``."""
        address = self.server.proxy.address_for(service)
        conns = self.__dict__.setdefault("_upstreams", {})
        conn = conns.get(address)
        if conn is None:
            conn = conns[address] = http.client.HTTPConnection(*address, timeout=60)
        return conn

    def drop_upstream(self, service: str) -> None:
        conns = self.__dict__.get("_upstreams", {})
        if conn := conns.pop(self.server.proxy.address_for(service), None):
            conn.close()

    def finish(self) -> None:
        with contextlib.suppress(OSError):
            super().finish()
        for conn in self.__dict__.get("_upstreams", {}).values():
            conn.close()

    def reset(self) -> None:
        """Drop the connection with a TCP reset: no reply at all."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def _address(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    return (parts.hostname or "127.0.0.1", parts.port or 80)


@dataclass
class _Decision:
    latency: float = 0.0
    fault: Fault | None = None


@dataclass
class AwsProxy:
    """``with AwsProxy("http://127.0.0.1:5000") as proxy:`` → clients use ``proxy.url``."""

    upstream: str
    port: int = 0
    # Service (SigV4 name) → the moto serving it, when moto runs one process per service.
    routes: dict[str, str] = field(default_factory=dict)
    max_connections: int = 512
    max_records: int = 2_000_000
    seed: int | None = None
    faults: list[Fault] = field(default_factory=list, repr=False)
    calls: list[Call] = field(default_factory=list, repr=False)
    dropped_records: int = 0

    def __post_init__(self) -> None:
        self.upstream_address = _address(self.upstream)
        self._routes = {service: _address(url) for service, url in self.routes.items()}
        self._lock = threading.Lock()
        self._rng = random.Random(self.seed)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def address_for(self, service: str) -> tuple[str, int]:
        return self._routes.get(service, self.upstream_address)

    # lifecycle
    def start(self) -> AwsProxy:
        self._server = _Server(("127.0.0.1", self.port), self, self.max_connections)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server:
            self._server.stopping = True
            self._server.shutdown()
            self._server.server_close()
            self._server.close_connections()
            self._server = None

    def __enter__(self) -> AwsProxy:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # faults, changeable while clients run
    def add(self, *faults: Fault) -> tuple[Fault, ...]:
        with self._lock:
            self.faults.extend(faults)
        return faults

    def remove(self, *faults: Fault) -> None:
        with self._lock:
            self.faults = [f for f in self.faults if all(f is not g for g in faults)]

    def clear(self) -> None:
        with self._lock:
            self.faults = []

    @contextlib.contextmanager
    def injecting(self, *faults: Fault) -> Iterator[tuple[Fault, ...]]:
        self.add(*faults)
        try:
            yield faults
        finally:
            self.remove(*faults)

    # records
    def records(self) -> list[Call]:
        with self._lock:
            return list(self.calls)

    def reset_records(self) -> None:
        with self._lock:
            self.calls = []
            self.dropped_records = 0

    def ses_sends(self, *, since: float = 0.0) -> list[Call]:
        """Every SES send moto accepted (the caller may not have heard), oldest first."""
        return [
            c
            for c in self.records()
            if c.service == "ses"
            and c.operation in SES_SEND_OPERATIONS
            and c.accepted
            and c.at >= since
        ]

    def counts(self) -> Counter[tuple[str, str, str]]:
        """(service, operation, outcome) → calls; outcome is "ok", the fault's name or the error."""
        return Counter(
            (c.service, c.operation, c.fault or ("ok" if c.status < 400 else c.error_code))
            for c in self.records()
        )

    # the work
    def _decide(self, service: str, operation: str) -> _Decision:
        decision = _Decision()
        now = time.time()
        with self._lock:
            for fault in self.faults:
                if not fault.matches(service, operation, now):
                    continue
                if fault.kind != "latency" and decision.fault is not None:
                    continue
                if fault.probability < 1.0 and self._rng.random() >= fault.probability:
                    continue
                fault.hits += 1
                if fault.kind == "latency":
                    decision.latency += fault.latency
                else:
                    decision.fault = fault
        return decision

    def _record(self, call: Call) -> int:
        """Append ``call``; returns its index (-1 when the records are full)."""
        with self._lock:
            if len(self.calls) < self.max_records:
                self.calls.append(call)
                return len(self.calls) - 1
            self.dropped_records += 1
            return -1

    def _amend(self, index: int, **changes) -> None:
        with self._lock:
            if 0 <= index < len(self.calls):
                self.calls[index] = replace(self.calls[index], **changes)

    def _serve(self, handler: _Handler, body: bytes) -> None:
        arrived = time.time()
        headers = {k.lower(): v for k, v in handler.headers.items()}
        service, operation, parsed = identify(handler.command, handler.path, headers, body)
        app = _APP_ID.search(headers.get("user-agent", ""))
        base = {
            "client": app.group(1) if app else "",
            "service": service,
            "operation": operation,
            "arrived": arrived,
        }
        if service == "dynamodb" and parsed:
            base["key"], base["sets_status"] = _dynamodb_details(parsed)
            base["table"] = str(parsed.get("TableName", ""))
        is_send = service == "ses" and operation in SES_SEND_OPERATIONS
        decision = self._decide(service, operation)
        if decision.fault is not None and decision.fault.kind == "hang":
            self._record(Call(time.time(), **base, status=0, fault=decision.fault.name))
            until = time.monotonic() + decision.fault.latency
            while time.monotonic() < until and not getattr(self._server, "stopping", True):
                time.sleep(0.2)
            handler.reset()
            return
        if decision.latency:
            time.sleep(decision.latency / 2)
        fault = decision.fault
        if fault is not None and fault.kind == "error":
            extra, payload = _error_body(
                service, "x-amz-target" in headers, fault.status, fault.code, fault.message
            )
            self._record(
                Call(
                    time.time(),
                    **base,
                    status=fault.status,
                    fault=fault.name or fault.code,
                    error_code=fault.code,
                )
            )
            self._reply(handler, fault.status, list(extra.items()), payload, decision.latency / 2)
            return
        try:
            conn = handler.upstream(service)
            forwarded = time.perf_counter()
            forward = {k: v for k, v in handler.headers.items() if k.lower() not in _HOP_BY_HOP}
            forward["Content-Length"] = str(len(body))
            conn.request(handler.command, handler.path, body=body, headers=forward)
            response = conn.getresponse()
            payload = response.read()
            base["upstream_seconds"] = time.perf_counter() - forwarded
            status, reply_headers = response.status, response.getheaders()
            if response.will_close:
                conn.close()
        except (OSError, http.client.HTTPException) as exc:
            handler.close_connection = True
            handler.drop_upstream(service)
            self._record(Call(time.time(), **base, status=502, error_code=type(exc).__name__))
            self._reply(handler, 502, [("Content-Type", "text/plain")], b"upstream failed", 0)
            return
        details: dict = {}
        if status >= 400:
            if match := _XML_CODE.search(payload):
                details["error_code"] = match.group(1).decode()
            elif payload.startswith(b"{"):
                with contextlib.suppress(ValueError, AttributeError):
                    details["error_code"] = json.loads(payload).get("__type", "").rpartition("#")[2]
        elif is_send:
            details["recipients"], details["tags"] = _ses_details(parsed)
            if match := _SES_ID.search(payload):
                details["provider_id"] = match.group(1).decode()
            elif payload.startswith(b"{"):
                with contextlib.suppress(ValueError, AttributeError):
                    details["provider_id"] = json.loads(payload).get("MessageId", "")
        at = time.time()
        if fault is not None:  # a lost reply: the call took effect, the caller never hears
            self._record(
                Call(at, **base, status=status, fault=fault.name, reply_lost=True, **details)
            )
            if fault.status:
                extra, payload = _error_body(
                    service, False, fault.status, fault.code, fault.message
                )
                self._reply(handler, fault.status, list(extra.items()), payload, 0)
            else:
                handler.reset()
            return
        # Recorded before the reply goes out: whoever reads the records after the call returned
        # must find it.
        index = self._record(Call(at, **base, status=status, **details))
        if not self._reply(handler, status, reply_headers, payload, decision.latency / 2):
            self._amend(index, client_gone=True)

    @staticmethod
    def _reply(handler: _Handler, status: int, headers, payload: bytes, delay: float) -> bool:
        if delay:
            time.sleep(delay)
        try:
            handler.send_response_only(status)
            for name, value in headers:
                if name.lower() not in _HOP_BY_HOP:
                    handler.send_header(name, value)
            if handler.command == "HEAD":  # a HEAD reply states the length of what GET would send
                length = next((v for k, v in headers if k.lower() == "content-length"), "0")
            else:
                length = str(len(payload))
            handler.send_header("Content-Length", length)
            if handler.close_connection:
                handler.send_header("Connection", "close")
            # Head and body in one write: two small writes meet the client's delayed ACK (Nagle)
            # and cost ~40 ms per call on loopback.
            handler._headers_buffer.append(b"\r\n")
            if handler.command != "HEAD":
                handler._headers_buffer.append(payload)
            handler.flush_headers()
            return True
        except OSError:
            handler.close_connection = True
            return False


def main() -> None:
    """``python -m tests.support.aws_proxy UPSTREAM``: a plain keep-alive proxy (no faults) in its
    own process; prints its URL, serves until killed. Benchmarks use it so that the client side
    keeps its connections, as with AWS (moto closes every connection) without paying for the
    proxy's CPU in the measured process."""
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("upstream")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    proxy = AwsProxy(args.upstream, port=args.port, max_records=0).start()
    print(proxy.url, flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
