"""Peak memory of the constant stage at n = 10⁶, as users call it, against hand-written
python-graphblas: one fresh subprocess per contestant, one thread.

usage: python -m benchmarks.perf.memory [--n 1000000] [--degree 10] [--contestants ...]
                                        [--json out.json]

The graph is an Erdős–Rényi graph drawn in O(E) memory (``workloads.sparse_erdos_renyi``,
average degree 10, seed 0), saved once to a temporary ``.npy`` that every child loads.

**What is measured.** Each child imports everything, loads the ``edge_index`` (int64, both
directions), builds what the contestant starts from (matlang: nothing yet; the peer: nothing
yet), runs ``gc.collect()`` and ``malloc_trim(0)``, then resets the kernel's high-water mark
(``/proc/self/clear_refs`` ← 5) and reads ``VmRSS``. It then runs the contestant once (matlang:
``matlang.compile(s)`` and a call on a fresh PyG ``Data(edge_index=..., num_nodes=n)``, the
defaults, under ``torch.no_grad()``; the peer: ``Matrix.from_coo`` and the masked products)
and reports ``VmHWM − VmRSS_before``: the most resident memory the call added at any moment.

**Why this is fair.** Resident memory counts every allocation, Python's, torch's and
SuiteSparse:GraphBLAS's ``malloc`` alike (``tracemalloc`` sees only Python's and numpy's, not
GraphBLAS's, so it would undercount the peer), and both sides start from the same resident
state: the same imports (torch, torch_geometric, graphblas, matlang) and the same
``edge_index`` already in memory. ``ru_maxrss`` cannot be reset, so drawing the graph in the
child would hide the call's peak under the draw's; the high-water mark reset avoids that.
Where ``clear_refs`` is not writable the child falls back to ``ru_maxrss`` minus the RSS
before the call, and the row says ``"method": "ru_maxrss"``.

Contestants (``--contestants``, comma-separated):

- ``ml``: ``(A ⊙ A²)² 𝟏`` by ``matlang.compile(s)`` on a new PyG ``Data`` (defaults);
- ``gb``: ``Matrix.from_coo`` (INT64 values 1, as matlang's integral constants) →
  ``C⟨A⟩ = A A`` (plus_pair) → ``reduce_rowwise`` → ``mxv`` → numpy;
- ``ml.tri``: ``tr(A^3)/6`` the same way; ``gb.tri``: the masked product and ``reduce_scalar``;
  ``lagraph.tri``: ``L = tril(A)``, ``C⟨L⟩ = L Lᵀ`` (plus_pair), one triangle once;
- ``ml.nv``: ``(A ⊙ A²)² 𝟏`` with ``compile(s, validate=False, cache=False)`` (where the rest
  goes); ``ml.run``: compiled before the measurement starts (the call alone).

Every child also returns its value's checksum; the parent checks matlang's equal to the peer's.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

SENTENCES = {"l3": "(A ⊙ A²)² 𝟏", "tri": "tr(A^3)/6"}
CONTESTANTS = ("ml", "gb", "ml.tri", "gb.tri", "lagraph.tri", "ml.nv", "ml.run")

CHILD = r"""
import os
for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[k] = "1"
import ctypes, ctypes.util, gc, json, resource, sys, time
import numpy as np
import torch
torch.set_num_threads(1)
import graphblas as gb
gb.ss.config["nthreads"] = 1
from torch_geometric.data import Data
import matlang

who, path = sys.argv[1], sys.argv[2]
ei = torch.from_numpy(np.load(path))
n = int(ei.max()) + 1
kind = "tri" if who.endswith(".tri") else "l3"
sentence = {"l3": "(A ⊙ A²)² 𝟏", "tri": "tr(A^3)/6"}[kind]


compiled = matlang.compile(sentence) if who == "ml.run" else None


