"""Flags of the report's cells: how a run differs from the paper's (seeds, epochs,
batch, GNNML3's spectral basis, the dataset), whether it was budget-bound, and whether its file
was written from a tree with uncommitted changes; the TU tables' flags."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from benchmarks.records import is_dirty, seed_ranges

#: Row labels of the models (the paper's spelling).
MODEL_LABEL: dict[str, str] = {
    "mlp": "MLP",
    "gcn": "GCN",
    "gat": "GAT",
    "gin": "GIN",
    "chebnet": "ChebNet",
    "ppgn": "PPGN",
    "gnnml1": "GNNML1",
    "gnnml3": "GNNML3",
    "compiled": "compiled",
    "compiled-random": "compiled-random",
}

#: Runs per cell in the paper (Table 1: 100 random seeds; Tables 2 and 3: the median of 10).
PAPER_SEEDS = {"iso": 100, "count": 10, "filter": 10, "exp-classify": 10, "bandclass": 10}
#: Largest epoch budget of the authors' scripts where ours is smaller (``filtering.py``: 2,000;
#: ``freqclass.py``: 3,000).
AUTHORS_EPOCHS = {"filter": 2000, "bandclass": 3000}
#: The epoch budget of protocols set by this project's bench commands, where no authors' budget
#: applies (``matlang bench exp-classify``'s default; ``bench count`` reads its protocol's).
PROTOCOL_EPOCHS = {"exp-classify": 200}
#: The batch size of the authors' counting script.
AUTHORS_COUNT_BATCH = 10
#: The protocol each bench builds its models with (GNNML3's basis).
BENCH_BASIS_PROTOCOL = {"exp-classify": "classify", "filter": "filter", "tu": "classify"}
#: Cell markers: the cell's note says what each one means for it.
MARK_DEVIATES, MARK_DIRTY, MARK_LAST = "†", "‡", "§"


def _gnnml3_config(data: dict[str, Any]) -> dict[str, Any] | None:
    """The model configuration a GNNML3 result file recorded (``None``: none recorded)."""
    cfg = (data.get("model_info") or {}).get("config")
    return cfg if isinstance(cfg, dict) else None


def gnnml3_basis(data: dict[str, Any]) -> str | None:
    """The spectrum a GNNML3 result file's model used: its recorded configuration, or for a
    file that recorded none (TU files written before the configuration was recorded), the
    adjacency, the only basis GNNML3 had outside the isomorphism test until then."""
    if data.get("model") != "gnnml3":
        return None
    cfg = _gnnml3_config(data)
    return "adjacency" if cfg is None else str(cfg.get("support", cfg).get("basis"))


def gnnml3_receptive_field(data: dict[str, Any]) -> int | None:
    """The receptive field (hops) of a GNNML3 result file's supports (``None``: not GNNML3 or
    not recorded)."""
    cfg = _gnnml3_config(data) if data.get("model") == "gnnml3" else None
    hops = None if cfg is None else cfg.get("support", cfg).get("receptive_field")
    return None if hops is None else int(hops)


def gnnml3_hops(bench: str) -> int | None:
    """GNNML3's receptive field (hops) in the protocol of ``bench`` where the authors' script
    sets one (``benchmarks.paper.models.PROTOCOL_OVERRIDES``: Table 3's ``recfield=5``, 16
    hops), else ``None``."""
    from benchmarks.paper.models import PROTOCOL_OVERRIDES

    protocol = PROTOCOL_OVERRIDES.get(BENCH_BASIS_PROTOCOL.get(bench, ""), {})
    hops = protocol.get("gnnml3", {}).get("receptive_field")
    return None if hops is None else int(hops)


def gnnml3_support_mlp(data: dict[str, Any]) -> str | None:
    """The form of Eq. 7's MLPs a GNNML3 result file's model used (``None``: not GNNML3, or
    supports not learned): its recorded ``support_mlp``; files that record none ran the
    sigmoids, the only form before the authors' bias-free form was adopted."""
    if data.get("model") != "gnnml3":
        return None
    cfg = _gnnml3_config(data)
    if cfg is None:
        return "sigmoid"
    if cfg.get("learn_supports") is False:
        return None
    return str(cfg.get("support_mlp", "sigmoid"))


#: The numbers the report reads of each bench's result file (TU's only where it has folds).
SUMMARY_FIELDS = {
    "iso": ("undistinguished",),
    "exp-classify": ("median_accuracy",),
    "count": ("median_test_mse",),
    "filter": ("median_r2",),
    "bandclass": ("median_test_accuracy",),
    "tu": ("mean_accuracy", "std_accuracy", "last_epoch_mean_accuracy"),
}


