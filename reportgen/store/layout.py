"""Paths of the runs/ tree (schema 1). The one place that knows where files live.

runs/<experiment>/experiment.toml         the spec as run (bytes of the source file)
runs/<experiment>/campaign.json           machine fingerprint the campaign is pinned to
runs/<experiment>/analysis.json           written by `reportgen analyze`
runs/<experiment>/revisions.json          arms at git revisions: each arm's commit, the code diffs
runs/<experiment>/.campaign.lock          held while a `reportgen run` (or analyze) works on it
runs/<experiment>/archive/<campaign>/     earlier campaigns, moved aside, never deleted
runs/<experiment>/<arm>/<repeat>/         one run (arm = baseline | candidate id | profile-<arm>)
    manifest.json  recipe.sh|recipe.json  recipe.patch  command.json  stdout.log  stderr.log
    gpu.jsonl -> gpu.parquet  host.jsonl -> host.parquet  provenance/  tensorboard/  traces/
    metrics.parquet  events.json  (ingest)
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from reportgen.vocab import BASELINE

SCHEMA_VERSION = 1

RUNS = "runs"
RUNS_ENV = "REPORTGEN_RUNS"
CACHE_ENV = "REPORTGEN_CACHE"  # checkouts of revisions, drawn charts, probe answers, derived specs

EXPERIMENT_SPEC = "experiment.toml"
CAMPAIGN = "campaign.json"
ANALYSIS = "analysis.json"
REVISIONS = "revisions.json"
CAMPAIGN_LOCK = ".campaign.lock"  # reportgen.store.lock; removed when released
ARCHIVE = "archive"

MANIFEST = "manifest.json"
STDOUT = "stdout.log"
STDERR = "stderr.log"
RECIPE_SCRIPT = "recipe.sh"
RECIPE_ARGV = "recipe.json"
RECIPE_PATCH = "recipe.patch"
COMMAND = "command.json"
GPU_JSONL = "gpu.jsonl"
GPU_PARQUET = "gpu.parquet"
HOST_JSONL = "host.jsonl"
HOST_PARQUET = "host.parquet"
PROVENANCE = "provenance"
TENSORBOARD = "tensorboard"
TRACES = "traces"
TRACES_PARQUET = "traces.parquet"  # the profiler summary (format owned by reportgen.traces.model)
METRICS = "metrics.parquet"
EVENTS = "events.json"

RESERVED_DIRS = {ARCHIVE, "site", "docs"}


def default_cache() -> Path:
    """reportgen's cache folder, the same for every part that keeps something there (the checkouts of
    revisions, the site's drawn charts, the provenance probes' answers, a Ray node's data hashes):
    $REPORTGEN_CACHE, else $XDG_CACHE_HOME/reportgen, else ~/.cache/reportgen. Never under runs/: the
    site build reads runs/ and must not write there."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser().resolve()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return (Path(base) / "reportgen").resolve()


def resolve_runs_root(
    explicit: Path | str | None = None, *, base: Path | None = None, env: Mapping[str, str] | None = None
) -> Path:
    """The runs/ root, decided the same way for every command and for the site: the `--runs`
    option when given, else $REPORTGEN_RUNS, else `runs/` in `base` (the working folder for a
    command, the folder of mkdocs.yml for the site). Not made absolute: messages keep the path the
    user wrote."""
    if explicit is not None:
        return Path(explicit).expanduser()
    value = (os.environ if env is None else env).get(RUNS_ENV)
    if value:
        return Path(value).expanduser()
    return (base if base is not None else Path()) / RUNS


def iter_experiments(root: Path) -> list[Path]:
    """Experiment folders under a runs/ root (those holding an experiment.toml), sorted."""
    root = Path(root)
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and (p / EXPERIMENT_SPEC).is_file())


def iter_runs(exp_dir: Path) -> list[tuple[str, int, Path]]:
    """(arm, repeat, path) for every run folder of an experiment, sorted by arm then repeat."""
    out: list[tuple[str, int, Path]] = []
    exp_dir = Path(exp_dir)
    if not exp_dir.is_dir():
        return out
    for arm_dir in sorted(exp_dir.iterdir()):
        if not arm_dir.is_dir() or arm_dir.name in RESERVED_DIRS or arm_dir.name.startswith("."):
            continue
        for rep_dir in arm_dir.iterdir():
            if rep_dir.is_dir() and rep_dir.name.isdigit():
                out.append((arm_dir.name, int(rep_dir.name), rep_dir))
    out.sort(key=lambda t: (t[0] != BASELINE, t[0], t[1]))
    return out