def run():
    if who.startswith("ml"):
        opts = {"validate": False, "cache": False} if who == "ml.nv" else {}
        model = compiled if compiled is not None else matlang.compile(sentence, **opts)
        with torch.no_grad():
            out = model(Data(edge_index=ei, num_nodes=n))
        return out.detach().double().reshape(-1).numpy()
    r, c = ei.numpy()
    a = gb.Matrix.from_coo(r, c, 1, nrows=n, ncols=n, dtype=gb.dtypes.INT64)
    if who == "lagraph.tri":
        low = gb.select.tril(a, -1).new()
        del a
        t = gb.Matrix(gb.dtypes.INT64, n, n)
        t(low.S) << low.mxm(low.T, gb.semiring.plus_pair)
        return np.array([float(t.reduce_scalar(gb.monoid.plus).new().value)])
    t = gb.Matrix(gb.dtypes.INT64, n, n)
    t(a.S) << a.mxm(a, gb.semiring.plus_pair)
    if kind == "tri":
        return np.array([t.reduce_scalar(gb.monoid.plus).new().value / 6])
    d = t.reduce_rowwise(gb.monoid.plus).new()
    return t.mxv(d, gb.semiring.plus_times).new().to_dense(fill_value=0).astype(np.float64)


def status(key):
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(key)


gc.collect()
libc = ctypes.util.find_library("c")
if libc:
    ctypes.CDLL(libc).malloc_trim(0)
try:
    with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
        f.write("5")
    method = "VmHWM"
except OSError:
    method = "ru_maxrss"
before = status("VmRSS")
t0 = time.perf_counter()
value = run()
seconds = time.perf_counter() - t0
if method == "VmHWM":
    peak = status("VmHWM")
else:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print("RESULT " + json.dumps({
    "contestant": who, "sentence": sentence, "method": method, "seconds": seconds,
    "rss_before_mib": before / 2**20, "peak_above_mib": max(0, peak - before) / 2**20,
    "checksum": float(np.sum(value)), "head": [float(v) for v in value[:4]],
}))
"""


def child(who: str, path: Path) -> dict[str, Any]:
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    p = subprocess.run(
        [sys.executable, "-c", CHILD, who, str(path)], capture_output=True, text=True, env=env
    )
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
    if p.returncode or not lines:
        raise RuntimeError(f"contestant {who} failed (exit {p.returncode}):\n{p.stderr[-2000:]}")
    return dict(json.loads(lines[0][len("RESULT ") :]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--degree", type=float, default=10.0)
    ap.add_argument("--contestants", default="ml,gb,ml.tri,gb.tri,lagraph.tri")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    who = args.contestants.split(",")
    unknown = [w for w in who if w not in CONTESTANTS]
    if unknown:
        ap.error(f"unknown contestant(s) {unknown}; known: {', '.join(CONTESTANTS)}")

    import numpy as np

    from benchmarks.perf.workloads import sparse_erdos_renyi

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "edge_index.npy"
        ei = sparse_erdos_renyi(args.n, args.degree, seed=0)
        edges = int(ei.shape[1])
        np.save(path, ei.numpy())
        del ei
        rows = []
        for w in who:
            r = child(w, path)
            r["load"] = os.getloadavg()[0]
            rows.append(r)
            print(
                f"{w:<12} {r['sentence']:<12} peak above {r['peak_above_mib']:8.1f} MiB "
                f"({r['method']}), {r['seconds']:.2f} s, load {r['load']:.1f}",
                flush=True,
            )
    by = {r["contestant"]: r for r in rows}
    ratios: dict[str, float] = {}
    for mine, peer in (("ml", "gb"), ("ml.nv", "gb"), ("ml.run", "gb"), ("ml.tri", "gb.tri"),
                       ("ml.tri", "lagraph.tri")):
        if mine in by and peer in by:
            a, b = by[mine], by[peer]
            if not np.isclose(a["checksum"], b["checksum"], rtol=1e-9):
                raise AssertionError(f"{mine} = {a['checksum']} but {peer} = {b['checksum']}")
            ratios[f"{mine}/{peer}"] = a["peak_above_mib"] / b["peak_above_mib"]
    for k, v in ratios.items():
        print(f"peak memory {k}: {v:.2f}×")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"n": args.n, "E": edges, "degree": args.degree, "threads": 1,
                       "rows": rows, "ratios": ratios}, f, indent=1)


if __name__ == "__main__":
    main()
