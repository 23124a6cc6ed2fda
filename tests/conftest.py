"""Shared test helpers: every test writes its own small fixtures under tmp_path."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests import runs_guard

REPO = Path(__file__).resolve().parents[1]


def pytest_configure(config: pytest.Config) -> None:
    """SIGTERM (a CI timeout, `scripts/test` stopped) ends the session like Ctrl-C: fixtures tear
    down (the Ray cluster stops) instead of the process vanishing with its children left behind.
    SIGINT gets its default handler back where the suite was started with it ignored (a background
    job of a non-interactive shell, as `scripts/test` starts it), so tests that interrupt their
    children get the behaviour of a terminal."""

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, interrupt)
    runs_guard.install()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under `--dist loadgroup` (scripts/test), the tests of a module that share a module-scoped
    fixture (a built site, a campaign) run on one worker, so the fixture is made once; the other
    tests are spread one by one. An explicit `xdist_group` mark (the Ray tests share one cluster)
    wins."""
    for item in items:
        if item.get_closest_marker("xdist_group"):
            continue
        info = getattr(item, "_fixtureinfo", None)
        defs = info.name2fixturedefs.values() if info is not None else ()
        if any(d[-1].scope == "module" for d in defs if d):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
    _group_node_ids(config, items)
    _longest_first(items)


