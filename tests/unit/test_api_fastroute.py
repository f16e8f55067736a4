"""PathIdRoute only takes the endpoints its handler can run: one path id, nothing else; a
plain id is read without pydantic, to the same value or the same 422."""

from __future__ import annotations

import asyncio
import json
from typing import Annotated

import pytest
from fastapi import APIRouter, Header, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import TypeAdapter, ValidationError

from seojobs.api.fastroute import PathIdRoute, plain_bounds
from seojobs.api.ids import MAX_ID, digits

IdDigits = digits(1, MAX_ID)

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


# -- the plain-id shortcut: a plain decimal id is read without pydantic ------------------------

Bounded = Annotated[int, Path(ge=1, le=MAX_ID), IdDigits]
Odd = Annotated[int, Path(ge=1, multiple_of=2)]  # a check the shortcut does not know


async def echo(request: Request, job_id: Bounded) -> Response:
    return JSONResponse({"job_id": job_id})


async def odd(request: Request, job_id: Odd) -> Response:
    return JSONResponse({"job_id": job_id})


def _answer(endpoint: object, raw: str) -> tuple[int, object]:
    router = APIRouter()
    router.add_api_route("/j/{job_id}", endpoint, methods=["GET"], route_class_override=PathIdRoute)
    route = router.routes[0]
    assert isinstance(route, PathIdRoute)
    handler = route.get_route_handler()
    scope = {"type": "http", "method": "GET", "path": f"/j/{raw}", "query_string": b""}
    scope["headers"] = []
    scope["path_params"] = {"job_id": raw}
    try:
        response = asyncio.run(handler(Request(scope)))
    except RequestValidationError as exc:
        return 422, exc.errors()
    return response.status_code, json.loads(bytes(response.body))


PLAIN = ["1", "7", "42", "999999999999999999", str(MAX_ID), "1000000000000000000"]
NOT_PLAIN = ["0", "01", "007", "-1", "+1", "1.0", " 1", "1 ", "١٢", "²", "", str(MAX_ID + 1)]


@pytest.mark.parametrize("raw", PLAIN + NOT_PLAIN + ["9" * 30, "1e3", "0x10"])
def test_the_shortcut_answers_as_pydantic_does(raw: str) -> None:
    adapter: TypeAdapter[int] = TypeAdapter(Bounded)
    try:
        expected: tuple[int, object] = (200, {"job_id": adapter.validate_python(raw)})
    except ValidationError:
        expected = (422, None)
    status, body = _answer(echo, raw)
    assert (status, body if status == 200 else None) == expected
    if status == 422:
        assert body[0]["loc"][:2] == ("path", "job_id")  # type: ignore[index]


def test_the_shortcut_takes_only_the_checks_it_knows() -> None:
    router = APIRouter()
    router.add_api_route("/j/{job_id}", odd, methods=["GET"], route_class_override=PathIdRoute)
    route = router.routes[0]
    assert isinstance(route, PathIdRoute)
    assert plain_bounds(route.dependant.path_params[0].field_info) is None
    assert _answer(odd, "4") == (200, {"job_id": 4})
    assert _answer(odd, "3")[0] == 422  # multiple_of: only pydantic knows it
    router = APIRouter()
    router.add_api_route("/j/{job_id}", echo, methods=["GET"], route_class_override=PathIdRoute)
    route = router.routes[0]
    assert isinstance(route, PathIdRoute)
    assert plain_bounds(route.dependant.path_params[0].field_info) == (1, 10**18 - 1)
