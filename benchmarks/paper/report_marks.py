"""The marks at a report cell beyond the protocol ones of :mod:`benchmarks.paper.report_flags`
(†, §, ‡): the parameter budget, GNNML3 in the authors' code's configuration rather than the
paper's text, an early stop the authors' script does not make, a best epoch that is the first,
an accuracy at chance level, a dataset that is not the paper's, and a commit the repository does
not hold. Each mark is one symbol at the cell, one phrase in the cell's note (with the file's
numbers) and one legend line at the top of the report (:func:`legend`).
"""

from __future__ import annotations

import contextlib
import functools
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.paper.paper_numbers import PAPER_GNNML3_TEXT, PAPER_PARAMETER_BUDGET

#: The models of the paper (their cells are held to its protocol; the compiled models, banks
#: and sentence models are not in it).
PAPER_MODELS = ("mlp", "gcn", "gat", "gin", "chebnet", "ppgn", "gnnml1", "gnnml3")
#: A parameter count outside [low, high] × the paper's budget breaks "roughly 30K".
BUDGET_BAND = (0.5, 2.0)
#: Benches whose models the paper sizes to its budget.
BUDGET_BENCHES = ("iso", "exp-classify", "count", "filter", "bandclass", "tu")
#: Benches whose authors' scripts run every epoch (no early stop): the epochs they run.
NO_EARLY_STOP = {"filter": 2000, "bandclass": 3000}
#: A TU accuracy is at chance level when it closes at most this share of the gap between
#: chance (the majority class's share) and 100 %.
CHANCE_SHARE = 0.06
#: Benches none of whose datasets here is the paper's (its Random set is not published; the
#: planar graphs of the classification are drawn here), and what each dataset is instead.
NOT_THE_PAPERS_DATASET: dict[str, dict[str, str]] = {
    "count": {
        "randomgraph": "Chen et al.'s 10-node graphs, not the paper's Random set (18.8 nodes)",
        "paperlike": "graphs drawn here to the Random set's mean sizes, not the paper's Random set",
    },
    "bandclass": {},
}
#: What a dataset of those benches is, when :data:`NOT_THE_PAPERS_DATASET` does not say.
OTHER_DATASET = {
    "count": "not the paper's Random set",
    "bandclass": "our own draw of the authors' procedure (their file is not published)",
}


@dataclass(frozen=True)
class Mark:
    """One kind of mark: its symbol and its legend line."""

    symbol: str
    name: str
    legend: str


PARAMS = Mark(
    "ᵖ",
    "parameter budget",
    "the model's parameter count is outside "
    f"{BUDGET_BAND[0]:g}–{BUDGET_BAND[1]:g}× the paper's budget of roughly "
    f"{PAPER_PARAMETER_BUDGET // 1000}K for every model (the cell's note gives the count)",
)
AUTHORS_CODE = Mark(
    "ᶜ",
    "authors' code",
    "GNNML3's supports follow the authors' code, not the paper's text (bandwidth b = "
    f"{PAPER_GNNML3_TEXT['bandwidth']:g}, always the {PAPER_GNNML3_TEXT['receptive_field']}-hop "
    "mask M = A + I); the cell's note gives the values",
)
EARLY_STOP = Mark(
    "ᵉ",
    "early stop",
    "seeds stopped once the training loss was below the stop threshold, where the authors' "
    "script runs every epoch (the note says how many)",
)
EPOCH_ONE = Mark(
    "¹",
    "epoch 1",
    "the best epoch is the first: the number is the accuracy after one epoch, not a trained result",
)
CHANCE = Mark(
    "°",
    "chance level",
    "at chance level: the accuracy (at the best or the last epoch) closes at most "
    f"{CHANCE_SHARE:.0%} of the gap between chance (the majority class's share) and 100 %",
)
DATASET = Mark(
    "ᵈ",
    "another dataset",
    "not the paper's dataset (the table's header says which); ratios to the paper's number "
    "compare two datasets",
)
COMMIT = Mark(
    "ᵍ",
    "commit not in the repository",
    "the file records a `git_commit` this repository does not hold: the code that ran "
    "cannot be checked out",
)

