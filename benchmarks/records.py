"""Result files of the experiments: provenance (git commit, versions), file names, writing and
merging seeds (``--append``). Shared by ``matlang bench`` and ``python -m benchmarks``."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matlang.errors import MatlangError
from matlang.evaluator import to_json

#: Files runs write (result files, benchmark outputs): a change there does not make a tree dirty.
OUTPUT_PATHS = (
    ":(top,exclude,glob)results/**",
    ":(top,exclude,glob)benchmarks/**/*.json",
    ":(top,exclude,glob)benchmarks/**/*.md",
    ":(top,exclude,glob)benchmarks/**/*.png",
)


def _git(root: Path, *argv: str) -> str:
    return subprocess.run(
        ["git", "-C", str(root), *argv], capture_output=True, text=True, timeout=10, check=True
    ).stdout


def git_state(root: Path | None = None) -> dict[str, Any] | None:
    """The repository's HEAD commit and whether tracked files other than outputs
    (:data:`OUTPUT_PATHS`) have changes: ``{"commit", "dirty", "changed"}`` and, when dirty,
    ``"diff_sha256"`` (the SHA-256 of ``git diff HEAD`` over those files: two runs with the
    same hash ran the same code). ``None`` outside a repository."""
    root = root or Path(__file__).resolve().parent.parent
    sent = sent_state(root)
    if sent is not None:
        return sent
    paths = ["--", ":(top)", *OUTPUT_PATHS]
    try:
        head = _git(root, "rev-parse", "HEAD").strip()
        status = _git(root, "status", "--porcelain", "--untracked-files=no", *paths)
        diff = _git(root, "diff", "--binary", "HEAD", *paths) if status.strip() else ""
    except (OSError, subprocess.SubprocessError):
        return None
    if not head:
        return None
    changed = [line[3:] for line in status.splitlines() if line.strip()]
    state: dict[str, Any] = {"commit": head, "dirty": bool(changed), "changed": changed}
    if changed:
        state["diff_sha256"] = hashlib.sha256(diff.encode("utf-8")).hexdigest()
    return state


#: Where a copy of the tree sent without its ``.git`` (a lent GPU machine) finds the list of
#: its tracked files' SHA-256 at the commit it was sent from (:func:`write_sent_manifest`).
SENT_MANIFEST = Path(".sent") / "manifest"
#: The manifest's first line: this, then the commit it was written at.
MANIFEST_COMMIT = "# commit "


def sent_state(root: Path) -> dict[str, Any] | None:
    """The commit a copy of the tree was sent from, checked file by file: ``None`` unless
    ``MATLANG_SENT_COMMIT`` is set. The copy is clean when every file of the manifest (the
    tracked files at that commit other than outputs, with their SHA-256, written by the sender
    from a clean tree) is here with that hash; any other file is listed as changed, and a
    missing manifest, or one written at another commit than the one named (a manifest left
    from an earlier send), makes the whole copy unverified (dirty). The commit may be named by
    an abbreviated hash (``git rev-parse --short HEAD``); the state records the full one."""
    commit = os.environ.get("MATLANG_SENT_COMMIT", "").strip()
    if not commit:
        return None
    manifest = root / SENT_MANIFEST
    changed: list[str] = []
    if not manifest.is_file():
        changed = [f"{SENT_MANIFEST} (missing: the copy cannot be checked)"]
    else:
        lines = manifest.read_text(encoding="utf-8").splitlines()
        written_at = lines[0].removeprefix(MANIFEST_COMMIT) if lines else ""
        if _abbreviates(commit, written_at):
            commit = written_at  # `git rev-parse --short` names the same commit
        if not lines or not lines[0].startswith(MANIFEST_COMMIT) or written_at != commit:
            changed.append(
                f"{SENT_MANIFEST} (written at {written_at or 'an unnamed commit'}, not "
                f"{commit}: it cannot vouch for this copy)"
            )
        for line in lines[1:]:
            digest, _, name = line.partition("  ")
            if not name:
                continue
            f = root / name
            try:
                ok = hashlib.sha256(f.read_bytes()).hexdigest() == digest
            except OSError:
                ok = False
            if not ok:
                changed.append(name)
    state: dict[str, Any] = {
        "commit": commit,
        "dirty": bool(changed),
        "changed": changed,
        "checked_by": "manifest",
    }
    if changed:
        state["diff_sha256"] = hashlib.sha256("\n".join(changed).encode("utf-8")).hexdigest()
    return state


def _abbreviates(short: str, full: str) -> bool:
    """Whether ``short`` is an abbreviated hash of the commit ``full`` (git's at least 7 hex
    digits, a prefix of the 40)."""
    return (
        7 <= len(short) < len(full) == 40
        and all(c in "0123456789abcdef" for c in short.lower())
        and full.startswith(short.lower())
    )


def write_sent_manifest(root: Path | None = None) -> Path:
    """Write :data:`SENT_MANIFEST` for a copy of this tree about to be sent to another machine:
    ``<sha256>  <path>`` for every tracked file other than outputs. Refused (MatlangError) when
    the tree is not clean, since the manifest vouches for the commit."""
    root = root or Path(__file__).resolve().parent.parent
    state = git_state(root)
    if state is None or state["dirty"]:
        raise MatlangError(
            "the sent-copy manifest is written from a clean tree at a commit; "
            + ("not a git repository" if state is None else f"changed: {state['changed']}")
        )
    names = _git(root, "ls-files", "-z", "--", ":(top)", *OUTPUT_PATHS).split("\0")
    lines = [
        f"{hashlib.sha256((root / n).read_bytes()).hexdigest()}  {n}"
        for n in names
        if n and (root / n).is_file()
    ]
    path = root / SENT_MANIFEST
    path.parent.mkdir(exist_ok=True)
    head = f"{MANIFEST_COMMIT}{state['commit']}"
    path.write_text("\n".join([head, *lines]) + "\n", encoding="utf-8")
    return path


def git_commit(root: Path | None = None) -> str | None:
    """The repository's HEAD commit, with ``+dirty`` when tracked files other than outputs
    (:data:`OUTPUT_PATHS`) have changes; ``None`` outside a repository."""
    state = git_state(root)
    if state is None:
        return None
    return str(state["commit"]) + ("+dirty" if state["dirty"] else "")


def is_dirty(record: dict[str, Any]) -> bool:
    """Whether a result file (or any run ``--append`` merged into it) was written from a tree
    with uncommitted changes (its ``git_commit`` ends in ``+dirty``)."""
    pieces = [record, *(record.get("earlier") or [])]
    return any(str(p.get("git_commit") or "").endswith("+dirty") for p in pieces)


#: The folder of the project's own result files: written only from a clean tree.
RESULTS_DIR = Path(__file__).resolve().parent.parent / "results"
#: The folder of the performance studies' outputs (``python -m benchmarks``, ``benchmarks.perf.*``).
PERF_DIR = RESULTS_DIR / "perf"


def check_clean_tree(path: Path | None, args: argparse.Namespace) -> None:
    """A result file in the project's ``results/`` folder is written only from a clean tree
    (the code that made it is then one commit); a run from a dirty tree writes elsewhere
    (``--out``), or with ``--allow-dirty`` records its diff's hash and is marked in the
    report."""
    if path is None or getattr(args, "allow_dirty", False):
        return
    try:
        inside = path.resolve().parent == RESULTS_DIR.resolve()
    except OSError:
        return
    state = git_state() if inside else None
    if state is None or not state["dirty"]:
        return
    shown = ", ".join(state["changed"][:5]) + (" …" if len(state["changed"]) > 5 else "")
    raise MatlangError(
        f"{path}: result files in results/ are written only from a clean tree, and tracked "
        f"files have uncommitted changes ({shown}); commit them first, or write elsewhere "
        "with --out DIR (the file records the diff's hash)"
    )


def versions() -> dict[str, str]:
    import numpy
    import torch

    import matlang

    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": numpy.__version__,
        "matlang": matlang.__version__,
        "platform": platform.platform(),
        "cpus": str(os.cpu_count()),
        "torch_threads": str(torch.get_num_threads()),
    }


def task_file_name(task: str) -> str:
    """The task as a result file names it (``pattern:C5`` → ``pattern-C5``; others as given)."""
    prefix = "pattern:"
    if not task.startswith(prefix):
        return task
    safe = "".join(c if c.isalnum() or c in "_" else "_" for c in task[len(prefix) :])
    return f"pattern-{safe}"


def result_name(
    bench: str, dataset: str, task: str | None, model: str, variant: str | None = None
) -> str:
    """``<bench>-<dataset>[-<task>]-<model>[.<variant>].json`` (the dataset left out when it
    is the bench itself: ``brec-3-wl.json``); a variant (``limit100``, ``sentence-<hash>``)
    names a run that is not the protocol's full run, so that it never takes the full run's
    file."""
    parts = [bench] + ([dataset] if dataset != bench else [])
    parts += ([task_file_name(task)] if task else []) + [model]
    return "-".join(parts) + (f".{variant}" if variant else "") + ".json"


def provenance(record: dict[str, Any], start: float) -> dict[str, Any]:
    """``record`` with the command, the wall time since ``start``, the versions and the commit."""
    state = git_state()
    commit = None if state is None else state["commit"] + ("+dirty" if state["dirty"] else "")
    return {
        **record,
        "command": "matlang " + " ".join(sys.argv[1:]) if sys.argv else None,
        "wall_seconds": round(time.perf_counter() - start, 3),
        "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "versions": versions(),
        "git_commit": commit,
        # a dirty tree: which code ran is the commit plus this diff
        **({"git_diff_sha256": state["diff_sha256"]} if state and state["dirty"] else {}),
    }


def write_json(path: Path, record: dict[str, Any]) -> None:
    """Write ``record`` as JSON through a temporary file and a rename, so that an interrupted
    write (Ctrl-C) leaves the earlier file whole, never a truncated one."""
    text = json.dumps(to_json(record), indent=1, ensure_ascii=False) + "\n"
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def check_replaceable(path: Path, heading: str, *, force: bool = False) -> None:
    """Refuse to replace ``path`` unless it is absent, ``force`` is given, or it looks like a
    file this project writes there: Markdown starting with ``heading``, a PNG matplotlib wrote,
    a JSON object. Nothing a user saved under one of those names is overwritten silently."""
    if force or not path.exists():
        return
    if path.is_file():
        head = path.read_bytes()[:200]
        if path.suffix == ".md" and head.startswith(heading.encode()):
            return
        if path.suffix == ".png" and head.startswith(b"\x89PNG") and b"Matplotlib" in head:
            return
        if path.suffix == ".json" and head.lstrip().startswith(b"{"):
            return
    raise MatlangError(
        f"{path} exists and was not written by matlang report; it is never replaced without "
        "--force (or give another --out)"
    )


def with_model_config(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` with its model's full configuration in ``model_info.config`` when the bench
    recorded only a parameter count (the TU table): the configuration its protocol builds
    (:func:`benchmarks.paper.models.recorded_configuration`)."""
    info = record.get("model_info")
    if not isinstance(info, dict) or info.get("config") is not None:
        return record
    from benchmarks.paper.models import recorded_configuration

    described = recorded_configuration(record)
    if described is None:
        return record
    return {**record, "model_info": {**info, **described}}