def _group_node_ids(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Give each grouped test the node id suffix `@group` that pytest-xdist's loadgroup scheduler
    groups by. xdist 3.8 writes it into `item._nodeid`, which pytest 9.2's structured node ids no
    longer read (pytest-dev/pytest-xdist#1386): every `xdist_group` was silently ignored, so a Ray
    chain's tests each started a cluster on whichever worker took them, and a shared build had
    workers waiting on each other. Done here, in the worker, where xdist does it; a no-op where
    xdist's own suffix took effect (older pytest)."""
    if not config.getoption("loadgroup", default=False):
        return
    from _pytest.nodeid import coerce_node_id

    for item in items:
        mark = item.get_closest_marker("xdist_group")  # the test's own group wins over its module's
        if mark is not None and "@" not in item.nodeid.rsplit("]", 1)[-1]:
            name = mark.args[0] if mark.args else mark.kwargs.get("name", "default")
            item._id = coerce_node_id(f"{item.nodeid}@{name}")  # type: ignore[attr-defined]


DURATIONS = REPO / "tests" / "durations.json"
# A test not in tests/durations.json yet (new, renamed) is expected to take this long, by its marks.
GUESS_S = {"ray": 60.0, "slow": 20.0, "browser": 10.0}


def base_node_id(nodeid: str) -> str:
    """A node id without the `@group` suffix `--dist loadgroup` adds (tests/durations.json's key)."""
    head, sep, tail = nodeid.rpartition("]")
    return head + sep + tail.split("@", 1)[0]


def _expected_s(item: pytest.Item, durations: dict[str, float]) -> float:
    known = durations.get(base_node_id(item.nodeid))
    if known is not None:
        return known
    marks = {m.name for m in item.iter_markers()}
    return max((s for m, s in GUESS_S.items() if m in marks), default=0.5)


def _longest_first(items: list[pytest.Item]) -> None:
    """Order the work longest first, a work unit being what one worker takes whole (an xdist group,
    or a test alone): the workers take units in this order, so the long chains start at once and
    the short tests fill in behind them (longest-processing-time-first, which keeps the last worker
    to finish close to the others). Each test's time is the last measured one, recorded in
    tests/durations.json by `scripts/test --record-durations` (docs/testing.md); a test not there
    is guessed from its marks. `scripts/test` passes `--no-loadscope-reorder`, without which
    pytest-xdist would reorder the units by their number of tests instead."""
    durations: dict[str, float] = json.loads(DURATIONS.read_text()) if DURATIONS.is_file() else {}
    unit_s: dict[str, float] = {}
    keys = []
    for item in items:
        mark = item.get_closest_marker("xdist_group")
        key = f"@{mark.args[0] if mark.args else mark.kwargs.get('name', 'default')}" if mark else item.nodeid
        keys.append(key)
        unit_s[key] = unit_s.get(key, 0.0) + _expected_s(item, durations)
    order = {id(item): (-unit_s[key], key, i) for i, (item, key) in enumerate(zip(items, keys, strict=True))}
    items.sort(key=lambda item: order[id(item)])


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--record-durations",
        metavar="FILE",
        help="write each test's time (setup, call and teardown, in seconds) into FILE (JSON), "
        "merged with what it holds: tests/durations.json orders the suite's work longest first",
    )


_RECORDED: dict[str, float] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Each phase's time, added up per test (in the controller under xdist: the workers' reports
    come to it)."""
    node = base_node_id(report.nodeid)
    _RECORDED[node] = _RECORDED.get(node, 0.0) + report.duration


def pytest_sessionfinish(session: pytest.Session) -> None:
    target = session.config.getoption("record_durations", default=None)
    if not target or hasattr(session.config, "workerinput") or not _RECORDED:
        return
    path = Path(target)
    merged: dict[str, float] = json.loads(path.read_text()) if path.is_file() else {}
    merged.update({k: round(v, 1) for k, v in _RECORDED.items()})
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(dict(sorted(merged.items())), indent=0) + "\n")
    tmp.replace(path)


@pytest.fixture
def repo_root() -> Path:
    return REPO


@pytest.fixture(autouse=True)
def _reads_no_repository_runs() -> Iterator[None]:
    """A test that read the repository's runs/ fails, naming what it read (tests/runs_guard.py): a
    stray experiment there (the demo's, an ingested log) must change no test's outcome."""
    runs_guard.take()
    yield
    read = runs_guard.take()
    if read:
        shown = ", ".join(read[:3]) + (f" and {len(read) - 3} more" if len(read) > 3 else "")
        pytest.fail(
            f"read the repository's runs/ ({shown}): use the committed_runs fixture (a copy of the committed "
            "experiments) or a runs root under tmp_path",
            pytrace=False,
        )


@pytest.fixture(autouse=True)
def _quiet_mkdocs_banners(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_MKDOCS_2_WARNING", "1")
    monkeypatch.setenv("DISABLE_MKDOCS_2_WARNING", "true")


@pytest.fixture(scope="session", autouse=True)
def _session_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """REPORTGEN_CACHE of everything the session runs (its processes, Ray's nodes, `mkdocs build`s):
    one folder the workers share (`session_cache`), never the user's ~/.cache/reportgen. A run's
    checkouts of throw-away repositories, warm starts, drawn charts and probe answers were left
    there by every session (112 MB after a day), and the suite's time hung on what an earlier one
    had left. Shared, a warm start or chart made by one test is read by the next; a test that
    checks a cache's own behaviour sets one of its own."""
    cache = session_cache(tmp_path_factory)
    patch = pytest.MonkeyPatch()
    patch.setenv("REPORTGEN_CACHE", str(cache))
    yield cache
    patch.undo()


def session_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session's REPORTGEN_CACHE (`_session_cache`), made if missing."""
    cache = shared_root(tmp_path_factory) / "svg-cache"
    cache.mkdir(parents=True, exist_ok=True)
    return cache


@pytest.fixture(autouse=True)
def _private_machine_lock(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test its own machine lock (reportgen.store.lock): tests of other checkouts running on
    the same machine must not wait for this one, nor it for them."""
    monkeypatch.setenv("REPORTGEN_MACHINE_LOCK", str(tmp_path_factory.mktemp("machine-lock") / "machine.lock"))


def python_exe() -> str:
    return sys.executable


def env_with_repo_on_path() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def logging_python(folder: Path) -> tuple[Path, Path]:
    """A `python` that writes each call's arguments, one line a call, to a log and then runs this
    interpreter with them: the real answers, and a count of who asked what. Returns (python, log)."""
    folder.mkdir(parents=True, exist_ok=True)
    python, log = folder / "python", folder / "calls.log"
    python.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> "{log}"\nexec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    return python, log


def shared_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder every pytest-xdist worker of this session shares (the session's base temp folder
    without xdist): session fixtures built there are built once per session, not once per worker."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def committed_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A runs/ folder with copies of the experiments the repository commits (not the demo's campaign
    a working copy may hold beside them), made once per session; tests only read it."""
    from tests.helpers import copy_committed_runs

    return built_once(tmp_path_factory, "committed-runs", lambda p: copy_committed_runs(p / "runs")) / "runs"


def built_once(tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]) -> Path:
    """`shared_root()/name`, made by `build(folder)` by the first worker that asks, under a file lock
    the others wait on; the folder is complete when returned (a `.built` mark is written last, so a
    build that failed is redone, never reused half-made)."""
    root = shared_root(tmp_path_factory)
    folder = root / name
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / ".built").is_file():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            build(folder)
            (folder / ".built").write_text("")
    return folder
