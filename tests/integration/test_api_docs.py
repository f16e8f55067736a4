"""``/docs`` and ``/redoc`` work offline: every script, style and icon they load is served by
seojobs itself (FastAPI's own pages fetch them from a CDN and are blank without internet)."""

from __future__ import annotations

import re

import httpx
import pytest

from tests.api_helpers import Api, assert_problem

pytestmark = pytest.mark.stores("sqlite")  # static pages: nothing of the store's

ASSET = re.compile(r"""(?:src|href)\s*=\s*["']([^"']+)["']|url:\s*['"]([^'"]+)['"]""")


def _references(page: str) -> list[str]:
    return [a or b for a, b in ASSET.findall(page)]


def test_docs_pages_load_only_assets_served_by_seojobs(idle: Api) -> None:
    with httpx.Client(base_url=idle.base, timeout=60) as client:  # public pages: no key
        for path, wanted in (("/docs", "swagger-ui-bundle.js"), ("/redoc", "redoc.standalone.js")):
            page = client.get(path)
            assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
            refs = _references(page.text)
            assert any(ref.endswith(wanted) for ref in refs), refs
            assert "fonts.googleapis" not in page.text
            for ref in refs:
                assert ref.startswith("/"), f"{path} loads {ref} from elsewhere"
                answer = client.get(ref)
                assert answer.status_code == 200, ref
                if ref.endswith(".js"):
                    assert answer.headers["content-type"].startswith("text/javascript")
                    assert len(answer.content) > 100_000  # the real bundle, not a placeholder
        assert client.get("/docs/oauth2-redirect").status_code == 200
        assert_problem(client.get("/docs/assets/..%2Fcore.py"), 404)
        assert_problem(client.get("/docs/assets/nothing.js"), 404)
        # The pages stay out of the API description.
        paths = client.get("/openapi.json").json()["paths"]
        assert not [p for p in paths if p.startswith(("/docs", "/redoc"))]
