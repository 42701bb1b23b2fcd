"""Seconds per training epoch over a shuffled loader: graph constants from the per-graph cache
(:mod:`compiler.constant_cache`) against computed on every new batch.

The model is ``bench count``'s ``sentence`` model (four ``SentenceConv`` layers with the supports
``I, A/3, A ⊙ A²/4, A ⊙ A³/30``) on randomgraph's training graphs; every epoch reshuffles them
into new ``Batch`` objects, as ``benchmarks.paper.train`` does. After one epoch that fills the
caches, each training step (forward, backward, Adam) is timed on its own batch object with the
cache on and off, interleaved, and an epoch is the sum over its batches of the min over
``--repeats`` (one thread). A second table times the graph-constant stage alone per batch
(assembled from the cache against computed)::

    python -m benchmarks.perf.epochs --graphs 1000 --batch-size 128 --repeats 3 --out r.json
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import numpy as np
import torch


def _epochs(graphs: int, batch_size: int, repeats: int) -> dict[str, Any]:
    from benchmarks.paper.models import counting_features, make_model
    from matlang.compiler.layers.stage import stages_of
    from matlang.runtime import datasets
    from matlang.runtime.batch import Batch

    data = datasets.load_randomgraph()
    feats = counting_features(data.graphs)
    train = [feats[i] for i in np.asarray(data.train_idx)[:graphs]]
    torch.manual_seed(0)
    net = make_model("sentence", 2, 1, protocol="count", sentences=["tr(A^3)/6"])
    opt = torch.optim.Adam(net.parameters(), 1e-3)
    rng = np.random.default_rng(0)

    def step(b: Batch) -> float:
        t = time.perf_counter()
        opt.zero_grad()
        net(b).pow(2).mean().backward()
        opt.step()
        return time.perf_counter() - t

    def shuffled() -> list[list[Any]]:
        order = rng.permutation(len(train))
        return [
            [train[i] for i in order[s : s + batch_size]] for s in range(0, len(train), batch_size)
        ]

    def modules() -> list[Any]:
        return [m for st in stages_of(net) for m in st._modules.values()]

    t0 = time.perf_counter()
    for members in shuffled():
        step(Batch.from_graphs(members, dtype=torch.float32))
    first = time.perf_counter() - t0
    caches = {id(m): m.cache for m in modules()}
    # the layers' own per-graph supports (compiler.layers.support_cache), off with the rest
    caches.update({id(st): st.cache for st in stages_of(net)})
    best: dict[str, dict[int, float]] = {"cached": {}, "computed": {}}
    for _ in range(repeats):
        for i, members in enumerate(shuffled()):
            for mode, store in best.items():
                for m in [*modules(), *stages_of(net)]:
                    m.cache = caches[id(m)] if mode == "cached" else None
                store[i] = min(
                    store.get(i, 1e9), step(Batch.from_graphs(members, dtype=torch.float32))
                )
    for m in [*modules(), *stages_of(net)]:
        m.cache = caches[id(m)]
    cached, computed = sum(best["cached"].values()), sum(best["computed"].values())
    hits = sum(c.hits for c in caches.values() if c is not None)
    return {
        "graphs": len(train),
        "batch_size": batch_size,
        "first_epoch_s": first,
        "epoch_cached_s": cached,
        "epoch_computed_s": computed,
        "speedup": computed / cached,
        "cache_hits": hits,
    }


def _stage(
    graphs: int, batch_size: int, repeats: int, sentences: list[str]
) -> list[dict[str, Any]]:
    from matlang.compiler.api import compile as compile_sentence
    from matlang.compiler.constant_cache import CachedStage, run_stage
    from matlang.compiler.constants import graphs_of
    from matlang.runtime import datasets
    from matlang.runtime.batch import Batch
    from matlang.runtime.masks import prepared_edges
    from matlang.runtime.preprocess import PreprocessCache

    gs = datasets.load_randomgraph().graphs[:graphs]
    rng = np.random.default_rng(0)

    def shuffled() -> list[Any]:
        order = rng.permutation(len(gs))
        out = []
        for s in range(0, len(gs), batch_size):
            b = Batch.from_graphs([gs[i] for i in order[s : s + batch_size]])
            b.validate()
            e, w = prepared_edges(b)
            out.append(graphs_of(b, e, w))
        return out

    rows = []
    for text in sentences:
        m = compile_sentence(text, dtype="float64")
        ops = set(m._stages.operators.values())
        cs = CachedStage(m._stages.graphblas, ops, PreprocessCache(), (("bench", text),))
        for g in shuffled():
            cs.run(g)
        a: dict[int, float] = {}
        b: dict[int, float] = {}
        for _ in range(repeats):
            for i, g in enumerate(shuffled()):
                t = time.perf_counter()
                cs.run(g)
                a[i] = min(a.get(i, 1e9), time.perf_counter() - t)
                t = time.perf_counter()
                run_stage(m._stages.graphblas, g, ops)
                b[i] = min(b.get(i, 1e9), time.perf_counter() - t)
        sa, sb = sum(a.values()) / len(a), sum(b.values()) / len(b)
        rows.append(
            {
                "sentence": text,
                "assembled_ms": 1e3 * sa,
                "computed_ms": 1e3 * sb,
                "speedup": sb / sa,
            }
        )
    return rows


STAGE_SENTENCES = ["A ⊙ A² / 4", "A ⊙ A³ / 30", "tr(A^3)/6", "(A ⊙ A²)² 𝟏", "input h; (A ⊙ A²) h"]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--graphs", type=int, default=1000)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--out", default=None, help="also write the results as JSON here")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    ep = _epochs(args.graphs, args.batch_size, args.repeats)
    print(
        f"count `sentence` model, {ep['graphs']} graphs, batches of {ep['batch_size']}: "
        f"first epoch {ep['first_epoch_s']:.2f} s; then {ep['epoch_cached_s']:.3f} s/epoch "
        f"with cached constants, {ep['epoch_computed_s']:.3f} s computed ({ep['speedup']:.2f}×)"
    )
    st = _stage(args.graphs, args.batch_size, max(args.repeats, 3), STAGE_SENTENCES)
    print("| sentence | stage per batch, assembled (ms) | computed (ms) | computed / assembled |")
    print("|---|---|---|---|")
    for r in st:
        ms = f"{r['assembled_ms']:.2f} | {r['computed_ms']:.2f}"
        print(f"| {r['sentence']} | {ms} | {r['speedup']:.2f} |")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump({"epochs": ep, "stage": st}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
