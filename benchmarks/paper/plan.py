"""What the paper's tables still lack, as runs to make; and the pieces, once made, merged back.

usage::

    python -m benchmarks.paper.plan jobs [--results DIR] [--gpu MODELS] [--bench BENCHES]
                                         [--stack]
    python -m benchmarks.paper.plan collect PIECES [--results DIR] [--dry-run]

``jobs`` reads every protocol result file of ``DIR`` (``results/``; the files the report's tables
read, and Table 3's ``--arch authors`` rows) of the benches that train seeds (``count``, ``filter``,
``bandclass``, ``exp-classify``; TU below) and prints, for each seed a cell lacks against the
paper's count (:data:`~benchmarks.paper.report_flags.PAPER_SEEDS`), the command that trains that one
seed: the file's own recorded command with its seed, output, thread and device options replaced (so
the piece has the file's name and settings), one line per seed, without the leading ``matlang`` —
the job file of ``.ci/gpu-runs``. Models in ``--gpu`` (default ``ppgn``: dense n² tensors) train
with ``--device cuda`` and come first; the others train on a core each, the cells taking turns
(every cell's next seed before any cell's second next), so that a queue stopped at its deadline has
moved every cell. Cells beyond the paper (``count --task pattern:…``), variants and models without a
number in the paper (``compiled``) are not listed. Cells the tables want that no file has begun
(:data:`WANTED`: the authors' PPGN of ``filtering.py``) are listed from seed 0 with the command that
starts them, until their file exists. ``--stack``: a CPU ``count`` cell whose model stacks gets one
job for its missing seeds, trained together (``--stack-seeds``), instead of one job a seed. TU cells
(``tu``, 10-fold files): the folds a partial file lacks and every fold of the cells of
:data:`TU_WANTED` no file has begun, :data:`TU_FOLDS_PER_JOB` folds a job, each with ``--append`` (a
piece of the 10-fold file).

A job whose cell's file has runs on the job's kind of device (CUDA or not; a seed or a fold
each, not stacked) starts with ``~SECONDS``: the slowest of those runs times the seeds or folds
the job trains, which ``.ci/gpu-runs`` reads to start no job that would not end before its
deadline (a job stopped there saves nothing of its unfinished seed): a shorter one later in
the queue takes the slot. A cell with no such run takes the estimate of the same command on
another task of its bench (the authors' PPGN on high-pass from its band-pass runs), where one
has runs: a job without an estimate is always started, and shares the GPU with the others.

``collect`` finds the result files under ``PIECES`` (``.ci/gpu-runs`` brings one folder per
job back: ``PIECES/NNN/<name>.json``) and adds each one's runs to ``DIR/<name>`` with ``matlang
bench merge``'s checks (same bench, model and settings; no seed twice), a new file where
``DIR`` has none. Every merge is checked before anything is written: one failing check writes
nothing. Pieces without a finished seed are skipped.
"""

from __future__ import annotations

import argparse
import math
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.merge import KINDS, merge_files, read_piece
from benchmarks.paper.paper_numbers import PAPER_TABLE1, PAPER_TABLE2, PAPER_TABLE3
from benchmarks.paper.report import load_results
from benchmarks.paper.report_flags import PAPER_SEEDS
from benchmarks.records import read_json_file, write_json
from matlang.errors import MatlangError

#: The benches whose cells are medians over seeds, in the order their jobs are listed.
SEED_BENCHES = ("filter", "bandclass", "exp-classify", "count")
#: The benches ``jobs`` plans: the seed benches, then TU folds (:func:`tu_cells`).
PLANNED_BENCHES = (*SEED_BENCHES, "tu")
#: Per bench, the models with a number in the paper's table (variants and ``compiled`` rows
#: beside them are not the paper's cells).
PAPER_MODELS: dict[str, frozenset[str]] = {
    "exp-classify": frozenset(PAPER_TABLE1),
    "count": frozenset(PAPER_TABLE2),
    "filter": frozenset(PAPER_TABLE3),
    "bandclass": frozenset(PAPER_TABLE3),
}
#: Options a job sets itself: dropped from the recorded command (``True``: takes a value).
_OWN_OPTIONS = {
    "--seeds": True,
    "--first-seed": True,
    "--seed": True,
    "--folds": True,
    "--out": True,
    "--threads": True,
    "--device": True,
    "--nproc": True,
    "--stack-seeds": True,
    "--append": False,
    "--force": False,
    "--json": False,
    "--no-progress": False,
    "--allow-dirty": False,
    "--no-save": False,
}


