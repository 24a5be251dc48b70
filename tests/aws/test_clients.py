"""AWS errors become the core's: throttling, 5xx and network trouble are transient; requests AWS
will never accept are permanent."""

from __future__ import annotations

import pytest
from botocore.exceptions import (
    ClientError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    ReadTimeoutError,
)

from emailops.aws.clients import AwsClients, error_code, translate_error
from emailops.core.errors import (
    ConfigurationFault,
    PermanentError,
    SendRejected,
    TransientError,
)


def client_error(code: str, message: str = "", status: int = 400) -> ClientError:
    return ClientError(
        {
            "Error": {"Code": code, "Message": message},
            "ResponseMetadata": {"HTTPStatusCode": status},
        },
        "SomeOperation",
    )


@pytest.mark.parametrize(
    ("code", "status"),
    [
        ("Throttling", 400),
        ("ThrottlingException", 400),
        ("ProvisionedThroughputExceededException", 400),
        ("RequestLimitExceeded", 400),
        ("SlowDown", 503),
        ("InternalServerError", 500),
        ("InternalFailure", 500),
        ("ServiceUnavailable", 503),
        ("TransactionConflictException", 400),
        ("", 502),
    ],
)
def test_transient_codes(code, status):
    error = translate_error(client_error(code, "try later", status), "claim journal row", key="k")
    assert type(error) is TransientError
    assert not error.permanent
    assert error.what == "claim journal row"
    assert error.key == "k"
    assert code in error.reason and "try later" in error.reason


@pytest.mark.parametrize(
    "code",
    [
        "ValidationException",
        "InvalidParameterValue",
        "InvalidParameterCombination",
        "MessageRejected",
        "ItemCollectionSizeLimitExceededException",
    ],
)
def test_permanent_codes(code):
    error = translate_error(client_error(code, "no"), "send email")
    assert type(error) is PermanentError
    assert error.permanent
    assert error.reason == f"{code}: no"


def test_permanent_class_and_extra_codes():
    error = translate_error(
        client_error("MessageRejected"), "send email", permanent_class=SendRejected
    )
    assert type(error) is SendRejected
    assert error.reason == "MessageRejected"  # no message: just the code
    extra = translate_error(
        client_error("NoSuchBucket"), "x", permanent_codes=frozenset({"NoSuchBucket"})
    )
    assert extra.permanent
    # The permanent class is only for permanent errors.
    throttled = translate_error(client_error("Throttling"), "x", permanent_class=SendRejected)
    assert type(throttled) is TransientError


@pytest.mark.parametrize(
    "exc",
    [
        EndpointConnectionError(endpoint_url="https://sqs.us-east-1.amazonaws.com"),
        ConnectTimeoutError(endpoint_url="https://sqs.us-east-1.amazonaws.com"),
        ReadTimeoutError(endpoint_url="https://sqs.us-east-1.amazonaws.com"),
    ],
)
def test_botocore_errors_are_transient(exc):
    error = translate_error(exc, "receive messages", key="q")
    assert type(error) is TransientError
    assert type(exc).__name__ in error.reason


@pytest.mark.parametrize(
    ("code", "message", "fix_words"),
    [
        ("AccessDeniedException", "not authorized to perform dynamodb:UpdateItem", "IAM"),
        ("ResourceNotFoundException", "Requested resource not found", "bootstrap_aws"),
        ("NoSuchBucket", "The specified bucket does not exist", "S3_BUCKET"),
        ("AWS.SimpleQueueService.NonExistentQueue", "", "EMAIL_SERVICE_QUEUE_URL"),
        ("MessageRejected", "Email address is not verified. The following identities", "sender"),
        ("MailFromDomainNotVerifiedException", "", "MAIL FROM"),
        ("AccountSendingPausedException", "", "paused"),
    ],
)
def test_configuration_faults_wait_for_an_operator(code, message, fix_words):
    """An operator's mistake must not dead-letter good requests: transient, with the fix."""
    error = translate_error(client_error(code, message), "send email", permanent_class=SendRejected)
    assert type(error) is ConfigurationFault and not error.permanent
    assert fix_words in error.fix
    assert code in error.reason


