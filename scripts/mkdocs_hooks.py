"""MkDocs hooks (mkdocs.yml ``hooks:``): a nav entry that names a folder (``bench/``) stands for
every page in it, its ``index.md`` first, each titled by its first heading."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def _title(page: Path) -> str:
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return page.stem


def _folder(docs: Path, folder: str) -> list[Any]:
    pages = sorted((docs / folder).glob("*.md"), key=lambda p: (p.name != "index.md", p.name))
    return [{_title(p): f"{folder}{p.name}"} for p in pages]


def _expand(entries: list[Any], docs: Path) -> list[Any]:
    expanded: list[Any] = []
    for entry in entries:
        if isinstance(entry, dict):
            entry = {
                title: (
                    _folder(docs, value)
                    if isinstance(value, str) and value.endswith("/")
                    else _expand(value, docs)
                    if isinstance(value, list)
                    else value
                )
                for title, value in entry.items()
            }
        expanded.append(entry)
    return expanded


def on_config(config: Any) -> Any:
    if config.nav:
        config.nav = _expand(config.nav, Path(config.docs_dir))
    return config
