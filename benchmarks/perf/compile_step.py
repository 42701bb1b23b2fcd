"""``torch.compile(model, dynamic=True)`` against eager for a SentenceGNN training step on MUTAG
batches of 32 graphs: the first compiled call (compilation included), then
the steady-state step time of both, one thread, CPU.

usage: python -m benchmarks.perf.compile_step [--epochs 3] [--backend inductor]
                                              [--sentences "I;A;A ⊙ A²"]

Prints one line per measurement; writes no file.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any

for _k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_k, "1")

import torch  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    from torch_geometric.loader import DataLoader

    from matlang.nn import SentenceGNN
    from matlang.runtime.datasets import load_tu
    from matlang.runtime.pyg import graph_to_data

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--backend", default="inductor")
    ap.add_argument("--sentences", default="I;A;A ⊙ A²")
    ap.add_argument("--hidden", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=3, help="passes over the batches, per mode")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    tu = load_tu("mutag")
    data = [graph_to_data(g, int(y)) for g, y in zip(tu.graphs, tu.y)]
    batches = list(DataLoader(data, batch_size=32, shuffle=True,
                              generator=torch.Generator().manual_seed(0)))
    sentences = args.sentences.split(";")

    def make() -> tuple[torch.nn.Module, torch.optim.Optimizer]:
        torch.manual_seed(0)
        model = SentenceGNN(7, 2, sentences, hidden=args.hidden, layers=3)
        return model, torch.optim.Adam(model.parameters(), lr=1e-3)

    def step(model: Any, opt: torch.optim.Optimizer, b: Any) -> float:
        t = time.perf_counter()
        opt.zero_grad()
        out = model(b.x, b.edge_index, b.batch, b.num_graphs)
        torch.nn.functional.cross_entropy(out, b.y).backward()
        opt.step()
        return time.perf_counter() - t

    eager, eager_opt = make()
    model, opt = make()
    compiled = torch.compile(model, dynamic=True, backend=args.backend)
    first = step(compiled, opt, batches[0])
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, backend "
          f"{args.backend}, sentences {sentences}, {len(batches)} batches of ≤ 32 graphs")
    print(f"compiled first step (compilation included): {first:.1f} s")
    later = [step(compiled, opt, b) for b in batches[1:3]]
    print(f"compiled steps 2-3 (new batch shapes): {', '.join(f'{t:.2f}' for t in later)} s")
    for e in range(args.epochs):
        te = sum((step(eager, eager_opt, b) for b in batches), 0.0)
        tc = sum((step(compiled, opt, b) for b in batches), 0.0)
        print(f"epoch {e + 1}: eager {te:.3f} s, compiled {tc:.3f} s ({te / tc:.2f}x)")
    per: dict[str, list[float]] = {"eager": [], "compiled": []}
    for _ in range(args.repeats):
        for b in batches:
            per["eager"].append(step(eager, eager_opt, b))
            per["compiled"].append(step(compiled, opt, b))
    med = {k: statistics.median(v) * 1e3 for k, v in per.items()}
    print(f"median step: eager {med['eager']:.2f} ms, compiled {med['compiled']:.2f} ms "
          f"({med['eager'] / med['compiled']:.2f}x)")


if __name__ == "__main__":
    main()
