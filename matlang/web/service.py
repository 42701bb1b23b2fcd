"""What the playground computes, as functions of JSON, bounded in size and time.

:func:`sentence` and :func:`pattern` take the request's JSON and return ``(status, JSON)``;
they never read files and refuse input past :data:`LIMITS`. :class:`Workers` runs them in
worker processes, each request under a time limit: a worker that overruns it is killed and
replaced, so no request can hang or crash the server.
"""

from __future__ import annotations

import asyncio
import re
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matlang.errors import MatlangError

#: Bounds on one request (the server's ``--timeout`` sets the time limit).
LIMITS = {
    "body_bytes": 64_000,  # the request body
    "sentence_chars": 2_000,  # a sentence or a pattern
    "graph_text_chars": 20_000,  # the pasted graphs
    "graphs": 16,  # graphs to evaluate on (built-in and pasted)
    "nodes": 200,  # nodes per graph
    "pattern_nodes": 8,  # nodes of a pattern
    "vector_entries": 64,  # entries of a vector value shown
}

#: Built-in graphs the page offers (any of ``matlang.graphs.named_graph_names()`` is accepted).
DEFAULT_GRAPHS = ("cospectral_G", "cospectral_H", "decalin", "bicyclopentyl", "petersen", "K4")


def _error(kind: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"ok": False, "error": {"kind": kind, "message": message, "text": message, **extra}}


def _matlang_error(e: MatlangError) -> dict[str, Any]:
    from matlang.cli.common import error_json

    return {"ok": False, "error": error_json(e)}


def _text(payload: Any, key: str, limit: int, *, required: bool = True) -> str:
    if not isinstance(payload, dict):
        raise _Bad('the request body is a JSON object, e.g. {"sentence": "tr(A^3) / 6"}')
    value = payload.get(key, "" if not required else None)
    if value is None:
        raise _Bad(f"the request needs {key!r}")
    if not isinstance(value, str):
        raise _Bad(f"{key!r} is a string, got {type(value).__name__}")
    if len(value) > limit:
        raise _Bad(f"{key!r} has {len(value)} characters; the limit is {limit}", kind="too large")
    return value


class _Bad(Exception):
    def __init__(self, message: str, kind: str = "bad request") -> None:
        super().__init__(message)
        self.kind = kind


_EDGE = re.compile(r"^\s*\d+\s*-\s*\d+(\s+\d+\s*-\s*\d+)*\s*$")


def read_graph(line: str) -> Any:
    """One pasted graph: a built-in name, graph6, or an edge list ``0-1 1-2 2-0`` (never a
    file)."""
    import numpy as np

    from matlang.graphs import as_graph, from_adjacency

    line = line.strip()
    if _EDGE.match(line):
        pairs = [tuple(int(x) for x in t.split("-")) for t in re.findall(r"\d+\s*-\s*\d+", line)]
        n = max(max(p) for p in pairs) + 1
        if n > LIMITS["nodes"]:
            raise _Bad(
                f"the edge list {line[:40]!r} names node {n - 1}; at most {LIMITS['nodes']} nodes",
                kind="too large",
            )
        a = np.zeros((n, n), dtype=np.int64)
        for u, v in pairs:
            if u == v:
                raise _Bad(f"the edge list {line[:40]!r} has a self-loop {u}-{v}")
            a[u, v] = a[v, u] = 1
        return from_adjacency(a, name=line if len(line) <= 24 else line[:23] + "…")
    g = as_graph(line)
    if g.num_nodes > LIMITS["nodes"]:
        raise _Bad(
            f"{line[:40]!r} has {g.num_nodes} nodes; at most {LIMITS['nodes']}", kind="too large"
        )
    return g


def _graphs(payload: dict[str, Any]) -> list[Any]:
    from matlang.graphs import named

    builtin = payload.get("builtin", [])
    if not isinstance(builtin, list) or not all(isinstance(b, str) for b in builtin):
        raise _Bad("'builtin' is a list of built-in graph names")
    text = _text(payload, "graphs", LIMITS["graph_text_chars"], required=False)
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    if len(builtin) + len(lines) > LIMITS["graphs"]:
        raise _Bad(
            f"{len(builtin) + len(lines)} graphs; the limit is {LIMITS['graphs']}", kind="too large"
        )
    out = []
    for b in builtin:
        g = named(b)
        if g.num_nodes > LIMITS["nodes"]:
            raise _Bad(f"{b} has {g.num_nodes} nodes; at most {LIMITS['nodes']}", kind="too large")
        out.append(g)
    out.extend(read_graph(ln) for ln in lines)
    return out


def _value(v: Any) -> Any:
    import numpy as np

    from matlang.evaluator import to_json

    if isinstance(v, np.ndarray) and v.ndim >= 1:
        flat = v.reshape(-1)
        k = LIMITS["vector_entries"]
        shown = [to_json(x) for x in flat[:k]]
        return {"entries": shown, "shape": list(v.shape), "truncated": len(flat) > k}
    return to_json(v)


