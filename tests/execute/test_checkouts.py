"""Arms at git revisions, executed (reportgen.execute.checkouts and the runner): each commit's clean
export with its tree stamp, the import check, and real campaigns of the stand-in trainer at two
commits whose code differs (tests/execute/conftest.py), through `pipeline.run_revisions`."""

from __future__ import annotations

import json
import shutil

import pytest

from reportgen.analysis.document import parse
from reportgen.capture.tree_stamp import STAMP_NAME, read_stamp, verify_tree
from reportgen.errors import UserError
from reportgen.execute.checkouts import ensure_checkout, prepare_checkouts, record_revisions
from reportgen.pipeline import load_plan, run_revisions
from reportgen.store.atomic import read_json
from reportgen.store.models import Revisions
from tests.execute.conftest import make_experiment
from tests.git_repos import commit, init, readme_repo

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def test_an_export_holds_the_commit_with_a_stamp_and_is_made_again_when_changed(tmp_path):
    shas = readme_repo(tmp_path / "r")
    dest = ensure_checkout(tmp_path / "r", shas[1], tmp_path / "cache" / shas[1])
    assert (dest / "a.py").read_text() == "x = 2\ny = 3\n" and not (dest / "b").exists()
    stamp = read_stamp(dest / STAMP_NAME)
    assert stamp.commit == shas[1] and not stamp.dirty and verify_tree(dest, stamp).matches
    assert not (dest / ".git").exists()
    (dest / "a.py").write_text("edited\n")  # a later edit of the export: it no longer matches its stamp
    again = ensure_checkout(tmp_path / "r", shas[1], dest)
    assert again == dest and (dest / "a.py").read_text() == "x = 2\ny = 3\n"
    assert not [p for p in dest.parent.iterdir() if p.name.endswith(".tmp")]


def _repo(tmp_path):
    """The stand-in trainer's experiment in a git repository; the second commit halves its speed."""
    repo = tmp_path / "repo"
    init(repo)
    spec = make_experiment(repo, steps=5, sleep=0.01, order=None, repeats=None)
    text = spec.read_text().replace('entrypoint = "trainer.py"', 'entrypoint = "trainer.py"\nimport_check = "stand_in"')
    spec.write_text(text)
    (repo / "stand_in.py").write_text("SPEED = 1\n")
    first = commit(repo, "the stand-in trainer")
    trainer = (repo / "trainer.py").read_text()
    assert '"--speed", type=float, default=100.0' in trainer
    second = commit(repo, "a slower trainer", {"trainer.py": trainer.replace("default=100.0", "default=50.0")})
    return repo, spec, first, second


def test_a_campaign_of_two_revisions_runs_each_arm_from_its_own_commit(tmp_path):
    repo, spec, first, second = _repo(tmp_path)
    (repo / "trainer.py").write_text("raise SystemExit('the working tree is never run')\n")  # uncommitted
    cache, runs = tmp_path / "cache", tmp_path / "runs"
    exp = run_revisions(repo, first, "main", spec, runs_root=runs, pairs=2, name="revs", cache=cache)
    assert exp == runs / "revs"
    doc = parse(read_json(exp / "analysis.json"), "analysis.json")
    arms = {a.id: a for a in doc.arms}
    assert (arms["baseline"].revision, arms["candidate"].revision) == (first, second)
    comp = doc.comparison("candidate")
    assert comp is not None and comp.code_change is not None
    assert comp.code_change.merge_base == first
    assert [(f.path, f.added, f.deleted) for f in comp.code_change.files] == [("trainer.py", 1, 1)]
    assert comp.run_level.interval.estimate == pytest.approx(0.5, abs=1e-6)  # its own code: half the speed
    assert comp.verdict.status == "rejected"
    assert {g.id: g.status for g in comp.guardrails}["same_maths"] == "pass"
    for arm, sha in (("baseline", first), ("candidate", second)):
        run = exp / arm / "1"
        git_json = json.loads((run / "provenance" / "git.json").read_text())
        assert (git_json["head"], git_json["dirty"]) == (sha, False)
        env = json.loads((run / "command.json").read_text())["env"]
        assert env["PYTHONPATH"] == str(cache / "checkouts" / sha)
        assert env["TORCHINDUCTOR_CACHE_DIR"] == str(cache / "jit" / "revs" / arm / "torchinductor")
        assert json.loads((run / "manifest.json").read_text())["revision"]["sha"] == sha
    record = Revisions.read(exp / "revisions.json")
    assert record is not None and record.pinned()["candidate"] == (second, second)


def test_a_campaign_keeps_the_commits_it_was_planned_with_after_the_branch_moved(tmp_path):
    repo, spec, first, second = _repo(tmp_path)
    text = spec.read_text().replace("[recipe]", '[recipe]\nref = "HEAD~1"')
    spec.write_text(text.replace('id = "A1"', 'id = "A1"\nref = "main"'))  # the spec itself is read as it is
    runs, cache = tmp_path / "runs", tmp_path / "cache"
    plan = load_plan(spec, None, runs_root=runs, cache=cache)
    assert (plan.arm("baseline").revision, plan.arm("A1").revision) == (first, second)
    (runs / "exp").mkdir(parents=True)
    record_revisions(plan, runs / "exp")
    third = commit(repo, "main moves on", {"other.txt": "x\n"})
    kept = load_plan(spec, None, runs_root=runs, cache=cache)
    assert (kept.arm("baseline").revision, kept.arm("A1").revision) == (first, second)
    fresh = load_plan(spec, None, runs_root=runs, cache=cache, new_campaign=True)
    assert (fresh.arm("baseline").revision, fresh.arm("A1").revision) == (second, third)


def test_a_revision_that_cannot_import_is_named_before_anything_is_written(tmp_path):
    repo, spec, first, _ = _repo(tmp_path)
    broken = commit(repo, "break stand_in", {"stand_in.py": "def (:\n"})
    runs = tmp_path / "runs"
    with pytest.raises(UserError, match=rf"revision {broken} .*cannot import stand_in: SyntaxError"):
        run_revisions(repo, first, broken, spec, runs_root=runs, pairs=2, name="revs", cache=tmp_path / "cache")
    assert not (runs / "revs").exists()


def test_an_import_from_elsewhere_than_the_checkout_is_refused(tmp_path):
    repo, spec, _first, _second = _repo(tmp_path)
    text = spec.read_text().replace('import_check = "stand_in"', 'import_check = "json"')
    spec.write_text(text)
    commit(repo, "check json")
    text = spec.read_text().replace("[recipe]", '[recipe]\nref = "HEAD"')
    spec.write_text(text)
    plan = load_plan(spec, None, cache=tmp_path / "cache")
    with pytest.raises(UserError, match="not the checkout"):
        prepare_checkouts(plan, log=lambda _line: None)


def test_on_a_ray_node_the_workload_imports_its_checkout_alone(tmp_path, monkeypatch):
    """Ray's runtime environment puts the job's own reportgen (py_modules) first on PYTHONPATH; the
    node gives the workload of an arm at a revision its checkout's PYTHONPATH instead."""
    from reportgen.execute.ray_node import _node_env

    monkeypatch.setenv("PYTHONPATH", "/ray/runtime_resources/py_modules/reportgen:/cache/checkouts/abc")
    scratch = tmp_path / "scratch"
    assert _node_env({"run_dir": "/runs/x/1", "pythonpath": "/cache/checkouts/abc"}, scratch)["PYTHONPATH"] == (
        "/cache/checkouts/abc"
    )
    assert _node_env({"run_dir": "/runs/x/1"}, scratch)["PYTHONPATH"].startswith("/ray/")