#: Cells a table wants that no result file has begun: (the file's name, the command of its
#: runs). Table 3's PPGN as the authors' ``filtering.py`` builds it (3 blocks of 20 channels,
#: column sums, one Linear: 3,841 parameters, against our 28,793): the paper's band-pass 0.104
#: is far from our PPGN's, and the smaller model is the first explanation to test (band-pass
#: first: a lease that ends early has run what answers it).
WANTED: tuple[tuple[str, str], ...] = tuple(
    (
        f"filter-twodgrid30-{task}-ppgn.authors-arch.json",
        f"matlang bench filter --task {task} --model ppgn --arch authors --epochs 2000",
    )
    for task in ("band", "high", "low")
)


#: TU cells the tables want that no result file has begun (the file's name, the command of its
#: runs): the ENZYMES-cont column's PPGN (paper protocol) and the authors' GNNML3 for it (their
#: TensorFlow script, ``--protocol authors --arch authors``).
TU_WANTED: tuple[tuple[str, str], ...] = (
    ("tu-enzymes-cont-ppgn.json", "matlang bench tu --dataset enzymes-cont --model ppgn"),
    (
        "tu-enzymes-cont-gnnml3.authors.authors-arch.json",
        "matlang bench tu --dataset enzymes-cont --model gnnml3 --protocol authors --arch authors",
    ),
)
#: Folds per TU job: a queue stopped at its deadline loses at most this many folds' work.
TU_FOLDS_PER_JOB = 2


def missing_seeds(record: dict[str, Any], paper: int) -> list[int]:
    """The seeds a cell needs to reach ``paper`` seeds: the lowest not yet run."""
    have = {int(s) for s in record.get("seeds", [])}
    need = paper - len(have)
    if need <= 0:
        return []
    out: list[int] = []
    seed = 0
    while len(out) < need:
        if seed not in have:
            out.append(seed)
        seed += 1
    return out


def recorded_settings(command: str) -> list[str]:
    """A result file's recorded ``command`` (``matlang bench …``) as words without the leading
    ``matlang`` and without the options a job sets itself (:data:`_OWN_OPTIONS`): the file's
    own settings, which keep a piece mergeable into it."""
    words = shlex.split(command)
    if words[:1] == ["matlang"]:
        words = words[1:]
    if words[:1] != ["bench"]:
        raise MatlangError(f"not a recorded bench command: {command!r}")
    kept: list[str] = []
    skip = False
    for w in words:
        if skip:
            skip = False
            continue
        name = w.split("=", 1)[0]
        if name in _OWN_OPTIONS:
            skip = _OWN_OPTIONS[name] and "=" not in w
            continue
        kept.append(w)
    return kept


#: What every job ends with: one thread, the JSON summary, no progress bars.
_JOB_TAIL = ["--threads", "1", "--json", "--no-progress"]


def estimate(record: dict[str, Any], device: str, units: int = 1) -> int | None:
    """The seconds a job training ``units`` seeds (TU: folds) of ``record``'s cell on ``device``
    may need: the slowest of the file's runs on that kind of device (CUDA or not; runs trained
    alone, not stacked) times ``units``, rounded up; ``None`` where the file has none."""
    cuda = device != "cpu"
    seconds = [
        float(r["seconds"])
        for r in record.get("runs") or []
        if isinstance(r, dict)
        and isinstance(r.get("seconds"), int | float)
        and int(r.get("stacked_seeds") or 1) == 1
        and ("cuda" in str(r.get("device") or "cpu")) == cuda
    ]
    return math.ceil(max(seconds) * units) if seconds else None


def with_estimate(line: str, seconds: int | None) -> str:
    """A job line with its expected seconds in front (``~SECONDS``), where known."""
    return line if seconds is None else f"~{seconds} {line}"


def job_words(line: str) -> list[str]:
    """A job line's command words, without its ``~SECONDS`` estimate."""
    words = shlex.split(line)
    return words[1:] if words[:1] and words[0].startswith("~") else words


def seed_command(command: str, seed: int, device: str, count: int = 1) -> str:
    """``command`` (a result file's, ``matlang bench …``) training only ``seed`` on
    ``device``, one thread, JSON summary, no progress bars; without the leading ``matlang``.
    ``count`` > 1: the seeds ``seed … seed + count − 1``, stacked (``--stack-seeds``)."""
    kept = recorded_settings(command)
    kept += ["--seeds", str(count), "--first-seed", str(seed), "--device", device]
    kept += ["--stack-seeds", str(count)] if count > 1 else []
    return shlex.join(kept + _JOB_TAIL)


#: The models ``bench count --stack-seeds`` trains stacked (benchmarks.paper.stacked).
STACKED_COUNT_MODELS = frozenset({"gnnml3", "mlp", "gcn", "chebnet", "gat"})


def fold_command(command: str, seed: int, first: int, last: int, device: str) -> str:
    """A TU result file's ``command`` training folds ``first..last`` of ``seed`` into the
    10-fold file (``--append``: a piece of it, merged back by ``collect``)."""
    kept = recorded_settings(command)
    kept += ["--seed", str(seed), "--folds", f"{first}:{last}", "--append", "--device", device]
    return shlex.join(kept + _JOB_TAIL)


