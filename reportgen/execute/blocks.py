"""Blocks of a campaign on machines of one class (execute stage, beside the runner).

A block is one pair: the baseline and each candidate still undecided, back to back on one machine
(`plan.arms.block_order`); block k holds the runs of repeat k. Pairs cancel what a machine adds
to both arms, so a campaign's blocks may come from several machines, as long as the machines are
interchangeable hardware (one `capture.fingerprint.class_id`) and no block holds runs of two
machines. This module says which machine may join a campaign (`machine_refusal`), which blocks are
finished (campaign.json records each block a machine finished), and sets aside a block left
unfinished by another machine so that it is redone whole here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from reportgen import vocab
from reportgen.capture.fingerprint import class_fields, class_id, fingerprint_id
from reportgen.store import layout
from reportgen.store.models import Campaign
from reportgen.store.runs import load_manifest, move_aside
from reportgen.vocab import FINAL_STATUSES

# What `class_fields` holds, in words, for a refusal that names what differs.
_FIELD_WORDS = {
    "cpu_model": "CPU model",
    "cpu_count": "CPU count",
    "mem_total_gib": "memory",
    "gpus": "GPU model and count",
    "driver": "driver",
    "image_digest": "image",
}


def machine_refusal(campaign: Mapping[str, Any], fingerprint: Mapping[str, Any], *, pinned: bool = False) -> str | None:
    """Why the machine `fingerprint` may not add blocks to `campaign` (campaign.json as a dict), or
    None when it may: a machine of another class is refused; with `pinned` (runs made in the
    sequential order, where a pair's two runs are far apart) any other machine is."""
    here_id = fingerprint_id(fingerprint)
    theirs_id = str(campaign.get("fingerprint_id") or "?")
    if here_id == theirs_id:
        return None
    started = campaign.get("fingerprint") or {}
    theirs = campaign.get("class_id") or (class_id(started) if started else "?")
    ours = class_id(fingerprint)
    if theirs != ours:
        differ = (
            [w for k, w in _FIELD_WORDS.items() if class_fields(started).get(k) != class_fields(fingerprint).get(k)]
            if started
            else []
        )
        what = ", ".join(differ) if differ else "GPU model and count, driver, CPU model and count, memory or image"
        return (
            f"its runs were made on another machine class (class {str(theirs)[:12]}, this machine's {ours[:12]}: "
            f"{what} differ); arms compared must run on one machine class"
        )
    if pinned:
        return (
            f"its runs were made on another machine (fingerprint {theirs_id[:12]}, this machine {here_id[:12]}) and "
            "[run] order = 'sequential' pairs runs made far apart: such a campaign stays on one machine "
            "(order = 'interleaved' makes blocks any machine of the class may add)"
        )
    return None


def formal_blocks(exp_dir: Path) -> dict[int, list[tuple[str, Path]]]:
    """Block -> (arm, run folder) of its formal runs on disk."""
    out: dict[int, list[tuple[str, Path]]] = {}
    for arm, repeat, path in layout.iter_runs(exp_dir):
        if not vocab.is_profile_arm(arm):
            out.setdefault(repeat, []).append((arm, path))
    return out


def ended_blocks(exp_dir: Path, machine: str | None = None) -> list[int]:
    """Blocks whose every formal run ended (complete or failed), on `machine` when given: what a
    version-1 campaign, which did not record its blocks, finished."""
    out = []
    for block, runs in sorted(formal_blocks(exp_dir).items()):
        manifests = [load_manifest(path) for _, path in runs]
        if all(
            m is not None and m.status in FINAL_STATUSES and (machine is None or m.fingerprint_id == machine)
            for m in manifests
        ):
            out.append(block)
    return out


def finished_blocks(exp_dir: Path, campaign: Mapping[str, Any]) -> dict[int, list[str]]:
    """Finished block -> the formal arms it holds: the blocks campaign.json records, as on disk."""
    recorded = Campaign.parse(dict(campaign), str(Path(exp_dir) / layout.CAMPAIGN)).blocks_of()
    on_disk = formal_blocks(exp_dir)
    return {b: [arm for arm, _ in on_disk[b]] for b in sorted(recorded) if b in on_disk}


def set_aside_unfinished(exp_dir: Path, campaign: Mapping[str, Any], machine: str) -> list[str]:
    """Move every run of each unfinished block that another machine started under archive/<campaign>/,
    so that the block is redone whole on `machine` (a block never pairs runs of two machines); what
    was moved, in words. An unfinished block that only `machine` worked on stays: this machine
    finishes it (its finished runs kept, the interrupted one redone)."""
    finished = finished_blocks(exp_dir, campaign)
    cid = str(campaign.get("campaign_id", "unknown"))
    said: list[str] = []
    for block, runs in sorted(formal_blocks(exp_dir).items()):
        if block in finished:
            continue
        others = {m.fingerprint_id for _, path in runs if (m := load_manifest(path)) is not None} - {machine}
        if not others:
            continue
        for arm, path in runs:
            move_aside(path, exp_dir, cid, f"{arm}-{block}")
        names = ", ".join(f"{arm}/{block}" for arm, _ in runs)
        said.append(
            f"block {block} was left unfinished on machine {', '.join(sorted(str(o)[:12] for o in others))}: "
            f"its runs ({names}) moved to archive/{cid}/, the block is redone whole here"
        )
    return said


def rerun_refusal(exp_dir: Path, rerun: Sequence[str], machine: str) -> str | None:
    """Why `--rerun` of the arms `rerun` may not run on `machine`, or None: a block whose other runs
    were made on another machine would pair runs of two machines."""
    for block, runs in sorted(formal_blocks(exp_dir).items()):
        if not any(arm in rerun for arm, _ in runs):
            continue
        others = {
            str(m.fingerprint_id)
            for arm, path in runs
            if arm not in rerun and (m := load_manifest(path)) is not None and m.fingerprint_id != machine
        }
        if others:
            return (
                f"--rerun {', '.join(rerun)}: block {block}'s other runs were made on machine "
                f"{', '.join(sorted(o[:12] for o in others))}, and a block never pairs runs of two machines; rerun "
                "on that machine, or pass --new-campaign"
            )
    return None


def block_is_whole(exp_dir: Path, block: int, machine: str) -> bool:
    """Whether every formal run of `block` ended (complete or failed) on `machine`: the block is finished."""
    runs = formal_blocks(exp_dir).get(block, [])
    manifests = [load_manifest(path) for _, path in runs]
    return bool(manifests) and all(
        m is not None and m.status in FINAL_STATUSES and m.fingerprint_id == machine for m in manifests
    )
