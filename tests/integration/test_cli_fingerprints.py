"""`seojobs fingerprints update`: every source form (the webappanalyzer directory layout, a
merged JSON file, a .tar.gz or .zip of the repository, a URL served on loopback), the
installed file loads as the database, and garbage is refused with the old file kept."""

from __future__ import annotations

import io
import json
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route
from typer.testing import CliRunner

from seojobs.cli import app
from seojobs.kinds.tech_stack import database
from tests.conftest import TEST_FINGERPRINTS
from tests.fakes.server import serve

FIXTURE: dict[str, Any] = json.loads(Path(TEST_FINGERPRINTS).read_text())
TECHS = len(FIXTURE["technologies"])


def update(target: Path, *args: str) -> tuple[int, str, str]:
    env = {"SEOJOBS_FINGERPRINTS_PATH": str(target)}
    result = CliRunner().invoke(app, ["fingerprints", "update", *args], env=env)
    return result.exit_code, result.stdout, result.stderr


def repository_files() -> dict[str, bytes]:
    """The fixture split as the repository lays it out: one file per first letter."""
    files: dict[str, dict[str, Any]] = {}
    for name, entry in FIXTURE["technologies"].items():
        files.setdefault(f"src/technologies/{name[0].lower()}.json", {})[name] = entry
    found = {path: json.dumps(part).encode() for path, part in files.items()}
    found["src/categories.json"] = json.dumps(FIXTURE["categories"]).encode()
    found["src/groups.json"] = b"{}"
    found["README.md"] = b"not read"
    return found


def tarball() -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for path, data in repository_files().items():
            info = tarfile.TarInfo(f"webappanalyzer-main/{path}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def installed(target: Path) -> database.Fingerprints:
    found = database.load(str(target))
    assert json.loads(target.read_text())["format"] == "webappanalyzer"
    return found


def test_a_directory_in_the_repositorys_layout(tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    for path, data in repository_files().items():
        (clone / path).parent.mkdir(parents=True, exist_ok=True)
        (clone / path).write_bytes(data)
    target = tmp_path / "data" / "fp.json"
    code, out, err = update(target, "--from", str(clone))
    assert code == 0, err
    assert f"installed {TECHS} technologies in 8 categories" in out
    assert "BrokenPattern.html: does not compile" in out  # reported, not fatal
    assert set(installed(target).technologies) == set(FIXTURE["technologies"])


def test_a_merged_file_and_a_zip(tmp_path: Path) -> None:
    target = tmp_path / "fp.json"
    code, _out, err = update(target, "--from", TEST_FINGERPRINTS)
    assert code == 0, err
    assert len(installed(target).technologies) == TECHS
    archive = tmp_path / "repo.zip"
    with zipfile.ZipFile(archive, "w") as out:
        for path, data in repository_files().items():
            out.writestr(f"webappanalyzer-main/{path}", data)
    again = tmp_path / "fp2.json"
    code, _out, err = update(again, "--from", str(archive))
    assert code == 0, err
    assert installed(again).categories == installed(target).categories


@pytest.fixture
def archive_server() -> Iterator[str]:
    async def archive(_request: Request) -> Response:
        return Response(tarball(), media_type="application/gzip")

    async def moved(_request: Request) -> Response:
        return RedirectResponse("/archive.tar.gz", status_code=302)

    async def html(_request: Request) -> Response:
        return Response("<html>not a database</html>", media_type="text/html")

    routes = [Route("/archive.tar.gz", archive), Route("/moved", moved), Route("/page", html)]
    with serve(Starlette(routes=routes)) as base:
        yield base


def test_a_url_of_an_archive_through_a_redirect(tmp_path: Path, archive_server: str) -> None:
    target = tmp_path / "fp.json"
    code, out, err = update(target, "--from", f"{archive_server}/moved")
    assert code == 0, err
    assert f"from {archive_server}/moved" in out
    assert len(installed(target).technologies) == TECHS


@pytest.mark.parametrize(
    ("source", "says"),
    [
        ("page", "not JSON"),
        ("missing", "answered HTTP 404"),
        ("file:garbage", "not JSON"),
        ("file:other-json", "no `technologies` object"),
        ("file:nowhere", "no such file or directory"),
        ("file:empty-dir", "holds no technologies/*.json"),
    ],
)
def test_garbage_is_refused_and_the_old_database_kept(
    tmp_path: Path, archive_server: str, source: str, says: str
) -> None:
    target = tmp_path / "fp.json"
    assert update(target, "--from", TEST_FINGERPRINTS)[0] == 0
    kept = target.read_bytes()
    (tmp_path / "garbage").write_bytes(b"\x00\x01 not json")
    (tmp_path / "other-json").write_text('{"name": "a package.json"}')
    (tmp_path / "empty-dir").mkdir()
    kind, _, name = source.partition(":")
    given = str(tmp_path / name) if kind == "file" else f"{archive_server}/{source}"
    code, out, err = update(target, "--from", given)
    assert code == 1 and out == ""
    assert "not installed (the old database, if any, is kept)" in err and says in err, err
    assert target.read_bytes() == kept
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".fp.json")] == []
