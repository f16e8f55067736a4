"""``seojobs fingerprints update``: install a fingerprint database for this deployment.

Sources (``--from``), each read into one merged document and checked before anything is
written:

- a directory: webappanalyzer's layout, ``technologies/*.json`` beside ``categories.json``
  (or both under ``src/``, as in a clone of the repository);
- a JSON file: one merged database, ``{"technologies": {...}, "categories": {...}}`` (the
  file this command installs is one too);
- an archive of the repository (``.tar.gz`` or ``.zip``), as a file or an http(s) URL;
- an http(s) URL of a merged JSON file or of an archive (the default: the repository's).

The installed file replaces the old one atomically (written beside it, then renamed), so a
worker reads either the old database or the new one, never half of one.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
import tarfile
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

from seojobs import outside
from seojobs.fetch import FetchError, HttpClient
from seojobs.kinds.tech_stack.database import (
    NOT_EVALUATED,
    Fingerprints,
    InvalidDatabase,
    parse,
    technologies_of,
)

DEFAULT_SOURCE = "https://github.com/enthec/webappanalyzer/archive/refs/heads/main.tar.gz"
MAX_DOWNLOAD = 200_000_000
MAX_MEMBER = 50_000_000  # one file inside an archive, uncompressed
MAX_MEMBERS = 500
_TECH_MEMBER = re.compile(r"(?:^|/)technologies/[^/]+\.json$")
_CATEGORIES_MEMBER = re.compile(r"(?:^|/)categories\.json$")


@dataclass(frozen=True)
class Installed:
    path: str
    source: str
    database: Fingerprints

    def summary(self) -> list[str]:
        db = self.database
        bad = db.bad_patterns()
        lines = [
            f"installed {len(db.technologies)} technologies in {len(db.categories)} "
            f"categories ({db.pattern_count} patterns) from {self.source}",
            f"at {self.path}",
            f"not evaluated (need a browser or more requests): {', '.join(NOT_EVALUATED)}",
        ]
        if db.problems or bad:
            lines.append(f"skipped {len(db.problems)} malformed entries, {len(bad)} patterns:")
            lines += [f"  {p}" for p in (db.problems + bad)[:20]]
        return lines


def _merge(techs: Iterator[tuple[str, bytes]], categories: bytes | None) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for name, raw in techs:
        part = _json(raw, name)
        if not isinstance(part, dict):
            raise InvalidDatabase(f"{name}: expected an object of name -> fingerprint")
        merged.update(part)
    if not merged:
        raise InvalidDatabase("no technologies/*.json found")
    if categories is None:
        raise InvalidDatabase("no categories.json found beside technologies/")
    return {"technologies": merged, "categories": _json(categories, "categories.json")}


def _json(raw: bytes, name: str) -> Any:
    try:
        return outside.loads(raw)
    except ValueError as exc:
        raise InvalidDatabase(f"{name} is not JSON: {exc}") from None


def _from_directory(root: Path) -> dict[str, Any]:
    for base in (root, root / "src"):
        techs = sorted((base / "technologies").glob("*.json"))
        if techs:
            categories = base / "categories.json"
            return _merge(
                ((p.name, p.read_bytes()) for p in techs),
                categories.read_bytes() if categories.is_file() else None,
            )
    raise InvalidDatabase(f"{root} holds no technologies/*.json (nor src/technologies/*.json)")


def _pick(members: list[tuple[str, bytes]]) -> dict[str, Any]:
    techs = [(n, raw) for n, raw in members if _TECH_MEMBER.search(n)]
    # The categories.json nearest the technologies (the repository's src/, not a test's).
    cats = sorted((n for n, _raw in members if _CATEGORIES_MEMBER.search(n)), key=len)
    found = dict(members)
    return _merge(iter(sorted(techs)), found[cats[0]] if cats else None)


def _archive_members(data: bytes) -> list[tuple[str, bytes]]:
    wanted = (_TECH_MEMBER, _CATEGORIES_MEMBER)
    members: list[tuple[str, bytes]] = []
    if data[:2] == b"\x1f\x8b" or tarfile.is_tarfile(io.BytesIO(data)):
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            for info in tar:
                if info.isfile() and any(w.search(info.name) for w in wanted):
                    members.append((info.name, _capped(tar.extractfile(info), info.size)))
                if len(members) > MAX_MEMBERS:
                    break
        return members
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        for zinfo in archive.infolist():
            if not zinfo.is_dir() and any(w.search(zinfo.filename) for w in wanted):
                with archive.open(zinfo) as handle:
                    members.append((zinfo.filename, _capped(handle, zinfo.file_size)))
            if len(members) > MAX_MEMBERS:
                break
    return members


def _capped(handle: Any, declared: int) -> bytes:
    """A member's bytes, refused past MAX_MEMBER whatever its header declares."""
    if handle is None or declared > MAX_MEMBER:
        raise InvalidDatabase(f"an archive member is larger than {MAX_MEMBER} bytes")
    data: bytes = handle.read(MAX_MEMBER + 1)
    if len(data) > MAX_MEMBER:
        raise InvalidDatabase(f"an archive member is larger than {MAX_MEMBER} bytes")
    return data


