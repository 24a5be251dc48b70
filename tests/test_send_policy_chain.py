"""The send-policy chain as the container composes it (emailops/pipeline_build.py): the default
order, the container's own adapters behind each policy, and a control its setting turns off
absent from the list (docs/pipeline.md)."""

from __future__ import annotations

from emailops import container
from emailops.core.policies.emergency_stop import EmergencyStop
from emailops.core.policies.reputation_pause import ReputationPause
from emailops.core.policies.send_guard import SendGuardCheck
from emailops.core.policies.service_stop import ServiceStop
from emailops.core.policies.suppression import Suppression
from emailops.core.policies.template_off import TemplateOff
from emailops.core.policies.unsubscribed import Unsubscribed

DEFAULT = [ReputationPause, EmergencyStop, TemplateOff, Suppression, Unsubscribed, SendGuardCheck]


def chain() -> list[type]:
    return [type(p) for p in container.current().build_pipeline(lease_seconds=30).policies]


def test_the_default_chain_in_its_order_over_the_containers_adapters(aws):
    built = container.current()
    policies = built.build_pipeline(lease_seconds=30).policies
    assert [type(p) for p in policies] == DEFAULT
    pause, stop, _, suppression, unsubscribed, guard = policies
    assert (pause.gate, pause.slow) == (built.reputation_gate, built.slow_rate_limiter)
    assert pause.pause_wait_seconds == built.config.reputation.pause_wait_seconds
    assert stop.switch is built.send_stop
    assert suppression.suppressions is built.suppression_list
    assert unsubscribed.preferences is built.cached_preference_store
    assert guard.guard is built.send_guard


def test_send_enabled_false_puts_the_service_stop_first_among_the_recipients_controls(
    aws, settings
):
    settings.SEND_ENABLED = False
    assert chain() == [DEFAULT[0], ServiceStop, *DEFAULT[1:]]


def test_no_rate_limit_table_leaves_the_send_guard_out(aws, settings):
    settings.RATE_LIMIT_TABLE = ""
    assert chain() == DEFAULT[:-1]
