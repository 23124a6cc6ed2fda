"""What the site build keeps between builds (render/site_cache.py, render/site.py): an experiment's
pages are kept by the digest of every byte they show, what they show from outside the folder, the
options and the code; the navigation lists a large site by month."""

from __future__ import annotations

import os
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from reportgen.errors import UserError
from reportgen.render import chart_svg, site, site_cache
from reportgen.render.load import load_experiment
from reportgen.render.site_cache import CachedPage, Entry, PageCache
from reportgen.store import layout
from reportgen.store.run_folder import RunsIndex
from tests.render import site_fixture


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    site_fixture.build_experiment(root, "exp-a", steps=20, with_profile=False)
    return root


def _digest(runs: Path) -> str:
    return site_cache.scan(runs / "exp-a", runs, RunsIndex(runs)).digest


def test_the_digest_follows_what_the_pages_show_beyond_the_analysis_inputs(runs: Path) -> None:
    first = _digest(runs)
    assert _digest(runs) == first  # by content: a second read is the same
    shown = runs / "exp-a" / "baseline" / "1" / "provenance" / "python.txt"  # not an analysis input: the pages show it
    before = shown.read_bytes()
    try:
        shown.write_text("Python 3.13.0\n")
        assert _digest(runs) != first
    finally:
        shown.write_bytes(before)
    assert _digest(runs) == first


def test_a_stale_analysis_stops_the_scan_with_the_command_to_run(tmp_path: Path) -> None:
    exp = site_fixture.build_experiment(tmp_path / "runs", "stale", steps=20, with_profile=False)
    events = exp / "baseline" / "1" / "events.json"
    events.write_text(events.read_text().replace('"events"', '"events" ', 1))  # another byte: another input
    with pytest.raises(UserError, match=r"its runs changed since it was written; run `reportgen analyze stale"):
        site_cache.scan(exp, tmp_path / "runs", RunsIndex(tmp_path / "runs"))


def _memo_scan(exp: Path, cache: Path) -> str:
    runs = exp.parent
    index = RunsIndex(runs)
    memo = site_cache.ScanMemo(cache, layout.iter_experiments(runs), index)
    return site_cache.scan(exp, runs, index, memo).digest


