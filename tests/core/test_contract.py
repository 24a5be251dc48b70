"""The EmailRequest wire contract: every fixture parses; every malformed body is a readable
InvalidRequest (a PermanentError), never another exception."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from emailops.core.compose import subject_source_for
from emailops.core.contract import (
    MAX_DEPTH,
    EmailRequest,
    Recipient,
    RejectedRecipient,
    address_problem,
    parse_complete_request,
    parse_request,
    request_to_json,
)
from emailops.core.errors import InvalidRequest, PermanentError
from emailops.core.ports import TemplateMapping
from tests.conftest import CONTRACT, fixture_body

FIXTURES = sorted(p.name for p in (CONTRACT / "fixtures").glob("*.json"))


def body(**fields) -> str:
    payload = {"messageId": "m", "recipients": [{"email": "a@example.com"}]}
    payload.update(fields)
    return json.dumps(payload)


def rejected(text: str | bytes) -> InvalidRequest:
    with pytest.raises(InvalidRequest) as info:
        parse_request(text)
    assert isinstance(info.value, PermanentError)
    assert info.value.permanent
    assert info.value.reason, "the rejection must say why"
    return info.value


# --- fixtures ---------------------------------------------------------------------------------


def test_there_are_fixtures():
    assert len(FIXTURES) >= 4


@pytest.mark.parametrize("name", FIXTURES)
def test_every_fixture_parses_with_its_recipients_and_context(name):
    raw = json.loads(fixture_body(name))
    request = parse_request(fixture_body(name))
    assert request.message_id == raw["messageId"]
    assert [r.email for r in request.recipients] == [r["email"] for r in raw["recipients"]]
    assert [r.name for r in request.recipients] == [r.get("name", "") for r in raw["recipients"]]
    assert request.context == raw.get("context", {})
    assert request.dedupe_id == raw.get("dedupeId", "")


def test_fixture_details():
    assert parse_request(fixture_body("with-dedupe-id.json")).dedupe_id == "team-invite-evt-12345"
    assert parse_request(fixture_body("with-organization.json")).organization_id == "367"
    assert parse_request(fixture_body("minimal.json")).organization_id is None
    multi = parse_request(fixture_body("multi-recipient.json"))
    assert multi.recipients == (
        Recipient("rev1@example.com", "Reviewer One"),
        Recipient("rev2@example.com", "Reviewer Two"),
    )


def test_bytes_body_is_accepted():
    assert parse_request(fixture_body("minimal.json").encode()).message_id == (
        "dataset-publication-accepted"
    )


# --- context -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        '{"messageId":"m","recipients":[{"email":"a@example.com"}]}',
        '{"messageId":"m","recipients":[{"email":"a@example.com"}],"context":null}',
        '{"messageId":"m","recipients":[{"email":"a@example.com"}],"context":{}}',
    ],
)
def test_missing_or_null_context_is_empty(text):
    request = parse_request(text)
    assert request.context == {}
    assert request.organization_id is None


@pytest.mark.parametrize("context", [[], [1], "x", 1, 1.5, True, False])
def test_context_of_another_type_is_rejected(context):
    exc = rejected(body(context=context))
    assert "context" in exc.reason
    assert exc.key == "m"


def test_subject_override_only_for_non_empty_strings():
    mapping = TemplateMapping("m", "m.html", "Default")
    assert subject_source_for(mapping, {"subject": "Hi {{.x}}"}) == "Hi {{.x}}"
    for value in ["", None, 1, ["s"]]:
        assert subject_source_for(mapping, {"subject": value}) == "Default"


# --- JSON-level rejections ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "",
        "not json",
        "{",
        '{"messageId": "m",}',
        "{'messageId': 'm'}",
        b"\xff\xfe\x00garbage",
        # NaN and Infinity are not JSON (Python would accept them; Go would not).
        '{"messageId":"m","recipients":[{"email":"a@example.com"}],"context":{"n":NaN}}',
        '{"messageId":"m","recipients":[{"email":"a@example.com"}],"context":{"n":Infinity}}',
        '{"messageId":"m","recipients":[{"email":"a@example.com"}],"context":{"n":-Infinity}}',
    ],
)
def test_body_not_json_is_rejected(text):
    assert "not JSON" in rejected(text).reason


@pytest.mark.parametrize("number", ["1e400", "-1e400", "1" + "0" * 400])
def test_numbers_go_cannot_decode_are_rejected(number):
    """Go's decoder refuses a number beyond float64; it must be an InvalidRequest here too, not
    an OverflowError later while computing the dedupe key."""
    text = '{"messageId":"m","recipients":[{"email":"a@example.com"}],"context":{"n":%s}}'
    rejected(text % number)


def test_tiny_numbers_underflow_to_zero_as_in_go():
    text = '{"messageId":"m","recipients":[{"email":"a@example.com"}],"context":{"n":1e-400}}'
    assert parse_request(text).context == {"n": 0.0}


@pytest.mark.parametrize("text", ["[]", "[1]", '"s"', "1", "null", "true"])
def test_body_not_an_object_is_rejected(text):
    assert "object" in rejected(text).reason


# --- messageId and recipients ------------------------------------------------------------------


@pytest.mark.parametrize("message_id", [None, "", "   ", 1, ["m"], {"a": 1}, True])
def test_missing_or_empty_message_id_is_rejected(message_id):
    payload = {"recipients": [{"email": "a@example.com"}]}
    if message_id is not None:
        payload["messageId"] = message_id
    assert "messageId" in rejected(json.dumps(payload)).reason


@pytest.mark.parametrize("recipients", [None, [], {}, "a@example.com", {"email": "a@example.com"}])
def test_no_recipients_is_rejected(recipients):
    payload = {"messageId": "m"}
    if recipients is not None:
        payload["recipients"] = recipients
    exc = rejected(json.dumps(payload))
    assert "recipients" in exc.reason
    assert exc.key == "m"


@pytest.mark.parametrize(
    ("recipient", "address"),
    [
        ({}, "recipients[1]"),
        ({"name": "Alice"}, "recipients[1]"),
        ({"email": ""}, "recipients[1]"),
        ({"email": None}, "recipients[1]"),
        ({"email": 42}, "recipients[1]"),
        ({"email": "alice"}, "alice"),
        ({"email": "alice@"}, "alice@"),
        ({"email": "@example.com"}, "@example.com"),
        ({"email": "alice@@example.com"}, "alice@@example.com"),
        ({"email": "alice example@example.com"}, "alice example@example.com"),
        (
            {"email": "alice@example.com\r\nBcc: eve@example.com"},
            "alice@example.com\r\nBcc: eve@example.com",
        ),
        ({"email": "Alice <alice@example.com>"}, "Alice <alice@example.com>"),
        ({"email": "a@example.com, b@example.com"}, "a@example.com, b@example.com"),
        ({"email": "a@example.com", "name": "A\nBcc: eve@example.com"}, "a@example.com"),
        ({"email": "zoë@example.com"}, "zoë@example.com"),
        ("alice@example.com", "recipients[1]"),
        (["alice@example.com"], "recipients[1]"),
    ],
)
def test_an_invalid_recipient_is_set_aside_and_the_others_are_kept(recipient, address):
    """As in the Go service, one bad entry does not stop the request: the valid recipients are
    sent and the bad one gets a FAILED row (keyed by its address, or by its place)."""
    request = parse_request(
        body(recipients=[{"email": "ok@example.com"}, recipient, {"email": "z@example.com"}])
    )
    assert [r.email for r in request.recipients] == ["ok@example.com", "z@example.com"]
    assert len(request.rejected) == 1
    assert request.rejected[0].address == address
    assert "recipients[1]" in request.rejected[0].reason


def test_no_valid_recipient_is_an_invalid_request_that_carries_the_rejections():
    text = body(recipients=[{"email": "alice"}, {"name": "B"}, {"email": "alice"}])
    exc = rejected(text)
    assert exc.key == "m"
    assert "no valid recipient" in exc.reason
    assert "recipients[0].email 'alice'" in exc.reason and "recipients[1].email" in exc.reason
    assert exc.request.recipients == ()
    assert exc.request.rejected == (
        RejectedRecipient(
            "alice",
            "recipients[0].email 'alice' is not a valid address: there is no @",
            field="recipients[0].email",
        ),
        RejectedRecipient(
            "recipients[1]", "recipients[1].email is missing", field="recipients[1].email"
        ),
    )  # the repeat shares the first one's key: one FAILED row
    assert exc.field == "recipients[0].email"  # data, not parsed back out of the reason


@pytest.mark.parametrize(
    "text, field",
    [
        ('{"recipients": [{"email": "a@b.org"}]}', "messageId"),
        ('{"messageId": "m", "recipients": []}', "recipients"),
        ('{"messageId": "m", "recipients": [{"email": "a@b.org"}], "context": 1}', "context"),
        ('{"messageId": "m", "recipients": [{"email": "a@b.org"}], "dedupeId": 1}', "dedupeId"),
        ("not json", None),
    ],
)
def test_an_invalid_request_names_its_field_as_data(text, field):
    with pytest.raises(InvalidRequest) as caught:
        parse_request(text)
    assert caught.value.field == field


def test_a_rejected_entry_that_repeats_a_valid_address_is_dropped():
    """Both would share one dedupe key; the valid entry is sent."""
    request = parse_request(
        body(recipients=[{"email": "a@example.com", "name": 5}, {"email": "a@example.com"}])
    )
    assert request.recipients == (Recipient("a@example.com"),)
    assert request.rejected == ()


def test_a_huge_invalid_address_is_keyed_by_its_place_and_shortened_in_the_reason():
    """The address becomes the journal row's Recipient, an index key of at most 2048 bytes."""
    huge = "a" * 100_000 + "@example.com"
    request = parse_request(body(recipients=[{"email": "ok@example.com"}, {"email": huge}]))
    [bad] = request.rejected
    assert bad.address == "recipients[1]"
    assert len(bad.reason) < 300 and "longer than 320 characters" in bad.reason


