"""BREC (Wang & Zhang 2023): 400 non-isomorphic pairs, and the rows of its table for this project.

Three kinds of rows, all counted per category (Basic 60, Regular 140, Extension 100, CFI 100):

- ``1-wl`` / ``3-wl``: the tests themselves (:mod:`runtime.wl`), a pair counting when the stable
  colour histograms of its two graphs differ.
- ``bank-L1|L2|L3``: the sentence banks of :mod:`matlang.bank` — a pair counts when some sentence
  up to the size bound takes different values (exact, no training, a certified lower bound);
  ``bank-L3 --rounds R``: the refinement sentences of :mod:`matlang.refinement` (L3+ sentences
  running up to R rounds of a hashed 2-FWL), exact and certified the same way.
- every reference model, under BREC's Reliable Paired Comparison (RPC, paper §4): a fresh model
  per pair is trained siamese-style on 32 random relabellings of each graph to push the two
  graphs' outputs apart (cosine embedding loss, target −1), then Hotelling's T² statistic of the
  32 paired output differences must exceed the threshold, while the same statistic on 32 pairs
  of relabellings of *one* graph (the reliability check) stays below it.

The protocol constants are those of BREC's reference test script: 32 relabellings, 16 outputs,
20 epochs, batch 16 graphs (8 pairs), Adam with learning rate 1e-4 and weight decay 1e-4, early
stop when the epoch loss falls below 0.2, threshold 72.34, and the statistic as that script
computes it, ``T² = d̄ᵀ S⁺ d̄`` (mean difference d̄ and covariance S of the 32 differences; the
threshold is 31·F₀.₉₅(16, 16) ≈ 72.34). Relabellings are drawn here with a seeded generator
(the official file stores its own, which the shared data does not include).
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.paper.brec_rpc import (  # noqa: F401 (re-exported: brec.relabel, ...)
    draw_members,
    permuted_copies,
    relabel,
    relabellings,
    t_squared,
    train_rpc,
)
from matlang.errors import MatlangError

#: The paper's four categories, in table order, with their pair counts.
CATEGORIES: tuple[str, ...] = ("Basic", "Regular", "Extension", "CFI")
CATEGORY_SIZES: dict[str, int] = {"Basic": 60, "Regular": 140, "Extension": 100, "CFI": 100}

#: Published rows (BREC paper, Wang & Zhang, arXiv 2304.07702, Table 2). The 3-WL split is
#: also reproduced by the data README's own 2-FWL run; PPGN's split (60/50/100/23) is the
#: BREC paper's as the fidelity audit quotes it (shared/reviews/fidelity-9279aa8.md).
PUBLISHED: dict[str, dict[str, int | None]] = {
    "1-WL": {"Basic": 0, "Regular": 0, "Extension": 0, "CFI": 0, "Total": 0},
    "3-WL": {"Basic": 60, "Regular": 50, "Extension": 100, "CFI": 60, "Total": 270},
    "PPGN": {"Basic": 60, "Regular": 50, "Extension": 100, "CFI": 23, "Total": 233},
}
#: Published rows of trained models (the others are tests).
PUBLISHED_MODELS = ("PPGN",)

#: Rows that are exact tests or sentence banks (no training, no RPC), by row name.
EXACT_ROWS = ("1-wl", "3-wl")


def is_exact_row(model: str) -> bool:
    """Whether a BREC row is an exact test or a sentence bank rather than a trained model."""
    return model in EXACT_ROWS or model.startswith("bank-")


def row_name(model: str) -> str:
    """A row's name in the table: the refinement bank says what it is (hashed 2-FWL written as
    sentences, with pointwise functions applied to matrices: general MATLANG, beyond the
    paper's L3+, whose functions act on scalars and vectors), so equal to 3-WL by
    construction."""
    if model.startswith("bank-L3-r"):
        return f"{model} (= 3-WL by construction: 2-FWL in MATLANG, not a model, not RPC)"
    return model


@dataclass(frozen=True)
class RPCConfig:
    """BREC's Reliable Paired Comparison settings (defaults: its reference script)."""

    relabellings: int = 32
    out_dim: int = 16
    epochs: int = 20
    batch_size: int = 16  # graphs; two per pair
    lr: float = 1e-4
    weight_decay: float = 1e-4
    loss_threshold: float = 0.2
    threshold: float = 72.34
    atol: float = 1e-6  # T² of the pair and of the reliability set must not coincide
    #: the model's named configuration, or a configuration object (benchmarks/paper/brec_ppgn)
    config: Any = "iso"
    dtype: str = "float32"  # of the model and the graphs (BREC's: float32)
    #: how relabellings reach the model: "supports" (the graph relabelled, ChebNet's and
    #: GNNML3's precomputed inputs carried to it) or "pyg" (benchmarks/paper/brec_pyg)
    input: str = "supports"
    s_epsilon: float = 1e-7  # "pyg": the ε BREC's S_epsilon adds to S's diagonal

    def __post_init__(self) -> None:
        if self.batch_size < 2 or self.batch_size % 2:
            raise MatlangError(
                f"RPC: --batch-size holds whole pairs: a positive even number, "
                f"got {self.batch_size}"
            )
        if self.dtype not in ("float32", "float64"):
            raise MatlangError(f"RPC: dtype must be float32 or float64, got {self.dtype!r}")
        if self.input not in ("supports", "pyg"):
            raise MatlangError(f"RPC: input must be supports or pyg, got {self.input!r}")
        if self.input == "pyg" and self.dtype != "float32":
            raise MatlangError("RPC: --input pyg runs BREC's float32 path; drop --dtype")

    def row(self, model: str) -> str:
        """The row (and result file) name of ``model`` run with these settings: ``MODEL``,
        ``.CONFIG`` for a named configuration other than ``iso``, ``.float64`` in float64, ``.pyg``
        for relabellings built as PyG data."""
        name = model if self.config == "iso" else f"{model}.{self.config}"
        name = name if self.dtype == "float32" else f"{name}.{self.dtype}"
        return name if self.input == "supports" else f"{name}.{self.input}"


