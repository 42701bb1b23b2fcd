"""The files of the report's pattern-counts row (issue 53), by name: which models, sets and
shortened protocols (:mod:`benchmarks.paper.counts_report` renders them; ``matlang report``
names them when it skips them from the paper's tables)."""

from __future__ import annotations

from benchmarks.paper.paper_numbers import TABLE2_TASKS
from benchmarks.records import result_name

#: The section's heading (README.md links to it).
HEADING = "## Pattern counts as features (beyond the paper)"
#: The rows: plain GIN, then the two ways of reading the counts.
LEARNED_MODELS: tuple[str, ...] = ("gin", "gin+counts", "gsn+counts")
LEARNED_LABEL = {
    "gin": "GIN",
    "gin+counts": "GIN + counts (input)",
    "gsn+counts": "GSN-style (counts at every layer)",
}
#: The counting set and the TU sets of the row.
COUNT_DATASET = "randomgraph"
TU_SETS: tuple[str, ...] = ("mutag", "ptc", "proteins", "enzymes")
TU_LABEL = {"mutag": "MUTAG", "ptc": "PTC", "proteins": "PROTEINS", "enzymes": "ENZYMES"}
#: The counting files' tag and their epoch budget (Table 2's protocol: 200).
COUNT_EPOCHS = 50
COUNT_VARIANT = f"e{COUNT_EPOCHS}"
#: The TU files' tag and their epochs per fold (the paper's protocol: 100).
TU_EPOCHS = 25
TU_VARIANT = f"e{TU_EPOCHS}"


def learned_names() -> list[str]:
    """The row's file names: per model, the counting tasks' (:data:`TABLE2_TASKS`)
    :data:`COUNT_VARIANT` files and the TU sets' :data:`TU_VARIANT` files."""
    return [
        result_name("count", COUNT_DATASET, task, m, COUNT_VARIANT)
        for m in LEARNED_MODELS
        for task in TABLE2_TASKS
    ] + [result_name("tu", d, None, m, TU_VARIANT) for m in LEARNED_MODELS for d in TU_SETS]


__all__ = [
    "COUNT_DATASET",
    "COUNT_EPOCHS",
    "COUNT_VARIANT",
    "HEADING",
    "LEARNED_LABEL",
    "LEARNED_MODELS",
    "TU_EPOCHS",
    "TU_LABEL",
    "TU_SETS",
    "TU_VARIANT",
    "learned_names",
]
