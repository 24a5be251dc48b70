"""Idempotency keys, byte-identical to the Go consumer's: reference values, a hand-checked table of
Go's encoding/json output (number quirks included), and properties over arbitrary JSON values."""

from __future__ import annotations

import hashlib
import json
import math
import re
from decimal import Decimal

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from emailops.core.contract import EmailRequest, Recipient, parse_request
from emailops.core.dedupe import _go_float, canonical_context, dedupe_key, go_json
from tests.conftest import fixture_body

# --- the Go consumer's reference keys ---------------------------------------------------------


def reference_body(name: str) -> str:
    if name.startswith("(inline) "):
        return name.removeprefix("(inline) ")
    return fixture_body(name)


def test_reference_file_covers_every_fixture(dedupe_reference):
    from tests.conftest import CONTRACT

    fixtures = {p.name for p in (CONTRACT / "fixtures").glob("*.json")}
    assert fixtures <= set(dedupe_reference)
    assert any(name.startswith("(inline) ") for name in dedupe_reference)


def test_every_reference_key_matches(dedupe_reference):
    checked = 0
    for name, keys in dedupe_reference.items():
        request = parse_request(reference_body(name))
        assert {r.email for r in request.recipients} == set(keys), name
        for email, expected in keys.items():
            assert dedupe_key(request, email) == expected, (name, email)
            checked += 1
    assert checked == 6


def test_reference_keys_are_what_the_documented_formula_gives(dedupe_reference):
    """The formula spelled out, independently of canonical_context, for the plain fixtures."""
    request = parse_request(fixture_body("minimal.json"))
    canonical = 'datasetName="My Dataset";date="2026-06-18";reviewerName="Bob";'
    assert canonical_context(request.context) == canonical
    text = f"dataset-publication-accepted\x00alice@example.com\x00{canonical}"
    expected = hashlib.sha256(text.encode()).hexdigest()
    assert expected == dedupe_reference["minimal.json"]["alice@example.com"]

    org = parse_request(fixture_body("with-organization.json"))
    assert canonical_context(org.context) == (
        'datasetName="My Dataset";date="2026-06-18";organizationId=367;reviewerName="Bob";'
    )


# --- the key's two forms -----------------------------------------------------------------------


def request(context=None, *, message_id="m", dedupe_id="") -> EmailRequest:
    return EmailRequest(message_id, (Recipient("a@x.com"),), context or {}, dedupe_id)


def test_with_a_dedupe_id_the_key_is_id_colon_recipient():
    assert dedupe_key(request({"a": 1}, dedupe_id="evt-1"), "a@x.com") == "evt-1:a@x.com"
    # The context plays no part then.
    assert dedupe_key(request({"a": 2}, dedupe_id="evt-1"), "a@x.com") == "evt-1:a@x.com"
    assert dedupe_key(request(dedupe_id="evt-1"), "B@X.com") == "evt-1:B@X.com"


def test_without_a_dedupe_id_the_key_is_a_lowercase_sha256():
    key = dedupe_key(request({"b": [1, "x"], "a": True}), "a@x.com")
    expected = hashlib.sha256(b'm\x00a@x.com\x00a=true;b=[1,"x"];').hexdigest()
    assert key == expected
    assert re.fullmatch(r"[0-9a-f]{64}", key)


@pytest.mark.parametrize(
    "text",
    [
        '{"messageId":"m","recipients":[{"email":"a@x.com"}]}',
        '{"messageId":"m","recipients":[{"email":"a@x.com"}],"context":null}',
        '{"messageId":"m","recipients":[{"email":"a@x.com"}],"context":{}}',
    ],
)
def test_missing_null_and_empty_context_give_the_same_key(text, dedupe_reference):
    expected = hashlib.sha256(b"m\x00a@x.com\x00").hexdigest()
    assert dedupe_key(parse_request(text), "a@x.com") == expected
    inline = next(v for k, v in dedupe_reference.items() if k.startswith("(inline)"))
    assert expected == inline["a@x.com"]


def test_key_depends_on_message_id_recipient_and_context_but_not_key_order():
    base = dedupe_key(request({"a": 1, "b": 2}), "a@x.com")
    assert dedupe_key(request({"b": 2, "a": 1}), "a@x.com") == base
    assert dedupe_key(request({"a": 1, "b": 2}, message_id="n"), "a@x.com") != base
    assert dedupe_key(request({"a": 1, "b": 2}), "A@x.com") != base  # case-sensitive, as Go
    assert dedupe_key(request({"a": 1, "b": 3}), "a@x.com") != base
    assert dedupe_key(request({"a": 1.0, "b": 2}), "a@x.com") == base  # 1 and 1.0 are one float64


