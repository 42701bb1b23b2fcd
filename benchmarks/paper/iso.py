"""Table 1's isomorphism test: random, untrained models (3 layers, sum readout, a linear map to
10 features); a pair of graphs is *undistinguished* when the L1 distance between its two
outputs is below ``tol`` (1e-3) for every seed. ``matlang bench iso`` runs :func:`bench`.
"""

from __future__ import annotations

import argparse
import copy
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn
from tqdm import tqdm

from benchmarks.paper.models import EVAL_BATCH, degree_features, describe_model, make_model
from benchmarks.paper.train import seed_everything
from matlang.errors import MatlangError
from matlang.graphs import Graph
from matlang.runtime.batch import Batch
from matlang.runtime.preprocess import PreprocessCache

#: ``config.dtype`` of a result file, per ``--dtype`` (the float64 text is the one files had
#: before the option existed, so they still take ``--append``).
DTYPE_NOTES = {
    "float64": "float64 (float32 rounding of large outputs exceeds tol)",
    "float32": "float32 (the authors' precision); every seed is also run with the same "
    "weights in float64 (same_weights_in_float64)",
}

#: Sentences the ``compiled`` model reads out in the isomorphism test: walks and closed walks
#: (L1, L2) and Hadamard products with A (L3), the operations the paper's Remarks 1–4 name.
ISO_SENTENCES: tuple[str, ...] = (
    "𝟏ᵀ A 𝟏",
    "𝟏ᵀ A^2 𝟏",
    "𝟏ᵀ A^3 𝟏",
    "tr(A^3)",
    "tr(A^4)",
    "tr(A^5)",
    "tr(A^6)",
    "𝟏ᵀ (A^2 ⊙ A^2) 𝟏",
    "𝟏ᵀ (A ⊙ A^2)^2 𝟏",
    "𝟏ᵀ ((A ⊙ A^2) A) 𝟏",
)


def _batches(graphs: Sequence[Graph], size: int, dtype: torch.dtype = torch.float32) -> list[Batch]:
    return [
        Batch.from_graphs(list(graphs[i : i + size]), dtype=dtype)
        for i in range(0, len(graphs), size)
    ]


@torch.no_grad()
def embed_graphs(model: nn.Module, batches: Sequence[Batch]) -> np.ndarray:
    """The model's output for every graph, ``(G, d)`` float64 (from the model's float32)."""
    model.eval()
    return torch.cat([model(b) for b in batches], 0).double().numpy()


def close_pairs(emb: np.ndarray, tol: float, chunk: int = 4_000_000) -> np.ndarray:
    """Every pair ``i < j`` with ``Σ_k |emb[i,k] − emb[j,k]| < tol``, as ``(P, 2)`` int64.

    No all-pairs tensor: an L1 distance below ``tol`` bounds every coordinate's difference, so
    after sorting by the coordinate of largest spread only the pairs inside a window of width
    ``tol`` on it are candidates; those are checked in chunks.
    """
    g = emb.shape[0]
    if g < 2:
        return np.zeros((0, 2), dtype=np.int64)
    axis = int(np.argmax(emb.max(0) - emb.min(0))) if emb.shape[1] else 0
    order = np.argsort(emb[:, axis], kind="stable")
    v = emb[order, axis]
    # window [i+1, hi[i]): v[j] − v[i] < tol
    hi = np.searchsorted(v, v + tol, side="left")
    counts = np.maximum(hi - np.arange(g) - 1, 0)
    found: list[np.ndarray] = []
    starts = np.flatnonzero(counts)
    lo = 0
    while lo < starts.size:
        # take whole rows until about `chunk` candidate pairs
        cum = np.cumsum(counts[starts[lo:]])
        hi_row = lo + max(1, int(np.searchsorted(cum, chunk, side="right")))
        rows = starts[lo:hi_row]
        c = counts[rows]
        left = np.repeat(rows, c)
        offs = np.arange(int(c.sum())) - np.repeat(np.cumsum(c) - c, c)
        right = left + 1 + offs
        a, b = order[left], order[right]
        keep = np.abs(emb[a] - emb[b]).sum(1) < tol
        found.append(np.stack([np.minimum(a, b)[keep], np.maximum(a, b)[keep]], 1))
        lo = hi_row
    if not found:
        return np.zeros((0, 2), dtype=np.int64)
    pairs = np.concatenate(found, 0).astype(np.int64)
    return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]


def still_close(emb: np.ndarray, pairs: np.ndarray, tol: float) -> np.ndarray:
    """The rows of ``pairs`` whose outputs are within ``tol`` (L1) in ``emb``."""
    if pairs.size == 0:
        return pairs
    return pairs[np.abs(emb[pairs[:, 0]] - emb[pairs[:, 1]]).sum(1) < tol]


