"""PathIdRoute only takes the endpoints its handler can run: one path id, nothing else."""

from __future__ import annotations

from typing import Annotated

import pytest
from fastapi import APIRouter, Header, Path, Query, Request
from fastapi.responses import JSONResponse, Response

from seojobs.api.fastroute import PathIdRoute

Id = Annotated[int, Path(ge=1)]


async def fine(request: Request, job_id: Id) -> Response:
    return JSONResponse({"job_id": job_id})


async def with_query(request: Request, job_id: Id, q: Annotated[str, Query()]) -> Response:
    return JSONResponse({})


async def with_header(request: Request, job_id: Id, x: Annotated[str, Header()]) -> Response:
    return JSONResponse({})


def not_async(request: Request, job_id: Id) -> Response:
    return JSONResponse({})


def test_an_endpoint_with_one_path_id_is_taken() -> None:
    router = APIRouter()
    router.add_api_route("/j/{job_id}", fine, methods=["GET"], route_class_override=PathIdRoute)
    assert isinstance(router.routes[0], PathIdRoute)


@pytest.mark.parametrize("endpoint", [with_query, with_header, not_async])
def test_anything_more_is_refused_at_startup(endpoint: object) -> None:
    router = APIRouter()
    with pytest.raises(TypeError, match="PathIdRoute"):
        router.add_api_route(
            "/j/{job_id}", endpoint, methods=["GET"], route_class_override=PathIdRoute
        )