#: The option whose checks the merge functions make, for their messages (``action``).
APPEND = "--append"
#: What a result file of a training bench must share with a run appended to it.
SAME_SETTINGS = ("bench", "dataset", "task", "model", "config", "targets", "data")
#: Values an older file wrote for the same thing under its old name: the exact evaluator moved
#: from ``compiler.dense`` to ``matlang.evaluator`` in the layout change, with the same values.
RENAMED: dict[tuple[str, str], dict[str, str]] = {
    ("targets", "evaluator"): {"compiler.dense (exact)": "matlang.evaluator (exact)"},
}


def current_names(key: str, value: Any) -> Any:
    """``value`` (a result file's ``key`` entry) with the names :data:`RENAMED` knows made
    current, so that a file written before a rename compares equal to a run of today."""
    if not isinstance(value, dict):
        return value
    out = dict(value)
    for (where, field_name), renames in RENAMED.items():
        if where == key and out.get(field_name) in renames:
            out[field_name] = renames[out[field_name]]
    return out


@dataclass(frozen=True)
class Parts:
    """What a run adds to its file when the unit is not a seed (the TU table: a fold of a
    seed).

    Args:
        key: the field of each entry of ``runs`` that names its part (``"fold"``), or the
            fields whose values together do (``("seed", "fold")``: a part is a pair).
        planned: every part the file is for (``1..10``); the ones absent make it partial.
        this_run: the parts this run trains.
        merge: ``merge(path, old, record)``: the file with this run's parts added (it
            recomputes the summary over every part).
        resume: the option that adds parts, for messages (``"--folds A:B"``).
    """

    key: str | tuple[str, ...]
    planned: list[Any]
    this_run: list[Any]
    merge: Callable[[Path, dict[str, Any], dict[str, Any]], dict[str, Any]]
    resume: str

    def of(self, run: dict[str, Any]) -> Any:
        """The part an entry of ``runs`` is."""
        if isinstance(self.key, str):
            return run.get(self.key)
        return tuple(run.get(k) for k in self.key)

    @property
    def name(self) -> str:
        """The parts' name in messages and in ``partial``: ``fold``, ``seed_fold``."""
        return self.key if isinstance(self.key, str) else "_".join(self.key)


