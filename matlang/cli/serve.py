"""``matlang serve``: the local playground (``pip install "matlang[web]"``)."""

from __future__ import annotations

import argparse
from typing import Any

from matlang.errors import MatlangError


def register(sub: Any) -> None:
    """Add ``serve`` to ``sub`` (an argparse subparsers object)."""
    p = sub.add_parser(
        "serve",
        help="a local page to type sentences and patterns and see their level, witness and plan",
        description=(
            "Serve the playground: one page where a sentence or a pattern shows its fragment "
            "and WL level with reasons, the witness pair drawn, the plan and cost, and values "
            "on built-in or pasted graphs; a JSON API under /api (GET / lists it). Needs the "
            'web extra: pip install "matlang[web]".'
        ),
    )
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    p.add_argument("--timeout", type=float, default=5.0, help="seconds per request (default 5)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        import uvicorn

        from matlang.web.app import create_app
    except ImportError as e:
        raise MatlangError(
            f'matlang serve needs the web extra ({e.name} is missing): pip install "matlang[web]"'
        ) from None
    if args.workers < 1 or args.timeout <= 0:
        raise MatlangError("--workers must be at least 1 and --timeout positive")
    print(f"matlang playground on http://{args.host}:{args.port}/ (Ctrl-C stops it)")
    uvicorn.run(
        create_app(workers=args.workers, timeout=args.timeout),
        host=args.host,
        port=args.port,
        log_level="warning",
    )
    return 0