@dataclass
class IsoResult:
    """Undistinguished pairs after every seed; ``remaining[k]`` after seeds ``0..k``."""

    pairs: int
    undistinguished: np.ndarray  # (U, 2)
    remaining: list[int]
    seconds: float
    model: dict[str, Any]
    #: with ``reference_dtype``: the same weights in that precision (see :func:`iso_test`)
    reference: dict[str, Any] | None = None


def iso_test(
    graphs: Sequence[Graph],
    model: str,
    *,
    seeds: int = 100,
    pairs: np.ndarray | None = None,
    tol: float = 1e-3,
    sentences: Sequence[str] = ISO_SENTENCES,
    batch_size: int | None = None,
    progress: bool = False,
    first_seed: int = 0,
    dtype: torch.dtype = torch.float64,
    dataset: str | None = None,
    reference_dtype: torch.dtype | None = None,
    options: dict[str, Any] | None = None,
) -> IsoResult:
    """Table 1's protocol: which pairs stay within ``tol`` (L1) over ``seeds`` random models.

    ``pairs``: the pairs to compare (EXP: ``(2k, 2k+1)``); ``None`` compares all pairs, found
    without an all-pairs tensor (:func:`close_pairs` on the first seed, then re-checked).
    Node features are :func:`degree_features`; the model maps each graph to 10 numbers.
    ``dataset`` (``graph8c``, ``sr25``, ``exp``) selects :data:`ISO_DATASET_OVERRIDES`;
    ``options`` replace fields of the model's configuration (say ``activation="tanh"``).
    The models run in float64 by default: in float32 the rounding of large outputs (GNNML3
    reaches ~1e5 on sr25) exceeds ``tol`` and would "distinguish" 3-WL-equivalent graphs.

    ``reference_dtype`` also runs every seed's model with the same weights cast to that
    precision (``copy.deepcopy(net).to(reference_dtype)``), keeps its own undistinguished
    pairs, and measures the rounding: the largest L1 distance between a graph's outputs in the
    two precisions (over the graphs still in some candidate pair: every graph on the first
    seed), and the largest output. :attr:`IsoResult.reference` holds the counts (only in
    ``dtype``, only in the reference, in both) and those measures.
    """
    start = time.perf_counter()
    feats = degree_features(graphs)
    in_dim = int(np.asarray(feats[0].x).shape[1]) if feats else 2
    size = batch_size or EVAL_BATCH.get(model.lower(), 1000)
    cache = PreprocessCache(max_entries=None)
    n = len(graphs)
    total = n * (n - 1) // 2 if pairs is None else int(len(pairs))
    candidates = None if pairs is None else np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    remaining: list[int] = []
    info: dict[str, Any] = {}
    # Graphs are embedded independently, so after the first seed only the graphs of candidate
    # pairs are embedded again (the batches shrink with the candidates).
    active = np.arange(n) if candidates is None else np.unique(candidates)
    batches = _batches([feats[i] for i in active], size, dtype)
    emb = np.zeros((n, 10))
    ref: dict[str, Any] | None = None
    if reference_dtype is not None:
        # the reference has its own candidates; it embeds the graphs of both sets
        ref_active = active
        ref_batches = _batches([feats[i] for i in ref_active], size, reference_dtype)
        emb_ref = np.zeros((n, 10))
        ref = {"candidates": None, "rounding_l1": [], "largest_output": [], "remaining": []}
    bar = tqdm(range(first_seed, first_seed + seeds), desc=f"iso {model}", disable=not progress)
    for seed in bar:
        seed_everything(seed)
        net = make_model(
            model,
            in_dim,
            10,
            protocol="iso",
            sentences=sentences,
            cache=cache,
            dtype=dtype,
            dataset=dataset,
            options=options,
        )
        if not info:
            info = describe_model(net)
        if candidates is not None and 2 * np.unique(candidates).size < active.size:
            active = np.unique(candidates)
            batches = _batches([feats[i] for i in active], size, dtype)
        emb[active] = embed_graphs(net, batches) if active.size else 0.0
        if not np.isfinite(emb).all():
            raise MatlangError(f"model {model!r} produced non-finite outputs (seed {seed})")
        if ref is not None:
            assert reference_dtype is not None
            if ref["candidates"] is not None:
                both = np.union1d(active, np.unique(ref["candidates"]))
                if 2 * both.size < ref_active.size:
                    ref_active = both
                    ref_batches = _batches([feats[i] for i in ref_active], size, reference_dtype)
            twin = copy.deepcopy(net).to(reference_dtype)
            emb_ref[ref_active] = embed_graphs(twin, ref_batches) if ref_active.size else 0.0
            # rounding on the graphs still in question (all of them on the first seed)
            diff = np.abs(emb_ref[active] - emb[active]).sum(1)
            ref["rounding_l1"].append(float(diff.max()) if diff.size else 0.0)
            ref["largest_output"].append(float(np.abs(emb_ref[ref_active]).max(initial=0.0)))
            ref["candidates"] = (
                close_pairs(emb_ref, tol)
                if ref["candidates"] is None
                else still_close(emb_ref, ref["candidates"], tol)
            )
            ref["remaining"].append(int(len(ref["candidates"])))
        candidates = (
            close_pairs(emb, tol) if candidates is None else still_close(emb, candidates, tol)
        )
        remaining.append(int(len(candidates)))
        bar.set_postfix(undistinguished=remaining[-1])
    und = candidates if candidates is not None else np.zeros((0, 2), dtype=np.int64)
    reference = None if ref is None else _compare(und, ref, reference_dtype)
    return IsoResult(total, und, remaining, time.perf_counter() - start, info, reference)


