"""The dashboard's figures in words: what each guard state means and what the guard did about
it, and what the SES quota chart shows (the rate sending goes at, the 24-hour quota, over it).

Figures come from ``selectors.dashboard``; nothing here reads a store."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from emailops.config import ReputationConfig

__all__ = ["act_consequence", "quota_words", "state_words"]


def _pct(value: float) -> str:
    return f"{value:g} %"


def state_words(state: str, config: ReputationConfig) -> str:
    """One sentence: what ``state`` means over the window and what the guard does about it."""
    window = f"the last {config.window_hours} h"
    warn = (
        f"bounce {_pct(config.warn_bounce_percent)}, "
        f"complaint {_pct(config.warn_complaint_percent)}"
    )
    act = (
        f"bounce {_pct(config.act_bounce_percent)}, complaint {_pct(config.act_complaint_percent)}"
    )
    if state == "low_volume":
        return (
            f"too few sends to judge: fewer than {config.min_volume} delivered or bounced in "
            f"{window}, so the rates are not judged and the guard neither warns nor pauses"
        )
    if state == "ok":
        return (
            f"the rates of {window} are under the warn lines ({warn}): all mail goes at full speed"
        )
    if state == "warn":
        return (
            f"a rate of {window} is past a warn line ({warn}): the guard alerts and "
            f"pauses nothing until the act line ({act})"
        )
    if state == "act":
        return (
            f"a rate of {window} is past an act line ({act}): the guard pauses bulk mail and "
            f"slows normal mail to {config.slow_share:.0%} of the rate; critical mail always goes"
        )
    return "not known: the counters could not be read"


def act_consequence(organization: str | None, pauses: list[dict[str, Any]]) -> str:
    """What the guard did about an "act" of the account (``None``) or an organization: the
    pause in force, or that its next check (every 5 minutes) sets it."""
    here = [p for p in pauses if (p.get("organization") or None) == organization]
    if any(p.get("priority") == "bulk" for p in here):
        return "bulk mail is paused and normal mail slowed (below)"
    return "the guard pauses bulk mail and slows normal mail at its next check (within 5 minutes)"


def quota_words(quota: dict[str, Any], configured_rate: float | None) -> dict[str, Any]:
    """The quota chart's title, and whether the account is over its 24-hour quota."""
    if not quota:
        return {}
    maximum, sent = quota["max_24_hour_send"], quota["sent_last_24_hours"]
    allowed = quota.get("max_send_rate")
    ses_rate = f"SES allows {allowed:g}/s" if allowed is not None else "SES's rate not read"
    if configured_rate is None:
        rate = f"sending at up to {allowed:g}/s (SES's rate)" if allowed is not None else ses_rate
    elif configured_rate == 0:
        rate = f"no send rate set ({ses_rate})"
    else:
        rate = f"sending at up to {configured_rate:g}/s (SES_MAX_SEND_RATE; {ses_rate})"
    over = sent > maximum
    if over:
        state = f"over quota: {sent:,.0f} sent of {maximum:,.0f} allowed"
    else:
        state = f"{sent:,.0f} of {maximum:,.0f} sent, {maximum - sent:,.0f} left"
    return {
        "title": f"SES 24-hour sending quota — {state}; {rate}",
        "over": over,
    }
