"""``.ci/gpu-runs``, the queue of a lent GPU machine, run here on the CPU: a job expected to need
more time than is left before the deadline is not started, and the next one takes its slot."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from matlang.runtime.datasets import data_available

ROOT = Path(__file__).resolve().parents[2]


def _run_queue(tmp_path: Path, lines: list[str], seconds: int) -> tuple[list[str], Path]:
    jobs = tmp_path / "jobs"
    jobs.write_text("".join(f"{ln}\n" for ln in lines))
    out = tmp_path / "out"
    env = {
        **os.environ,
        # the environment's python as python3 (the script runs `python3 -P -m matlang`)
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "OUT": str(out),
        "CUDA_TESTS": "0",
        "GPU_RUNS_WORK": str(tmp_path / "work"),
        "MATLANG_HEARTBEAT": "1e-9",
    }
    done = subprocess.run(
        ["bash", str(ROOT / ".ci/gpu-runs"), str(jobs), str(seconds), "2"],
        env=env,
        capture_output=True,
        text=True,
        timeout=seconds + 100,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return (out / "jobs.log").read_text().splitlines(), tmp_path / "work"


@pytest.mark.data
@pytest.mark.skipif(not data_available("twodgrid30"), reason="no twodgrid30 data")
@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
def test_a_job_that_cannot_end_before_the_deadline_is_not_started(tmp_path: Path) -> None:
    quick = "bench filter --task low --model mlp --epochs 2 --seeds 1 --threads 1 --json"
    log, work = _run_queue(
        tmp_path,
        [
            f"~9999 {quick} --no-progress",  # cannot end in 200 s: skipped
            f"~1 {quick} --first-seed 3 --no-progress",  # fits: runs
            f"{quick} --first-seed 4",  # no estimate: runs
        ],
        200,
    )
    assert log[0].startswith("3 runs (0 on the GPU")
    assert any(ln.startswith("001 skipped: needs ~9999s, ") for ln in log), log
    assert any(ln.startswith("002 rc=0 ") for ln in log) and any(
        ln.startswith("003 rc=0 ") for ln in log
    ), log
    assert not (work / "001").exists()  # never started
    assert (work / "002" / "filter-twodgrid30-low-mlp.json").exists()
    # each job's log has the heartbeat (MATLANG_HEARTBEAT), though it ran with --no-progress
    assert "filter low mlp seed 3: epoch 2 of 2, " in (work / "002" / "log").read_text()
    assert (work.parent / "out" / "runs.tar.gz").exists()


@pytest.mark.data
@pytest.mark.skipif(not data_available("twodgrid30"), reason="no twodgrid30 data")
@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
def test_an_estimate_is_scaled_by_a_job_of_its_cell_that_ended_in_the_queue(
    tmp_path: Path,
) -> None:
    """Estimates come from another machine (an H100's 378 s on an H200 that needs 206 s): once a
    job of a cell has ended, the next of that cell needs what that one took, scaled — here ~300 s
    of a cell whose first job (~150 s expected) took seconds runs in a 200 s queue, and ~300 s
    of another cell, never measured here, does not."""
    quick = "bench filter --task low --model mlp --epochs 2 --seeds 1 --threads 1 --json"
    other = "bench filter --task high --model mlp --epochs 2 --seeds 1 --threads 1 --json"
    log, work = _run_queue(
        tmp_path,
        [
            f"~150 {quick} --first-seed 1 --no-progress",  # fits: runs, measured
            f"~300 {quick} --first-seed 2 --no-progress",  # scaled by job 001: runs
            f"~300 {other} --first-seed 2 --no-progress",  # another cell: skipped
        ],
        200,
    )
    assert any(ln.startswith("001 rc=0 ") for ln in log), log
    assert any(ln.startswith("002 rc=0 ") for ln in log), log
    assert any(ln.startswith("003 skipped: needs ~300s, ") for ln in log), log
    assert (work / "002" / "filter-twodgrid30-low-mlp.json").exists()
    cell, estimate, took, job = (work / "measured").read_text().splitlines()[0].split("\t")
    assert cell == f"{quick} --no-progress" and estimate == "150" and job == "001"
    assert 1 <= int(took) < 150


WHEELS = (
    "python_graphblas-2025.2.0-py3-none-any.whl",
    "suitesparse_graphblas-9.4.5.0-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
    "donfig-0.8.1.post1-py3-none-any.whl",
    "cffi-2.1.1-cp312-cp312-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
    "pycparser-3.12-py3-none-any.whl",
    "lark-1.3.1-py3-none-any.whl",
)


@pytest.mark.skipif(
    shutil.which("git") is None or not (ROOT / ".git").exists(), reason="not a git checkout"
)
def test_gpu_prepare_writes_the_manifest_and_the_jobs_and_names_the_commit(
    tmp_path: Path,
) -> None:
    """``.ci/gpu-prepare`` in a clone (its wheels there already): the manifest of the clone's
    commit, the jobs ``plan jobs`` lists for its results, and the command to send, naming the
    full commit; refused on a tree with changes."""
    from benchmarks.paper import plan

    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    shutil.copy(ROOT / ".ci/gpu-prepare", clone / ".ci/gpu-prepare")  # this tree's script
    (clone / ".whl").mkdir()
    for name in WHEELS:
        (clone / ".whl" / name).write_bytes(b"")  # present: nothing is downloaded
    env = {**os.environ, "PYTHON": sys.executable}
    done = subprocess.run(
        ["bash", ".ci/gpu-prepare", "400", "3"], cwd=clone, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=clone, capture_output=True, text=True, check=True
    ).stdout.strip()
    manifest = (clone / ".sent/manifest").read_text().splitlines()
    assert commit in manifest[0] and any(ln.endswith("  README.md") for ln in manifest)
    jobs = (clone / ".sent/jobs").read_text().splitlines()
    assert jobs == plan.jobs(clone / "results")
    assert f"MATLANG_SENT_COMMIT={commit} GPU_PARALLEL=3 bash .ci/gpu-runs .sent/jobs 400" in (
        done.stdout
    )
    assert "timeout_s 460" in done.stdout
    (clone / "README.md").write_text("changed\n")
    refused = subprocess.run(
        ["bash", ".ci/gpu-prepare"], cwd=clone, env=env, capture_output=True, text=True
    )
    assert refused.returncode == 1 and "commit first" in refused.stderr
