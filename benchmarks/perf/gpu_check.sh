#!/usr/bin/env bash
# Issue 31's device checks in one command, for a GPU machine (run from the repository root):
# the CUDA tests (pytest -k cuda: the torch constant stage against GraphBLAS, no host copy on
# repeated calls, the benchmark's --quick run, the TU parity tests), then the GPU table
# (benchmarks/perf/gpu.py at full sizes). Logs and gpu.json/gpu.md go to $OUT (default
# benchmarks/). Expects matlang importable (an editable install, or PYTHONPATH with the wheels
# that the GPU machine lacks: python-graphblas, suitesparse-graphblas, donfig, cffi, pycparser,
# lark).
set -o pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-benchmarks}
PY=${PYTHON:-python3}
if ! $PY -c "import matlang.compiler, benchmarks" 2>/dev/null; then
    $PY -m pip install -q --no-deps --no-build-isolation -e . -e benchmarks || exit 1
fi
$PY -c "import torch; print(torch.__version__, torch.cuda.get_device_name(0))"
timeout 240 $PY -m pytest -q -p no:cacheprovider --maxfail=20 -rfs -k cuda \
    tests/compiler/test_torch_constants.py tests/compiler/test_repeated_calls.py \
    tests/benchmarks/test_gpu_bench.py 2>&1 | tee "$OUT/gpu-pytest.log"
tests=$?
timeout 300 $PY -m benchmarks.perf.gpu --device cuda --out "$OUT" 2>&1 | tee "$OUT/gpu-bench.log"
bench=$?
echo "pytest -k cuda: exit $tests; benchmark: exit $bench"
exit $(( tests || bench ))
