"""The domain vocabulary is the bottom of the import graph, and the stages import it instead of
spelling its words: no package imports another that imports it back."""

from __future__ import annotations

import ast
from pathlib import Path

from reportgen import vocab
from reportgen.spec.model import AnalysisSpec

PACKAGE = Path(vocab.__file__).parent


def _imports(path: Path) -> set[str]:
    """Top-level reportgen modules/packages that `path` imports."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
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


def test_vocab_imports_nothing_from_reportgen() -> None:
    assert _imports(PACKAGE / "vocab.py") == set()


def test_no_two_parts_import_each_other() -> None:
    graph = _graph()
    pairs = sorted((a, b) for a, deps in graph.items() for b in deps if a < b and a in graph.get(b, set()))
    assert pairs == []


def test_every_stage_imports_the_vocabulary() -> None:
    graph = _graph()
    for stage in ("spec", "plan", "execute", "ingest", "analysis", "render", "store"):
        assert "vocab" in graph[stage], stage


def test_spec_defaults_are_known_metrics() -> None:
    spec = AnalysisSpec()
    for key in (spec.primary, *spec.secondary):
        assert key in vocab.METRICS
        assert vocab.METRICS[key].direction is not None
    assert vocab.metric(spec.primary).title == "response tokens/s"
    assert vocab.metric("perf/not_a_relax_key").title == "perf/not_a_relax_key"


def test_failure_kind_orders_hold_the_same_kinds() -> None:
    assert set(vocab.FAILURE_DISPLAY_ORDER) == set(vocab.FAILURE_KINDS)
    assert vocab.LOG_FAILURE_KINDS.issubset(vocab.FAILURE_KINDS)


def test_roles() -> None:
    assert vocab.profile_arm("A1") == "profile-A1"
    assert vocab.run_role("profile-A1") == vocab.PROFILE
    assert vocab.run_role("A1") == vocab.FORMAL
    assert vocab.run_role("A1", "profile") == vocab.PROFILE