def test_a_rejected_entry_has_a_dedupe_key():
    from emailops.core.dedupe import dedupe_key

    request = parse_request(body(recipients=[{"email": "a@example.com"}, {"email": "bad"}, 7]))
    keys = {dedupe_key(request, r.address) for r in request.rejected}
    assert len(keys) == 2 and dedupe_key(request, "a@example.com") not in keys


SES_ACCEPTS = [
    "a@example.com",
    "first.last+tag@sub.example.co.uk",
    '"john doe"@example.com',
    '"quoted\\"and\\\\escaped"@example.com',
    '"a@b"@example.com',
    "user@localhost",
    "user@mail.test",
    "user@printer.local",
    "user@nowhere.invalid",
    "user@[192.0.2.1]",
    "user@[IPv6:2001:db8::1]",
    "o'brien@example.com",
    "!#$%&'*+/=?^_`{|}~-@example.com",
    "x@a-b.example.com",
    "a" * 64 + "@example.com",
    "a@" + ".".join(["b" * 63] * 3) + ".example",
]


@pytest.mark.parametrize("email", SES_ACCEPTS)
def test_addresses_ses_accepts_are_accepted(email):
    assert address_problem(email) is None
    assert parse_request(body(recipients=[{"email": email}])).recipients == (Recipient(email),)


