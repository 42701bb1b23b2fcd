"""Graph constants on a new PyG ``Data``, as users call it, against hand-written python-graphblas.

usage: python -m benchmarks.perf.cold_constants [--n 1000,10000,100000] [--repeats 9]
                                                [--json out.json]

One thread everywhere (torch, BLAS, GraphBLAS). Every contestant starts from the same ER graph
(average degree 10, seed 0); the matlang contestants get a new ``Data`` around a new
``edge_index`` tensor each call (cloned untimed), so validation, layout and graph constants are
all computed (``compile(s, cache=False)``, the default ``validate=True``). Contestants are
interleaved in shuffled rounds; ratios are matlang / peer on min times. ``matlang.unvalidated``
(``validate=False``, reported beside, not a target) shows what the checks the peer does not
make cost: ids in range, no self-loop, coalesced, ``Aᵀ = A``.

Peers: ``gb``: ``C⟨A⟩ = A A`` (plus_pair) then reduce / ``mxv``; ``lagraph`` (``tr(A^3)/6``
only): ``L = tril(A)``, ``C⟨L⟩ = L Lᵀ`` with plus_pair, each triangle once; ``lagraph.LtL``:
the same ``L``, ``C⟨L⟩ = Lᵀ L`` (the formulation matlang's count uses: the peer
with the same product). Every value is checked equal to the peer's before timing.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

for _k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_k, "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

SENTENCES = {"tr(A^3)/6": "tri", "(A ⊙ A²)² 𝟏": "l3", "(A ⊙ A²) 𝟏": "rowsum"}


def _gb() -> Any:
    import graphblas as gb

    gb.ss.config["nthreads"] = 1
    return gb


def _adj(ei: torch.Tensor, n: int) -> Any:
    gb = _gb()
    r, c = ei.numpy()
    return gb.Matrix.from_coo(r, c, 1, nrows=n, ncols=n, dtype=gb.dtypes.INT64)


def gb_peer(kind: str) -> Callable[[torch.Tensor, int], Any]:
    """The hand-written masked product ``C⟨A⟩ = A A`` (plus_pair), then the sentence's tail."""

    def f(ei: torch.Tensor, n: int) -> Any:
        gb = _gb()
        a = _adj(ei, n)
        t = gb.Matrix(gb.dtypes.INT64, n, n)
        t(a.S) << a.mxm(a, gb.semiring.plus_pair)
        if kind == "tri":
            return t.reduce_scalar(gb.monoid.plus).new().value / 6
        d = t.reduce_rowwise(gb.monoid.plus).new()
        if kind == "rowsum":
            return d.to_dense(fill_value=0)
        return t.mxv(d, gb.semiring.plus_times).new().to_dense(fill_value=0)

    return f


def lagraph_triangles(ei: torch.Tensor, n: int, *, ltl: bool = False) -> int:
    """LAGraph's count: ``C⟨L⟩ = L Lᵀ`` on the strictly lower triangle, plus_pair (``ltl``:
    ``C⟨L⟩ = Lᵀ L``, the same count by GraphBLAS's masked saxpy)."""
    gb = _gb()
    a = _adj(ei, n)
    low = gb.select.tril(a, -1).new()
    t = gb.Matrix(gb.dtypes.INT64, n, n)
    if ltl:
        t(low.S) << low.T.mxm(low, gb.semiring.plus_pair)
    else:
        t(low.S) << low.mxm(low.T, gb.semiring.plus_pair)
    return int(t.reduce_scalar(gb.monoid.plus).new().value)


def interleaved(fns: dict[str, Any], repeats: int, warmup: int = 2) -> dict[str, list[float]]:
    """Seconds per call of each contestant, in shuffled rounds (seed 0). A contestant is a
    callable or a pair (prepare, call): prepare() runs untimed and its result is passed on."""

    def one(f: Any) -> float:
        if isinstance(f, tuple):
            arg = f[0]()
            t = time.perf_counter()
            f[1](arg)
            return time.perf_counter() - t
        t = time.perf_counter()
        f()
        return time.perf_counter() - t

    for _ in range(warmup):
        for f in fns.values():
            one(f)
    times: dict[str, list[float]] = {k: [] for k in fns}
    rng = random.Random(0)
    for _ in range(repeats):
        order = list(fns)
        rng.shuffle(order)
        for k in order:
            times[k].append(one(fns[k]))
    return times


