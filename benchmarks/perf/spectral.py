"""Spectral preprocessing benchmark: GNNML3 supports and ChebNet's λmax without
eigendecompositions, against the dense path and PyG's ``LaplacianLambdaMax``.

    python -m benchmarks.perf.spectral            # writes results/perf/spectral.json and .md
    python -m benchmarks.perf.spectral --quick    # small sizes only (a smoke run)

One thread. Times are min over interleaved repeats (one call for the largest cases); memory
is the peak RSS above the RSS before one call (``benchmarks.perf.timing.measure_peak``).
Exponents are log–log least-squares slopes against the number of directed edges E.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm import tqdm

from benchmarks.perf.timing import (
    MIB,
    load_average,
    measure_peak,
    memory_method,
    set_threads,
    time_interleaved,
)
from benchmarks.perf.workloads import sparse_erdos_renyi
from benchmarks.records import PERF_DIR
from matlang.runtime import preprocess as pp

OUT = PERF_DIR


def grid_edges(rows: int, cols: int) -> torch.Tensor:
    """``edge_index`` of a rows × cols 2-D grid, both directions."""
    idx = np.arange(rows * cols).reshape(rows, cols)
    u = np.concatenate([idx[:-1].ravel(), idx[:, :-1].ravel()])
    v = np.concatenate([idx[1:].ravel(), idx[:, 1:].ravel()])
    return torch.from_numpy(np.stack([np.r_[u, v], np.r_[v, u]]).astype(np.int64))


def graph(kind: str, n: int) -> pp.LocalGraph:
    if kind == "grid":
        side = round(math.sqrt(n))
        return pp.LocalGraph(grid_edges(side, n // side), side * (n // side))
    # er: average degree 5 (small tree components: λmax = 2); er10: one non-bipartite giant
    return pp.LocalGraph(sparse_erdos_renyi(n, 10.0 if kind == "er10" else 5.0, seed=0), n)


def slope(xs: list[float], ys: list[float]) -> float | None:
    if len(xs) < 2:
        return None
    return float(np.polyfit(np.log(xs), np.log(ys), 1)[0])


def supports_case(kind: str, n: int, *, dense: bool, repeats: int) -> dict[str, Any]:
    """Default (expanded) supports: time, memory, order, probes and bound; with ``dense`` the
    exact path too (one call: it is the slow one) and the error against it."""
    g = graph(kind, n)
    cfg = pp.SupportConfig(exact=False)  # the expansion at every size
    fast: Callable[[], pp.Supports] = lambda: pp.gnnml3_supports(g, cfg)  # noqa: E731
    peak = measure_peak(fast)
    sup: pp.Supports = peak.result
    t = time_interleaved({"expanded": fast}, warmup=0, repeats=repeats)["expanded"]
    adj = g.sparse_adjacency()
    colours, probes = pp.spectral.distance_colouring(adj, sup.order + cfg.receptive_field)
    row: dict[str, Any] = {
        "graph": kind,
        "n": g.num_nodes,
        "E": int(g.edge_index.shape[1]),
        "mask_entries": int(sup.edge_index.shape[1]),
        "time_s": t.min,
        "peak_mib": peak.peak_bytes / MIB,
        "order": sup.order,
        "probes": probes,
        "error_bound": sup.error_bound,
    }
    if dense:
        exact_cfg = pp.SupportConfig(exact=True)
        dp = measure_peak(lambda: pp.gnnml3_supports(g, exact_cfg))
        row["dense_time_s"] = dp.seconds
        row["dense_peak_mib"] = dp.peak_bytes / MIB
        row["speedup"] = dp.seconds / t.min
        row["max_error"] = float((dp.result.edge_attr - sup.edge_attr).abs().max())
    return row


def lambda_case(kind: str, n: int, repeats: int) -> dict[str, Any]:
    """Our λmax (normalised Laplacian) against PyG's LaplacianLambdaMax, interleaved."""
    from torch_geometric.data import Data
    from torch_geometric.transforms import LaplacianLambdaMax

    g = graph(kind, n)
    data = Data(edge_index=g.edge_index, num_nodes=g.num_nodes)
    pyg = LaplacianLambdaMax(normalization="sym")
    out: dict[str, float] = {}

    def ours() -> None:
        out["ours"] = pp.lambda_max(g)

    def theirs() -> None:
        out["pyg"] = float(pyg(data.clone()).lambda_max)

    t = time_interleaved({"ours": ours, "pyg": theirs}, warmup=1, repeats=repeats)
    return {
        "graph": kind,
        "n": g.num_nodes,
        "E": int(g.edge_index.shape[1]),
        "ours_s": t["ours"].min,
        "pyg_s": t["pyg"].min,
        "ratio": t["ours"].min / t["pyg"].min,
        "ours": out["ours"],
        "pyg": out["pyg"],
    }


