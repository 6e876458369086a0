"""Every example in README.md and docs/*.md runs, and prints what the page shows.

How a page is read (in order, top to bottom, in a sandbox of its own: a temporary folder
holding copies of `problems/`, `examples/` and `benchmarks/`, the working directory of
every example, so that what one example writes, the next can read):

* a ```console block: each `$ dpverify ...` line runs in this process, through click's
  CliRunner on `dpverify.cli.main` (stdout and stderr together, as a pipe shows them; a
  table is then full width and plain), and what it prints must equal the lines below it
  up to the next `$` line, after the normaliser below. Words with `*` or `?` are expanded
  against the sandbox as a shell would; `# comment` ends the command. A comment that says
  `exit status N` is checked too. Any other command in a console block is an error: a
  page shows only what a test runs.
* a ```python block: with `>>>` lines, a doctest (ELLIPSIS; output normalised as below);
  without, a script run for its effects and errors. One namespace per page, so a block
  may use what an earlier one defined.
* a ```toml block: must parse (tomllib). After `<!-- file: NAME -->` on the line above
  the fence, it is also written to NAME in the sandbox, for the examples below it.
* a ```sh block: commands to type, not run (`make`, a shell); every `dpverify ...` line
  in it is parsed by the command line (command and options exist, values are valid).
* `<!-- slow -->` above a fence: the block runs only with `--runslow`
  (test_every_example_runs_slow); fast blocks never depend on a slow one.
* any other block (```json, ```text, plain ```) is not run, and must not hold a `$ `
  line (so a runnable example cannot hide in an unmarked block).

The normaliser (`normalise`), the same on both sides, masks only what changes from run to
run: a number of seconds (`0.45 s`; the `seconds` column of a table or of CSV rows;
`"seconds": 0.07` in JSON), a gap in a table's `gap` column below 1e-12 and not 0 (the
rounding of two float computations, whose digits differ between CPUs), a timestamp, the
build id (`+src.<16 hex digits>`), the sandbox's path, and the order of the rows of
`batch`'s table `slowest` (they follow the timings); trailing blanks are dropped.
Everything else, every number to its printed digits, compares exactly. In the page's
expected output, a line `...` stands for any number of lines (output cut short on the
page). Outputs that depend on the order in which workers finish are shown with `--jobs 1`
or `--quiet`.

Besides: every link of a page stays in the repository and resolves (file and heading),
and the README has at most 400 lines and links every page of docs/.

Regenerating the pages from real runs (after a change of output, such as a new default
method of `verify`):

    python tests/test_docs.py --update README.md docs/*.md
    make docs           (the same with --slow, through .venv)

rewrites the output under every `$` line and every `>>>` example that no longer matches
(an output cut with `...` keeps as many lines before and after the cut as it had), and
leaves matching ones byte for byte. Without `--update` it prints the differences and exits
1 when there are any. Slow blocks are included with `--slow`.

The fast tests take about 10 s: small problems, in process; `check`, `batch` and `sweep`
start worker processes (about a second each). Large examples (majority of 1000 bits,
every shipped problem) are marked slow.
"""

from __future__ import annotations

import contextlib
import csv
import difflib
import doctest
import glob
import io
import os
import re
import shlex
import shutil
import sys
import tempfile
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHIPPED = ("problems", "examples", "benchmarks")  # copied into each page's sandbox

FENCE = re.compile(r"^(\s*)```(\S*)\s*$")
DIRECTIVE = re.compile(r"^\s*<!--\s*(slow|file:\s*(\S+))\s*-->\s*$")
CUT = "..."

# ---------------------------------------------------------------------------------------
# The normaliser: only what changes from run to run.

SECONDS = re.compile(r"(?<![\w.])\d+(?:\.\d+)? s\b")
JSON_SECONDS = re.compile(r'("seconds": )-?[\d.eE+-]+')
TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?")
BUILD = re.compile(r"\+src\.[0-9a-f]{16}")