@dataclass
class PairOutcome:
    """One pair's verdict and the numbers behind it."""

    pair: int
    category: str
    separated: bool
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass
class BrecResult:
    """Verdicts for the pairs run, with per-category counts."""

    model: str
    outcomes: list[PairOutcome]
    seconds: float
    settings: dict[str, Any] = field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        out = {c: 0 for c in CATEGORIES}
        for o in self.outcomes:
            out[o.category] += int(o.separated)
        out["Total"] = sum(out[c] for c in CATEGORIES)
        return out

    def counts_plain(self) -> dict[str, int] | None:
        """Per-category counts under the plain T² rule, for rows that hold a second rule's
        verdicts (``separated_plain``, :mod:`benchmarks.paper.brec_pyg`); None otherwise."""
        return plain_counts([{"category": o.category, **o.detail} for o in self.outcomes])

    def totals(self) -> dict[str, int]:
        """Pairs run per category (400 in a full run)."""
        out = {c: 0 for c in CATEGORIES}
        for o in self.outcomes:
            out[o.category] += 1
        out["Total"] = len(self.outcomes)
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "pairs": len(self.outcomes),
            "separated": self.counts()["Total"],
            "counts": self.counts(),
            **({} if (plain := self.counts_plain()) is None else {"counts_plain": plain}),
            "run_per_category": self.totals(),
            "seconds": round(self.seconds, 2),
            "settings": self.settings,
            "per_pair": [
                {"pair": o.pair, "category": o.category, "separated": o.separated, **o.detail}
                for o in self.outcomes
            ],
        }


def plain_counts(rows: Sequence[dict[str, Any]]) -> dict[str, int] | None:
    """Per-category counts of ``separated_plain`` (None when the rows have none)."""
    if not rows or any("separated_plain" not in r for r in rows):
        return None
    out = {c: 0 for c in CATEGORIES}
    for r in rows:
        out[r["category"]] += int(bool(r["separated_plain"]))
    out["Total"] = sum(out[c] for c in CATEGORIES)
    return out


