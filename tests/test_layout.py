"""The house rules of docs/design.md, checked on the source: one concept per folder (each says which in its
docstring), imports at the top, modules and functions that fit in a head, and every path or module the code,
the README and the docs cite exists. The layers themselves are import-linter's (`make lint`)."""

from __future__ import annotations

import ast
import collections
import io
import json
import re
import subprocess
import sys
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FOLDERS = (
    "kafkatune",
    "compare",
    "reports",
    "advisor",
    "spark",
    "sweeps",
    "loadgen",
    "faults",
    "brokerconf",
    "testbed",
    "cluster",
    "drivers",
    "records",
    "core",
)
MAX_FILE_LINES = 400
MAX_FUNCTION_LINES = 60  # a function longer than a screen does more than one thing: split it
# The load generator's send loop: one function so that its hot loop keeps every name local (see its comment).
LONG_FUNCTIONS = {("loadgen/worker.py", "_produce")}


def _sources() -> Iterator[Path]:
    for folder in FOLDERS:
        yield from sorted((REPO / folder).glob("*.py"))


def _function_imports(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, module) of every import statement inside a function body."""

    def walk(node: ast.AST, in_function: bool) -> Iterator[tuple[int, str]]:
        for child in ast.iter_child_nodes(node):
            inside = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            if in_function and isinstance(child, ast.Import):
                yield from ((child.lineno, a.name) for a in child.names)
            elif in_function and isinstance(child, ast.ImportFrom) and child.module and child.level == 0:
                yield child.lineno, child.module
            yield from walk(child, inside)

    return walk(tree, False)


def test_every_folder_says_what_it_owns() -> None:
    for folder in FOLDERS:
        doc = ast.get_docstring(ast.parse((REPO / folder / "__init__.py").read_text()))
        assert doc and len(doc) > 60, f"{folder}/__init__.py: no docstring saying what the folder owns"


def test_no_project_import_inside_a_function() -> None:
    """A project import in a function hides a cycle; lazy imports are for heavy third-party packages only."""
    found = [
        f"{p.relative_to(REPO)}:{line} imports {module}"
        for p in _sources()
        for line, module in _function_imports(ast.parse(p.read_text()))
        if module.split(".")[0] in FOLDERS
    ]
    assert not found, "\n".join(found)


def test_modules_and_functions_fit_in_a_head() -> None:
    too_long = []
    for p in _sources():
        rel = str(p.relative_to(REPO))
        text = p.read_text()
        if len(text.splitlines()) > MAX_FILE_LINES:
            too_long.append(f"{rel}: {len(text.splitlines())} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and (rel, node.name) not in LONG_FUNCTIONS:
                n = (node.end_lineno or node.lineno) - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    too_long.append(f"{rel}:{node.lineno} {node.name}: {n} lines")
    assert not too_long, "\n".join(too_long)


MAX_TEST_LINES = 60  # a test that needs more checks more than one thing: a fixture and several tests


def test_tests_mirror_the_code_and_each_fits_in_a_head() -> None:
    """Every folder under tests/ is a product folder (or e2e, whole-CLI scenarios; fixtures, recorded data);
    no test function is longer than MAX_TEST_LINES."""
    extra = {"e2e", "fixtures", "__pycache__"}
    stray = [d.name for d in (REPO / "tests").iterdir() if d.is_dir() and d.name not in {*FOLDERS, *extra}]
    assert not stray, f"tests/ folders that are no product folder: {stray}"
    too_long = []
    for p in sorted((REPO / "tests").rglob("test_*.py")):
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test"):
                n = (node.end_lineno or node.lineno) - node.lineno + 1
                if n > MAX_TEST_LINES:
                    too_long.append(f"{p.relative_to(REPO)}:{node.lineno} {node.name}: {n} lines")
    assert not too_long, "\n".join(too_long)


# A repository path ("docs/reference.md", "testbed/kafka/pom.xml") or a module ("loadgen.worker") named in text.
PATH = re.compile(r"(?<![\w/.])((?:docs|examples|benchmarks|tests|" + "|".join(FOLDERS) + r")/[\w./-]*\w)")
MODULE = re.compile(r"(?<![\w./`-])(" + "|".join(FOLDERS) + r")\.([a-z_]+)\b")
NOT_MODULES = {"kafkatune.drivers"}  # the entry point group drivers register under
FILE_TYPES = {"py", "json", "yaml", "md", "xml", "parquet", "properties", "toml", "txt", "html"}


def _prose(p: Path) -> str:
    """What a person reads in a source file: its docstrings and comments (not its code's strings)."""
    text = p.read_text()
    docs = [
        ast.get_docstring(n) or ""
        for n in ast.walk(ast.parse(text))
        if isinstance(n, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
    ]
    comments = [t.string for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type == tokenize.COMMENT]
    return "\n".join(docs + comments)


def _texts() -> Iterator[tuple[str, str]]:
    for p in _sources():
        yield str(p.relative_to(REPO)), _prose(p)
    for p in [REPO / "README.md", REPO / "docs" / "design.md", *(REPO / "examples").glob("*")]:
        yield str(p.relative_to(REPO)), p.read_text()


def test_every_path_and_module_cited_exists() -> None:
    """A citation that outlived a move (a docstring naming brokerconf/probe.py after it went to cluster/)."""
    missing = []
    for where, text in _texts():
        for m in PATH.finditer(text):
            cited = m.group(1).rstrip(".")
            if "<" not in cited and "*" not in cited and not (REPO / cited).exists():
                missing.append(f"{where}: {cited}")
        for m in MODULE.finditer(text):
            pkg, name = m.groups()
            if f"{pkg}.{name}" in NOT_MODULES or name in FILE_TYPES or (REPO / pkg / f"{name}.py").exists():
                continue
            missing.append(f"{where}: {pkg}.{name}")
    assert not missing, "\n".join(sorted(set(missing)))


@pytest.mark.parametrize("name", ["DESIGN.md", "REFERENCE.md", "../shared"])
def test_nothing_cites_files_outside_the_repository(name: str) -> None:
    everything = [*_sources(), REPO / "README.md", *(REPO / "docs").glob("*.md"), *(REPO / "examples").glob("*")]
    cited = [str(p.relative_to(REPO)) for p in everything if name in p.read_text()]
    assert not cited, f"{name} cited by {cited}: what the code and its output cite lives in docs/"


# A number with a unit ("390 ms", "1.2×", "88 %") on a line that says it was seen ("measured here", "in CI"):
# a lab-notebook figure, which goes stale unchecked. Code states what a thing does and promises; what was measured
# lives in benchmarks/results/ and docs/ (issue 39), and a comment cites that file instead.
FIGURE = re.compile(
    r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?:-\d[\d,]*(?:\.\d+)?)?\s?(?:ms|s|MB/s|msg/s|%|cores?|×|GB|MiB)(?!\w)"
)
SEEN = re.compile(r"[Mm]easured(?:[,).:]| here| with)|\bin CI\b|\bonce measured\b|\btook \d|\bon this machine\b")


def _prose_lines(p: Path) -> Iterator[tuple[int, str]]:
    """(line, text) of every comment and docstring line of a source file."""
    text = p.read_text()
    for t in tokenize.generate_tokens(io.StringIO(text).readline):
        if t.type == tokenize.COMMENT:
            yield t.start[0], t.string
    for n in ast.walk(ast.parse(text)):
        if isinstance(n, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(n, clean=False)
            if doc and isinstance(n.body[0], ast.Expr):
                yield from ((n.body[0].lineno + i, line) for i, line in enumerate(doc.splitlines()))


def test_no_comment_or_docstring_quotes_a_measured_figure() -> None:
    """Product code's comments and docstrings say what a thing promises; a figure seen on some run (a number with a
    unit beside "measured here", "in CI", "took") belongs in benchmarks/results/ or docs/, cited by name."""
    quoted = [
        f"{p.relative_to(REPO)}:{n}: {line.strip()}"
        for p in _sources()
        for n, line in _prose_lines(p)
        if FIGURE.search(line) and SEEN.search(line)
    ]
    assert not quoted, "\n".join(quoted)


# A paragraph (or list item) of the README or docs that cites benchmarks/results/NAME.json quotes that file: each
# decimal figure in it is one of the file's values at the precision printed (as it is, as a percentage, bytes as MB,
# or seconds as ms). A decimal that is not (a threshold, the bar, a figure whose result file was not kept) is
# listed with its reason in the paragraph's `<!-- not from the result file: 0.25 (why); ... -->`.
RESULT_CITED = re.compile(r"benchmarks/results/([\w-]+)\.json")
DECIMAL = re.compile(r"(?<![\w.])(\d[\d,]*\.\d+)(?!\d)")
NOT_FROM = re.compile(r"<!-- not from the result files?: (.*?)-->", re.S)
EXEMPT = re.compile(r"(\d[\d,]*\.\d+) \([^)]+\)")


def _paragraphs(text: str) -> Iterator[str]:
    """Blocks of text between blank lines, each list item its own block; headings left out."""
    block: list[str] = []
    for line in [*text.splitlines(), ""]:
        starts = re.match(r"\s*([-*]|\d+\.) ", line) or line.startswith("#")
        if (not line.strip() or starts) and block:
            yield " ".join(block)
            block = []
        if line.strip() and not line.startswith("#"):
            block.append(line)


def _numbers(doc: object) -> Iterator[float]:
    if isinstance(doc, dict):
        doc = list(doc.values())
    if isinstance(doc, list):
        for v in doc:
            yield from _numbers(v)
    elif isinstance(doc, int | float) and not isinstance(doc, bool):
        yield float(doc)


def _quotes(printed: str, values: list[float]) -> bool:
    """Whether `printed` (a magnitude: its sign, if any, is the prose's "−" before it) is one of the values."""
    x, places = float(printed.replace(",", "")), len(printed.split(".")[1])
    return any(round(abs(v) * k, places) == x for v in values for k in (1, 100, 1e-6, 1e3))


def test_every_figure_beside_a_cited_result_file_is_that_files() -> None:
    wrong = []
    for p in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        for para in _paragraphs(p.read_text()):
            names = set(RESULT_CITED.findall(para))
            if not names:
                continue
            values = [
                v for n in names for v in _numbers(json.loads((REPO / "benchmarks/results" / f"{n}.json").read_text()))
            ]
            exempt = {m.group(1) for c in NOT_FROM.findall(para) for m in EXEMPT.finditer(c)}
            prose = NOT_FROM.sub("", para)
            wrong += [
                f"{p.name}: {m.group(1)} is in no value of {sorted(names)}: …{prose[max(0, m.start() - 70) : m.end()]}"
                for m in DECIMAL.finditer(prose)
                if m.group(1) not in exempt and not _quotes(m.group(1), values)
            ]
    assert not wrong, "\n".join(wrong)


def test_the_readmes_tuning_table_is_the_one_its_result_files_give() -> None:
    """The README's table of benchmarks/tuning is what `run.py --table` prints from the result files, a row for each
    run: a later run's file stands beside the first one's, and no row outlives its file."""
    printed = subprocess.run(
        [sys.executable, "benchmarks/tuning/run.py", "--table"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert printed in (REPO / "README.md").read_text()
    runs = [f for f in (REPO / "benchmarks/results").glob("tuning_*.json") if not f.stem.endswith("_quick")]
    assert printed.count("\n") - 1 == len(runs) > 1  # header, rule, then a row for each run's file


def test_the_readmes_across_runs_table_pools_every_design_run_twice_or_more() -> None:
    """The README's second table is what `run.py --across` prints: a row for each scenario and design (searches an
    arm, search trials) with two runs or more, a verdict for each of its runs, and "yes" only where they are one."""
    printed = subprocess.run(
        [sys.executable, "benchmarks/tuning/run.py", "--across"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert printed in (REPO / "README.md").read_text()
    designs = collections.Counter()
    for f in (REPO / "benchmarks/results").glob("tuning_*.json"):
        d = json.loads(f.read_text())
        if not f.stem.endswith("_quick"):
            n = max(len(a["runs_mb_s"]) for a in d["arms"])
            designs[(f"`{d['scenario']}`", f"{n}, {len(d['search']['trials_mb_s'])}")] += 1
    rows = [[c.strip() for c in r.strip("|").split("|")] for r in printed.splitlines()[2:]]
    assert {(r[0], r[1]): len(r[2].split("; ")) for r in rows} == {k: v for k, v in designs.items() if v > 1}
    assert all((r[3] == "yes") == (len(set(r[2].split("; "))) == 1) for r in rows)