def normalise(lines: list[str], sandbox: Path | None = None) -> list[str]:
    """Mask the volatile fields of printed lines (see the module's docstring)."""
    roots = [] if sandbox is None else sorted({str(sandbox), os.path.realpath(sandbox)},
                                              key=len, reverse=True)
    out: list[str] = []
    cell = -1  # inside a table with a `seconds` column: its index
    gap = -1  # ... and with a `gap` column: its index
    column = -1  # inside CSV rows whose header has a `seconds` field: its index
    for line in lines:
        line = line.rstrip()
        for root in roots:
            line = line.replace(root + os.sep, "").replace(root, ".")
        if "┃" in line:
            names = [name.strip() for name in line.split("┃")]
            cell = names.index("seconds") if "seconds" in names else -1
            gap = names.index("gap") if "gap" in names else -1
        elif not line.strip():
            cell, column, gap = -1, -1, -1
        elif (cell >= 0 or gap >= 0) and "│" in line:
            cells = line.split("│")
            if 0 <= cell < len(cells):
                cells[cell] = " <s> "
            if 0 <= gap < len(cells) and _rounding(cells[gap]):
                cells[gap] = " <rounding> "
            line = "│".join(cells).rstrip()
        elif "," in line and "seconds" in line.split(","):
            column = line.split(",").index("seconds")
        elif column >= 0:
            line = _mask_field(line, column)
        line = SECONDS.sub("<s> s", line)
        line = JSON_SECONDS.sub(r"\1<s>", line)
        line = TIMESTAMP.sub("<timestamp>", line)
        line = BUILD.sub("+src.<build>", line)
        out.append(line)
    return _sort_slowest(out)


# A gap this small (and not 0) is the rounding of two float computations: its digits
# differ between machines (BLAS picks its kernels by CPU), so the tables' `gap` column
# shows it as `<rounding>` on both sides
ROUNDING = 1e-12


def _rounding(cell: str) -> bool:
    """Whether a table cell is a gap at rounding level (0 < |gap| < ROUNDING)."""
    try:
        value = float(cell)
    except ValueError:
        return False
    return 0 < abs(value) < ROUNDING


def _sort_slowest(lines: list[str]) -> list[str]:
    """The rows of `batch`'s table `slowest` in a fixed order (they follow the timings)."""
    out = list(lines)
    for i, line in enumerate(lines):
        if line == "slowest":
            end = i + 3  # the title, the header and its rule
            while end < len(lines) and "│" in lines[end]:
                end += 1
            out[i + 3:end] = sorted(lines[i + 3:end])
    return out


def _mask_field(line: str, column: int) -> str:
    """A CSV row with its field `column` masked (a row too short is left as it is)."""
    row = next(csv.reader([line]))
    if len(row) <= column:
        return line
    row[column] = "<s>"
    out = io.StringIO()
    csv.writer(out, lineterminator="").writerow(row)
    return out.getvalue()


def matches(expected: list[str], got: list[str]) -> bool:
    """`got` fits `expected`, where a line `...` in `expected` stands for any lines."""
    parts: list[list[str]] = [[]]
    for line in expected:
        if line.strip() == CUT:
            parts.append([])
        else:
            parts[-1].append(line)
    if len(parts) == 1:
        return expected == got
    head, *middle, tail = parts
    if got[:len(head)] != head or len(got) < len(head) + len(tail):
        return False
    if tail and got[len(got) - len(tail):] != tail:
        return False
    rest = got[len(head):len(got) - len(tail)]
    for part in middle:
        at = _find(rest, part)
        if at < 0:
            return False
        rest = rest[at + len(part):]
    return True


def _find(lines: list[str], part: list[str]) -> int:
    for i in range(len(lines) - len(part) + 1):
        if lines[i:i + len(part)] == part:
            return i
    return -1 if part else 0


