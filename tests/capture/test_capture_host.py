"""Host load beside a run: which CPU time is the run's and which is not, on a made-up /proc (exact
figures) and on this machine's own, with a real CPU hog outside the run's process tree."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from reportgen.capture import host
from reportgen.capture.gpu import GpuSampler, compact, read_samples

TICK = os.sysconf("SC_CLK_TCK")


class FakeProc:
    """A /proc with a `cpu` line, an uptime and processes whose CPU times the test moves on."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir()
        self.busy = 0
        self.uptime = 1000.0
        self.procs: dict[int, dict] = {}
        self.write()

    def add(self, pid: int, ppid: int, comm: str, *, cpu: int = 0, start: float | None = None, env: str = "") -> None:
        self.procs[pid] = {
            "ppid": ppid,
            "comm": comm,
            "cpu": cpu,
            "children": 0,
            "start": int((start or self.uptime) * TICK),
        }
        (self.root / str(pid)).mkdir(exist_ok=True)
        (self.root / str(pid) / "environ").write_bytes(env.encode())
        self.write()

    def advance(self, seconds: float, busy_cores: float, **cpu_cores: float) -> None:
        """Let `seconds` pass with the machine `busy_cores` busy, of which pid `p<N>` used the given cores."""
        self.uptime += seconds
        self.busy += int(busy_cores * seconds * TICK)
        for key, cores in cpu_cores.items():
            self.procs[int(key[1:])]["cpu"] += int(cores * seconds * TICK)
        self.write()

    def write(self) -> None:
        idle = 10**6
        (self.root / "stat").write_text(f"cpu  {self.busy} 0 0 {idle} 0 0 0 0 0 0\ncpu0 0 0 0 0\n")
        (self.root / "uptime").write_text(f"{self.uptime:.2f} 0.00\n")
        for pid, p in self.procs.items():
            fields = ["S", str(p["ppid"]), *["0"] * 9, str(p["cpu"]), "0", str(p["children"]), "0", *["0"] * 4]
            fields.append(str(p["start"]))
            (self.root / str(pid) / "stat").write_text(f"{pid} ({p['comm']}) {' '.join(fields)}\n")


def test_parse_stat_reads_names_with_spaces_and_parentheses() -> None:
    p = host.parse_stat(b"42 (my (odd) name) S 7 42 42 0 -1 0 0 0 0 0 150 50 3 2 20 0 1 0 9876 0 0\n")
    assert p is not None and (p.ppid, p.comm, p.cpu, p.start) == (7, "my (odd) name", 205, 9876)
    assert host.parse_cpu_line(b"cpu  10 1 5 100 7 2 3 4 0 0") == (25, 132)


def test_load_outside_the_run_is_counted_and_its_heaviest_process_named(tmp_path: Path) -> None:
    fake = FakeProc(tmp_path / "proc")
    fake.add(1, 0, "init")
    fake.add(100, 1, "reportgen")  # the runner
    fake.add(101, 100, "bash")  # the recipe
    fake.add(102, 101, "python")  # the trainer
    fake.add(200, 1, "stress")  # a hog beside it
    fake.add(300, 1, "raylet")  # a Ray daemon of a cluster the run does not use
    load = host.HostLoad(root_pid=100, proc=fake.root, rescan_s=3600)
    assert load.available() == (True, None)
    assert load.sample(0.0) is None  # load is a difference: nothing on the first tick
    fake.advance(2.0, busy_cores=2.5, p102=1.5, p200=1.0)
    row = load.sample(2.0)
    assert row is not None
    assert (row["cpu_busy"], row["cpu_run"], row["cpu_other"]) == pytest.approx((2.5, 1.5, 1.0), abs=0.02)
    assert row["top_other"] == "pid 200 stress 1.00 cores"  # alone: the others used nothing
    assert load.owns(102) is True and load.owns(200) is False and load.owns(999) is None
    fake.advance(1.0, busy_cores=1.0, p102=1.0)  # the hog pauses
    row = load.sample(3.0)
    assert row is not None and row["cpu_other"] == pytest.approx(0.0, abs=0.02)
    # A child the trainer starts between ticks is the run's from its first tick on: the load it
    # adds looks like outside load until the full read this triggers finds it in the run's tree.
    fake.add(103, 102, "python", cpu=int(0.4 * TICK), start=fake.uptime + 0.5)
    fake.advance(1.0, busy_cores=2.0, p102=1.0, p103=0.5, p200=0.0)
    row = load.sample(4.0)
    assert row is not None and row["cpu_run"] == pytest.approx(1.9, abs=0.02)
    assert row["cpu_other"] == pytest.approx(0.1, abs=0.02) and row["top_other"] is None
    # A GPU process NVML lists before any full read found it is placed through its parents.
    fake.add(104, 103, "python", start=fake.uptime + 0.1)
    fake.advance(1.0, busy_cores=1.5, p102=1.0, p103=0.5)
    load.sample(5.0, gpu_pids=[104, 200])
    assert load.owns(104) is True and load.owns(200) is False
    # The child ends and its parent reaps it: its whole time moves into the parent's children's
    # time, and is not counted twice (only its last half second is new).
    child = fake.procs.pop(103)
    (fake.root / "103" / "stat").unlink()
    fake.procs[102]["children"] += child["cpu"] + int(0.5 * TICK)
    fake.advance(1.0, busy_cores=1.5, p102=1.0)
    row = load.sample(6.0)
    assert row is not None and row["cpu_run"] == pytest.approx(1.5, abs=0.02)
    assert row["cpu_other"] == pytest.approx(0.0, abs=0.02)


