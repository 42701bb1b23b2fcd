"""Numbers quoted in the READMEs, checked against the files they come from.

``results/README.md`` and ``benchmarks/README.md`` state measured numbers in prose and tables.
Each such number must come from a file: either it sits in a section rendered from the result
files (between ``<!-- rendered: NAME -->`` and ``<!-- /rendered -->``, re-rendered and compared
by :func:`stale_sections`), or the block that states it — a paragraph, a list item (with the
items it is nested in), a table row (with its header and the paragraph just above the table) —
cites its source files, as a path in backticks or a link (``results/tu-mutag-gin.json``,
``[perf.md](../results/perf/perf.md)``; globs such as ``results/tu-*-gnnml3.authors.json`` and
folders cite every JSON and Markdown file they match), and every number of the block equals a
value of a cited file at the precision shown.

What counts as a value of a file:

- JSON: every number, every number written inside a string (a command's ``--seeds 10``, a
  protocol's text), every list's length, and each list of numbers' smallest and largest entry
  (a seed range). Long lists of numbers (training curves) contribute only their length,
  smallest and largest entry, so that a wrong figure is not matched by chance on a curve.
- Any other text file (Markdown tables of a benchmark, the Python that sets a protocol's
  constants, ``pyproject.toml``): every number written in it.

A quoted number matches a value when they agree at the quoted precision: ``0.818`` matches
0.8177, ``1.31e-3`` matches 0.0013098, ``213`` matches 213 only; ``29.9K`` is 29,900 to the
hundred; ``10⁵`` is 100,000 exactly. A unit after the number allows its conversion from the
file's unit: ``%`` (a fraction × 100), ``min`` and ``h`` (seconds / 60, / 3600), ``ms`` and
``µs`` (seconds × 10³, × 10⁶). Ranges (``0.784–0.844``), ``±`` and ``/`` lists are checked
number by number.

Not checked, because they are not measurements (the whole list): numbers inside code spans and
code blocks (commands, sentences, identifiers); numbers glued to a letter or a hyphenated word
(``L3``, ``A²``, ``3-WL``, ``10-fold``, ``2-FWL``); numbers named by :data:`NAMING_WORDS`
(``Table 2``, ``Eq. 7``, ``Theorem 5``, ``seed 0``, ``pair 291``: references and indices, not
amounts); years (1900–2099 after a name); targets and bounds written after ``≤`` or ``≥``
(``≤ 1.2×: met``: the requirement, whose measurement beside it is checked); list markers and
footnote marks (superscript digits on their own). Headings are checked like paragraphs.

``python -m benchmarks.paper.quoted`` checks both READMEs (exit 1 on a finding, each named by
file, line and number); ``--render`` rewrites their rendered sections from the result files, as
``matlang report`` does when it reports this repository's ``results/``.
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
READMES = ("results/README.md", "benchmarks/README.md")

#: Words after which a number is a name or an index, not an amount.
NAMING_WORDS = frozenset(
    """table tables eq eq. eqs. equation theorem theorems thm thm. remark remarks lemma
    section § appendix app. figure def. definition seed seeds pair pairs fold folds
    step python cpython torch pyg layer stage""".split()
)
#: Files other than JSON whose written numbers are values (a picture cites nothing).
TEXT_SUFFIXES = frozenset({".md", ".py", ".toml", ".txt", ".lark", ".cfg", ".csv"})
#: Longer numeric lists than this are curves: only their length and extremes are values.
LONG_LIST = 32
#: Values of a unit after a quoted number, as multiples of the value in the file.
UNIT_FACTORS: dict[str, tuple[float, ...]] = {
    "%": (1.0, 100.0),
    "min": (1.0, 1 / 60),
    "h": (1.0, 1 / 3600),
    "ms": (1.0, 1e3),
    "µs": (1.0, 1e6),
}
_SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")
_NUMBER = re.compile(
    r"(?P<num>[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]+)?|[0-9]+(?:\.[0-9]+)?(?:[eE][-−+]?[0-9]+)?)"
    r"(?P<sup>[⁰¹²³⁴⁵⁶⁷⁸⁹⁻]+)?(?P<kilo>[KM](?![A-Za-z]))?"
)
_UNIT = re.compile(r"\s?(%|min\b|h\b|ms\b|µs\b)")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
_LINK = re.compile(r"\[([^\]]*)\]\(([^)\s]+)\)")
_PATHLIKE = re.compile(r"^[\w./*+\-]+$")
_RENDER_OPEN = re.compile(r"<!-- rendered: ([\w-]+) -->")
_RENDER_CLOSE = "<!-- /rendered -->"
_LIST_ITEM = re.compile(r"^(\s*)(?:[-*]|\d+\.)\s+")


@dataclass(frozen=True)
class Quoted:
    """A number as a reader sees it: its text, value and the half-width of its precision."""

    text: str
    value: float
    tolerance: float
    factors: tuple[float, ...] = (1.0,)

    def matches(self, v: float) -> bool:
        return any(abs(v * f - self.value) <= self.tolerance for f in self.factors)


@dataclass
class Block:
    """A paragraph, list item or table row of a README, with the files it cites."""

    path: str
    line: int
    text: str
    sources: list[Path] = field(default_factory=list)


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    number: str
    why: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.number}: {self.why}"


# ---------------------------------------------------------------------------------------------
# Numbers in text
# ---------------------------------------------------------------------------------------------


def _precision(num: str) -> tuple[float, float]:
    """The value of a number as written and half of its last digit's unit."""
    plain = num.replace(",", "").replace("−", "-")
    value = float(plain)
    mantissa, _, exponent = plain.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    scale = 10.0 ** int(exponent) if exponent else 1.0
    return value, 0.5 * 10.0**-decimals * scale * (1 + 1e-9)