#: Every mark of this module, in the order they follow the protocol marks at a cell.
MARKS: tuple[Mark, ...] = (PARAMS, AUTHORS_CODE, EARLY_STOP, EPOCH_ONE, CHANCE, DATASET, COMMIT)


# --------------------------------------------------------------------------- the rules


def _beyond(data: dict[str, Any]) -> bool:
    """A task beyond the paper (``--task pattern:NAME``): no paper protocol to differ from."""
    return str(data.get("task", "")).startswith("pattern:")


def _params(data: dict[str, Any]) -> str | None:
    n = (data.get("model_info") or {}).get("parameters")
    if data.get("model") not in PAPER_MODELS or data.get("bench") not in BUDGET_BENCHES:
        return None
    if not isinstance(n, int) or _beyond(data):
        return None
    low, high = (f * PAPER_PARAMETER_BUDGET for f in BUDGET_BAND)
    if low <= n <= high:
        return None
    return f"{n:,} parameters ({n / PAPER_PARAMETER_BUDGET:.1f}× the paper's roughly 30K)"


def _authors_code(data: dict[str, Any]) -> str | None:
    cfg = (data.get("model_info") or {}).get("config")
    if data.get("model") != "gnnml3" or not isinstance(cfg, dict):
        return None
    support = cfg.get("support", cfg)
    b, hops = support.get("bandwidth"), support.get("receptive_field")
    if b is None or hops is None:
        return None
    want_b, want_hops = PAPER_GNNML3_TEXT["bandwidth"], PAPER_GNNML3_TEXT["receptive_field"]
    if float(b) == want_b and int(hops) == want_hops:
        return None
    return (
        f"GNNML3 with bandwidth b = {float(b):g} and a {int(hops)}-hop mask (the paper's text: "
        f"b = {want_b:g}, {want_hops} hop)"
    )


def _early_stop(data: dict[str, Any]) -> str | None:
    bench = str(data.get("bench"))
    stop = (data.get("config") or {}).get("stop_below")
    if bench not in NO_EARLY_STOP or not stop:
        return None
    runs = data.get("runs", [])
    stopped = [x for x in runs if x.get("stopped_early")]
    if not stopped:
        return None
    return (
        f"{len(stopped)} of {len(runs)} seed(s) stopped once the training loss was below "
        f"{stop:g} (the authors' script runs all {NO_EARLY_STOP[bench]:,} epochs)"
    )


def _epoch_one(data: dict[str, Any]) -> str | None:
    if data.get("bench") != "tu" or data.get("best_epoch") != 1:
        return None
    epochs = int((data.get("config") or {}).get("epochs") or 0)
    last = data.get("last_epoch_mean_accuracy", 0)
    return (
        f"best epoch 1 of {epochs}: {data.get('mean_accuracy', 0):.1f} is the accuracy after "
        f"one epoch, not a trained result (last epoch {last:.1f})"
    )


@functools.cache
def chance_accuracy(dataset: str) -> float | None:
    """The accuracy (%) of always answering the majority class of a TU dataset, from its labels
    (``None``: the dataset is not on this machine)."""
    from matlang.errors import MatlangError
    from matlang.runtime.datasets import load_tu

    name = dataset.removesuffix("-cont")
    try:
        y = load_tu(name).y
    except (MatlangError, OSError, KeyError, ValueError):
        return None
    counts: dict[int, int] = {}
    for label in y.tolist():
        counts[int(label)] = counts.get(int(label), 0) + 1
    return 100.0 * max(counts.values()) / len(y) if counts else None


def _chance(data: dict[str, Any]) -> str | None:
    if data.get("bench") != "tu" or data.get("mean_accuracy") is None:
        return None
    chance = chance_accuracy(str(data.get("dataset")).removesuffix("-cont"))
    if chance is None:
        return None
    line = chance + CHANCE_SHARE * (100.0 - chance)
    best, last = float(data["mean_accuracy"]), data.get("last_epoch_mean_accuracy")
    low = min(best, float(last)) if last is not None else best
    if low > line:
        return None
    which = "best epoch" if best <= line else "last epoch"
    value = best if best <= line else low
    below = " (below chance)" if value < chance else ""
    return f"at chance level: {value:.1f} at the {which}{below}, chance {chance:.1f}"


