"""SpamAssassin's daemon as the publish gate's spam scorer (``emailops.core.template_spam``):
Debian's ``spamc`` client against spamd at SPAMD_ADDRESS, ``-R`` (the score and the report of
the rules that fired). A draft's check scores each variant once, and the same bytes again (the
published version's check, a second page view) come from a small cache."""

from __future__ import annotations

import hashlib
import logging
import re
import shutil
import socket
import subprocess

from emailops.core.template_spam import SpamScore

__all__ = ["SpamdScorer", "parse_report"]

logger = logging.getLogger(__name__)

_HEAD = re.compile(r"^\s*(-?\d+(?:\.\d+)?)/(-?\d+(?:\.\d+)?)\s*$")
_RULE = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s+([A-Z0-9_]+)\s+(.*)$")
_CACHE_SIZE = 256


def parse_report(output: str) -> SpamScore | None:
    """``spamc -R``'s output: "score/threshold", then the report whose table lists the rules."""
    lines = output.splitlines()
    head = _HEAD.match(lines[0]) if lines else None
    if head is None:
        return None
    rules: list[tuple[float, str, str]] = []
    in_table = False
    for line in lines[1:]:
        if line.startswith("----"):
            in_table = True
            continue
        match = _RULE.match(line) if in_table else None
        if match:
            rules.append((float(match[1]), match[2], match[3].strip()))
        elif in_table and line.startswith("  ") and rules:  # a description's continuation
            points, name, what = rules[-1]
            rules[-1] = (points, name, f"{what} {line.strip()}")
    return SpamScore(float(head[1]), tuple(rules))


_STAMPS = re.compile(rb"^(Date|Message-ID): [^\n]*\n", re.M | re.I)


def _digest(message: bytes) -> str:
    """The message's identity for the cache: its bytes less the Date and Message-ID each
    message is given anew (the same render scores the same within the cache's life)."""
    head, sep, body = message.partition(b"\n\n")
    return hashlib.sha256(_STAMPS.sub(b"", head + b"\n") + sep + body).hexdigest()


class SpamdScorer:
    def __init__(self, address: str, *, timeout: float = 10.0) -> None:
        self.address = address
        host, _, port = address.rpartition(":")
        self.host, self.port = host, int(port) if port.isdigit() else 0
        self.timeout = timeout
        self._cache: dict[str, SpamScore] = {}

    def describe(self) -> str:
        return f"spamd at {self.address}"

    def _reachable(self) -> bool:
        try:
            with socket.create_connection((self.host, self.port), timeout=0.5):
                return True
        except OSError:
            return False

    def score(self, message: bytes) -> SpamScore | str:
        if not self.address:
            return "SPAMD_ADDRESS is empty"
        digest = _digest(message)
        if digest in self._cache:
            return self._cache[digest]
        spamc = shutil.which("spamc")
        if spamc is None:
            return "spamc is not installed (Debian's spamc package)"
        if not self._reachable():
            return f"spamd not reachable at {self.address}"
        argv = [spamc, "-d", self.host, "-p", str(self.port), "-R", "-x"]
        argv += ["-t", str(int(self.timeout)), "--connect-retries=1", "-s", "2097152"]
        try:
            done = subprocess.run(
                argv, input=message, capture_output=True, timeout=self.timeout + 2, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            logger.warning("spamd score failed address=%s error=%s", self.address, exc)
            return f"spamd at {self.address} did not answer ({type(exc).__name__})"
        result = parse_report(done.stdout.decode("utf-8", "replace"))
        if done.returncode != 0 or result is None:
            logger.warning("spamd score failed address=%s exit=%s", self.address, done.returncode)
            return f"spamd at {self.address} failed (spamc exit {done.returncode})"
        if len(self._cache) >= _CACHE_SIZE:
            self._cache.pop(next(iter(self._cache)))
        self._cache[digest] = result
        return result
