"""Node side of the Ray executor (execute+capture stage): the entrypoint of every reportgen Ray job.

`python -m reportgen.execute.ray_node` runs on the node Ray placed the job on, reads its job
description from the environment (REPORTGEN_NODE_JOB, base64 JSON written by
reportgen.execute.ray_jobs and ray_claim) and either

* `fingerprint`: prints the node's machine fingerprint (the campaign pins it),
* `hold`: claims the node for one experiment (its node lock and machine lock,
  reportgen.store.lock), prints its fingerprint and holds until stopped, or
* `run`: records provenance, starts the GPU sampler, runs the recipe command as a child
  process group, and ships everything back through the job log.

The job log is the only channel back, so the runs/ folder need not be on a shared
filesystem. Every line this wrapper prints starts with a two-character tag:
`O|`/`E|` a whole line of the workload's stdout/stderr, `o|`/`e|` a last fragment without a
newline, `R|` a line of the result block. Untagged lines come from Ray itself (or from a
wrapper that could not start). The result block is a gzip'd tar of the node-side run folder
(provenance/, gpu.jsonl, tensorboard/, traces/, result.json) in base64, between `R|BEGIN` and
`R|END <sha256>`.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

JOB_ENV = "REPORTGEN_NODE_JOB"
RESULT_FILE = "result.json"
CHUNK = 4096


def encode_job(job: Mapping[str, Any]) -> str:
    return base64.b64encode(json.dumps(job).encode()).decode()


def decode_job(text: str) -> dict[str, Any]:
    return json.loads(base64.b64decode(text))


def result_lines(folder: Path) -> list[str]:
    """The tagged lines that carry `folder` (as a gzip'd tar) back through the job log."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for child in sorted(folder.iterdir()):
            tar.add(child, arcname=child.name)
    data = base64.b64encode(buf.getvalue()).decode()
    digest = hashlib.sha256(data.encode()).hexdigest()
    return ["R|BEGIN", *(f"R|{data[i : i + CHUNK]}" for i in range(0, len(data), CHUNK)), f"R|END {digest}"]


class _Out:
    """Tagged, line-atomic writes to stdout, shared by the two stream pumps and the wrapper."""

    def __init__(self) -> None:
        self.lock = threading.Lock()

    def write(self, text: str) -> None:
        with self.lock:
            sys.stdout.write(text)
            sys.stdout.flush()

    def pump(self, stream: Any, tag: str) -> None:
        for raw in iter(stream.readline, b""):
            line = raw.decode("utf-8", "replace")
            if line.endswith("\n"):
                self.write(f"{tag}|{line}")
            else:  # the stream's last bytes without a newline: keep them exact
                self.write(f"{tag.lower()}|{line}\n")
        stream.close()


def _child_setup() -> None:
    # The workload dies with this wrapper even when the wrapper is SIGKILLed.
    from reportgen.execute.process import _child_setup as setup

    setup()


def _node_env(job: Mapping[str, Any], scratch: Path) -> dict[str, str]:
    """The job's environment with the runner's run-folder paths moved to the node's scratch folder."""
    env = {k: v for k, v in os.environ.items() if k != JOB_ENV}
    local = str(job.get("run_dir") or "")
    if local:
        for key, value in list(env.items()):
            if value == local or value.startswith(local + os.sep):
                env[key] = str(scratch) + value[len(local) :]
    env["REPORTGEN_RUN_DIR"] = str(scratch)
    env["TENSORBOARD_DIR"] = str(scratch / "tensorboard")
    if job.get("pythonpath"):
        # An arm at a git revision imports its own checkout only: Ray's runtime environment put this
        # job's own reportgen (py_modules) first on PYTHONPATH, which would shadow the checkout's.
        env["PYTHONPATH"] = str(job["pythonpath"])
    return env


def _send(result: Mapping[str, Any]) -> None:
    """One result block with `result` as result.json, on stdout at once."""
    with tempfile.TemporaryDirectory(prefix="reportgen-node-") as tmp:
        folder = Path(tmp)
        (folder / RESULT_FILE).write_text(json.dumps(result, default=str))
        sys.stdout.write("\n".join(result_lines(folder)) + "\n")
        sys.stdout.flush()


def _probe() -> dict[str, Any]:
    from reportgen.capture.fingerprint import fingerprint_id, machine_fingerprint

    fp = machine_fingerprint()
    return {"fingerprint": fp, "fingerprint_id": fingerprint_id(fp), "hostname": socket.gethostname()}


def _fingerprint() -> int:
    _send(_probe())
    return 0


def _hold(job: Mapping[str, Any], chain: list[tuple[int, int]]) -> int:
    """Claim this node for one experiment of one `reportgen run`: take the node's lock (two
    experiments never share a node, whichever runner sent them) and, unless the run shares
    machines, the machine lock a local `reportgen run` takes; send the node's fingerprint back, then
    hold until stopped (the runner stops this job when the experiment ends) or `max_s` passes (a
    runner that died). A node held already answers with its holder and ends."""
    from reportgen.store import lock

    runner = job.get("runner") or {}
    me = lock.Holder(
        pid=os.getpid(),
        host=socket.gethostname(),
        started_utc=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        purpose=lock.RUN,
        command=str(job.get("command_text") or "reportgen run"),
        experiments=(str(job.get("experiment") or ""),),
        runner_host=runner.get("host"),
        runner_pid=runner.get("pid"),
        job_id=job.get("job_id"),
    )
    paths = [lock.node_lock_path(str(job.get("node_id") or "unknown"))]
    if job.get("machine", True):
        paths.append(lock.machine_lock_path())
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda signum, frame: stop.set())
    taken: list[lock.FileLock] = []
    try:
        for path in paths:
            held = lock.FileLock(path)
            attempt = held.try_acquire(me)
            if not attempt.taken:
                other = attempt.holder.to_json() if attempt.holder else None
                _send({"held": False, "holder": other, "lock": str(path)})
                return 3
            taken.append(held)
        _send({"held": True, **_probe(), "locks": [str(p) for p in paths]})
        deadline = time.monotonic() + float(job.get("max_s", 86400.0))
        while not stop.wait(1.0) and time.monotonic() < deadline and _ancestors_alive(chain):
            pass
    finally:
        for held in reversed(taken):
            held.release()
    return 0