def numbers_in(text: str, *, prose: bool = True) -> Iterator[Quoted]:
    """The numbers of ``text``; with ``prose`` those a reader takes as amounts (module doc)."""
    for m in _NUMBER.finditer(text):
        start, end = m.span()
        before = text[:start]
        after = text[end:]
        prev = before[-1:] or " "
        num = m["num"]
        if prose:
            if prev.isalnum() or prev in "_^.#\\":
                continue
            if prev in "-−" and before[-2:-1].isalnum():
                continue
            if re.match(r"[A-Za-z_]|-[A-Za-z]|\.\d", after):
                continue
            if re.search(r"[≤≥]\s*$", before):
                continue  # a target or a bound ("≤ 1.2×: met"), not a measurement
            # "Table 2", "Remarks 1–4", "pairs 252, 253 and 254": names and indices
            word = re.search(r"([\w§.]+)\s*(?:[0-9]+\s*(?:–|,|and|or)\s*)*$", before)
            if word and word[1].lower().rstrip(":") in NAMING_WORDS:
                continue
            if re.fullmatch(r"(19|20)\d\d", num) and re.search(r"(\b[A-Z][\w.]*|&)\s$", before):
                continue
        if re.search(r"[eE][-−+]?\d{3}", num):
            continue  # not a quantity (a hash, an id)
        value, tol = _precision(num)
        if prev in "-−" and not before[-2:-1].isalnum():
            value = -value
        if m["sup"]:
            exponent = m["sup"].translate(_SUPERSCRIPT)
            if not re.fullmatch(r"-?\d+", exponent):
                continue
            value, tol = value ** int(exponent), 0.0
        if m["kilo"]:
            scale = 1e3 if m["kilo"] == "K" else 1e6
            value, tol = value * scale, max(tol * scale, 0.5)
        unit = _UNIT.match(after)
        factors = UNIT_FACTORS[unit[1]] if unit else (1.0,)
        yield Quoted(m.group(0), value, tol, factors)


def _prose(text: str) -> str:
    """``text`` without what the checker skips: code spans, link targets, HTML comments."""
    text = re.sub(r"<!--.*?-->", " ", text)
    text = _CODE_SPAN.sub(" ", text)
    text = _LINK.sub(lambda m: m[1] if "`" not in m[1] else " ", text)
    return text


# ---------------------------------------------------------------------------------------------
# Values of files
# ---------------------------------------------------------------------------------------------


def _walk_json(data: Any, out: list[float]) -> None:
    if isinstance(data, bool) or data is None:
        return
    if isinstance(data, (int, float)):
        if math.isfinite(data):
            out.append(float(data))
    elif isinstance(data, str):
        out.extend(q.value for q in numbers_in(data, prose=False))
    elif isinstance(data, dict):
        for key, value in data.items():
            out.extend(q.value for q in numbers_in(str(key), prose=False))
            _walk_json(value, out)
    elif isinstance(data, list):
        out.append(float(len(data)))
        plain = [x for x in data if isinstance(x, (int, float)) and not isinstance(x, bool)]
        if plain:
            out.extend([float(min(plain)), float(max(plain))])
        if len(plain) > LONG_LIST and len(plain) == len(data):
            return
        for item in data:
            _walk_json(item, out)


