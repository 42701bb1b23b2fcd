"""What a user installs: ``pip install .`` builds one top-level package, ``matlang``, carrying its
grammar and the datasets; it works from a folder holding files named like the repository's other
folders (``runtime.py``, ``compiler.py``, ``benchmarks/``), which must not shadow anything."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "--disable-pip-version-check", "-w", str(out), str(ROOT)],
        check=True,
        capture_output=True,
    )
    (path,) = out.glob("matlang-*.whl")
    return path


def test_the_wheel_installs_one_name(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert top == {"matlang"}
    for need in (
        "matlang/grammars/matlang.lark",
        "matlang/compiler/api.py",
        "matlang/runtime/batch.py",
        "matlang/_data/README.md",
        "matlang/_data/tu/mutag/mutag.mat",
    ):
        assert need in names, need
    assert not any(n.startswith(("benchmarks/", "tests/", "compiler/", "runtime/")) for n in names)


def test_an_installed_wheel_ignores_look_alikes_in_the_working_folder(
    wheel: Path, tmp_path: Path
) -> None:
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--disable-pip-version-check",
         "--target", str(site), str(wheel)],
        check=True,
        capture_output=True,
    )
    work = tmp_path / "work"
    (work / "benchmarks").mkdir(parents=True)
    poison = "raise ImportError('the user folder was imported')\n"
    for name in ("runtime.py", "compiler.py", "grammars.py", "benchmarks/__init__.py"):
        (work / name).write_text(poison)
    script = (
        "import matlang, matlang.data\n"
        "from matlang.nn import SentenceConv\n"
        "from matlang.data import load_tu, data_root\n"
        "print(matlang.__file__)\n"
        "print(data_root())\n"
        "print(len(load_tu('MUTAG').graphs))\n"
        "print(float(matlang.compile('tr(A^3)/6', dtype='float64')(['K4'])[0]))\n"
        "print(matlang.evaluate('tr(A^3)/6', 'K5'))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "MATLANG_DATA"}
    env["PYTHONPATH"] = str(site)
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=work, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    where, data, mutag, k4, k5 = done.stdout.split()
    assert Path(where).is_relative_to(site)
    assert Path(data) == site / "matlang" / "_data"
    assert (int(mutag), float(k4), int(k5)) == (188, 4.0, 10)


@pytest.mark.parametrize("module", ["matlang.nn", "matlang.transforms", "matlang.data",
                                    "matlang.models"])  # fmt: skip
def test_front_doors_are_typed_and_lazy(module: str) -> None:
    """Each front door names for type checkers (under ``if TYPE_CHECKING``) exactly the names it
    loads lazily, lists them in ``__all__`` and ``dir()``, and resolves every one of them."""
    import ast
    import importlib

    mod = importlib.import_module(module)
    tree = ast.parse(Path(mod.__file__).read_text(encoding="utf-8"))
    typed = {
        a.asname or a.name
        for node in tree.body
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
        for imp in node.body
        if isinstance(imp, ast.ImportFrom)
        for a in imp.names
    }
    assert typed == set(mod._LAZY) == set(mod.__all__) == set(dir(mod))
    for name in mod.__all__:
        assert getattr(mod, name) is not None