def _ancestry() -> list[tuple[int, int]]:
    """(pid, start time) of this process's ancestors up to init: on a Ray node the job supervisor,
    the raylet's worker, the raylet. If one of them goes (the node's raylet died) the wrapper is
    orphaned and must not go on holding the node or running the workload. Read once, first thing
    (main): read later, after the claim was answered or the workload started, an ancestor that died
    in between is already gone from the chain (the orphan's parent is then init) and never missed."""
    from reportgen.execute.process import parent_pid, process_start_time

    chain = []
    pid: int | None = os.getppid()
    while pid is not None and pid > 1:
        start = process_start_time(pid)
        if start is None:
            break
        chain.append((pid, start))
        pid = parent_pid(pid)
    return chain


def _ancestors_alive(chain: list[tuple[int, int]]) -> bool:
    """Every ancestor of the chain still runs: the same pid with the same start time (not a reused pid)."""
    from reportgen.execute.process import process_start_time

    return all(process_start_time(pid) == start for pid, start in chain)


def _write_files(files: Mapping[str, str]) -> list[Path]:
    """Put the patched recipe copies in place when the recipe folder is not shared; returns those written."""
    written = []
    for name, b64 in files.items():
        path = Path(name)
        if path.exists():
            continue
        path.write_bytes(base64.b64decode(b64))
        written.append(path)
    return written