@cache
def values_of(path: Path) -> tuple[float, ...]:
    """Every value a number quoted from ``path`` may equal (module doc), sorted."""
    out: list[float] = []
    if path.is_dir():
        for child in sorted(path.rglob("*")):
            if child.suffix in (".json", ".md") and child.is_file():
                out.extend(values_of(child))
    elif path.suffix == ".json":
        _walk_json(json.loads(path.read_text(encoding="utf-8")), out)
    elif path.suffix in TEXT_SUFFIXES:
        out.extend(q.value for q in numbers_in(path.read_text(encoding="utf-8"), prose=False))
    return tuple(sorted(set(out)))


def _has_value(values: tuple[float, ...], q: Quoted) -> bool:
    import bisect

    for f in q.factors:
        lo, hi = (q.value - q.tolerance) / f, (q.value + q.tolerance) / f
        i = bisect.bisect_left(values, lo - 1e-12 * abs(lo))
        if i < len(values) and values[i] <= hi + 1e-12 * abs(hi):
            return True
    return False


# ---------------------------------------------------------------------------------------------
# READMEs as blocks
# ---------------------------------------------------------------------------------------------


def _cited(text: str, readme: Path, root: Path) -> list[Path]:
    """The existing files and folders ``text`` names in code spans or links."""
    found: list[Path] = []
    names = [m[2] for m in _CODE_SPAN.finditer(text)] + [m[2] for m in _LINK.finditer(text)]
    for name in names:
        name = name.split("#")[0].strip()
        if not name or not _PATHLIKE.match(name) or "/" not in name and "." not in name:
            continue
        for base in (root, readme.parent):
            matches = sorted(glob.glob(str(base / name))) if "*" in name else [str(base / name)]
            hits = [Path(p) for p in matches if Path(p).exists() and Path(p).resolve() != readme]
            if hits:
                found.extend(p.resolve() for p in hits)
                break
    return found


def blocks(readme: Path, root: Path = ROOT, text: str | None = None) -> Iterator[Block]:
    """The blocks of ``readme`` (or of ``text`` read as if it were at ``readme``) whose numbers
    are checked: rendered sections and code are left out; a table row carries its header's and
    caption's citations, a list item its parents'."""
    rel = str(readme.relative_to(root)) if readme.is_relative_to(root) else str(readme)
    if text is None:
        text = readme.read_text(encoding="utf-8")
    lines = text.splitlines()
    para: list[tuple[int, str]] = []
    last_para_sources: list[Path] = []
    table_sources: list[Path] | None = None
    items: list[tuple[int, list[Path]]] = []  # (indent, sources) of the open list items
    in_code = in_rendered = False

    def flush() -> Iterator[Block]:
        nonlocal para, last_para_sources
        if not para:
            return
        text = "\n".join(t for _, t in para)
        own = _cited(text, readme, root)
        first = para[0][1]
        m = _LIST_ITEM.match(first)
        inherited: list[Path] = []
        if m:
            indent = len(m[1])
            while items and items[-1][0] >= indent:
                items.pop()
            inherited = [p for _, ps in items for p in ps]
            items.append((indent, own))
        elif not first.startswith(" "):
            items.clear()
        last_para_sources = own + inherited
        yield Block(rel, para[0][0], _LIST_ITEM.sub("", text, count=1), own + inherited)
        para = []

    for no, line in enumerate(lines, 1):
        stripped = line.strip()
        if stripped.startswith("```"):
            yield from flush()
            in_code = not in_code
            continue
        if in_code:
            continue
        if _RENDER_OPEN.search(stripped):
            yield from flush()
            in_rendered = True
            continue
        if stripped == _RENDER_CLOSE:
            in_rendered = False
            continue
        if in_rendered:
            continue
        if stripped.startswith("|"):
            yield from flush()
            if table_sources is None:  # the header row
                table_sources = last_para_sources + _cited(line, readme, root)
                yield Block(rel, no, line, table_sources)
            elif not re.fullmatch(r"\|[\s|:-]+\|", stripped):
                yield Block(rel, no, line, table_sources + _cited(line, readme, root))
            continue
        table_sources = None
        if not stripped:
            yield from flush()
            continue
        if stripped.startswith("#"):
            yield from flush()
            items.clear()
            yield Block(rel, no, re.sub(r"^#+\s*", "", stripped), [])
            continue
        if _LIST_ITEM.match(line) and para:
            yield from flush()
        para.append((no, line))
    yield from flush()