def tu_cells(
    folder: Path, wanted: Sequence[tuple[str, str]] = TU_WANTED
) -> list[tuple[str, dict[str, Any], list[tuple[int, int]]]]:
    """The TU cells with folds still to train, as (model, record, (seed, fold) pairs): the
    folds a partial TU file of ``folder`` lacks (its ``partial`` record), and every fold of
    seed 0 of each ``wanted`` cell that no file has begun (a record with its command only)."""
    todo: list[tuple[dict[str, Any], list[tuple[int, int]]]] = []
    for path in sorted(folder.glob("tu-*.json")):
        data = read_json_file(path, "plan")
        missing = (data.get("partial") or {}).get("missing_seed_folds") or []
        if missing:
            todo.append((data, [(int(s), int(k)) for s, k in missing]))
    for record in _wanted_records(folder, wanted):
        todo.append((record, [(0, k) for k in range(1, 11)]))
    cells = []
    for record, pairs in todo:
        words = shlex.split(str(record["command"]))
        cells.append((words[words.index("--model") + 1], record, pairs))
    return cells


def fold_jobs(record: dict[str, Any], pairs: Sequence[tuple[int, int]], device: str) -> list[str]:
    """The jobs training the (seed, fold) ``pairs`` of a TU cell (``record``: its file's, or
    its recorded command alone), :data:`TU_FOLDS_PER_JOB` consecutive folds a job, each with
    its :func:`estimate`."""
    command = str(record["command"])
    out = []
    for seed in sorted({s for s, _ in pairs}):
        folds = sorted(k for s, k in pairs if s == seed)
        for i in range(0, len(folds), TU_FOLDS_PER_JOB):
            for first, count in runs_of(folds[i : i + TU_FOLDS_PER_JOB]):
                line = fold_command(command, seed, first, first + count - 1, device)
                out.append(with_estimate(line, estimate(record, device, count)))
    return out


def runs_of(seeds: Sequence[int]) -> list[tuple[int, int]]:
    """Consecutive seeds as ``(first, count)`` runs, in order."""
    out: list[tuple[int, int]] = []
    for s in seeds:
        if out and out[-1][0] + out[-1][1] == s:
            out[-1] = (out[-1][0], out[-1][1] + 1)
        else:
            out.append((s, 1))
    return out


def plan_files(folder: Path) -> list[tuple[Path, dict[str, Any]]]:
    """The files whose cells ``jobs`` fills: the protocol files of :data:`SEED_BENCHES` (what
    the report's tables read) and Table 3's ``--arch authors`` rows, for the paper's models."""
    found = [(r.path, r.data) for r in load_results(folder) if r.bench in SEED_BENCHES]
    for path in sorted(folder.glob("filter-*.authors-arch.json")):
        found.append((path, read_json_file(path, "plan")))
    return [
        (p, d)
        for p, d in found
        if str(d["model"]) in PAPER_MODELS[str(d["bench"])]
        and not str(d.get("task", "")).startswith("pattern:")
    ]


def _wanted_records(folder: Path, wanted: Sequence[tuple[str, str]]) -> list[dict[str, Any]]:
    """The cells of ``wanted`` whose file ``folder`` lacks, as records with no seed run."""
    out = []
    for name, command in wanted:
        if (folder / name).exists():
            continue
        words = shlex.split(command)
        model = words[words.index("--model") + 1]
        out.append({"bench": words[2], "model": model, "seeds": [], "command": command})
    return out


def _taskless(record: dict[str, Any]) -> tuple[str, ...] | None:
    """A record's own settings (:func:`recorded_settings`) without its ``--task``: the cells
    of one command on a bench's other tasks share it (``None``: no recorded command)."""
    if "command" not in record:
        return None
    words = recorded_settings(str(record["command"]))
    if "--task" in words:
        i = words.index("--task")
        del words[i : i + 2]
    return tuple(w for w in words if not w.startswith("--task="))


