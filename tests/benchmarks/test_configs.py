"""The paper's named configurations (benchmarks/paper/configs.py), registered in the library's
model registry through :func:`matlang.runtime.models.register_config`."""

from __future__ import annotations

from benchmarks.paper.configs import CONFIGS, register
from matlang.runtime import preprocess as pp
from matlang.runtime.models import MODELS, build_model, load_named_configs, resolve_config


def test_the_paper_configurations_are_about_30k_parameters() -> None:
    register()
    for name, spec in MODELS.items():
        # the paper's two sizes for every model; PPGN also has BREC's own configuration,
        # GNNML3 the counting architecture on the paper's default supports (the library's)
        extra = {"ppgn": {"brec", "brec-xavier"}, "gnnml3": {"spectral"}}.get(name, set())
        assert set(CONFIGS[name]) == {"iso", "count"} | extra
        assert {"iso", "count"} | extra <= set(spec.configs)
        for cfg in ("iso", "count", *({"spectral"} & extra)):
            n = build_model(name, 1, 1, cfg).num_parameters()
            assert 25_000 <= n <= 35_000, f"{name}/{cfg}: {n}"
        assert spec.configs["iso"].layers == 3 and spec.configs["count"].layers == 4


def test_the_library_default_is_count_or_for_gnnml3_spectral() -> None:
    register()
    for m in MODELS:
        paper = "spectral" if m == "gnnml3" else "count"
        assert resolve_config(m) == resolve_config(m, paper), m
    count = resolve_config("gnnml3", "count")
    assert count.support == pp.SupportConfig(basis="adjacency", num_bands=10)


def test_installed_experiments_register_through_the_entry_point() -> None:
    """``build_model("ppgn", ..., config="brec")`` works in a process that never imported
    benchmarks: the library runs the ``matlang.model_configs`` entry points when it lacks a
    name (benchmarks/pyproject.toml)."""
    import subprocess
    import sys

    code = (
        "import sys\nfrom matlang.runtime.models import build_model\n"
        "m = build_model('ppgn', 1, 1, 'brec')\nprint(m.config.layers)\n"
        "print('benchmarks.paper.configs' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["5", "True"]
    load_named_configs()  # idempotent


def test_the_library_tests_shallow_models_are_the_paper_iso_configurations() -> None:
    from tests.runtime.test_models import shallow

    register()
    for m in MODELS:
        assert resolve_config(m, shallow(m)) == resolve_config(m, "iso"), m
