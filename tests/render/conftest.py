"""Fixtures for the site tests: a realistic runs/ tree and a site built from it with MkDocs."""

from __future__ import annotations

import functools
import hashlib
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent

from reportgen.render import chart_spec, chart_svg  # noqa: E402
from tests.conftest import built_once, shared_root  # noqa: E402
from tests.helpers import copy_committed_runs  # noqa: E402
from tests.render import site_fixture  # noqa: E402 (after REPO, which it does not need)


def make_project(root: Path) -> Path:
    """A folder with mkdocs.yml inheriting the repository's and a copy of the real docs/, so a
    strict build here checks every documentation page and link too."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "mkdocs.yml").write_text(f"INHERIT: {REPO / 'mkdocs.yml'}\n")
    shutil.copytree(
        REPO / "docs", root / "docs", dirs_exist_ok=True, ignore=shutil.ignore_patterns("vendor", "__pycache__")
    )
    return root


def build_env(cache: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "PYTHONPATH": str(REPO) + os.pathsep + env.get("PYTHONPATH", ""),
            "REPORTGEN_CACHE": str(cache),
            "NO_MKDOCS_2_WARNING": "1",
            "DISABLE_MKDOCS_2_WARNING": "true",
        }
    )
    env.pop("REPORTGEN_RUNS", None)
    env.update(extra)
    return env


def mkdocs_build(project: Path, cache: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", *args],
        cwd=project,
        env=build_env(cache, **env),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc


@pytest.fixture(scope="session")
def svg_cache(tmp_path_factory) -> Path:
    """REPORTGEN_CACHE of the site builds: one for the session's workers (a chart drawn once is read
    by every later build of the same chart; its files are written atomically)."""
    cache = shared_root(tmp_path_factory) / "svg-cache"
    cache.mkdir(exist_ok=True)
    return cache


# The folders of REPORTGEN_CACHE that hold what a build draws, named by what they hold (chart_svg.plan,
# chart_spec's template store): a build with a cache of its own may read them from the session's.
DRAWN = (chart_svg.SVG_FOLDER, chart_svg.INLINE_FOLDER, chart_spec.TEMPLATE_FOLDER)


def own_page_cache(folder: Path, svg_cache: Path) -> Path:
    """A REPORTGEN_CACHE of a test's own for what it counts (kept pages, their HTML, the scans),
    whose drawn charts are the session's (`svg_cache`, linked): a chart drawn once a session, as the
    suite's other builds draw theirs. Returns `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in DRAWN:
        (svg_cache / name).mkdir(exist_ok=True)
        (folder / name).symlink_to(svg_cache / name, target_is_directory=True)
    return folder


def tree_snapshot(root: Path) -> dict[str, bytes]:
    """Every file under `root` (relative path -> bytes): equal snapshots mean a byte-identical tree."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# The built site's runs cap PyTorch's memory (--gpu-memory-cap-gib), as the GPU showcases do: its
# memory section shows an emulated cap beside the GPU's capacity, and nvidia-smi's peak above the cap.
SITE_CAP_GIB = 68


def _build_project(project: Path, svg_cache: Path) -> None:
    make_project(project)
    site_fixture.build_experiment(project / "runs", cap_gib=SITE_CAP_GIB)
    (project / "runs-before.json").write_text(json.dumps(_digests(project / "runs")))
    mkdocs_build(project, svg_cache)


def _digests(root: Path) -> dict[str, str]:
    return {rel: hashlib.sha256(data).hexdigest() for rel, data in tree_snapshot(root).items()}


@pytest.fixture(scope="session")
def built_project(tmp_path_factory, svg_cache) -> tuple[Path, dict[str, str]]:
    """A project whose runs/ holds the four-arm fixture (under SITE_CAP_GIB), built with `mkdocs build --strict` once for
    the session (every xdist worker reads the same build: tests only read it); returns the project and
    the digest of every file of runs/ taken before the build (`tree_digests` gives it again)."""
    project = built_once(tmp_path_factory, "built-project", lambda p: _build_project(p, svg_cache))
    return project, json.loads((project / "runs-before.json").read_text())


def tree_digests(root: Path) -> dict[str, str]:
    """`tree_snapshot` as SHA-256 digests: equal digests mean a byte-identical tree."""
    return _digests(root)


def _build_committed(project: Path, svg_cache: Path) -> None:
    make_project(project)
    runs = copy_committed_runs(project.parent / f"{project.name}-runs")  # not the demo's campaign beside them
    mkdocs_build(project, svg_cache, REPORTGEN_RUNS=str(runs))


@pytest.fixture(scope="session")
def committed_site(tmp_path_factory, svg_cache) -> Path:
    """site/ built by `mkdocs build --strict` from the committed runs/ (the GPU showcases), once for
    the session and every xdist worker; tests only read it."""
    return built_once(tmp_path_factory, "committed-site", lambda p: _build_committed(p, svg_cache)) / "site"


@pytest.fixture(scope="session")
def built_site(built_project) -> Path:
    """site/ of `built_project`."""
    return built_project[0] / "site"


class Server:
    def __init__(self, root: Path):
        class Quiet(http.server.SimpleHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(root)))
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> Server:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def served(built_site):
    """The fixture's built site, served on 127.0.0.1."""
    with Server(built_site) as srv:
        yield srv


CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    # No omnibox popup: Chromium 156 headless loads the address bar's popup (two WebUI pages,
    # chrome://omnibox-popup.top-chrome/) in a renderer of its own for every window, that is for
    # every Playwright context, though no test has an address bar. 8 contexts of a report page:
    # 11.9 -> 8.3 CPU-seconds (docs/testing.md). Chromium merges this list with Playwright's own.
    "--disable-features=WebUIOmniboxPopup,WebUIOmniboxAimPopup",
]


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian's Chromium is not installed at /usr/bin/chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()
