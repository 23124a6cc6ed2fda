"""A rebuild costs what changed (issue 45): `mkdocs build` twice with nothing changed gives the same
site with every page kept from the first build, and after one experiment's file changed only the
page that shows it is rendered again (docs/site.md#incremental-builds)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.render import site_fixture
from tests.render.conftest import build_env, make_project, own_page_cache, tree_snapshot
from tests.render.test_time_section import _run as profiled_run

pytestmark = pytest.mark.slow

KEPT = re.compile(r"reportgen: (\d+) of (\d+) pages kept from the last build")


def _build(project: Path, cache: Path, out: str) -> tuple[int, int]:
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", out],
        cwd=project,
        env=build_env(cache),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    # a link into a kept page finds its anchors (MkDocs reports a missing one at INFO, which --strict lets pass)
    assert "does not contain an anchor" not in proc.stderr, proc.stderr[-4000:]
    found = KEPT.search(proc.stderr)
    assert found, proc.stderr[-2000:]
    return int(found.group(1)), int(found.group(2))


def test_a_rebuild_renders_only_what_changed(tmp_path: Path, svg_cache: Path) -> None:
    project = make_project(tmp_path / "project")
    site_fixture.build_experiment(project / "runs", "exp-a", steps=20, with_profile=False)
    site_fixture.build_experiment(project / "runs", "exp-b", steps=20, seed=1, with_profile=False, t0=1_764_500_000.0)
    # This test's own pages: the session's would keep pages of other builds (its charts are the session's).
    cache = own_page_cache(tmp_path / "cache", svg_cache)
    kept, pages = _build(project, cache, "site-1")
    assert kept == 0 and pages > 20
    kept, again = _build(project, cache, "site-2")
    assert (kept, again) == (pages, pages)  # nothing changed: every page kept
    assert tree_snapshot(project / "site-1") == tree_snapshot(project / "site-2")  # and the same site
    # A changed page is rendered again and its links into kept pages (showcase-h200.md links to
    # calibration.md's and analysis.md's sections) still find their anchors (_build asserts it).
    page = project / "docs" / "showcase-h200.md"
    page.write_text(page.read_text() + "\nOne more line.\n")
    kept, again = _build(project, cache, "site-2b")
    assert (kept, again) == (pages - 1, pages)
    shown = project / "runs" / "exp-b" / "A1" / "1" / "provenance" / "python.txt"  # shown, not analysed
    shown.write_text("Python 3.13.1\n")
    kept, again = _build(project, cache, "site-3")
    assert (kept, again) == (pages - 1, pages)  # the one page that shows it: exp-b's provenance
    before, after = tree_snapshot(project / "site-2b"), tree_snapshot(project / "site-3")
    changed = sorted(p for p in after if before.get(p) != after[p])
    assert (
        "reports/exp-b/provenance/index.html" in changed
        and b"Python 3.13.1" in after["reports/exp-b/provenance/index.html"]
    )
    assert not [p for p in changed if p.endswith(".html") and p != "reports/exp-b/provenance/index.html"], changed


def test_a_copy_at_another_path_builds_from_the_pages_kept_for_the_first(tmp_path: Path, svg_cache: Path) -> None:
    """Another clone or a copy of the project (a second checkout, CI's workspace, the suite's fresh
    clones) reads what a build of the first rendered into the same cache folder, with the project's
    `shorten_paths` on: no experiment page rendered again, every page's HTML kept, the same site;
    the run files copied next to a page (its profiler traces) come from the copy's own runs folder,
    the first project moved away."""
    first = make_project(tmp_path / "first")
    exp = site_fixture.build_experiment(first / "runs", "exp-a", steps=20, with_profile=False)
    for arm, offload in (("baseline", True), ("A1", False)):  # profiler runs: traces copied next to its page
        profiled_run(exp, arm, offload=offload)
    site_fixture.restat_traces(exp)
    cache = own_page_cache(tmp_path / "cache", svg_cache)
    kept, pages = _build(first, cache, "site")
    assert kept == 0
    built = tree_snapshot(first / "site")
    assert any(p.startswith("reports/exp-a/traces/") for p in built), sorted(built)
    entries = sorted((cache / "pages").rglob("*.pickle"))
    second = tmp_path / "elsewhere" / "second"
    shutil.copytree(first, second, symlinks=True, ignore=shutil.ignore_patterns("site"))
    first.rename(
        tmp_path / "gone"
    )  # not shutil.rmtree: its dir_fd opens of `runs` look like the repository's to the runs guard
    kept, again = _build(second, cache, "site")
    assert (kept, again) == (pages, pages)
    assert sorted((cache / "pages").rglob("*.pickle")) == entries  # nothing rendered again
    assert tree_snapshot(second / "site") == built


SHOWN = "reports/exp-a/provenance/index.html"  # shows the model folder the runs recorded


def _recorded_inside(tmp_path: Path) -> tuple[Path, Path]:
    """A project whose runs were recorded inside it (their paths under its root, which
    `shorten_paths` shows as `<repo>`), and a copy of it at another path, neither built yet."""
    inside = make_project(tmp_path / "first")
    site_fixture.build_experiment(inside / "runs", "exp-a", steps=20, with_profile=False, home=str(inside / "work"))
    copy = tmp_path / "elsewhere" / "second"
    shutil.copytree(inside, copy, symlinks=True)
    return inside, copy


def test_pages_whose_strings_held_the_first_projects_path_are_rendered_again_for_the_copy(
    tmp_path: Path, svg_cache: Path
) -> None:
    """The exception: an experiment recorded inside the first project (its paths under the
    repository, which `shorten_paths` shows as `<repo>`) reads differently from another path, so
    the copy renders its pages again instead of showing the first project's shortening."""
    first, second = _recorded_inside(tmp_path)
    cache = own_page_cache(tmp_path / "cache", svg_cache)
    _build(first, cache, "site")
    assert b"&lt;repo&gt;/work" in tree_snapshot(first / "site")[SHOWN]
    entries = set((cache / "pages").rglob("*.pickle"))
    _build(second, cache, "site")
    assert set((cache / "pages").rglob("*.pickle")) - entries  # rendered again
    page = tree_snapshot(second / "site")[SHOWN]
    assert b"&lt;repo&gt;/work" not in page and b"/work/" in page  # the recorded path, not the copy's root


