"""Locks that keep measurements apart (store stage): one `reportgen run` per campaign, one
measurement per machine.

* The **campaign lock**, `runs/<experiment>/.campaign.lock`: a second `reportgen run` of a
  campaign in progress is refused at once, naming the holder, before it writes anything (two
  runners of one campaign stopped each other's runs and ran both arms at once on the same cores).
  `reportgen analyze` takes it too: it refuses a campaign in progress (or waits for it, when asked),
  so analysis.json never describes runs half made.
* The **machine lock**, `$REPORTGEN_MACHINE_LOCK`, else `reportgen-machine.lock` in the system's
  temporary folder: a campaign of another experiment on the same machine waits for it. Users who
  know what they do opt out (`--share-machine`); the analysis still finds overlapping runs.

Both are `flock(2)` locks, taken without blocking and polled while waiting. The kernel drops a
lock when its process dies, however it dies (SIGKILL included), so a lock is never held by a
process that is gone. The file also carries a JSON record of its holder (pid, host, start, command),
read to name the holder in a refusal and cleared on release: a record found when the lock is taken
was left by a process that died holding it, and is taken over with a note. A runs folder carried to
another machine (a CI artifact, a device command's output) may hold such a record naming the other
host: no process here holds its `flock`, so it is taken over the same way, never waited for. The file is removed on
release (a `runs/` tree keeps no lock files); a process that opened it just before gets the lock of
a removed file, sees that the path no longer names it, and opens the path again.

Locks are re-entrant per process: the pipeline holds a campaign's locks around all of its runs
and its analysis, and `run_plan` or `analyze_experiment` called inside just go on.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shlex
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reportgen.errors import UserError
from reportgen.store.layout import CAMPAIGN_LOCK

KIND = "reportgen.lock"
MACHINE_LOCK_ENV = "REPORTGEN_MACHINE_LOCK"
MACHINE_LOCK_NAME = "reportgen-machine.lock"
RUN, ANALYZE, INGEST = "run", "analyze", "ingest"
POLL_S = 0.5
_RECORD_MAX = 1 << 16


def _utc_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


@dataclass(frozen=True)
class Holder:
    """Who holds a lock: what a refusal names, and what a later taker reads if its process died."""

    pid: int
    host: str
    started_utc: str
    purpose: str  # RUN or ANALYZE
    command: str = ""
    experiments: tuple[str, ...] = ()
    # A Ray node's claim: the `reportgen run` it holds the node for, and the hold job to stop.
    runner_host: str | None = None
    runner_pid: int | None = None
    job_id: str | None = None

    @classmethod
    def here(cls, purpose: str, experiments: Sequence[str] = ()) -> Holder:
        argv = [Path(sys.argv[0]).name if sys.argv else "python", *sys.argv[1:]]
        command = " ".join(shlex.join(argv).split())  # one line, whatever the arguments hold
        return cls(
            pid=os.getpid(),
            host=socket.gethostname(),
            started_utc=_utc_now(),
            purpose=purpose,
            command=command if len(command) <= 200 else command[:197] + "...",
            experiments=tuple(experiments),
        )

    def describe(self) -> str:
        """ "`reportgen run exp.toml` (pid 4242 on gpu-7, since 2026-12-01T10:00:00Z)"."""
        what = f"`{self.command}`" if self.command else f"a reportgen {self.purpose}"
        if self.job_id:  # a Ray node held for a runner elsewhere
            return (
                f"{what} (Ray job {self.job_id} for pid {self.runner_pid} on {self.runner_host}, "
                f"since {self.started_utc})"
            )
        return f"{what} (pid {self.pid} on {self.host}, since {self.started_utc})"

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": KIND,
            "pid": self.pid,
            "host": self.host,
            "started_utc": self.started_utc,
            "purpose": self.purpose,
            "command": self.command,
            "experiments": list(self.experiments),
            "runner_host": self.runner_host,
            "runner_pid": self.runner_pid,
            "job_id": self.job_id,
        }

    @classmethod
    def from_json(cls, data: Any) -> Holder | None:
        if not isinstance(data, Mapping) or data.get("kind") != KIND:
            return None
        try:
            return cls(
                pid=int(data["pid"]),
                host=str(data["host"]),
                started_utc=str(data.get("started_utc") or "?"),
                purpose=str(data.get("purpose") or RUN),
                command=str(data.get("command") or ""),
                experiments=tuple(str(e) for e in data.get("experiments") or ()),
                runner_host=str(data["runner_host"]) if data.get("runner_host") else None,
                runner_pid=int(data["runner_pid"]) if data.get("runner_pid") is not None else None,
                job_id=str(data["job_id"]) if data.get("job_id") else None,
            )
        except (KeyError, TypeError, ValueError):
            return None


def describe(holder: Holder | None) -> str:
    return holder.describe() if holder is not None else "another process (its record could not be read)"


@dataclass(frozen=True)
class Attempt:
    """One non-blocking try: taken, or the holder in the way; `note` when a dead holder's record was taken over."""

    taken: bool
    holder: Holder | None = None
    note: str | None = None