def _compare(und: np.ndarray, ref: dict[str, Any], dtype: torch.dtype | None) -> dict[str, Any]:
    """The undistinguished pairs of two precisions compared, and the rounding measured."""
    other = ref["candidates"]
    other = np.zeros((0, 2), dtype=np.int64) if other is None else other
    mine = {tuple(p) for p in und.tolist()}
    theirs = {tuple(p) for p in other.tolist()}
    return {
        "dtype": str(dtype).removeprefix("torch."),
        "undistinguished": len(theirs),
        "undistinguished_after_seed": ref["remaining"],
        "only_this_dtype": len(mine - theirs),
        "only_reference": len(theirs - mine),
        "both": len(mine & theirs),
        "max_rounding_l1": max(ref["rounding_l1"], default=0.0),
        "median_rounding_l1": float(np.median(ref["rounding_l1"])) if ref["rounding_l1"] else 0.0,
        "max_output": max(ref["largest_output"], default=0.0),
    }


# --------------------------------------------------------------------------- sentence banks

#: A sentence bank as a model: ``bank-L1|L2|L3-kK`` (every sentence up to K AST nodes,
#: :mod:`matlang.bank`) or ``bank-L3-rR`` (the refinement sentences, :mod:`matlang.refinement`).
BANK_MODEL = re.compile(r"bank-(L[123])-([kr])(\d+)$", re.IGNORECASE)


def bank_signatures(model: str, graphs: Sequence[Graph]) -> list[bytes]:
    """Per graph, the exact values of every sentence of the bank ``model`` (and the entry
    multisets its readouts see): two graphs the bank cannot tell apart have equal signatures."""
    from matlang import bank, refinement

    m = BANK_MODEL.match(model)
    if m is None:
        raise MatlangError(f"not a bank model: {model!r} (bank-L1|L2|L3-kK or bank-L3-rR)")
    fragment, kind, bound = m.group(1).upper(), m.group(2).lower(), int(m.group(3))
    adjs = [g.adjacency for g in graphs]
    if kind == "r":
        if fragment != "L3":
            raise MatlangError(f"{model}: refinement sentences (-rR) are L3 only")
        return refinement.signatures(adjs, bound)
    return bank.signatures(bank.bank(fragment, bound), adjs, multiset=True)


def bank_iso(
    graphs: Sequence[Graph], model: str, pairs: np.ndarray | None = None
) -> tuple[int, np.ndarray]:
    """Table 1's question for a bank: (pairs compared, the pairs no sentence separates)."""
    sig = bank_signatures(model, graphs)
    if pairs is not None:
        cand = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
        same = np.array([sig[i] == sig[j] for i, j in cand.tolist()], dtype=bool)
        return len(cand), cand[same]
    groups: dict[bytes, list[int]] = {}
    for g, key in enumerate(sig):
        groups.setdefault(key, []).append(g)
    und = [(a, b) for grp in groups.values() for x, a in enumerate(grp) for b in grp[x + 1 :]]
    n = len(graphs)
    return n * (n - 1) // 2, np.array(sorted(und), dtype=np.int64).reshape(-1, 2)


# --------------------------------------------------------------------------- matlang bench iso


