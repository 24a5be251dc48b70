"""Readers for the deployment files: docker/Dockerfile and docker/compose.yml, as the production
smoke test runs them. Deliberately small parsers for what these two files use, so the test runs
what the files declare instead of a copy of it."""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "docker" / "Dockerfile"
COMPOSE = ROOT / "docker" / "compose.yml"
# compose's build context is `..` (the repository): the Dockerfile's COPY sources are relative to it.
CONTEXT = ROOT

# Docker's own default when a service declares no stop_grace_period: SIGKILL after 10 s.
DEFAULT_STOP_GRACE_SECONDS = 10.0


def dockerfile_instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order, continuation lines joined, comments dropped."""
    instructions: list[tuple[str, str]] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line, pending = pending + line, ""
        keyword, _, args = line.partition(" ")
        instructions.append((keyword.upper(), args.strip()))
    return instructions


@dataclass(frozen=True)
class Image:
    env: dict[str, str]
    copies: list[tuple[list[str], str]]  # (sources, destination)
    runs: list[str]
    cmd: list[str]
    healthcheck: list[str]

    @classmethod
    def read(cls, path: Path = DOCKERFILE) -> Image:
        env: dict[str, str] = {}
        copies: list[tuple[list[str], str]] = []
        runs: list[str] = []
        cmd: list[str] = []
        healthcheck: list[str] = []
        for keyword, args in dockerfile_instructions(path.read_text()):
            if keyword == "ENV":
                env |= dict(word.split("=", 1) for word in shlex.split(args))
            elif keyword == "COPY":
                *sources, destination = shlex.split(args)
                copies.append((sources, destination))
            elif keyword == "RUN":
                runs.append(args)
            elif keyword == "CMD":
                cmd = json.loads(args)  # the exec form: pid 1 is the server, signals reach it
            elif keyword == "HEALTHCHECK":
                healthcheck = json.loads(args.split(" CMD ", 1)[1])
        return cls(env=env, copies=copies, runs=runs, cmd=cmd, healthcheck=healthcheck)

    def copied_paths(self) -> set[str]:
        return {source.rstrip("/") for sources, _ in self.copies for source in sources}


def declared_packages() -> list[str]:
    """The top-level packages pyproject ships (its find include patterns, without the '*')."""
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    return [pattern.rstrip("*") for pattern in setuptools["packages"]["find"]["include"]]


_INTERPOLATION = re.compile(r"\$\{(\w+)(?::?[-?+][^}]*)?\}")


def interpolate(value: str, variables: dict[str, str]) -> str:
    """compose's ${NAME}, ${NAME:?message} and ${NAME:-default}, then $$ → $. Every variable the
    file uses must be given: a default hides what the deployment is expected to set."""

    def replace(match: re.Match) -> str:
        name = match.group(1)
        if name not in variables:
            raise KeyError(f"docker/compose.yml uses ${{{name}}}; the smoke test does not set it")
        return variables[name]

    return _INTERPOLATION.sub(replace, value).replace("$$", "$")


def command_argv(command: str | list[str]) -> list[str]:
    """compose's command: a string is split like a shell would (no shell runs it), a list is as is."""
    return shlex.split(command) if isinstance(command, str) else list(command)


def stop_grace_seconds(service: dict) -> float:
    text = str(service.get("stop_grace_period", "")).strip()
    if not text:
        return DEFAULT_STOP_GRACE_SECONDS
    total = 0.0
    for amount, unit in re.findall(r"(\d+(?:\.\d+)?)(ms|h|m|s)", text):
        total += float(amount) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[unit]
    return total


def map_hosts(value: str, hosts: dict[str, tuple[str, str | None]]) -> str:
    """A URL naming a compose service (http://moto:5000/...) → the same URL on this machine:
    hosts maps service → (host:port, path or None to keep the URL's own path)."""
    parts = urlsplit(value)
    if not parts.scheme or parts.hostname not in hosts:
        return value
    hostport, path = hosts[parts.hostname]
    userinfo = parts.netloc.rpartition("@")[0]
    netloc = f"{userinfo}@{hostport}" if userinfo else hostport
    return urlunsplit(parts._replace(netloc=netloc, path=parts.path if path is None else path))


def env_example_defaults(path: Path = ROOT / ".env.example") -> dict[str, str]:
    """NAME=value lines of .env.example (commented-out overrides left out)."""
    defaults = {}
    for line in path.read_text().splitlines():
        if line and not line.startswith("#") and "=" in line:
            name, _, value = line.partition("=")
            defaults[name.strip()] = value.strip()
    return defaults