Progress = Callable[[Iterable[Any]], Iterable[Any]]


def _identity(items: Iterable[Any]) -> Iterable[Any]:
    return items


def select_pairs(data: Any, pairs: Sequence[int] | None) -> list[int]:
    """Pair indices to run (all when ``pairs`` is None), checked against the dataset."""
    count = len(data.pairs)
    chosen = list(range(count)) if pairs is None else [int(k) for k in pairs]
    bad = [k for k in chosen if not 0 <= k < count]
    if bad:
        raise MatlangError(f"BREC has pairs 0..{count - 1}; got {bad[:5]}")
    return chosen


# --------------------------------------------------------------------------- WL rows


def wl_rows(
    data: Any, test: str, pairs: Sequence[int] | None = None, progress: Progress = _identity
) -> BrecResult:
    """``1-wl`` or ``3-wl`` on the chosen pairs: separated when stable histograms differ."""
    from matlang.runtime.wl import normalize_test, pair_equivalence

    kind = normalize_test(test)
    chosen = select_pairs(data, pairs)
    start = time.perf_counter()
    idx = data.pairs[chosen]
    same = pair_equivalence(data.graphs, idx, kind, progress=progress)
    outcomes = [
        PairOutcome(k, data.category(k), not bool(s))
        for k, s in zip(chosen, same.tolist(), strict=True)
    ]
    return BrecResult(kind, outcomes, time.perf_counter() - start, {"test": kind})


# --------------------------------------------------------------------------- banks


def bank_rows(
    data: Any,
    fragment: str,
    max_size: int,
    pairs: Sequence[int] | None = None,
    *,
    multiset: bool = True,
    progress: Progress = _identity,
) -> BrecResult:
    """The bank of ``fragment`` up to ``max_size`` on the chosen pairs, with witnesses."""
    from matlang.bank import search_pair, witness_record

    chosen = select_pairs(data, pairs)
    start = time.perf_counter()
    outcomes = []
    for k in progress(chosen):
        i, j = data.pairs[k]
        s = search_pair(
            data.graphs[i].adjacency,
            data.graphs[j].adjacency,
            fragment,
            max_size,
            multiset=multiset,
        )
        found = witness_record(s)
        detail: dict[str, Any] = {"complete_size": s.complete_size, "truncated": s.truncated}
        detail |= found or {}
        outcomes.append(PairOutcome(k, data.category(k), found is not None, detail))
    settings = {"fragment": fragment.upper(), "max_size": max_size, "multiset": multiset}
    return BrecResult(f"bank-{fragment.upper()}", outcomes, time.perf_counter() - start, settings)


def refinement_rows(
    data: Any, max_rounds: int, pairs: Sequence[int] | None = None, progress: Progress = _identity
) -> BrecResult:
    """The refinement sentences of L3+ (:mod:`matlang.refinement`: up to ``max_rounds`` rounds
    of a hashed 2-FWL written in the language) on the chosen pairs, with witnesses."""
    from matlang import refinement

    chosen = select_pairs(data, pairs)
    start = time.perf_counter()
    outcomes = []
    for k in progress(chosen):
        i, j = data.pairs[k]
        r = refinement.search_pair(data.graphs[i].adjacency, data.graphs[j].adjacency, max_rounds)
        detail: dict[str, Any] = {"rounds_run": r.rounds_run, "stable": r.stable}
        detail["values_per_round"] = r.colours
        detail |= refinement.witness_record(r) or {}
        outcomes.append(PairOutcome(k, data.category(k), r.separation is not None, detail))
    settings = {
        "fragment": "L3+",
        "family": "refinement",
        "rounds": max_rounds,
        "modulus": refinement.MODULUS,
        "degree": refinement.DEGREE,
        "seed": refinement.SEED,
    }
    return BrecResult("bank-L3", outcomes, time.perf_counter() - start, settings)


# --------------------------------------------------------------------------- RPC


