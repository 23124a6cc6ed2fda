"""Campaigns over machines of one class: blocks (pairs) each made on one machine, recorded in
campaign.json; another machine of the class continues, a block another machine left unfinished is
redone whole, another class is refused. Two machines on one host: $REPORTGEN_HOSTNAME gives each
its own identity (capture.fingerprint), never another class."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from reportgen.capture.fingerprint import HOSTNAME_ENV, class_id, fingerprint_id, machine_fingerprint
from reportgen.cli import main
from reportgen.execute.blocks import machine_refusal
from tests.conftest import env_with_repo_on_path
from tests.execute.conftest import make_experiment
from tests.helpers import wait_for


def _manifest(exp: Path, arm: str, block: int) -> dict:
    return json.loads((exp / arm / str(block) / "manifest.json").read_text())


def _machine(host: str) -> str:
    return fingerprint_id(machine_fingerprint({HOSTNAME_ENV: host}))


def test_the_hostname_override_changes_the_machine_never_its_class() -> None:
    a, b = machine_fingerprint({HOSTNAME_ENV: "node-a"}), machine_fingerprint({HOSTNAME_ENV: "node-b"})
    assert a["hostname"] == "node-a" and fingerprint_id(a) != fingerprint_id(b)
    assert class_id(a) == class_id(b)


def test_machine_refusal_names_what_differs_between_classes() -> None:
    here = machine_fingerprint({HOSTNAME_ENV: "node-a"})
    other = {**here, "hostname": "node-b", "cpu_model": "Another CPU", "driver": "999.1"}
    campaign = {"fingerprint_id": fingerprint_id(other), "fingerprint": other, "class_id": class_id(other)}
    why = machine_refusal(campaign, here)
    assert why is not None and "another machine class" in why and "CPU model, driver differ" in why
    same_class = {**here, "hostname": "node-b"}
    campaign = {"fingerprint_id": fingerprint_id(same_class), "fingerprint": same_class}  # version 1: no class_id
    assert machine_refusal(campaign, here) is None
    assert "stays on one machine" in str(machine_refusal(campaign, here, pinned=True))


def test_another_class_is_refused_with_nothing_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = make_experiment(tmp_path / "r", order="interleaved")
    runs = tmp_path / "runs"
    assert main(["run", str(spec), "--runs", str(runs), "--no-analyze"]) == 0
    path = runs / "exp" / "campaign.json"
    campaign = json.loads(path.read_text())
    campaign["fingerprint"]["gpus"] = [{"index": 0, "name": "NVIDIA H200", "uuid": "GPU-1"}]
    campaign["class_id"] = class_id(campaign["fingerprint"])
    campaign["fingerprint_id"] = fingerprint_id(campaign["fingerprint"])  # as a GPU machine would have written it
    path.write_text(json.dumps(campaign))
    before = sorted(p.name for p in (runs / "exp").iterdir())
    capsys.readouterr()
    assert main(["run", str(spec), "--runs", str(runs), "--no-analyze"]) == 2
    err = capsys.readouterr().err
    assert "another machine class" in err and "GPU model and count differ" in err and "--new-campaign" in err
    assert sorted(p.name for p in (runs / "exp").iterdir()) == before


def test_a_version_1_campaign_is_continued_by_another_machine_of_its_class(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A campaign.json written before campaigns spanned machines (schema 1, no `machines`): its blocks
    are read from its runs, recorded, and another machine of the class adds the next ones."""
    spec = make_experiment(tmp_path / "r", order="interleaved", repeats=1)
    runs = tmp_path / "runs"
    monkeypatch.setenv(HOSTNAME_ENV, "node-a")
    assert main(["run", str(spec), "--runs", str(runs), "--no-analyze"]) == 0
    path = runs / "exp" / "campaign.json"
    v2 = json.loads(path.read_text())
    v1 = {k: v for k, v in v2.items() if k not in ("machines", "class_id")} | {"schema_version": 1}
    path.write_text(json.dumps(v1))
    spec.write_text(spec.read_text().replace("repeats = 1", "repeats = 2"))  # the campaign grows by a block
    monkeypatch.setenv(HOSTNAME_ENV, "node-b")
    assert main(["run", str(spec), "--runs", str(runs), "--no-analyze"]) == 0
    campaign = json.loads(path.read_text())
    assert campaign["schema_version"] == 2 and campaign["fingerprint_id"] == v1["fingerprint_id"]
    assert [(m["hostname"], m["blocks"]) for m in campaign["machines"]] == [("node-a", [1]), ("node-b", [2])]
    assert _manifest(runs / "exp", "A1", 1)["fingerprint_id"] == _machine("node-a")
    assert _manifest(runs / "exp", "A1", 2)["fingerprint_id"] == _machine("node-b")


