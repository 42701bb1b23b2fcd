"""Commands from other distributions (the ``matlang.cli`` entry point group): the experiments
add ``bench`` and ``report``; without them, those commands say how to get them (exit 2)."""

from __future__ import annotations

import argparse
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import pytest

from matlang.cli import build_parser, main, plugins


def _installed(monkeypatch: pytest.MonkeyPatch, *eps: EntryPoint) -> None:
    monkeypatch.setattr(plugins, "entry_points", lambda group: list(eps))


@pytest.mark.parametrize("argv", [["bench"], ["bench", "iso", "--dataset", "exp"], ["report"]])
def test_without_the_experiments_bench_and_report_say_how_to_get_them(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    _installed(monkeypatch)  # matlang installed without matlang-benchmarks
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"matlang {argv[0]}: the experiments are a separate distribution" in err
    assert "pip install -e benchmarks" in err
    assert "Traceback" not in err


def test_without_the_experiments_help_lists_them_as_needing_the_distribution(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _installed(monkeypatch)
    text = " ".join(build_parser().format_help().split())  # unwrapped
    assert "bench" in text and "report" in text
    assert text.count("(needs matlang-benchmarks)") == 2


def test_a_plugin_that_does_not_load_is_named(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    gone = EntryPoint("bench", "no_such_module_here:register", plugins.GROUP)
    _installed(monkeypatch, gone)
    assert main(["bench", "iso"]) == 2
    err = capsys.readouterr().err
    assert "pip install -e benchmarks" in err and "no_such_module_here" in err


def _hello(sub: Any) -> None:
    p = sub.add_parser("hello", help="say hello")
    p.set_defaults(func=lambda args: print("hello") or 0)


def test_any_distribution_can_add_a_command(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _installed(monkeypatch, EntryPoint("hello", f"{__name__}:_hello", plugins.GROUP))
    assert main(["hello"]) == 0
    assert capsys.readouterr().out == "hello\n"
    assert main(["bench"]) == 2  # bench and report still say how to get them


def test_the_experiments_register_bench_and_report_through_the_entry_points() -> None:
    """This checkout installs ``benchmarks`` (bash .ci/setup): its two commands come from its
    pyproject's entry points, not from the library."""
    names = {ep.name: ep.value for ep in plugins.plugin_entry_points()}
    if "bench" not in names:
        pytest.skip("matlang-benchmarks is not installed (pip install -e benchmarks)")
    assert names["bench"] == "benchmarks.cli:register"
    assert names["report"] == "benchmarks.cli:register_report"
    sub = next(
        a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)
    )
    assert {"iso", "count", "tu", "zinc", "perf", "merge"} <= set(
        next(
            a for a in sub.choices["bench"]._actions if isinstance(a, argparse._SubParsersAction)
        ).choices
    )


def test_the_source_layout_carries_the_entry_points(tmp_path: Path) -> None:
    """``bash .ci/layout DIR`` (the sources run where nothing is installed: a GPU machine's
    ``python -P -m matlang bench …``) writes the experiments' entry points beside them."""
    import subprocess
    from importlib.metadata import distributions

    root = Path(__file__).resolve().parents[2]
    subprocess.run(["bash", ".ci/layout", str(tmp_path / "lay")], cwd=root, check=True)
    found = {
        ep.name: ep.value
        for d in distributions(path=[str(tmp_path / "lay")])
        for ep in d.entry_points
        if ep.group == plugins.GROUP
    }
    assert found == {
        "bench": "benchmarks.cli:register",
        "report": "benchmarks.cli:register_report",
    }
