"""The import graph keeps the house rules (docs/contributing.md, "The import direction"): every part
of reportgen imports only parts of lower layers (`LAYERS`), the vocabulary at the bottom, the
analysis pure (no ingest, execute or capture, not even through another part; no CLI, subprocess or
MkDocs code; of the store only its module for readers), and the history and the pages away from
the logs (no ingest, not even through another part)."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

from reportgen import vocab

# One worker parses reportgen's modules once for the module's tests (`_tree`): each test parsed every
# one again, 1,100 parses for 190 files.
pytestmark = pytest.mark.xdist_group("test-imports")

PACKAGE = Path(vocab.__file__).parent


@functools.cache
def _tree(path: Path) -> list[ast.AST]:
    """Every node of the module at `path`, parsed once per process."""
    return list(ast.walk(ast.parse(path.read_text())))


def _imports(path: Path) -> set[str]:
    """Top-level reportgen modules/packages that `path` imports."""
    out: set[str] = set()
    for node in _tree(path):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "reportgen":
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "reportgen" and len(parts) > 1:
                first = parts[1]
                if (PACKAGE / first).is_dir() or (PACKAGE / f"{first}.py").is_file():
                    out.add(first)
    return out


def _graph() -> dict[str, set[str]]:
    """Edges between top-level parts of reportgen (spec, store, analysis, vocab, ...)."""
    graph: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).parts
        part = rel[0].removesuffix(".py")
        graph.setdefault(part, set()).update(_imports(path) - {part})
    return graph


LAYERS: tuple[tuple[str, ...], ...] = (
    ("vocab", "errors", "rounding"),  # words, the user-error type, rounding: import nothing of reportgen
    ("failures", "specfile"),  # failure events in words (shared by ingest and analysis); the typed spec
    ("store",),  # where files live, atomic writes, manifests, locks
    ("capture", "traces"),  # provenance and GPU samples; profiler traces
    ("plan",),  # patched recipe per arm
    ("ingest",),  # logs and TensorBoard into tables and events
    ("execute",),  # executors and the runner (which ingests each run as it ends)
    ("analysis",),  # pure: data in, data out
    ("analyze", "campaign", "history"),  # the analysis's I/O edge, the sequential schedule, the history
    ("render",),  # pages from analysis.json and stored tables
    ("pipeline",),  # `reportgen run` as one function
    ("bisect",),  # `reportgen bisect`: paired campaigns (pipeline) around the pure search (history)
    ("commands",),  # thin commands
    ("cli",),
    ("__main__",),
)
"""The documented import direction, bottom first: a part imports only parts of lower layers, never
one of its own layer or above. (Data flows spec -> plan -> execute -> ingest -> analysis -> render;
store, capture and traces are the files every stage reads and writes, so they sit low.)"""
STANDALONE = ("workloads", "__init__")
"""Parts that import nothing of reportgen: the embedded workload is its own program."""
ANALYSIS_NEVER = ("ingest", "execute", "capture", "render")
"""The analysis never reads logs or runs anything: analyze.py (its I/O edge) hands it the data."""
NEVER_REACHED = {"analysis": ANALYSIS_NEVER, "history": ("ingest", "execute"), "render": ("ingest", "execute")}
"""Parts a part must not reach by any chain of imports: the history and the pages are made from
analysis.json and the stored tables, never from logs, so nothing they import imports the ingest."""
STORE_FOR_READERS = "reportgen.store.run"
"""The store's module for readers (the one run type, the metrics' wide table, manifest times): the
only module of the store the analysis imports."""


def test_every_part_has_a_layer() -> None:
    placed = {p for layer in LAYERS for p in layer} | set(STANDALONE)
    assert set(_graph()) - placed == set(), "a new part of reportgen: give it a layer in LAYERS (and the docs)"


def test_imports_point_down_the_layers() -> None:
    level = {p: i for i, layer in enumerate(LAYERS) for p in layer}
    bad = sorted(
        f"{part} (layer {level[part]}) imports {dep} (layer {level.get(dep, 'standalone')})"
        for part, deps in _graph().items()
        if part in level
        for dep in deps
        if level.get(dep, len(LAYERS)) >= level[part]
    )
    assert bad == []


def test_standalone_parts_import_nothing_of_reportgen() -> None:
    graph = _graph()
    assert {p: graph.get(p, set()) for p in STANDALONE} == {p: set() for p in STANDALONE}


def test_analysis_imports_no_ingest_execute_capture_or_render() -> None:
    for path in sorted((PACKAGE / "analysis").rglob("*.py")):
        bad = sorted(_imports(path) & set(ANALYSIS_NEVER))
        assert bad == [], f"{path.name} imports {bad}"


def _reached(graph: dict[str, set[str]], part: str) -> set[str]:
    """Every part `part` imports, directly or through other parts."""
    seen: set[str] = set()
    todo = [part]
    while todo:
        for dep in graph.get(todo.pop(), set()) - seen:
            seen.add(dep)
            todo.append(dep)
    return seen


def test_no_part_reaches_what_it_must_not_through_another() -> None:
    graph = _graph()
    bad = {part: sorted(_reached(graph, part) & set(never)) for part, never in NEVER_REACHED.items()}
    assert bad == {part: [] for part in NEVER_REACHED}


def test_analysis_reads_the_store_only_through_its_module_for_readers() -> None:
    for path in sorted((PACKAGE / "analysis").rglob("*.py")):
        store = [m for m in _all_imports(path) if m == "reportgen.store" or m.startswith("reportgen.store.")]
        assert [m for m in store if m != STORE_FOR_READERS] == [], f"{path.name} imports {store}"


def test_vocab_imports_nothing_from_reportgen() -> None:
    assert _imports(PACKAGE / "vocab.py") == set()


def test_no_two_parts_import_each_other() -> None:
    graph = _graph()
    pairs = sorted((a, b) for a, deps in graph.items() for b in deps if a < b and a in graph.get(b, set()))
    assert pairs == []


def _all_imports(path: Path) -> set[str]:
    """Every module name `path` imports, reportgen's and others'."""
    out: set[str] = set()
    for node in _tree(path):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


def test_analysis_is_pure() -> None:
    banned = ("subprocess", "typer", "click", "mkdocs", "mkdocs_gen_files", "reportgen.cli", "reportgen.commands")
    for path in sorted((PACKAGE / "analysis").rglob("*.py")):
        bad = sorted(m for m in _all_imports(path) if m.split(".")[0] in banned or m.startswith(banned))
        assert bad == [], f"{path.name} imports {bad}"