@pytest.mark.parametrize(
    ("email", "words"),
    [
        ("", "empty"),
        ("alice", "no @"),
        ("alice@", "no domain"),
        ("@example.com", "nothing before the @"),
        (".alice@example.com", "before the @"),
        ("alice.@example.com", "before the @"),
        ("al..ice@example.com", "before the @"),
        ('"unclosed@example.com', "before the @"),
        ("a@-example.com", "hyphen"),
        ("a@example-.com", "hyphen"),
        ("a@exa_mple.com", "domain"),
        ("a@example..com", "domain"),
        ("a@example.com.", "domain"),
        ("a@" + "b" * 64 + ".com", "at most 63"),
        ("a@[192.0.2]", "not an IP address"),
        ("a@[IPv6:zz::1]", "not an IP address"),
        ("a" * 65 + "@example.com", "longer than 64"),
        ("a@" + ".".join(["b" * 63] * 4) + ".com", "longer than 255"),
        ("a@example.com\r\nBcc: eve@example.com", "one line"),
        ("a@exam\x00ple.com", "one line"),
        ("Alice <a@example.com>", "bare address"),
        ('"a,b"@example.com', "bare address"),
        ("a@example.com,b@example.com", "bare address"),
        ("zoë@example.com", "ASCII"),
        ("a@例子.广告", "ASCII"),
    ],
)
def test_addresses_ses_refuses_say_why(email, words):
    assert words in address_problem(email)