def _run(job: Mapping[str, Any], chain: list[tuple[int, int]]) -> int:
    from reportgen.capture.gpu import GpuSampler
    from reportgen.capture.provenance import CampaignProbes, capture_provenance
    from reportgen.store.layout import default_cache

    out = _Out()
    scratch = Path(tempfile.mkdtemp(prefix="reportgen-node-"))
    written: list[Path] = []
    result: dict[str, Any] = {"hostname": socket.gethostname(), "ray_address": os.environ.get("RAY_ADDRESS")}
    stopping = threading.Event()
    proc: subprocess.Popen[bytes] | None = None

    def on_signal(signum: int, frame: Any) -> None:
        stopping.set()
        result["stopped_by"] = signal.Signals(signum).name
        if proc is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    env = _node_env(job, scratch)
    code = 0
    try:
        written = _write_files(job.get("files") or {})
        prov_args = dict(job.get("provenance") or {})
        for key in ("recipe_repo", "model_dir"):
            if prov_args.get(key):
                prov_args[key] = Path(prov_args[key])
        prov_args["data_files"] = [Path(p) for p in prov_args.get("data_files") or []]
        cache_dir = default_cache()
        try:
            # The Python's version and packages: from the node's cache while its key is unchanged, so
            # the run jobs after the first on this node start no pip (CampaignProbes).
            probes = CampaignProbes(cache_dir)
            result["provenance"] = capture_provenance(
                scratch / "provenance", **prov_args, env=env, cache_path=cache_dir / "hashes.json", probes=probes
            )
        except Exception as exc:  # recorded, and the run still goes ahead as it would locally
            result["provenance"] = {"error": f"{type(exc).__name__}: {exc}"}
            out.write(f"E|reportgen: provenance capture failed on the node: {exc}\n")
        sampler = GpuSampler(
            scratch / "gpu.jsonl",
            interval_s=float(job.get("gpu_interval_s", 1.0)),
            env=env,  # REPORTGEN_RUN_DIR (the scratch folder) marks the run's processes, RAY_ADDRESS its cluster's
            host_jsonl=scratch / "host.jsonl",
        )
        sampler.start()
        try:
            if not stopping.is_set():
                proc = subprocess.Popen(
                    list(job["command"]),
                    cwd=job.get("cwd") or None,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    start_new_session=True,
                    preexec_fn=_child_setup,
                )
                pumps = [
                    threading.Thread(target=out.pump, args=(s, t), daemon=True)
                    for s, t in ((proc.stdout, "O"), (proc.stderr, "E"))
                ]
                for p in pumps:
                    p.start()
                grace = float(job.get("stop_grace_s", 10.0))
                checked = time.monotonic()
                while proc.poll() is None:
                    if time.monotonic() - checked >= 1.0:
                        checked = time.monotonic()
                        if not _ancestors_alive(chain):  # orphaned: the job (its node's raylet) is gone
                            result["stopped_by"] = "the Ray job's supervisor or raylet ended"
                            result["orphaned"] = True  # the runner takes the node for lost
                            stopping.set()
                            with contextlib.suppress(ProcessLookupError):
                                os.killpg(proc.pid, signal.SIGTERM)
                    if stopping.wait(0.2):
                        deadline = time.monotonic() + grace
                        while proc.poll() is None and time.monotonic() < deadline:
                            time.sleep(0.05)
                        with contextlib.suppress(ProcessLookupError):
                            os.killpg(proc.pid, signal.SIGKILL)
                        proc.wait()
                # Whatever the recipe left in its group goes too (as the local executor does).
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                for p in pumps:
                    p.join(timeout=10)
                rc = proc.returncode
                if rc < 0:
                    result.update(exit_code=None, signal=signal.Signals(-rc).name)
                    code = 128 - rc
                else:
                    result.update(exit_code=rc, signal=None)
                    code = rc
            else:
                result.update(exit_code=None, signal=result.get("stopped_by"))
                code = 143
        finally:
            result["gpu"] = sampler.stop().to_dict()
        (scratch / RESULT_FILE).write_text(json.dumps(result, default=str))
        out.write("\n".join(result_lines(scratch)) + "\n")
    finally:
        for path in written:
            path.unlink(missing_ok=True)
        shutil.rmtree(scratch, ignore_errors=True)
    return code


def main() -> int:
    chain = _ancestry()  # before anything else: see _ancestry
    job = decode_job(os.environ[JOB_ENV])
    if job.get("mode") == "fingerprint":
        return _fingerprint()
    if job.get("mode") == "hold":
        return _hold(job, chain)
    return _run(job, chain)


if __name__ == "__main__":
    sys.exit(main())