@dataclass
class _Held:
    fd: int
    count: int
    created: list[Path] = field(default_factory=list)  # folders made for the lock file: removed when left empty


_HELD: dict[str, _Held] = {}
_GUARD = threading.Lock()


def _make_parents(folder: Path) -> list[Path]:
    """Create `folder` and its missing parents; returns those created, deepest first."""
    missing = []
    for p in (folder, *folder.parents):
        if p.exists():
            break
        missing.append(p)
    folder.mkdir(parents=True, exist_ok=True)
    return missing


def _remove_empty(folders: Sequence[Path]) -> None:
    for p in folders:  # deepest first
        with contextlib.suppress(OSError):
            p.rmdir()


def _read_record(fd: int) -> Holder | None:
    try:
        data = os.pread(fd, _RECORD_MAX, 0)
        return Holder.from_json(json.loads(data)) if data.strip() else None
    except (OSError, ValueError):
        return None


def _write_record(fd: int, holder: Holder | None) -> None:
    os.ftruncate(fd, 0)
    if holder is not None:
        os.pwrite(fd, (json.dumps(holder.to_json()) + "\n").encode(), 0)
    os.fsync(fd)


def _names_same_file(fd: int, path: Path) -> bool:
    try:
        here, there = os.fstat(fd), os.stat(path)
    except OSError:
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


class FileLock:
    """An exclusive advisory lock on one file, re-entrant within this process (see the module docstring)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.key = os.path.abspath(self.path)

    @property
    def held_here(self) -> bool:
        with _GUARD:
            return self.key in _HELD

    def try_acquire(self, holder: Holder) -> Attempt:
        with _GUARD:
            held = _HELD.get(self.key)
            if held is not None:
                held.count += 1
                return Attempt(True)
            created: list[Path] = []
            while True:
                created += _make_parents(self.path.parent)
                try:
                    fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
                except FileNotFoundError:  # its folder was removed as empty by a releasing process
                    continue
                except OSError as exc:
                    _remove_empty(created)
                    raise UserError(
                        f"{self.path}: cannot open this lock file ({exc.strerror}); make it writable, or set "
                        f"${MACHINE_LOCK_ENV} to another path for the machine lock"
                    ) from exc
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    other = _read_record(fd)
                    os.close(fd)
                    _remove_empty(created)
                    return Attempt(False, holder=other)
                except OSError as exc:
                    os.close(fd)
                    _remove_empty(created)
                    raise UserError(
                        f"{self.path}: this filesystem does not support file locks ({exc.strerror}); put the "
                        "runs folder on a local disk (--runs) or the machine lock elsewhere "
                        f"(${MACHINE_LOCK_ENV})"
                    ) from exc
                if not _names_same_file(fd, self.path):
                    os.close(fd)  # its last holder removed it as we opened it: that lock guards nothing
                    continue
                break
            previous = _read_record(fd)
            _write_record(fd, holder)
            with contextlib.suppress(OSError):
                os.fchmod(fd, 0o666)  # the machine lock is shared by every user of the machine
            _HELD[self.key] = _Held(fd, 1, created)
            note = None
            if previous is not None:
                gone = (
                    "that process is gone" if previous.host == holder.host else "a lock is never held across machines"
                )
                note = f"took over the lock left by {previous.describe()}: {gone}"
            return Attempt(True, note=note)

    def release(self) -> None:
        with _GUARD:
            held = _HELD.get(self.key)
            if held is None:
                return
            held.count -= 1
            if held.count > 0:
                return
            del _HELD[self.key]
            with contextlib.suppress(OSError):
                _write_record(held.fd, None)
                os.unlink(self.path)  # still locked here: a process that opened it re-checks the path
            os.close(held.fd)
            _remove_empty(held.created)

    def holder(self) -> Holder | None:
        """The holder's record as the file says now (None: free, or unreadable)."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            return _read_record(fd)
        finally:
            os.close(fd)


