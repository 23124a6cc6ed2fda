"""The import graph keeps the house rules: the vocabulary at the bottom, no two parts of reportgen
importing each other, and the analysis pure (no CLI, subprocess or MkDocs code)."""

from __future__ import annotations

import ast
from pathlib import Path

from reportgen import vocab

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


def _all_imports(path: Path) -> set[str]:
    """Every module name `path` imports, reportgen's and others'."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
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
