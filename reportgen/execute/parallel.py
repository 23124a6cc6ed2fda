"""A sequential campaign's blocks on several nodes at once (execute stage).

A block is one pair: the baseline and each still-open candidate, in the block's interleaved order,
one run after another on one node. With N nodes of one machine class, up to N blocks run at once,
one per node; the campaign's schedule (`BlockSource.ahead`, reportgen.campaign.Sequential) chooses
each new block's arms from the analysis of the blocks complete so far and stops handing blocks
out once the campaign is decided, its max_pairs is reached counting the blocks in flight, or its
budget is spent. A block already started is finished and kept: the analysis uses every complete
block, whichever finished first.

Where a block's runs live while it runs: `<experiment>/.blocks/<block>/<arm>/<block>`, a folder
the analysis does not read (layout.iter_runs skips dot folders). When its last run has ended, each
run folder is renamed into `<experiment>/<arm>/<block>`, so the analysis only ever sees whole
blocks: no look is taken on a half-made pair, and a block in flight never reads as a pending
run. A block whose node is lost mid-block is moved whole under `archive/` and redone on
another node (a pair is measured on one machine); a block left in `.blocks/` by a runner that
was stopped or died is moved under `archive/` by the next `reportgen run` and its block redone.

The executor-specific part (claiming nodes, the jobs) stays with the executor: reportgen.execute
.ray_run gives `run_blocks` one `Slot` per claimed node.
"""

from __future__ import annotations

import contextlib
import os
import queue
import shutil
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from reportgen import vocab
from reportgen.capture.fingerprint import fingerprint_id, machine_fingerprint
from reportgen.errors import UserError
from reportgen.execute import blocks
from reportgen.execute.executor import Executor, ExperimentOutcome, RunOptions, RunOutcome
from reportgen.execute.progress import ProgressDisplay
from reportgen.execute.runner import _close_block, _Experiment, _prepare_experiment, _run_one
from reportgen.plan.arms import Plan, block_order
from reportgen.store import layout
from reportgen.store import lock as locks
from reportgen.store.runs import join_campaign, load_manifest, move_aside
from reportgen.vocab import FINAL_STATUSES

MAX_REDOS = 2  # a block that ends unfinished on a live node is redone at most this often
IN_FLIGHT = ".blocks"  # <experiment>/.blocks/<block>/: the runs of a block still being made


@runtime_checkable
class BlockSource(Protocol):
    """A sequential schedule that can be asked for a block while others still run."""

    def ahead(self, block: int, in_flight: Mapping[int, Sequence[str]]) -> Sequence[str] | None:
        """The arms of new block `block` given the blocks in flight (number -> arms); None: no more."""


@dataclass
class Slot:
    """One node's executor (it runs one run at a time) and what its manifests record of it."""

    executor: Executor
    info: Mapping[str, Any]
    name: str  # how the console names the node: "127.0.0.1 (3f2a9c0d1e2b)"


@dataclass(frozen=True)
class _Done:
    block: int
    slot: Slot
    runs: tuple[RunOutcome, ...]
    complete: bool  # every run of the block ended (finished or failed) on a node still there


def staging_dir(exp_dir: Path, block: int) -> Path:
    return Path(exp_dir) / IN_FLIGHT / str(block)


def run_blocks(
    plan: Plan,
    options: RunOptions,
    slots: Sequence[Slot],
    source: BlockSource,
    *,
    display: ProgressDisplay,
    stop: threading.Event,
    display_for_slot: Callable[[Slot], ProgressDisplay] | None = None,
) -> ExperimentOutcome:
    """Run `plan`'s sequential campaign on `slots`, a block per free slot, until `source` hands out
    no more and every block started has ended; then its profiler runs (if wanted) on one slot.
    Holds the campaign's lock (another `reportgen run` of it is refused); the nodes' machines are
    the executor's to hold (their claims)."""
    exp_dir = Path(options.runs_root) / plan.spec.name
    if options.rerun:  # a finished block is kept whole or archived whole, never remade in part
        raise UserError(
            f"--rerun {', '.join(options.rerun)}: a sequential campaign on a Ray cluster adds new blocks and keeps "
            "every finished one; drop --rerun (new pairs come by themselves while the campaign is open), or pass "
            "--new-campaign to start it afresh"
        )
    with locks.hold_campaigns([exp_dir], machine=False, stop=stop, log=display.log) as held:
        if not held:
            return ExperimentOutcome(plan.spec.name, exp_dir, (), interrupted=True)
        return _Scheduler(plan, options, list(slots), source, display, stop, display_for_slot).run()


