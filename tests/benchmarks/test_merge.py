"""``matlang bench merge``: pieces trained apart (other seeds, folds, BREC pairs) made one file
that equals what one run, or ``--append`` runs, would have written; every refusal leaves the
files as they were."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from matlang.cli import main
from matlang.runtime import datasets

needs_mutag = pytest.mark.skipif(not datasets.data_available("mutag"), reason="no shared data")
needs_brec = pytest.mark.skipif(not datasets.data_available("brec"), reason="no BREC data")


def _read(path: Path) -> dict:  # type: ignore[type-arg]
    return json.loads(path.read_text())


def test_merge_count_seeds_equals_one_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], small_paperlike: None
) -> None:
    def count(out: str, *extra: str) -> int:
        base = ["bench", "count", "--task", "star", "--model", "gin", "--dataset", "paperlike"]
        small = ["--epochs", "1", "--json", "--no-progress", "--out", str(tmp_path / out)]
        return main([*base, *small, *extra])

    name = "count-paperlike-star-gin.json"
    assert count("all", "--seeds", "3") == 0
    assert count("a", "--seeds", "1") == 0
    assert count("b", "--seeds", "2", "--first-seed", "1") == 0
    capsys.readouterr()
    whole, a, b = (_read(tmp_path / d / name) for d in ("all", "a", "b"))
    out = tmp_path / "merged.json"
    assert main(["bench", "merge", str(tmp_path / "a" / name), str(tmp_path / "b" / name),
                 "--out", str(out), "--json"]) == 0  # fmt: skip
    printed = json.loads(capsys.readouterr().out)
    merged = _read(out)
    # the same seeds train to the same numbers, alone or together
    assert merged["seeds"] == [0, 1, 2] and merged["per_seed"] == whole["per_seed"]
    assert merged["median_test_mse"] == statistics.median(whole["per_seed"])
    assert merged["runs"] == a["runs"] + b["runs"]
    assert printed["added"] == {"seeds": [1, 2]} and printed["partial"] is None
    assert merged["command"] == b["command"] and merged["earlier"][0]["seeds"] == [0]
    assert _read(tmp_path / "a" / name) == a  # --out: INTO only read
    # refusals, nothing written: a seed twice, another config, an --out that exists
    before = out.read_bytes()
    assert main(["bench", "merge", str(out), str(tmp_path / "b" / name)]) == 1
    assert "already has seed(s) [1, 2]" in capsys.readouterr().err
    assert count("c", "--seeds", "1", "--first-seed", "5", "--epochs", "2") == 0
    capsys.readouterr()
    assert main(["bench", "merge", str(out), str(tmp_path / "c" / name)]) == 1
    err = capsys.readouterr().err
    assert "was run with another config" in err and str(tmp_path / "c" / name) in err
    assert main(["bench", "merge", str(tmp_path / "a" / name), str(tmp_path / "b" / name),
                 "--out", str(out)]) == 1  # fmt: skip
    assert "never replaced without --force" in capsys.readouterr().err
    assert out.read_bytes() == before
    # in place (INTO gains the runs), after a dry run that writes nothing
    into = tmp_path / "a" / name
    assert main(["bench", "merge", str(into), str(tmp_path / "b" / name), "--dry-run"]) == 0
    assert _read(into) == a
    assert main(["bench", "merge", str(into), str(tmp_path / "b" / name)]) == 0
    assert _read(into)["per_seed"] == whole["per_seed"]


@pytest.mark.data
@needs_mutag
def test_merge_tu_folds_equals_append(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def tu(out: str, *extra: str) -> int:
        return main(
            ["bench", "tu", "--dataset", "mutag", "--model", "mlp", "--epochs", "2",
             "--out", str(tmp_path / out), "--no-progress", "--json", *extra]
        )  # fmt: skip

    name = "tu-mutag-mlp.json"
    assert tu("one", "--folds", "1:3", "--append") == 0  # one piece, for comparison
    assert tu("a", "--folds", "1:2", "--append") == 0
    assert tu("b", "--folds", "3", "--append") == 0
    capsys.readouterr()
    a, b = tmp_path / "a" / name, tmp_path / "b" / name
    assert main(["bench", "merge", str(a), str(b), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    merged, one = _read(a), _read(tmp_path / "one" / name)
    assert printed["added"] == {"seed_folds": [[0, 3]]}
    assert [r["curve"] for r in merged["runs"]] == [r["curve"] for r in one["runs"]]
    for key in ("mean_accuracy", "std_accuracy", "best_epoch", "folds", "partial"):
        assert merged[key] == one[key], key
    assert merged["partial"]["missing_seed_folds"] == [[0, k] for k in range(4, 11)]
    means = [sum(r["curve"][e] for r in merged["runs"]) / 3 for e in range(2)]
    assert merged["mean_accuracy"] == pytest.approx(100 * max(means))
    # a --folds file without --append is for its folds only: refused, with the way to go
    assert tu("c", "--folds", "4") == 0
    capsys.readouterr()
    before = a.read_bytes()
    assert main(["bench", "merge", str(a), str(tmp_path / "c" / "tu-mutag-mlp.folds4-4.json")]) == 1
    assert "--folds A:B --append" in capsys.readouterr().err
    assert main(["bench", "merge", str(a), str(b)]) == 1
    assert "already has seed_fold(s) [(0, 3)]" in capsys.readouterr().err
    assert a.read_bytes() == before
    # an older `sentence` file (no sentence_gnn recorded) had IMPLIED_SENTENCE_GNN: it merges
    # with a newer file that ran those settings, and not with one that ran batch norm
    from benchmarks.paper.tu import IMPLIED_SENTENCE_GNN, SENTENCE_GNN

    assert tu("d", "--folds", "4", "--append") == 0
    capsys.readouterr()
    older = {**_read(b), "model": "sentence"}
    older_file = tmp_path / "older.json"
    for settings, code in ((SENTENCE_GNN, 1), (IMPLIED_SENTENCE_GNN, 0)):
        older_file.write_text(json.dumps(older))
        newer = _read(tmp_path / "d" / name)
        newer = {
            **newer,
            "model": "sentence",
            "config": {**newer["config"], "sentence_gnn": settings},
        }
        (tmp_path / "newer.json").write_text(json.dumps(newer))
        assert main(["bench", "merge", str(older_file), str(tmp_path / "newer.json")]) == code
        if code:
            assert "sentence_gnn" in capsys.readouterr().err
    assert sorted(r["fold"] for r in _read(older_file)["runs"]) == [3, 4]


@needs_brec
def test_merge_brec_pairs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def wl(out: str, pairs: str) -> int:
        base = ["bench", "brec", "--model", "3-wl", "--json", "--no-progress"]
        return main([*base, "--pairs", pairs, "--out", str(tmp_path / out)])

    assert wl("a", "0:2") == 0 and wl("b", "110,265") == 0 and wl("c", "1") == 0
    capsys.readouterr()
    a, b = tmp_path / "a" / "brec-3-wl.json", tmp_path / "b" / "brec-3-wl.json"
    assert main(["bench", "merge", str(a), str(b), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["added"] == {"pairs": [110, 265]}
    merged = _read(a)
    assert [r["pair"] for r in merged["per_pair"]] == [0, 1, 110, 265]
    # 3-WL separates the basic pairs and CFI pair 265, not the strongly regular pair 110
    assert merged["counts"]["Basic"] == 2 and merged["counts"]["Regular"] == 0
    assert merged["counts"]["CFI"] == 1 and merged["separated"] == 3
    assert merged["earlier"][0]["pairs_run"] == [0, 1]
    assert main(["bench", "merge", str(a), str(tmp_path / "c" / "brec-3-wl.json")]) == 1
    assert "already has pair(s) [1]" in capsys.readouterr().err


def test_merge_refuses_what_is_not_a_result_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    iso = tmp_path / "iso.json"
    iso.write_text(json.dumps({"bench": "iso", "seeds": [0]}))
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    assert main(["bench", "merge", str(iso), str(broken)]) == 1
    err = capsys.readouterr().err
    assert "iso.json is not a result file that takes --append (bench 'iso'" in err
    count = tmp_path / "count.json"
    count.write_text(json.dumps({"bench": "count", "runs": [], "seeds": []}))
    assert main(["bench", "merge", str(count), str(broken)]) == 1
    assert f"cannot read {broken}" in capsys.readouterr().err
    assert main(["bench", "merge", str(count), str(tmp_path / "none.json")]) == 1
    assert "there is no result file" in capsys.readouterr().err
    assert main(["bench", "merge", str(count), str(count)]) == 1
    assert "given twice" in capsys.readouterr().err
    other = tmp_path / "other.json"  # an incomplete record: a clear error, no traceback
    other.write_text(json.dumps({"bench": "count", "runs": [], "seeds": [1]}))
    assert main(["bench", "merge", str(count), str(other)]) == 1
    err = capsys.readouterr().err
    assert f"matlang bench merge {other}: it or {count} lacks a field" in err
    assert "Traceback" not in err
    # --out a folder: refused by name, even with --force, and nothing written beside it
    folder = tmp_path / "aside"
    folder.mkdir()
    before = sorted(p.name for p in tmp_path.iterdir())
    assert main(["bench", "merge", str(count), str(other), "--out", str(folder), "--force"]) == 1
    err = capsys.readouterr().err
    assert f"--out {folder} is a folder; --out names the merged file" in err
    assert "Traceback" not in err and sorted(p.name for p in tmp_path.iterdir()) == before
    assert not any(folder.iterdir())


def test_merge_replace_count_seeds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], small_paperlike: None
) -> None:
    """A clean re-run of seeds takes their place: the piece it wholly replaces moves to
    "replaced" (kept, no longer the file's provenance), a piece it replaces in part stays."""
    from benchmarks.records import is_dirty

    def count(out: str, *extra: str) -> int:
        base = ["bench", "count", "--task", "star", "--model", "gin", "--dataset", "paperlike"]
        small = ["--epochs", "1", "--json", "--no-progress", "--out", str(tmp_path / out)]
        return main([*base, *small, *extra])

    name = "count-paperlike-star-gin.json"
    assert count("a", "--seeds", "1") == 0
    assert count("a", "--seeds", "2", "--first-seed", "1", "--append") == 0
    assert count("c", "--seeds", "2") == 0
    capsys.readouterr()
    into, again = tmp_path / "a" / name, tmp_path / "c" / name
    a, c = _read(into), _read(again)
    # seed 0 as if from a dirty tree, the rest from a clean one (whatever this tree is)
    a["git_commit"] = c["git_commit"] = "1" * 40
    a["earlier"][0]["git_commit"] = "0" * 40 + "+dirty"
    into.write_text(json.dumps(a))
    again.write_text(json.dumps(c))
    assert is_dirty(a)
    assert main(["bench", "merge", str(into), str(again)]) == 1  # without --replace: refused
    assert "already has seed(s) [0, 1]" in capsys.readouterr().err
    assert main(["bench", "merge", str(into), str(again), "--replace", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["replaced"] == {"seeds": [0, 1]} and printed["added"] == {"seeds": []}
    merged = _read(into)
    assert merged["seeds"] == [0, 1, 2]
    assert merged["runs"][:2] == c["runs"] and merged["runs"][2] == a["runs"][2]
    # the same seeds train to the same numbers: the median is unchanged
    assert merged["per_seed"] == a["per_seed"]
    assert merged["median_test_mse"] == statistics.median(a["per_seed"])
    # seed 0's piece (dirty) wholly replaced: kept under "replaced", the file is clean
    assert [p["git_commit"] for p in merged["replaced"]] == ["0" * 40 + "+dirty"]
    assert merged["replaced"][0]["replaced_parts"] == [0]
    assert merged["replaced"][0]["replaced_by"] == c["command"]
    assert not is_dirty(merged)
    # the --append piece (seeds 1, 2) lost seed 1 only: it stays, saying so
    assert merged["command"] == c["command"]
    assert merged["earlier"][0]["command"] == a["command"]
    assert merged["earlier"][0]["seeds"] == [0, 1, 2]
    assert merged["earlier"][0]["replaced_parts"] == [1]
    assert len(merged["earlier"]) == 1


@needs_brec
def test_merge_replace_brec_pairs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def wl(out: str, pairs: str) -> int:
        base = ["bench", "brec", "--model", "3-wl", "--json", "--no-progress"]
        return main([*base, "--pairs", pairs, "--out", str(tmp_path / out)])

    assert wl("a", "0:2") == 0 and wl("b", "110") == 0 and wl("c", "0:2") == 0
    capsys.readouterr()
    a, b, c = (tmp_path / d / "brec-3-wl.json" for d in "abc")
    assert main(["bench", "merge", str(a), str(b)]) == 0
    capsys.readouterr()
    first = _read(a)
    assert main(["bench", "merge", str(a), str(c), "--replace", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["replaced"] == {"pairs": [0, 1]}
    merged = _read(a)
    assert [r["pair"] for r in merged["per_pair"]] == [0, 1, 110]
    assert merged["separated"] == first["separated"] == 2
    assert merged["pairs_run"] == [0, 1]
    # the piece that ran pairs 0 and 1 is replaced; the one that ran 110 stays
    assert [p["pairs_run"] for p in merged["replaced"]] == [[0, 1]]
    assert [p["pairs_run"] for p in merged["earlier"]] == [[110]]
