"""What ``matlang bench`` tells a user: refusals that offer only options the
bench has, ``--help`` listing the models a bench takes, a perf summary that claims only the
files it wrote, a Ctrl-C message that is a command to run, accuracy in % everywhere, plain
values from ``bench merge``, and no progress bars in a log."""

from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
from pathlib import Path

import pytest

from matlang.cli import main
from matlang.errors import MatlangError


def _read(path: Path) -> dict:  # type: ignore[type-arg]
    return json.loads(path.read_text())


def test_iso_refusal_offers_only_what_iso_has(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    iso = ["bench", "iso", "--dataset", "exp", "--model", "gin", "--seeds", "1", "--limit", "3",
           "--out", str(tmp_path)]  # fmt: skip
    assert main(iso) == 0
    capsys.readouterr()
    assert main(iso) == 0  # the same run again: the file holds it, nothing to do
    assert "already holds this run" in capsys.readouterr().err
    other = [*iso[:6], "--seeds", "2", *iso[8:]]
    assert main(other) == 1  # other seeds: refused, and iso has no --append
    err = capsys.readouterr().err
    assert "never replaced without --force" in err and "--out DIR writes elsewhere" in err
    assert "--append" not in err
    with pytest.raises(SystemExit):  # as the message implies: iso takes no --append
        main([*iso, "--append"])
    capsys.readouterr()


def test_count_refusal_still_offers_append(tmp_path: Path) -> None:
    """A bench that has ``--append`` keeps it in the same refusal."""
    from benchmarks.records import ResultFile

    (tmp_path / "f.json").write_text(json.dumps({"config": {"a": 1}, "seeds": [0]}))
    args = argparse.Namespace(out=str(tmp_path), no_save=False, append=False, force=False)
    with pytest.raises(MatlangError, match="--append adds seeds to it"):
        ResultFile(args, "f.json", {"a": 1}, [1])


def test_out_naming_a_file_is_refused_before_any_training(tmp_path: Path) -> None:
    """``--out FILE`` (an existing file, or a folder under one): refused when the run is set up,
    naming the file — it failed after training, at the first save, and the run was lost."""
    from benchmarks.records import ResultFile

    mine = tmp_path / "notes.txt"
    mine.write_text("mine\n")
    for out in (mine, mine / "sub"):
        args = argparse.Namespace(out=str(out), no_save=False, append=False, force=True)
        with pytest.raises(MatlangError, match=f"{re.escape(str(mine))} is a file, not a folder"):
            ResultFile(args, "f.json", {"a": 1}, [0])
    assert mine.read_text() == "mine\n"
    args = argparse.Namespace(out=str(tmp_path / "new" / "sub"), no_save=False, append=False)
    assert ResultFile(args, "f.json", {"a": 1}, [0]).path == tmp_path / "new" / "sub" / "f.json"


def test_tu_help_lists_the_models_tu_takes(capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks.paper.tu import model_choices, run_tu

    with pytest.raises(SystemExit) as done:
        main(["bench", "tu", "--help"])
    assert done.value.code == 0
    options = capsys.readouterr().out.split("\noptions:", 1)[1]
    model_help = " ".join(options.split("\n  --model MODEL", 1)[1].split("\n  -", 1)[0].split())
    named = set(re.findall(r"[a-z0-9+-]+", model_help)) & {*model_choices(), "compiled"}
    assert named == set(model_choices())  # every model tu takes, and only those
    assert "sentence" in named and "gin+features" in named and "compiled" not in model_help
    with pytest.raises(MatlangError, match="unknown model 'compiled'"):
        run_tu("mutag", "compiled", folds=[1])


def test_perf_claims_only_the_files_it_wrote(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from benchmarks.__main__ import main as perf

    out = tmp_path / "perf"
    assert perf(["--quick", "--groups", "backends", "--no-isolate", "--out", str(out)]) == 0
    printed = capsys.readouterr()
    assert "None" not in printed.out
    assert "time_exponent: not measured (group scaling: not run)" in printed.out
    wrote = printed.out.strip().splitlines()[-1]
    assert wrote == f"wrote {out / 'perf.json'}, {out / 'perf.md'}"
    assert sorted(p.name for p in out.iterdir()) == ["perf.json", "perf.md"]
    assert "case/s" not in printed.err  # no progress bar: stderr is not a terminal
    assert perf(["--groups", "backend", "--out", str(out)]) == 1
    assert "did you mean 'backends'?" in capsys.readouterr().err


def test_tu_ctrl_c_prints_the_command_that_resumes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from benchmarks.paper import tu

    real = tu.run_tu

    def interrupted_after_one_fold(*args, on_fold, **kwargs):  # type: ignore[no-untyped-def]
        def then_ctrl_c(partial):  # type: ignore[no-untyped-def]
            on_fold(partial)
            raise KeyboardInterrupt

        return real(*args, on_fold=then_ctrl_c, **kwargs)

    monkeypatch.setattr(tu, "run_tu", interrupted_after_one_fold)
    out = tmp_path / "res"
    cmd = ["bench", "tu", "--dataset", "mutag", "--model", "mlp", "--epochs", "1",
           "--folds", "1:3", "--append", "--out", str(out)]  # fmt: skip
    assert main(cmd) == 130
    err = capsys.readouterr().err
    assert "1 of this run's 3 folds saved" in err
    resume = err.strip().splitlines()[-1].strip()
    assert "A:B" not in err and resume.startswith("matlang bench tu ")
    words = shlex.split(resume)
    assert words[words.index("--folds") + 1] == "2:3" and "--append" in words
    assert words[words.index("--epochs") + 1] == "1"
    assert words[words.index("--out") + 1] == str(out)
    monkeypatch.setattr(tu, "run_tu", real)
    assert main(words[1:]) == 0  # the printed command, run as printed
    capsys.readouterr()
    saved = _read(out / "tu-mutag-mlp.json")
    assert sorted(r["fold"] for r in saved["runs"]) == [1, 2, 3]
    assert saved["partial"]["missing_seed_folds"] == [[0, k] for k in range(4, 11)]


def test_exp_classify_prints_accuracy_in_percent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cmd = ["bench", "exp-classify", "--model", "gin", "--limit", "8", "--epochs", "1",
           "--seeds", "2", "--out", str(tmp_path), "--json"]  # fmt: skip
    assert main(cmd) == 0
    captured = capsys.readouterr()
    printed = json.loads(captured.out)
    saved = _read(Path(printed["file"]))
    assert printed["median_accuracy_percent"] == round(100 * saved["median_accuracy"], 2)
    assert printed["per_seed_percent"] == [round(100 * a, 2) for a in saved["per_seed"]]
    assert all(0 <= a <= 100 for a in printed["per_seed_percent"])
    assert "it/s" not in captured.err and "\r" not in captured.err  # no bars into a log
    # --append: the printed numbers are the file's, all seeds
    assert main([*cmd[:-3], "--first-seed", "2", "--seeds", "1", "--append", "--out",
                 str(tmp_path), "--json"]) == 0  # fmt: skip
    printed = json.loads(capsys.readouterr().out)
    saved = _read(Path(printed["file"]))
    assert len(saved["per_seed"]) == 3
    assert printed["per_seed_percent"] == [round(100 * a, 2) for a in saved["per_seed"]]


def test_merge_prints_plain_values(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], small_paperlike: None
) -> None:
    def count(out: str, *extra: str) -> int:
        base = ["bench", "count", "--task", "star", "--model", "gin", "--dataset", "paperlike"]
        return main([*base, "--epochs", "1", "--out", str(tmp_path / out), *extra])

    name = "count-paperlike-star-gin.json"
    assert count("a", "--seeds", "1") == 0
    assert count("b", "--seeds", "1", "--first-seed", "1") == 0
    capsys.readouterr()
    assert main(["bench", "merge", str(tmp_path / "a" / name), str(tmp_path / "b" / name)]) == 0
    lines = dict(
        line.split(": ", 1) for line in capsys.readouterr().out.strip().splitlines()
    )
    assert lines["written"] == "yes" and lines["partial"] == "none"
    assert json.loads(lines["added"]) == {"seeds": [1]}
    assert not any(re.search(r"\bTrue\b|\bNone\b|\{'", v) for v in lines.values())


def test_progress_bars_only_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every protocol is started through one function, which turns the bars off when stderr
    is not a terminal (a log, a pipe) and leaves --no-progress as given on one."""
    from benchmarks import cli as bench

    seen = []
    fake = type(sys)("benchmarks.paper.fake")
    fake.bench = lambda args: seen.append(args.no_progress) or 0  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "benchmarks.paper.fake", fake)
    run = bench._protocol("fake")
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    assert run(argparse.Namespace(no_progress=False, bench="fake")) == 0
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    assert run(argparse.Namespace(no_progress=False, bench="fake")) == 0
    assert seen == [True, False]


def test_tu_resume_commands_cover_exactly_the_missing_folds() -> None:
    """One command per seed and run of missing folds; a --folds run without --append is not
    continued (its pieces go into the 10-fold file), and the message says so."""
    from benchmarks.paper.tu import resume_message
    from matlang.cli import build_parser

    args = build_parser().parse_args(
        ["bench", "tu", "--dataset", "ptc", "--model", "gin", "--seeds", "2", "--lr", "0.01"]
    )
    planned = [(s, k) for s in (0, 1) for k in range(1, 11)]
    saved = {"runs": [{"seed": 0, "fold": 1}, {"seed": 0, "fold": 2}, {"seed": 1, "fold": 1},
                      {"seed": 1, "fold": 5}]}  # fmt: skip
    text = resume_message(args, planned, saved, Path("r/tu-ptc-gin.json"))
    head, *commands = text.split("\n")
    assert head.startswith("interrupted: 4 of this run's 20 folds saved in r/tu-ptc-gin.json")
    base = "matlang bench tu --dataset ptc --model gin --lr 0.01"
    assert [c.strip() for c in commands] == [
        f"{base} --seed 0 --folds 3:10 --append",
        f"{base} --seed 1 --folds 2:4 --append",
        f"{base} --seed 1 --folds 6:10 --append",
    ]
    for c in commands:  # each parses back to the same settings
        back = build_parser().parse_args(shlex.split(c)[1:])
        assert (back.dataset, back.model, back.lr, back.append) == ("ptc", "gin", 0.01, True)
    args = build_parser().parse_args(
        ["bench", "tu", "--dataset", "ptc", "--model", "gin", "--folds", "1:3"]
    )
    text = resume_message(
        args, [(0, 1), (0, 2), (0, 3)], {"runs": [{"seed": 0, "fold": 1}]},
        Path("r/tu-ptc-gin.folds1-3.json"),
    )
    assert "tu-ptc-gin.folds1-3.json is a file of its own" in text
    assert text.endswith("--seed 0 --folds 2:3 --append")