class _Scheduler:
    """The loop of `run_blocks`: hands blocks to free slots, collects them as they end."""

    def __init__(
        self,
        plan: Plan,
        options: RunOptions,
        slots: list[Slot],
        source: BlockSource,
        display: ProgressDisplay,
        stop: threading.Event,
        display_for_slot: Callable[[Slot], ProgressDisplay] | None,
    ) -> None:
        self.plan, self.options, self.source, self.display, self.stop = plan, options, source, display, stop
        self.exp_dir = Path(options.runs_root) / plan.spec.name
        first = slots[0]
        self.machines = {id(s): dict(s.executor.fingerprint or machine_fingerprint()) for s in slots}
        campaign = _prepare_experiment(
            plan.spec, self.exp_dir, options, machine=self.machines[id(first)], executor=dict(first.info) or None
        )
        for s in slots[1:]:  # every node's machine joins the campaign (of its class: the executor chose them)
            fp = self.machines[id(s)]
            campaign = join_campaign(self.exp_dir, fingerprint=fp, fingerprint_id=fingerprint_id(fp))
        self.base = _Experiment(
            plan=plan,
            exp_dir=self.exp_dir,
            campaign=campaign,
            options=options,
            display=display,
            executor=first.executor,
            executor_info=dict(first.info),
            stop=stop,
        )
        self.free = list(slots)
        self.displays = {id(s): (display_for_slot(s) if display_for_slot else display) for s in slots}
        self.in_flight: dict[int, tuple[Sequence[str], Slot]] = {}
        self.redo: deque[tuple[int, Sequence[str]]] = deque()
        self.ended: queue.Queue[_Done | BaseException] = queue.Queue()
        self.outcomes: list[RunOutcome] = []
        self.handing = True
        self.redos: dict[int, int] = {}
        self.unfinished = False  # a block given up on (MAX_REDOS)

    def run(self) -> ExperimentOutcome:
        cid = str(self.base.campaign["campaign_id"])
        set_aside_unfinished(self.exp_dir, cid, self.base.executor.stop_orphan, self.display.log)
        block = max((rep for arm, rep, _ in layout.iter_runs(self.exp_dir) if not vocab.is_profile_arm(arm)), default=0)
        threads: list[threading.Thread] = []
        with self.display:
            while not self.stop.is_set():
                while self.free and (self.redo or self.handing) and not self.stop.is_set():
                    if self.redo:
                        number, arms = self.redo.popleft()
                    else:
                        chosen = self.source.ahead(block + 1, {k: a for k, (a, _) in self.in_flight.items()})
                        if chosen is None:
                            self.handing = False
                            break
                        block += 1
                        number, arms = block, chosen
                    threads.append(self._start(number, arms, self.free.pop(0)))
                if not self.in_flight:
                    break
                self._collect()
            while self.in_flight:  # stopped: each block in flight interrupts its run and ends
                self._collect()
            for t in threads:
                t.join()
            if self.options.profiler and not self.stop.is_set() and self.free:
                self._profile(self.free[0])
        # Stopped, a lost block with no node left to redo it, or a block given up on.
        interrupted = self.stop.is_set() or bool(self.redo) or self.unfinished
        return ExperimentOutcome(self.plan.spec.name, self.exp_dir, tuple(self.outcomes), interrupted=interrupted)

    def _start(self, block: int, arms: Sequence[str], slot: Slot) -> threading.Thread:
        self.in_flight[block] = (arms, slot)
        self.display.log(f"block {block} ({', '.join(block_order(self.plan, block, arms))}) on node {slot.name}")
        t = threading.Thread(target=self._block, args=(block, arms, slot), name=f"reportgen-block-{block}")
        t.start()
        return t

    def _block(self, block: int, arms: Sequence[str], slot: Slot) -> None:
        """One block on one node, run after run (in the thread of that node)."""
        try:
            by_id = {a.id: a for a in self.plan.arms}
            exp = self._for_slot(slot, staging_dir(self.exp_dir, block))
            runs: list[RunOutcome] = []
            for arm in block_order(self.plan, block, arms):
                if self.stop.is_set() or slot.executor.lost:
                    break
                runs.append(_run_one(by_id[arm], block, vocab.FORMAL, exp))
            ended = len(runs) == len(arms) and all(r.status in FINAL_STATUSES for r in runs)
            self.ended.put(_Done(block, slot, tuple(runs), ended and not slot.executor.lost))
        except BaseException as exc:  # the scheduler's thread re-raises it
            self.ended.put(exc)

    def _collect(self) -> None:
        """Wait for a block to end: keep it (its runs join the experiment) or set it aside to redo."""
        while True:
            try:
                done = self.ended.get(timeout=0.2)
                break
            except queue.Empty:
                continue
        if isinstance(done, BaseException):
            self.stop.set()
            raise done
        arms, _ = self.in_flight.pop(done.block)
        cid = str(self.base.campaign["campaign_id"])
        if done.complete:
            self.outcomes.extend(_join(self.exp_dir, done.block, done.runs))
            _close_block(self._for_slot(done.slot, self.exp_dir), done.block)  # campaign.json: the machine's blocks
            self.free.append(done.slot)
            self.display.log(f"block {done.block} done on node {done.slot.name}")
        elif done.slot.executor.lost:
            archived = _set_aside(self.exp_dir, done.block, cid)
            self.display.log(
                f"block {done.block}: {done.slot.executor.lost}; its runs are moved to {archived} and the block "
                "is redone whole on another node"
            )
            self.redo.append((done.block, arms))  # the lost node's slot is not given back
        elif not self.stop.is_set():
            # A run ended unfinished on a node still there (it cannot be kept): redo the block, at most
            # MAX_REDOS times; after that no block is handed out and the campaign stops interrupted.
            _set_aside(self.exp_dir, done.block, cid)
            self.redos[done.block] = self.redos.get(done.block, 0) + 1
            if self.redos[done.block] > MAX_REDOS:
                self.display.log(f"block {done.block} ended unfinished {self.redos[done.block]} times: no more blocks")
                self.handing = False
                self.unfinished = True
            else:
                self.redo.append((done.block, arms))
            self.free.append(done.slot)

    def _for_slot(self, slot: Slot, exp_dir: Path) -> _Experiment:
        """The experiment as the runs of one slot see it: its node's executor, its display, and the
        folder its runs go in (a block's in-flight folder, or the experiment's)."""
        return replace(
            self.base,
            exp_dir=exp_dir,
            executor=slot.executor,
            executor_info=dict(slot.info),
            display=self.displays[id(slot)],
            machine_id=fingerprint_id(self.machines[id(slot)]),
        )

    def _profile(self, slot: Slot) -> None:
        exp = self._for_slot(slot, self.exp_dir)
        for arm in self.plan.profile_arms:
            if self.stop.is_set() or slot.executor.lost:
                return
            self.outcomes.append(_run_one(arm, 1, vocab.PROFILE, exp))