def relabel_supports(sup: Any, perm: np.ndarray) -> Any:
    """GNNML3 supports of one graph (:class:`runtime.preprocess.Supports`, local ids) carried
    to its relabelling ``perm``: entry ``(i, j)`` becomes ``(π⁻¹(i), π⁻¹(j))``, re-sorted
    row-major as :func:`runtime.preprocess.gnnml3_supports` stores them. The supports are
    matrix functions of the graph, so this is what recomputing them on the relabelled graph
    gives, without the eigendecomposition (equal up to rounding; tests check it)."""
    import torch

    from matlang.runtime.preprocess import Supports

    n = len(perm)
    inv = np.empty(n, dtype=np.int64)
    inv[perm] = np.arange(n)
    ei = sup.edge_index.numpy()
    rows, cols = inv[ei[0]], inv[ei[1]]
    order = np.argsort(rows * n + cols, kind="stable")
    edge_index = torch.from_numpy(np.stack([rows[order], cols[order]]))
    attr = sup.edge_attr[torch.from_numpy(order)]
    return Supports(edge_index, attr, sup.names, sup.error_bound, sup.order)


class SharedInputs:
    """A model's per-graph preprocessing computed once per *base* graph and carried to every
    relabelling, given to the model as the inputs it would otherwise compute itself: ChebNet's
    ``lambda_max`` (invariant) and GNNML3's ``supports`` (permuted, :func:`relabel_supports`).
    RPC feeds a model 128 relabellings of two graphs; recomputing a spectrum for each is waste.
    Models without per-graph preprocessing get no inputs."""

    def __init__(self, model: Any, bases: Sequence[np.ndarray]) -> None:
        from matlang.graphs import Graph
        from matlang.runtime.models.chebnet import ChebNet
        from matlang.runtime.models.gnnml3 import GNNML3
        from matlang.runtime.preprocess import gnnml3_supports, lambda_max

        self.kind: str | None = None
        self.values: list[Any] = []
        graphs = [Graph(np.asarray(a, dtype=np.int64)) for a in bases]
        if isinstance(model, ChebNet):
            self.kind = "lambda_max"
            self.values = [lambda_max(g, model.config.basis) for g in graphs]
        elif isinstance(model, GNNML3):
            self.kind = "supports"
            self.values = [gnnml3_supports(g, model.config.support) for g in graphs]
        self.dtype = model.dtype

    def batch_inputs(self, members: Sequence[tuple[int, np.ndarray]]) -> dict[str, Any]:
        """The inputs of a batch whose graphs are ``(base, perm)`` relabellings, in order."""
        import torch

        from matlang.runtime.preprocess import Supports

        if self.kind == "lambda_max":
            lam = [self.values[base] for base, _ in members]
            return {"lambda_max": torch.tensor(lam, dtype=torch.float64)}
        if self.kind == "supports":
            parts = [relabel_supports(self.values[base], perm) for base, perm in members]
            offsets = np.cumsum([0] + [len(perm) for _, perm in members])[:-1].tolist()
            sup = Supports.concat(parts, offsets, parts[0].names)
            return {"supports": dataclasses.replace(sup, edge_attr=sup.edge_attr.to(self.dtype))}
        return {}


