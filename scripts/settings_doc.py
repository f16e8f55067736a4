"""Write docs/settings.md from the settings models, so the page cannot drift from the code.

    .venv/bin/python scripts/settings_doc.py > docs/settings.md    # after changing a setting
    .venv/bin/python scripts/settings_doc.py --check               # exit 1 when it differs

The models are the central ``seojobs.settings.Settings`` and each registered kind's own
``Kind.settings`` model, read from the registry, and the quotas the kinds declare. A setting's
meaning is its field's ``description``; ``NOTES`` below gives one to the fields that have none
yet (tests/unit/test_docs_settings.py checks that each note names a real setting without a
description of its own, so a note goes once the model says it). Defaults that depend on where
the process runs (the working directory, the checkout, ``PATH``) are written as such.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import AliasChoices
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined
from pydantic_settings import BaseSettings

from seojobs.engine.registry import Registry
from seojobs.kinds import load_registry
from seojobs.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "settings.md"

# Meanings for settings whose field has no description (yet), by environment variable.
NOTES: dict[str, str] = {
    "SEOJOBS_IDEMPOTENCY_TTL_SECONDS": "How long a user's `Idempotency-Key` is kept: a retry "
    "with it replays the first answer, seconds.",
    "SEOJOBS_ALLOW_PRIVATE_NETWORKS": "Let the fetcher reach private and loopback addresses "
    "(intranets, tests); cloud metadata addresses stay refused, in every IPv6 spelling too.",
    "SEOJOBS_DAY_SECONDS": "The unit of `checker` days and `every_days` schedules (shorten it "
    "for demos and tests).",
    "SEOJOBS_MAX_RESCUES": "Rescues before a job fails with `worker_lost`.",
    "SEOJOBS_WORKER_CONCURRENCY": "Jobs one worker runs at once (`seojobs worker --concurrency`).",
    "SEOJOBS_MAX_SCHEDULES_PER_USER": "Schedules one user may have.",
    "SEOJOBS_USER_AGENT": "The fetcher's User-Agent, and the name robots.txt is read for.",
    "SEOJOBS_FETCH_CONNECT_TIMEOUT": "The fetcher's connect timeout, seconds.",
    "SEOJOBS_FETCH_MAX_REDIRECTS": "Redirects the fetcher follows.",
    "SEOJOBS_INDEXNOW_KEY": "IndexNow key: submission for Bing and Yandex.",
    "SEOJOBS_INDEXNOW_KEY_LOCATION": "IndexNow `keyLocation`: a path applies on every host, a "
    "full URL only on its own host (elsewhere `/<key>.txt`).",
    "SEOJOBS_INDEXNOW_ENDPOINT": "Where IndexNow submissions go.",
    "SEOJOBS_GOOGLE_CREDENTIALS_FILE": "A service-account JSON (its `token_uri` is honoured) for "
    "the Google Indexing API and URL Inspection.",
    "SEOJOBS_GOOGLE_INDEXING_BASE_URL": "The Google Indexing API.",
    "SEOJOBS_URL_INSPECTION_BASE_URL": "Search Console URL Inspection.",
    "SEOJOBS_SERPAPI_KEY": "SerpApi: index checks.",
    "SEOJOBS_SERPAPI_BASE_URL": "SerpApi's API.",
    "SEOJOBS_DATAFORSEO_LOGIN": "DataForSEO: index checks, rank checks, keyword research.",
    "SEOJOBS_DATAFORSEO_PASSWORD": "DataForSEO's password.",
    "SEOJOBS_DATAFORSEO_BASE_URL": "DataForSEO's API.",
    "SEOJOBS_SERPER_KEY": "Serper: index checks and rank checks.",
    "SEOJOBS_SERPER_BASE_URL": "Serper's API.",
    "SEOJOBS_GOOGLE_ADS_DEVELOPER_TOKEN": "Google Ads API (Keyword Planner): the developer token.",
    "SEOJOBS_GOOGLE_ADS_CLIENT_ID": "Google Ads API: the OAuth client.",
    "SEOJOBS_GOOGLE_ADS_CLIENT_SECRET": "Google Ads API: the OAuth client's secret.",
    "SEOJOBS_GOOGLE_ADS_REFRESH_TOKEN": "Google Ads API: the refresh token, exchanged for "
    "access tokens.",
    "SEOJOBS_GOOGLE_ADS_BASE_URL": "The Google Ads API.",
    "SEOJOBS_GOOGLE_ADS_TOKEN_URL": "Where the refresh token is exchanged.",
    "SEOJOBS_GOOGLE_ADS_API_VERSION": "The Google Ads API version.",
    "SEOJOBS_CRUX_API_KEY": "CrUX field data for `web_vitals` (none without a key).",
    "SEOJOBS_CRUX_BASE_URL": "The Chrome UX Report API.",
    "SEOJOBS_OPENAI_API_KEY": "AI search (GEO) through the OpenAI Responses API with `web_search`.",
    "SEOJOBS_OPENAI_BASE_URL": "The OpenAI API.",
    "SEOJOBS_PERPLEXITY_API_KEY": "AI search (GEO) through Perplexity Sonar.",
    "SEOJOBS_PERPLEXITY_BASE_URL": "Perplexity's API.",
    "SEOJOBS_PERPLEXITY_MODEL": "The Perplexity model.",
    "SEOJOBS_PROVIDER_TIMEOUT": "Read timeout of a provider call, seconds; an answer must be "
    "complete within connect + twice this, and at most 16 MiB.",
    # Kinds' own settings.
    "SEOJOBS_BACKLINK_REFRESH_CONCURRENCY": "Pairs one backlink refresh checks at once (the "
    "per-host fetch limits still apply).",
    "SEOJOBS_DOMAIN_LOOKUP_RDAP_BOOTSTRAP_URL": "IANA's RDAP bootstrap file for domains.",
    "SEOJOBS_DOMAIN_LOOKUP_RDAP_BOOTSTRAP_TTL": "Seconds a worker keeps the bootstrap file.",
    "SEOJOBS_DOMAIN_LOOKUP_DNS_NAMESERVERS": "The resolvers domain lookups ask, `host[:port]` "
    "comma separated (`[::1]:53` for IPv6 with a port); default: the system resolver.",
    "SEOJOBS_DOMAIN_LOOKUP_DNS_TIMEOUT": "Seconds one DNS query may take.",
    "SEOJOBS_DOMAIN_LOOKUP_TLS_PORT": "Where a lookup reads the certificate.",
    "SEOJOBS_DOMAIN_LOOKUP_TLS_TIMEOUT": "Seconds a TLS handshake may take.",
    "SEOJOBS_DOMAIN_LOOKUP_TLS_CA_FILE": "Extra trust anchors (PEM) besides the system's, for "
    "`verified`.",
    "SEOJOBS_DOMAIN_LOOKUP_PART_TIMEOUT": "Seconds each part of a lookup (RDAP, DNS, TLS) may "
    "take in all; a part over it fails on its own (`…_unavailable`).",
    "SEOJOBS_SITE_AUDIT_CONCURRENCY": "Pages one audit fetches at once (the per-host fetch "
    "limits still apply).",
    "SEOJOBS_SITE_AUDIT_EXTERNAL_LINKS_PER_HOST": "URLs of one other site whose links an audit "
    "checks.",
    "SEOJOBS_TECH_STACK_CONCURRENCY": "Pages one lookup fetches at once.",
    "SEOJOBS_TECH_STACK_PATTERN_TIMEOUT": "Seconds one fingerprint search may take; a pattern "
    "that times out is skipped, and not tried again by that worker.",
    "SEOJOBS_TECH_STACK_PAGE_BUDGET": "Seconds of matching per page.",
    "SEOJOBS_TECH_STACK_MAX_CHARS": "HTML characters (and of inline scripts) searched per page: "
    "a longer page's start and end.",
    "SEOJOBS_WEB_VITALS_CONCURRENCY": "Lighthouse runs one worker holds at once.",
    "SEOJOBS_WEB_VITALS_RUN_TIMEOUT": "Seconds before a run's processes are killed.",
    "SEOJOBS_WEB_VITALS_MAX_WAIT_FOR_LOAD": "Lighthouse's own wait for a page's load, seconds.",
    "SEOJOBS_WEB_VITALS_LIGHTHOUSE_PATH": "The Lighthouse CLI.",
    "SEOJOBS_WEB_VITALS_THROTTLING_METHOD": "`simulate` (Lighthouse's default), `devtools` or "
    "`provided` (none).",
    "SEOJOBS_WEB_VITALS_RESOLVER_RULES": "Chromium's `--host-resolver-rules` outright, instead "
    "of the rules derived from the checked address.",
    "SEOJOBS_WEB_VITALS_REPORT_DIR": "Keep every run's raw Lighthouse JSON there.",
    "SEOJOBS_WEB_VITALS_WARM": "Keep Node and Chromium running between a job's runs "
    "(Lighthouse's Node API); `false`: the CLI once per run.",
    "SEOJOBS_WEB_VITALS_RECYCLE_AFTER": "A warm Chromium is relaunched after that many runs.",
    "SEOJOBS_WEB_VITALS_NODE_PATH": "The Node.js of the warm processes.",
}

INTRO = """\
# Settings

