"""The GPU table: compiled sentences and sentence layers against hand-written torch
and PyG, forward + backward, on one device.

``python -m benchmarks.perf.gpu [--device cuda|cpu] [--quick] [--out DIR] [--repeats R]``

Cases (``d = 64`` channels, float32, every contestant in this process, the median of ``R``
timed repeats after warm-up, each repeat synchronised with the device):

* ``node-*``: ``compile("input h; relu(A h) ⊙ (A² h)")`` on the same PyG-like batch called
  again and again, vs the same maths written with torch's CSR products
  (``relu(A h) ⊙ (A (A h))``), on ER graphs (``n = 10⁵`` and ``10⁶``, average degree 10) and
  256 graphs of 25 nodes;
* ``conv-IA``: ``SentenceConv(64, 64, ["I", "A"])`` vs PyG's ``GraphConv`` (the same maths,
  weights copied) on 256 × 25 nodes;
* ``conv-L3-cached``: ``SentenceConv(64, 64, ["I", "A", "A ⊙ A²"])`` on a batch seen before vs
  hand-written torch with ``A ⊙ A²`` precomputed (weights shared);
* ``conv-L3-fresh``: the same layer given a new ``edge_index`` tensor every call (a loader's
  first epoch: the support is computed every call) vs the cached call plus the GPU-native
  constant (torch's CSR ``A @ A`` read at A's entries);
* ``again-*``: a compiled module's forward on the same PyG-like object called again vs on a
  project ``Batch`` validated before (the target: at most 1.1×);
* ``epoch``: ``SentenceGNN(["I", "A", "A ⊙ A²"])`` vs a PyG GIN of the same width and depth,
  three epochs over 4096 graphs of 25 nodes in batches of 128, each epoch's batches new tensors
  (a shuffled loader), Adam steps included.

Each case checks that its contestants agree (same values up to float32 rounding) before it
is timed; ``--quick`` shrinks every size so that ``--device cpu --quick`` runs in seconds.
Writes ``gpu.json`` and ``gpu.md`` under ``--out`` (default ``results/perf/``) with the device's
name, torch's version and the git commit.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch
from torch import Tensor

from benchmarks.records import PERF_DIR

D = 64


# --------------------------------------------------------------------------- graphs


def er_edges(n: int, degree: float, seed: int, device: torch.device) -> Tensor:
    """An Erdős–Rényi-like simple undirected graph, ``(2, E)`` sorted row-major, both
    directions, average degree about ``degree`` (pairs drawn uniformly, repeats dropped)."""
    g = torch.Generator(device="cpu").manual_seed(seed)
    m = int(n * degree / 2)
    i = torch.randint(0, n, (m,), generator=g)
    j = torch.randint(0, n, (m,), generator=g)
    keep = i != j
    i, j = i[keep].to(device), j[keep].to(device)
    keys = torch.unique(torch.cat([i * n + j, j * n + i]))
    return torch.stack([keys // n, keys % n])


def small_graphs(count: int, size: int, seed: int, device: torch.device) -> tuple[Tensor, Tensor]:
    """``count`` ER graphs of ``size`` nodes (p = 0.2) as one block-diagonal batch:
    ``(edge_index, batch vector)``."""
    g = torch.Generator(device="cpu").manual_seed(seed)
    upper = torch.triu(torch.rand(count, size, size, generator=g) < 0.2, 1)
    adj = upper | upper.transpose(1, 2)
    k, i, j = torch.nonzero(adj, as_tuple=True)
    edges = torch.stack([k * size + i, k * size + j]).to(device)
    vec = torch.arange(count, device=device).repeat_interleave(size)
    return edges, vec


def data(edges: Tensor, n: int, vec: Tensor | None, x: Tensor) -> Any:
    """A PyG-like batch (duck-typed: what PyG's ``Data``/``Batch`` give a layer)."""
    if vec is None:
        return SimpleNamespace(edge_index=edges, x=x, num_nodes=n)
    g = int(vec[-1]) + 1 if vec.numel() else 0
    ptr = torch.zeros(g + 1, dtype=torch.int64, device=edges.device)
    ptr[1:] = torch.cumsum(torch.bincount(vec, minlength=g), 0)
    return SimpleNamespace(edge_index=edges, x=x, batch=vec, ptr=ptr, num_nodes=n, num_graphs=g)


def csr(edges: Tensor, n: int, values: Tensor | None = None) -> Tensor:
    from matlang.runtime.sparse import csr_matrix, row_pointers

    v = torch.ones(edges.shape[1], device=edges.device) if values is None else values
    return csr_matrix(row_pointers(edges[0], n), edges[1], v, (n, n))


def a_hadamard_a2(edges: Tensor, n: int) -> Tensor:
    """The GPU-native ``A ⊙ A²`` on A's entries: torch's CSR ``A @ A`` read at A's keys."""
    a = csr(edges, n)
    a2 = torch.sparse.mm(a, a)
    crow, col = a2.crow_indices(), a2.col_indices()
    rows = torch.repeat_interleave(torch.arange(n, device=edges.device), crow[1:] - crow[:-1])
    k2 = rows * n + col
    k2, order = torch.sort(k2)
    v2 = a2.values()[order]
    ka = edges[0] * n + edges[1]
    pos = torch.searchsorted(k2, ka).clamp(max=max(k2.numel() - 1, 0))
    return torch.where(k2[pos] == ka, v2[pos], torch.zeros((), device=edges.device))


# --------------------------------------------------------------------------- timing


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(fn: Callable[[], Any], device: torch.device, repeats: int, warmup: int = 1) -> float:
    """Median seconds of ``fn()`` over ``repeats`` synchronised runs (after ``warmup``)."""
    for _ in range(warmup):
        fn()
    sync(device)
    times = []
    for _ in range(repeats):
        sync(device)
        t = time.perf_counter()
        fn()
        sync(device)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def fwd_bwd(model: Callable[[], Tensor], params: list[Tensor]) -> Callable[[], None]:
    def step() -> None:
        for p in params:
            p.grad = None
        model().sum().backward()

    return step


def agree(a: Tensor, b: Tensor, what: str) -> float:
    """The largest difference of two contestants' values relative to their scale; refuses a
    disagreement (a benchmark of two different computations is no benchmark)."""
    a, b = a.detach().double().cpu(), b.detach().double().cpu()
    scale = max(1.0, float(b.abs().max()) if b.numel() else 1.0)
    err = float((a - b).abs().max()) / scale if a.numel() else 0.0
    if not err <= 1e-4:
        raise AssertionError(f"{what}: contestants differ by {err:.3g} (relative)")
    return err


# --------------------------------------------------------------------------- cases


def node_case(name: str, edges: Tensor, n: int, vec: Tensor | None, dev: torch.device,
              repeats: int) -> dict[str, Any]:
    from matlang.compiler.api import compile

    x = torch.randn(n, D, device=dev, requires_grad=True)
    batch = data(edges, n, vec, x)
    model = compile("input h; relu(A h) ⊙ (A² h)").to(dev)
    a = csr(edges, n)

    def handwritten() -> Tensor:
        ah = torch.sparse.mm(a, x)
        return torch.relu(ah) * torch.sparse.mm(a, ah)

    err = agree(model(batch), handwritten(), name)
    ours = timed(fwd_bwd(lambda: model(batch), [x]), dev, repeats)
    peer = timed(fwd_bwd(handwritten, [x]), dev, repeats)
    return row(name, "compiled node sentence", ours, "torch.sparse CSR, hand-written", peer,
               n=n, edges=int(edges.shape[1]), max_rel_diff=err,
               constant_stage=model.stage_runs)


def again_case(n: int, dev: torch.device, repeats: int) -> dict[str, Any]:
    """A module called again on the same PyG-like object vs on a project Batch validated
    before (the target: at most 1.1x): what the layout memo saves."""
    from matlang.compiler.api import compile
    from matlang.runtime.batch import as_batch

    x = torch.randn(n, D, device=dev)
    batch = data(er_edges(n, 10, 5, dev), n, None, x)
    validated = as_batch(batch)
    model = compile("input h; relu(A h) ⊙ (A² h)").to(dev)
    err = agree(model(batch), model(validated), f"again-{n}")
    with torch.no_grad():
        ours = timed(lambda: model(batch), dev, repeats)
        peer = timed(lambda: model(validated), dev, repeats)
    return row(f"again-n{n}", "forward on the same PyG-like object, called again", ours,
               "forward on a validated project Batch", peer, n=n, max_rel_diff=err,
               constant_stage=model.stage_runs)


def _weight_and_bias(conv: Any) -> tuple[Tensor, Tensor]:
    """A SentenceConv's support weights and bias (both present for the layers timed here)."""
    assert isinstance(conv.weight, Tensor) and isinstance(conv.bias, Tensor)
    return conv.weight, conv.bias


def conv_ia_case(name: str, edges: Tensor, n: int, vec: Tensor, dev: torch.device,
                 repeats: int) -> dict[str, Any]:
    from matlang.nn import SentenceConv

    x = torch.randn(n, D, device=dev, requires_grad=True)
    ours = SentenceConv(D, D, ["I", "A"]).to(dev)
    weight, bias = _weight_and_bias(ours)
    with torch.no_grad():
        bias.normal_()
    try:
        from torch_geometric.nn import GraphConv
    except ImportError:
        peer_name = "GraphConv's maths in torch (PyG not installed)"
        a = csr(edges, n)
        w = weight.detach().clone().requires_grad_(True)
        b = bias.detach().clone().requires_grad_(True)

        def peer_fn() -> Tensor:
            return x @ w[0] + torch.sparse.mm(a, x @ w[1]) + b
        peer_params = [x, w, b]
    else:
        peer_name = "PyG GraphConv"
        conv = GraphConv(D, D).to(dev)
        with torch.no_grad():
            conv.lin_root.weight.copy_(weight[0].T)
            conv.lin_rel.weight.copy_(weight[1].T)
            conv.lin_rel.bias.copy_(bias)

        def peer_fn() -> Tensor:
            return conv(x, edges)
        peer_params = [x, *conv.parameters()]
    err = agree(ours(x, edges, vec), peer_fn(), name)
    t_ours = timed(fwd_bwd(lambda: ours(x, edges, vec), [x, *ours.parameters()]), dev, repeats)
    t_peer = timed(fwd_bwd(peer_fn, peer_params), dev, repeats)
    return row(name, 'SentenceConv(64, 64, ["I", "A"])', t_ours, peer_name, t_peer, n=n,
               edges=int(edges.shape[1]), max_rel_diff=err)


def conv_l3_cases(tag: str, edges: Tensor, n: int, dev: torch.device,
                  repeats: int) -> list[dict[str, Any]]:
    from matlang.nn import SentenceConv

    x = torch.randn(n, D, device=dev, requires_grad=True)
    ours = SentenceConv(D, D, ["I", "A", "A ⊙ A²"]).to(dev)
    weight, bias = _weight_and_bias(ours)
    a = csr(edges, n)
    bvals = a_hadamard_a2(edges, n)
    bmat = csr(edges, n, bvals)
    w = weight.detach().clone().requires_grad_(True)
    b = bias.detach().clone().requires_grad_(True)

    def precomputed() -> Tensor:
        return x @ w[0] + torch.sparse.mm(a, x @ w[1]) + torch.sparse.mm(bmat, x @ w[2]) + b

    def with_constant() -> Tensor:  # the GPU-native constant computed on every call
        bm = csr(edges, n, a_hadamard_a2(edges, n))
        return x @ w[0] + torch.sparse.mm(a, x @ w[1]) + torch.sparse.mm(bm, x @ w[2]) + b

    err = agree(ours(x, edges), precomputed(), f"conv-L3-{tag}")
    params = [x, *ours.parameters()]
    cached = timed(fwd_bwd(lambda: ours(x, edges), params), dev, repeats)
    peer = timed(fwd_bwd(precomputed, [x, w, b]), dev, repeats)
    fresh = timed(fwd_bwd(lambda: ours(x, edges.clone()), params), dev, repeats)
    native = timed(fwd_bwd(with_constant, [x, w, b]), dev, repeats)
    return [
        row(f"conv-L3-cached-{tag}", 'SentenceConv(["I", "A", "A ⊙ A²"]), batch seen before',
            cached, "torch, A ⊙ A² precomputed", peer, n=n, edges=int(edges.shape[1]),
            max_rel_diff=err),
        row(f"conv-L3-fresh-{tag}", "same, a new edge_index every call", fresh,
            "torch: A ⊙ A² by CSR A @ A every call", native, n=n, edges=int(edges.shape[1]),
            cached_call_s=cached, target_s=2 * (cached + (native - peer))),
    ]


def epoch_case(graphs: int, size: int, batch_size: int, epochs: int, dev: torch.device,
               layers: int = 3) -> dict[str, Any]:
    from matlang.nn import SentenceGNN

    def batches(epoch: int) -> list[Any]:
        out = []
        for k in range(graphs // batch_size):
            e, v = small_graphs(batch_size, size, 1000 * epoch + k, dev)
            n = batch_size * size
            x = torch.ones(n, 1, device=dev)
            out.append(data(e, n, v, x))
        return out

    ours = SentenceGNN(1, 2, ["I", "A", "A ⊙ A²"], hidden=D, layers=layers).to(dev)
    peer, peer_name = _gin(layers, dev)

    def run(model: Any, call: Callable[[Any, Any], Tensor]) -> list[float]:
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        times = []
        for epoch in range(epochs):
            bs = batches(epoch)  # new tensors each epoch, made before the clock starts
            sync(dev)
            t = time.perf_counter()
            for b in bs:
                opt.zero_grad()
                call(model, b).square().mean().backward()
                opt.step()
            sync(dev)
            times.append(time.perf_counter() - t)
        return times

    t_ours = run(ours, lambda m, b: m(b))
    t_peer = run(peer, lambda m, b: m(b.x, b.edge_index, b.batch, b.num_graphs))
    return {
        "case": f"epoch-{graphs}x{size}",
        "ours": f"SentenceGNN([I, A, A ⊙ A²]), hidden {D}, {layers} layers",
        "peer": peer_name,
        "ours_s": t_ours,
        "peer_s": t_peer,
        "ratio": [a / b for a, b in zip(t_ours, t_peer)],
        "graphs": graphs,
        "batch_size": batch_size,
    }


def _gin(layers: int, dev: torch.device) -> tuple[torch.nn.Module, str]:
    from torch import nn

    try:
        from torch_geometric.nn import GINConv, global_add_pool
    except ImportError:
        GINConv = None  # noqa: N806

    class GIN(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            widths = [1] + [D] * layers
            mlps = [nn.Sequential(nn.Linear(a, b), nn.ReLU(), nn.Linear(b, b))
                    for a, b in zip(widths[:-1], widths[1:])]
            self.mlps = nn.ModuleList(mlps)
            self.convs = nn.ModuleList(GINConv(m) for m in mlps) if GINConv else None
            self.head = nn.Sequential(nn.Linear(D * layers, D), nn.ReLU(), nn.Linear(D, 2))

        def forward(self, x: Tensor, edge_index: Tensor, batch: Tensor, g: int) -> Tensor:
            outs = []
            for k, mlp in enumerate(self.mlps):
                if self.convs is not None:
                    x = torch.relu(self.convs[k](x, edge_index))
                else:  # GIN's maths: MLP(x + Σ neighbours)
                    agg = torch.zeros_like(x).index_add_(0, edge_index[0], x[edge_index[1]])
                    x = torch.relu(mlp(x + agg))
                outs.append(torch.zeros(g, x.shape[1], device=x.device).index_add_(0, batch, x)
                            if self.convs is None else global_add_pool(x, batch, g))
            return self.head(torch.cat(outs, 1))

    name = "PyG GIN" if GINConv else "GIN's maths in torch (PyG not installed)"
    return GIN().to(dev), name


def row(case: str, ours: str, t_ours: float, peer: str, t_peer: float, **extra: Any) -> dict:
    return {"case": case, "ours": ours, "peer": peer, "ours_s": t_ours, "peer_s": t_peer,
            "ratio": t_ours / t_peer, **extra}


# --------------------------------------------------------------------------- main


def run_all(device: str, quick: bool, repeats: int) -> list[dict[str, Any]]:
    dev = torch.device(device)
    big = [500, 2_000] if quick else [100_000, 1_000_000]
    count, size = (8, 25) if quick else (256, 25)
    rows: list[dict[str, Any]] = []
    for n in big:
        rows.append(node_case(f"node-er{n}", er_edges(n, 10, 0, dev), n, None, dev, repeats))
    e, v = small_graphs(count, size, 1, dev)
    rows.append(node_case(f"node-{count}x{size}", e, count * size, v, dev, repeats))
    rows.append(conv_ia_case(f"conv-IA-{count}x{size}", e, count * size, v, dev, repeats))
    for n in reversed(big):
        rows += conv_l3_cases(f"er{n}", er_edges(n, 10, 2, dev), n, dev, repeats)
    for n in ([200] if quick else [1_000, 10_000]):
        rows.append(again_case(n, dev, max(repeats, 20)))
    graphs, bs = (32, 16) if quick else (4096, 128)
    rows.append(epoch_case(graphs, 25, bs, 3, dev))
    return rows


def markdown(record: dict[str, Any]) -> str:
    lines = [
        f"# GPU table: {record['device_name']}",
        "",
        f"torch {record['torch']}, commit {record['git_commit']}, d = {D}, forward + backward, "
        f"median of {record['repeats']} synchronised repeats"
        + (" (--quick sizes)" if record["quick"] else ""),
        "",
        "| case | matlang | s | peer | s | ratio |",
        "|---|---|---|---|---|---|",
    ]
    for r in record["rows"]:
        if isinstance(r["ratio"], list):
            t1 = " / ".join(f"{t:.3f}" for t in r["ours_s"])
            t2 = " / ".join(f"{t:.3f}" for t in r["peer_s"])
            ratio = " / ".join(f"{q:.2f}×" for q in r["ratio"])
        else:
            t1, t2, ratio = f"{r['ours_s'] * 1e3:.2f} ms", f"{r['peer_s'] * 1e3:.2f} ms", \
                f"{r['ratio']:.2f}×"
        lines.append(f"| {r['case']} | {r['ours']} | {t1} | {r['peer']} | {t2} | {ratio} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.perf.gpu", description=__doc__)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--quick", action="store_true", help="small sizes (seconds on a CPU)")
    parser.add_argument("--out", type=Path, default=PERF_DIR)
    parser.add_argument("--repeats", type=int, default=None)
    args = parser.parse_args(argv)
    dev = torch.device(args.device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        print("--device cuda: no GPU is visible to torch here", file=sys.stderr)
        return 2
    repeats = args.repeats or (3 if args.quick else 10)
    from benchmarks.records import git_commit, write_json

    rows = run_all(args.device, args.quick, repeats)
    record = {
        "bench": "gpu",
        "device": str(dev),
        "device_name": torch.cuda.get_device_name(dev) if dev.type == "cuda" else "CPU",
        "torch": torch.__version__,
        # a GPU machine gets a copy of the tree whose .git may be older than the tree: the
        # sender names the commit it sent (.ci/gpu passes MATLANG_SENT_COMMIT through)
        "git_commit": os.environ.get("MATLANG_SENT_COMMIT") or git_commit(),
        "quick": args.quick,
        "repeats": repeats,
        "rows": rows,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    write_json(args.out / "gpu.json", record)
    text = markdown(record)
    (args.out / "gpu.md").write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