def check_new_parts(path: Path, old: dict[str, Any], parts: Parts) -> None:
    have = {parts.of(r) for r in old.get("runs", [])}
    both = sorted(have & set(parts.this_run))
    if both:
        raise MatlangError(f"--append: {path} already has {parts.name}(s) {both}")


def mark_missing_seeds(record: dict[str, Any], missing: Sequence[int]) -> dict[str, Any]:
    """``record`` marked ``"partial"`` with the seeds still ``missing`` (none: not partial)."""
    record = {k: v for k, v in record.items() if k != "partial"}
    if missing:
        record["partial"] = {
            "missing_seeds": sorted(missing),
            "note": "an interrupted run: add the missing seeds with --append "
            "(--first-seed, --seeds)",
        }
    return record


def mark_missing_parts(record: dict[str, Any], parts: Parts) -> dict[str, Any]:
    """``record`` marked ``"partial"`` with the planned parts its runs lack (none: not
    partial)."""
    record = {k: v for k, v in record.items() if k != "partial"}
    have = {parts.of(r) for r in record.get("runs", [])}
    missing = [p for p in parts.planned if p not in have]
    if missing:
        record["partial"] = {
            f"missing_{parts.name}s": missing,
            "note": f"not every {parts.name.replace('_', '/')} ran: add the missing ones "
            f"with --append {parts.resume}",
        }
    return record


