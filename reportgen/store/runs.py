"""Read and write run manifests and the experiment's campaign record (through their models,
store.models). Storage only.

A run's manifest is written first with status `running` and rewritten last with its final
status; a `complete` run is never rewritten (`write_manifest` refuses). Runs that must make way
(a forced rerun, a new campaign, a stale `running` run) are moved under `archive/`, never deleted.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

from reportgen.errors import UserError
from reportgen.store.layout import ARCHIVE, CAMPAIGN, MANIFEST
from reportgen.store.models import Campaign, Manifest

RUN_KIND = Manifest.KIND
CAMPAIGN_KIND = Campaign.KIND


class CompleteRunError(RuntimeError):
    """Refusal to rewrite the manifest of a complete run."""


def load_manifest(run_dir: Path) -> Manifest | None:
    """The run's manifest through its model; None when it is missing or unreadable. A manifest of a
    newer schema than this reportgen reads is refused (UserError)."""
    path = Path(run_dir) / MANIFEST
    try:
        return Manifest.read(path)
    except UserError as exc:
        if "newer than this reportgen" in exc.message:
            raise
        return None


def read_manifest(run_dir: Path) -> dict[str, Any] | None:
    """`load_manifest` as a plain dict (the keys as written), for code that edits and writes it back."""
    manifest = load_manifest(run_dir)
    return manifest.to_dict() if manifest is not None else None


def write_manifest(run_dir: Path, manifest: dict[str, Any]) -> Path:
    run_dir = Path(run_dir)
    current = load_manifest(run_dir)
    if current is not None and current.complete:
        raise CompleteRunError(f"{run_dir / MANIFEST} is complete and is never rewritten")
    return Manifest.create(manifest, str(run_dir / MANIFEST)).write(run_dir / MANIFEST)


def load_campaign(exp_dir: Path) -> Campaign | None:
    """The experiment's campaign.json through its model, or None when there is none."""
    return Campaign.read(Path(exp_dir) / CAMPAIGN)


def read_campaign(exp_dir: Path) -> dict[str, Any] | None:
    campaign = load_campaign(exp_dir)
    return campaign.to_dict() if campaign is not None else None


def write_campaign(
    exp_dir: Path,
    *,
    fingerprint: dict[str, Any],
    fingerprint_id: str,
    class_id: str | None = None,
    executor: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A new campaign, started by the machine `fingerprint_id` (its first machine), pinned to its class."""
    now = utc_now()
    doc: dict[str, Any] = {
        "campaign_id": time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()),
        "fingerprint_id": fingerprint_id,
        "fingerprint": fingerprint,
        "class_id": class_id,
        "started_utc": now,
    }
    if executor:  # where the campaign's runs execute when it is not this machine (a Ray node)
        doc["executor"] = executor
    doc["machines"] = [_machine_entry(fingerprint, fingerprint_id, now, [])]
    campaign = Campaign.create(doc)
    campaign.write(Path(exp_dir) / CAMPAIGN)
    return campaign.to_dict()


def _machine_entry(fingerprint: dict[str, Any], fingerprint_id: str, utc: str, blocks: list[int]) -> dict[str, Any]:
    return {
        "fingerprint_id": fingerprint_id,
        "hostname": fingerprint.get("hostname"),
        "first_seen_utc": utc,
        "blocks": blocks,
    }


def _update_campaign(exp_dir: Path, change: Any) -> dict[str, Any]:
    """Read campaign.json, apply `change` to its dict, write it back (atomically; the runner holds the
    campaign's lock). A version-1 file is written back as the current version."""
    campaign = load_campaign(exp_dir)
    if campaign is None:
        raise UserError(f"{Path(exp_dir) / CAMPAIGN}: missing; the campaign's record is gone")
    doc = change(campaign.to_dict())
    doc["schema_version"] = Campaign.SCHEMA_VERSION
    out = Campaign.create(doc, str(Path(exp_dir) / CAMPAIGN))
    out.write(Path(exp_dir) / CAMPAIGN)
    return out.to_dict()


def join_campaign(
    exp_dir: Path, *, fingerprint: dict[str, Any], fingerprint_id: str, legacy_blocks: list[int] | None = None
) -> dict[str, Any]:
    """The campaign with the machine `fingerprint_id` in its `machines`: added, first seen now, when
    new (the file is written); else the campaign as it is (nothing written, a version-1 file stays
    one). `legacy_blocks`: the finished blocks of a machine whose blocks were not recorded (a
    version-1 file), as the runner read them from the runs: recorded when another machine joins."""
    campaign = load_campaign(exp_dir)
    if campaign is not None and campaign.machine(fingerprint_id) is not None:
        return campaign.to_dict()

    def change(doc: dict[str, Any]) -> dict[str, Any]:
        machines = [dict(m) for m in doc.get("machines") or []]
        for m in machines:
            if m.get("blocks") is None:
                m["blocks"] = list(legacy_blocks or [])
        if not any(m["fingerprint_id"] == fingerprint_id for m in machines):
            machines.append(_machine_entry(fingerprint, fingerprint_id, utc_now(), []))
        return {**doc, "machines": machines}

    return _update_campaign(exp_dir, change)


def record_block(exp_dir: Path, *, fingerprint_id: str, block: int) -> dict[str, Any]:
    """The campaign with `block` recorded as finished by the machine `fingerprint_id` (which joined).
    Written only when that changes it."""
    campaign = load_campaign(exp_dir)
    me = campaign.machine(fingerprint_id) if campaign is not None else None
    if campaign is not None and (me is None or me.blocks is None or block in me.blocks):
        return campaign.to_dict()

    def change(doc: dict[str, Any]) -> dict[str, Any]:
        machines = [dict(m) for m in doc.get("machines") or []]
        for m in machines:  # a machine whose blocks were not recorded (version 1) keeps them so
            if m["fingerprint_id"] == fingerprint_id and m.get("blocks") is not None and block not in m["blocks"]:
                m["blocks"] = [*m["blocks"], block]
        return {**doc, "machines": machines}

    return _update_campaign(exp_dir, change)


def archive_path(exp_dir: Path, campaign_id: str, name: str) -> Path:
    """A fresh folder under archive/<campaign>/ for `name` (suffix added if taken)."""
    base = Path(exp_dir) / ARCHIVE / campaign_id
    target = base / name
    n = 1
    while target.exists():
        n += 1
        target = base / f"{name}.{n}"
    return target


def move_aside(src: Path, exp_dir: Path, campaign_id: str, name: str) -> Path:
    target = archive_path(exp_dir, campaign_id, name)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(src), str(target))
    return target


def utc_now() -> str:
    """Now, as a manifest records a time, to the millisecond ("2026-12-01T10:00:00.123Z";
    store.run.parse_utc reads it back, and whole seconds, as older runs hold them): two runs started
    within one second stay ordered, which the interleaving check (analysis/interleaving.py) needs."""
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1000):03d}Z"
