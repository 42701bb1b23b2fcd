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


@pytest.mark.data
@pytest.mark.skipif(not data_available("twodgrid30"), reason="no twodgrid30 data")
@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
def test_a_job_that_cannot_end_before_the_deadline_is_not_started(tmp_path: Path) -> None:
    jobs = tmp_path / "jobs"
    quick = "bench filter --task low --model mlp --epochs 2 --seeds 1 --threads 1 --json"
    jobs.write_text(
        f"~9999 {quick} --no-progress\n"  # cannot end in 200 s: skipped
        f"~1 {quick} --first-seed 3 --no-progress\n"  # fits: runs
        f"{quick} --first-seed 4\n"  # no estimate: runs
    )
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
        ["bash", str(ROOT / ".ci/gpu-runs"), str(jobs), "200", "2"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    log = (out / "jobs.log").read_text().splitlines()
    assert log[0].startswith("3 runs (0 on the GPU")
    assert any(ln.startswith("001 skipped: needs ~9999s, ") for ln in log), log
    assert any(ln.startswith("002 rc=0 ") for ln in log) and any(
        ln.startswith("003 rc=0 ") for ln in log
    ), log
    work = tmp_path / "work"
    assert not (work / "001").exists()  # never started
    assert (work / "002" / "filter-twodgrid30-low-mlp.json").exists()
    # each job's log has the heartbeat (MATLANG_HEARTBEAT), though it ran with --no-progress
    assert "filter low mlp seed 3: epoch 2 of 2, " in (work / "002" / "log").read_text()
    assert (out / "runs.tar.gz").exists()


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
