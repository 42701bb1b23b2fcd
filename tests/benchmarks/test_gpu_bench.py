"""The GPU benchmark (benchmarks.perf.gpu) at --quick sizes: every case runs, its contestants
agree numerically, the files record the device, torch and the commit; the torch constants it
compares against (A ⊙ A² by a CSR product) equal the dense evaluator's."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from benchmarks.perf import gpu
from matlang import evaluate
from matlang.graphs import from_edge_index


def _check_record(out: Path, device: str) -> None:
    record = json.loads((out / "gpu.json").read_text())
    assert record["device"] == device and record["torch"] == torch.__version__
    assert record["quick"] is True and "git_commit" in record
    cases = [r["case"] for r in record["rows"]]
    assert cases[:2] == ["node-er500", "node-er2000"]
    assert {"node-8x25", "conv-IA-8x25", "conv-L3-cached-er500", "conv-L3-fresh-er2000",
            "epoch-32x25", "again-n200"} <= set(cases)
    for r in record["rows"]:
        times = r["ours_s"] if isinstance(r["ours_s"], list) else [r["ours_s"]]
        assert all(t > 0 for t in times), r
        if "max_rel_diff" in r:
            assert r["max_rel_diff"] <= 1e-4, r
    md = (out / "gpu.md").read_text()
    assert record["device_name"] in md and "| node-er500 |" in md


def test_gpu_bench_quick_on_the_cpu(tmp_path: Path) -> None:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny kernels: one thread, no waiting on a busy second core
    try:
        code = gpu.main(["--device", "cpu", "--quick", "--out", str(tmp_path), "--repeats", "1"])
    finally:
        torch.set_num_threads(threads)
    assert code == 0
    _check_record(tmp_path, "cpu")


def test_contestants_that_disagree_are_refused() -> None:
    with pytest.raises(AssertionError, match="differ"):
        gpu.agree(torch.ones(3), torch.tensor([1.0, 1.0, 1.1]), "case")


def test_gpu_native_constant_equals_the_dense_evaluator() -> None:
    edges = gpu.er_edges(40, 6, 3, torch.device("cpu"))
    got = gpu.a_hadamard_a2(edges, 40)
    g = from_edge_index(edges, 40)
    dense = np.asarray(evaluate("A ⊙ A²", g), dtype=np.float64)
    want = dense[edges[0].numpy(), edges[1].numpy()]
    assert np.array_equal(got.numpy(), want)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_gpu_bench_quick(tmp_path: Path) -> None:
    assert gpu.main(["--device", "cuda", "--quick", "--out", str(tmp_path), "--repeats", "1"]) == 0
    _check_record(tmp_path, "cuda")