def run(quick: bool, dense_max: int) -> dict[str, Any]:
    set_threads(1)
    grid_ns = [1024, 4096, 16384] if quick else [1024, 3249, 10000, 32400, 99856]
    er_ns = [500, 1000] if quick else [500, 1000, 2000, 4000]
    dense_ns = [400, 1600] if quick else [400, 1600, 3200, 6400]
    dense_ns = [n for n in dense_ns if n <= dense_max]
    lam_ns = [1000, 10000] if quick else [1000, 10000, 100000]
    cases: dict[str, list[dict[str, Any]]] = {"grid": [], "er": [], "dense": [], "lambda": []}
    jobs: list[tuple[str, Callable[[], dict[str, Any]]]] = []
    # λmax first: the cheap cases, timed before the dense path has grown the heap
    for kind in ("grid", "er", "er10"):
        for n in lam_ns:
            jobs.append(("lambda", partial(lambda_case, kind, n, repeats=3)))
    for n in grid_ns:
        jobs.append(("grid", partial(supports_case, "grid", n, dense=False, repeats=2)))
    for n in er_ns:
        jobs.append(("er", partial(supports_case, "er", n, dense=n <= 1000, repeats=1)))
    for n in dense_ns:
        jobs.append(("dense", partial(supports_case, "grid", n, dense=True, repeats=3)))
    t0 = time.perf_counter()
    for name, job in tqdm(jobs, desc="spectral", disable=None):
        cases[name].append(job())
    summary: dict[str, Any] = {}
    for kind in ("grid", "er"):
        rows = cases[kind]
        edges = [r["E"] for r in rows]
        summary[f"{kind}_time_exponent"] = slope(edges, [r["time_s"] for r in rows])
        summary[f"{kind}_memory_exponent"] = slope(
            [r["E"] for r in rows], [max(r["peak_mib"], 1e-3) for r in rows]
        )
    big = max(cases["grid"], key=lambda r: r["n"])
    summary["grid_largest"] = {k: big[k] for k in ("n", "time_s", "peak_mib")}
    summary["speedup_vs_dense"] = {r["n"]: r["speedup"] for r in cases["dense"]}
    summary["max_error_vs_dense"] = max(
        (r["max_error"] for r in cases["dense"] + cases["er"] if "max_error" in r), default=None
    )
    summary["lambda_ratio_max"] = max(r["ratio"] for r in cases["lambda"])
    return {
        "meta": {
            "command": "python -m benchmarks.perf.spectral" + (" --quick" if quick else ""),
            "threads": 1,
            "load_average": load_average(),
            "memory": memory_method(),
            "wall_s": time.perf_counter() - t0,
            "er_avg_degree": "5 (er), 10 (er10, λmax only)",
        },
        "summary": summary,
        "cases": cases,
    }


def markdown(res: dict[str, Any]) -> str:
    s = res["summary"]
    lines = [
        "# Spectral preprocessing",
        "",
        f"`{res['meta']['command']}`, one thread, load average {res['meta']['load_average']}.",
        "",
        f"- GNNML3 supports, 2-D grids: time exponent {s['grid_time_exponent']:.2f}, memory "
        f"exponent {s['grid_memory_exponent']:.2f} in E; n = {s['grid_largest']['n']}: "
        f"{s['grid_largest']['time_s']:.2f} s, {s['grid_largest']['peak_mib']:.0f} MiB.",
        f"- ER graphs (average degree 5): time exponent {s['er_time_exponent']:.2f} "
        f"(probing needs one colour per node once K + 1 exceeds the diameter).",
        "- Speed-up over the dense path: "
        + ", ".join(f"n = {n}: {v:.0f}×" for n, v in s["speedup_vs_dense"].items())
        + f"; largest error against it {s['max_error_vs_dense']:.1e}.",
        f"- λmax / PyG LaplacianLambdaMax: worst ratio {s['lambda_ratio_max']:.2f}.",
        "",
        "| graph | n | E | order K | probes | time (s) | peak MiB | bound | dense (s) | dense MiB"
        " | speed-up | max error |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in res["cases"]["grid"] + res["cases"]["er"] + res["cases"]["dense"]:
        dense = (
            f"{r['dense_time_s']:.3g} | {r['dense_peak_mib']:.0f} | {r['speedup']:.0f}× | "
            f"{r['max_error']:.1e}"
            if "dense_time_s" in r
            else "– | – | – | –"
        )
        lines.append(
            f"| {r['graph']} | {r['n']} | {r['E']} | {r['order']} | {r['probes']} | "
            f"{r['time_s']:.3g} | {r['peak_mib']:.0f} | {r['error_bound']:.1e} | {dense} |"
        )
    lines += [
        "",
        "| λmax | n | E | ours (s) | PyG (s) | ratio | ours | PyG |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in res["cases"]["lambda"]:
        lines.append(
            f"| {r['graph']} | {r['n']} | {r['E']} | {r['ours_s']:.3g} | {r['pyg_s']:.3g} | "
            f"{r['ratio']:.2f} | {r['ours']:.6f} | {r['pyg']:.6f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--dense-max", type=int, default=6400, help="largest n for the dense path")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    res = run(args.quick, args.dense_max)
    stem = "spectral-quick" if args.quick else "spectral"
    (args.out / f"{stem}.json").write_text(json.dumps(res, indent=1))
    (args.out / f"{stem}.md").write_text(markdown(res))
    print(markdown(res))


if __name__ == "__main__":
    main()