def bench(args: argparse.Namespace) -> int:
    """``matlang bench iso``: the test on a dataset, its result file and summary."""
    from benchmarks.paper.common import start, variant
    from benchmarks.paper.count import parse_option
    from benchmarks.records import ResultFile, result_name
    from matlang.runtime import datasets

    if BANK_MODEL.match(args.model):
        return _bench_bank(args)
    seeds = start(args)
    options = dict(parse_option(t) for t in args.set or ())
    if options:  # checked before the data loads; an unknown option names the known ones
        make_model(args.model, 2, 10, protocol="iso", dataset=args.dataset, options=options)
    config = {
        "protocol": "3 layers, sum readout, linear map to 10 features, random weights "
        "(no training); a pair is undistinguished when the L1 distance of its outputs "
        "is below tol in every seed",
        "tol": args.tol,
        "node_features": "[x, degree] (x = 1 for graph8c and sr25, EXP's literal flag)",
        "pairs": "all pairs" if args.dataset != "exp" else "(2k, 2k+1)",
        "sentences": list(ISO_SENTENCES) if args.model.startswith("compiled") else None,
        "limit": args.limit,
        "dtype": DTYPE_NOTES[args.dtype],
        # recorded only when given, so earlier files keep their config
        **({"model_options": options} if options else {}),
    }
    # float64 is the protocol's own file; float32 (the authors' precision) is a variant
    tags = [f"{k}-{str(v).lower()}" for k, v in sorted(options.items())]
    tags += [args.dtype] if args.dtype != "float64" else []
    name = result_name("iso", args.dataset, None, args.model, variant(args.limit, tags=tags))
    out = ResultFile(args, name, config, seeds)
    pairs = None
    if args.dataset == "graph8c":
        graphs = datasets.load_graph8c()
    elif args.dataset == "sr25":
        graphs = datasets.load_sr25()
    else:
        exp = datasets.load_exp()
        graphs, pairs = exp.graphs, exp.pairs
        if args.limit:
            pairs = pairs[: args.limit]
    if args.limit and pairs is None:
        graphs = graphs[: args.limit]

    def run(save: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        res = iso_test(
            graphs,
            args.model,
            seeds=len(seeds),
            first_seed=seeds[0],
            pairs=pairs,
            tol=args.tol,
            progress=not args.no_progress,
            dataset=args.dataset,
            dtype=getattr(torch, args.dtype),
            # a float32 run measures itself against the same weights in float64
            reference_dtype=torch.float64 if args.dtype == "float32" else None,
            options=options or None,
        )
        und = res.undistinguished
        examples = [[graphs[i].label(), graphs[j].label()] for i, j in und[:20].tolist()]
        record = {
            "bench": "iso",
            "dataset": args.dataset,
            "model": args.model,
            "graphs": len(graphs),
            "pairs": res.pairs,
            "undistinguished": int(len(und)),
            "seeds": seeds,
            "per_seed": {"undistinguished_after_seed": res.remaining},
            "config": config,
            "model_info": res.model,
            "undistinguished_examples": examples,
        }
        summary = {"pairs": res.pairs, "undistinguished": int(len(und)), "seeds": len(seeds)}
        if res.reference is not None:
            record["same_weights_in_float64"] = res.reference
            summary["undistinguished_same_weights_float64"] = res.reference["undistinguished"]
        return record, summary

    return out.run(run)


def _bench_bank(args: argparse.Namespace) -> int:
    """``matlang bench iso --model bank-...``: a bank's exact values in place of a model's
    outputs (no seeds, no tolerance: a pair is undistinguished when every value is equal)."""
    from benchmarks.paper.common import variant
    from benchmarks.records import ResultFile, result_name
    from matlang.runtime import datasets

    m = BANK_MODEL.match(args.model)
    assert m is not None
    model = f"bank-{m.group(1).upper()}-{m.group(2).lower()}{m.group(3)}"
    if args.seeds != 1 or args.first_seed != 0 or getattr(args, "set", None):
        raise MatlangError(f"{model} is exact and has no weights: run it with --seeds 1 (no --set)")
    config = {
        "protocol": "a sentence bank as the model: the exact values of its sentences (and "
        "their entry multisets); a pair is undistinguished when all of them are equal",
        "pairs": "all pairs" if args.dataset != "exp" else "(2k, 2k+1)",
        "limit": args.limit,
    }
    name = result_name("iso", args.dataset, None, model, variant(args.limit))
    out = ResultFile(args, name, config, [0])
    pairs = None
    if args.dataset == "exp":
        exp = datasets.load_exp()
        graphs, pairs = exp.graphs, exp.pairs[: args.limit] if args.limit else exp.pairs
    else:
        graphs = datasets.load_graph8c() if args.dataset == "graph8c" else datasets.load_sr25()
        graphs = graphs[: args.limit] if args.limit else graphs

    def run(save: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        t0 = time.perf_counter()
        total, und = bank_iso(graphs, model, pairs)
        examples = [[graphs[i].label(), graphs[j].label()] for i, j in und[:20].tolist()]
        record = {
            "bench": "iso",
            "dataset": args.dataset,
            "model": model,
            "graphs": len(graphs),
            "pairs": total,
            "undistinguished": int(len(und)),
            "seeds": [0],
            "seconds": round(time.perf_counter() - t0, 2),
            "config": config,
            "undistinguished_examples": examples,
        }
        return record, {"pairs": total, "undistinguished": int(len(und))}

    return out.run(run)


__all__ = [
    "ISO_SENTENCES",
    "IsoResult",
    "bench",
    "close_pairs",
    "embed_graphs",
    "iso_test",
    "still_close",
]