def regenerate(expected: list[str], got: list[str]) -> list[str]:
    """The page's new lines: `got`, cut as `expected` was (as many lines kept before the
    first `...` and after the last)."""
    cuts = [i for i, line in enumerate(expected) if line.strip() == CUT]
    if not cuts:
        return got
    head, tail = cuts[0], len(expected) - cuts[-1] - 1
    if len(got) <= head + tail:
        return got
    return [*got[:head], CUT, *(got[len(got) - tail:] if tail else [])]


# ---------------------------------------------------------------------------------------
# Reading a page.


@dataclass
class Block:
    lang: str
    first: int  # index of the first body line in the page's lines
    indent: str
    body: list[str]
    slow: bool = False
    file: str | None = None


@dataclass
class Command:
    text: str
    line: int  # index of the `$` line in the page's lines
    expected: list[str] = field(default_factory=list)


def blocks(lines: list[str]) -> Iterator[Block]:
    """The fenced blocks of a page, with the directives just above each."""
    i, slow, file = 0, False, None
    while i < len(lines):
        directive = DIRECTIVE.match(lines[i])
        fence = FENCE.match(lines[i])
        if directive:
            slow = slow or directive.group(1) == "slow"
            file = directive.group(2) or file
        elif fence:
            indent, lang = fence.group(1), fence.group(2)
            end = i + 1
            while end < len(lines) and lines[end].strip() != "```":
                end += 1
            body = [line[len(indent):] if line.startswith(indent) else line.lstrip()
                    for line in lines[i + 1:end]]
            yield Block(lang, i + 1, indent, body, slow, file)
            i, slow, file = end, False, None
        elif lines[i].strip():
            slow, file = False, None
        i += 1


def commands(block: Block) -> list[Command]:
    found: list[Command] = []
    for offset, line in enumerate(block.body):
        if line.startswith("$ "):
            found.append(Command(line[2:], block.first + offset))
        elif found:
            found[-1].expected.append(line)
        elif line.strip():
            raise DocError(block.first + offset, "output before any `$` line")
    return found


class DocError(Exception):
    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line + 1}: {message}")
        self.line = line


# ---------------------------------------------------------------------------------------
# Running a page.


def argv_of(text: str, cwd: Path) -> list[str]:
    """The words of a command as a shell gives them: comments dropped, globs expanded."""
    words = shlex.split(text, comments=True)
    out: list[str] = []
    for word in words:
        found = sorted(glob.glob(word, root_dir=cwd)) if any(c in word for c in "*?") else []
        out.extend(found or [word])
    return out


def run_dpverify(argv: list[str]) -> tuple[int, list[str]]:
    """Run `dpverify ARGS` in this process: (exit status, printed lines)."""
    from click.testing import CliRunner

    from dpverify.cli import main

    env = {"COLUMNS": None, "LINES": None, "NO_COLOR": None, "FORCE_COLOR": None,
           "TERM": None, "DPVERIFY_DEBUG": None}
    result = CliRunner().invoke(main, argv[1:], prog_name="dpverify", env=env,
                                catch_exceptions=False)
    return result.exit_code, result.output.splitlines()


def parse_only(argv: list[str]) -> None:
    """Parse `dpverify ARGS` as the command line would, without running it."""
    import click

    from dpverify.cli import main

    parent = click.Context(main, info_name="dpverify")
    command = main.get_command(parent, argv[1]) if len(argv) > 1 else None
    if command is None:
        raise click.UsageError(f"no such command: {argv[1:2]}")
    with command.make_context(argv[1], argv[2:], parent=parent):
        pass


@dataclass
class Mismatch:
    line: int  # index in the page's lines of the first line to replace
    count: int  # how many lines to replace
    new: list[str]  # the real output (cut as the page's was)
    message: str


