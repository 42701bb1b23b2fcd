"""One case in a fresh process: ``python -m benchmarks.perf.worker < case.json``.

Reads a case (see :mod:`benchmarks.perf.cases`) from stdin and prints its result as one JSON line,
the last line of stdout. A fresh process per case keeps the memory of one case from counting
in another's, and lets a case run under an address-space cap: with ``"mem_cap_gib"`` the
process's ``RLIMIT_AS`` is set to its current size plus the cap, so that an allocation beyond
it fails inside the case (recorded as "out of memory") instead of pressing on a shared machine.
"""

from __future__ import annotations

import json
import resource
import sys
from typing import Any

RESULT_PREFIX = "@@result "


def _vm_size_bytes() -> int | None:
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def cap_memory(gib: float) -> bool:
    """Limit this process's address space to its current size plus ``gib`` GiB."""
    size = _vm_size_bytes()
    if size is None:
        return False
    limit = size + int(gib * 2**30)
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    return True


def main() -> int:
    spec: dict[str, Any] = json.loads(sys.stdin.read())
    # import everything the case needs before the cap is set, so the cap bounds the case only
    import torch  # noqa: F401

    import benchmarks.perf.peers  # noqa: F401 - registers the peers' contestant kinds
    from benchmarks.perf.cases import run_case
    from matlang.runtime import sparse

    sparse.available_backends()  # imports torch_sparse when it is installed
    capped = False
    if spec.get("mem_cap_gib"):
        capped = cap_memory(float(spec["mem_cap_gib"]))
    result = run_case(spec)
    result["mem_cap_gib"] = spec.get("mem_cap_gib") if capped else None
    sys.stdout.write("\n" + RESULT_PREFIX + json.dumps(result) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