def test_ray_processes_and_processes_carrying_the_run_folder_are_the_runs(tmp_path: Path) -> None:
    fake = FakeProc(tmp_path / "proc")
    fake.add(100, 1, "python")  # the Ray node's wrapper
    fake.add(300, 1, "raylet")
    fake.add(301, 300, "ray::Actor")  # a Relax actor: a worker of the cluster, not a child of the recipe
    fake.add(400, 1, "gcs_server", env="PATH=/bin\0REPORTGEN_RUN_DIR=/runs/e/A1/1\0")  # a Ray the recipe started
    fake.add(500, 1, "sleep", env="REPORTGEN_RUN_DIR=/runs/e/A1/2\0")  # another run's
    on_ray = host.HostLoad(root_pid=100, ray=True, proc=fake.root)
    on_ray.sample(0.0)
    assert [on_ray.owns(p) for p in (300, 301, 400, 500)] == [True, True, True, False]
    marked = host.HostLoad(root_pid=100, marker="/runs/e/A1/1", proc=fake.root)
    marked.sample(0.0)
    assert [marked.owns(p) for p in (300, 301, 400, 500)] == [False, False, True, False]


def _orphan(code: str, env: dict[str, str] | None = None) -> int:
    """A process outside this test's process tree (its parent exits; it is adopted by init)."""
    out = subprocess.run(
        ["sh", "-c", f'{sys.executable} -c "{code}" >/dev/null 2>&1 & echo $!'],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    return int(out.stdout.strip())


def test_a_real_cpu_hog_beside_the_run_is_other_load_and_a_gpu_process_of_it_is_named(tmp_path: Path) -> None:
    hog = _orphan("while True: pass")
    try:
        with open(f"/proc/{hog}/stat") as fh:
            assert int(fh.read().rsplit(")", 1)[1].split()[1]) != os.getpid()  # not our child
        own_gpu_pid = os.getpid()
        unseen = 4_194_000  # beyond any pid in use here

        def reader() -> list[dict]:
            # NVML-shaped rows: the run's process and the hog both on GPU 0; GPU 1 has a pid /proc cannot show.
            return [
                {
                    "index": 0,
                    "uuid": "GPU-0",
                    "name": "H200",
                    "throttle": 0x40,
                    "procs": [(own_gpu_pid, 900.0), (hog, 100.0)],
                },
                {"index": 1, "uuid": "GPU-1", "name": "H200", "throttle": 0, "procs": [(unseen, 50.0)]},
            ]

        sampler = GpuSampler(tmp_path / "gpu.jsonl", interval_s=0.3, reader=reader, host_jsonl=tmp_path / "host.jsonl")
        with sampler:
            time.sleep(2.5)
        status = sampler.status
        assert status.host_available and status.host_samples >= 4
        _, rows = read_samples(tmp_path / "gpu.jsonl")
        gpu0 = [r for r in rows if r["index"] == 0]
        assert all(r["other_procs"] == 1 and r["other_mem_mib"] == 100.0 for r in gpu0)
        assert f"pid {hog} python" in gpu0[-1]["other_desc"] and gpu0[-1]["throttle"] == 0x40
        # A pid NVML lists that /proc does not show, while the run's own are shown: outside the run.
        assert all(r["other_procs"] == 1 for r in rows if r["index"] == 1)
        compact(tmp_path / "gpu.jsonl", tmp_path / "gpu.parquet")
        assert host.compact_host(tmp_path / "host.jsonl", tmp_path / "host.parquet") == status.host_samples
        load = pd.read_parquet(tmp_path / "host.parquet")
        assert list(load.columns) == list(host.COLUMNS)
        # The hog keeps about a core busy; the machine is shared, so only a clear share is asserted.
        assert load["cpu_other"].median() > 0.3, load
        assert load["top_other"].notna().any()
    finally:
        os.kill(hog, signal.SIGKILL)


def test_without_proc_the_header_says_why_and_no_rows_follow(tmp_path: Path) -> None:
    load = host.HostLoad(root_pid=os.getpid(), proc=tmp_path / "no-proc")
    sampler = GpuSampler(
        tmp_path / "gpu.jsonl", interval_s=0.2, reader=list, host_jsonl=tmp_path / "host.jsonl", host=load
    )
    with sampler:
        time.sleep(0.5)
    assert not sampler.status.host_available and "Linux only" in str(sampler.status.host_reason)
    assert host.read_rows(tmp_path / "host.jsonl") == []
    assert host.compact_host(tmp_path / "host.jsonl", tmp_path / "host.parquet") == 0
    assert host.compact_host(tmp_path / "none.jsonl", tmp_path / "none.parquet") is None