@pytest.mark.slow
def test_a_block_left_unfinished_on_one_machine_is_redone_whole_on_another(tmp_path: Path) -> None:
    """Machine A finishes block 1 and is stopped in block 2 (A1 done, the baseline running: block 2
    runs A1 first). Machine B keeps block 1, moves block 2's runs to archive/ and makes the block
    again, whole: no block pairs runs of two machines."""
    spec = make_experiment(tmp_path / "r", order="interleaved", repeats=2, steps=5, sleep=0.4)
    runs = tmp_path / "runs"
    exp = runs / "exp"
    proc = subprocess.Popen(
        [sys.executable, "-m", "reportgen", "run", str(spec), "--runs", str(runs), "--no-analyze"],
        env={**env_with_repo_on_path(), HOSTNAME_ENV: "node-a"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )

    def baseline_2_running() -> bool:
        path = exp / "baseline" / "2" / "manifest.json"
        return path.is_file() and json.loads(path.read_text()).get("process") is not None

    wait_for(baseline_2_running, 90, "the baseline of block 2 to start")
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130, out.decode()[-2000:]
    a = _machine("node-a")
    a1_2 = (exp / "A1" / "2" / "manifest.json").read_bytes()
    assert json.loads(a1_2)["status"] == "complete"
    block_1 = {arm: (exp / arm / "1" / "manifest.json").read_bytes() for arm in ("baseline", "A1")}
    assert [m["blocks"] for m in json.loads((exp / "campaign.json").read_text())["machines"]] == [[1]]

    done = subprocess.run(
        [sys.executable, "-m", "reportgen", "run", str(spec), "--runs", str(runs), "--no-analyze"],
        env={**env_with_repo_on_path(), HOSTNAME_ENV: "node-b"},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "block 2 was left unfinished on machine" in done.stderr and "redone whole here" in done.stderr
    b = _machine("node-b")
    for arm in ("baseline", "A1"):
        assert (exp / arm / "1" / "manifest.json").read_bytes() == block_1[arm]  # kept as made on A
        assert _manifest(exp, arm, 2)["fingerprint_id"] == b and _manifest(exp, arm, 2)["status"] == "complete"
    campaign = json.loads((exp / "campaign.json").read_text())
    assert [(m["fingerprint_id"], m["blocks"]) for m in campaign["machines"]] == [(a, [1]), (b, [2])]
    archived = {p.name: p for p in (exp / "archive" / campaign["campaign_id"]).iterdir()}
    assert sorted(archived) == ["A1-2", "baseline-2"]
    assert (archived["A1-2"] / "manifest.json").read_bytes() == a1_2  # the finished run of A, set aside whole
    assert json.loads((archived["baseline-2"] / "manifest.json").read_text())["fingerprint_id"] == a


def test_a_rerun_that_would_pair_two_machines_is_refused_with_nothing_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = make_experiment(tmp_path / "r", order="interleaved")
    runs = tmp_path / "runs"
    monkeypatch.setenv(HOSTNAME_ENV, "node-a")
    assert main(["run", str(spec), "--runs", str(runs), "--no-analyze"]) == 0
    campaign = (runs / "exp" / "campaign.json").read_bytes()
    monkeypatch.setenv(HOSTNAME_ENV, "node-b")
    capsys.readouterr()
    assert main(["run", str(spec), "--runs", str(runs), "--no-analyze", "--rerun", "A1"]) == 2
    err = capsys.readouterr().err
    assert "block 1's other runs were made on machine" in err and "never pairs runs of two machines" in err
    assert (runs / "exp" / "campaign.json").read_bytes() == campaign and not (runs / "exp" / "archive").exists()
    monkeypatch.setenv(HOSTNAME_ENV, "node-a")  # the machine that made the block reruns it
    assert main(["run", str(spec), "--runs", str(runs), "--no-analyze", "--rerun", "A1"]) == 0
    assert len(list((runs / "exp" / "archive").glob("*/A1-1"))) == 1