def rpc_pair(
    model_name: str,
    a: np.ndarray,
    b: np.ndarray,
    seed: int,
    cfg: RPCConfig = RPCConfig(),
    *,
    share_preprocessing: bool = True,
) -> dict[str, Any]:
    """RPC on one pair: train a fresh model to separate ``a`` from ``b``, then the two T² tests.

    ``share_preprocessing``: the model's per-graph preprocessing (spectra, supports) computed
    once for ``a`` and ``b`` and carried to their relabellings (:class:`SharedInputs`) rather
    than recomputed on each of the 128; False recomputes (the reference the tests compare to).
    """
    import torch

    from matlang.graphs import Graph
    from matlang.runtime.batch import Batch
    from matlang.runtime.models import build_model

    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    q = cfg.relabellings
    dtype = getattr(torch, cfg.dtype)

    def graph(m: np.ndarray) -> Any:
        m = m.astype(np.int64)
        m.setflags(write=False)
        return Graph(m, None, np.ones((m.shape[0], 1)))

    pair_members, rel_members = draw_members(a, b, q, rng)
    bases = (a, b)

    def batches(members: list[tuple[int, np.ndarray]]) -> list[tuple[Any, list[Any]]]:
        bs = cfg.batch_size
        chunks = [members[i : i + bs] for i in range(0, len(members), bs)]
        gs = [[graph(relabel(bases[k], p)) for k, p in c] for c in chunks]
        return [(Batch.from_graphs(g, dtype=dtype), c) for g, c in zip(gs, chunks)]

    model = build_model(model_name, 1, cfg.out_dim, config=cfg.config).to(dtype)
    shared = SharedInputs(model, bases) if share_preprocessing else None

    def with_inputs(items: list[tuple[Any, list[Any]]]) -> list[tuple[Any, dict[str, Any]]]:
        return [(bt, {} if shared is None else shared.batch_inputs(c)) for bt, c in items]

    train_batches = with_inputs(batches(pair_members))
    rel_batches = with_inputs(batches(rel_members))
    out, epochs_run, last_loss = train_rpc(model, train_batches, rel_batches, cfg)
    emb, rel = (o.double().numpy() for o in out)
    t_pair = t_squared(emb[0::2], emb[1::2])
    t_rel = t_squared(rel[0::2], rel[1::2])
    distinct = t_pair > cfg.threshold and not np.isclose(t_pair, t_rel, rtol=1e-5, atol=cfg.atol)
    reliable = t_rel < cfg.threshold
    return {
        "t2": t_pair,
        "t2_reliability": t_rel,
        "distinguished": bool(distinct),
        "reliable": bool(reliable),
        "epochs": epochs_run,
        "loss": last_loss,
    }


def rpc_rows(
    data: Any,
    model_name: str,
    pairs: Sequence[int] | None = None,
    *,
    seed: int = 0,
    cfg: RPCConfig = RPCConfig(),
    progress: Progress = _identity,
    on_pair: Callable[[BrecResult], Any] | None = None,
) -> BrecResult:
    """RPC for a reference model on the chosen pairs: separated = distinguished and reliable
    (``cfg.input == "pyg"``: :func:`benchmarks.paper.brec_pyg.rpc_pair_pyg`, counted as BREC
    counts, under both T² rules). ``on_pair`` sees the result so far after every pair
    (``bench`` saves it)."""
    chosen = select_pairs(data, pairs)
    start = time.perf_counter()
    settings = {"seed": seed, **cfg.__dict__}
    if cfg.dtype == "float32":  # BREC's, and that of every file written before --dtype
        del settings["dtype"]
    pair_fn: Callable[..., dict[str, Any]] = rpc_pair
    if cfg.input == "supports":  # as every file written before --input
        del settings["input"], settings["s_epsilon"]
    else:
        from benchmarks.paper.brec_pyg import PROTOCOL, rpc_pair_pyg

        pair_fn, settings["protocol"] = rpc_pair_pyg, PROTOCOL
    outcomes: list[PairOutcome] = []
    for k in progress(chosen):
        i, j = data.pairs[k]
        t0 = time.perf_counter()
        r = pair_fn(
            model_name, data.graphs[i].adjacency, data.graphs[j].adjacency, seed * 100_003 + k, cfg
        )
        r["seconds"] = round(time.perf_counter() - t0, 2)  # training and both tests
        separated = r.pop("separated", r["distinguished"] and r["reliable"])
        outcomes.append(PairOutcome(k, data.category(k), separated, r))
        if on_pair is not None:
            on_pair(BrecResult(model_name, list(outcomes), time.perf_counter() - start, settings))
    return BrecResult(model_name, outcomes, time.perf_counter() - start, settings)


def reliability_failures(result: BrecResult) -> int:
    """Pairs whose reliability check failed (RPC rows only)."""
    return sum(1 for o in result.outcomes if o.detail.get("reliable") is False)


# --------------------------------------------------------------------------- report


