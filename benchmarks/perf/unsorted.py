"""Unsorted against coalesced ``edge_index``, and the unsorted path as it was (validation's
slow path with a per-edge ``searchsorted``, then ``torch.unique`` in ``prepared_edges``: the
sorted-symmetric check switched off), interleaved in one process, one thread:

1. ``tr(A^3)/6`` on a new PyG ``Data`` at ``--n`` nodes (ER, mean degree 10), against the
   LAGraph-style count on GraphBLAS (L = tril(A, -1), C⟨L.S⟩ = L·Lᵀ plus_pair, reduce; the
   review's peer), and a stable numpy/scipy sort of the same edges (the floor);
2. ``SentenceConv(16, 16, ["I", "A", "A ⊙ A²"])`` forward + backward on a new PyG ``Batch`` of
   ``--graphs`` ER graphs of 25 nodes, coalesced and unsorted, against GINConv.

Unsorted is ``torch.cat([e, e.flip(0)], 1)`` of the edges ``u < v`` (valid, not row-sorted).

usage: python -m benchmarks.perf.unsorted [--n 100000] [--graphs 128] [--repeats 9]
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import statistics
import time
from contextlib import nullcontext
from typing import Any
from unittest import mock

for _k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_k, "1")

import torch  # noqa: E402


def unsorted(ei: torch.Tensor) -> torch.Tensor:
    """The same undirected graph as ``torch.cat([e, e.flip(0)], 1)``, ``e`` its edges u < v."""
    e = ei[:, ei[0] < ei[1]]
    return torch.cat([e, e.flip(0)], 1).contiguous()


def interleaved(fns: dict[str, Any], repeats: int, warmup: int = 2) -> dict[str, list[float]]:
    """Seconds of each contestant, ``(prepare, call)`` pairs, in shuffled rounds."""
    times: dict[str, list[float]] = {k: [] for k in fns}
    rng = random.Random(0)
    for r in range(warmup + repeats):
        order = list(fns)
        rng.shuffle(order)
        for k in order:
            prep, call = fns[k]
            arg = prep()
            t = time.perf_counter()
            call(arg)
            if r >= warmup:
                times[k].append(time.perf_counter() - t)
    return times


def _old_path() -> Any:
    """The unsorted path before the sorted-symmetric check: the slow path decides."""
    from matlang.runtime import validate

    return mock.patch.object(validate, "sorted_symmetric_host", lambda *a: None)


def _report(times: dict[str, list[float]], ref: str) -> None:
    base = min(times[ref])
    for k, ts in times.items():
        print(
            f"  {k:22s} min {min(ts) * 1e3:8.2f} ms  median {statistics.median(ts) * 1e3:8.2f} ms"
            f"  min/{ref} {min(ts) / base:5.2f}×"
        )


def triangles(n: int, repeats: int) -> None:
    import graphblas as gb
    import numpy as np
    from torch_geometric.data import Data

    import matlang
    from benchmarks.perf.workloads import sparse_erdos_renyi
    from matlang.runtime.validate import sort_host

    gb.ss.config["nthreads"] = 1
    coal = sparse_erdos_renyi(n, 10.0, seed=0)
    uns = unsorted(coal)
    m = matlang.compile("tr(A^3)/6", cache=False)

    def lagraph(ei: torch.Tensor) -> Any:
        r, c = ei.numpy()
        a = gb.Matrix.from_coo(r, c, 1, nrows=n, ncols=n, dtype=gb.dtypes.INT64)
        low = gb.select.tril(a, -1).new()
        t = gb.Matrix(gb.dtypes.INT64, n, n)
        t(low.S) << low.mxm(low.T, gb.semiring.plus_pair)
        return t.reduce_scalar(gb.monoid.plus).new().value

    def call(ei: torch.Tensor, old: bool = False) -> Any:
        with _old_path() if old else nullcontext():
            return m(Data(edge_index=ei, num_nodes=n))

    want = lagraph(coal)
    with torch.no_grad():
        assert int(call(uns.clone())) == int(call(coal.clone())) == int(want)
        fns = {
            "lagraph.coal": (coal.clone, lagraph),
            "lagraph.uns": (uns.clone, lagraph),
            "ml.coal": (coal.clone, call),
            "ml.uns": (uns.clone, call),
            "ml.uns.old": (uns.clone, lambda ei: call(ei, True)),
            "sort_host(uns)": (
                lambda: uns.numpy().copy(),
                lambda e: sort_host(e[0], e[1], n),
            ),
            "np.argsort(key,stable)": (
                lambda: uns.numpy().copy(),
                lambda e: np.argsort(e[0] * n + e[1], kind="stable"),
            ),
        }
        times = interleaved(fns, repeats)
    print(f"tr(A^3)/6 on a new Data, n = {n}, E = {int(coal.shape[1])}, one thread")
    _report(times, "lagraph.coal")


def layer(graphs: int, repeats: int) -> None:
    from torch import nn
    from torch_geometric.data import Batch as PygBatch
    from torch_geometric.data import Data
    from torch_geometric.nn import GINConv

    from benchmarks.perf.workloads import sparse_erdos_renyi
    from matlang.nn import SentenceConv

    d, size = 16, 25
    seeds = itertools.count(1000)

    def pool(form: str) -> list[Data]:
        out = []
        for _ in range(graphs):
            ei = sparse_erdos_renyi(size, 10.0, seed=next(seeds))
            ei = ei if form == "coal" else unsorted(ei)
            out.append(Data(x=torch.randn(size, d), edge_index=ei, num_nodes=size))
        return out

    torch.manual_seed(0)
    conv = SentenceConv(d, d, ["I", "A", "A ⊙ A²"])
    gin = GINConv(nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, d)))

    def batch_of(lst: list[Data]) -> Any:
        b = PygBatch.from_data_list(lst)
        b.x.requires_grad_(True)
        return b

    def ml_step(b: Any, old: bool = False) -> None:
        with _old_path() if old else nullcontext():
            conv(b.x, b.edge_index, b.batch).sum().backward()

    def gin_step(b: Any) -> None:
        gin(b.x, b.edge_index).sum().backward()

    fns: dict[str, Any] = {}
    for form in ("coal", "uns"):
        for name, step in (
            ("ml", ml_step),
            ("gin", gin_step),
            *((("ml.old", lambda b: ml_step(b, True)),) if form == "uns" else ()),
        ):
            it = iter([pool(form) for _ in range(repeats + 2)])
            fns[f"{name}.new.{form}"] = (lambda it=it: batch_of(next(it)), step)
    times = interleaved(fns, repeats)
    print(f"SentenceConv(16, 16, [I, A, A ⊙ A²]) fwd+bwd, new batch of {graphs} × ER(25)")
    _report(times, "gin.new.coal")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--graphs", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--only", choices=["triangles", "layer"], default=None)
    args = ap.parse_args()
    torch.set_num_threads(1)
    if args.only != "layer":
        triangles(args.n, args.repeats)
    if args.only != "triangles":
        layer(args.graphs, args.repeats)


if __name__ == "__main__":
    main()
