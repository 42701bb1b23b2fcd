"""SentenceConv on a new batch every call (a DataLoader step), forward + backward, against
GINConv on the same tensors; the layer with its per-graph support cache switched off (the
supports computed on every new batch, as before the cache), and with the symmetric-support
transpose switched off (the general path: the transpose converted to CSR), interleaved in one
process, one thread.

usage: python -m benchmarks.perf.fresh_layer [--graphs 128] [--d 16] [--repeats 15]
                                             [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import time
from typing import Any

for _k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_k, "1")

import torch  # noqa: E402

SUPPORTS = ["I", "A", "A ⊙ A²"]


def _batch(graphs: int, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    from benchmarks.perf.workloads import sparse_erdos_renyi

    parts, off = [], 0
    for g in range(graphs):
        parts.append(sparse_erdos_renyi(n, 10.0, seed=g) + off)
        off += n
    return torch.cat(parts, 1), torch.arange(graphs).repeat_interleave(n)


def main() -> None:
    from unittest import mock

    from torch_geometric.nn import GINConv

    from matlang.compiler.layers import stage as st
    from matlang.nn import SentenceConv

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graphs", type=int, default=128)
    ap.add_argument("--n", type=int, default=25)
    ap.add_argument("--d", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    torch.set_num_threads(1)
    ei, batch = _batch(args.graphs, args.n)
    x = torch.randn(batch.numel(), args.d)
    conv = SentenceConv(args.d, args.d, SUPPORTS)
    gin = GINConv(torch.nn.Linear(args.d, args.d), train_eps=True)

    def step(layer: Any, use_batch: bool) -> Any:
        def call(e: torch.Tensor) -> None:
            xi = x.detach().requires_grad_(True)
            out = layer(xi, e, batch) if use_batch else layer(xi, e)
            out.sum().backward()

        return call

    general = property(lambda self: False)

    def conv_general(e: torch.Tensor) -> None:
        with mock.patch.object(st.Stage, "symmetric_sentences", general):
            step(conv, True)(e)  # the same compiled stage, its supports built the general way

    stage_obj = conv._support_stage
    cache = stage_obj.cache

    def conv_uncached(e: torch.Tensor) -> None:
        stage_obj.cache = None  # supports computed on the new batch (the sentences' own
        try:  # per-graph constant caches still serve A ⊙ A²)
            step(conv, True)(e)
        finally:
            stage_obj.cache = cache

    fns = {
        "sentenceconv": step(conv, True),
        "sentenceconv.uncached": conv_uncached,
        "sentenceconv.general": conv_general,
        "ginconv": step(gin, False),
    }
    times: dict[str, list[float]] = {k: [] for k in fns}
    rng = random.Random(0)
    for r in range(args.repeats + 2):
        order = list(fns)
        rng.shuffle(order)
        for k in order:
            e = ei.clone()  # a new batch: nothing remembered
            t = time.perf_counter()
            fns[k](e)
            if r >= 2:
                times[k].append(time.perf_counter() - t)
    mins = {k: min(v) for k, v in times.items()}
    row = {
        "graphs": args.graphs,
        "n": args.n,
        "d": args.d,
        "supports": SUPPORTS,
        "min_s": mins,
        "median_s": {k: statistics.median(v) for k, v in times.items()},
        "ratio_gin": mins["sentenceconv"] / mins["ginconv"],
        "ratio_general_gin": mins["sentenceconv.general"] / mins["ginconv"],
        "ratio_uncached_gin": mins["sentenceconv.uncached"] / mins["ginconv"],
        "load": os.getloadavg()[0],
    }
    print(
        f"{args.graphs}×ER({args.n}) d={args.d}: SentenceConv {mins['sentenceconv'] * 1e3:.2f} ms"
        f" (uncached {mins['sentenceconv.uncached'] * 1e3:.2f} ms,"
        f" general path {mins['sentenceconv.general'] * 1e3:.2f} ms), GINConv "
        f"{mins['ginconv'] * 1e3:.2f} ms: {row['ratio_gin']:.2f}× "
        f"(uncached {row['ratio_uncached_gin']:.2f}×, general {row['ratio_general_gin']:.2f}×),"
        f" load {row['load']:.1f}"
    )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"threads": 1, "rows": [row]}, f, indent=1)


if __name__ == "__main__":
    main()