@dataclass
class Page:
    path: Path
    sandbox: Path
    slow: bool = False
    lines: list[str] = field(default_factory=list)
    mismatches: list[Mismatch] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    namespace: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.lines = self.path.read_text(encoding="utf-8").splitlines()
        self.namespace = {"__name__": "__main__"}

    def where(self, line: int) -> str:
        return f"{self.path.name}:{line + 1}"

    def run(self) -> Page:
        with contextlib.chdir(self.sandbox):
            for block in blocks(self.lines):
                if block.slow and not self.slow:
                    continue
                try:
                    self.run_block(block)
                except DocError as e:
                    self.errors.append(f"{self.path.name}: {e}")
        return self

    def run_block(self, block: Block) -> None:
        handler = {"console": self.console, "python": self.python, "toml": self.toml,
                   "sh": self.shell}.get(block.lang)
        if handler is not None:
            handler(block)
        elif any(line.startswith("$ ") for line in block.body):
            raise DocError(block.first, f"a `$` line in a ```{block.lang} block: "
                                        "mark it ```console so that it runs")

    def console(self, block: Block) -> None:
        found = commands(block)
        if not found:
            raise DocError(block.first, "a console block without a `$ dpverify` line")
        for command in found:
            self.command(block, command)

    def command(self, block: Block, command: Command) -> None:
        argv = argv_of(command.text, self.sandbox)
        if argv[:1] != ["dpverify"]:
            raise DocError(command.line, f"only `$ dpverify ...` runs here: {command.text}")
        status, got = run_dpverify(argv)
        wanted = re.search(r"exit status (\d+)", command.text.partition("#")[2])
        if wanted and int(wanted.group(1)) != status:
            self.errors.append(f"{self.where(command.line)}: `{command.text}` exited "
                               f"{status}, the page says {wanted.group(1)}")
        expected = [line.rstrip() for line in command.expected]
        while expected and not expected[-1]:  # blank lines before the next `$` or fence
            expected.pop()
        sandbox = self.sandbox
        if matches(normalise(expected, sandbox), normalise(got, sandbox)):
            return
        new = regenerate(expected, normalise_paths(got, sandbox))
        diff = "\n".join(difflib.unified_diff(normalise(expected, sandbox),
                                              normalise(got, sandbox), "page", "real",
                                              lineterm="", n=1))
        self.mismatches.append(Mismatch(command.line + 1, len(expected),
                                        [block.indent + line for line in new],
                                        f"{self.where(command.line)}: $ {command.text}\n"
                                        f"{diff}"))

    def python(self, block: Block) -> None:
        text = "\n".join(block.body) + "\n"
        name = self.where(block.first)
        if not any(line.lstrip().startswith(">>> ") for line in block.body):
            try:
                exec(compile(text, name, "exec"), self.namespace)  # noqa: S102
            except Exception as e:  # noqa: BLE001
                self.errors.append(f"{name}: the script fails: {type(e).__name__}: {e}")
            return
        parser = doctest.DocTestParser()
        test = parser.get_doctest(text, self.namespace, name, str(self.path), block.first)
        runner = Recorder(self, block)
        runner.run(test, out=lambda _text: None, clear_globs=False)
        self.namespace.update(test.globs)  # DocTest ran on a copy of the namespace

    def toml(self, block: Block) -> None:
        text = "\n".join(block.body) + "\n"
        try:
            tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise DocError(block.first, f"not valid TOML: {e}") from None
        if block.file:
            target = self.sandbox / block.file
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")

    def shell(self, block: Block) -> None:
        import click

        for offset, line in enumerate(joined(block.body)):
            if not line.startswith("dpverify"):
                continue
            command = re.split(r"\s(?:\||>|<|&&|;)\s?", line)[0]
            try:
                parse_only(argv_of(command, self.sandbox))
            except click.ClickException as e:
                self.errors.append(f"{self.where(block.first + offset)}: `{command}` does "
                                   f"not parse: {e.format_message()}")


def joined(lines: list[str]) -> list[str]:
    """Shell lines with `\\` continuations joined (kept at the first line's index)."""
    out: list[str] = []
    carry = ""
    for line in lines:
        if line.rstrip().endswith("\\"):
            carry += line.rstrip()[:-1] + " "
            continue
        out.append(carry + line)
        carry = ""
    return out


