"""The experiment record: the spec as run (`experiment.toml`) and how it was loaded (`experiment.json`)."""

from __future__ import annotations

import hashlib
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from reportgen.errors import UserError
from reportgen.specfile import Spec, parse_spec
from reportgen.specfile.model import window_toml
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


def amend_windows(
    exp_dir: Path, *, warmup_steps: int, windows: Sequence[tuple[str, int, int]], reason: str, utc: str
) -> Spec:
    """Declare a campaign's windows anew in its stored spec (runs/<experiment>/experiment.toml):
    the `warmup_steps` and `windows` lines of the [analysis] table the campaign ran with (the
    profile's when it restates it) are replaced, the rest of the file is kept byte for byte, and the
    amendment is recorded with its reason. Returns the amended spec; UserError when the table cannot
    be found or the result does not read back as those windows."""
    exp_dir = Path(exp_dir)
    old_spec = read_spec(exp_dir)
    path = exp_dir / EXPERIMENT_SPEC
    text = path.read_text(encoding="utf-8")
    header = old_spec.section("analysis")
    new_text = replace_windows(text, header, warmup_steps, windows, source=path)
    record = load_experiment_record(exp_dir)
    profile = record.profile if record else old_spec.profile
    new_spec = parse_spec(new_text, source=path, profile=profile, check_files=False)
    want = [(w.name, w.start, w.end) for w in new_spec.analysis.windows]
    if new_spec.analysis.warmup_steps != warmup_steps or want != [tuple(w) for w in windows]:
        raise UserError(f"{path}: the amended {header} table does not read back as the windows asked for")
    old_w = [f"{w.name} {w.start}-{w.end}" for w in old_spec.analysis.windows]
    new_w = [f"{n} {s}-{e}" for n, s, e in want]
    changed = {
        f"{header.strip('[]')}.windows": (", ".join(old_w), ", ".join(new_w)),
        f"{header.strip('[]')}.warmup_steps": (old_spec.analysis.warmup_steps, warmup_steps),
    }
    data = new_text.encode("utf-8")
    kept = record.to_dict() if record is not None else spec_record(new_spec, data)
    kept["spec_sha256"] = hashlib.sha256(data).hexdigest()  # where it came from (source_path) stays as run
    kept["amendments"] = [
        *(a.model_dump(exclude_unset=True) for a in (record.amendments if record is not None else [])),
        {
            "utc": utc,
            "previous_spec_sha256": record.spec_sha256 if record is not None else None,
            "changed": {k: list(v) for k, v in changed.items()},
            "looks_taken": [],
            "reason": reason,
        },
    ]
    atomic.write_bytes(path, data)
    ExperimentRecord.create(kept).write(exp_dir / EXPERIMENT_RECORD)
    return new_spec


def replace_windows(
    text: str, header: str, warmup_steps: int, windows: Sequence[tuple[str, int, int]], *, source: Path
) -> str:
    """`text` (a spec's TOML) with the `warmup_steps` and `windows` keys of the table `header`
    ("[analysis]", "[profiles.gpu.analysis]") replaced by the given ones, where the first of them
    stood (right under the header when neither did); every other line is kept as it was."""
    lines = text.splitlines(keepends=True)
    try:
        top = next(i for i, line in enumerate(lines) if line.strip() == header)
    except StopIteration:
        raise UserError(f"{source}: no {header} table to declare the windows in") from None
    end = next((i for i in range(top + 1, len(lines)) if lines[i].lstrip().startswith("[")), len(lines))
    spelled = ", ".join(window_toml(*w) for w in windows)
    new = [f"warmup_steps = {warmup_steps}\n", f"windows = [{spelled}]\n"]
    body: list[str] = []
    placed = False
    depth = 0  # open brackets of a `windows` array being skipped
    for line in lines[top + 1 : end]:
        if depth > 0:
            depth += line.count("[") - line.count("]")
            continue
        key = line.split("=", 1)[0].strip() if "=" in line else ""
        if key in ("warmup_steps", "windows"):
            if not placed:
                body += new
                placed = True
            if key == "windows":
                depth = line.count("[") - line.count("]")
            continue
        body.append(line)
    if not placed:
        body = [*new, *body]
    return "".join([*lines[: top + 1], *body, *lines[end:]])


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