def test_runs_recorded_inside_a_checkout_show_its_root_shortened_after_a_copy_elsewhere_was_built_first(
    tmp_path: Path, svg_cache: Path
) -> None:
    """The other way round: runs recorded inside checkout B, a copy of which (at A) is built first into
    the same cache folder. A's build finds none of its roots in the runs' paths; B's finds its own, so
    B renders the pages again and shows its recorded paths as `<repo>`, not as A's build left them."""
    b, a = _recorded_inside(tmp_path)
    cache = own_page_cache(tmp_path / "cache", svg_cache)
    _build(a, cache, "site")
    at_a = tree_snapshot(a / "site")[SHOWN]
    assert b"&lt;repo&gt;/work" not in at_a and b"/first/work/models/" in at_a  # B's path, as recorded
    entries = set((cache / "pages").rglob("*.pickle"))
    _build(b, cache, "site")
    assert set((cache / "pages").rglob("*.pickle")) - entries  # rendered again
    at_b = tree_snapshot(b / "site")[SHOWN]
    assert b"&lt;repo&gt;/work/models/" in at_b and b"/first/work/models/" not in at_b


def test_a_page_whose_build_warned_is_rendered_again_so_a_strict_build_keeps_failing(
    tmp_path: Path, svg_cache: Path
) -> None:
    project = make_project(tmp_path / "project")
    (project / "runs").mkdir()
    (project / "docs" / "broken.md").write_text("# Broken\n\nSee [the missing page](missing.md).\n")
    cache = own_page_cache(tmp_path / "cache", svg_cache)
    for out in ("site-1", "site-2"):
        proc = subprocess.run(
            [sys.executable, "-m", "mkdocs", "build", "-d", out],
            cwd=project,
            env=build_env(cache),
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert proc.returncode == 0 and "missing.md" in proc.stderr, proc.stderr[-2000:]  # warned, both times
        kept, pages = map(int, KEPT.search(proc.stderr).groups())  # type: ignore[union-attr]
    assert kept == pages - 1  # every page but the one that warned
