"""``seojobs providers``: the provider table, and each configured credential checked against
the local fakes of the providers' wire formats (``--offline`` contacts none)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi import FastAPI
from typer.testing import CliRunner

from seojobs.cli import app
from seojobs.providers.url_inspection import SCOPE
from tests.fakes.google import TOKEN_PATH, FakeTokenEndpoint, ServiceAccountKey
from tests.fakes.serp import FakeDataForSeo, FakeSerpApi, FakeSerper
from tests.fakes.server import serve


@dataclass
class Fakes:
    serper: FakeSerper
    serpapi: FakeSerpApi
    dataforseo: FakeDataForSeo
    tokens: FakeTokenEndpoint
    key: ServiceAccountKey
    token_uri: str

    def env(self, tmp_path: Path, **overrides: str) -> dict[str, str]:
        key_file = self.key.write(tmp_path / "key.json", self.token_uri)
        return {
            "SEOJOBS_DATABASE_URL": f"sqlite:///{tmp_path / 'unused.db'}",
            "SEOJOBS_INDEXNOW_KEY": "0123456789abcdef",
            "SEOJOBS_SERPER_KEY": "serper-key",
            "SEOJOBS_SERPER_BASE_URL": self.serper.base_url,
            "SEOJOBS_SERPAPI_KEY": "serpapi-key",
            "SEOJOBS_SERPAPI_BASE_URL": self.serpapi.base_url,
            "SEOJOBS_DATAFORSEO_LOGIN": "dfs-login",
            "SEOJOBS_DATAFORSEO_PASSWORD": "dfs-password",
            "SEOJOBS_DATAFORSEO_BASE_URL": self.dataforseo.base_url,
            "SEOJOBS_GOOGLE_CREDENTIALS_FILE": str(key_file),
            # Google's submission API has another token scope: checks alone use the key here.
            "SEOJOBS_SUBMIT_PROVIDERS": json.dumps({"bing": ["indexnow"]}),
            "SEOJOBS_PROVIDER_RETRIES": "0",
            **overrides,
        }

    def requests(self) -> int:
        return sum(len(f.requests) for f in (self.serper, self.serpapi, self.dataforseo)) + len(
            self.tokens.grants
        )


@pytest.fixture
def fakes() -> Iterator[Fakes]:
    serper, serpapi, dataforseo = FakeSerper(), FakeSerpApi(), FakeDataForSeo()
    tokens = FakeTokenEndpoint(SCOPE)
    key = ServiceAccountKey()
    tokens.trust(key)
    google = FastAPI()
    tokens.add_routes(google)
    with (
        serve(serper.app) as serper.base_url,
        serve(serpapi.app) as serpapi.base_url,
        serve(dataforseo.app) as dataforseo.base_url,
        serve(google) as google_base,
    ):
        yield Fakes(serper, serpapi, dataforseo, tokens, key, google_base + TOKEN_PATH)


def run(env: dict[str, str], *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["providers", *args], env=env)
    return result.exit_code, result.output


def test_offline_prints_the_table_and_contacts_no_provider(fakes: Fakes, tmp_path: Path) -> None:
    unset = {"SEOJOBS_SERPER_KEY": "", "SEOJOBS_SERPAPI_KEY": "", "SEOJOBS_DATAFORSEO_LOGIN": ""}
    code, out = run(fakes.env(tmp_path, **unset), "--offline")
    assert code == 0, out
    lines = out.splitlines()
    assert "submission    bing    indexnow" in lines[0]
    google = next(line for line in lines if line.startswith("index checks  google"))
    assert google.split()[3] == "url_inspection"
    assert "serper (not configured: SEOJOBS_SERPER_KEY)" in google
    refused = next(line for line in lines if line.startswith("index checks  bing"))
    assert "none (refused)" in refused and "SEOJOBS_DATAFORSEO_LOGIN and" in refused
    assert "credential" not in out and fakes.requests() == 0


def test_each_configured_credential_is_checked(fakes: Fakes, tmp_path: Path) -> None:
    code, out = run(fakes.env(tmp_path))
    assert code == 0, out
    checked = {
        line.split(":")[0].split()[1]: line.split(":")[1].strip()
        for line in out.splitlines()
        if line.startswith("credential ")
    }
    assert checked == dict.fromkeys(
        ["indexnow", "url_inspection", "serper", "serpapi", "dataforseo"], "ok"
    )
    assert [g.status for g in fakes.tokens.grants] == [200]
    assert len(fakes.serper.requests) == len(fakes.serpapi.requests) == 1
    assert len(fakes.dataforseo.requests) == 1


def test_refused_credentials_fail_the_command(fakes: Fakes, tmp_path: Path) -> None:
    fakes.key = ServiceAccountKey()  # a key the token endpoint does not trust
    env = fakes.env(
        tmp_path,
        SEOJOBS_INDEXNOW_KEY="short",
        SEOJOBS_SERPER_KEY="wrong",
        SEOJOBS_SERPAPI_KEY="wrong",
        SEOJOBS_DATAFORSEO_PASSWORD="wrong",
    )
    code, out = run(env)
    assert code == 1, out
    failed = [line for line in out.splitlines() if line.startswith("credential ")]
    assert len(failed) == 5 and all(": FAILED: " in line for line in failed), out
    assert "SEOJOBS_INDEXNOW_KEY must be" in out