<!-- Generated by scripts/settings_doc.py from the settings models: change a setting there,
then run `.venv/bin/python scripts/settings_doc.py > docs/settings.md`. -->

The server reads its settings from environment variables with the `SEOJOBS_` prefix when a
process starts (`seojobs serve`, `seojobs worker`, `seojobs migrate`, …); every process of a
deployment needs the same ones. Lists are comma separated unless the default is JSON; maps
and JSON lists are JSON. This page is generated from the settings models themselves.
"""

CLIENT = """\
## Client

The SDK and CLI read `SEOJOBS_URL` (default `http://127.0.0.1:8000`), `SEOJOBS_API_KEY` and
`SEOJOBS_STATE` (the state file; default `~/.local/state/seojobs/state.db` on Linux), or the
`--url`, `--api-key` and `--state` options ([SDK and CLI](client.md)).

## Proxies

Calls to provider APIs (and Google's token endpoint) honour the standard `HTTP_PROXY`,
`HTTPS_PROXY` and `NO_PROXY` variables (lower case too; an `http://` proxy, with
`user:password@` or `~/.netrc` credentials if it needs them; `ALL_PROXY` is not read). Page
fetches never use a proxy ([Operating](operating.md#deployment-notes)).
"""


def env_names(field: FieldInfo, name: str, prefix: str) -> list[str]:
    alias = field.validation_alias
    if isinstance(alias, AliasChoices):
        return [str(choice) for choice in alias.choices]
    if isinstance(alias, str):
        return [alias]
    return [f"{prefix}{name}".upper()]


class Places:
    """Where defaults come from that depend on the process: its working directory, the
    checkout, the programs on PATH."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = str(cwd)

    def show(self, value: Any) -> str:
        if value is None:
            return "none"
        if isinstance(value, bool):
            return f"`{str(value).lower()}`"
        if isinstance(value, list | dict):
            return f"`{json.dumps(value)}`" if value else "none"
        text = str(value)
        text = text.replace(self.cwd, "$PWD").replace(str(ROOT), "<checkout>")
        return f"`{text}`"


# Defaults found on this machine when the process starts, not written in the model.
MACHINE_DEFAULTS = {"SEOJOBS_WEB_VITALS_NODE_PATH": "`node` on `PATH`"}


def default_of(field: FieldInfo) -> Any:
    if field.default_factory is not None:
        return field.default_factory()  # type: ignore[call-arg]
    return None if field.default is PydanticUndefined else field.default


def listed(name: str, field: FieldInfo) -> bool:
    """Is this field a variable of its own? Not when it is filled in from other settings
    (``exclude``), nor ``quota_limits``, whose variables (one per quota) have their own table."""
    return field.exclude is not True and name != "quota_limits"


def rows(model: type[BaseSettings], places: Places, quotas: dict[str, str]) -> Iterator[str]:
    prefix = str(model.model_config.get("env_prefix", ""))
    for name, field in model.model_fields.items():
        if not listed(name, field):
            continue
        names = env_names(field, name, prefix)
        meaning = field.description or next(
            (NOTES[n] for n in names if n in NOTES),
            next((text for env, text in quotas.items() if env in names), ""),
        )
        shown = " or ".join(f"`{n}`" for n in names)
        cell = meaning.replace("|", "\\|").replace("\n", " ")
        default = next(
            (MACHINE_DEFAULTS[n] for n in names if n in MACHINE_DEFAULTS),
            None,
        ) or places.show(default_of(field))
        yield f"| {shown} | {default} | {cell} |"


def quota_limit(quota: Any, settings: Settings) -> int:
    """The deployment's default limit of a quota (``Quota.limit`` where the quota has one)."""
    limit = getattr(quota, "limit", None)
    if callable(limit):
        return int(limit(settings))
    default = quota.default
    return int(default(settings) if callable(default) else default)


def quota_env(quota: Any) -> str:
    """The variable that sets a quota's limit: ``Quota.env``, or the one its description
    names (``… (SEOJOBS_QUOTA_SUBMIT_DAILY).``)."""
    env = getattr(quota, "env", None)
    if isinstance(env, str):
        return env
    named = quota.description.rpartition("(")[2].rstrip(").")
    return named if named.startswith("SEOJOBS_") else ""


def quota_rows(registry: Registry) -> Iterator[str]:
    settings = Settings.model_construct()  # defaults only: no environment is read
    for quota in sorted(registry.quotas().values(), key=lambda q: q.name):
        kinds = [k.name for k in registry.kinds() if quota in k.quotas]
        owners = ", ".join(f"`{k}`" for k in kinds)
        what = quota.description.partition(" (SEOJOBS_")[0].rstrip(".") + "."
        env = quota_env(quota)
        yield (
            f"| `{quota.name}` | {owners} | {quota.period} | {quota_limit(quota, settings):,} "
            f"| {f'`{env}`' if env else 'none'} | {what} |"
        )


def quota_envs(registry: Registry) -> dict[str, str]:
    """Meanings for the central settings that set a quota's limit, by variable."""
    found = {}
    for quota in registry.quotas().values():
        what = quota.description.partition(" (SEOJOBS_")[0].rstrip(".")
        found[quota_env(quota)] = f"The `{quota.name}` quota: {what}."
    return found


def render() -> str:
    registry = load_registry(Settings.model_construct())
    envs = quota_envs(registry)
    header = "| variable | default | meaning |\n|---|---|---|"
    with tempfile.TemporaryDirectory() as where:
        here = Path.cwd()
        os.chdir(where)
        try:
            places = Places(Path(where).resolve())
            central = "\n".join(rows(Settings, places, envs))
            kinds = []
            for kind in registry.kinds():
                if kind.settings is None:
                    continue
                prefix = kind.settings.model_config.get("env_prefix", "")
                table = "\n".join(rows(kind.settings, places, envs))
                kinds.append(f"### `{kind.name}` (`{prefix}…`)\n\n{header}\n{table}\n")
        finally:
            os.chdir(here)
    quota_header = (
        "| quota | charged by | resets each | default limit | variable | what one unit is |\n"
        "|---|---|---|---|---|---|"
    )
    return "\n".join(
        [
            INTRO,
            "## Server\n",
            "`seojobs.settings.Settings`: every process reads these.\n",
            header,
            central,
            "",
            "## Job types' own settings\n",
            "Each job type's own model, with its own prefix ([Adding a kind]"
            "(adding-a-kind.md#its-settings)); workers build it once and hand it to jobs.\n",
            *kinds,
            "## Quotas\n",
            "What each job type charges when a job is created ([Job types](kinds/index.md)). "
            "A user's own limits override these (`services.quotas.set_limits`); `GET /v1/usage` tells "
            "what is left. A day is a UTC day, a month a calendar month.\n",
            quota_header,
            *quota_rows(registry),
            "",
            CLIENT,
        ]
    )


def main(argv: list[str]) -> int:
    page = render()
    if "--check" in argv:
        if PAGE.read_text(encoding="utf-8") != page:
            print(f"{PAGE} differs from the settings models: regenerate it", file=sys.stderr)
            return 1
        return 0
    sys.stdout.write(page)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