def normalise_paths(lines: list[str], sandbox: Path) -> list[str]:
    """Real output as a page shows it: the sandbox's path dropped, blanks stripped."""
    roots = sorted({str(sandbox), os.path.realpath(sandbox)}, key=len, reverse=True)
    out = []
    for line in lines:
        for root in roots:
            line = line.replace(root + os.sep, "").replace(root, ".")
        out.append(line.rstrip())
    return out


class Recorder(doctest.DocTestRunner):
    """A doctest runner that compares normalised output and records each mismatch."""

    def __init__(self, page: Page, block: Block) -> None:
        super().__init__(checker=Checker(page.sandbox),
                         optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
        self.page, self.block = page, block

    def report_failure(self, out, test, example, got):  # type: ignore[override]
        self._record(example, got.splitlines())

    def report_unexpected_exception(self, out, test, example, exc_info):  # type: ignore[override]
        lines = doctest._exception_traceback(exc_info).splitlines()  # noqa: SLF001
        got = ["Traceback (most recent call last):", "    ...", lines[-1]] if lines else []
        self._record(example, got)

    def _record(self, example: doctest.Example, got: list[str]) -> None:
        source = self.block.first + example.lineno
        first = source + len(example.source.splitlines())
        want = example.want.splitlines()
        new = regenerate(want, normalise_paths(got, self.page.sandbox))
        new = [line or doctest.BLANKLINE_MARKER for line in new]
        indent = self.block.indent + " " * example.indent
        diff = "\n".join(difflib.unified_diff(want, got, "page", "real", lineterm="", n=1))
        self.page.mismatches.append(Mismatch(first, len(want), [indent + x for x in new],
                                             f"{self.page.where(source)}: >>> "
                                             f"{example.source.strip()}\n{diff}"))


class Checker(doctest.OutputChecker):
    def __init__(self, sandbox: Path) -> None:
        self.sandbox = sandbox

    def check_output(self, want: str, got: str, optionflags: int) -> bool:
        want = "\n".join(normalise(want.splitlines(), self.sandbox)) + "\n"
        got = "\n".join(normalise(got.splitlines(), self.sandbox)) + "\n"
        return super().check_output(want, got, optionflags)


# ---------------------------------------------------------------------------------------
# Sandboxes, the tests, and the regeneration command.


def make_sandbox(folder: Path) -> Path:
    for name in SHIPPED:
        shutil.copytree(ROOT / name, folder / name,
                        ignore=shutil.ignore_patterns("__pycache__", ".dpverify"))
    return folder


def check_page(path: Path, folder: Path, slow: bool = False) -> Page:
    return Page(path, make_sandbox(folder), slow=slow).run()


def report(page: Page) -> str:
    return "\n\n".join([*page.errors, *(m.message for m in page.mismatches)])


def has_slow(path: Path) -> bool:
    return any(b.slow for b in blocks(path.read_text(encoding="utf-8").splitlines()))


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.name)
def test_every_example_runs_as_shown(path: Path, tmp_path: Path) -> None:
    page = check_page(path, tmp_path)
    assert not page.errors and not page.mismatches, (
        f"{report(page)}\n\nIf the new output is right: python tests/test_docs.py "
        f"--update {path.relative_to(ROOT)}")


@pytest.mark.slow
@pytest.mark.parametrize("path", [p for p in PAGES if has_slow(p)], ids=lambda p: p.name)
def test_every_example_runs_slow(path: Path, tmp_path: Path) -> None:
    """The blocks marked `<!-- slow -->` too (minutes: large problems)."""
    page = check_page(path, tmp_path, slow=True)
    assert not page.errors and not page.mismatches, report(page)


