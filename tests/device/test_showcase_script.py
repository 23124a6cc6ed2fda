"""scripts/device/showcase.sh end to end on the CPU: a copy of the tree without .git, its stamp,
a campaign stopped at the deadline, the experiment folder packed into $OUT (real bash, real runs).
The campaign is the stand-in trainer's (tests/execute/conftest.py, passed as SPEC: a real
subprocess that sleeps through its steps), not the default experiment's GRPO workload: the script
only starts, stops and packs it, and the stand-in leaves the 2 cores to the rest of the suite."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from tests.execute.conftest import make_experiment

REPO = Path(__file__).resolve().parents[2]
STANDIN = "standin-recipe"  # the stand-in experiment's folder in the device copy


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def _device_copy(tmp_path: Path, name: str = "tree", run: dict[str, object] | None = None) -> Path:
    """The tracked files of this checkout, committed in a scratch repository and stamped; its `.git` then
    moves on to another commit while the files stay the stamped ones. `run`: the stand-in spec's [run]
    table in place of the default's long fixed runs."""
    tree = tmp_path / name
    for rel in _git(REPO, "ls-files", "-z").split("\0"):
        src = REPO / rel
        if rel and src.is_file() and not rel.startswith("runs/showcase-"):
            (tree / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, tree / rel)
    # The campaign's spec, part of the stamped commit: 200 steps of 0.25 s, far longer than the budget.
    if run is None:
        make_experiment(tree / STANDIN, name="standin", steps=200, sleep=0.25)
    else:
        make_experiment(tree / STANDIN, name="standin", steps=5, sleep=0.05, order=None, repeats=None, run=run)
    _git(tree, "init", "-q")
    _git(tree, "add", "-A")
    _git(tree, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "copy")
    subprocess.run([sys.executable, str(tree / "scripts" / "device" / "stamp-tree.py")], check=True)
    # As on one H200 machine: the copy comes with a `.git` whose HEAD is another, older commit.
    (tree / "README.md").write_text("an older readme\n")
    _git(tree, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "older")
    _git(tree, "checkout", "-q", "HEAD~1", "--", "README.md")  # the files are the stamped ones again
    return tree


def _python3(bin_dir: Path) -> None:
    """`python3` on PATH is this interpreter, as the device's python3 is the one with torch."""
    wrapper = bin_dir / "python3"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    wrapper.chmod(0o755)