def table(rows: Sequence[BrecResult | dict[str, Any]], *, published: bool = True) -> str:
    """Markdown: the exact tests and sentence banks, then the models trained under RPC, each
    per category and in total (results or their JSON records, as written by ``matlang bench
    brec``), each part followed by BREC's published rows of its kind."""
    recs = [r.to_json() if isinstance(r, BrecResult) else r for r in rows]
    exact = [r for r in recs if is_exact_row(str(r["model"]))]
    trained = [r for r in recs if not is_exact_row(str(r["model"]))]
    pub = PUBLISHED if published else {}
    out = ["**Exact tests and sentence banks** (no training; a separation is certified)", ""]
    out += _part(exact, {k: v for k, v in pub.items() if k not in PUBLISHED_MODELS})
    out += ["", "**Trained models (BREC's RPC protocol, one seed)**", ""]
    out += _part(trained, {k: v for k, v in pub.items() if k in PUBLISHED_MODELS})
    partial = [r for r in recs if r["run_per_category"]["Total"] != 400]
    if partial:
        out.append("")
        for r in partial:
            ran = pair_ranges([int(p["pair"]) for p in r["per_pair"]])
            out.append(f"- {r['model']}: pairs {ran} ({r['run_per_category']['Total']})")
    return "\n".join(out)


def _part(recs: Sequence[dict[str, Any]], published: dict[str, dict[str, int | None]]) -> list[str]:
    head = "| row | " + " | ".join(f"{c} ({CATEGORY_SIZES[c]})" for c in CATEGORIES)
    lines = [head + " | Total (400) | time |", "|---" * (len(CATEGORIES) + 3) + "|"]
    order = {"1-wl": 0, "3-wl": 1}
    recs = sorted(
        recs,
        key=lambda r: (
            order.get(str(r["model"]), 2 if "bank" in str(r["model"]) else 3),
            str(r["model"]),
        ),
    )
    for r in recs:
        c, t = r["counts"], r["run_per_category"]
        cells = [
            str(c[k]) if t[k] == CATEGORY_SIZES[k] else f"{c[k]}/{t[k]}" if t[k] else "–"
            for k in CATEGORIES
        ]
        total = str(c["Total"]) if t["Total"] == 400 else f"{c['Total']}/{t['Total']}"
        # seconds: the pairs' compute time, summed over the pieces an --append run merged
        seconds = r.get("seconds", r.get("wall_seconds", 0.0))
        name = row_name(str(r["model"]))
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {total} | {seconds:.0f} s |")
    for name, row in published.items():
        cells = ["–" if row[k] is None else str(row[k]) for k in CATEGORIES]
        lines.append(f"| {name} (published) | " + " | ".join(cells) + f" | {row['Total']} | |")
    return lines


def pair_ranges(pairs: Sequence[int]) -> str:
    """Pairs as ``--pairs`` writes them: ``0:30,60:74,110`` (A:B is A..B-1)."""
    out: list[str] = []
    ps = sorted(set(pairs))
    i = 0
    while i < len(ps):
        j = i
        while j + 1 < len(ps) and ps[j + 1] == ps[j] + 1:
            j += 1
        out.append(str(ps[i]) if i == j else f"{ps[i]}:{ps[j] + 1}")
        i = j + 1
    return ",".join(out)


# --------------------------------------------------------------------------- matlang bench brec


def parse_pairs(text: str | None) -> list[int] | None:
    """``--pairs``: ``A:B`` (pairs A..B-1), single pairs ``K``, or several joined by commas
    (``0:5,60:65,160:165``); None for all pairs."""
    if not text:
        return None
    chosen: list[int] = []
    for part in text.split(","):
        try:
            if ":" in part:
                a, b = (int(v) for v in part.split(":"))
                chosen.extend(range(a, b))
            else:
                chosen.append(int(part))
        except ValueError:
            raise MatlangError(
                f"--pairs takes A:B (pairs A..B-1) or K, joined by commas; got {text!r}"
            ) from None
    if len(set(chosen)) != len(chosen):
        raise MatlangError(f"--pairs names a pair twice: {text!r}")
    return chosen


