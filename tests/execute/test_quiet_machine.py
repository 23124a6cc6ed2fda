"""One campaign per machine at a time, and runs disturbed by anything else flagged, with real
processes: a second `reportgen run` of a campaign in progress is refused while the first finishes
untouched; a campaign of another experiment waits for the machine, or, forced beside it, makes both
comparisons invalid naming the overlap; a CPU hog started beside a run is reported on the page."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from reportgen.cli import main
from reportgen.render.experiment_page import render
from reportgen.render.load import load_experiment
from reportgen.store.run import parse_utc
from tests.conftest import env_with_repo_on_path
from tests.execute.conftest import TRAINER, make_experiment
from tests.helpers import wait_for

pytestmark = pytest.mark.slow


def start_run(spec: Path, runs: Path, *extra: str, sigint: signal.Handlers | None = None) -> subprocess.Popen[str]:
    """`reportgen run` in a child; `sigint` sets how it inherits SIGINT (SIG_IGN: as a background job
    of a non-interactive shell starts it, so Python installs no KeyboardInterrupt handler)."""
    return subprocess.Popen(
        [sys.executable, "-m", "reportgen", "run", str(spec), "--runs", str(runs), "--no-profiler", *extra],
        env=env_with_repo_on_path(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=None if sigint is None else (lambda: signal.signal(signal.SIGINT, sigint)),
    )


def manifest(runs: Path, exp: str, arm: str, repeat: int = 1) -> dict:
    return json.loads((runs / exp / arm / str(repeat) / "manifest.json").read_text())


def started(runs: Path, exp: str, arm: str) -> bool:
    return (runs / exp / arm / "1" / "manifest.json").is_file()


def tree(path: Path) -> dict[str, float]:
    return {str(p.relative_to(path)): p.stat().st_mtime for p in sorted(path.rglob("*")) if p.is_file()}


def test_a_second_run_of_a_campaign_in_progress_is_refused_and_the_first_finishes_untouched(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    spec = make_experiment(tmp_path / "r", steps=6, sleep=0.4)
    runs = tmp_path / "runs"
    first = start_run(spec, runs)
    wait_for(lambda: started(runs, "exp", "baseline"), 120, "the first campaign's baseline to start")
    before = {k for k in tree(runs / "exp") if not k.startswith("baseline/1/")}  # what the first one has made
    assert main(["run", str(spec), "--runs", str(runs), "--no-profiler"]) == 2
    err = capfd.readouterr().err.strip()
    assert (
        err.count("\n") == 0 and f"pid {first.pid} on " in err and "a campaign of this experiment is in progress" in err
    )
    assert main(["analyze", "exp", "--runs", str(runs)]) == 2  # its analysis waits for the campaign's end
    assert "pass --wait" in capfd.readouterr().err
    assert {k for k in tree(runs / "exp") if not k.startswith("baseline/1/")} == before  # nothing written
    out, _ = first.communicate(timeout=180)
    assert first.returncode == 0, out
    for arm in ("baseline", "A1"):
        m = manifest(runs, "exp", arm)
        assert m["status"] == "complete" and m["signal"] is None, m
    assert not (runs / "exp" / "archive").exists()  # nothing of the first was moved aside or redone
    assert not (runs / "exp" / ".campaign.lock").exists()
    assert main(["analyze", "exp", "--runs", str(runs)]) == 0


def test_a_campaign_of_another_experiment_waits_for_the_machine(tmp_path: Path) -> None:
    one = make_experiment(tmp_path / "one", name="one", steps=5, sleep=0.3)
    two = make_experiment(tmp_path / "two", name="two", steps=3, sleep=0.1)
    runs = tmp_path / "runs"
    first = start_run(one, runs, "--no-analyze")
    wait_for(lambda: started(runs, "one", "baseline"), 120, "the first campaign's baseline to start")
    second = start_run(two, runs, "--no-analyze")
    out2, _ = second.communicate(timeout=240)
    out1, _ = first.communicate(timeout=60)
    assert first.returncode == 0 and second.returncode == 0, (out1, out2)
    assert "waiting for the machine: held by" in out2 and f"pid {first.pid} on " in out2
    one_end = max(parse_utc(manifest(runs, "one", a)["ended_utc"]) or 0 for a in ("baseline", "A1"))
    assert parse_utc(manifest(runs, "two", "baseline")["started_utc"]) >= one_end  # strictly after


def test_campaigns_forced_side_by_side_are_invalid_naming_the_overlap(tmp_path: Path) -> None:
    one = make_experiment(tmp_path / "one", name="one", steps=6, sleep=0.5)
    two = make_experiment(tmp_path / "two", name="two", steps=6, sleep=0.5)
    runs = tmp_path / "runs"
    first = start_run(one, runs, "--share-machine", "--no-analyze")
    wait_for(lambda: started(runs, "one", "baseline"), 120, "the first campaign's baseline to start")
    second = start_run(two, runs, "--share-machine", "--no-analyze")
    for proc in (first, second):
        out, _ = proc.communicate(timeout=240)
        assert proc.returncode == 0 and "waiting for the machine" not in out, out
    assert main(["analyze", "--runs", str(runs)]) == 0
    for name, other in (("one", "two"), ("two", "one")):
        doc = json.loads((runs / name / "analysis.json").read_text())
        [comp] = doc["comparisons"]
        guard = next(g for g in comp["guardrails"] if g["id"] == "no_overlap")
        assert guard["status"] == "fail" and f"with {other}/" in guard["reason"], guard
        assert comp["verdict"]["status"] == "invalid" and comp["verdict"]["cause"] == guard["reason"]


HOG = "import ctypes; ctypes.CDLL(None).prctl(15, b'rg-test-hog', 0, 0, 0)\nwhile True: pass"


def _orphan_hog() -> int:
    """A CPU hog named rg-test-hog outside the runner's process tree (its parent shell exits; init adopts it)."""
    out = subprocess.run(
        ["sh", "-c", f'{sys.executable} -c "{HOG}" >/dev/null 2>&1 & echo $!'],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(out.stdout.strip())


# The stand-in trainer with steps that take real time in proportion to its speed (the offload flag's
# arm twice --step-sleep, the other once), printing each step's measured duration and the throughput
# of its 32 tokens over it: the analysis places the measured windows in time by walking back from the
# run's end by the logged step times (the stock stand-in's are made up), and the work per step
# (tokens = throughput x time) stays the same in both arms, as the analysis checks.
TIMED_TRAINER = TRAINER.replace(
    "    time.sleep(a.step_sleep)\n",
    "    t_step = time.perf_counter()\n"
    "    time.sleep(a.step_sleep * (2.0 if a.optimizer_cpu_offload else 1.0) * offset)\n",
).replace("    st = 4 * 8 / speed\n", "    st = time.perf_counter() - t_step\n    speed = 4 * 8 / st\n")


@pytest.fixture(scope="module")
def hog_campaign(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A sequential campaign of the stand-in (one candidate, twice as fast; 2 to 4 pairs; runs of
    6 steps of 0.5 s (baseline) or 0.25 s (A1), sampled every 0.25 s) with four CPU hogs beside its
    first baseline run, started when that run starts and killed when it ends: (the runs folder of
    experiment `hog`, the console).
    Both serial tests below read it: one campaign, real processes, the hogs outside its tree."""
    root = tmp_path_factory.mktemp("hog")
    spec = make_experiment(
        root / "r",
        name="hog",
        steps=6,
        sleep=0.25,
        order=None,
        repeats=None,
        # Two valid pairs decide a candidate twice as fast (as in tests/execute/ray): the serial phase
        # runs this campaign alone, so each pair it spends is wall time of the whole suite.
        run={"until": "decided", "min_pairs": 2, "max_pairs": 4, "gpu_sample_interval_s": 0.25},
    )
    assert TIMED_TRAINER != TRAINER and "speed = 4 * 8 / st" in TIMED_TRAINER
    (spec.parent / "trainer.py").write_text(TIMED_TRAINER)
    runs = root / "runs"
    proc = start_run(spec, runs)
    try:
        wait_for(lambda: started(runs, "hog", "baseline"), 120, "baseline/1 to start")
        # Four hogs of one command: on a machine that other work keeps busy too (this one is shared),
        # together they take a share the heaviest-first naming cannot miss.
        hogs = [_orphan_hog() for _ in range(4)]
        try:
            wait_for(lambda: manifest(runs, "hog", "baseline")["status"] != "running", 180, "baseline/1 to end")
        finally:
            for hog in hogs:
                os.kill(hog, signal.SIGKILL)
        out, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:  # a wait that failed leaves no campaign running
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, out
    return runs, out


@pytest.mark.serial  # the hogs must be the heaviest processes the sampler sees: no other test beside it
def test_a_cpu_hog_started_beside_a_run_is_reported_on_the_page(hog_campaign: tuple[Path, str]) -> None:
    runs, _ = hog_campaign
    assert (runs / "hog" / "baseline" / "1" / "host.parquet").is_file()
    doc = json.loads((runs / "hog" / "analysis.json").read_text())
    hit = next(r for a in doc["arms"] if a["id"] == "baseline" for r in a["runs"] if r["repeat"] == 1)
    cpu = [d for d in hit["disturbances"] if d["kind"] == "cpu_load"]
    assert cpu and any("rg-test-hog" in d["detail"] for d in cpu), hit["disturbances"]
    assert "cpu_load" in hit["load"]["flagged"], hit["load"]
    assert any(w.startswith("baseline/1 was measured on a busy machine") for w in doc["warnings"])
    # The page is rendered from analysis.json: the section, its table row and the chart on the time axis.
    page = render(load_experiment(runs / "hog"), svg=False)
    text = page.markdown
    assert "## What else ran on the machine {#quiet-machine}" in text
    row = next(line for line in text.splitlines() if line.startswith("<tr><td>baseline/1<") and "rg-test-hog" in line)
    assert "<td>CPU load</td>" in row
    chart = page.charts["disturbances"]
    assert "rg-test-hog" in chart["datasets"]["main"] and "baseline/1" in chart["datasets"]["spans"]
    import vl_convert  # the chart compiles and draws (the site's static fallback is made so)

    svg = vl_convert.vegalite_to_svg(chart)
    assert "What else ran on the machine" in svg and "seconds since the run started" in svg


@pytest.mark.serial  # the hogs must be what disturbs the first pair, and nothing the later ones
def test_a_sequential_campaign_sets_aside_a_pair_a_cpu_hog_disturbed_and_redoes_it(
    hog_campaign: tuple[Path, str],
) -> None:
    """A sequential campaign with CPU hogs beside its first baseline run: that pair is set aside,
    kept on disk, a new block runs in its place, and the campaign ends with a verdict, not "invalid"
    (issue 32: a download beside the first pair used to end the demo after one pair). The campaign
    machinery is the demo's (scripts/recipes/default.toml is a sequential campaign too); the
    stand-in trainer, not the GRPO workload, runs it: what is proven is the campaign's, not the
    workload's."""
    runs, out = hog_campaign
    exp = "hog"
    assert "(still undecided; set aside, redone: A1 pair 1" in " ".join(out.split()), out
    doc = json.loads((runs / exp / "analysis.json").read_text())
    (a1,) = doc["comparisons"]
    first = next(p for p in a1["set_aside"] if p["repeat"] == 1)
    assert (first["reference_run"], first["candidate_run"]) == ("baseline/1", "A1/1")
    assert "baseline was disturbed" in first["reason"] and "rg-test-hog" in first["reason"], first
    assert 1 not in [p["repeat"] for p in a1["run_level"]["pairs"]]
    assert len(a1["run_level"]["pairs"]) >= 2  # the valid pairs the design needs, counted without pair 1
    assert (runs / exp / "baseline" / "1" / "metrics.parquet").is_file()  # kept on disk
    assert a1["verdict"]["status"] not in ("invalid", "incomplete", "failed"), a1["verdict"]
    assert not a1["needs_pairs"]
    assert doc["campaign"]["stopped"] in ("decided", "max_pairs"), doc["campaign"]
    page = render(load_experiment(runs / exp), svg=False).markdown
    assert "Set aside because the machine was not quiet while they ran" in page and "A1 pair 1" in page


@pytest.mark.parametrize("sigint", [signal.SIG_DFL, signal.SIG_IGN], ids=["from-a-terminal", "as-a-background-job"])
def test_ctrl_c_while_waiting_for_the_machine_runs_and_writes_nothing(tmp_path: Path, sigint: signal.Handlers) -> None:
    """SIGINT while waiting stops the wait however the run was started (a background job inherits
    SIGINT ignored; `kill -INT` from a script or a CI timeout must still stop it, as it stops runs)."""
    machine = Path(os.environ["REPORTGEN_MACHINE_LOCK"])
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\nfrom reportgen.store import lock\n"
            "assert lock.FileLock(sys.argv[1]).try_acquire(lock.Holder.here('run', ['other'])).taken\n"
            "print('held', flush=True)\ntime.sleep(120)\n",
            str(machine),
        ],
        env=env_with_repo_on_path(),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        spec = make_experiment(tmp_path / "r")
        runs = tmp_path / "runs"
        proc = start_run(spec, runs, sigint=sigint)
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("waiting for the machine: held by ") and f"pid {holder.pid} on " in line, line
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 130, out
        assert not runs.exists()  # nothing run, nothing written (the campaign lock's folders removed too)
    finally:
        holder.kill()
        holder.wait()
