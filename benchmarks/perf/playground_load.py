"""A bounded load test of ``matlang serve`` over HTTP on localhost.

Starts the server (``--workers 2 --timeout 5`` unless told otherwise), then ``--clients``
threads send ``--requests`` requests in all, a seeded mix of

* ``valid``      sentences and patterns a person types (repeated: a worker's cache answers),
* ``unique``     valid sentences never sent before (classify, witness, drawing, values),
* ``invalid``    syntax, name and shape errors, bad JSON, wrong types (4xx with the message),
* ``oversized``  a 3000-character sentence, a 70 KB body, a 500-node edge list (413),
* ``slow``       ``tr(A^300)`` on K200 (minutes of exact arithmetic: the time limit, 422,
                 and a recycled worker),

and checks that no answer is a 5xx and none hangs (a client gives up after ``--hang`` s).
Writes p50/p95/max latency overall and per kind, the status counts and the recycled workers
to a JSON file::

    python benchmarks/perf/playground_load.py --out results/perf/playground-load.json
"""

from __future__ import annotations

import argparse
import json
import random
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import Counter, defaultdict
from typing import Any

VALID = [
    ("sentence", {"sentence": "tr(A^3) / 6", "builtin": ["K4", "petersen"]}),
    ("sentence", {"sentence": "1/2 * 𝟏ᵀ (A³ ⊙ diag(A𝟏 - 2𝟏)) 𝟏", "builtin": ["cospectral_G"]}),
    ("sentence", {"sentence": "onesᵀ A ones / 2", "graphs": "0-1 1-2 2-0\nEwCW"}),
    ("sentence", {"sentence": "let f(x) = x*x; 𝟏ᵀ f(A 𝟏)", "builtin": ["decalin"]}),
    ("sentence", {"sentence": "𝟏ᵀ (A ⊙ A²)² 𝟏", "builtin": ["cospectral_G", "cospectral_H"]}),
    ("pattern", {"pattern": "K4"}),
    ("pattern", {"pattern": "C4"}),
    ("pattern", {"pattern": "0-1 1-2 2-0"}),
]
INVALID = [
    ("sentence", {"sentence": "trace(A)"}),
    ("sentence", {"sentence": "tr(A^3"}),
    ("sentence", {"sentence": "A + 𝟏"}),
    ("sentence", {"sentence": "tr(B)"}),
    ("sentence", {"sentence": 42}),
    ("sentence", [1, 2, 3]),
    ("sentence", {"sentence": "tr(A)", "graphs": "not-a-graph!"}),
    ("pattern", {"pattern": "K4 K5"}),
    ("sentence", b"{not json"),
]
OVERSIZED = [
    ("sentence", {"sentence": "A" * 3000}),
    ("sentence", b" " * 70_000),
    ("sentence", {"sentence": "tr(A)", "graphs": "0-1 1-499"}),
    ("pattern", {"pattern": "K9"}),
]
SLOW = [("sentence", {"sentence": "tr(A^300)", "builtin": ["K200"], "witness": False})]


def plan(n: int, seed: int) -> list[tuple[str, str, Any]]:
    """(kind, route, body) for each request, in a seeded order."""
    rng = random.Random(seed)
    mix = [
        ("valid", 0.50),
        ("unique", 0.05),
        ("invalid", 0.27),
        ("oversized", 0.175),
        ("slow", 0.005),
    ]
    out = []
    counts = {k: round(p * n) for k, p in mix}
    counts["valid"] += n - sum(counts.values())
    for kind, c in counts.items():
        for i in range(c):
            body: Any
            if kind == "unique":
                k, m = rng.randint(2, 9), rng.randint(1, 97)
                route, body = "sentence", {"sentence": f"tr(A^{k}) / {m} + {i}", "builtin": ["K4"]}
            else:
                pool: dict[str, list[tuple[str, Any]]] = {
                    "valid": VALID,
                    "invalid": INVALID,
                    "oversized": OVERSIZED,
                    "slow": SLOW,
                }
                route, body = rng.choice(pool[kind])
            out.append((kind, route, body))
    rng.shuffle(out)
    return out


def send(base: str, route: str, body: Any, timeout: float) -> tuple[int, float]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(
        f"{base}/api/{route}",
        data=data,
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    start = time.perf_counter()
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            r.read()
            status = r.status
    except urllib.error.HTTPError as e:
        e.read()
        status = e.code
    except TimeoutError:
        status = -1  # a hang
    except (urllib.error.URLError, ConnectionError):
        status = -2  # the server is gone
    return status, time.perf_counter() - start


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(q * len(xs)))], 4) if xs else 0.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=5.0, help="the server's time limit")
    ap.add_argument("--hang", type=float, default=120.0, help="a client gives up after this")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--out", default="results/perf/playground-load.json")
    args = ap.parse_args()

    port = args.port
    if not port:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "matlang.cli",
            "serve",
            "--port",
            str(port),
            "--workers",
            str(args.workers),
            "--timeout",
            str(args.timeout),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(base + "/api/health", timeout=2).read()
                break
            except OSError:
                time.sleep(0.2)
        for _ in range(args.workers):  # both workers started (outside the measurement)
            send(base, "sentence", {"sentence": "tr(A)"}, 300)
        jobs = plan(args.requests, args.seed)
        results: list[tuple[str, int, float]] = []
        lock = threading.Lock()
        next_job = iter(jobs)

        def client() -> None:
            while True:
                with lock:
                    job = next(next_job, None)
                if job is None:
                    return
                kind, route, body = job
                status, seconds = send(base, route, body, args.hang)
                with lock:
                    results.append((kind, status, seconds))

        start = time.perf_counter()
        threads = [threading.Thread(target=client) for _ in range(args.clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.perf_counter() - start
        with urllib.request.urlopen(base + "/api/health") as r:
            health = json.loads(r.read())
        alive = server.poll() is None
    finally:
        server.terminate()
        server.wait(timeout=30)

    by_kind: dict[str, list[float]] = defaultdict(list)
    statuses: dict[str, Counter[int]] = defaultdict(Counter)
    for kind, status, seconds in results:
        by_kind[kind].append(seconds)
        statuses[kind][status] += 1
    every = [s for _, _, s in results]
    out = {
        "clients": args.clients,
        "requests": len(results),
        "server": {"workers": args.workers, "time_limit_s": args.timeout},
        "wall_s": round(wall, 1),
        "server_errors_5xx": sum(1 for _, s, _ in results if s >= 500),
        "hangs": sum(1 for _, s, _ in results if s == -1),
        "connection_errors": sum(1 for _, s, _ in results if s == -2),
        "server_alive_after": alive,
        "workers_recycled": health["recycled"],
        "latency_s": {"p50": _pct(every, 0.5), "p95": _pct(every, 0.95), "max": _pct(every, 1.0)},
        "per_kind": {
            k: {
                "requests": len(v),
                "status": {str(s): c for s, c in sorted(statuses[k].items())},
                "p50": _pct(v, 0.5),
                "p95": _pct(v, 0.95),
                "max": _pct(v, 1.0),
                "mean": round(statistics.fmean(v), 4),
            }
            for k, v in sorted(by_kind.items())
        },
        "machine": "2 shared CPU cores (other jobs running)",
    }
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(out, f, indent=2)
        f.write("\n")
    print(json.dumps(out, indent=2))
    ok = out["server_errors_5xx"] == 0 and out["hangs"] == 0 and alive
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
