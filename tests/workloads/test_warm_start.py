"""The warm start's cache (reportgen.workloads.grpo.warm_start): made once and read back, keyed by
content, the same bytes from two makes, a damaged or foreign file made again and never unpickled
freely, two processes making it at once.

One warm start is made for the module (`made`); the tests that read it back, damage it or replace
it start from a copy of its cache folder, so each makes only what it checks is made (a make is
about 1.7 CPU-seconds of the tiny model; 15 makes were 10)."""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

from reportgen.workloads.grpo import warm_start
from reportgen.workloads.grpo.args import parse_args
from tests.conftest import env_with_repo_on_path
from tests.workloads.conftest import TINY

CPU = torch.device("cpu")


@contextlib.contextmanager
def _one_thread() -> Iterator[None]:
    """One torch thread, as a run on a CPU makes its warm start (OpenMP's spinning threads on a busy
    2-core machine make every step many times slower)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@pytest.fixture(autouse=True)
def one_thread() -> Iterator[None]:
    with _one_thread():
        yield


def _args(tiny_argv: list[str], cache: Path, *extra: str):
    return parse_args([*tiny_argv, "--warm-start-cache", str(cache), *extra])


@dataclass(frozen=True)
class Made:
    """The module's one warm start: its cache folder, what `obtain` said and the weights it gave."""

    cache: Path
    first: warm_start.Made
    state: dict[str, torch.Tensor]

    def copy(self, dest: Path) -> tuple[Path, Path]:
        """The cache folder copied to `dest` (a test writes in its copy): (the copy, its file)."""
        shutil.copytree(self.cache, dest)
        return dest, dest / warm_start.SUBDIR / self.first.path.name


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Made:
    cache = tmp_path_factory.mktemp("warm-start") / "cache"
    with _one_thread():
        state, first = warm_start.obtain(_args(list(TINY), cache), CPU)
    return Made(cache, first, state)


def test_made_once_then_read_and_keyed_by_content(tiny_argv, tmp_path, made):
    first = made.first
    assert first.made and first.outcome is not None and first.path.is_file()
    assert first.sha256 == hashlib.sha256(first.path.read_bytes()).hexdigest()
    assert first.path.with_suffix(".sha256").read_text().strip() == first.sha256
    # the start is controlled: the task learnt, then the answer softened to about the accuracy asked for
    assert first.outcome.learnt_accuracy >= warm_start.KNOW
    assert abs(first.outcome.accuracy - 0.25) < 0.12
    cache, path = made.copy(tmp_path / "cache")
    again_state, again = warm_start.obtain(_args(tiny_argv, cache), CPU)
    assert not again.made and again.sha256 == first.sha256 and again.path == path
    assert all(torch.equal(again_state[k], v) for k, v in made.state.items())
    # another model config or another recipe is another warm start, beside the first
    wider = warm_start.obtain(_args(tiny_argv, cache, "--ffn-hidden-size", "192"), CPU)[1]
    softer = warm_start.obtain(_args(tiny_argv, cache, "--warm-start-accuracy", "0.4"), CPU)[1]
    assert wider.made and softer.made and len({again.path, wider.path, softer.path}) == 3
    assert len(list((cache / warm_start.SUBDIR).glob("*.pt"))) == 3
    # the per-block seeds never change it: a campaign's blocks all start from the same weights
    assert warm_start.cache_key(
        _args(tiny_argv, cache, "--seed", "9", "--rollout-seed", "9"), CPU
    ) == warm_start.cache_key(_args(tiny_argv, cache), CPU)
    line = warm_start.log_line(again)
    assert line.startswith(f"warm start: sha256 {first.sha256} read from the cache in ")


def test_two_makes_give_the_same_bytes(tiny_argv, tmp_path, made):
    other = warm_start.obtain(_args(tiny_argv, tmp_path / "other"), CPU)[1]
    assert made.first.made and other.made and other.sha256 == made.first.sha256


@pytest.mark.parametrize("damage", ["flip", "truncate", "no-hash-file"])
def test_a_damaged_file_is_made_again(tiny_argv, tmp_path, made, damage):
    cache, path = made.copy(tmp_path / "cache")
    data = path.read_bytes()
    if damage == "flip":
        path.write_bytes(data[:-100] + bytes([data[-100] ^ 0xFF]) + data[-99:])
    elif damage == "truncate":
        path.write_bytes(data[: len(data) // 2])
    else:
        path.with_suffix(".sha256").unlink()
    again = warm_start.obtain(_args(tiny_argv, cache), CPU)[1]
    assert again.made and again.sha256 == made.first.sha256 and path.read_bytes() == data
    if damage != "no-hash-file":
        assert "do not match the hash recorded beside it" in again.note


class _Payload:
    """What a hostile cache file might hold: an object whose unpickling runs code."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def test_a_file_that_would_run_code_is_refused_never_unpickled(tiny_argv, tmp_path, made):
    cache, path = made.copy(tmp_path / "cache")
    marker = tmp_path / "ran"
    buffer = io.BytesIO()
    torch.save({"model.embed_tokens.weight": _Payload(marker)}, buffer, pickle_protocol=2)
    path.write_bytes(buffer.getvalue())  # with a matching hash: only the restricted unpickler stands in the way
    path.with_suffix(".sha256").write_text(hashlib.sha256(buffer.getvalue()).hexdigest() + "\n")
    again = warm_start.obtain(_args(tiny_argv, cache), CPU)[1]
    assert again.made and "not a plain tensor file" in again.note
    assert not marker.exists()


@pytest.mark.slow
def test_two_processes_making_it_at_once_both_succeed(tiny_argv, tmp_path):
    cache = tmp_path / "cache"
    cmd = [sys.executable, "-m", "reportgen.workloads.grpo.warm_start", *tiny_argv, "--warm-start-cache", str(cache)]
    env = {**env_with_repo_on_path(), "OMP_NUM_THREADS": "1"}
    procs = [
        subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for _ in range(2)
    ]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    shas = {line.split("sha256 ")[1].split()[0] for out in outs for line in out.splitlines() if "warm start:" in line}
    assert len(shas) == 1
    files = sorted(p.name for p in (cache / warm_start.SUBDIR).iterdir())
    assert len(files) == 2 and files[0].endswith(".pt") and files[1].endswith(".sha256"), files  # no temporary left
    assert warm_start.obtain(_args(tiny_argv, cache), CPU)[1].sha256 in shas


def test_the_cache_folder_follows_reportgens_rule(tmp_path):
    home = str(Path.home())
    assert warm_start.cache_root(None, {"REPORTGEN_CACHE": str(tmp_path)}) == tmp_path.resolve()
    assert warm_start.cache_root(None, {"XDG_CACHE_HOME": str(tmp_path)}) == (tmp_path / "reportgen").resolve()
    assert warm_start.cache_root(None, {}) == (Path(home) / ".cache" / "reportgen").resolve()
    assert warm_start.cache_root(str(tmp_path / "mine"), {"REPORTGEN_CACHE": "x"}) == (tmp_path / "mine").resolve()
    from reportgen.store.layout import default_cache  # the rule it copies (the workload imports nothing of reportgen)

    env = dict(os.environ)
    assert warm_start.cache_root(None, env) == default_cache()