@pytest.mark.parametrize("name", ["Alice\nBcc: eve@example.com", "A\rB", 5, ["A"]])
def test_recipient_name_must_be_one_line_of_text(name):
    exc = rejected(body(recipients=[{"email": "a@example.com", "name": name}]))
    assert "recipients[0].name" in exc.reason


CONTROLS = [
    "\x00",
    "\t",
    "\x0b",
    "\x0c",
    "\x1b",
    "\x1f",
    "\x7f",
    "\x85",
    "\x9f",
    "\u2028",
    "\u2029",
]


@pytest.mark.parametrize("control", CONTROLS)
def test_a_control_character_in_a_name_sets_the_recipient_aside(control):
    """Not only CR and LF: SES writes an ASCII name into the To header as it is."""
    request = parse_request(
        body(
            recipients=[
                {"email": "ok@example.com", "name": "Ok"},
                {"email": "a@example.com", "name": f"A{control}Bcc: eve@example.com"},
            ]
        )
    )
    assert request.recipients == (Recipient("ok@example.com", "Ok"),)
    [refused] = request.rejected
    assert (refused.address, refused.field) == ("a@example.com", "recipients[1].name")
    assert refused.reason.startswith(f"recipients[1].name: control character U+{ord(control):04X}")


def test_printable_names_pass_whatever_their_script():
    names = ["Zoë Ødegård", "李小龙", "O'Brien, Jr. (MD)", "Ana\u00a0María"]
    request = parse_request(
        body(recipients=[{"email": f"r{i}@example.com", "name": n} for i, n in enumerate(names)])
    )
    assert [r.name for r in request.recipients] == names and not request.rejected


def test_the_api_is_told_which_name_is_refused():
    with pytest.raises(InvalidRequest) as info:
        parse_complete_request(
            body(recipients=[{"email": "a@example.com", "name": "A\x0bBcc: eve@example.com"}])
        )
    assert info.value.field == "recipients[0].name"
    assert "recipients[0].name: control character U+000B" in info.value.reason


def test_null_recipient_name_is_empty():
    request = parse_request(body(recipients=[{"email": "a@example.com", "name": None}]))
    assert request.recipients == (Recipient("a@example.com", ""),)


@pytest.mark.parametrize("email", ["用户@例子.广告", "a@例子.广告", "zoë@example.com"])
def test_internationalized_addresses_are_rejected(email):
    """SES accepts only ASCII addresses and formataddr refuses others: such a request must fail
    here, readably, rather than crash the pipeline after the row was claimed."""
    assert "recipients[0]" in rejected(body(recipients=[{"email": email}])).reason


def test_non_ascii_display_name_is_fine():
    request = parse_request(body(recipients=[{"email": "z@example.com", "name": "Zoë Ünal"}]))
    assert request.recipients[0].name == "Zoë Ünal"


