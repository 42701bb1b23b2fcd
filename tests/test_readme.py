"""The README runs as written: every ```bash and ```python block of README.md is executed.

- A ```bash block runs line by line in ``bash -e``, in a temporary working directory (result
  files a command writes land there). ``.venv/bin/X`` is this interpreter's ``bin/X``, so the
  test runs the install it is part of. The first block is the one ``.ci/run`` executes; its
  setup (``bash .ci/setup &&``) and its ``python -m pytest`` (this suite itself) are left to CI.
- A ```text block right after a ```bash block is that block's output: each of its lines
  must appear in what the commands printed (``...`` stands for lines left out).
- A ```python block runs as a script of its own (so each is self-contained, as a reader copies
  it); its ``assert`` statements check the numbers the README states.
- A block preceded by ``<!-- not run: REASON -->`` is skipped, visibly, with that reason.

Also checked: the README's length and contents, and that every link of README.md,
results/README.md and benchmarks/README.md leads to a file or a heading that exists.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
BIN = Path(sys.executable).parent
SETUP = "bash .ci/setup && "
NOT_RUN = re.compile(r"<!--\s*not run:\s*(.+?)\s*-->")
TIMEOUT = 600


@dataclass(frozen=True)
class Block:
    lang: str
    text: str
    line: int  # 1-based line of the opening fence
    output: str | None  # the ```text block right after it, if any
    skip: str | None  # the reason of a <!-- not run: ... --> marker


def blocks(path: Path = README) -> list[Block]:
    """The fenced code blocks of ``path``, each with the output block that follows it."""
    lines = path.read_text(encoding="utf-8").split("\n")
    found: list[tuple[str, str, int, str | None]] = []
    i = 0
    while i < len(lines):
        m = re.match(r"^```(\w*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        start = i
        j = i + 1
        while j < len(lines) and lines[j].rstrip() != "```":
            j += 1
        before = next((x for x in reversed(lines[:start]) if x.strip()), "")
        marker = NOT_RUN.search(before)
        found.append((m.group(1), "\n".join(lines[start + 1 : j]), start + 1,
                      marker.group(1) if marker else None))
        i = j + 1
    out: list[Block] = []
    for k, (lang, text, line, skip) in enumerate(found):
        nxt = found[k + 1] if k + 1 < len(found) else None
        adjacent = nxt is not None and nxt[0] == "text" and nxt[2] == line + text.count("\n") + 3
        out.append(Block(lang, text, line, nxt[1] if adjacent and nxt else None, skip))
    return out


def runnable() -> list[Block]:
    return [b for b in blocks() if b.lang in ("bash", "python")]


def bash_commands(block: Block, first: bool) -> list[str]:
    """The commands of a bash block, with ``.venv/bin/`` mapped to this interpreter's."""
    commands = []
    for raw in block.text.split("\n"):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if first and line.startswith(SETUP):
            line = line[len(SETUP) :]  # CI runs the setup itself
        if first and re.fullmatch(r"\.venv/bin/python -m pytest\b.*", line):
            continue  # the suite itself, which CI runs
        commands.append(line.replace(".venv/bin/", f"{BIN}/"))
    return commands


def environment() -> dict[str, str]:
    env = dict(os.environ)
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONIOENCODING="utf-8")
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    return env


def check_output(block: Block, printed: str) -> None:
    if block.output is None:
        return
    for expected in block.output.split("\n"):
        if expected.strip() in ("", "..."):
            continue
        assert expected.strip() in printed, (
            f"README.md:{block.line}: the output shown below the block has the line\n"
            f"  {expected.strip()!r}\nbut the commands printed:\n{printed}"
        )


@pytest.mark.parametrize(
    "block", runnable(), ids=lambda b: f"{b.lang}-line{b.line}"
)
def test_readme_block_runs(block: Block, tmp_path: Path) -> None:
    if block.skip:
        pytest.skip(f"README.md:{block.line} is marked not run: {block.skip}")
    first = block == runnable()[0]
    if block.lang == "python":
        script = tmp_path / "block.py"
        script.write_text(block.text + "\n", encoding="utf-8")
        argv = [[sys.executable, str(script)]]
    else:
        argv = [["bash", "-euo", "pipefail", "-c", c] for c in bash_commands(block, first)]
        assert argv or first, f"README.md:{block.line}: an empty bash block"
    printed = ""
    for cmd in argv:
        done = subprocess.run(
            cmd, cwd=tmp_path, env=environment(), capture_output=True, text=True,
            encoding="utf-8", timeout=TIMEOUT,
        )
        assert done.returncode == 0, (
            f"README.md:{block.line}: {cmd[-1]} exited {done.returncode}\n"
            f"stdout:\n{done.stdout[-4000:]}\nstderr:\n{done.stderr[-4000:]}"
        )
        printed += done.stdout
    check_output(block, printed)


def test_first_block_is_what_ci_runs() -> None:
    """.ci/run executes the first ```bash block: setup, the main job, the tests."""
    first = blocks()[0]
    assert first.lang == "bash"
    lines = first.text.split("\n")
    assert lines[0].startswith(SETUP) and "matlang compile" in lines[0]
    assert lines[1] == ".venv/bin/python -m pytest -n auto"
    compile_line = lines[0][len(SETUP) :].replace(".venv/bin/", f"{BIN}/")
    assert bash_commands(first, first=True) == [compile_line]


def test_readme_is_a_short_guide_with_contents() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 308  # 300, and the 8 lines of "See it" (pictures)
    headings = [h for h in re.findall(r"^## (.+)$", text, re.M)]
    assert headings[0] == "Contents"
    contents = text.split("## Contents", 1)[1].split("\n## ", 1)[0]
    for h in headings[1:]:
        assert f"(#{slug(h)})" in contents, f"the contents do not list {h!r}"
    assert "../shared" not in text


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    return {slug(h) for h in re.findall(r"^#{1,6} (.+)$", text, re.M)}


@pytest.mark.parametrize(
    "page", ["README.md", "results/README.md", "benchmarks/README.md"]
)
def test_links_lead_somewhere(page: str) -> None:
    path = ROOT / page
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"https?://", target):
            continue
        file, _, anchor = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        if not dest.exists():
            broken.append(f"{target} (no file {dest.relative_to(ROOT)})")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target} (no heading #{anchor} in {dest.relative_to(ROOT)})")
    assert not broken, f"{page}: broken links: {broken}"


def test_blocks_parse_the_readme_as_written(tmp_path: Path) -> None:
    """The extraction itself: a bash block, its output block, python blocks (a test of the
    test, on a README written here)."""
    sample = "\n".join([
        "# t", "```bash", ".venv/bin/matlang --version", "```", "```text", "matlang", "```",
        "", "<!-- not run: needs a GPU -->", "```python", "print(1)", "```",
    ])
    path = tmp_path / "README.md"
    path.write_text(sample, encoding="utf-8")
    got = blocks(path)
    assert [(b.lang, b.line) for b in got] == [("bash", 2), ("text", 5), ("python", 10)]
    assert got[0].output == "matlang" and got[0].skip is None
    assert got[2].skip == "needs a GPU" and got[2].output is None
    assert bash_commands(got[0], first=False) == [f"{BIN}/matlang --version"]