def result_file(row: str) -> str:
    """The result file of a row: ``brec-<row>.json`` (the bench is its own dataset)."""
    from benchmarks.records import result_name

    return result_name("brec", "brec", None, row)


def legacy_result_file(row: str) -> str:
    """The name files had before (``brec-brec-<row>.json``), still read by ``--append``."""
    return f"brec-brec-{row}.json"


#: Keys of a record that describe one run rather than its pairs (kept under "earlier").
_PROVENANCE = (
    "pairs_run",
    "seconds",
    "command",
    "wall_seconds",
    "finished",
    "versions",
    "git_commit",
)


def merge_pairs(
    path: Path, old: dict[str, Any], new: dict[str, Any], *, action: str = "--append"
) -> dict[str, Any]:
    """``new`` (a run on some pairs) with the pairs of ``old`` (the file at ``path``): per-pair
    verdicts sorted by pair, counts over all of them, seconds summed, and the earlier runs'
    provenance under ``"earlier"``. Same row and settings and no pair twice, or an error
    (``action`` starts its message)."""
    from benchmarks.records import check_same_settings

    check_same_settings(path, old, new, ("bench", "dataset", "model", "settings"), action=action)
    again = sorted({r["pair"] for r in old["per_pair"]} & {r["pair"] for r in new["per_pair"]})
    if again:
        raise MatlangError(f"{action}: {path} already has pair(s) {again[:10]}")
    rows = sorted(old["per_pair"] + new["per_pair"], key=lambda r: r["pair"])
    counts = {c: 0 for c in CATEGORIES}
    totals = {c: 0 for c in CATEGORIES}
    for r in rows:
        counts[r["category"]] += int(bool(r["separated"]))
        totals[r["category"]] += 1
    counts["Total"], totals["Total"] = sum(counts.values()), len(rows)
    plain = plain_counts(rows)
    earlier = {k: old.get(k) for k in _PROVENANCE}
    earlier["pairs_run"] = old.get("pairs_run", [r["pair"] for r in old["per_pair"]])
    return {
        **new,
        "pairs": len(rows),
        "separated": counts["Total"],
        "counts": counts,
        **({} if plain is None else {"counts_plain": plain}),
        "run_per_category": totals,
        "seconds": round(float(old.get("seconds", 0.0)) + float(new["seconds"]), 2),
        "per_pair": rows,
        "earlier": [earlier, *old.get("earlier", [])],
    }


def _read_earlier(args: argparse.Namespace, row: str) -> tuple[Path, dict[str, Any]]:
    """The file ``--append`` adds pairs to (under its old name if only that exists)."""
    folder = Path(args.out)
    path = folder / result_file(row)
    if not path.is_file() and (folder / legacy_result_file(row)).is_file():
        path = folder / legacy_result_file(row)
    from benchmarks.records import read_json_file

    old = read_json_file(path if path.is_file() else folder / result_file(row))
    if not isinstance(old, dict) or not isinstance(old.get("per_pair"), list):
        raise MatlangError(f"--append: {path} is not a result file of bench brec")
    return path, old


