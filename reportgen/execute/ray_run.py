"""`reportgen run` on a Ray cluster (execute stage): every experiment on its own node, at once.

Same-machine rule: an experiment takes one node (preferring the node its campaign already
ran on), every arm and repeat is pinned to it with the label selector `ray.io/node-id`, and
the campaign pins that node's fingerprint. Experiments run in this process take distinct
nodes; one waits while all fitting nodes are taken. If the node dies mid-run, the run is
marked interrupted and `run_experiments` reruns every arm of that experiment together on
another node as a new campaign (the old one is archived, never mixed).

A sequential campaign (`[run] until = "decided"`) runs in blocks instead (reportgen.execute.parallel):
the claimed node and every other free node of its class each run one block at a time, and a node
lost mid-block has only that block redone, whole, on another node.

The parts: the cluster (ray_cluster.py), claiming a node (ray_claim.py), the executor and its
jobs (ray_jobs.py), the job log (ray_log.py) and the wrapper on the node (ray_node.py). `RAY`
is the executor kind registered as "ray" (reportgen.execute.executor.BUILT_IN).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from reportgen.capture.fingerprint import class_id
from reportgen.execute.executor import ExecutorKind, ExperimentOutcome, NextBlock, RunOptions
from reportgen.execute.parallel import BlockSource, Slot, run_blocks
from reportgen.execute.progress import ProgressDisplay
from reportgen.execute.ray_claim import NodeClaim, NodePool, placement, release_claim
from reportgen.execute.ray_cluster import connect, node_alive, resolve_address
from reportgen.execute.ray_jobs import RayExecutor
from reportgen.execute.runner import run_plan
from reportgen.execute.signals import stop_on_signals
from reportgen.plan.arms import Plan
from reportgen.store.runs import read_campaign

MAX_NODE_ATTEMPTS = 2


def ray_executor(
    plan: Plan,
    *,
    address: str | None,
    runs_root: Path,
    pool: NodePool | None = None,
    excluded: set[str] | None = None,
    stop: threading.Event | None = None,
    options: RunOptions | None = None,
    node_lost: bool = False,
    blocks: bool = False,
) -> tuple[RayExecutor | None, dict[str, Any], bool]:
    """An executor pinned to one claimed node for `plan`'s experiment, the executor block to record,
    and whether the campaign moves to that node (its own node died: a new campaign of the same
    class). Prefers the node the campaign ran on; (None, {}, False) if `stop` was set while waiting.
    A campaign run in `blocks` takes any node of its class and never moves (ray_claim.placement)."""
    address = resolve_address(plan, address)
    client = connect(address)
    pool = pool or NodePool(address, client)
    spec = plan.spec
    opts = options or RunOptions(runs_root=runs_root)
    campaign = None if opts.new_campaign else read_campaign(Path(runs_root) / spec.name)
    preferred = ((campaign or {}).get("executor") or {}).get("node_id")
    # `node_lost`: this runner saw the campaign's node die (the cluster may not say so yet).
    gone = preferred is not None and (node_lost or node_alive(address, preferred) is False)
    moves: dict[str, bool] = {}

    def accept(claim: NodeClaim) -> str | None:
        why, moves[claim.job_id] = placement(campaign, claim.probe, campaign_node_gone=gone, blocks=blocks)
        return why

    claim = pool.acquire(
        plan,
        preferred=preferred,
        excluded=set(excluded or ()),
        stop=stop or threading.Event(),
        accept=accept,
        machine=not opts.share_machine,
    )
    if claim is None:
        return None, {}, False
    node = claim.node
    executor, info = _claimed_executor(plan, claim, address, client)
    moved = moves.get(claim.job_id, False)
    if moved:
        sys.stderr.write(
            f"[{spec.name}] the campaign's node {str(preferred)[:12]} has left the cluster: moving it to node "
            f"{node.ip} ({node.node_id[:12]}) of the same class as a new campaign; its runs are archived (runs of "
            "two machines are never compared)\n"
        )
    return executor, info, moved


def _claimed_executor(plan: Plan, claim: NodeClaim, address: str, client: Any) -> tuple[RayExecutor, dict[str, Any]]:
    """The executor pinned to a claimed node, and the executor block its manifests record."""
    node, probe = claim.node, claim.probe
    executor = RayExecutor(plan, address=address, node=node, fingerprint=probe["fingerprint"], client=client)
    executor.claim = claim
    return executor, {"address": address, **node.record(), "hostname": probe.get("hostname")}


def _in_blocks(plan: Plan, options: RunOptions, next_block_for: object) -> bool:
    """Whether the experiment runs as blocks on as many nodes as are free: a sequential campaign."""
    return next_block_for is not None and plan.spec.run.until == "decided" and not options.baseline_only


def _run_in_blocks(
    plan: Plan,
    options: RunOptions,
    first: RayExecutor,
    info: dict[str, Any],
    *,
    pool: NodePool,
    source: BlockSource,
    display: ProgressDisplay,
    stop: threading.Event,
    excluded: set[str],
) -> tuple[ExperimentOutcome, set[str]]:
    """A sequential campaign on the claimed node and every other free node of its class (at most
    max_pairs nodes), a block per node at a time (reportgen.execute.parallel); every claim released
    at the end. Returns the outcome and the nodes lost on the way."""
    wanted = class_id(first.fingerprint or {})

    def same_class(claim: NodeClaim) -> str | None:
        if class_id(claim.probe.get("fingerprint") or {}) == wanted:
            return None
        return "not of the campaign's class (other hardware, driver or image)"

    executors = [first]
    try:
        more = pool.claim_more(
            plan,
            excluded=excluded | {first.node.node_id},
            accept=same_class,
            machine=not options.share_machine,
            most=plan.spec.run.max_pairs - 1,
        )
        slots = [Slot(first, info, _node_name(first))]
        for claim in more:
            executor, more_info = _claimed_executor(plan, claim, first.address, first.client)
            executors.append(executor)
            slots.append(Slot(executor, more_info, _node_name(executor)))
        display.log(f"campaign: blocks on {len(slots)} node(s) at once: {', '.join(s.name for s in slots)}")
        outcome = run_blocks(
            plan,
            options,
            slots,
            source,
            display=display,
            stop=stop,
            display_for_slot=lambda slot: ProgressDisplay(display.console, live=False),
        )
    finally:
        for executor in executors:
            if executor.claim is not None:
                release_claim(executor.client, executor.claim, wait=executor.lost is None)
            pool.release(executor.node)
    return outcome, {e.node.node_id for e in executors if e.lost}


def _node_name(executor: RayExecutor) -> str:
    return f"{executor.node.ip} ({executor.node.node_id[:12]})"


def run_experiments(
    plans: Sequence[Plan],
    options: RunOptions,
    *,
    address: str | None,
    display_for: Callable[[Plan], ProgressDisplay],
    stop: threading.Event | None = None,
    next_block_for: Callable[[Plan, ProgressDisplay], NextBlock | None] | None = None,
) -> list[ExperimentOutcome | None]:
    """Run each plan on its own node, in parallel (one thread per experiment); outcomes in plan order.

    A node lost mid-experiment reruns that experiment's arms together on another node as a new
    campaign (at most MAX_NODE_ATTEMPTS nodes in all). Ctrl-C/SIGTERM stops every job.
    `next_block_for(plan, display)` gives a sequential campaign's schedule (None: the fixed order);
    every run of a campaign, so both runs of each pair, goes to its one node.
    """
    stop = stop or threading.Event()
    address = resolve_address(plans[0], address)
    pool = NodePool(address, connect(address))
    pool.first_claims_pending = len(plans)  # extra nodes for blocks leave one free for each of these
    outcomes: list[ExperimentOutcome | None] = [None] * len(plans)
    errors: list[BaseException] = []

    def one(i: int, plan: Plan) -> None:
        excluded: set[str] = set()
        opts = options
        blocks = _in_blocks(plan, options, next_block_for)
        first = True
        try:
            for _ in range(MAX_NODE_ATTEMPTS):
                try:
                    executor, info, moved = ray_executor(
                        plan,
                        address=address,
                        runs_root=options.runs_root,
                        pool=pool,
                        excluded=excluded,
                        stop=stop,
                        options=opts,
                        node_lost=bool(excluded),
                        blocks=blocks,
                    )
                finally:
                    if first:
                        pool.first_claim_done()
                        first = False
                if executor is None:
                    return
                if blocks:
                    display = display_for(plan)
                    source = next_block_for(plan, display) if next_block_for else None
                    if isinstance(source, BlockSource):
                        outcomes[i], lost = _run_in_blocks(
                            plan,
                            opts,
                            executor,
                            info,
                            pool=pool,
                            source=source,
                            display=display,
                            stop=stop,
                            excluded=excluded,
                        )
                        if not lost or stop.is_set() or not outcomes[i].interrupted:
                            return
                        sys.stderr.write(f"[{plan.spec.name}] every node of its blocks was lost; resuming on others\n")
                        excluded |= lost
                        opts = replace(options, new_campaign=False, rerun=())
                        continue
                try:
                    display = display_for(plan)
                    outcomes[i] = run_plan(
                        plan,
                        replace(opts, new_campaign=opts.new_campaign or moved),
                        display=display,
                        executor=executor,
                        executor_info=info,
                        stop_event=stop,
                        next_block=next_block_for(plan, display) if next_block_for else None,
                    )
                finally:
                    if executor.claim is not None:
                        release_claim(executor.client, executor.claim, wait=executor.lost is None)
                    pool.release(executor.node)
                if executor.lost is None:
                    return
                sys.stderr.write(f"[{plan.spec.name}] {executor.lost}; resuming on another node of its class\n")
                excluded.add(executor.node.node_id)
                # The user's --new-campaign and --rerun are done; a resume keeps what finished.
                opts = replace(options, new_campaign=False, rerun=())
        except BaseException as exc:  # reported by the caller's thread
            errors.append(exc)
            stop.set()

    threads = [threading.Thread(target=one, args=(i, p), name=f"reportgen-{p.spec.name}") for i, p in enumerate(plans)]
    with stop_on_signals(stop):
        for t in threads:
            t.start()
        for t in threads:
            while t.is_alive():
                t.join(timeout=0.2)
    if errors:
        raise errors[0]
    return outcomes


RAY = ExecutorKind(
    "ray",
    run_experiments,
    on_this_machine=False,
    parallel=True,
    summary="a Ray job per run, one node of the cluster per experiment (docs/ray.md)",
)