def check_summary(path: Any, data: dict[str, Any]) -> None:
    """Raise :class:`~matlang.errors.DataError` naming ``path`` and the field where a result
    file lacks a number the report reads (it failed deep in the rendering, naming no file)."""
    from matlang.errors import DataError

    bench = str(data.get("bench"))
    if bench == "tu" and data.get("mean_accuracy") is None:
        return  # no fold finished yet: the TU table shows the cell as missing
    for key in SUMMARY_FIELDS.get(bench, ()):
        v = data.get(key)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            got = "no such field" if key not in data else f"{v!r}"
            raise DataError(f"{path}: a {bench} result needs a number under '{key}', got {got}")


def _protocol_epochs(data: dict[str, Any]) -> int | None:
    """The epochs the protocol of a result file's bench runs where no authors' budget applies
    (``None``: no such budget, or a model fitted without epochs, ``sentence-lstsq``)."""
    bench, cfg = data.get("bench"), data.get("config", {})
    if bench == "count":
        from benchmarks.paper.count import PROTOCOLS
        from benchmarks.paper.models import LEAST_SQUARES

        if str(data.get("model", "")).lower() in LEAST_SQUARES:
            return None
        protocol = PROTOCOLS.get(str(cfg.get("count_protocol") or "paper"))
        return None if protocol is None else protocol.epochs
    return PROTOCOL_EPOCHS.get(str(bench))


def deviations(data: dict[str, Any]) -> tuple[str, list[str]]:
    """``(markers, phrases)``: how the run of a result file differs from the paper's (seeds,
    epochs, batch, GNNML3's basis), whether it was budget-bound (best epoch = last epoch run)
    and whether it was written from a dirty tree."""
    from benchmarks.paper.models import PAPER_BASIS

    bench = str(data.get("bench"))
    cfg = data.get("config", {})
    runs = data.get("runs", [])
    marks, bits = "", []
    seeds = len(data.get("seeds", []))
    # a pattern beyond the paper (`bench count --task pattern:NAME`) has no paper protocol to
    # differ from; its notes say what ran, and the budget and tree flags below still apply
    beyond = str(data.get("task", "")).startswith("pattern:")
    if beyond:
        pass
    elif PAPER_SEEDS.get(bench, 0) > seeds:
        bits.append(f"{seeds} seed(s) where the paper has {PAPER_SEEDS[bench]}")
    if (
        bench in AUTHORS_EPOCHS
        and not beyond
        and int(cfg.get("epochs_max") or 0) < AUTHORS_EPOCHS[bench]
    ):
        bits.append(
            f"≤ {cfg.get('epochs_max')} epochs where the authors' script runs "
            f"{AUTHORS_EPOCHS[bench]:,}"
        )
    budget = _protocol_epochs(data)
    ran = cfg.get("epochs_max")  # (not recorded by the oldest files: nothing to compare)
    if not beyond and budget is not None and ran is not None and int(ran) < budget:
        bits.append(f"≤ {cfg.get('epochs_max')} epochs where the protocol runs {budget:,}")
    if cfg.get("limit"):
        bits.append(f"the first {cfg['limit']} graphs only (--limit), not the whole dataset")
    if bench == "count" and not beyond and cfg.get("batch_size") not in (None, AUTHORS_COUNT_BATCH):
        bits.append(f"batch {cfg.get('batch_size')} (the authors': {AUTHORS_COUNT_BATCH})")
    basis = gnnml3_basis(data)
    want = PAPER_BASIS.get(BENCH_BASIS_PROTOCOL.get(bench, ""))
    if basis and want and basis != want and "adjacency" not in str(cfg.get("variant") or ""):
        params = (data.get("model_info") or {}).get("parameters")
        bits.append(
            f"GNNML3 on the {basis} spectrum ({params:,} parameters) where the paper uses the "
            f"{want.replace('_', ' ')}: run before the paper's basis was the default; it is now "
            "the default and has not run yet"
        )
    hops, want_hops = gnnml3_receptive_field(data), gnnml3_hops(bench)
    if hops is not None and want_hops is not None and hops != want_hops:
        recfield = want_hops.bit_length()  # the authors' recfield r is (A + I)^(2^(r-1))
        bits.append(
            f"GNNML3's supports on a {hops}-hop mask where the authors' script has "
            f"{want_hops} hops (their recfield={recfield}: A + I squared {recfield - 1} times): "
            "run before the fix; the authors' mask is now the default and has not run for "
            "this cell"
        )
    if gnnml3_support_mlp(data) == "sigmoid":
        bits.append(
            "GNNML3's Eq. 7 with sigmoids (the learned supports start as one multiple of M): "
            "run before the authors' bias-free form was the default; it is now the "
            "default and has not run for this cell"
        )
    if bits:
        marks += MARK_DEVIATES
    last = [
        x
        for x in runs
        if x.get("best_epoch")
        and not x.get("stopped_early")
        and x["best_epoch"] >= int(x.get("epochs_run") or 0)
    ]
    if last:
        marks += MARK_LAST
        bits.append(
            f"best epoch = the last epoch run in {len(last)} of {len(runs)} seed(s): still "
            "improving when the budget ended"
        )
    tu_epochs = int(cfg.get("epochs") or 0) if bench == "tu" else 0
    tu_best = data.get("best_epoch") if bench == "tu" else None
    if tu_epochs and isinstance(tu_best, int) and tu_best > 1 and tu_best >= tu_epochs - 2:
        marks += MARK_LAST
        bits.append(f"best epoch {tu_best} of {tu_epochs}: still improving when training ended")
    if is_dirty(data):
        marks += MARK_DIRTY
        piece = next(
            p
            for p in [data, *data.get("earlier", [])]
            if str(p.get("git_commit") or "").endswith("+dirty")
        )
        digest = piece.get("git_diff_sha256")
        bits.append(
            "written from a tree with uncommitted changes (`git_commit` "
            f"`{str(piece.get('git_commit'))[:12]}…+dirty`"
            + (f", diff sha256 `{digest[:12]}`" if digest else ", diff not recorded")
            + "): the code that ran is not one commit"
        )
    from benchmarks.paper.report_marks import cell_marks

    for mark, phrase in cell_marks(data):
        marks += mark.symbol
        bits.append(phrase)
    return marks, bits


