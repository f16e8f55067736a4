"""docs/kinds/site_audit_checks.md lists every check of the catalogue, as
scripts/audit_checks_doc.py writes it: a check added or changed without regenerating the page
fails here, and so does a check without a category or a way to fix it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from seojobs.kinds.site_audit.checks import CATALOGUE, catalogue

ROOT = Path(__file__).resolve().parents[2]


def test_the_checks_page_is_what_the_catalogue_says() -> None:
    spec = importlib.util.spec_from_file_location(
        "audit_checks_doc", ROOT / "scripts/audit_checks_doc.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    page = (ROOT / "docs/kinds/site_audit_checks.md").read_text(encoding="utf-8")
    assert page == module.render(), (
        "docs/kinds/site_audit_checks.md differs from the catalogue: run `.venv/bin/python "
        "scripts/audit_checks_doc.py > docs/kinds/site_audit_checks.md`"
    )
    for check in CATALOGUE:
        assert f"| `{check.code}` |" in page
    assert all(c["category"] and c["how_to_fix"] for c in catalogue())