@pytest.mark.slow
def test_showcase_script_runs_stops_and_packs(tmp_path: Path) -> None:
    tree = _device_copy(tmp_path)
    head = json.loads((tree / ".tree-stamp.json").read_text())["commit"]
    out = tmp_path / "out"
    out.mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _python3(bin_dir)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    spec = f"{STANDIN}/experiment.toml"
    # 35 s for set-up and the campaign, as before with the GRPO demo (45 less 10 for packing): under
    # load the set-up's checks and the CLI's start take seconds each, and the first run must have
    # started by the deadline.
    env.update(OUT=str(out), BUDGET_S="40", PACK_S="5", SPEC=spec, PATH=f"{bin_dir}:{env['PATH']}")
    proc = subprocess.run(
        ["bash", str(tree / "scripts" / "device" / "showcase.sh"), "-", "t1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 130, proc.stderr[-3000:]  # a run takes 50 s: stopped at the deadline
    assert "tree matches its stamp" in proc.stdout
    assert "stopped at the deadline (exit 130)" in proc.stderr
    assert "unfinished after 0 pairs: run again to finish the campaign's runs" in proc.stdout.splitlines()
    with tarfile.open(out / "t1.tar.gz") as tar:
        names = tar.getnames()
        manifest = json.load(tar.extractfile("t1/baseline/1/manifest.json"))  # type: ignore[arg-type]
        git = json.load(tar.extractfile("t1/baseline/1/provenance/git.json"))  # type: ignore[arg-type]
    assert "t1/campaign.json" in names
    assert manifest["status"] in ("complete", "interrupted")
    assert "--step-sleep" in manifest["effective_argv"]  # the SPEC's stand-in ran, not the default experiment
    assert manifest["git"] == {"head": head, "dirty": False}  # the stamped commit, not the copy's git HEAD
    assert git["source"] == "tree-stamp"


def test_showcase_script_refuses_a_tree_that_differs_from_its_stamp(tmp_path: Path) -> None:
    tree = _device_copy(tmp_path)
    (tree / "README.md").write_text("changed on the way\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _python3(bin_dir)
    env = {**os.environ, "OUT": str(tmp_path), "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    proc = subprocess.run(
        ["bash", str(tree / "scripts" / "device" / "showcase.sh"), "gpu", "t2"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 3
    assert "README.md" in proc.stderr and "does not match .tree-stamp.json" in proc.stderr
    assert not (tree / "runs" / "t2").exists()


def _showcase(tree: Path, out: Path, bin_dir: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """`showcase.sh - t3` on `tree` (the stand-in's spec), its files in `out`."""
    out.mkdir()
    full = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    full.update(OUT=str(out), SPEC=f"{STANDIN}/experiment.toml", PATH=f"{bin_dir}:{full['PATH']}", **env)
    return subprocess.run(
        ["bash", str(tree / "scripts" / "device" / "showcase.sh"), "-", "t3"],
        env=full,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.slow
def test_showcase_continues_a_campaign_carried_to_another_machine(tmp_path: Path) -> None:
    """Two device commands on two copies of the tree, each its own machine of one class
    ($REPORTGEN_HOSTNAME): the first makes one pair (CAMPAIGN_MINUTES keeps it to one) and says the
    campaign is undecided; the second, given the first's NAME.tar.gz in FROM, keeps that pair, adds
    one of its own, and the campaign is decided."""
    run = {"until": "decided", "min_pairs": 2, "max_pairs": 4}
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _python3(bin_dir)
    budget = {"BUDGET_S": "200", "PACK_S": "40", "CAMPAIGN_MINUTES": "0.01"}
    first = _showcase(
        _device_copy(tmp_path, "tree-a", run), tmp_path / "out-a", bin_dir, REPORTGEN_HOSTNAME="lease-a", **budget
    )
    assert first.returncode == 0, first.stderr[-3000:]
    lines = first.stdout.splitlines()
    assert "undecided after 1 pairs: run again to add pairs" in lines, first.stdout[-2000:]
    assert any(line.startswith("machine lease-a (") and line.endswith("blocks 1") for line in lines)
    with tarfile.open(tmp_path / "out-a" / "t3.tar.gz") as tar:
        pair_1 = {a: tar.extractfile(f"t3/{a}/1/manifest.json").read() for a in ("baseline", "A1")}  # type: ignore[union-attr]

    tree_b = _device_copy(tmp_path, "tree-b", run)
    second = _showcase(
        tree_b,
        tmp_path / "out-b",
        bin_dir,
        REPORTGEN_HOSTNAME="lease-b",
        FROM=str(tmp_path / "out-a" / "t3.tar.gz"),
        **budget,
    )
    assert second.returncode == 0, second.stderr[-3000:]
    assert "continuing the campaign in runs/t3" in second.stderr
    lines = second.stdout.splitlines()
    assert "decided after 2 pairs: A1 accepted" in lines, second.stdout[-2000:]
    assert any(line.startswith("machine lease-b (") and line.endswith("blocks 2") for line in lines)
    exp = tree_b / "runs" / "t3"
    for arm in ("baseline", "A1"):
        assert (exp / arm / "1" / "manifest.json").read_bytes() == pair_1[arm]  # the first machine's pair, kept
        assert json.loads((exp / arm / "2" / "manifest.json").read_text())["fingerprint"]["hostname"] == "lease-b"
    campaign = json.loads((exp / "campaign.json").read_text())
    assert [(m["hostname"], m["blocks"]) for m in campaign["machines"]] == [("lease-a", [1]), ("lease-b", [2])]
    with tarfile.open(tmp_path / "out-b" / "t3.tar.gz") as tar:
        assert "t3/A1/2/manifest.json" in tar.getnames() and "t3/A1/1/manifest.json" in tar.getnames()