def sentence(payload: Any) -> tuple[int, dict[str, Any]]:
    """``POST /api/sentence``: the parsed sentence, its fragment, WL level and reasons, the
    witness pair drawn, the plan and cost, and values on the chosen graphs."""
    from matlang.errors import MatlangError

    try:
        text = _text(payload, "sentence", LIMITS["sentence_chars"])
        if not text.strip():
            raise _Bad("type a sentence, e.g. tr(A^3) / 6")
        graphs = _graphs(payload)
        from matlang.analysis import classify
        from matlang.evaluator import evaluate
        from matlang.parser import as_expr
        from matlang.printer import to_latex, to_text

        expr = as_expr(text)
        a = classify(expr, witness=bool(payload.get("witness", True)))
    except _Bad as e:
        return (413 if e.kind == "too large" else 400), _error(e.kind, str(e))
    except MatlangError as e:
        return 400, _matlang_error(e)
    out: dict[str, Any] = {
        "ok": True,
        "parsed": to_text(expr),
        "latex": to_latex(expr),
        "shape": str(expr.shape),
        "classify": a.to_json(),
        "explain": a.explain(),
    }
    plan = None
    try:
        from matlang.compiler.lower import lower
        from matlang.compiler.plan import render
        from matlang.parser import as_program

        plan = lower(as_program(expr))
        out["plan"] = render(plan) + f"\nlayers: {plan.layers()}"
    except MatlangError as e:
        out["plan"] = None
        out["plan_error"] = str(e)
    values = []
    for g in graphs:
        row: dict[str, Any] = {"graph": g.label(), "nodes": g.num_nodes, "edges": g.num_edges}
        try:
            row["value"] = _value(evaluate(expr, g))
        except MatlangError as e:
            row["error"] = str(e)
        if plan is not None:  # the cost model on this graph (its exact mask sizes)
            try:
                from matlang.compiler.cost import predict

                cost = predict(plan, g)
                row["flops"], row["peak_bytes"] = int(cost.flops), int(cost.peak_bytes)
            except (MatlangError, TypeError, ValueError):
                pass
        values.append(row)
    out["values"] = values
    out["drawing"] = _drawing(a, expr, graphs)
    return 200, out


def _drawing(a: Any, expr: Any, graphs: list[Any]) -> str | None:
    """The witness pair drawn, else the first (up to two) graphs given, as SVG."""
    from matlang.drawing import draw
    from matlang.errors import MatlangError

    try:
        if a.witness is not None:
            svg = draw(a)
        elif (
            graphs and not a.expr.shape.is_matrix if hasattr(a.expr.shape, "is_matrix") else graphs
        ):
            svg = draw(graphs[:2], expr)
        else:
            return None
    except MatlangError:
        return None
    return svg[svg.index("<svg") :]


def pattern(payload: Any) -> tuple[int, dict[str, Any]]:
    """``POST /api/pattern``: the counting sentence of a pattern, its level, the witness (or
    the certificate pair) drawn."""
    from matlang.errors import MatlangError

    try:
        text = _text(payload, "pattern", LIMITS["sentence_chars"])
        if not text.strip():
            raise _Bad("type a pattern: a name (K4, C5, house), an edge list 0-1 1-2 2-0 or graph6")
        from matlang.patterns import pattern as _pattern
        from matlang.patterns import read_pattern

        p, _ = read_pattern(text.strip())
        if p.n > LIMITS["pattern_nodes"]:
            raise _Bad(
                f"the pattern has {p.n} nodes; at most {LIMITS['pattern_nodes']}", kind="too large"
            )
        result = _pattern(text.strip(), rooted=bool(payload.get("rooted", False)))
    except _Bad as e:
        return (413 if e.kind == "too large" else 400), _error(e.kind, str(e))
    except MatlangError as e:
        return 400, _matlang_error(e)
    out = {"ok": True, **result.to_json(), "explain": result.explain(), "drawing": None}
    if result.witness is not None:
        from matlang.drawing import draw

        svg = draw(result)
        out["drawing"] = svg[svg.index("<svg") :]
    return 200, out


def graphs(_payload: Any = None) -> tuple[int, dict[str, Any]]:
    """``GET /api/graphs``: the built-in graph names and the limits."""
    from matlang.graphs import named_graph_names

    return 200, {
        "ok": True,
        "builtin": named_graph_names(),
        "default": list(DEFAULT_GRAPHS),
        "limits": LIMITS,
    }


#: The request kinds a worker runs.
HANDLERS: dict[str, Callable[[Any], tuple[int, dict[str, Any]]]] = {
    "sentence": sentence,
    "pattern": pattern,
    "graphs": graphs,
}