LINK = re.compile(r"\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    inside = {i for b in blocks(lines) for i in range(b.first - 1, b.first + len(b.body) + 1)}
    return {slug(line.lstrip("#")) for i, line in enumerate(lines)
            if line.startswith("#") and i not in inside}


def broken_links(path: Path) -> list[str]:
    """Links of a page that leave the repository, or name a file or heading that is not
    there."""
    broken = []
    for target in LINK.findall(path.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:|//", target):
            broken.append(f"{path.name}: {target} leaves the repository")
            continue
        file, _, anchor = target.partition("#")
        goal = (path.parent / file).resolve() if file else path
        if not goal.exists():
            broken.append(f"{path.name}: {target}: no such file")
        elif anchor and goal.suffix == ".md" and anchor not in anchors(goal):
            broken.append(f"{path.name}: {target}: no such heading")
    return broken


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.name)
def test_links_stay_in_the_repository_and_resolve(path: Path) -> None:
    assert broken_links(path) == []


def test_the_readme_fits_a_newcomer() -> None:
    """At most 400 lines, and it links every page of docs/."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 400
    assert {p.name for p in (ROOT / "docs").glob("*.md")} <= set(
        re.findall(r"\(docs/([\w.-]+\.md)", text))


# Negative controls: the checks above catch what they claim.

TOUR = """Text.

```console
$ dpverify verify problems/and-3.toml
and-3  (problems/and-3.toml)
agent    ┃ accuracy ┃ relaxed optimum ┃       RR value ┃      gap ┃ verdict ┃ method ┃ seconds
━━━━━━━━━╇━━━━━━━━━━╇━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━╇━━━━━━━━━━╇━━━━━━━━━╇━━━━━━━━╇━━━━━━━━
observer │ average  │           0.875 │          0.875 │ 0.00e+00 │ optimal │  proof │   0.013
...

1 problem: 1 optimal, 0 gap, 0 error (0.17 s)
```
"""


def _page(tmp_path: Path, text: str) -> Page:
    doc = tmp_path / "page.md"
    doc.write_text(text, encoding="utf-8")
    return check_page(doc, tmp_path / "sandbox")


def test_a_true_copy_passes_with_other_seconds(tmp_path: Path) -> None:
    """Positive control: the seconds (volatile) may differ, the numbers may not."""
    page = _page(tmp_path, TOUR.replace("0.013", "9.999").replace("0.17 s", "12.5 s"))
    assert not page.errors and not page.mismatches, report(page)


def test_a_wrong_digit_is_caught(tmp_path: Path) -> None:
    page = _page(tmp_path, TOUR.replace("│           0.875 │", "│           0.876 │"))
    assert len(page.mismatches) == 1
    assert "page.md:4" in page.mismatches[0].message
    assert "0.876" in page.mismatches[0].message


def test_a_wrong_summary_line_is_caught(tmp_path: Path) -> None:
    page = _page(tmp_path, TOUR.replace("1 optimal, 0 gap", "1 optimal, 1 gap"))
    assert len(page.mismatches) == 1


def test_a_wrong_exit_status_is_caught(tmp_path: Path) -> None:
    page = _page(tmp_path, TOUR.replace("and-3.toml\n", "and-3.toml     # exit status 1\n", 1))
    assert any("exited 0, the page says 1" in e for e in page.errors)


def test_a_wrong_doctest_value_is_caught(tmp_path: Path) -> None:
    text = "```python\n>>> import dpverify\n>>> str(dpverify.verify('problems/and-3.toml')" \
           ".verdict)\n'gap'\n```\n"
    page = _page(tmp_path, text)
    assert len(page.mismatches) == 1 and "'optimal'" in page.mismatches[0].message


def test_unrun_examples_are_refused(tmp_path: Path) -> None:
    """A `$` line outside a console block, a console command that is not dpverify, a
    shell line with an unknown option, invalid TOML: each is an error."""
    text = ("```\n$ dpverify verify problems/and-3.toml\n```\n\n"
            "```console\n$ ls problems\n```\n\n"
            "```sh\ndpverify verify problems/and-3.toml --no-such-option\n```\n\n"
            "```toml\n[problem\n```\n")
    page = _page(tmp_path, text)
    assert len(page.errors) == 4, page.errors


def test_update_rewrites_only_what_differs(tmp_path: Path) -> None:
    wrong = TOUR.replace("│           0.875 │", "│           0.876 │").replace("0.013", "9.999")
    doc = tmp_path / "page.md"
    doc.write_text(wrong, encoding="utf-8")
    assert update(doc) == 1
    fixed = doc.read_text(encoding="utf-8")
    assert "0.876" not in fixed and "0.875" in fixed
    assert fixed.count("\n...\n") == 1  # the cut is kept
    assert update(doc) == 0  # now it matches: nothing rewritten
    assert doc.read_text(encoding="utf-8") == fixed


def test_the_old_readmes_count_example_is_caught(tmp_path: Path) -> None:
    """The README's count example before this test existed (issue 18): its gap
    (1.33e-15 here, no longer the real width: at rounding level, which the normaliser
    masks), a missing reason line and summary line had drifted."""
    stale = (ROOT / "tests" / "data" / "stale-count.md").read_text(encoding="utf-8")
    page = _page(tmp_path, stale)
    assert len(page.mismatches) == 1
    message = page.mismatches[0].message
    assert "consumer │ minimax │     2.75930521092 │   2.75930521092 │ <rounding>" in message
    assert "+2 problems: 1 optimal, 1 gap, 0 error" in message


def test_only_a_rounding_level_gap_is_masked() -> None:
    """Gaps below 1e-12 (and not 0) compare equal whatever their digits; a larger gap, a
    zero gap against a rounding one, and the other columns still compare exactly."""
    header = "agent    ┃ model   ┃ gap      ┃ verdict ┃ seconds"

    def row(gap: str, verdict: str = "optimal") -> list[str]:
        return normalise([header, f"consumer │ minimax │ {gap} │ {verdict} │   0.018"])

    assert row("2.13e-14") == row("2.18e-14")
    assert row("1.50e-09") != row("1.60e-09")
    assert row("0.00e+00") != row("1.00e-14")
    assert row("2.13e-14") != row("2.13e-14", "gap")
    # outside a table with a `gap` column nothing is masked
    assert normalise(["consumer │ 2.13e-14"]) != normalise(["consumer │ 2.18e-14"])


def test_a_broken_link_is_caught(tmp_path: Path) -> None:
    doc = tmp_path / "page.md"
    doc.write_text("# Title\n[a](page.md#title) [b](page.md#nope) [c](none.md) "
                   "[d](https://example.org)\n", encoding="utf-8")
    assert len(broken_links(doc)) == 3


def update(path: Path, slow: bool = False) -> int:
    """Rewrite the outputs of `path` that differ from real runs; the number rewritten."""
    with tempfile.TemporaryDirectory() as folder:
        page = check_page(path, Path(folder), slow=slow)
    for error in page.errors:
        print(error, file=sys.stderr)
    lines = list(page.lines)
    for m in sorted(page.mismatches, key=lambda m: m.line, reverse=True):
        lines[m.line:m.line + m.count] = m.new
    if page.mismatches:
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return len(page.mismatches)


def main(argv: list[str]) -> int:
    """python tests/test_docs.py [--update] [--slow] [FILE...] (default: every page)."""
    flags = {a for a in argv if a.startswith("--")}
    paths = [Path(a).resolve() for a in argv if not a.startswith("--")] or PAGES
    failed = 0
    for path in paths:
        if "--update" in flags:
            n = update(path, slow="--slow" in flags)
            print(f"{path.relative_to(ROOT)}: {n} output(s) rewritten")
            continue
        with tempfile.TemporaryDirectory() as folder:
            page = check_page(path, Path(folder), slow="--slow" in flags)
        if page.errors or page.mismatches:
            failed += 1
            print(report(page), file=sys.stderr)
        print(f"{path.relative_to(ROOT)}: {len(page.errors) + len(page.mismatches)} "
              f"problem(s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main(sys.argv[1:]))