def _unfused(sentence: str) -> Any:
    """The sentence compiled without the triangle-count fusion (``A ⊙ A²`` on all 2E entries,
    as before it): the before/after ratio in one process."""
    from unittest import mock

    import matlang
    from matlang.compiler import constants

    with mock.patch.object(constants.ConstantStage, "fusions", ()):
        return matlang.compile(sentence, cache=False)


def _np(v: Any) -> np.ndarray:
    if isinstance(v, torch.Tensor):
        return v.detach().double().reshape(-1).numpy()
    return np.asarray(v, dtype=np.float64).reshape(-1)


def run(n: int, repeats: int, sentences: list[str]) -> list[dict[str, Any]]:
    from torch_geometric.data import Data

    import matlang
    from benchmarks.perf.workloads import sparse_erdos_renyi

    ei = sparse_erdos_renyi(n, 10.0, seed=0)
    rows = []
    for s in sentences:
        kind = SENTENCES[s]
        cold = matlang.compile(s, cache=False)

        def new_data() -> Any:
            return Data(edge_index=ei.clone(), num_nodes=n)

        fns: dict[str, Any] = {
            "matlang": (new_data, cold),
            # not a target: what the defaults' validation costs, in the same rounds
            "matlang.unvalidated": (new_data, matlang.compile(s, cache=False, validate=False)),
            "gb": functools.partial(gb_peer(kind), ei, n),
        }
        if kind == "tri":
            fns["lagraph"] = functools.partial(lagraph_triangles, ei, n)
            fns["lagraph.LtL"] = functools.partial(lagraph_triangles, ei, n, ltl=True)
            fns["matlang.unfused"] = (new_data, _unfused(s))
        ref = _np(gb_peer(kind)(ei, n))
        for name in ("matlang", "matlang.unvalidated"):
            with torch.no_grad():
                got = _np(fns[name][1](new_data()))
            if not np.allclose(got, ref, rtol=1e-6):
                raise AssertionError(f"{s} at n={n}: {name} {got[:4]} != GraphBLAS {ref[:4]}")
        if kind == "tri" and not (
            int(round(ref[0])) == lagraph_triangles(ei, n) == lagraph_triangles(ei, n, ltl=True)
        ):
            raise AssertionError(f"LAGraph count differs at n={n}")
        t = interleaved(fns, repeats)
        mins = {k: min(v) for k, v in t.items()}
        row = {
            "n": n,
            "E": int(ei.shape[1]),
            "sentence": s,
            "min_s": mins,
            "median_s": {k: statistics.median(v) for k, v in t.items()},
            "ratio_gb": mins["matlang"] / mins["gb"],
            "ratio_unvalidated_gb": mins["matlang.unvalidated"] / mins["gb"],
            "load": os.getloadavg()[0],
        }
        if "lagraph" in mins:
            row["ratio_lagraph"] = mins["matlang"] / mins["lagraph"]
            row["ratio_unfused_lagraph"] = mins["matlang.unfused"] / mins["lagraph"]
            row["ratio_lagraph_ltl"] = mins["matlang"] / mins["lagraph.LtL"]
        rows.append(row)
        extra = (
            f"  / LAGraph {row['ratio_lagraph']:.2f}× (unfused {row['ratio_unfused_lagraph']:.2f}×,"
            f" / LᵀL peer {row['ratio_lagraph_ltl']:.2f}×)"
            if "ratio_lagraph" in row
            else ""
        )
        print(
            f"n={n:>7} {s:<14} matlang {mins['matlang'] * 1e3:8.2f} ms  gb "
            f"{mins['gb'] * 1e3:8.2f} ms  / gb {row['ratio_gb']:.2f}× (validate=False "
            f"{row['ratio_unvalidated_gb']:.2f}×){extra}  "
            f"(load {row['load']:.1f})",
            flush=True,
        )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", default="1000,10000,100000")
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--sentences", default=",".join(SENTENCES))
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    torch.set_num_threads(1)
    rows = []
    for n in (int(x) for x in args.n.split(",")):
        rows += run(n, args.repeats, args.sentences.split(","))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"threads": 1, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
