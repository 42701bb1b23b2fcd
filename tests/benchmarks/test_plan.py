"""``python -m benchmarks.paper.plan``: the runs a cell lacks against the paper's seed count, and
the pieces a queue brings back merged into the results folder."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from benchmarks.paper import plan
from matlang.cli import main
from matlang.errors import MatlangError
from matlang.runtime.datasets import data_available


def _write(folder: Path, name: str, record: dict) -> None:  # type: ignore[type-arg]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(json.dumps(record))


def test_missing_seeds_are_the_lowest_not_run() -> None:
    assert plan.missing_seeds({"seeds": [0, 1, 2]}, 10) == [3, 4, 5, 6, 7, 8, 9]
    assert plan.missing_seeds({"seeds": [0, 1, 5, 6]}, 10) == [2, 3, 4, 7, 8, 9]
    assert plan.missing_seeds({"seeds": [3, 11]}, 4) == [0, 1]
    assert plan.missing_seeds({"seeds": list(range(12))}, 10) == []


def test_seed_command_keeps_the_settings_and_replaces_the_run_options() -> None:
    recorded = (
        "matlang bench count --task triangle --model gnnml3 --seeds 3 --stack-seeds 3 "
        "--epochs 200 --batch-size 64 --threads 1 --json --no-progress --force "
        "--out '/tmp/a b' --append --first-seed=4 --device cpu"
    )
    line = plan.seed_command(recorded, 7, "cuda")
    assert shlex.split(line) == [
        "bench", "count", "--task", "triangle", "--model", "gnnml3", "--epochs", "200",
        "--batch-size", "64", "--seeds", "1", "--first-seed", "7", "--device", "cuda",
        "--threads", "1", "--json", "--no-progress",
    ]  # fmt: skip
    with pytest.raises(MatlangError, match="not a recorded bench command"):
        plan.seed_command("python train.py --seeds 3", 0, "cpu")


def test_jobs_list_each_missing_seed_gpu_models_first_cells_taking_turns(tmp_path: Path) -> None:
    def cell(bench: str, model: str, seeds: list[int], task: str | None = None) -> None:
        name = f"{bench}-{'twodgrid30' if bench == 'filter' else 'exp'}"
        if bench == "count":
            name = "count-randomgraph"
        name += (f"-{task}" if task else "") + f"-{model}.json"
        command = f"matlang bench {bench} --model {model} --seeds {len(seeds)} --force"
        if task:
            command = command.replace(" --model", f" --task {task} --model")
        record = {"bench": bench, "model": model, "seeds": seeds, "command": command}
        dataset = {"filter": "twodgrid30", "count": "randomgraph"}.get(bench, "exp")
        _write(tmp_path, name, {**record, "dataset": dataset, "task": task})

    cell("filter", "ppgn", [0, 5], "band")
    cell("exp-classify", "gin", list(range(10)))  # complete: nothing to run
    cell("exp-classify", "gcn", list(range(8)))
    cell("count", "gat", list(range(9)), "triangle")
    cell("exp-classify", "gnnml3-sigmoid", [0])  # a variant beside the paper's rows
    cell("count", "gin", [0], "pattern:C5")  # beyond the paper
    lines = plan.jobs(tmp_path, benches=plan.SEED_BENCHES, wanted=())
    seeds = [
        (w[w.index("--model") + 1], int(w[w.index("--first-seed") + 1]))
        for w in map(shlex.split, lines)
    ]
    ppgn = [("ppgn", s) for s in (1, 2, 3, 4, 6, 7, 8, 9)]
    assert seeds == [*ppgn, ("gcn", 8), ("gat", 9), ("gcn", 9)]
    assert all("--device cuda" in line for line in lines[:8])
    assert all("--device cpu" in line for line in lines[8:])
    assert plan.jobs(tmp_path, gpu_models=(), benches=("count",), wanted=()) == [lines[-2]]
    # a cell no file has begun: every seed from 0, on the GPU for PPGN, after the files' GPU jobs
    name = "filter-twodgrid30-band-ppgn.authors-arch.json"
    wanted = ((name, "matlang bench filter --task band --model ppgn --arch authors --epochs 2000"),)
    more = plan.jobs(tmp_path, benches=plan.SEED_BENCHES, wanted=wanted)
    assert more[:8] == lines[:8] and more[18:] == lines[8:]
    assert [shlex.split(x)[shlex.split(x).index("--first-seed") + 1] for x in more[8:18]] == [
        str(s) for s in range(10)
    ]
    assert all("--arch authors" in x and "--device cuda" in x for x in more[8:18])
    assert "--epochs 2000" in more[8]
    _write(tmp_path, name, {"bench": "filter", "model": "ppgn", "seeds": list(range(10))})
    assert (
        plan.jobs(tmp_path, benches=plan.SEED_BENCHES, wanted=wanted) == lines
    )  # begun (here: complete): its file rules
    # --stack: a CPU count cell whose model stacks trains its missing seeds in one stacked job
    cell("count", "gcn", [0, 1, 2, 5], "star")
    stacked = plan.jobs(tmp_path, benches=("count",), stack=True, wanted=())
    star = [shlex.split(x) for x in stacked if "star" in x]
    assert [(w[w.index("--first-seed") + 1], w[w.index("--seeds") + 1]) for w in star] == [
        ("3", "2"),
        ("6", "4"),
    ]
    assert all(w[w.index("--stack-seeds") + 1] == w[w.index("--seeds") + 1] for w in star)
    assert plan.runs_of([3, 4, 6, 7, 8, 10]) == [(3, 2), (6, 3), (10, 1)]
    assert "--stack-seeds" not in plan.seed_command("matlang bench count --model gcn", 3, "cpu")
    assert plan.main(["jobs", "--results", str(tmp_path), "--bench", "iso"]) == 1


def test_jobs_list_the_tu_folds_a_partial_file_lacks_and_the_wanted_cells(tmp_path: Path) -> None:
    recorded = "matlang bench tu --dataset ptc --model gin --threads 1 --json --out /tmp/x"
    partial = {"missing_seed_folds": [[0, 3], [0, 4], [0, 5], [0, 9], [2, 1]], "note": "…"}
    record = {"bench": "tu", "model": "gin", "command": recorded, "partial": partial}
    _write(tmp_path, "tu-ptc-gin.json", record)
    _write(tmp_path, "tu-mutag-gin.json", {**record, "partial": None})  # complete
    wanted = (
        ("tu-enzymes-cont-ppgn.json", "matlang bench tu --dataset enzymes-cont --model ppgn"),
    )
    lines = plan.jobs(tmp_path, benches=("tu",), tu_wanted=wanted)
    words = [shlex.split(x) for x in lines]
    spans = [
        (w[w.index("--model") + 1], w[w.index("--seed") + 1], w[w.index("--folds") + 1])
        for w in words
    ]
    # PPGN (a GPU model) first: every fold of seed 0, two a job; then the file's missing folds
    assert spans == [
        ("ppgn", "0", "1:2"), ("ppgn", "0", "3:4"), ("ppgn", "0", "5:6"), ("ppgn", "0", "7:8"),
        ("ppgn", "0", "9:10"), ("gin", "0", "3:4"), ("gin", "0", "5:5"), ("gin", "0", "9:9"),
        ("gin", "2", "1:1"),
    ]  # fmt: skip
    assert all("--append" in w and w[w.index("--device") + 1] == "cuda" for w in words[:5])
    assert words[5] == [
        "bench", "tu", "--dataset", "ptc", "--model", "gin", "--seed", "0", "--folds", "3:4",
        "--append", "--device", "cpu", "--threads", "1", "--json", "--no-progress",
    ]  # fmt: skip
    _write(
        tmp_path, "tu-enzymes-cont-ppgn.json", {**record, "partial": None}
    )  # begun: its file rules
    assert plan.jobs(tmp_path, benches=("tu",), tu_wanted=wanted) == lines[5:]
    assert plan.jobs(tmp_path, benches=("count",), tu_wanted=wanted) == []  # no TU unless asked
    # the defaults: the ENZYMES-cont column's PPGN and the authors' GNNML3
    assert {n for n, _ in plan.TU_WANTED} == {
        "tu-enzymes-cont-ppgn.json",
        "tu-enzymes-cont-gnnml3.authors.authors-arch.json",
    }


@pytest.mark.data
@pytest.mark.skipif(not data_available("twodgrid30"), reason="no twodgrid30 data")
def test_collect_merges_the_pieces_a_queue_brought_back(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """Seed 0 in the results folder, seeds 1 and 2 trained apart (one folder a job, as
    ``.ci/gpu-runs`` brings them back): one file of three seeds, each seed's numbers those of its
    piece; a piece of other settings stops the whole collection before anything is written."""
    base = ["bench", "filter", "--task", "low", "--model", "gcn", "--epochs", "2", "--no-progress"]
    results, pieces = tmp_path / "results", tmp_path / "pieces"
    assert main([*base, "--seeds", "1", "--out", str(results)]) == 0
    for job, seed in (("001", 1), ("002", 2)):
        assert (
            main([*base, "--seeds", "1", "--first-seed", str(seed), "--out", str(pieces / job)])
            == 0
        )
    (pieces / "003").mkdir()
    (pieces / "003" / "log").write_text("not a result\n")
    capsys.readouterr()
    name = "filter-twodgrid30-low-gcn.json"
    piece_r2 = [json.loads((pieces / j / name).read_text())["per_seed"][0] for j in ("001", "002")]
    assert plan.main(["collect", str(pieces), "--results", str(results)]) == 0
    assert f"into {results / name}: 2 piece(s), seeds [0, 1, 2]" in capsys.readouterr().out
    merged = json.loads((results / name).read_text())
    assert merged["seeds"] == [0, 1, 2] and merged["per_seed"][1:] == piece_r2
    # a piece trained with other settings: nothing written, the error names it
    assert (
        main(
            [
                *base,
                "--seeds",
                "1",
                "--first-seed",
                "3",
                "--lr",
                "0.01",
                "--out",
                str(pieces / "004"),
            ]
        )
        == 0
    )
    (pieces / "005").mkdir()
    before = (results / name).read_text()
    assert plan.main(["collect", str(pieces), "--results", str(tmp_path / "other")]) == 1
    assert "another config (config.lr = 0.001 there, 0.01 here)" in capsys.readouterr().err
    assert not (tmp_path / "other").exists() and (results / name).read_text() == before
    with pytest.raises(MatlangError, match="no result file with a finished run"):
        plan.collect(pieces / "005", results)


def test_jobs_carry_the_seconds_their_cells_runs_took_on_that_device(tmp_path: Path) -> None:
    """``~SECONDS`` in front of a job: the slowest run of its file on the job's kind of device
    (runs trained alone), times the seeds or folds it trains — what .ci/gpu-runs compares with
    the time left; no estimate where the file has no such run."""
    runs = [
        {"seed": 0, "seconds": 377.4, "device": "NVIDIA H100 80GB HBM3 (cuda)"},
        {"seed": 5, "seconds": 120.0, "device": "NVIDIA H100 80GB HBM3 (cuda)"},
        {"seed": 6, "seconds": 9000.0, "device": "cpu"},  # another kind of device
        {"seed": 7, "seconds": 5000.0, "device": "cuda:0", "stacked_seeds": 3},  # stacked
    ]
    command = "matlang bench filter --task band --model ppgn --epochs 2000"
    record = {"bench": "filter", "model": "ppgn", "seeds": [0, 5, 6, 7], "command": command}
    where = {"dataset": "twodgrid30", "task": "band"}
    _write(tmp_path, "filter-twodgrid30-band-ppgn.json", {**record, **where, "runs": runs})
    lines = plan.jobs(tmp_path, benches=("filter",), wanted=())
    assert [x.split(" ", 1)[0] for x in lines] == ["~378"] * 6
    assert plan.job_words(lines[0])[:3] == ["bench", "filter", "--task"]
    assert plan.estimate({"runs": runs}, "cpu") == 9000
    assert plan.estimate({"runs": runs[:1]}, "cpu") is None  # no CPU run: not known
    assert plan.estimate({"runs": runs}, "cuda", units=2) == 755
    assert plan.with_estimate("bench x", None) == "bench x"
    # TU: the slowest fold on that device, times the folds of the job
    recorded = "matlang bench tu --dataset ptc --model gin"
    folds = [{"seed": 0, "fold": k, "seconds": 10.0 * k, "device": "cpu"} for k in (1, 2)]
    partial = {"missing_seed_folds": [[0, 3], [0, 4], [0, 5]]}
    tu = {"bench": "tu", "model": "gin", "command": recorded, "runs": folds, "partial": partial}
    _write(tmp_path, "tu-ptc-gin.json", tu)
    spans = [
        (x.split(" ", 1)[0], plan.job_words(x)[plan.job_words(x).index("--folds") + 1])
        for x in plan.jobs(tmp_path, benches=("tu",), tu_wanted=())
    ]
    assert spans == [("~40", "3:4"), ("~20", "5:5")]


def test_a_cell_with_no_run_takes_the_estimate_of_its_command_on_another_task(
    tmp_path: Path,
) -> None:
    """The authors' PPGN on high-pass has no file yet: its jobs carry the seconds of the same
    command's band-pass runs (the slowest), not none (a job without an estimate is always
    started, and shares the GPU); another command's runs (our PPGN) lend it nothing."""
    gpu = "NVIDIA H200 (cuda)"
    authors = "matlang bench filter --task band --model ppgn --arch authors --epochs 2000"
    ours = "matlang bench filter --task low --model ppgn --epochs 2000"
    band = {"bench": "filter", "model": "ppgn", "seeds": [0, 1], "command": authors}
    band["runs"] = [{"seed": s, "seconds": t, "device": gpu} for s, t in ((0, 99.2), (1, 120.1))]
    where = {"dataset": "twodgrid30", "task": "band"}
    _write(tmp_path, "filter-twodgrid30-band-ppgn.authors-arch.json", {**band, **where})
    low = {"bench": "filter", "model": "ppgn", "seeds": [0], "command": ours, "task": "low"}
    low["runs"] = [{"seed": 0, "seconds": 900.0, "device": gpu}]
    _write(tmp_path, "filter-twodgrid30-low-ppgn.json", {**low, "dataset": "twodgrid30"})
    wanted = (
        (
            "filter-twodgrid30-high-ppgn.authors-arch.json",
            "matlang bench filter --task high --model ppgn --arch authors --epochs 2000",
        ),
    )
    lines = plan.jobs(tmp_path, benches=("filter",), wanted=wanted)
    high = [x for x in lines if "--task high" in x]
    assert len(high) == 10 and all(x.startswith("~121 ") for x in high), high
    assert all(x.startswith("~900 ") for x in lines if "--task low" in x)
    # no measured command on any task: no estimate
    (tmp_path / "empty").mkdir()
    alone = plan.jobs(tmp_path / "empty", benches=("filter",), wanted=wanted)
    assert len(alone) == 10 and not any(x.startswith("~") for x in alone)