class ResultFile:
    """The file a bench run writes, and the rules that keep every earlier result.

    - A file that exists is never replaced without ``--force``: ``--append`` adds seeds to it
      (same settings, new seeds), ``--out`` writes elsewhere. The error names the first setting
      that differs, or says that the settings are the same.
    - Seeds are saved as they finish: until the run ends the file is marked ``"partial"`` with
      the seeds still missing, which ``--append`` can add later. A Ctrl-C leaves that file (the
      writes go through a rename, so it is never half-written) and a one-line message.

    Args:
        args: the parsed command line (``out``, ``no_save``, ``append``, ``force``, ``json``).
        name: the file name (:func:`result_name`).
        config: the run's settings known before training (compared with an existing file).
        seeds: the seeds this run trains, in order.
        implied: settings a file written before they were recorded had (a key missing from
            its ``config`` has this value).
        parts: when a run adds parts other than seeds (folds), what they are.
        resume: Ctrl-C's message from what was saved (``None``: nothing) and the file, for
            runs whose parts are neither seeds nor ``parts`` (BREC's pairs).
    """

    def __init__(
        self,
        args: argparse.Namespace,
        name: str,
        config: dict[str, Any],
        seeds: list[int],
        implied: dict[str, Any] | None = None,
        parts: Parts | None = None,
        resume: Callable[[dict[str, Any] | None, Path | None], str] | None = None,
    ) -> None:
        self.args = args
        self.resume = resume
        self.parts = parts
        self.start = time.perf_counter()
        self.seeds = list(seeds)
        self.append = bool(getattr(args, "append", False))
        self.path: Path | None = None if args.no_save else Path(args.out) / name
        self.old: dict[str, Any] | None = None
        self.saved: dict[str, Any] | None = None
        self.implied = dict(implied or {})
        if self.append and self.path is None:
            raise MatlangError("--append adds seeds to a result file: it cannot go with --no-save")
        if self.path is None:
            return
        folder = Path(args.out)
        clash = next((p for p in (folder, *folder.parents) if p.exists() and not p.is_dir()), None)
        if clash is not None:  # before any training: saving would fail after it
            raise MatlangError(
                f"--out {args.out}: {clash} is a file, not a folder (--out names the folder "
                f"that gets {name})"
            )
        check_clean_tree(self.path, args)
        if self.append and parts is not None and not self.path.exists():
            return  # parts (folds) build their file piece by piece: the first piece starts it
        if self.append:
            self.old = read_result(self.path)
            self.old["config"] = {**self.implied, **self.old.get("config", {})}
            if parts is None:
                check_new_seeds(self.path, self.old, self.seeds)
            else:
                check_new_parts(self.path, self.old, parts)
            _check_config(self.path, self.old["config"], config)
        elif self.path.exists() and not getattr(args, "force", False):
            # only runs that record their settings and seeds (BREC's record neither here)
            same = parts is None and resume is None and config and self.seeds
            if same and _holds_this_run(self.path, config, self.implied, self.seeds):
                raise AlreadyDone(
                    f"{self.path} already holds this run (the same settings, seed"
                    f"{'s' if len(self.seeds) > 1 else ''} {seed_ranges(self.seeds)}): nothing "
                    "to do. --force runs it again and replaces the file; --out DIR writes "
                    "elsewhere"
                )
            raise MatlangError(
                _exists_message(self.path, config, self.implied, appendable=hasattr(args, "append"))
            )

    def save(self, record: dict[str, Any], *, done: bool) -> dict[str, Any]:
        """Write ``record`` (the runs so far; ``done``: all of them), merged with the file's
        earlier seeds under ``--append``, and return what was written."""
        record = with_model_config(provenance(record, self.start))
        if self.parts is not None:
            return self._save_parts(record, self.parts)
        finished = [r["seed"] for r in record.get("runs", [])]
        missing = [] if done else [s for s in self.seeds if s not in finished]
        if self.old is not None:
            assert self.path is not None
            try:
                record = merge_seeds(self.path, self.old, record)
            except MatlangError as e:  # keep what was trained: beside the file, not in it
                a, b = record["seeds"][0], record["seeds"][-1]
                aside = self.path.with_name(f"{self.path.stem}.seeds-{a}-{b}.json")
                write_json(aside, record)
                raise MatlangError(f"{e}. This run's results are in {aside}") from None
            earlier = self.old.get("partial", {}).get("missing_seeds", [])
            missing = sorted((set(earlier) - set(finished)) | set(missing))
        record = mark_missing_seeds(record, missing)
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_json(self.path, record)
        self.saved = record
        return record

    def _save_parts(self, record: dict[str, Any], parts: Parts) -> dict[str, Any]:
        if self.old is not None:
            assert self.path is not None
            try:
                record = parts.merge(self.path, self.old, record)
            except MatlangError as e:  # keep what was trained: beside the file, not in it
                aside = self.path.with_name(f"{self.path.stem}.new-{parts.name}s.json")
                write_json(aside, record)
                raise MatlangError(f"{e}. This run's results are in {aside}") from None
        record = mark_missing_parts(record, parts)
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_json(self.path, record)
        self.saved = record
        return record

    def run(self, body: Any) -> int:
        """Run ``body(save_partial)``, which returns ``(record, summary)`` of the whole run;
        save and print the summary. ``save_partial(record)`` saves the seeds finished so far.
        Ctrl-C: a one-line message (what was saved, how to go on), exit code 130."""
        try:
            record, summary = body(lambda rec: self.save(rec, done=False))
        except KeyboardInterrupt:
            print(self._interrupted(), file=sys.stderr)
            return 130
        record = self.save(record, done=True)
        # a callable value is computed from what was saved (all seeds, under --append)
        summary = {k: v(record) if callable(v) else v for k, v in summary.items()}
        if self.path is not None:
            summary = {k: record[k] if k in record else v for k, v in summary.items()}
            summary = {**summary, "file": str(self.path)}
        summary = {**summary, "wall_seconds": record["wall_seconds"]}
        if self.args.json:
            print(json.dumps(to_json(summary), ensure_ascii=False))
        else:
            for k, v in summary.items():
                print(f"{k}: {v}")
        return 0

    def _interrupted(self) -> str:
        if self.resume is not None:
            return self.resume(self.saved, self.path)
        if self.saved is None or self.path is None:
            if self.path is None:
                where = "nothing saved (--no-save)"
            elif self.path.exists():
                where = f"{self.path} unchanged"
            else:
                where = "nothing written"
            return f"interrupted: no finished seed saved, {where}"
        if self.parts is not None:
            missing = self.saved.get("partial", {}).get(f"missing_{self.parts.name}s", [])
            return (
                f"interrupted: {self.parts.name}s {missing} missing in {self.path} (partial); "
                f"go on with --append {self.parts.resume}"
            )
        missing = self.saved.get("partial", {}).get("missing_seeds", [])
        hint = ""
        if missing and missing == list(range(missing[0], missing[-1] + 1)):
            hint = f"; go on with --append --first-seed {missing[0]} --seeds {len(missing)}"
        return (
            f"interrupted: seeds {self.saved['seeds']} saved in {self.path} "
            f"(partial, {len(missing)} missing){hint}"
        )


