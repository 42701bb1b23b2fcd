"""GNNML3 preprocessing as users call it: ``build_model("gnnml3", 1, 1, task="node")`` on a PyG
``Data``, its default configuration (``"spectral"``: the paper's default supports, normalised
Laplacian and 5 bands, the configuration the spectral benchmark measures) beside the named
``"count"`` configuration (adjacency basis, 10 bands; the library's default before the
Laplacian's) and the dense
eigendecomposition of the default's supports.

usage: python -m benchmarks.perf.gnnml3_default [--graphs grid:10000,er:1000] [--repeats 3]
                                                [--json out.json]

One thread. Preprocessing = the first forward of a new model minus its second (cached) forward;
min over ``repeats`` new models, the configurations interleaved. ``dense`` (n ≤ 2000 only)
computes the default configuration's supports by the eigendecomposition.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import time
from typing import Any

for _k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_k, "1")

import torch  # noqa: E402


def _data(kind: str, n: int) -> Any:
    from torch_geometric.data import Data

    from benchmarks.perf.spectral import graph

    g = graph(kind, n)
    return Data(edge_index=g.edge_index, num_nodes=g.num_nodes, x=torch.ones(g.num_nodes, 1))


def _preprocess(config: Any, data: Any) -> float:
    """Seconds of preprocessing in the first forward of a new model."""
    from matlang.runtime.models import build_model

    model = build_model("gnnml3", 1, 1, config=config, task="node")
    with torch.no_grad():
        t = time.perf_counter()
        model(data)
        first = time.perf_counter() - t
        t = time.perf_counter()
        model(data)
        again = time.perf_counter() - t
    return first - again


def run(kind: str, n: int, repeats: int) -> dict[str, Any]:
    from benchmarks.paper.configs import register
    from matlang.runtime.models import resolve_config

    register()  # count
    data = _data(kind, n)
    default: Any = resolve_config("gnnml3")  # a GNNML3Config: what build_model uses
    configs: dict[str, Any] = {"default": default, "count": resolve_config("gnnml3", "count")}
    if data.num_nodes <= 2000:
        exact = dataclasses.replace(default.support, exact=True)
        configs["dense"] = dataclasses.replace(default, support=exact)
    times: dict[str, list[float]] = {k: [] for k in configs}
    for _ in range(repeats):
        for k, cfg in configs.items():
            times[k].append(_preprocess(cfg, data))
    row: dict[str, Any] = {
        "graph": kind,
        "n": int(data.num_nodes),
        "E": int(data.edge_index.shape[1]),
        "default_support": str(default.support),
        "count_support": str(configs["count"].support),
        "min_s": {k: min(v) for k, v in times.items()},
        "load": os.getloadavg()[0],
    }
    shown = "  ".join(f"{k} {v * 1e3:9.1f} ms" for k, v in row["min_s"].items())
    print(f"{kind}:{row['n']:<7} {shown}  (load {row['load']:.1f})", flush=True)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graphs", default="grid:10000,er:1000")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    torch.set_num_threads(1)
    rows = []
    for spec in args.graphs.split(","):
        kind, n = spec.split(":")
        rows.append(run(kind, int(n), args.repeats))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"threads": 1, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
