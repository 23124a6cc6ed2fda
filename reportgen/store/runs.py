"""Read and write run manifests and the experiment's campaign record. Storage only.

A run's manifest is written first with status `running` and rewritten last with its final
status; a `complete` run is never rewritten (`write_manifest` refuses). Runs that must make way
(a forced rerun, a new campaign, a stale `running` run) are moved under `archive/`, never deleted.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

from reportgen.store import atomic
from reportgen.store.layout import ARCHIVE, CAMPAIGN, MANIFEST, SCHEMA_VERSION
from reportgen.vocab import Status

RUN_KIND = "reportgen.run"
CAMPAIGN_KIND = "reportgen.campaign"


class CompleteRunError(RuntimeError):
    """Refusal to rewrite the manifest of a complete run."""


def read_manifest(run_dir: Path) -> dict[str, Any] | None:
    path = Path(run_dir) / MANIFEST
    if not path.is_file():
        return None
    try:
        data = atomic.read_json(path)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_manifest(run_dir: Path, manifest: dict[str, Any]) -> Path:
    run_dir = Path(run_dir)
    current = read_manifest(run_dir)
    if current is not None and current.get("status") == Status.COMPLETE:
        raise CompleteRunError(f"{run_dir / MANIFEST} is complete and is never rewritten")
    doc = {"schema_version": SCHEMA_VERSION, "kind": RUN_KIND, **manifest}
    return atomic.write_json(run_dir / MANIFEST, doc)


def read_campaign(exp_dir: Path) -> dict[str, Any] | None:
    path = Path(exp_dir) / CAMPAIGN
    return atomic.read_json(path) if path.is_file() else None


def write_campaign(
    exp_dir: Path,
    *,
    fingerprint: dict[str, Any],
    fingerprint_id: str,
    executor: dict[str, Any] | None = None,
) -> dict[str, Any]:
    doc = {
        "schema_version": SCHEMA_VERSION,
        "kind": CAMPAIGN_KIND,
        "campaign_id": time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()),
        "fingerprint_id": fingerprint_id,
        "fingerprint": fingerprint,
        "started_utc": utc_now(),
    }
    if executor:  # where the campaign's runs execute when it is not this machine (a Ray node)
        doc["executor"] = executor
    atomic.write_json(Path(exp_dir) / CAMPAIGN, doc)
    return doc


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
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
