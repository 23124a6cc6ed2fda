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
    executor: dict[str, Any] | None = None,
) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "campaign_id": time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()),
        "fingerprint_id": fingerprint_id,
        "fingerprint": fingerprint,
        "started_utc": utc_now(),
    }
    if executor:  # where the campaign's runs execute when it is not this machine (a Ray node)
        doc["executor"] = executor
    campaign = Campaign.create(doc)
    campaign.write(Path(exp_dir) / CAMPAIGN)
    return campaign.to_dict()


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