def test_the_separators_keep_fields_apart():
    assert dedupe_key(request(message_id="ab"), "c@x.com") != dedupe_key(
        request(message_id="a"), "bc@x.com"
    )


def test_unpaired_surrogate_hashes_as_the_replacement_character():
    with_surrogate = dedupe_key(request({"k": "\ud800"}, message_id="m\udc00"), "a@x.com")
    replaced = dedupe_key(request({"k": "\ufffd"}, message_id="m\ufffd"), "a@x.com")
    assert with_surrogate == replaced


# --- canonical(context) -------------------------------------------------------------------------


def test_canonical_context_is_empty_for_nothing():
    assert canonical_context(None) == ""
    assert canonical_context({}) == ""


def test_canonical_context_keys_are_raw_values_are_go_json():
    context = {"b": "<x>", "a": None, "<&>": [1.5, {"z": 1, "y": "\n"}], "é": 1e21}
    assert canonical_context(context) == (
        '<&>=[1.5,{"y":"\\n","z":1}];a=null;b="\\u003cx\\u003e";é=1e+21;'
    )


def test_canonical_context_sorts_keys_by_code_point_not_utf16():
    # UTF-16 would put U+1F600 (a surrogate pair, D83D...) before U+FF00; Go (UTF-8 bytes) does not.
    context = {"\U0001f600": 1, "\uff00": 2, "Z": 3, "a": 4, "": 5}
    assert canonical_context(context) == "=5;Z=3;a=4;\uff00=2;\U0001f600=1;"


# --- go_json: a hand-checked table of Go's encoding/json output ---------------------------------

GO_NUMBERS = [
    (0, "0"),
    (0.0, "0"),
    (-0.0, "-0"),
    (1, "1"),
    (1.0, "1"),
    (-1.5, "-1.5"),
    (0.1, "0.1"),
    (367.0, "367"),
    (100, "100"),
    (1e-6, "0.000001"),
    (0.000001234, "0.000001234"),
    (1e-7, "1e-7"),
    (1.5e-7, "1.5e-7"),
    (9.99e-7, "9.99e-7"),
    (1e-10, "1e-10"),
    (123e-20, "1.23e-18"),
    (1e-100, "1e-100"),
    (5e-324, "5e-324"),
    (1e20, "100000000000000000000"),
    (9.999999999999999e20, "999999999999999900000"),
    (1e21, "1e+21"),
    (-1e21, "-1e+21"),
    (1.5e21, "1.5e+21"),
    (1e100, "1e+100"),
    (1.7976931348623157e308, "1.7976931348623157e+308"),
    (12345678901234567890, "12345678901234567000"),
    (2**53 + 1, "9007199254740992"),
    (123456789.125, "123456789.125"),
    (0.30000000000000004, "0.30000000000000004"),
    (-123.456e-10, "-1.23456e-8"),
]


@pytest.mark.parametrize(("value", "expected"), GO_NUMBERS)
def test_go_numbers(value, expected):
    assert go_json(value) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("-0", "-0"),
        ("-0.0", "-0"),
        ("1E2", "100"),
        ("1.0", "1"),
        ("1e-7", "1e-7"),
        ("0.0000001", "1e-7"),
        ("100000000000000000000000", "1e+23"),
        ("12345678901234567890", "12345678901234567000"),
        ("1e-400", "0"),
    ],
)
def test_go_numbers_from_json_text(text, expected):
    """Through the contract's decoder, as the Go consumer decodes into interface{}."""
    body = '{"messageId":"m","recipients":[{"email":"a@x.com"}],"context":{"n":' + text + "}}"
    assert canonical_context(parse_request(body).context) == f"n={expected};"


GO_STRINGS = [
    ("", '""'),
    ("plain", '"plain"'),
    ("<a href='x'>&amp;</a>", "\"\\u003ca href='x'\\u003e\\u0026amp;\\u003c/a\\u003e\""),
    ("\u2028\u2029", '"\\u2028\\u2029"'),
    ('"quoted" \\ back', '"\\"quoted\\" \\\\ back"'),
    ("\n\r\t\b\f", '"\\n\\r\\t\\b\\f"'),
    ("\x00\x01\x0b\x1b\x1f", '"\\u0000\\u0001\\u000b\\u001b\\u001f"'),
    ("\x7f", '"\x7f"'),
    ("/path/", '"/path/"'),
    ("é ü ß 日本", '"é ü ß 日本"'),
    ("\U0001f600", '"\U0001f600"'),
    ("\u00a0\u200b\ufeff", '"\u00a0\u200b\ufeff"'),
    ("\ud800", '"\ufffd"'),
]


