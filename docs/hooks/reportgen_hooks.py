"""MkDocs hooks for the report site.

- The generated literate-nav SUMMARY.md is navigation, not a page: exclude it late, after
  literate-nav has found it.
- `mkdocs serve` rebuilds when runs/ (or $REPORTGEN_RUNS) changes; a hook instead of `watch:`
  so a checkout without runs/ still builds.
"""

import os
from pathlib import Path

from mkdocs.plugins import event_priority
from mkdocs.structure.files import InclusionLevel


@event_priority(-100)
def on_files(files, config):
    f = files.get_file_from_path("SUMMARY.md")
    if f is not None:
        f.inclusion = InclusionLevel.EXCLUDED
    return files


def on_serve(server, config, builder):
    root = Path(config.config_file_path).resolve().parent
    runs = Path(os.environ.get("REPORTGEN_RUNS") or root / "runs")
    if runs.is_dir():
        server.watch(str(runs))
    pkg = root / "reportgen"
    if pkg.is_dir():
        server.watch(str(pkg))
    return server