def _check_config(path: Path, old: dict[str, Any], new: dict[str, Any]) -> None:
    for key, value in new.items():
        if key in old and old[key] != value:
            raise MatlangError(
                f"--append: {path} was run with {key} = {old[key]!r}, this run has {value!r}"
                " (another config); run with --force to replace it, or with --out to "
                "keep both"
            )


class NoNetwork(MatlangError):
    """Data that a bench downloads, on a machine without internet: the command says so and
    exits 2 (no traceback, nothing written)."""


class AlreadyDone(MatlangError):
    """A run whose result file is there already, complete, with the same settings and seeds:
    nothing is run or written, and the command exits 0 (re-running a README demo is no
    error); ``--force`` runs it again."""


def _holds_this_run(
    path: Path, config: dict[str, Any], implied: dict[str, Any], seeds: Sequence[int]
) -> bool:
    """Whether the result file at ``path`` is complete (not partial) and holds exactly
    ``seeds`` under the settings ``config``."""
    try:
        old = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(old, dict) or old.get("partial"):
        return False
    old_config = {**implied, **(old.get("config") or {})}
    same = all(k in old_config and old_config[k] == v for k, v in config.items())
    return same and sorted(old.get("seeds") or []) == sorted(seeds)


def _exists_message(
    path: Path, config: dict[str, Any], implied: dict[str, Any], *, appendable: bool = True
) -> str:
    """Why an existing result file is not replaced, and what to do instead (``--append`` only
    where the bench has it: ``bench iso`` has not)."""
    try:
        old = json.loads(path.read_text(encoding="utf-8"))
        old_config = {**implied, **old.get("config", {})} if isinstance(old, dict) else {}
        seeds = old.get("seeds", []) if isinstance(old, dict) else []
    except (OSError, ValueError):
        old_config, seeds = {}, []
    differs = [k for k, v in config.items() if k in old_config and old_config[k] != v]
    what = (
        f"another config ({differs[0]} = {old_config[differs[0]]!r}, this run has "
        f"{config[differs[0]]!r})"
        if differs
        else "the same settings"
        + (f"; it holds seed{'s' if len(seeds) > 1 else ''} {seed_ranges(seeds)}" if seeds else "")
    )
    append = "--append adds seeds to it, " if appendable else ""
    return (
        f"{path} exists ({what}); it is never replaced without --force: {append}--out DIR "
        "writes elsewhere"
    )


