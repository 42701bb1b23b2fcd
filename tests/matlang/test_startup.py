"""What the light entry points load: parsing and evaluating a sentence without pointwise
functions never imports sympy or torch, ``matlang wl --help`` imports neither numpy nor the
graphs, and ``classify`` never imports torch. Each check runs in a fresh interpreter and reads
its ``sys.modules``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("sympy", "torch", "numpy", "scipy", "networkx", "runtime", "compiler", "benchmarks")


def _loaded(code: str) -> dict[str, bool]:
    """Which of :data:`HEAVY` a fresh interpreter has imported after running ``code``."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps({{m: m in sys.modules for m in {HEAVY}}}))"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    loaded: dict[str, bool] = json.loads(out.stdout.strip().splitlines()[-1])
    return loaded


def test_parse_imports_neither_sympy_nor_torch() -> None:
    loaded = _loaded('import matlang\ne = matlang.parse("tr(A^3)/6")\nassert str(e)')
    assert not loaded["sympy"] and not loaded["torch"], loaded


def test_evaluate_without_functions_imports_neither_sympy_nor_torch() -> None:
    loaded = _loaded('import matlang\nassert matlang.evaluate("tr(A^3)/6", "K4") == 4')
    assert not loaded["sympy"] and not loaded["torch"], loaded
    assert loaded["numpy"]  # the check can fail: the evaluator does load numpy


def test_a_user_function_loads_sympy() -> None:
    loaded = _loaded('import matlang\nmatlang.parse("let f(x) = x^2; onesᵀ f(A ones)")')
    assert loaded["sympy"] and not loaded["torch"], loaded


@pytest.mark.parametrize(
    ("argv", "absent"),
    [
        (["parse", "tr(A^3)/6"], ("sympy", "torch", "numpy")),
        (["eval", "tr(A^3)/6", "--graph", "K4"], ("sympy", "torch")),
        (["classify", "tr(A^3)/6", "--no-witness"], ("torch", "runtime", "compiler")),
        (["wl", "--help"], ("sympy", "torch", "numpy", "runtime")),
        # the bench parser lists every bench, Table 4's too, without importing torch
        (["bench", "--help"], ("torch", "numpy")),
        (["bench", "zinc", "--help"], ("torch", "numpy")),
        (["bench", "mnist75", "--help"], ("torch", "numpy")),
        (["bench", "tu", "--help"], ("torch", "numpy")),
    ],
)
def test_light_commands(argv: list[str], absent: tuple[str, ...]) -> None:
    code = (
        "import contextlib, io\nfrom matlang.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        f"        code = main({argv!r})\n"
        "    except SystemExit as e:\n"
        "        code = e.code\n"
        "assert code == 0, code"
    )
    loaded = _loaded(code)
    assert not any(loaded[m] for m in absent), loaded