def test_the_memo_gives_the_scans_digest_and_a_changed_file_is_read_again_whatever_its_mtime(tmp_path: Path) -> None:
    exp = site_fixture.build_experiment(tmp_path / "runs", "memo", steps=20, with_profile=False)
    cache = tmp_path / "cache"
    first = _memo_scan(exp, cache)
    assert first == _digest_of(exp)  # a content scan's digest
    assert len(list((cache / "scans").glob("*/*"))) == 1
    assert _memo_scan(exp, cache) == first  # kept: served by the stat of the files
    stale_entry = cache / "scans" / "00" / ("0" * 64)  # another folder's, unused for a month
    stale_entry.parent.mkdir(parents=True, exist_ok=True)
    stale_entry.write_text(first + "\n")
    past = time.time() - 30 * 86400
    for entry in (cache / "scans").glob("*/*"):
        os.utime(entry, (past, past))
    memo = site_cache.ScanMemo(cache, layout.iter_experiments(exp.parent), RunsIndex(exp.parent))
    assert memo.prune([exp]) == 1 and memo.get(exp) == first  # this folder's entry stays, however old
    # The same number of bytes and the modification time set back, as a careless copy could leave
    # it: the file's change time still moved, so the folder is read again and found stale.
    events = exp / "baseline" / "1" / "events.json"
    st = events.stat()
    text = events.read_text()
    events.write_text(text.replace('"events"', '"EVENTS"', 1))
    os.utime(events, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert events.stat().st_size == st.st_size and events.stat().st_mtime_ns == st.st_mtime_ns
    with pytest.raises(UserError, match="its runs changed since it was written"):
        _memo_scan(exp, cache)


def test_the_memo_is_not_used_across_a_new_run_on_the_runs_folder_or_a_symbolic_link(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    exp = site_fixture.build_experiment(runs, "memo", steps=20, with_profile=False)
    cache = tmp_path / "cache"
    memo = site_cache.ScanMemo(cache, layout.iter_experiments(runs), RunsIndex(runs))
    key = memo.key(exp)
    assert key is not None
    # Another experiment's run appears: the overlap check reads its manifest, so every key changes.
    other = runs / "other" / "baseline" / "1"
    other.mkdir(parents=True)
    (runs / "other" / "experiment.toml").write_text('name = "other"\n')
    (other / "manifest.json").write_bytes((exp / "baseline" / "1" / "manifest.json").read_bytes())
    again = site_cache.ScanMemo(cache, layout.iter_experiments(runs), RunsIndex(runs))
    assert again.key(exp) not in (None, key)
    (exp / "notes.md").symlink_to(tmp_path / "elsewhere.md")  # its target could change unseen: never kept
    linked = site_cache.ScanMemo(cache, layout.iter_experiments(runs), RunsIndex(runs))
    assert linked.key(exp) is None and linked.get(exp) is None


def _digest_of(exp: Path) -> str:
    return site_cache.scan(exp, exp.parent, RunsIndex(exp.parent)).digest


def test_the_key_holds_what_the_pages_show_from_outside_the_folder(runs: Path) -> None:
    scanned = site_cache.scan(runs / "exp-a", runs, RunsIndex(runs))
    key = site_cache.entry_key(scanned, outside=("pages", "vs history: x", []), options="o")
    assert key == site_cache.entry_key(scanned, outside=("pages", "vs history: x", []), options="o")
    assert key != site_cache.entry_key(scanned, outside=("pages", "vs history: y", []), options="o")
    assert key != site_cache.entry_key(scanned, outside=("pages", "vs history: x", [("a.md", "A")]), options="o")
    assert key != site_cache.entry_key(scanned, outside=("pages", "vs history: x", []), options="p")


def test_an_entry_is_served_while_its_drawn_charts_are_there(tmp_path: Path) -> None:
    store = PageCache(tmp_path)
    chart = tmp_path / "inline.svg"
    chart.write_text("<svg/>")
    page = CachedPage("reports/x/index.md", "X", None, "# X\n", {"primary": (str(chart), str(chart))})
    store.put("k", Entry((page,), None))
    got = store.get("k")
    assert got is not None and got.pages == (page,)
    chart.unlink()  # a chart the cache lost: the entry is made again, not served without it
    assert store.get("k") is None and store.get("none") is None
    past = time.time() - 30 * 86400
    os.utime(store._path("k"), (past, past))
    assert store.prune([]) == 1


def test_the_history_is_kept_while_no_experiment_changed(tmp_path: Path) -> None:
    store = PageCache(tmp_path)
    made = []
    assert store.history(["a", "b"], lambda: made.append(1) or "history") == "history"
    assert store.history(["a", "b"], lambda: made.append(1) or "other") == "history" and made == [1]
    assert store.history(["a", "c"], lambda: made.append(1) or "new") == "new" and made == [1, 1]


def _exp(name: str, created: str | None) -> SimpleNamespace:
    return SimpleNamespace(name=name, analysis=SimpleNamespace(experiment=SimpleNamespace(created_utc=created)))


def test_a_large_site_lists_its_reports_by_month_in_parts_of_at_most_nav_flat() -> None:
    assert site.months([_exp(f"e{i}", "2026-12-01T00:00:00Z") for i in range(site.NAV_FLAT)]) == {}  # type: ignore[list-item]
    many = [_exp(f"d{i:02d}", "2026-12-01T00:00:00Z") for i in range(site.NAV_FLAT + 5)]
    many += [_exp("n1", "2026-11-30T00:00:00Z"), _exp("u1", None)]
    groups = site.months(many)  # type: ignore[arg-type]
    assert groups["n1"] == "2026-11" and groups["u1"] == "undated"
    assert groups["d00"] == "2026-12, 1 of 2" and groups[f"d{site.NAV_FLAT:02d}"] == "2026-12, 2 of 2"
    pages = [(e.name, [SimpleNamespace(path=f"reports/{e.name}/index.md", nav=e.name)]) for e in many]
    nav = site.summary(pages, [], groups=groups)  # type: ignore[arg-type]
    lines = nav.splitlines()
    sections = [ln.strip() for ln in lines if ln.strip().startswith("* 20") or ln.strip().startswith("* und")]
    assert sections == ["* 2026-12, 1 of 2", "* 2026-12, 2 of 2", "* 2026-11", "* undated"]  # newest first


@pytest.mark.parametrize(
    "line", ["**vs history** +1.2 % against the last 3 campaigns ([history](../../history/x/)).\n", ""]
)
def test_the_pages_kept_without_their_vs_history_line_are_written_as_rendered_with_it(runs: Path, line: str) -> None:
    exp = load_experiment(runs / "exp-a")
    with_line = site.render_experiment(exp, history=line)
    slotted = site.render_experiment(exp, history=site.HISTORY_SLOT)
    assert site.HISTORY_SLOT in slotted[0].markdown
    kept = site._cached(slotted, {(p.path, n): _drawn() for p in slotted for n in p.charts})
    filled = [site._with_history(p, line) for p in kept]
    assert [p.markdown for p in filled] == [p.markdown for p in with_line]  # byte for byte


def _drawn() -> chart_svg.Drawn:
    return chart_svg.Drawn(svg=Path("/c/vega.svg"), inline=Path("/c/inline.svg"))
