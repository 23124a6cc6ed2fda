"""The experiment record: the spec as run (`experiment.toml`) and how it was loaded (`experiment.json`)."""

from __future__ import annotations

import hashlib
import tomllib
from pathlib import Path
from typing import Any

from reportgen.errors import UserError
from reportgen.specfile import Spec, parse_spec
from reportgen.store import atomic
from reportgen.store.layout import EXPERIMENT_SPEC
from reportgen.store.models import ExperimentRecord

EXPERIMENT_RECORD = "experiment.json"


def spec_record(spec: Spec, source_bytes: bytes) -> dict[str, Any]:
    return ExperimentRecord.create(
        {
            "name": spec.name,
            "profile": spec.profile,
            "source_path": spec.source_path,
            "recipe_dir": spec.source_dir,
            "spec_sha256": hashlib.sha256(source_bytes).hexdigest(),
        }
    ).to_dict()


def write_experiment(exp_dir: Path, spec: Spec, source_bytes: bytes) -> None:
    """Record the spec as run; the record is written after the spec bytes."""
    atomic.write_bytes(Path(exp_dir) / EXPERIMENT_SPEC, source_bytes)
    ExperimentRecord.create(spec_record(spec, source_bytes)).write(Path(exp_dir) / EXPERIMENT_RECORD)


def amend_experiment(
    exp_dir: Path, spec: Spec, source_bytes: bytes, *, changed: dict[str, Any], looks_taken: list[int], utc: str
) -> None:
    """Record a resized campaign: the new spec replaces the one run so far, and the record keeps
    every amendment (what changed, and the pair counts the campaign had already been looked at,
    which the analysis' repeated interval must still cover)."""
    exp_dir = Path(exp_dir)
    old = load_experiment_record(exp_dir)
    record = spec_record(spec, source_bytes)
    record["amendments"] = [
        *(a.model_dump(exclude_unset=True) for a in (old.amendments if old is not None else [])),
        {
            "utc": utc,
            "previous_spec_sha256": old.spec_sha256 if old is not None else None,
            "changed": {k: list(v) for k, v in changed.items()},
            "looks_taken": looks_taken,
        },
    ]
    atomic.write_bytes(exp_dir / EXPERIMENT_SPEC, source_bytes)
    ExperimentRecord.create(record).write(exp_dir / EXPERIMENT_RECORD)


def prior_looks(record: ExperimentRecord | None) -> list[int]:
    """Pair counts at which earlier designs of the campaign could already decide."""
    looks = {int(n) for a in (record.amendments if record is not None else []) for n in a.looks_taken}
    return sorted(looks)


def load_experiment_record(exp_dir: Path) -> ExperimentRecord | None:
    """experiment.json through its model, or None when there is none (a folder made by ingest)."""
    return ExperimentRecord.read(Path(exp_dir) / EXPERIMENT_RECORD)


def read_experiment_record(exp_dir: Path) -> dict[str, Any] | None:
    record = load_experiment_record(exp_dir)
    return record.to_dict() if record is not None else None


def read_spec(exp_dir: Path) -> Spec:
    """The spec an experiment folder was run with (profile overlay applied)."""
    exp_dir = Path(exp_dir)
    path = exp_dir / EXPERIMENT_SPEC
    if not path.is_file():
        raise UserError(
            f"{exp_dir}: not an experiment folder (no {EXPERIMENT_SPEC}); run `reportgen ls` to list experiments"
        )
    text = path.read_text(encoding="utf-8")
    record = load_experiment_record(exp_dir)
    profile = record.profile if record else _profile_from_folder(exp_dir.name, text)
    spec = parse_spec(text, source=path, profile=profile, check_files=False)
    if record and record.name and record.name != spec.name:
        spec = spec.model_copy(update={"name": record.name})  # run with --name
    return spec


def _profile_from_folder(folder: str, text: str) -> str | None:
    """Without experiment.json (a folder made by `reportgen ingest`), the folder name tells:
    a profile that does not rename the experiment is applied as `<name>-<profile>`."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None  # parse_spec reports it, naming the file
    profiles = raw.get("profiles")
    if not isinstance(profiles, dict):
        profiles = {}
    for name, overlay in profiles.items():
        if folder == f"{raw.get('name')}-{name}" and isinstance(overlay, dict) and "name" not in overlay:
            return str(name)
    return None
