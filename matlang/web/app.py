"""The playground's Starlette application: the page at ``/`` and the JSON API.

``GET /``                  the page (static HTML and JavaScript)
``GET /api/graphs``        built-in graph names, the defaults and the limits
``POST /api/sentence``     {"sentence", "builtin": [names], "graphs": "one per line",
                           "witness": true} → parsed, classify, plan, values, drawing (SVG)
``POST /api/pattern``      {"pattern", "rooted": false} → the pattern's JSON (as ``matlang
                           pattern --json``) and the witness or certificate pair drawn
``GET /api/health``        {"ok": true, "recycled": workers replaced after a time limit}

Errors are JSON ``{"ok": false, "error": {kind, message, at, hint, text}}`` with the command
line's messages (``text`` has the caret and the "did you mean"); 400 bad input, 413 past a
limit, 422 past the time limit, 429 every worker busy.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from importlib import resources
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from matlang.web.service import LIMITS, Workers, _error


def _page() -> str:
    return resources.files("matlang.web").joinpath("static/index.html").read_text("utf-8")


async def _body(request: Request) -> Any:
    """The request's JSON, read up to LIMITS["body_bytes"] (a _TooLarge past it)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > LIMITS["body_bytes"]:
        raise _TooLarge(int(declared))
    data = bytearray()
    async for chunk in request.stream():
        data += chunk
        if len(data) > LIMITS["body_bytes"]:
            raise _TooLarge(len(data))
    try:
        return json.loads(data.decode("utf-8") or "null")
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise _BadJSON(str(e)) from None


class _TooLarge(Exception):
    pass


class _BadJSON(Exception):
    pass


def create_app(*, workers: int = 2, timeout: float = 5.0) -> Starlette:
    """The application, with ``workers`` worker processes and a ``timeout`` per request."""
    pool = Workers(size=workers, timeout=timeout)
    page = _page()

    async def index(request: Request) -> Response:
        return HTMLResponse(page, headers={"Cache-Control": "no-store"})

    async def api(request: Request) -> Response:
        kind = request.path_params["kind"]
        if kind not in ("sentence", "pattern"):
            return JSONResponse(_error("not found", f"no API {kind!r}"), status_code=404)
        try:
            payload = await _body(request)
        except _TooLarge as e:
            return JSONResponse(
                _error(
                    "too large",
                    f"the request body has {e} bytes; the limit is {LIMITS['body_bytes']}",
                ),
                status_code=413,
            )
        except _BadJSON as e:
            return JSONResponse(_error("bad request", f"the body is not JSON: {e}"), 400)
        out = await pool.run(kind, payload)
        return JSONResponse(out.body, status_code=out.status)

    async def graphs(request: Request) -> Response:
        out = await pool.run("graphs", None)
        return JSONResponse(out.body, status_code=out.status)

    async def health(request: Request) -> Response:
        return JSONResponse({"ok": True, "recycled": pool.recycled, "timeout": pool.timeout})

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await pool.start()
        try:
            yield
        finally:
            await pool.stop()

    app = Starlette(
        routes=[
            Route("/", index),
            Route("/api/graphs", graphs),
            Route("/api/health", health),
            Route("/api/{kind}", api, methods=["POST"]),
        ],
        lifespan=lifespan,
    )
    app.state.workers = pool
    return app


__all__ = ["create_app"]