def handle(kind: str, payload: Any) -> tuple[int, dict[str, Any]]:
    """Run one request in a worker. Input errors are 4xx JSON; an exception from a bug in
    matlang reaches the server as a 500 (the worker and the server go on)."""
    import json

    try:
        key = json.dumps([kind, payload], sort_keys=True)
    except (TypeError, ValueError):
        key = None
    if key is not None and key in _CACHE:
        _CACHE.move_to_end(key)
        return _CACHE[key]
    try:
        out = HANDLERS[kind](payload)
    except RecursionError:
        return 400, _error("too deep", "the sentence nests too deeply to analyse")
    except MemoryError:
        return 413, _error("too large", "the request ran out of memory")
    if key is not None and len(key) <= 4096:  # the same request again: the same answer
        _CACHE[key] = out
        while len(_CACHE) > CACHE_SIZE:
            _CACHE.popitem(last=False)
    return out


#: Answers a worker keeps (least recently used dropped): a page asks again for what it showed.
CACHE_SIZE = 256
_CACHE: OrderedDict[str, tuple[int, dict[str, Any]]] = OrderedDict()


def warm() -> None:
    """Load what requests use (sympy, the witness library, the compiler), once per worker."""
    import os

    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sentence({"sentence": "tr(A^3) / 6", "builtin": ["K4"]})
    pattern({"pattern": "triangle"})


# --------------------------------------------------------------------------- workers


@dataclass
class Outcome:
    status: int
    body: dict[str, Any]


class Workers:
    """``size`` single-process executors; a request takes a free one, runs under ``timeout``
    seconds, and gives it back — or, past the time limit (or if it died), the executor's
    process is killed and a fresh one takes its place. Requests wait at most ``queue_timeout``
    seconds for a free worker (then 429 busy: a client's cue to retry)."""

    def __init__(self, size: int = 2, timeout: float = 5.0, queue_timeout: float = 30.0) -> None:
        self.size, self.timeout, self.queue_timeout = size, timeout, queue_timeout
        self._free: asyncio.Queue[ProcessPoolExecutor] | None = None
        self._ready: dict[ProcessPoolExecutor, Any] = {}
        self._tasks: set[Any] = set()  # fresh workers starting (kept from the collector)
        self.recycled = 0

    #: Seconds a fresh worker may take to start and load matlang (not a request's time).
    START_TIMEOUT = 120.0

    def _new(self) -> ProcessPoolExecutor:
        import multiprocessing

        ex = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"))
        # the worker starts and loads matlang now; requests wait for that outside their limit
        self._ready[ex] = asyncio.wrap_future(ex.submit(warm))
        return ex

    async def _wait_ready(self, ex: ProcessPoolExecutor) -> ProcessPoolExecutor:
        """``ex`` once it has started, or a fresh one if it failed to."""
        ready = self._ready.pop(ex, None)
        if ready is None:
            return ex
        try:
            await asyncio.wait_for(ready, self.START_TIMEOUT)
            return ex
        except Exception:  # noqa: BLE001 - a worker that cannot start is replaced
            self._kill(ex)
            return await self._wait_ready(self._new())

    async def start(self) -> None:
        self._free = asyncio.Queue()
        for _ in range(self.size):
            self._free.put_nowait(self._new())

    async def stop(self) -> None:
        if self._free is None:
            return
        while not self._free.empty():
            ex = self._free.get_nowait()
            self._ready.pop(ex, None)
            self._kill(ex)

    @staticmethod
    def _kill(ex: ProcessPoolExecutor) -> None:
        for proc in list(getattr(ex, "_processes", {}).values()):
            proc.kill()
        ex.shutdown(wait=False, cancel_futures=True)

    async def run(self, kind: str, payload: Any) -> Outcome:
        assert self._free is not None, "Workers.start() first"
        try:
            ex = await asyncio.wait_for(self._free.get(), self.queue_timeout)
        except (asyncio.TimeoutError, TimeoutError):
            return Outcome(429, _error("busy", "every worker is busy; try again in a moment"))
        loop = asyncio.get_running_loop()
        replace = False
        try:
            ex = await self._wait_ready(ex)
            status, body = await asyncio.wait_for(
                loop.run_in_executor(ex, handle, kind, payload), self.timeout
            )
            return Outcome(status, body)
        except (asyncio.TimeoutError, TimeoutError):
            replace = True
            return Outcome(
                422,
                _error(
                    "time limit",
                    f"the request took longer than the limit of {self.timeout:g} s "
                    "(a smaller sentence or smaller graphs; the command line has no limit)",
                ),
            )
        except BrokenProcessPool:
            replace = True
            return Outcome(422, _error("worker died", "the request crashed its worker (memory?)"))
        finally:
            if replace:
                self._kill(ex)
                self.recycled += 1
                self._tasks.add(asyncio.ensure_future(self._give_back_when_ready(self._new())))
            else:
                self._free.put_nowait(ex)

    async def _give_back_when_ready(self, ex: ProcessPoolExecutor) -> None:
        """A fresh worker joins the free ones once it has started: a request never waits on
        a start behind a free worker."""
        ex = await self._wait_ready(ex)
        assert self._free is not None
        self._free.put_nowait(ex)
        self._tasks.discard(asyncio.current_task())  # type: ignore[arg-type]


__all__ = [
    "DEFAULT_GRAPHS",
    "LIMITS",
    "Workers",
    "graphs",
    "handle",
    "pattern",
    "read_graph",
    "sentence",
]