def _join(exp_dir: Path, block: int, runs: Sequence[RunOutcome]) -> list[RunOutcome]:
    """Move a complete block's run folders into the experiment (a rename each, on one filesystem)."""
    staged = staging_dir(exp_dir, block)
    out = []
    for r in runs:
        target = exp_dir / r.arm / str(block)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(r.path, target)  # target never exists: block numbers are new, a redone block was never joined
        out.append(replace(r, path=target))
    shutil.rmtree(staged, ignore_errors=True)
    with contextlib.suppress(OSError):
        staged.parent.rmdir()  # .blocks/ when no other block is in flight
    return out


def _set_aside(exp_dir: Path, block: int, campaign_id: str) -> Path:
    """Move a block in flight whole under archive/<campaign>/, each run as `<arm>-<block>` as the
    runner archives a run it redoes (kept there, never compared); returns the archive folder."""
    staged = staging_dir(exp_dir, block)
    where = Path(exp_dir) / layout.ARCHIVE / campaign_id
    for arm, rep, run_dir in layout.iter_runs(staged):
        where = move_aside(run_dir, exp_dir, campaign_id, f"{arm}-{rep}").parent
    shutil.rmtree(staged, ignore_errors=True)
    return where


def set_aside_unfinished(
    exp_dir: Path,
    campaign_id: str,
    stop_orphan: Callable[[Mapping[str, Any] | None], bool],
    log: Callable[[str], None],
) -> None:
    """Before handing out blocks: every block a stopped or dead runner left unfinished moves whole
    under archive/, so that the analysis sees only whole blocks and the block is redone. A run still marked running has its workload stopped first (`stop_orphan`)."""
    staged = Path(exp_dir) / IN_FLIGHT
    if staged.is_dir():
        for block_dir in sorted(staged.iterdir()):
            for _, _, run_dir in layout.iter_runs(block_dir):
                _stop_if_running(run_dir, stop_orphan)
            if block_dir.name.isdigit():
                where = _set_aside(exp_dir, int(block_dir.name), campaign_id)
                log(f"block {block_dir.name} was left unfinished: its runs are moved to {where}; it is redone")
        shutil.rmtree(staged, ignore_errors=True)
    for rep, runs in sorted(blocks.formal_blocks(exp_dir).items()):
        if all((m := load_manifest(run_dir)) is not None and m.status in FINAL_STATUSES for _, run_dir in runs):
            continue
        for arm, run_dir in runs:
            _stop_if_running(run_dir, stop_orphan)
            move_aside(run_dir, exp_dir, campaign_id, f"{arm}-{rep}")
        log(f"block {rep} was left unfinished: its runs are moved under archive/; it is redone")


def _stop_if_running(run_dir: Path, stop_orphan: Callable[[Mapping[str, Any] | None], bool]) -> None:
    m = load_manifest(run_dir)
    if m is not None and m.status == vocab.Status.RUNNING:
        stop_orphan(m.process)
