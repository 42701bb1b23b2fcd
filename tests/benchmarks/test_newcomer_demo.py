"""What a newcomer meets running the README's demo: ``matlang report --results DIR`` says which
files it read and why it skipped any; re-running a bench whose result file already holds the
same run is no error; a bench whose data PyG downloads says so on a machine without internet."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

import pytest

from benchmarks import cli as bench_cli
from benchmarks.records import AlreadyDone, NoNetwork, ResultFile
from matlang.cli import main
from matlang.errors import MatlangError

ROOT = Path(__file__).resolve().parents[2]


def test_report_lists_the_files_it_read_and_why_it_skipped_the_others(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    protocol = "count-randomgraph-triangle-gnnml3.json"
    shutil.copy(ROOT / "results" / protocol, tmp_path / protocol)
    demo = {"bench": "count", "dataset": "paperlike", "task": "triangle", "model": "compiled",
            "median_test_mse": 2.8e-15}  # fmt: skip
    (tmp_path / "count-paperlike-triangle-compiled.limit40.json").write_text(json.dumps(demo))
    (tmp_path / "notes.json").write_text("{}")
    assert main(["report", "--results", str(tmp_path), "--no-plots"]) == 0
    err = capsys.readouterr().err
    assert f"read 1 result file(s) from {tmp_path}:\n  {tmp_path / protocol}" in err
    assert "skipped 2 file(s):" in err
    assert (
        "count-paperlike-triangle-compiled.limit40.json: a run on part of the data (--limit 40), "
        "not a cell of the paper's tables (those are count-paperlike-triangle-compiled.json); "
        "it holds median_test_mse 2.8e-15"
    ) in err
    assert "notes.json: not a `matlang bench` result (no bench and model)" in err


def _args(tmp_path: Path) -> argparse.Namespace:
    return argparse.Namespace(out=str(tmp_path), no_save=False, append=False, force=False)


def test_the_same_run_again_is_already_done(tmp_path: Path) -> None:
    (tmp_path / "f.json").write_text(json.dumps({"config": {"a": 1}, "seeds": [0]}))
    with pytest.raises(AlreadyDone, match=r"already holds this run .*seed 0.*--force runs it"):
        ResultFile(_args(tmp_path), "f.json", {"a": 1}, [0])
    for config, seeds in (({"a": 2}, [0]), ({"a": 1}, [0, 1])):  # other settings, more seeds
        with pytest.raises(MatlangError, match="never replaced without --force") as e:
            ResultFile(_args(tmp_path), "f.json", config, seeds)
        assert not isinstance(e.value, AlreadyDone)
    partial = {"config": {"a": 1}, "seeds": [0], "partial": {"missing_seeds": [1]}}
    (tmp_path / "f.json").write_text(json.dumps(partial))
    with pytest.raises(MatlangError, match="never replaced") as e:
        ResultFile(_args(tmp_path), "f.json", {"a": 1}, [0])
    assert not isinstance(e.value, AlreadyDone)
    # a bench that records neither settings nor seeds here (BREC): refused as before
    (tmp_path / "g.json").write_text(json.dumps({"pairs": 2}))
    with pytest.raises(MatlangError, match="never replaced") as e:
        ResultFile(_args(tmp_path), "g.json", {}, [])
    assert not isinstance(e.value, AlreadyDone)
    forced = argparse.Namespace(**{**vars(_args(tmp_path)), "force": True})
    assert ResultFile(forced, "f.json", {"a": 1}, [0]).path == tmp_path / "f.json"


@pytest.mark.parametrize(
    ("error", "code"), [(AlreadyDone("f.json already holds this run"), 0), (NoNetwork("none"), 2)]
)
def test_a_bench_already_done_exits_0_and_one_offline_exits_2(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    error: MatlangError,
    code: int,
) -> None:
    fake = type(sys)("benchmarks.paper.fake")

    def bench(args: argparse.Namespace) -> int:
        raise error

    fake.bench = bench  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "benchmarks.paper.fake", fake)
    run = bench_cli._protocol("fake")
    assert run(argparse.Namespace(no_progress=True, bench="fake")) == code
    assert str(error) in capsys.readouterr().err


def test_bench_zinc_offline_says_pyg_downloads_it_and_exits_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    pytest.importorskip("torch_geometric")
    import socket

    def offline(*args: object, **kwargs: object) -> None:
        raise OSError("Name or service not known")

    monkeypatch.setattr(socket, "create_connection", offline)
    argv = ["bench", "zinc", "--model", "gnnml3", "--root", str(tmp_path), "--no-save"]
    assert main(argv) == 2
    printed = capsys.readouterr()
    assert "PyG downloads ZINC from the internet (www.dropbox.com); this machine has none" in (
        printed.err
    )
    assert "Downloading" not in printed.out + printed.err
    assert "Traceback" not in printed.err and "urlopen" not in printed.err
    assert not any(tmp_path.iterdir())  # nothing written