def jobs(
    folder: Path,
    gpu_models: Sequence[str] = ("ppgn",),
    benches: Sequence[str] = PLANNED_BENCHES,
    wanted: Sequence[tuple[str, str]] = WANTED,
    stack: bool = False,
    tu_wanted: Sequence[tuple[str, str]] = TU_WANTED,
) -> list[str]:
    """One command per missing seed of every cell, and of every cell of ``wanted`` that no
    file has begun (see the module's docstring); ``stack``: one command per run of
    consecutive missing seeds of a CPU ``count`` cell whose model stacks
    (:data:`STACKED_COUNT_MODELS`), trained stacked (1.5–3× the seeds per CPU second at
    batch 64, 3–9× at batch 10: results/perf/stacked-models*.md)."""
    gpu: list[str] = []
    cells: list[list[str]] = []

    def add(on_gpu: bool, lines: list[str]) -> None:
        if on_gpu:
            gpu.extend(lines)
        else:
            cells.append(lines)

    order = {b: i for i, b in enumerate(SEED_BENCHES)}
    records = [d for _, d in sorted(plan_files(folder), key=lambda f: order[str(f[1]["bench"])])]
    siblings: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for data in records:
        if (key := _taskless(data)) is not None:
            siblings.setdefault(key, []).append(data)
    for data in [*records, *_wanted_records(folder, wanted)]:
        bench = str(data["bench"])
        if bench not in benches:
            continue
        seeds = missing_seeds(data, PAPER_SEEDS[bench])
        if not seeds:
            continue
        on_gpu = str(data["model"]) in gpu_models
        device = "cuda" if on_gpu else "cpu"
        stacked = (
            stack and not on_gpu and bench == "count" and str(data["model"]) in STACKED_COUNT_MODELS
        )
        if stacked:
            lines = [seed_command(str(data["command"]), s, device, k) for s, k in runs_of(seeds)]
        else:
            seconds = estimate(data, device)
            if seconds is None:  # the same command on another task of the bench, if measured
                key = _taskless(data)
                same = siblings.get(key, []) if key is not None else []
                known = [estimate(d, device) for d in same]
                seconds = max([k for k in known if k is not None], default=None)
            lines = [
                with_estimate(seed_command(str(data["command"]), s, device), seconds) for s in seeds
            ]
        add(on_gpu, lines)
    if "tu" in benches:
        for model, record, pairs in tu_cells(folder, tu_wanted):
            on_gpu = model in gpu_models
            add(on_gpu, fold_jobs(record, pairs, "cuda" if on_gpu else "cpu"))
    turns = [
        cell[i] for i in range(max(map(len, cells), default=0)) for cell in cells if i < len(cell)
    ]
    return gpu + turns


def collect(pieces: Path, folder: Path, *, dry_run: bool = False) -> list[str]:
    """Merge every result file under ``pieces`` into ``folder``; a line per file written."""
    found: dict[str, list[Path]] = {}
    for path in sorted([*pieces.glob("*.json"), *pieces.glob("*/*.json")]):
        try:
            data = read_piece(path)
        except MatlangError:
            continue  # not a mergeable result file (a log, a summary)
        if data[KINDS[data["bench"]].runs]:
            found.setdefault(path.name, []).append(path)
    if not found:
        raise MatlangError(f"plan collect: no result file with a finished run under {pieces}")
    merged: list[tuple[Path, dict[str, Any], str]] = []
    for name, paths in sorted(found.items()):
        target = folder / name
        into = target.exists()
        base_path, rest = (target, paths) if into else (paths[0], paths[1:])
        record = merge_files(base_path, read_piece(base_path), rest)
        seeds = record.get("seeds", [])
        what = "into" if into else "new"
        merged.append((target, record, f"{what} {target}: {len(paths)} piece(s), seeds {seeds}"))
    if not dry_run:
        folder.mkdir(parents=True, exist_ok=True)
        for target, record, _ in merged:
            write_json(target, record)
    return [line for _, _, line in merged]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.paper.plan", description=__doc__)
    sub = parser.add_subparsers(dest="verb", required=True)
    j = sub.add_parser("jobs", help="one command per missing seed of every cell")
    j.add_argument("--results", default="results")
    j.add_argument("--gpu", default="ppgn", help="models that train on the GPU (comma list)")
    j.add_argument("--bench", default=",".join(PLANNED_BENCHES), help="benches (comma list)")
    j.add_argument(
        "--stack",
        action="store_true",
        help="one stacked job per run of missing seeds of a CPU count cell whose model stacks",
    )
    c = sub.add_parser("collect", help="merge the pieces a queue brought back into results")
    c.add_argument("pieces")
    c.add_argument("--results", default="results")
    c.add_argument("--dry-run", action="store_true", help="check every merge, write nothing")
    args = parser.parse_args(argv)
    try:
        if args.verb == "jobs":
            benches = [b for b in args.bench.split(",") if b]
            unknown = sorted(set(benches) - set(PLANNED_BENCHES))
            if unknown:
                raise MatlangError(
                    f"--bench: {', '.join(unknown)}; known: {', '.join(PLANNED_BENCHES)}"
                )
            gpu = [m for m in args.gpu.split(",") if m]
            print("\n".join(jobs(Path(args.results), gpu, benches, stack=args.stack)))
        else:
            print("\n".join(collect(Path(args.pieces), Path(args.results), dry_run=args.dry_run)))
    except MatlangError as e:
        print(f"plan {args.verb}: {e}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # `plan jobs | head`: the reader has what it wanted
        return 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