@dataclass(frozen=True)
class Claim:
    """A lock to take, what it guards in words, and what to do when someone else holds it."""

    lock: FileLock
    what: str  # "runs/exp (the campaign)", "the machine"
    waits_for: Callable[[Holder | None], bool]  # wait for this holder (True) or refuse at once
    refusal: Callable[[Holder | None], str]  # the UserError line when refused


def _take(claim: Claim, holder: Holder, stop: threading.Event | None, log: Callable[[str], None]) -> bool:
    try:
        return _wait_for(claim, holder, stop, log)
    except KeyboardInterrupt:  # Ctrl-C while waiting, wherever in the loop it lands: give up, nothing taken
        return False


def _wait_for(claim: Claim, holder: Holder, stop: threading.Event | None, log: Callable[[str], None]) -> bool:
    announced = False
    while True:
        attempt = claim.lock.try_acquire(holder)
        if attempt.taken:
            if attempt.note:
                log(f"{claim.what}: {attempt.note}")
            return True
        if not claim.waits_for(attempt.holder):
            raise UserError(claim.refusal(attempt.holder))
        if not announced:
            log(f"waiting for {claim.what}: held by {describe(attempt.holder)}")
            announced = True
        if stop is not None:
            if stop.wait(POLL_S):
                return False
            continue
        time.sleep(POLL_S)


def _to_stderr(line: str) -> None:
    sys.stderr.write(f"reportgen: {line}\n")


@contextlib.contextmanager
def holding(
    claims: Sequence[Claim],
    *,
    holder: Holder,
    stop: threading.Event | None = None,
    log: Callable[[str], None] | None = None,
) -> Iterator[bool]:
    """Take every claim in order, then run the block; yields False (nothing held) when `stop` was
    set while waiting. A refused claim raises UserError after releasing the ones taken."""
    say = log or _to_stderr
    taken: list[FileLock] = []
    try:
        ok = True
        for claim in claims:
            if not _take(claim, holder, stop, say):
                ok = False
                break
            taken.append(claim.lock)
        if not ok:
            for lock in reversed(taken):
                lock.release()
            taken.clear()
        yield ok
    finally:
        for lock in reversed(taken):
            lock.release()


# -- the two locks -------------------------------------------------------------------------------


def campaign_lock(exp_dir: Path) -> FileLock:
    return FileLock(Path(exp_dir) / CAMPAIGN_LOCK)


def machine_lock_path(env: Mapping[str, str] | None = None) -> Path:
    """$REPORTGEN_MACHINE_LOCK, else reportgen-machine.lock in the system's temporary folder."""
    value = (os.environ if env is None else env).get(MACHINE_LOCK_ENV)
    return Path(value).expanduser() if value else Path(tempfile.gettempdir()) / MACHINE_LOCK_NAME


def node_lock_path(node_id: str, env: Mapping[str, str] | None = None) -> Path:
    """The lock one Ray node is claimed with, beside the machine lock (one per node: loopback
    test clusters run several nodes on one machine)."""
    safe = "".join(c for c in node_id if c.isalnum())[:64] or "unknown"
    return machine_lock_path(env).with_name(f"reportgen-ray-node-{safe}.lock")


