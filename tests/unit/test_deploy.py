"""The deployment files in deploy/ (issue 26.4), checked offline: every `seojobs` command they
run parses with the real CLI (its subcommands and options), every SEOJOBS_* variable they set
is a real setting, every file they copy or mount exists, the Compose file has the services the
scale-out needs, the images run as an unprivileged user, and systemd itself verifies the units
(``systemd-analyze verify``, when it is installed). Nothing is built or pulled."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import AliasChoices
from typer.main import get_command

from seojobs.cli import app
from seojobs.kinds import load_registry
from seojobs.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
SYSTEMD = DEPLOY / "systemd"


def _cli_envvars(command: Any) -> set[str]:
    found = {
        name
        for param in command.params
        for name in ([param.envvar] if isinstance(param.envvar, str) else param.envvar or [])
    }
    if hasattr(command, "commands"):  # a group (typer's own click)
        for sub in command.commands.values():
            found |= _cli_envvars(sub)
    return found


def _known_variables() -> tuple[set[str], re.Pattern[str]]:
    names = {f"SEOJOBS_{field.upper()}" for field in Settings.model_fields}
    names |= _cli_envvars(get_command(app))
    for kind in load_registry(Settings(database_url="sqlite://")).kinds():
        if kind.settings is not None:
            prefix = str(kind.settings.model_config.get("env_prefix") or "").upper()
            for name, field in kind.settings.model_fields.items():
                names.add(prefix + name.upper())
                alias = field.validation_alias  # a moved setting's names, its old one too
                if isinstance(alias, AliasChoices):
                    names |= {str(choice).upper() for choice in alias.choices}
    return names, re.compile(r"SEOJOBS_QUOTA_[A-Z0-9_]+_(DAILY|MONTHLY)")


KNOWN, QUOTA = _known_variables()


def _check_variables(names: set[str], where: str) -> None:
    unknown = sorted(n for n in names if n.startswith("SEOJOBS_") and n not in KNOWN)
    unknown = [n for n in unknown if not QUOTA.fullmatch(n)]
    assert not unknown, f"{where} sets variables seojobs does not read: {unknown}"


def _check_command(argv: list[str], where: str) -> str:
    """Parse a `seojobs …` command line with the real CLI; its subcommand's name."""
    assert Path(argv[0]).name == "seojobs", f"{where}: not a seojobs command: {argv}"
    command: Any = get_command(app)
    args = list(argv[1:])
    path = []
    while hasattr(command, "commands"):
        name = args.pop(0)
        assert name in command.commands, f"{where}: no `seojobs {name}` command"
        command = command.commands[name]
        path.append(name)
    try:
        command.make_context(" ".join(path), args)
    except Exception as exc:  # typer's click: UsageError, BadParameter, NoSuchOption
        if not hasattr(exc, "format_message"):
            raise
        pytest.fail(f"{where}: `{shlex.join(argv)}` does not parse: {exc.format_message()}")
    return " ".join(path)


# -- Dockerfile -------------------------------------------------------------------------------


def _instructions(path: Path) -> list[tuple[str, str]]:
    text = re.sub(r"\\\n", " ", path.read_text())
    found = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            found.append((keyword.upper(), rest.strip()))
    return found


def _stages(path: Path) -> dict[str, list[tuple[str, str]]]:
    """Each stage's instructions, a stage built FROM another stage inheriting its own."""
    stages: dict[str, list[tuple[str, str]]] = {}
    current: list[tuple[str, str]] = []
    for keyword, rest in _instructions(path):
        if keyword == "FROM":
            base, _, name = rest.partition(" AS ")
            current = list(stages.get(base.strip(), []))
            stages[name.strip() or base.strip()] = current
        else:
            current.append((keyword, rest))
    return stages


def test_dockerfile() -> None:
    stages = _stages(DEPLOY / "Dockerfile")
    assert {"build", "api", "worker", "worker-vitals"} <= set(stages)
    for name in ("api", "worker", "worker-vitals"):
        steps = stages[name]
        users = [rest for keyword, rest in steps if keyword == "USER"]
        assert users and users[-1] not in ("root", "0"), f"stage {name} runs as root"
        [*_, cmd] = [json.loads(rest) for keyword, rest in steps if keyword == "CMD"]
        _check_command(cmd, f"Dockerfile stage {name}")
        env = {
            word.partition("=")[0]
            for keyword, rest in steps
            if keyword == "ENV"
            for word in shlex.split(rest)
        }
        _check_variables(env, f"Dockerfile stage {name}")
    assert _check_command(json.loads(dict(stages["api"])["CMD"]), "api") == "serve"
    copied = [
        rest.split()[:-1]
        for steps in stages.values()
        for keyword, rest in steps
        if keyword == "COPY"
    ]
    for sources in copied:
        if sources[0].startswith("--from"):
            continue
        for source in sources:
            assert (ROOT / source).exists(), f"Dockerfile copies {source}, which is not there"
    # The web-vitals worker: Debian's chromium and the Lighthouse the repository pins.
    vitals = " ".join(rest for _keyword, rest in stages["worker-vitals"])
    assert "chromium" in vitals and "npm ci" in vitals
    assert "lighthouse/package-lock.json" in vitals


