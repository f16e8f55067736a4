"""Sign-in, sign-out, the overview, live progress and the static files."""

from __future__ import annotations

from typing import Annotated, Any, Final

from fastapi import APIRouter, Depends, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, RedirectResponse, Response

from seojobs.api.dashboard.auth import (
    COOKIE,
    LOGIN_COOKIE,
    DashboardError,
    Viewer,
    check_csrf,
    cookie_value,
    new_login_token,
    one_read,
    read_form,
    secure_cookies,
    services_of,
    viewer,
)
from seojobs.api.dashboard.render import page, static
from seojobs.api.deps import authenticate
from seojobs.api.inputs import CheckedRoute
from seojobs.api.problems import Problem
from seojobs.records import JobRecord

router = APIRouter(route_class=CheckedRoute, include_in_schema=False)
Signed = Annotated[Viewer, Depends(viewer)]
HOME: Final = "/dashboard"
LIVE_LIMIT: Final = 100  # jobs one progress poll may ask about


def _safe_next(target: str | None) -> str:
    """Where to go after signing in: a dashboard path of ours, never another site."""
    if not target or not target.startswith(HOME) or target.startswith(HOME + "//"):
        return HOME
    if any(c in target for c in "\\\r\n"):
        return HOME
    return target


def see_other(target: str) -> RedirectResponse:
    return RedirectResponse(target, status_code=303)


def enabled_field(form: dict[str, str]) -> bool:
    """The ``enabled`` of an on/off form (a schedule's, a webhook's): "true" or "false"."""
    wanted = form.get("enabled", "")
    if wanted not in ("true", "false"):
        raise DashboardError(422, "Invalid input", "enabled: must be true or false")
    return wanted == "true"


@router.get("/", name="root")
async def root() -> RedirectResponse:
    return RedirectResponse(HOME, status_code=307)


@router.get("/dashboard/static/{name}", name="dashboard_static")
async def static_file(name: str) -> Response:
    return static(name)


@router.get("/dashboard/login", name="dashboard_login")
async def login_form(request: Request, next: str | None = None) -> Response:
    return _login_page(request, next, error=None, status_code=200)


def _login_page(
    request: Request, target: str | None, *, error: str | None, status_code: int
) -> Response:
    token = request.cookies.get(LOGIN_COOKIE) or new_login_token()
    response = page(
        request,
        "login.html",
        {"next": _safe_next(target), "error": error},
        csrf=token,
        status_code=status_code,
    )
    response.set_cookie(
        LOGIN_COOKIE,
        token,
        path=HOME,
        httponly=True,
        samesite="lax",
        secure=secure_cookies(request),
    )
    return response


@router.post("/dashboard/login", name="dashboard_login_post")
async def login(request: Request) -> Response:
    form = await read_form(request)
    check_csrf(request.cookies.get(LOGIN_COOKIE, ""), form)
    target = form.get("next")
    key = form.get("api_key", "").strip()
    if not key:
        return _login_page(request, target, error="Enter your API key.", status_code=422)
    try:
        user = await authenticate(request, key)
    except Problem as exc:  # too many failed attempts from this address (429), or 503
        return _login_page(request, target, error=exc.detail, status_code=exc.status)
    if user is None:
        return _login_page(request, target, error="That API key is not valid.", status_code=401)
    services = services_of(request)
    token, _ = await run_in_threadpool(services.sessions.start, user)
    response = see_other(_safe_next(target))
    response.set_cookie(
        COOKIE,
        cookie_value(services, token),
        max_age=int(services.settings.dashboard_session_hours * 3600),
        path="/",
        httponly=True,
        samesite="lax",
        secure=secure_cookies(request),
    )
    response.delete_cookie(LOGIN_COOKIE, path=HOME)
    return response


@router.post("/dashboard/logout", name="dashboard_logout")
async def logout(request: Request, who: Signed) -> Response:
    check_csrf(who.csrf, await read_form(request))
    await run_in_threadpool(services_of(request).sessions.end, who.token)
    response = see_other(f"{HOME}/login")
    response.delete_cookie(COOKIE, path="/")
    return response


@router.get("/dashboard", name="dashboard_overview")
async def overview(request: Request, who: Signed) -> Response:
    services = services_of(request)

    def read() -> dict[str, Any]:
        counts = services.jobs.counts(who.user)
        running = services.jobs.page(who.user, states=["processing"], limit=20, summary=True)
        return {
            "counts": counts,
            "by_state": _totals(counts, 1),
            "by_kind": _totals(counts, 0),
            "running": running,
            "usage": list(services.quotas.usage(who.user).values()),
        }

    return page(request, "overview.html", await one_read(services, read), viewer=who)


def _totals(counts: list[tuple[str, str, int]], at: int) -> dict[str, int]:
    totals: dict[str, int] = {}
    for row in counts:
        key = str(row[at])
        totals[key] = totals.get(key, 0) + row[2]
    return dict(sorted(totals.items()))


def live_state(job: JobRecord) -> dict[str, Any]:
    """What a progress bar shows of a job (the overview, lists and job pages poll this)."""
    return {
        "id": job.id,
        "status": job.state,
        "progress_percent": job.progress_percent,
        "items_total": job.items_total,
        "items_done": job.items_done,
        "items_failed": job.items_failed,
        "final": job.is_final,
    }


@router.get("/dashboard/live", name="dashboard_live")
async def live(
    request: Request,
    who: Signed,
    ids: Annotated[str, Query(max_length=2000, pattern=r"^[0-9]+(,[0-9]+)*$")],
) -> JSONResponse:
    """The progress of the signed-in user's jobs ``ids`` (others' are left out)."""
    wanted = sorted({int(part) for part in ids.split(",")})
    if len(wanted) > LIVE_LIMIT:
        raise DashboardError(422, "Too many jobs", f"ask about at most {LIVE_LIMIT} jobs")
    services = services_of(request)
    found = await run_in_threadpool(
        lambda: services.jobs.page(who.user, ids=wanted, limit=LIVE_LIMIT, summary=True)
    )
    return JSONResponse(
        {"jobs": [live_state(job) for job in found]}, headers={"Cache-Control": "no-store"}
    )