def _is_analysis(holder: Holder | None) -> bool:
    """A brief holder (an analysis or an ingest: seconds) that a run or another of them waits for."""
    return holder is not None and holder.purpose in (ANALYZE, INGEST)


def campaign_claim(exp_dir: Path, *, purpose: str, wait: bool = False) -> Claim:
    """A run waits for an analysis (seconds) and refuses another run; an analysis refuses a run in
    progress unless told to wait."""
    exp_dir = Path(exp_dir)

    def refusal(other: Holder | None) -> str:
        if purpose == RUN:
            return (
                f"{exp_dir}: a campaign of this experiment is in progress: {describe(other)}; wait for it to end "
                "or stop that process, then run again (a second runner would stop its runs and share its machine)"
            )
        if purpose == INGEST:
            return (
                f"{exp_dir}: a campaign of this experiment is in progress: {describe(other)}; ingest once it has "
                "ended (the runner numbers its repeats as it goes, and the ingested run would take one)"
            )
        return (
            f"{exp_dir}: a campaign is in progress: {describe(other)}; its analysis.json is written when it ends: "
            "pass --wait to wait for it, or analyse once it has ended"
        )

    return Claim(
        lock=campaign_lock(exp_dir),
        what=f"{exp_dir} (the campaign)",
        waits_for=lambda other: wait or _is_analysis(other),
        refusal=refusal,
    )


def machine_claim(path: Path | None = None) -> Claim:
    """Another campaign on this machine: wait for it (its runs would disturb ours, ours its)."""
    return Claim(
        lock=FileLock(path or machine_lock_path()),
        what="the machine",
        waits_for=lambda other: True,
        refusal=lambda other: f"the machine is taken by {describe(other)}",
    )


def hold_campaigns(
    exp_dirs: Sequence[Path],
    *,
    machine: bool,
    stop: threading.Event | None = None,
    log: Callable[[str], None] | None = None,
) -> contextlib.AbstractContextManager[bool]:
    """What `reportgen run` holds: each experiment's campaign lock (a campaign in progress elsewhere:
    UserError at once, nothing written) and, when the workloads run on this machine and `machine`
    is set, the machine lock (waiting for another campaign to end). Yields False when `stop` was
    set while waiting."""
    names = [Path(d).name for d in exp_dirs]
    claims = [campaign_claim(d, purpose=RUN) for d in exp_dirs]
    if machine:
        claims.append(machine_claim())
    return holding(claims, holder=Holder.here(RUN, names), stop=stop, log=log)


def hold_for_analysis(
    exp_dir: Path, *, wait: bool = False, log: Callable[[str], None] | None = None
) -> contextlib.AbstractContextManager[bool]:
    """What `reportgen analyze` holds while it reads the runs and writes analysis.json."""
    claim = campaign_claim(exp_dir, purpose=ANALYZE, wait=wait)
    return holding([claim], holder=Holder.here(ANALYZE, [Path(exp_dir).name]), log=log)


def hold_for_ingest(
    exp_dir: Path, *, log: Callable[[str], None] | None = None
) -> contextlib.AbstractContextManager[bool]:
    """What `reportgen ingest` holds while it numbers, writes and publishes a run: a campaign in
    progress refuses it (UserError naming the runner), an analysis is waited for."""
    claim = campaign_claim(exp_dir, purpose=INGEST)
    return holding([claim], holder=Holder.here(INGEST, [Path(exp_dir).name]), log=log)


def in_progress(exp_dir: Path) -> Holder | None:
    """The runner holding this experiment's campaign in another process, or None (free, or held here)."""
    lock = campaign_lock(exp_dir)
    if lock.held_here or not lock.path.exists():
        return None
    attempt = lock.try_acquire(Holder.here(ANALYZE, [Path(exp_dir).name]))
    if attempt.taken:
        lock.release()
        return None
    return attempt.holder if attempt.holder is not None and attempt.holder.purpose == RUN else None
