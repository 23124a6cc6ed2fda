"""capture_provenance end to end: a real temp git repo, real commands, planted credentials."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from reportgen.capture.model_manifest import model_manifest
from reportgen.capture.provenance import CampaignProbes, _read_probe, capture_provenance
from reportgen.errors import UserError
from tests.conftest import logging_python

HF = "hf_secret_value_123"
API = "sk-my-api-key-0987654321"
PROXY_PW = "pr0xyPassw0rd"


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


@pytest.fixture()
def recipe_repo(tmp_path):
    repo = tmp_path / "relax"
    repo.mkdir()
    _git(repo, "init", "-q")
    _git(repo, "config", "user.email", "t@example.com")
    _git(repo, "config", "user.name", "t")
    (repo / "run.sh").write_text("#!/bin/bash\nset -x\npython3 -m train --lr 1e-6\n")
    _git(repo, "add", "run.sh")
    _git(repo, "commit", "-qm", "recipe")
    # Dirty the tree with the credential in it: a diff is a classic leak.
    (repo / "run.sh").write_text(f"#!/bin/bash\nset -x\nexport HF_TOKEN={HF}\npython3 -m train --lr 1e-6\n")
    (repo / "notes.txt").write_text("untracked\n")
    return repo


def _env(tmp_path):
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "HF_TOKEN": HF,
        "MY_API_KEY": API,
        "HTTPS_PROXY": f"http://alice:{PROXY_PW}@proxy.local:3128",
        "CUDA_VISIBLE_DEVICES": "0,1",
    }


def test_capture_writes_everything_and_leaks_nothing(tmp_path, recipe_repo):
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text('{"a": 1}')
    (model / "model.safetensors").write_bytes(b"\x01" * 4096)
    data = tmp_path / "train.parquet"
    data.write_bytes(b"rows")
    dest = tmp_path / "runs" / "exp" / "baseline" / "1" / "provenance"
    env = _env(tmp_path)

    summary = capture_provenance(
        dest,
        python=sys.executable,
        recipe_repo=recipe_repo / "run.sh",
        model_dir=model,
        data_files=[data],
        commands=[
            "echo token=$HF_TOKEN key=$MY_API_KEY",
            ["env"],
            ["printf", "%s", API],
            ["definitely-not-a-command-xyz"],
        ],
        env=env,
        cache_path=tmp_path / "cache" / "hashes.json",
    )

    # Nothing under runs/ holds a planted secret, in any encoding we write.
    needles = [HF, API, PROXY_PW]
    for path in (tmp_path / "runs").rglob("*"):
        if path.is_file():
            blob = path.read_bytes()
            for needle in needles:
                assert needle.encode() not in blob, f"{needle} leaked into {path}"
    assert not any(n in json.dumps(summary) for n in needles)

    # git: real head, dirty, status and a diff whose secret line is redacted.
    head = _git(recipe_repo, "rev-parse", "HEAD").strip()
    assert summary["git"] == {"head": head, "dirty": True}
    git = json.loads((dest / "git.json").read_text())
    assert git["repository"] and git["head"] == head and git["dirty"] is True
    assert Path(git["repo"]).resolve() == recipe_repo.resolve()
    assert " M run.sh" in (dest / "git-status.txt").read_text()
    assert "?? notes.txt" in (dest / "git-status.txt").read_text()
    diff = (dest / "git-diff.patch").read_text()
    assert "+export HF_TOKEN=<redacted>" in diff

    # The workload's Python, for real.
    assert (dest / "python.txt").read_text().strip() == f"Python {sys.version.split()[0]}"
    assert summary["python_version"] == sys.version.split()[0]
    freeze = (dest / "pip-freeze.txt").read_text()
    assert "pandas==" in freeze.lower() or "pandas @" in freeze.lower()

    # Commands: outputs recorded and scrubbed; a missing tool recorded, not raised.
    cmds = json.loads((dest / "commands.json").read_text())["commands"]
    assert cmds[0]["exit_code"] == 0 and cmds[0]["stdout"] == "token=<redacted> key=<redacted>\n"
    assert "CUDA_VISIBLE_DEVICES=0,1" in cmds[1]["stdout"]
    assert cmds[2]["stdout"] == "<redacted>"
    assert cmds[3]["exit_code"] is None and "FileNotFoundError" in cmds[3]["error"]

    # Hashes and fingerprint.
    manifest = json.loads((dest / "model-manifest.json").read_text())
    assert (
        manifest["sha256"]
        == summary["hashes"]["model_manifest_sha256"]
        == model_manifest(model, cache_path=None)["sha256"]
    )
    assert summary["hashes"]["data"] == {str(data): hashlib.sha256(b"rows").hexdigest()}
    fp = json.loads((dest / "fingerprint.json").read_text())
    assert fp["fingerprint_id"] == summary["fingerprint_id"] and fp["cpu_count"] == summary["fingerprint"]["cpu_count"]
    assert (
        set(summary["files"])
        == {p.name for p in dest.iterdir()}
        >= {
            "git.json",
            "git-status.txt",
            "git-diff.patch",
            "nvidia-smi.txt",
            "python.txt",
            "pip-freeze.txt",
            "fingerprint.json",
            "model-manifest.json",
            "data-hashes.json",
            "commands.json",
        }
    )
    assert not list(dest.glob(".*.tmp"))  # atomic writes leave no temporaries


def test_second_capture_uses_the_hash_cache(tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    (model / "w.bin").write_bytes(b"\x02" * 10000)
    kwargs = {
        "python": sys.executable,
        "recipe_repo": None,
        "model_dir": model,
        "data_files": [],
        "commands": [],
        "env": _env(tmp_path),
        "cache_path": tmp_path / "hashes.json",
    }
    capture_provenance(tmp_path / "a", **kwargs)
    capture_provenance(tmp_path / "b", **kwargs)
    first = json.loads((tmp_path / "a" / "model-manifest.json").read_text())
    second = json.loads((tmp_path / "b" / "model-manifest.json").read_text())
    assert first["cache"] == {"hits": 0, "hashed": 1} and second["cache"] == {"hits": 1, "hashed": 0}
    assert first["sha256"] == second["sha256"]
    git = json.loads((tmp_path / "a" / "git.json").read_text())
    assert git["repository"] is False


def test_not_a_repository_and_broken_python_are_recorded(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    summary = capture_provenance(
        tmp_path / "prov",
        python=str(tmp_path / "no-python"),
        recipe_repo=plain,
        model_dir=None,
        data_files=[],
        commands=[],
        env=_env(tmp_path),
        cache_path=None,
    )
    git = json.loads((tmp_path / "prov" / "git.json").read_text())
    assert git["repository"] is False and "not a git repository" in git["reason"]
    assert summary["git"] == {"head": None, "dirty": None}
    assert summary["python_version"] is None
    assert "failed" in (tmp_path / "prov" / "python.txt").read_text()
    assert (tmp_path / "prov" / "pip-freeze.txt").read_text().startswith("# pip freeze failed")
    assert summary["hashes"]["model_manifest_sha256"] is None


def test_missing_data_file_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match=r"missing\.parquet"):
        capture_provenance(
            tmp_path / "prov",
            python=sys.executable,
            recipe_repo=None,
            model_dir=None,
            data_files=[tmp_path / "missing.parquet"],
            commands=[],
            env={},
            cache_path=None,
        )


def test_an_untracked_file_the_run_does_not_read_leaves_the_tree_clean(tmp_path):
    # The CPU demo's case: a log of the demo's own output saved beside the checkout changes nothing
    # that ran; an untracked file the run reads (here its spec) does.
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    _git(repo, "config", "user.email", "t@example.com")
    _git(repo, "config", "user.name", "t")
    (repo / "run.sh").write_text("python3 -m train\n")
    _git(repo, "add", "run.sh")
    _git(repo, "commit", "-qm", "recipe")
    (repo / "demo-output.log").write_text("the demo's own output\n")
    (repo / "mine.toml").write_text("name = 'x'\n")
    common = {"python": sys.executable, "recipe_repo": repo, "model_dir": None, "data_files": [], "commands": []}
    clean = capture_provenance(tmp_path / "a", **common, env=_env(tmp_path), cache_path=None, reads=[repo / "run.sh"])
    assert clean["git"]["dirty"] is False
    assert "?? demo-output.log" in (tmp_path / "a" / "git-status.txt").read_text()  # still recorded
    read = capture_provenance(
        tmp_path / "b", **common, env=_env(tmp_path), cache_path=None, reads=[repo / "run.sh", repo / "mine.toml"]
    )
    assert read["git"]["dirty"] is True


def test_the_campaigns_probes_ask_the_python_once_per_environment(tmp_path):
    # pip freeze takes seconds and its answer cannot change between one campaign's runs: the runner's
    # CampaignProbes asks it once; each run folder still gets the same files, written as before.
    python, calls = logging_python(tmp_path / "bin")
    probes = CampaignProbes()
    common = {"python": str(python), "recipe_repo": None, "model_dir": None, "data_files": [], "commands": []}
    env = _env(tmp_path)
    for run in ("1", "2"):
        capture_provenance(tmp_path / run, **common, env=env, cache_path=None, probes=probes)
    assert calls.read_text().splitlines() == ["-V", "-m pip freeze"]
    for name in ("python.txt", "pip-freeze.txt"):
        assert (tmp_path / "1" / name).read_bytes() == (tmp_path / "2" / name).read_bytes()
    assert "pandas==" in (tmp_path / "2" / "pip-freeze.txt").read_text().lower()
    # commands.json logs the Python's commands as they ran for the first run; nvidia-smi ran for each.
    builtin = [json.loads((tmp_path / run / "commands.json").read_text())["builtin"] for run in ("1", "2")]
    assert [c["argv"][0] for c in builtin[1]] == ["nvidia-smi", str(python), str(python)]
    assert builtin[0][1:] == builtin[1][1:] and [c["argv"][1:] for c in builtin[1][1:]] == [
        ["-V"],
        ["-m", "pip", "freeze"],
    ]

    # Another PYTHONPATH shows another package list: a run with it asks again.
    extra = tmp_path / "extra" / "planted_pkg-1.2.dist-info"
    extra.mkdir(parents=True)
    (extra / "METADATA").write_text("Metadata-Version: 2.1\nName: planted-pkg\nVersion: 1.2\n")
    capture_provenance(
        tmp_path / "3", **common, env={**env, "PYTHONPATH": str(extra.parent)}, cache_path=None, probes=probes
    )
    assert calls.read_text().splitlines() == ["-V", "-m pip freeze"] * 2
    assert "planted-pkg==1.2" in (tmp_path / "3" / "pip-freeze.txt").read_text()
    assert "planted-pkg" not in (tmp_path / "2" / "pip-freeze.txt").read_text()


def test_the_python_is_asked_again_only_when_its_environment_changed(tmp_path):
    # Each `reportgen run` (and each run job on a Ray node) makes its own CampaignProbes; with a cache
    # folder the answer outlives it: the next one runs only the short key script (`python -`), not
    # pip, and writes the same files. A distribution added on sys.path changes the key: asked again.
    python, calls = logging_python(tmp_path / "bin")
    packages = tmp_path / "packages"
    packages.mkdir()
    common = {"python": str(python), "recipe_repo": None, "model_dir": None, "data_files": [], "commands": []}
    secret = "planted0secret42"  # a credential that the package list shows (a local version label)
    env = {**_env(tmp_path), "PYTHONPATH": str(packages), "EXTRA_TOKEN": secret}
    cache = tmp_path / "cache"

    def capture(run: str) -> list[str]:
        capture_provenance(tmp_path / run, **common, env=env, cache_path=None, probes=CampaignProbes(cache))
        return calls.read_text().splitlines()

    assert capture("1") == ["-", "-V", "-m pip freeze"]
    assert capture("2") == ["-", "-V", "-m pip freeze", "-"]  # the second campaign starts no pip
    for name in ("python.txt", "pip-freeze.txt"):
        assert (tmp_path / "1" / name).read_bytes() == (tmp_path / "2" / name).read_bytes(), name
    # commands.json logs the Python's commands as they ran that once (nvidia-smi ran for each run).
    builtin = [json.loads((tmp_path / run / "commands.json").read_text())["builtin"] for run in ("1", "2")]
    assert builtin[0][1:] == builtin[1][1:] and [c["argv"][1:] for c in builtin[1][1:]] == [
        ["-V"],
        ["-m", "pip", "freeze"],
    ]
    assert "pandas==" in (tmp_path / "2" / "pip-freeze.txt").read_text().lower()

    # A package installed where the Python looks: the stored answer is not used.
    dist = packages / f"planted_pkg-1.2+{secret}.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: planted-pkg\nVersion: 1.2+{secret}\n")
    assert capture("3") == ["-", "-V", "-m pip freeze", "-", "-", "-V", "-m pip freeze"]
    assert "planted-pkg==1.2+<redacted>" in (tmp_path / "3" / "pip-freeze.txt").read_text()
    assert "planted-pkg" not in (tmp_path / "2" / "pip-freeze.txt").read_text()
    stored = list((cache / "probes").glob("*.json"))
    assert len(stored) == 2 and not list((cache / "probes").glob(".*"))  # atomic: no temporary left
    assert all(secret not in p.read_text() for p in stored)  # the cache holds no credential

    # A stored answer is read back only under its own key (a file whose key differs is not trusted).
    assert _read_probe(stored[0], json.loads(stored[0].read_text())["key"]) is not None
    assert _read_probe(stored[0], "0" * 64) is None
    # The next campaign in the new environment reads the new answer (stored redacted): the same files.
    assert capture("4") == ["-", "-V", "-m pip freeze", "-", "-", "-V", "-m pip freeze", "-"]
    for name in ("python.txt", "pip-freeze.txt"):
        assert (tmp_path / "3" / name).read_bytes() == (tmp_path / "4" / name).read_bytes(), name