def _dataset(data: dict[str, Any]) -> str | None:
    if _beyond(data):
        return None
    bench = str(data.get("bench"))
    if bench not in NOT_THE_PAPERS_DATASET:
        return None
    dataset = str(data.get("dataset"))
    what = NOT_THE_PAPERS_DATASET[bench].get(dataset, OTHER_DATASET[bench])
    return f"on `{dataset}`: {what}"


# --------------------------------------------------------------------------- commits

#: The repository whose commits result files are checked against (``None``: no check).
_REPOSITORY: list[Path | None] = [None]


@contextlib.contextmanager
def checking_commits(folder: str | Path | None) -> Iterator[Path | None]:
    """Within the block, a file's ``git_commit`` is checked against the git repository that
    holds ``folder`` (none found, or ``folder`` ``None``: no check, no ᵍ mark)."""
    repo = None if folder is None else repository_of(Path(folder))
    _REPOSITORY.append(repo)
    try:
        yield repo
    finally:
        _REPOSITORY.pop()


def repository_of(folder: Path) -> Path | None:
    """The top of the git work tree holding ``folder``, or ``None``."""
    try:
        out = subprocess.run(
            ["git", "-C", str(folder), "rev-parse", "--show-toplevel"],
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError:
        return None
    return Path(out.stdout.strip()) if out.returncode == 0 and out.stdout.strip() else None


@functools.lru_cache(maxsize=4096)
def commit_in(repo: Path, commit: str) -> bool:
    """Whether ``repo`` holds ``commit`` (``git cat-file -e <commit>^{commit}``)."""
    out = subprocess.run(
        ["git", "-C", str(repo), "cat-file", "-e", f"{commit}^{{commit}}"],
        capture_output=True,
        check=False,
    )
    return out.returncode == 0


def absent_commits(data: dict[str, Any], repo: Path) -> list[str]:
    """The commits a result file's pieces (the file, its ``earlier`` pieces) record that
    ``repo`` does not hold."""
    out = []
    for piece in [data, *(data.get("earlier") or [])]:
        commit = str(piece.get("git_commit") or "").removesuffix("+dirty")
        if commit and commit not in out and not commit_in(repo, commit):
            out.append(commit)
    return out


def _commit(data: dict[str, Any]) -> str | None:
    repo = _REPOSITORY[-1]
    if repo is None:
        return None
    missing = absent_commits(data, repo)
    if not missing:
        return None
    return "`git_commit` " + ", ".join(f"`{c[:12]}`" for c in missing) + " not in this repository"


_RULES = {
    PARAMS: _params,
    AUTHORS_CODE: _authors_code,
    EARLY_STOP: _early_stop,
    EPOCH_ONE: _epoch_one,
    CHANCE: _chance,
    DATASET: _dataset,
    COMMIT: _commit,
}


def cell_marks(data: dict[str, Any]) -> list[tuple[Mark, str]]:
    """The marks of :data:`MARKS` a result file earns, each with its note's phrase."""
    out = []
    for mark in MARKS:
        phrase = _RULES[mark](data)
        if phrase:
            out.append((mark, phrase))
    return out


def provenance_marks(data: dict[str, Any]) -> str:
    """The marks of a file's provenance only (a commit not in the repository), for tables that
    vary the protocol on purpose (the ablation, the float32 table)."""
    return COMMIT.symbol if _commit(data) else ""


def legend(body: str, protocol: Sequence[tuple[str, str]]) -> list[str]:
    """One line per mark that occurs in ``body`` (the report's tables and notes): the protocol
    marks ``protocol`` ((symbol, meaning) pairs), then :data:`MARKS`."""
    pairs = [*protocol, *((m.symbol, m.legend) for m in MARKS)]
    lines = [f"- **{s}** {text}" for s, text in pairs if s in body]
    if not lines:
        return []
    return ["Marks at our numbers (each cell's note says what it means there):", "", *lines, ""]


__all__ = [
    "AUTHORS_CODE",
    "CHANCE",
    "COMMIT",
    "DATASET",
    "EARLY_STOP",
    "EPOCH_ONE",
    "MARKS",
    "PARAMS",
    "Mark",
    "absent_commits",
    "cell_marks",
    "chance_accuracy",
    "checking_commits",
    "legend",
    "provenance_marks",
]