def tu_flags(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Markdown lines under a TU table: what each marked cell's marks mean for it (a best
    epoch that is the first or the last, chance level, the parameter budget, a configuration
    not the paper's, a dirty tree)."""
    from benchmarks.paper.tu_protocols import dataset_label

    out = []
    for d in sorted(rows, key=lambda d: (str(d.get("dataset")), str(d.get("model")))):
        model = str(d.get("model"))
        cell = f"{MODEL_LABEL.get(model, model)} on {dataset_label(str(d.get('dataset')))}"
        marks, said = deviations(d)
        if said:
            out.append(f"- {cell} **{marks}**: " + "; ".join(said))
    if not out:
        return []
    return [
        "Marked cells (best epoch chosen on the test folds, as the paper and GIN):",
        "",
        *out,
        "",
    ]


#: Table 2's dataset, said under its heading: what it is and how it differs from the paper's.
TABLE2_DATASET_NOTE: dict[str, list[str]] = {
    "randomgraph": [
        "**Not the paper's dataset.** `randomgraph` is Chen et al. (2020)'s Dataset 1: 5,000 "
        "Erdős–Rényi graphs of 10 nodes and 13.5 edges on average. The paper's Random set "
        "(5K graphs, 18.8 nodes, 62.67 directed edges; the authors' `randomgraph.mat`) is not "
        "available upstream. Every ratio in this table compares two datasets: the 1-WL rows' "
        "lower MSE on triangles, tailed triangles and 4-cycles comes from the smaller graphs, "
        "not from better models. The paper's 3-stars cell (1e-4 for every model) and its "
        "custom-sentence ranking are not reproduced (see the end of the report). The cells "
        "ran at batch 64 for at most 200 epochs (the authors' script: batch 10), and most "
        "were still improving at epoch 190-200: budget, not capacity, is the likely limit.",
        "",
    ],
}


def seed_count_sentence(cells: Sequence[dict[str, Any]], bench: str) -> str:
    """How many of a table's ``cells`` (result records) ran the paper's seed count, counted
    from the files (so it never goes stale)."""
    paper = PAPER_SEEDS[bench]
    full = sum(len(c.get("seeds", [])) >= paper for c in cells)
    fewer = sorted({len(c.get("seeds", [])) for c in cells if len(c.get("seeds", [])) < paper})
    if full == len(cells):
        return f"Every one of the {len(cells)} cells ran the paper's {paper} seeds."
    counts = " or ".join(str(k) for k in fewer)
    others = len(cells) - full
    return (
        f"{full} of the {len(cells)} cells ran the paper's {paper} seeds; the other {others} "
        f"ran {counts} (marked †, their notes say how many)."
    )


def provenance_summary(records: Sequence[dict[str, Any]]) -> list[str]:
    """A paragraph: how many of the result files were written from a dirty tree, how many
    record a commit the repository does not hold, and how many pieces were re-run from a clean
    tree in their place (``bench merge --replace``)."""
    from benchmarks.paper.report_marks import COMMIT, cell_marks

    dirty = [d for d in records if is_dirty(d)]
    redone = [d for d in records if d.get("replaced")]
    absent = [d for d in records if any(m is COMMIT for m, _ in cell_marks(d))]
    if not dirty and not redone and not absent:
        return []
    if dirty:
        head = (
            f"Provenance: {len(dirty)} of {len(records)} result files in the folder were "
            f"written from a tree with uncommitted changes (marked {MARK_DIRTY}); result files "
            "in `results/` are now written only from a clean tree, and a run from a dirty tree "
            "records its diff's SHA-256 (`git_diff_sha256`)."
        )
    else:
        head = (
            f"Provenance: every one of the {len(records)} result files in the folder was "
            "written from a clean tree, at the commit each piece records."
        )
    if absent:
        head += (
            f" {len(absent)} of them record a commit this repository does not hold (marked "
            f"{COMMIT.symbol}: the code that ran cannot be checked out)."
        )
    if redone:
        pieces = sum(len(d["replaced"]) for d in redone)
        head += (
            f" In {len(redone)} result file(s), {pieces} earlier piece(s) were re-run from a clean "
            "tree and replaced (`matlang bench merge --replace`; each file keeps the replaced "
            "pieces' command, commit, time and seeds under `replaced`, their numbers only in "
            "the repository's history)."
        )
    return [head, ""]


def training_note(cfg: dict[str, Any], runs: Sequence[dict[str, Any]]) -> str:
    """How a file's seeds trained: the epoch budget, the epochs run, batch and learning rate —
    or, for a model whose readout was fitted by least squares without gradient steps
    (``sentence-lstsq``), that fit and the ridge strengths the validation chose."""
    ran = sorted({int(x["epochs_run"]) for x in runs if x.get("epochs_run") is not None})
    ridges = sorted({x["readout"].get("ridge") for x in runs if x.get("readout")})
    if ridges and ran == [0]:
        return (
            "no gradient steps: the layers at their seeded weights, the readout fitted by "
            f"least squares (ridge {', '.join(f'{r:g}' for r in ridges)}, chosen on validation)"
        )
    plateau = " halved on plateaus" * bool(cfg.get("lr_schedule"))
    return (
        f"≤ {cfg['epochs_max']} epochs (ran {', '.join(str(x) for x in ran)}), "
        f"batch {cfg.get('batch_size')}, lr {cfg.get('lr')}{plateau}"
    )


def run_note(name: str, d: dict[str, Any]) -> str:
    """The note under a table for the result file ``name`` holding ``d``: seeds, how they
    trained, limits, stacking, partial seeds, label checks, wall time, device, deviations."""
    cfg = d.get("config", {})
    seeds = d.get("seeds", [])
    bits = [f"`{name}`", f"{len(seeds)} seed(s)"]
    if "epochs_max" in cfg:
        bits.append(training_note(cfg, d.get("runs", [])))
    if cfg.get("limit"):
        bits.append(f"limit {cfg['limit']}")
    stacked = [x.get("seed") for x in d.get("runs", []) if x.get("stacked_seeds")]
    if stacked:
        bits.append(f"seed(s) {seed_ranges(stacked)} trained stacked (`--stack-seeds`)")
    if d.get("partial"):
        bits.append(f"**partial** (seeds {d['partial'].get('missing_seeds')} missing)")
    t = d.get("targets", {})
    if t.get("file_label") is not None:
        bits.append(f"{t.get('file_label_disagreements')} disagreement(s) with `{t['file_label']}`")
    earlier = d.get("earlier", [])  # runs `--append` merged into this file
    wall = d.get("wall_seconds") or 0
    wall += sum(e.get("wall_seconds") or 0 for e in earlier)
    bits.append(f"{wall:.0f} s" + (f" over {len(earlier) + 1} runs" if earlier else ""))
    devices = sorted({str(x["device"]) for x in d.get("runs", []) if x.get("device")})
    if devices and devices != ["cpu"]:  # a run on a GPU (or a mix) says which
        bits.append("trained on " + " and ".join(devices))
    marks, differs = deviations(d)
    if differs:
        bits.append(f"**{marks}** " + "; ".join(differs))
    return "; ".join(bits)


__all__ = [
    "MODEL_LABEL",
    "MARK_DEVIATES",
    "MARK_DIRTY",
    "MARK_LAST",
    "TABLE2_DATASET_NOTE",
    "deviations",
    "gnnml3_basis",
    "provenance_summary",
    "run_note",
    "seed_ranges",
    "training_note",
    "tu_flags",
]
