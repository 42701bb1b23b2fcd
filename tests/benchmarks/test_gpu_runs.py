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
