"""Training throughput of seeds one at a time (the sparse model, as ``bench count`` trains
it) against seeds stacked (:mod:`benchmarks.paper.stacked`), per model: GNNML3 at the
authors' batch 10 (the default), and the other models that stack at Table 2's batch 64.

Both train on randomgraph's triangle targets with Adam; each arm runs ``--steps`` steps of
``K`` seeds (one at a time: K models, a step each; stacked: one step of the K-seed model),
interleaved over ``--repeats``, one thread, and the min over repeats is kept. The result is
seconds per seed-step and per seed-epoch (the train split's steps), and their ratio::

    python -m benchmarks.perf.stacked --seeds 10 --steps 40 --out results/perf/stacked.json
    python -m benchmarks.perf.stacked --models mlp,gcn,chebnet,gat --batch-size 64 --seeds 7 \
        --out results/perf/stacked-models.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch


def measure(
    seeds: int, steps: int, repeats: int, batch_size: int = 10, model: str = "gnnml3"
) -> dict[str, Any]:
    """Seconds per seed-step of ``model``, one at a time and stacked (min over ``repeats``)."""
    import os

    from benchmarks.paper.count import count_targets
    from benchmarks.paper.models import counting_features, make_model
    from benchmarks.paper.stacked import stack_models
    from benchmarks.paper.train import GraphSet, adam, seed_everything, squared_error
    from matlang.runtime import datasets
    from matlang.runtime.preprocess import PreprocessCache

    data = datasets.load_randomgraph()
    targets = count_targets(data, "triangle")
    graphs = counting_features(data.graphs)
    y = torch.tensor(targets.values / targets.scale, dtype=torch.float32).reshape(-1, 1)
    train = GraphSet(graphs, y).subset(np.asarray(data.train_idx))
    cache = PreprocessCache(max_entries=None)
    models = []
    for s in range(seeds):
        seed_everything(s)
        models.append(make_model(model, 2, 1, protocol="count", cache=cache))
    opts = [adam(m.parameters(), 1e-3) for m in models]
    stack = stack_models(models)
    stack_opt = adam(stack.params.values(), 1e-3)
    dense = stack.densify(train)
    gen = torch.Generator().manual_seed(0)

    def alone() -> float:
        t = time.perf_counter()
        for model, opt in zip(models, opts, strict=True):
            for batch, target, _ in itertools.islice(train.batches(batch_size, gen), steps):
                opt.zero_grad()
                squared_error(model(batch), target).backward()
                opt.step()
        return time.perf_counter() - t

    def stacked() -> float:
        t = time.perf_counter()
        orders = torch.stack([torch.randperm(len(train), generator=gen) for _ in range(seeds)])
        for k in range(steps):
            batch = dense.take(orders[:, k * batch_size : (k + 1) * batch_size])
            stack_opt.zero_grad()
            torch.square(stack.forward(batch) - batch.y).sum().backward()
            stack_opt.step()
        return time.perf_counter() - t

    alone(), stacked()  # warm-up: supports cached, first-call costs paid
    times: dict[str, list[float]] = {"alone": [], "stacked": []}
    for _ in range(repeats):
        times["alone"].append(alone())
        times["stacked"].append(stacked())
    per_step = {k: min(v) / (seeds * steps) for k, v in times.items()}
    epoch_steps = -(-len(train) // batch_size)
    what = "4 layers, learned supports" if model == "gnnml3" else "4 layers"
    return {
        "model": f"{model} (count configuration, {what})",
        "graphs": f"randomgraph train split ({len(train)} graphs of 10 nodes)",
        "batch_size": batch_size,
        "seeds": seeds,
        "steps": steps,
        "repeats": repeats,
        "threads": torch.get_num_threads(),
        "seconds_per_seed_step": per_step,
        "seconds_per_seed_epoch": {k: v * epoch_steps for k, v in per_step.items()},
        "speedup": per_step["alone"] / per_step["stacked"],
        "all_seconds": times,
        "load": os.getloadavg()[0],
    }


def markdown(res: dict[str, Any]) -> str:
    """The result as a Markdown table."""
    step, epoch = res["seconds_per_seed_step"], res["seconds_per_seed_epoch"]
    load = f", load {res['load']:.1f}" if "load" in res else ""
    return "\n".join(
        [
            f"{res['model'].split()[0]}, batch {res['batch_size']}, {res['seeds']} seeds, "
            f"{res['steps']} steps, min of {res['repeats']}, {res['threads']} thread(s){load}",
            "",
            "| training | ms per seed-step | s per seed-epoch |",
            "|---|---|---|",
            f"| one seed at a time (sparse) | {step['alone'] * 1e3:.1f} | {epoch['alone']:.2f} |",
            f"| {res['seeds']} seeds stacked (dense) | {step['stacked'] * 1e3:.1f} | "
            f"{epoch['stacked']:.2f} |",
            "",
            f"Stacked: {res['speedup']:.2f}× the seeds per CPU second.",
            "",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.perf.stacked", description=__doc__)
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=10)
    p.add_argument("--models", default="gnnml3", help="comma list (one result each)")
    p.add_argument("--out", type=Path, help="JSON file (a .md beside it)")
    args = p.parse_args(argv)
    if args.out is not None and args.out.exists():
        raise SystemExit(f"{args.out} exists: not replaced (remove it or pick another --out)")
    torch.set_num_threads(1)
    results = []
    for model in [m for m in args.models.split(",") if m]:
        results.append(measure(args.seeds, args.steps, args.repeats, args.batch_size, model))
        print(markdown(results[-1]))
    if args.out is not None:
        one = results[0] if len(results) == 1 else results
        args.out.write_text(json.dumps(one, indent=1) + "\n")
        args.out.with_suffix(".md").write_text("\n".join(markdown(r) for r in results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