def bench(args: argparse.Namespace) -> int:
    """``matlang bench brec``: one row of the BREC table, its result file and summary."""
    import sys

    from tqdm import tqdm

    from benchmarks.records import ResultFile
    from matlang.runtime import datasets
    from matlang.runtime.wl import normalize_test

    model = args.model
    pairs = parse_pairs(args.pairs)
    trained = not (model.startswith("bank-") or model in ("1-wl", "3-wl"))
    # A bank's file names its size bound: rows of several bounds sit side by side.
    name: str
    if model in ("1-wl", "3-wl"):
        name = normalize_test(model)
    elif model.startswith("bank-") and args.rounds is not None:
        if model[5:].upper() != "L3":
            raise MatlangError("--rounds (refinement sentences) is for --model bank-L3 only")
        name = f"bank-L3-r{args.rounds}"
    elif model.startswith("bank-"):
        name = f"bank-{model[5:].upper()}-k{args.max_size}"
    else:
        rpc = RPCConfig(
            epochs=args.epochs,
            batch_size=args.batch_size,
            config=args.config,
            dtype=args.dtype,
            input=getattr(args, "input", "supports"),
        )
        name = rpc.row(model)
        _setup_model(args, model, rpc.config)
    data = datasets.load_brec()
    earlier: tuple[Path, dict[str, Any]] | None = None
    if getattr(args, "append", False):
        if args.no_save:
            raise MatlangError("--append adds pairs to a result file: it cannot go with --no-save")
        earlier = _read_earlier(args, name)
        done = sorted({int(r["pair"]) for r in earlier[1]["per_pair"]})
        again = sorted(set(select_pairs(data, pairs)) & set(done))
        if again:
            raise MatlangError(
                f"--append: {earlier[0]} already has pair(s) {again[:10]}; choose others with "
                "--pairs"
            )
        # Checked above: the merged record replaces the file (under its current name).
        args = argparse.Namespace(**{**vars(args), "append": False, "force": True})
    chosen = select_pairs(data, pairs)

    def resume(saved: dict[str, Any] | None, path: Path | None) -> str:
        """Ctrl-C's message: the pairs saved, and the command that runs the rest."""
        done = set(saved.get("pairs_run", [])) if saved else set()
        rest = [k for k in chosen if k not in done]
        if path is None or not done:
            where = "nothing saved (--no-save)" if path is None else f"{path} unchanged"
            return f"interrupted: no pair of this run finished, {where}"
        return (
            f"interrupted: {len(done)} pair(s) of this run saved in {path}; go on with "
            f"--append --pairs {pair_ranges(rest)}"
        )

    out = ResultFile(args, result_file(name), {}, [], resume=resume)

    def progress(items: Any) -> Any:
        disable = True if args.no_progress else None
        return tqdm(items, desc=f"brec {model}", disable=disable, leave=False, file=sys.stderr)

    def record_of(res: BrecResult) -> dict[str, Any]:
        record = {"bench": "brec", "dataset": "brec", **res.to_json(), "model": name}
        record["pairs_run"] = [o.pair for o in res.outcomes]
        if earlier is not None:
            record = merge_pairs(earlier[0], earlier[1], record)
        return record

    def run(save: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        if model in ("1-wl", "3-wl"):
            res = wl_rows(data, model, pairs, progress=progress)
        elif model.startswith("bank-") and args.rounds is not None:
            res = refinement_rows(data, args.rounds, pairs, progress=progress)
        elif model.startswith("bank-"):
            res = bank_rows(data, model[5:], args.max_size, pairs, progress=progress)
        else:  # trained pair by pair (CFI pairs take minutes): each saved as it finishes
            res = rpc_rows(
                data, model, pairs, seed=args.seed, cfg=rpc, progress=progress,
                on_pair=lambda partial: save(record_of(partial)),
            )  # fmt: skip
        record = record_of(res)
        summary = {"model": name, "pairs": record["pairs"], "separated": record["separated"]}
        summary |= record["counts"]
        if trained:
            summary["reliability_failures"] = sum(
                1 for r in record["per_pair"] if r.get("reliable") is False
            )
        if "counts_plain" in record:
            summary["separated_plain"] = record["counts_plain"]["Total"]
        return record, summary

    status = out.run(run)
    if earlier is not None and earlier[0].name != result_file(name) and status == 0:
        print(
            f"note: read the earlier pairs from {earlier[0]} (the old name); the merged file "
            f"is {earlier[0].with_name(result_file(name))}",
            file=sys.stderr,
        )
    return status


def _setup_model(args: argparse.Namespace, model: str, config: str = "iso") -> None:
    import torch

    from benchmarks.paper.configs import register
    from matlang.runtime.models import model_names, resolve_config

    register()  # the paper's named configurations (iso, brec, ...)

    if model not in model_names():
        raise MatlangError(
            f"matlang bench brec: unknown model {model!r}; choose from 1-wl, 3-wl, bank-L1, "
            "bank-L2, bank-L3, " + ", ".join(model_names())
        )
    resolve_config(model, config)  # an unknown configuration is an error before any pair
    if args.threads:
        torch.set_num_threads(args.threads)