def seed_ranges(seeds: Sequence[int]) -> str:
    """``[0, 1, 2, 5]`` as ``0–2, 5``."""
    runs: list[list[int]] = []  # [first, last] of each run of consecutive seeds
    for s in sorted(seeds):
        if runs and runs[-1][1] == s - 1:
            runs[-1][1] = s
        else:
            runs.append([s, s])
    return ", ".join(str(a) if a == b else f"{a}–{b}" for a, b in runs)


def check_same_settings(
    path: Path,
    old: dict[str, Any],
    new: dict[str, Any],
    keys: Sequence[str],
    *,
    action: str = APPEND,
) -> None:
    """``--append``'s condition: ``old`` (the file at ``path``, its names made current by
    :func:`current_names`) and ``new`` agree on every one of ``keys``, or an error naming the
    first that differs. ``action`` starts the message (``--append``, or ``matlang bench merge
    FILE``); only ``--append``'s says how to keep both runs."""
    for key in keys:
        mine = current_names(key, old.get(key))
        if mine != new.get(key):
            hint = "; run with --force to replace it, or with --out to keep both"
            where, a, b = _first_difference(key, mine, new.get(key))
            raise MatlangError(
                f"{action}: {path} was run with another {key} ({where} = {_short(a)} there, "
                f"{_short(b)} here)" + (hint if action == APPEND else "")
            )