def test_missing_credentials_are_a_configuration_fault():
    error = translate_error(NoCredentialsError(), "receive messages")
    assert type(error) is ConfigurationFault and "credentials" in error.fix


def test_a_message_rejected_for_its_content_stays_permanent():
    error = translate_error(
        client_error("MessageRejected", "Illegal address"), "send", permanent_class=SendRejected
    )
    assert type(error) is SendRejected


def test_other_exceptions_are_not_translated():
    with pytest.raises(TypeError):
        translate_error(ValueError("x"), "x")


def test_error_code():
    assert error_code(client_error("Throttling")) == "Throttling"
    assert error_code(ClientError({}, "Op")) == ""


def test_clients_are_kept_per_service_and_region_by_the_clients_that_made_them(aws_env):
    clients = AwsClients()
    assert clients.client("sqs", region="us-east-1") is clients.client("sqs", region="us-east-1")
    assert clients.client("sqs", region="us-east-1") is not clients.client(
        "sqs", region="eu-west-1"
    )
    assert clients.client("sqs", region="eu-west-1").meta.region_name == "eu-west-1"
    lease = clients.lease_client("sqs", region="us-east-1")
    assert lease is clients.lease_client("sqs", region="us-east-1")
    assert lease is not clients.client("sqs", region="us-east-1")
    assert len(clients.made()) == 3
    other = AwsClients()  # another container's: nothing shared
    assert other.client("sqs", region="us-east-1") is not clients.client("sqs", region="us-east-1")
    assert other.lease_client("sqs", region="us-east-1") is not lease


def test_the_pool_size_is_the_clients_own(aws_env):
    """A consumer's clients pool one connection per thread; another container's keep theirs."""
    wide, default = AwsClients(pool_size=40), AwsClients()
    assert wide.client("dynamodb", region="us-east-1").meta.config.max_pool_connections == 40
    assert default.client("dynamodb", region="us-east-1").meta.config.max_pool_connections == 10
    assert AwsClients(pool_size=3).pool_size == 10  # never under botocore's default
    assert wide.lease_client("dynamodb", region="us-east-1").meta.config.max_pool_connections == 16


def test_a_reset_container_has_new_clients(aws_env, settings):
    """What tests between AWS stacks rely on: the next container makes its clients anew."""
    from emailops import container

    settings.AWS_REGION = "us-east-1"
    container.reset()
    try:
        before = container.current().client("ses")
        assert container.current().client("ses") is before
        container.reset()
        assert container.current().client("ses") is not before
    finally:
        container.reset()


def test_the_senders_ses_client_never_resends_after_a_lost_reply(aws_env, settings):
    """A ReadTimeoutError after SendEmail went out: botocore's standard mode would send it again
    at once, up to twice; only the pipeline's own policy (after back-off) may decide that."""
    from emailops import container
    from emailops.aws.ses import SesSender
    from emailops.core.ports import OutgoingEmail

    settings.SES_SIMULATE_EVENTS = False
    settings.AWS_REGION = "us-east-1"
    container.reset()
    sender = container.current().sender
    assert isinstance(sender, SesSender)
    calls = []

    def lost_reply(request, **_):
        calls.append(request.url)
        raise ReadTimeoutError(endpoint_url=request.url)

    sender.client.meta.events.register("before-send.ses.SendEmail", lost_reply)
    email = OutgoingEmail(
        from_address="a@example.com", to="b@example.com", subject="s", html="<p>h</p>"
    )
    try:
        with pytest.raises(TransientError):
            sender.send(email)
        assert len(calls) == 1
    finally:
        sender.client.meta.events.unregister("before-send.ses.SendEmail", lost_reply)
        container.reset()


def test_other_clients_keep_the_sdks_retries():
    config = AwsClients().client("dynamodb", region="us-east-1").meta.config
    assert config.retries["total_max_attempts"] == 3