# -- Compose ----------------------------------------------------------------------------------


def _argv(command: Any) -> list[str]:
    return command if isinstance(command, list) else shlex.split(command)


def test_compose() -> None:
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    services: dict[str, Any] = compose["services"]
    stages = _stages(DEPLOY / "Dockerfile")
    roles: dict[str, list[str]] = {}
    for name, service in services.items():
        _check_variables(set(service.get("environment") or {}), f"compose service {name}")
        for needed in service.get("depends_on") or {}:
            assert needed in services, f"{name} depends on a service that is not there: {needed}"
        build = service.get("build")
        if build:
            assert (DEPLOY / build["context"] / build["dockerfile"]).is_file()
            assert build["target"] in stages, f"{name}: no Dockerfile stage {build['target']}"
        for volume in service.get("volumes") or []:
            source = volume.split(":")[0]
            if source.startswith("."):
                assert (DEPLOY / source).exists(), f"{name} mounts {source}, which is not there"
        if "command" in service and _argv(service["command"])[0] == "seojobs":
            role = _check_command(_argv(service["command"]), f"compose service {name}")
            roles.setdefault(role, []).append(name)
    assert len(roles["serve"]) == 2 and len(roles["worker"]) == 2, roles
    assert roles["migrate"], "nothing migrates the schema"
    images = {name: str(service.get("image", "")) for name, service in services.items()}
    assert images["postgres"].startswith("postgres:") and images["redis"].startswith("redis:")
    assert any(image.startswith(("nginx:", "caddy:", "traefik:")) for image in images.values())
    for name in roles["serve"]:  # they run on PostgreSQL and share the rate limit in Redis
        environment = services[name]["environment"]
        assert environment["SEOJOBS_DATABASE_URL"].startswith("postgresql://")
        assert environment["SEOJOBS_RATE_LIMIT_STORAGE"].startswith("redis://redis:")
        assert "--no-worker" in _argv(services[name]["command"])
    # The proxy sends to each API process, on the port it listens on.
    upstreams = re.findall(r"^\s*server\s+(\S+):(\d+)", (DEPLOY / "nginx.conf").read_text(), re.M)
    assert sorted(host for host, _port in upstreams) == sorted(roles["serve"])
    for host, port in upstreams:
        argv = _argv(services[host]["command"])
        assert argv[argv.index("--port") + 1] == port


# -- systemd ----------------------------------------------------------------------------------


def _unit(path: Path) -> dict[str, str]:
    return {
        key.strip(): value.strip()
        for key, sep, value in (line.partition("=") for line in path.read_text().splitlines())
        if sep and not key.startswith("#")
    }


def test_systemd_units() -> None:
    units = sorted(SYSTEMD.glob("*.service"))
    assert {u.name for u in units} >= {
        "seojobs-api@.service",
        "seojobs-worker@.service",
        "seojobs-migrate.service",
    }
    environment = {
        line.partition("=")[0]
        for line in (SYSTEMD / "seojobs.env").read_text().splitlines()
        if line and not line.startswith("#")
    }
    _check_variables(environment, "systemd/seojobs.env")
    for unit in units:
        fields = _unit(unit)
        assert fields["User"] not in ("root", "0"), unit.name
        assert fields["EnvironmentFile"] == "/etc/seojobs/seojobs.env"
        argv = shlex.split(fields["ExecStart"].replace("%i", "8001"))
        _check_command(argv, unit.name)


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze")
def test_systemd_analyze_verifies_the_units(tmp_path: Path) -> None:
    # The units as installed, but pointing at this checkout's seojobs and environment file
    # (verify checks that ExecStart's program exists); instances named as they would be.
    seojobs = shutil.which("seojobs") or str(
        Path(__import__("sys").executable).with_name("seojobs")
    )
    names = []
    for unit in SYSTEMD.glob("*.service"):
        text = unit.read_text().replace("/opt/seojobs/bin/seojobs", seojobs)
        text = text.replace("/etc/seojobs/seojobs.env", str(SYSTEMD / "seojobs.env"))
        name = unit.name.replace("@.", "@8001.")
        (tmp_path / name).write_text(text)
        names.append(f"./{name}")
    done = subprocess.run(
        ["systemd-analyze", "verify", "--man=no", *names],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Unknown" not in done.stderr, done.stderr
