"""PPGN on TU batches: padded per size bucket against padded to the batch's largest graph.

    python -m benchmarks.perf.ppgn_buckets            # writes results/perf/ppgn-buckets.json, .md

PPGN's layers cost O(n³) per graph once padded to n (dense n×n products per channel), so a
batch padded to its largest graph pays n_max³ for every graph. :func:`runtime.models.ppgn.
size_buckets` pads graphs of similar sizes together. Per dataset, ``--batches`` random
training batches of 32 graphs (the TU protocol's), forward + backward of the TU PPGN
(``bench tu``'s model, float32, 1 thread), both ways timed interleaved on the same batches
(min over ``--repeats``); the outputs are compared. Beside the times, the cost model: Σ over the
batch of the padded n³, relative to the graphs' own Σ n³, for bucketed and batch-padded
batches and for every graph padded to the dataset's largest (the authors' scripts: ``nmax``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm import tqdm

from benchmarks.records import PERF_DIR, provenance, write_json
from matlang.runtime.batch import Batch
from matlang.runtime.models.ppgn import size_buckets

#: PROTEINS is left out: with graphs of up to 620 nodes, one batch padded to its largest takes
#: minutes (its cost model alone: ``cost``).
DATASETS = ("mutag", "ptc", "enzymes")


def cost(sizes: list[int], padded: str, dataset_max: int) -> float:
    """Σ padded n³ of one batch: ``buckets``, ``batch`` (to its largest) or ``dataset``."""
    if padded == "dataset":
        return float(len(sizes) * dataset_max**3)
    if padded == "batch":
        return float(len(sizes) * max(sizes) ** 3)
    return float(sum(len(b) * max(sizes[i] for i in b) ** 3 for b in size_buckets(sizes)))


def measure(dataset: str, batches: int, repeats: int, seed: int) -> dict[str, Any]:
    from benchmarks.paper.tu import build
    from matlang.runtime.datasets import load_tu

    tu = load_tu(dataset)
    graphs = tu.graphs
    rng = np.random.default_rng(seed)
    in_dim = int(np.asarray(graphs[0].x).reshape(graphs[0].num_nodes, -1).shape[1])
    torch.manual_seed(seed)
    net = build("ppgn", in_dim, int(tu.y.max()) + 1)
    picks = [rng.choice(len(graphs), 32, replace=False) for _ in range(batches)]
    data = [Batch.from_graphs([graphs[i] for i in p], dtype=torch.float32) for p in picks]
    sizes = [[graphs[i].num_nodes for i in p] for p in picks]
    dataset_max = max(g.num_nodes for g in graphs)

    def run(buckets: bool) -> tuple[float, list[torch.Tensor]]:
        object.__setattr__(net.config, "buckets", buckets)  # frozen dataclass: same weights
        outs = []
        start = time.perf_counter()
        for b in data:
            net.zero_grad()
            out = net(b)
            out.sum().backward()
            outs.append(out.detach())
        return time.perf_counter() - start, outs

    times: dict[str, list[float]] = {"buckets": [], "batch": []}
    outs: dict[str, list[torch.Tensor]] = {}
    run(True)  # warm-up
    for _ in range(repeats):
        for way, flag in (("batch", False), ("buckets", True)):
            t, outs[way] = run(flag)
            times[way].append(t / batches)
    object.__setattr__(net.config, "buckets", True)
    diff = max(float((a - b).abs().max()) for a, b in zip(outs["buckets"], outs["batch"]))
    scale = max(float(b.abs().max()) for b in outs["batch"])
    own = sum(float(sum(n**3 for n in s)) for s in sizes)
    model = {
        way: sum(cost(s, way, dataset_max) for s in sizes) / own
        for way in ("buckets", "batch", "dataset")
    }
    best = {k: min(v) for k, v in times.items()}
    return {
        "dataset": dataset,
        "graphs_per_batch": 32,
        "batches": batches,
        "mean_nodes": float(np.mean([g.num_nodes for g in graphs])),
        "max_nodes": dataset_max,
        "seconds_per_batch": best,
        "speedup": best["batch"] / best["buckets"],
        "padded_cost_over_own": model,
        "max_abs_difference": diff,
        "output_scale": scale,
        "repeats": repeats,
    }


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = [
        "# PPGN on TU batches: size buckets against one padded tensor",
        "",
        "Forward + backward of `bench tu`'s PPGN on random batches of 32 graphs (float32, "
        "1 thread; min over repeats, the two ways interleaved). Cost model: Σ padded n³ over "
        "the graphs' own Σ n³ (buckets / padded to the batch's largest / to the dataset's "
        "largest, as the authors' scripts pad).",
        "",
        "| dataset | nodes mean / max | s per batch, buckets | s per batch, padded | speedup "
        "| cost: buckets / batch / dataset | max abs diff |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        t, m = r["seconds_per_batch"], r["padded_cost_over_own"]
        lines.append(
            f"| {r['dataset']} | {r['mean_nodes']:.1f} / {r['max_nodes']} | {t['buckets']:.3f} "
            f"| {t['batch']:.3f} | **{r['speedup']:.1f}×** | {m['buckets']:.2f} / "
            f"{m['batch']:.1f} / {m['dataset']:.0f} | {r['max_abs_difference']:.1e} "
            f"(of {r['output_scale']:.1e}) |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--datasets", default=",".join(DATASETS))
    p.add_argument("--batches", type=int, default=4)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=str(PERF_DIR / "ppgn-buckets"))
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    start = time.perf_counter()
    rows = []
    for ds in tqdm(args.datasets.split(","), desc="ppgn buckets", disable=args.no_progress):
        rows.append(measure(ds, args.batches, args.repeats, args.seed))
    out = Path(args.out)
    record = provenance({"bench": "ppgn-buckets", "rows": rows}, start)
    record["command"] = "python -m benchmarks.perf.ppgn_buckets " + " ".join(
        sys.argv[1:] if argv is None else argv
    )
    write_json(out.with_suffix(".json"), record)
    out.with_suffix(".md").write_text(markdown(rows), encoding="utf-8")
    print(markdown(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