def _short(value: Any) -> str:
    """A setting's value in a message: its JSON, at most 200 characters."""
    return json.dumps(value, ensure_ascii=False)[:200]


def _first_difference(name: str, a: Any, b: Any) -> tuple[str, Any, Any]:
    """The first entry where ``a`` and ``b`` differ, as ``(dotted name, a's, b's)``: inside
    dicts key by key (an absent key reads ``None``), else the values themselves."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in [*a, *(k for k in b if k not in a)]:
            if a.get(k) != b.get(k):
                return _first_difference(f"{name}.{k}", a.get(k), b.get(k))
    return name, a, b


def merge_seeds(
    path: Path, old: dict[str, Any], record: dict[str, Any], *, action: str = APPEND
) -> dict[str, Any]:
    """``record`` (one run of a training bench) with the seeds of ``old`` (the result file at
    ``path``) added: runs sorted by seed, the median over all of them, and the earlier runs'
    provenance under ``"earlier"``. Same settings and other seeds, or an error (``action``
    starts its message: :func:`check_same_settings`)."""
    median_key = next(k for k in record if k.startswith("median_"))
    check_same_settings(path, old, record, SAME_SETTINGS, action=action)
    check_new_seeds(path, old, record["seeds"], action=action)
    runs = sorted(old["runs"] + record["runs"], key=lambda r: r["seed"])
    metric = next(k for k in record["runs"][0] if k.startswith("test_"))
    per_seed = [r[metric] for r in runs]
    provenance = (
        "seeds",
        "command",
        "wall_seconds",
        "finished",
        "versions",
        "git_commit",
        "git_diff_sha256",
    )
    return {
        **record,
        median_key: statistics.median(per_seed),
        "per_seed": per_seed,
        "seeds": [r["seed"] for r in runs],
        "runs": runs,
        "earlier": [{k: old.get(k) for k in provenance}, *old.get("earlier", [])],
    }


def check_new_seeds(
    path: Path, old: dict[str, Any], seeds: list[int], *, action: str = APPEND
) -> None:
    both = sorted(set(old.get("seeds", [])) & set(seeds))
    if both:
        hint = "; pick --first-seed" if action == APPEND else ""
        raise MatlangError(f"{action}: {path} already has seed(s) {both}{hint}")


def read_json_file(path: Path, action: str = APPEND) -> Any:
    """The JSON in the result file ``path``, or an error starting with ``action`` that says
    the file is missing or unreadable."""
    if not path.is_file():
        raise MatlangError(f"{action}: there is no result file {path}")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise MatlangError(f"{action}: cannot read {path}: {e}") from None


def read_result(path: Path) -> dict[str, Any]:
    data = read_json_file(path)
    if not isinstance(data, dict) or not isinstance(data.get("runs"), list):
        raise MatlangError(f"--append: {path} is not a result file of a training bench")
    return data