def test_repeated_recipient_is_sent_once_and_order_is_kept():
    request = parse_request(
        body(
            recipients=[
                {"email": "b@example.com", "name": "B"},
                {"email": "a@example.com"},
                {"email": "b@example.com", "name": "B again"},
            ]
        )
    )
    assert request.recipients == (Recipient("b@example.com", "B"), Recipient("a@example.com"))


@pytest.mark.parametrize("dedupe_id", [1, ["x"], {"a": 1}, True])
def test_dedupe_id_must_be_a_string(dedupe_id):
    assert "dedupeId" in rejected(body(dedupeId=dedupe_id)).reason


def test_null_dedupe_id_is_none():
    assert parse_request(body(dedupeId=None)).dedupe_id == ""


def test_lone_surrogates_become_replacement_characters_as_in_go():
    """Go decodes an unpaired \\ud800 escape as U+FFFD; keeping the surrogate would make the
    request impossible to encode for DynamoDB or SES."""
    text = (
        '{"messageId":"m\\ud800","recipients":[{"email":"a@example.com","name":"A\\udc00"}],'
        '"context":{"k\\ud800":["\\ud83d\\ude00 \\udfff"]}}'
    )
    request = parse_request(text)
    assert request.message_id == "m\ufffd"
    assert request.recipients[0].name == "A\ufffd"
    assert request.context == {"k\ufffd": ["\U0001f600 \ufffd"]}
    json.dumps(request.context, ensure_ascii=False).encode("utf-8")  # encodable now


# --- organizationId ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (367, "367"),
        (367.0, "367"),
        ("0367", "0367"),
        ("367", "367"),
        (0, "0"),
        (None, None),
    ],
)
def test_accepted_organization_ids(value, expected):
    assert parse_request(body(context={"organizationId": value})).organization_id == expected


def test_organization_id_written_as_json_float_text():
    text = (
        '{"messageId":"m","recipients":[{"email":"a@example.com"}],'
        '"context":{"organizationId":367.0}}'
    )
    assert parse_request(text).organization_id == "367"


@pytest.mark.parametrize(
    "value",
    [True, False, "36a", 1.5, "../x", "", " 367", "367 ", "-1/..", "3.67", "٣٦٧", [367], {"id": 1}],
)
def test_an_organization_id_that_is_not_a_number_means_the_default_template(value):
    """The Go consumer fell back to the default template; so do we, and say so in a warning."""
    request = parse_request(body(context={"organizationId": value, "x": 1}))
    assert request.organization_id is None
    assert request.context["x"] == 1
    assert len(request.warnings) == 1
    assert request.warnings[0].startswith(f"context.organizationId {value!r} is not a number")
    assert request.warnings[0].endswith("using the default template")


def test_no_warnings_for_a_good_or_absent_organization_id():
    assert parse_request(body(context={"organizationId": 367})).warnings == ()
    assert parse_request(body()).warnings == ()


def test_a_long_organization_id_is_shortened_in_the_warning():
    request = parse_request(body(context={"organizationId": "x" * 500}))
    assert len(request.warnings[0]) < 150


def test_other_rejections_do_not_carry_a_request():
    assert rejected(body(recipients=[])).request is None
    assert rejected("[]").request is None


# --- request_to_json ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", FIXTURES)
def test_request_to_json_round_trips_fixtures(name):
    request = parse_request(fixture_body(name))
    assert parse_request(request_to_json(request)) == request


def test_request_to_json_omits_empty_name_and_dedupe_id():
    request = EmailRequest("m", (Recipient("a@example.com"),), {"é": "ü"})
    payload = json.loads(request_to_json(request))
    assert payload == {
        "messageId": "m",
        "recipients": [{"email": "a@example.com"}],
        "context": {"é": "ü"},
    }
    assert "é" in request_to_json(request)  # not \u-escaped


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**15), 10**15) | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=10,
)