@pytest.mark.parametrize(("value", "expected"), GO_STRINGS)
def test_go_strings(value, expected):
    assert go_json(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, "null"),
        (True, "true"),
        (False, "false"),
        ([], "[]"),
        ({}, "{}"),
        ([1, "a", None, [True, []]], '[1,"a",null,[true,[]]]'),
        ((1, 2), "[1,2]"),
        ({"b": 1, "a": {"d": [], "c": {}}}, '{"a":{"c":{},"d":[]},"b":1}'),
        ({"<k>": "&"}, '{"\\u003ck\\u003e":"\\u0026"}'),
        ({"b": 1, "B": 2, "é": 3, "e": 4}, '{"B":2,"b":1,"e":4,"é":3}'),
    ],
)
def test_go_json_structures(value, expected):
    assert go_json(value) == expected


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_go_json_refuses_non_finite_numbers(value):
    with pytest.raises(ValueError):
        go_json(value)


@pytest.mark.parametrize("value", [{1, 2}, object(), b"bytes", Decimal("1")])
def test_go_json_refuses_non_json_values(value):
    with pytest.raises(TypeError):
        go_json(value)


# --- go_json: properties ------------------------------------------------------------------------

finite_floats = st.floats(allow_nan=False, allow_infinity=False)
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | finite_floats
    | st.text()
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=20,
)


def as_go_sees_it(value):
    """The value after a float64 round trip: every number is a float."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, list):
        return [as_go_sees_it(v) for v in value]
    return {k: as_go_sees_it(v) for k, v in value.items()}


def same(a, b) -> bool:
    """Equality that also tells 0.0 from -0.0."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


_STRING_LITERAL = re.compile(r'"(?:[^"\\]|\\.)*"')


@settings(max_examples=300, deadline=None)
@given(json_values)
@example({"a": [1e21, 1e-7, -0.0, "<&>\u2028\u2029\n\x00"]})
def test_go_json_round_trips(value):
    encoded = go_json(value)
    decoded = json.loads(encoded, parse_int=float)
    assert same(decoded, as_go_sees_it(value))


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_go_json_never_emits_html_characters_line_separators_or_spacing(value):
    encoded = go_json(value)
    for forbidden in "<>&\u2028\u2029":
        assert forbidden not in encoded
    assert not any(ch < " " for ch in encoded), "control characters are always escaped"
    outside_strings = _STRING_LITERAL.sub("", encoded)
    assert not re.search(r"\s", outside_strings)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(max_size=4), st.integers(0, 9), min_size=2, max_size=8))
def test_go_json_object_keys_are_in_code_point_order(value):
    decoded = json.loads(go_json(value), object_pairs_hook=lambda pairs: [k for k, _ in pairs])
    assert decoded == sorted(value)
    assert decoded == sorted(value, key=lambda k: k.encode("utf-8"))  # Go's byte order


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(max_size=4), st.integers(0, 9), min_size=1, max_size=8))
def test_canonical_context_is_key_value_pairs_in_order(context):
    expected = "".join(f"{k}={go_json(context[k])};" for k in sorted(context))
    assert canonical_context(context) == expected


# --- _go_float -----------------------------------------------------------------------------------

_F_FORM = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]*[1-9])?")
_E_FORM = re.compile(r"-?[1-9](\.[0-9]*[1-9])?e[-+][1-9][0-9]*")


def significant_digits(text: str) -> int:
    mantissa = text.lstrip("-").split("e")[0].replace(".", "")
    return len(mantissa.strip("0"))


@settings(max_examples=1000, deadline=None)
@given(finite_floats)
@example(1e21)
@example(1e-6)
@example(9.999999999999999e-7)
@example(999999999999999900000.0)
@example(5e-324)
@example(-0.0)
def test_go_float_round_trips_in_es6_form(x):
    text = _go_float(x)
    assert float(text) == x
    assert math.copysign(1, float(text)) == math.copysign(1, x)
    if x != 0 and (abs(x) < 1e-6 or abs(x) >= 1e21):
        assert _E_FORM.fullmatch(text), text
    else:
        assert _F_FORM.fullmatch(text), text
        assert "e" not in text
    # Shortest digits that round-trip, as strconv's precision -1.
    assert significant_digits(text) == significant_digits(repr(abs(x)))


@settings(deadline=None)
@given(st.integers(min_value=-(2**63), max_value=2**63))
def test_go_float_of_integers_has_no_decimal_point_below_1e21(n):
    text = _go_float(float(n))
    assert "." not in text and "e" not in text
    assert float(text) == float(n)


@settings(deadline=None)
@given(finite_floats)
def test_go_json_of_a_number_is_go_float(x):
    assert go_json(x) == _go_float(x)
