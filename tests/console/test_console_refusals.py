"""console.attempt: the one place that turns what a service refused into the words a page shows."""

from __future__ import annotations

import pytest
from django import forms
from django.contrib.messages.storage.cookie import CookieStorage
from django.core.exceptions import ValidationError
from django.http import HttpResponseRedirect
from django.test import RequestFactory

from emailops.core.errors import ConcurrentUpdate, TransientError
from templates_admin.console import Refusal, attempt, confirmed_action


class Stale(ValueError):
    pass


def failing(error: Exception):
    def call():
        raise error

    return call


def test_a_call_that_works_returns_its_value():
    assert attempt(lambda: 42, unavailable="Not done") == 42


def test_a_validation_error_is_its_messages_and_a_400():
    refusal = attempt(failing(ValidationError(["Too long.", "Not an address."])))
    assert isinstance(refusal, Refusal)
    assert (refusal.text, refusal.status) == ("Too long. Not an address.", 400)


def test_aws_trouble_says_what_did_not_happen_and_why_with_a_502():
    error = TransientError("SendMessage", key="q", reason="throttled")
    refusal = attempt(failing(error), unavailable="The request could not be queued")
    assert refusal == Refusal(
        "The request could not be queued: SendMessage [q]: throttled", 502, error
    )


def test_aws_trouble_goes_on_to_the_unavailable_page_unless_the_view_words_it():
    with pytest.raises(TransientError):
        attempt(failing(TransientError("GetItem")))


def test_a_conflict_is_never_worded_as_aws_trouble():
    with pytest.raises(ConcurrentUpdate):
        attempt(failing(ConcurrentUpdate("save")), unavailable="Not saved")


def test_the_view_s_own_exceptions_come_first_with_their_words():
    conflict = ConcurrentUpdate("save", reason="changed")
    refusal = attempt(failing(conflict), also={ConcurrentUpdate: lambda exc: f"late: {exc.reason}"})
    assert (refusal.text, refusal.status, refusal.error) == ("late: changed", 400, conflict)
    assert attempt(failing(Stale("cursor expired")), also={Stale: str}).text == "cursor expired"


def test_anything_else_is_a_bug_and_is_raised():
    with pytest.raises(KeyError):
        attempt(failing(KeyError("x")), unavailable="Not done", also={Stale: str})


# --- confirmed_action: a confirmation page's POST ----------------------------------------------


class ReasonForm(forms.Form):
    reason = forms.CharField()


def posted(data: dict):
    request = RequestFactory().post("/confirm", data)
    request._messages = CookieStorage(request)
    return request, ReasonForm(data)


def test_a_confirmed_action_runs_with_the_form_s_data_then_flashes_and_redirects():
    request, form = posted({"reason": "asked"})
    done = []

    outcome = confirmed_action(
        request,
        form,
        lambda data: done.append(data["reason"]) or "q-1",
        unavailable="Not queued",
        done=lambda result: f"Queued as {result}.",
        then="/detail",
    )

    assert done == ["asked"]
    assert isinstance(outcome, HttpResponseRedirect) and outcome.url == "/detail"
    assert [m.message for m in request._messages] == ["Queued as q-1."]


def test_a_confirmed_action_with_form_errors_does_not_run_and_has_no_words_of_its_own():
    request, form = posted({"reason": ""})
    ran = []

    outcome = confirmed_action(
        request, form, ran.append, unavailable="Not queued", done=str, then="/detail"
    )

    assert (outcome, ran) == ("", [])
    assert form.errors["reason"]


def test_a_refused_confirmed_action_is_the_refusal_s_words_and_flashes_nothing():
    request, form = posted({"reason": "asked"})

    outcome = confirmed_action(
        request,
        form,
        lambda data: failing(TransientError("SendMessage", key="q", reason="throttled"))(),
        unavailable="Not queued",
        done=str,
        then="/detail",
    )

    assert outcome == "Not queued: SendMessage [q]: throttled"
    assert list(request._messages) == []