def check(readme: Path, root: Path = ROOT, text: str | None = None) -> list[Finding]:
    """Every number of ``readme`` (or of ``text`` read as if it were at ``readme``) that no
    cited file holds at the precision shown."""
    findings: list[Finding] = []
    for block in blocks(readme, root, text):
        quoted = list(numbers_in(_prose(block.text)))
        if not quoted:
            continue
        if not block.sources:
            for q in quoted:
                findings.append(Finding(block.path, block.line, q.text, "the block cites no file"))
            continue
        values = tuple(sorted({v for s in block.sources for v in values_of(s)}))
        names = ", ".join(sorted({_short(s, root) for s in block.sources}))
        for q in quoted:
            if not _has_value(values, q):
                findings.append(Finding(block.path, block.line, q.text, f"not in {names}"))
    return findings


def _short(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root.resolve()))
    except ValueError:
        return str(path)


# ---------------------------------------------------------------------------------------------
# Rendered sections
# ---------------------------------------------------------------------------------------------


def sections(text: str) -> Iterator[tuple[str, int, int]]:
    """(name, start, end) of each rendered section's body in ``text`` (character offsets)."""
    for m in _RENDER_OPEN.finditer(text):
        close = text.find(_RENDER_CLOSE, m.end())
        if close < 0:
            raise ValueError(f"rendered section {m[1]!r} has no {_RENDER_CLOSE}")
        yield m[1], m.end(), close


def render_text(text: str, results: Path) -> str:
    """``text`` with every rendered section's body rebuilt from the files under ``results``."""
    from benchmarks.paper.readme_tables import RENDERERS

    out, last = [], 0
    for name, start, end in sections(text):
        if name not in RENDERERS:
            raise ValueError(f"no renderer for the section {name!r} (known: {sorted(RENDERERS)})")
        out += [text[last:start], "\n", RENDERERS[name](results).rstrip("\n"), "\n"]
        last = end
    out.append(text[last:])
    return "".join(out)


def stale_sections(readme: Path, results: Path) -> list[str]:
    """The names of the rendered sections of ``readme`` that differ from a fresh rendering."""
    text = readme.read_text(encoding="utf-8")
    fresh = render_text(text, results)
    old = {n: text[a:b] for n, a, b in sections(text)}
    new = {n: fresh[a:b] for n, a, b in sections(fresh)}
    return [n for n in old if old[n] != new.get(n)]


def render_readmes(results: str | Path, out: str | Path | None = None) -> list[Path]:
    """Rewrite the rendered sections of the READMEs from ``results`` when that is this
    repository's result folder (and the report goes there too); the rewritten READMEs.
    ``matlang report`` calls this, so one command regenerates every table a reader sees."""
    folder = Path(results).resolve()
    elsewhere = out is not None and Path(out).resolve() != folder
    if folder != (ROOT / "results").resolve() or elsewhere:
        return []
    written = []
    for rel in READMES:
        path = ROOT / rel
        text = path.read_text(encoding="utf-8")
        fresh = render_text(text, folder)
        if fresh != text:
            path.write_text(fresh, encoding="utf-8")
            written.append(path)
    return written


def main(argv: Iterable[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m benchmarks.paper.quoted",
        description="Check that every number the READMEs quote comes from a file it cites, and "
        "that the rendered sections equal the result files; --render rewrites those sections.",
    )
    ap.add_argument("readmes", nargs="*", help=f"Markdown files (default: {' '.join(READMES)})")
    ap.add_argument("--render", action="store_true", help="rewrite the rendered sections first")
    ap.add_argument("--results", default=str(ROOT / "results"), help="result folder to render from")
    args = ap.parse_args(list(argv) if argv is not None else None)
    paths = [Path(p).resolve() for p in args.readmes] or [ROOT / r for r in READMES]
    bad = 0
    for path in paths:
        if not path.is_file():
            print(f"{path}: no such file", file=sys.stderr)
            return 2
        if args.render:
            text = path.read_text(encoding="utf-8")
            fresh = render_text(text, Path(args.results))
            if fresh != text:
                path.write_text(fresh, encoding="utf-8")
                print(f"{path}: rendered sections rewritten")
        for name in stale_sections(path, Path(args.results)):
            print(f"{path}: section {name!r} differs from the result files (run with --render)")
            bad += 1
        for finding in check(path):
            print(finding)
            bad += 1
    if bad:
        print(f"{bad} number(s) or section(s) without a source", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
