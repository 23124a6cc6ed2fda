"""Generate the report pages during `mkdocs build` / `mkdocs serve` (mkdocs-gen-files script).

Thin on purpose: everything lives in reportgen.render.site, which checks that every analysis.json
is current (the build only reads runs/), renders Markdown + chart specs and writes them here.
runs/ is found next to mkdocs.yml, or at $REPORTGEN_RUNS. A problem the user can fix (a stale
analysis) stops the build with its one line, not a traceback.
"""

import sys
from pathlib import Path

import mkdocs_gen_files

config = mkdocs_gen_files.config
repo = Path(config.config_file_path).resolve().parent
try:
    import reportgen  # noqa: F401
except ModuleNotFoundError:  # building from a checkout without installing reportgen
    sys.path.insert(0, str(repo))

from mkdocs.exceptions import PluginError  # noqa: E402

from reportgen.errors import UserError  # noqa: E402
from reportgen.render.site import SiteOptions, generate  # noqa: E402
from reportgen.store.layout import resolve_runs_root  # noqa: E402

try:
    generate(
        resolve_runs_root(base=repo).resolve(),
        open_file=mkdocs_gen_files.open,
        options=SiteOptions.from_extra(config.extra, repo_root=repo, docs_dir=Path(config.docs_dir)),
        wait=False,  # charts still drawing are waited for by the hook, page by page (docs/hooks/)
    )
except UserError as exc:
    raise PluginError(str(exc)) from None