def _from_bytes(data: bytes, name: str) -> dict[str, Any]:
    if data[:2] == b"\x1f\x8b" or data[:4] == b"PK\x03\x04":
        try:
            return _pick(_archive_members(data))
        except (tarfile.TarError, zipfile.BadZipFile, OSError, EOFError) as exc:
            raise InvalidDatabase(f"{name} is not a readable archive: {exc}") from None
    document = _json(data, name)
    technologies_of(document)  # a clear message for a JSON file that is something else
    return dict(document)


DOWNLOAD_TIMEOUT = 120.0


async def download(url: str) -> bytes:
    """The operator's own download: environment proxies honoured, no SSRF guard (the URL is
    the deployment's, not a user's), redirects followed."""
    async with HttpClient(
        headers={"User-Agent": "seojobs-fingerprints"},
        connect_timeout=30.0,
        read_timeout=DOWNLOAD_TIMEOUT,
        deadline=DOWNLOAD_TIMEOUT * 5,
        max_bytes=MAX_DOWNLOAD,
        env_proxies=True,
    ) as http:
        for _hop in range(10):
            response = await http.get(url)
            location = response.headers.get("location")
            if response.status in (301, 302, 303, 307, 308) and location:
                url = urljoin(url, location)
                continue
            if response.status != 200:
                raise InvalidDatabase(f"{url} answered HTTP {response.status}")
            return response.body
    raise InvalidDatabase(f"{url}: too many redirects")


def read_source(source: str) -> dict[str, Any]:
    """The merged document a source holds (see the module's docstring)."""
    if source.startswith(("http://", "https://")):
        try:
            data = asyncio.run(download(source))
        except FetchError as exc:
            raise InvalidDatabase(f"could not download {source}: {exc}") from None
        return _from_bytes(data, source)
    path = Path(source)
    if path.is_dir():
        return _from_directory(path)
    if path.is_file():
        return _from_bytes(path.read_bytes(), source)
    raise InvalidDatabase(f"{source}: no such file or directory")


def write_atomically(path: Path, document: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(outside.storable(document), out, ensure_ascii=False, separators=(",", ":"))
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def update(source: str, path: str) -> Installed:
    """Read, check and install the database at ``source``; raises InvalidDatabase (nothing
    written) when it is not one."""
    document = read_source(source)
    checked = parse(document)  # refuses garbage before the old file is touched
    installed = {
        "format": "webappanalyzer",
        "source": source,
        "installed_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "technologies": technologies_of(document),
        "categories": document["categories"],
    }
    write_atomically(Path(path), installed)
    return Installed(path, source, checked)