@settings(deadline=None)
@given(
    context=st.dictionaries(
        st.text(max_size=6).filter(lambda k: k != "organizationId"), _json_values, max_size=4
    )
)
def test_request_to_json_round_trips_any_context(context):
    request = EmailRequest("m", (Recipient("a@example.com", "A"),), context, "d")
    assert parse_request(request_to_json(request)) == request


@settings(deadline=None)
@given(st.text(max_size=40) | st.binary(max_size=40))
def test_garbage_is_only_ever_an_invalid_request(text):
    with pytest.raises(InvalidRequest):
        parse_request(text)


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 990, 5000, 100_000])
def test_bodies_nested_too_deeply_are_rejected_not_crashed(depth):
    """Deep nesting used to escape as RecursionError (from json, or later from the dedupe key)."""
    text = '{"messageId":"m","recipients":[{"email":"a@example.com"}],"context":{"x":%s}}'
    exc = rejected(text % ("[" * depth + "]" * depth))
    assert "not JSON" in exc.reason


def test_nesting_up_to_the_limit_is_fine():
    from emailops.core.dedupe import dedupe_key

    depth = MAX_DEPTH - 2  # the body object and the context are two levels
    text = '{"messageId":"m","recipients":[{"email":"a@example.com"}],"context":{"x":%s}}'
    request = parse_request(text % ("[" * depth + "]" * depth))
    assert len(dedupe_key(request, "a@example.com")) == 64


def test_a_complete_request_refuses_what_the_consumer_would_only_partly_send():
    from emailops.core.contract import parse_complete_request

    partly = json.dumps(
        {"messageId": "m", "recipients": [{"email": "a@example.com"}, {"email": "nope"}]}
    )
    assert len(parse_request(partly).recipients) == 1  # the consumer sends the valid one
    with pytest.raises(InvalidRequest, match=r"recipients\[1\]\.email"):
        parse_complete_request(partly)
    fallback = json.dumps(
        {
            "messageId": "m",
            "recipients": [{"email": "a@example.com"}],
            "context": {"organizationId": "x"},
        }
    )
    with pytest.raises(InvalidRequest, match="organizationId"):
        parse_complete_request(fallback)


@pytest.mark.parametrize(
    ("address", "key"),
    [
        ("Bob@Example.COM", "bob@example.com"),
        ('"bob"@example.com', "bob@example.com"),
        ('"b\\ob"@example.com', "bob@example.com"),
        ('"bob.smith"@example.com', "bob.smith@example.com"),
        ('"John Doe"@example.com', '"john doe"@example.com'),  # needs its quotes: kept
        ('"bob..x"@example.com', '"bob..x"@example.com'),  # not a dot-atom: kept
        ('"a\\"b"@example.com', '"a\\"b"@example.com'),
        ("  bob@example.com ", "bob@example.com"),
    ],
)
def test_address_key_unquotes_what_needs_no_quotes(address, key):
    from emailops.core.contract import address_key

    assert address_key(address) == key


@pytest.mark.parametrize(
    "spelling",
    [
        '"Erin Example" <Erin@Example.com>',
        "  erin@example.COM ",
        '"erin"@example.com',
        "<erin@example.com>",
    ],
)
def test_address_key_gives_every_spelling_of_a_mailbox_one_key(spelling):
    from emailops.core.contract import address_key

    assert address_key(spelling) == "erin@example.com"


@pytest.mark.parametrize(
    "address, spellings",
    [
        ("Dana@Example.com", ["dana@example.com", "Dana@Example.com", '"dana"@example.com']),
        ('"dana"@example.com', ["dana@example.com", '"dana"@example.com']),
        ('"dana x"@example.com', ['"dana x"@example.com']),  # needs its quotes: nothing to add
    ],
)
def test_address_spellings_are_those_of_one_mailbox_key_first(address, spellings):
    from emailops.core.contract import address_key, address_spellings

    assert address_spellings(address) == spellings
    assert {address_key(s) for s in spellings} == {spellings[0]}
