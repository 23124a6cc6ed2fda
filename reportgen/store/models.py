"""One typed, versioned model per JSON file of a runs/ folder (store stage: the I/O edge).

Every JSON file a run folder holds is read and written through its model here:

| file | model | kind | schema |
|---|---|---|---|
| `<exp>/campaign.json` | `Campaign` | `reportgen.campaign` | 2 (1: one machine, no `machines`) |
| `<exp>/experiment.json` | `ExperimentRecord` | `reportgen.experiment` | 1 |
| `<exp>/revisions.json` | `Revisions` | `reportgen.revisions` | 1 |
| `<run>/manifest.json` | `Manifest` | `reportgen.run` | 1 |
| `<run>/events.json` | `Events` | `reportgen.events` | 1 |
| `<run>/provenance/git.json` | `GitProvenance` | `reportgen.git` | 1 (0: written without a version) |

(`analysis.json` has its own model, `reportgen.analysis.document`.)

The models type the fields code reads and allow the rest (`extra="allow"`): a file written by an
older or newer reportgen must still load. The sections inside a file are typed too (`Section`: a
manifest's `gpu`, `fingerprint`, `ingest`, `invariants` and `hashes`, the events of events.json),
so a reader writes `manifest.ingest.lifecycle.attempts`, never `.get("ingest") or {}`; a section
writes its keys back in its writer's order, so a file read and written back is the same. A file's `schema_version` is checked on read: an older one passes
through one upgrade function per version (`UPGRADES`) up to the current one; a newer one, or a
file that is not the model's kind, is refused with one `UserError` line. Nothing is written
back: an upgrade happens in memory, the file on disk stays as it was recorded.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator

from reportgen.errors import UserError, first_problem
from reportgen.store import atomic
from reportgen.vocab import Status

Number = int | float  # int first: a whole number stays an int, so a file reads and writes back the same

Upgrade = Callable[[dict[str, Any]], dict[str, Any]]


class Section(BaseModel):
    """A typed part of a run-folder file (a manifest's `ingest`, one event of events.json): its known
    keys typed, the others kept as they were (`extra="allow"`). Its fields are declared in the order
    their writer writes them, and `to_dict` gives the keys that were set in that order (the others
    after), so a file read and written back is the same."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    def to_dict(self) -> dict[str, Any]:
        """The section as a plain dict: the keys that were set, in the order they are declared."""
        out: dict[str, Any] = _ordered(self)
        return out


def _ordered(value: Any) -> Any:
    """A model's keys that were set: a file's in the order it gave them (`StoreFile._order`), a section's
    in the order they are declared, the others after; sections within it alike."""
    if isinstance(value, BaseModel):
        declared = [k for k in type(value).model_fields if k in value.model_fields_set]
        keys = [*getattr(value, "_order", []), *declared, *(value.model_extra or {})]
        out: dict[str, Any] = {}
        for key in dict.fromkeys(keys):
            if key in value.model_fields_set or key in (value.model_extra or {}):
                out[key] = _ordered(getattr(value, key))
        return out
    if isinstance(value, list):
        return [_ordered(v) for v in value]
    if isinstance(value, dict):
        return {k: _ordered(v) for k, v in value.items()}
    return value


class StoreFile(BaseModel):
    """A versioned JSON file of runs/. Subclasses set KIND, SCHEMA_VERSION and, for each older
    version v they can still read, UPGRADES[v]: the function that makes a v document a v+1 one."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    KIND: ClassVar[str] = ""
    SCHEMA_VERSION: ClassVar[int] = 1
    # A file written before it carried a schema_version reads as this version (None: refused).
    UNVERSIONED: ClassVar[int | None] = None
    UPGRADES: ClassVar[Mapping[int, Upgrade]] = {}

    schema_version: int = Field(description="Version of this file's format; checked on read.")
    _order: list[str] = PrivateAttr(default_factory=list)  # the keys as the document gave them
    kind: str | None = Field(default=None, description="What the file is (`reportgen.<what>`).")

    @classmethod
    def upgrade(cls, data: dict[str, Any], source: str) -> dict[str, Any]:
        """`data` brought to SCHEMA_VERSION; UserError for a newer or unknown version, another kind."""
        version = data.get("schema_version", cls.UNVERSIONED)
        if isinstance(version, bool) or not isinstance(version, int):
            raise UserError(f"{source}: no schema_version; not a {cls.KIND} file this reportgen can read")
        if version > cls.SCHEMA_VERSION:
            raise UserError(
                f"{source}: schema_version {version} is newer than this reportgen reads ({cls.KIND} "
                f"{cls.SCHEMA_VERSION}); upgrade reportgen"
            )
        kind = data.get("kind")
        if kind is not None and kind != cls.KIND:
            raise UserError(f"{source}: kind {kind!r}, expected {cls.KIND!r}")
        for v in range(version, cls.SCHEMA_VERSION):
            step = cls.UPGRADES.get(v)
            if step is None:
                raise UserError(
                    f"{source}: schema_version {version} is too old for this reportgen ({cls.KIND} "
                    f"{cls.SCHEMA_VERSION}, no migration from {v})"
                )
            data = step(dict(data))
        return data

    @classmethod
    def parse(cls, data: Any, source: str) -> Self:
        """Validate a decoded document (upgraded first); a wrong shape is one UserError line."""
        if not isinstance(data, dict):
            raise UserError(f"{source}: not a {cls.KIND} document (a JSON {type(data).__name__})")
        data = cls.upgrade(data, source)
        try:
            return cls._validated(data)
        except ValidationError as exc:
            raise UserError(f"{source}: {first_problem(exc)}") from exc

    @classmethod
    def from_bytes(cls, data: bytes, source: str) -> Self:
        """Decode and validate a file's bytes; invalid JSON is one UserError line."""
        try:
            decoded = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise UserError(
                f"{source}: not valid JSON ({exc.__class__.__name__}); re-run the stage that writes it"
            ) from exc
        return cls.parse(decoded, source)

    @classmethod
    def read(cls, path: Path) -> Self | None:
        """The file at `path`, or None when there is none."""
        path = Path(path)
        if not path.is_file():
            return None
        return cls.from_bytes(path.read_bytes(), str(path))

    @classmethod
    def create(cls, doc: Mapping[str, Any], source: str = "") -> Self:
        """A new document of the current version from `doc` (kind and version filled in)."""
        data = {"schema_version": cls.SCHEMA_VERSION, "kind": cls.KIND, **doc}
        try:
            return cls._validated(data)
        except ValidationError as exc:
            raise ValueError(f"{source or cls.KIND}: {first_problem(exc)}") from exc

    @classmethod
    def _validated(cls, data: dict[str, Any]) -> Self:
        model = cls.model_validate(data)
        model._order = list(data)
        return model

    def to_dict(self) -> dict[str, Any]:
        """The document as a plain dict: the keys that were set, in the order they were given."""
        dumped = _ordered(self)
        return {k: dumped[k] for k in [*self._order, *dumped] if k in dumped} if self._order else dumped

    def write(self, path: Path) -> Path:
        """Write atomically (store.atomic), the only way these files are written."""
        return atomic.write_json(Path(path), self.to_dict())


# ---------------------------------------------------------------- sections of a run's files


class MachineGpu(Section):
    """One GPU of a machine's fingerprint (capture.fingerprint)."""

    index: int | None = Field(default=None, description="Its index, as NVML numbers it.")
    name: str | None = Field(default=None, description='Its model ("NVIDIA H200").')
    uuid: str | None = Field(default=None, description="Its UUID (`GPU-...`).")
    mem_total_mib: Number | None = Field(default=None, description="Its memory, MiB.")


class PythonInfo(Section):
    version: str | None = Field(default=None, description="The Python version that ran the workload.")
    executable: str | None = Field(default=None, description="Its interpreter.")


class Fingerprint(Section):
    """A machine's facts (capture.fingerprint.machine_fingerprint): what `fingerprint_id` and the
    machine class (`class_id`) are computed from. Empty when none was recorded."""

    hostname: str | None = Field(default=None, description="The host's name.")
    os: str | None = Field(default=None, description="`Linux`, ...")
    kernel: str | None = Field(default=None, description="The kernel release.")
    arch: str | None = Field(default=None, description="`x86_64`, ...")
    cpu_model: str | None = Field(default=None, description="The CPU model.")
    cpu_count: int | None = Field(default=None, description="Logical CPUs.")
    mem_total_bytes: int | None = Field(default=None, description="Main memory.")
    gpus: list[MachineGpu] = Field(default_factory=list, description="The GPUs (none on a CPU machine).")
    driver: str | None = Field(default=None, description="The NVIDIA driver.")
    cuda: str | None = Field(default=None, description="The CUDA version the driver supports.")
    image_digest: str | None = Field(default=None, description="The container image's digest, when known.")
    image_digest_env: str | None = Field(default=None, description="The variable it was read from.")
    python: PythonInfo | None = Field(default=None, description="The workload's Python.")

    def __bool__(self) -> bool:
        return bool(self.model_fields_set or self.model_extra)


class GpuSeen(Section):
    """One GPU the sampler saw (NVML reports every GPU; `visible`: the workload could use it)."""

    index: int | None = Field(default=None, description="NVML's index.")
    uuid: str | None = Field(default=None, description="Its UUID.")
    name: str | None = Field(default=None, description="Its model.")
    mem_total_mib: Number | None = Field(default=None, description="Its memory, MiB.")
    visible: bool | None = Field(default=None, description="Whether CUDA_VISIBLE_DEVICES let the workload use it.")


class GpuSampling(Section):
    """A manifest's `gpu`: what the GPU sampler did (capture.gpu.GpuStatus)."""

    available: bool = Field(default=False, description="Whether GPUs could be sampled.")
    reason: str | None = Field(default=None, description="Why not, when they could not.")
    gpus: list[GpuSeen] = Field(default_factory=list, description="The GPUs seen.")
    samples: int = Field(default=0, description="Rows written: one per GPU per tick.")
    ticks: int | None = Field(default=None, description="Sampling ticks.")
    errors: int | None = Field(default=None, description="Ticks whose read failed (the sampler carried on).")
    last_error: str | None = Field(default=None, description="The last of those errors.")
    cpu_s: Number | None = Field(default=None, description="CPU seconds of the sampler thread.")
    wall_s: Number | None = Field(default=None, description="Wall seconds it ran.")
    host_available: bool | None = Field(default=None, description="Whether host load was sampled too.")
    host_reason: str | None = Field(default=None, description="Why not.")
    host_samples: int | None = Field(default=None, description="Host load rows written.")

    def visible_indices(self) -> set[int]:
        """The indices of the GPUs the workload could use."""
        return {g.index for g in self.gpus if g.visible and g.index is not None}


class CleanEnd(Section):
    """Where a stream logged Relax's clean end (`Main func successfully`)."""

    stream: str = Field(description='"stdout" or "stderr".')
    line: int | None = Field(default=None, description="1-based line in that stream's log.")


class Attempt(Section):
    """One attempt of a run's log (ingest.lifecycle): a job, or an in-run restart of it."""

    attempt: int | None = Field(default=None, description="1-based, in log order.")
    kind: str | None = Field(default=None, description='"job" or "restart".')
    started_by: str | None = Field(default=None, description='What marked its start ("job submission", ...).')
    first_line: int | None = Field(default=None, description="Its first line in the log.")
    last_line: int | None = Field(default=None, description="Its last line.")
    started_utc: str | None = Field(default=None, description="Its first log timestamp.")
    ended_utc: str | None = Field(default=None, description="Its last log timestamp.")
    duration_s: Number | None = Field(default=None, description="From its first to its last timestamp.")
    resumed_from_iteration: int | None = Field(default=None, description="The checkpoint iteration it loaded.")
    start_step: int | None = Field(default=None, description="The step it started at, when past 0.")
    steps: list[int] | None = Field(default=None, description="[first, last] step the actor trained in it.")
    trained_steps: int | None = Field(default=None, description="Steps the actor trained in it.")
    rollout_only_steps: list[int] | None = Field(default=None, description="Steps only the rollout side logged.")
    redone_steps: list[list[int]] | None = Field(
        default=None, description="Steps an earlier attempt had trained, as [first, last] ranges."
    )
    redone: str | None = Field(default=None, description='Those steps in words ("10-14").')
    replaced_values: int | None = Field(default=None, description="Its values a later attempt replaced.")
    cause: str | None = Field(default=None, description="Why it started (a restart's cause).")
    end: str | None = Field(default=None, description='"clean", "failed", "stopped", "restarted", "cut" or null.')
    failure: str | None = Field(default=None, description="Its failure in words.")


class Lifecycle(Section):
    """The attempts a run's log shows (ingest.lifecycle: jobs, in-run restarts, resumes)."""

    stream: str | None = Field(default=None, description="The stream whose attempts these are.")
    attempts: list[Attempt] = Field(default_factory=list, description="In log order.")
    jobs: int | None = Field(default=None, description="Jobs (submissions) in the log.")
    restarts: int | None = Field(default=None, description="In-run restarts.")
    replaced_values: int | None = Field(default=None, description="Values a later attempt replaced.")


class LossScaleSkips(Section):
    """The parameter updates fp16 loss scaling skipped (ingest)."""

    warnings: int = Field(default=0, description="`Inf found in gradients` warnings.")
    steps: int | None = Field(default=None, description="Training steps whose update was skipped.")
    first: str | None = Field(default=None, description='Where the first warning is ("stdout.log:120").')
    skipped_steps: list[int] = Field(default_factory=list, description="The actor's skipped steps.")
    critic_skipped_steps: list[int] = Field(default_factory=list, description="The critic's skipped steps.")


class IngestSummary(Section):
    """A manifest's `ingest`: what ingest read from the run's logs (reportgen.ingest.run_dir)."""

    steps: int | None = Field(default=None, description="Steps the logs show trained.")
    last_step: int | None = Field(default=None, description="The last of them.")
    records: int | None = Field(default=None, description="Metric records read.")
    skipped_lines: int | None = Field(default=None, description="Lines that looked like metrics but did not parse.")
    events: int | None = Field(default=None, description="Failure events found.")
    disagreements: int | None = Field(default=None, description="Values the console and TensorBoard disagree on.")
    sources: list[str] = Field(default_factory=list, description='Where metrics came from ("console", ...).')
    lines: dict[str, int] = Field(default_factory=dict, description="Lines read per stream.")
    tensorboard_error: str | None = Field(default=None, description="Why the TensorBoard events could not be read.")
    train_steps: int | None = Field(default=None, description="Steps the actor trained (`step N` records).")
    rollout_only_steps: list[int] = Field(default_factory=list, description="Steps only the rollout side logged.")
    clean_end: list[CleanEnd] = Field(default_factory=list, description="Where each stream logged its clean end.")
    lifecycle: Lifecycle | None = Field(default=None, description="The log's attempts; null: not read.")
    unreadable_lines: dict[str, Any] | None = Field(default=None, description="Lines that could not be read.")
    joined_lines: dict[str, Any] | None = Field(default=None, description="Metric messages read joined.")
    loss_scale_skips: LossScaleSkips | None = Field(default=None, description="Updates fp16 loss scaling skipped.")
    undecodable: dict[str, Any] | None = Field(default=None, description="Undecodable regions skipped per log.")
    warnings: list[str] = Field(default_factory=list, description="What ingest could not read cleanly, in words.")

    def clean_ends(self) -> dict[str, int]:
        """stream -> the line of its clean end."""
        return {e.stream: e.line for e in self.clean_end if e.line is not None}

    def trained(self) -> int | None:
        """Steps the run completed, as the report counts them: `train_steps`, else (a manifest of an
        older ingest) the steps logged."""
        return self.train_steps if self.train_steps is not None else self.steps


class Violation(Section):
    flag: str | None = Field(default=None, description="The fixed-workload flag.")
    expected: Any = Field(default=None, description="Its value in the spec.")
    actual: Any = Field(default=None, description="The value the run had.")


class Invariants(Section):
    """A manifest's `invariants`: the fixed-workload flags checked and what broke them."""

    checked: list[str] = Field(default_factory=list, description="The flags checked.")
    values: dict[str, Any] = Field(default_factory=dict, description="Flag -> the value the run had.")
    violations: list[Violation] = Field(default_factory=list, description="Flags whose value was not the spec's.")


class Hashes(Section):
    """A manifest's `hashes`: the model manifest's and the data files'."""

    model_manifest_sha256: str | None = Field(default=None, description="SHA-256 of the model manifest.")
    data: dict[str, Any] = Field(default_factory=dict, description="Data file -> its SHA-256.")

    @property
    def recorded(self) -> bool:
        return self.model_manifest_sha256 is not None or bool(self.data)


class LogEvent(Section):
    """One failure event ingest found in a run's logs (one entry of events.json): an OOM, a NaN, a
    traceback, a fatal loop error, an abnormal exit, a stop. `details` holds what the kind says
    (an OOM's sizes, a stop's signal, the attempt of a log of several): open by design."""

    kind: str = Field(description='"oom", "nan", "traceback", "fatal", "abnormal_exit", "interrupted", "recovered".')
    step: int | None = Field(default=None, description="The step it happened at, when known.")
    stream: str = Field(default="stdout", description='"stdout", "stderr" or "process".')
    line: int | None = Field(default=None, description="1-based line in that stream's log.")
    message: str = Field(default="", description="The line that reported it.")
    excerpt: list[str] = Field(default_factory=list, description="Log lines around it.")
    details: dict[str, Any] = Field(default_factory=dict, description="What the kind says (sizes, signal, attempt).")

    @property
    def where(self) -> str:
        """ "stderr.log:3", or the stream alone without a line."""
        return f"{self.stream}.log:{self.line}" if self.line is not None else self.stream


class CampaignMachine(BaseModel):
    """One machine that gave blocks to a campaign (campaign.json's `machines`)."""

    model_config = ConfigDict(extra="allow")

    fingerprint_id: str = Field(description="The machine (capture.fingerprint.fingerprint_id).")
    hostname: str | None = Field(default=None, description="Its hostname, as its fingerprint recorded it.")
    first_seen_utc: str | None = Field(default=None, description="When it joined the campaign (UTC, ISO 8601).")
    blocks: list[int] | None = Field(
        default=None,
        description="The blocks (pair numbers) it finished, in order: every run of the block ended on it. "
        "null: not recorded (a version-1 campaign, made before campaigns spanned machines).",
    )


def _campaign_from_v1(data: dict[str, Any]) -> dict[str, Any]:
    """Version 1 pinned one machine (`fingerprint_id`); version 2 lists the machines that joined.
    The one machine of a version-1 file joined when the campaign started; which blocks it finished
    was not recorded (`blocks` null: the runner reads them from its runs)."""
    out = {**data, "schema_version": 2}
    raw = data.get("fingerprint")
    fp: dict[str, Any] = raw if isinstance(raw, dict) else {}
    if "machines" not in out:
        out["machines"] = (
            [
                {
                    "fingerprint_id": data["fingerprint_id"],
                    "hostname": fp.get("hostname"),
                    "first_seen_utc": data.get("started_utc"),
                    "blocks": None,
                }
            ]
            if isinstance(data.get("fingerprint_id"), str)
            else []
        )
    return out


class Campaign(StoreFile):
    """runs/<experiment>/campaign.json: the machine class a campaign is pinned to, and the machines
    of that class that gave it blocks (a block: one pair of runs, made on one machine)."""

    KIND: ClassVar[str] = "reportgen.campaign"
    SCHEMA_VERSION: ClassVar[int] = 2
    UPGRADES: ClassVar[Mapping[int, Upgrade]] = {1: _campaign_from_v1}

    campaign_id: str = Field(description="UTC time the campaign started, e.g. `20261129T071500Z`; archive/ uses it.")
    fingerprint_id: str | None = Field(default=None, description="The machine that started the campaign.")
    fingerprint: Fingerprint = Field(
        default_factory=Fingerprint,
        description="That machine's fingerprint: host, CPU, GPUs, driver; its class is the campaign's.",
    )
    class_id: str | None = Field(
        default=None,
        description="The machine class (capture.fingerprint.class_id: GPU model and count, driver, CPU model and "
        "count, memory, image); null in a version-1 file (then the class of `fingerprint`).",
    )
    started_utc: str | None = Field(default=None, description="When the campaign started (UTC, ISO 8601).")
    executor: dict[str, Any] | None = Field(
        default=None, description="Where the runs execute when not on this machine (a Ray node)."
    )
    machines: list[CampaignMachine] = Field(
        default_factory=list, description="The machines that joined, in the order they did, with the blocks each gave."
    )

    @field_validator("fingerprint", mode="before")
    @classmethod
    def _null_is_empty(cls, value: Any) -> Any:
        return {} if value is None else value

    def machine(self, fingerprint_id: str) -> CampaignMachine | None:
        return next((m for m in self.machines if m.fingerprint_id == fingerprint_id), None)

    def blocks_of(self) -> dict[int, str]:
        """Finished block -> the machine that made it (blocks recorded; a version-1 machine's are not)."""
        return {b: m.fingerprint_id for m in self.machines for b in m.blocks or ()}


class Amendment(BaseModel):
    model_config = ConfigDict(extra="allow")

    utc: str | None = Field(default=None, description="When the campaign was resized.")
    previous_spec_sha256: str | None = Field(default=None, description="The spec it replaced.")
    changed: dict[str, Any] = Field(default_factory=dict, description="What changed: key -> [old, new].")
    looks_taken: list[int] = Field(default_factory=list, description="Pair counts already looked at.")
    reason: str | None = Field(default=None, description="Why, when said (a window declaration's evidence).")


class ExperimentRecord(StoreFile):
    """runs/<experiment>/experiment.json: how the spec (experiment.toml beside it) was loaded."""

    KIND: ClassVar[str] = "reportgen.experiment"

    name: str | None = Field(default=None, description="The experiment's name (after --name).")
    profile: str | None = Field(default=None, description="The profile overlay applied, if any.")
    source_path: str | None = Field(default=None, description="The spec file the run was started with.")
    recipe_dir: str | None = Field(default=None, description="The folder recipe paths are relative to.")
    spec_sha256: str | None = Field(default=None, description="SHA-256 of experiment.toml's bytes.")
    amendments: list[Amendment] = Field(default_factory=list, description="Resizes of the campaign, in order.")


class RevisionArm(BaseModel):
    model_config = ConfigDict(extra="allow")

    ref: str = Field(description="The revision as the spec names it (`main`, a tag, a SHA).")
    sha: str = Field(description="The full SHA it resolved to when the campaign was planned.")


class ChangedFile(BaseModel):
    model_config = ConfigDict(extra="allow")

    path: str
    added: int | None = Field(default=None, description="Lines added (null: a binary file).")
    deleted: int | None = Field(default=None, description="Lines deleted (null: a binary file).")


class CodeChangeRecord(BaseModel):
    """The code a candidate at a revision changes against the baseline's revision."""

    model_config = ConfigDict(extra="allow")

    base_sha: str = Field(description="The baseline's commit.")
    sha: str = Field(description="The candidate's commit.")
    merge_base: str | None = Field(default=None, description="Their best common ancestor (null: no shared history).")
    files: list[ChangedFile] = Field(default_factory=list, description="`git diff --numstat` from base_sha to sha.")
    link: str | None = Field(default=None, description="A compare page when the repository's origin is on GitHub.")
    revert: str = Field(default="", description="The rollback: the command that reverts the range.")


class Revisions(StoreFile):
    """runs/<experiment>/revisions.json: the commit each arm ran at (arms at git revisions,
    docs/revisions.md), resolved once when the campaign was planned, and each candidate's code diff."""

    KIND: ClassVar[str] = "reportgen.revisions"

    repo: str = Field(description="The recipe's repository on the machine that planned the campaign.")
    origin: str | None = Field(default=None, description="Its `origin` remote.")
    recipe: str | None = Field(default=None, description="The recipe script's path inside the repository.")
    arms: dict[str, RevisionArm] = Field(default_factory=dict, description="Arm id -> its ref and commit.")
    changes: dict[str, CodeChangeRecord] = Field(
        default_factory=dict, description="Candidate id -> its code diff against the baseline's commit."
    )

    def pinned(self) -> dict[str, tuple[str, str]]:
        """arm id -> (ref, sha): what a resumed campaign keeps while the spec names the same refs."""
        return {arm: (r.ref, r.sha) for arm, r in self.arms.items()}


class WorkloadRecord(BaseModel):
    """What a trainer said about itself in its log (reportgen.ingest.workload_lines): the embedded
    workload's version and the warm start its policy began from. Absent in runs of the v1 embedded
    workload and of Relax."""

    model_config = ConfigDict(extra="allow")

    name: str | None = Field(default=None, description="The workload's name (`grpo-max`).")
    version: str | None = Field(default=None, description="Its version (`v2`); the v1 workload printed none.")
    warm_start_sha256: str | None = Field(
        default=None, description="SHA-256 of the warm-start file the policy was loaded from (null: random init)."
    )
    warm_start_made: bool | None = Field(
        default=None, description="Whether this run made the warm start (the first run on a machine) or read it."
    )
    warm_start_seconds: Number | None = Field(default=None, description="What making or reading it took.")


class Manifest(StoreFile):
    """runs/<experiment>/<arm>/<repeat>/manifest.json: one run (docs/formats/runs.md lists every key)."""

    KIND: ClassVar[str] = "reportgen.run"

    experiment: str | None = Field(default=None, description="The experiment the run belongs to.")
    arm: str | None = Field(default=None, description="baseline, a candidate id or profile-<arm>.")
    repeat: int | None = Field(default=None, description="The run's repeat number within its arm.")
    role: str | None = Field(default=None, description="formal or profile.")
    status: str | None = Field(default=None, description="running, complete, failed or interrupted.")
    status_reason: str | None = Field(default=None, description="The evidence for failed / interrupted.")
    started_utc: str | None = Field(
        default=None,
        description='When the workload started (UTC, ISO 8601): to the millisecond ("2026-12-01T10:00:00.123Z") in '
        "runs made since the interleaving check, whole seconds in older ones (both read).",
    )
    ended_utc: str | None = Field(default=None, description="When it ended (UTC), as started_utc.")
    duration_s: Number | None = Field(default=None, description="Wall-clock seconds of the workload.")
    exit_code: int | None = Field(default=None, description="The process' exit code.")
    signal: str | None = Field(default=None, description="The signal that ended it (`SIGKILL`), if one did.")
    timed_out: bool | None = Field(default=None, description="Whether the runner stopped it at its time limit.")
    cwd: Any = Field(default=None, description="The working folder the command ran in.")
    gpu: GpuSampling = Field(default_factory=GpuSampling, description="GPU sampling: the GPUs seen, or why none was.")
    hashes: Hashes = Field(default_factory=Hashes, description="Model manifest and data file hashes.")
    invariants: Invariants = Field(default_factory=Invariants, description="Flags checked and violations found.")
    campaign_id: str | None = Field(default=None, description="The campaign the run belongs to.")
    fingerprint_id: str | None = Field(default=None, description="The machine the run ran on.")
    fingerprint: Fingerprint = Field(
        default_factory=Fingerprint,
        description="That machine's fingerprint (host, CPU, GPUs, driver), whose class_id the history keys on.",
    )
    effective_argv: dict[str, Any] | None = Field(default=None, description="Flag -> value as the workload saw it.")
    ingest: IngestSummary = Field(default_factory=IngestSummary, description="Counts and lifecycle from ingestion.")
    process: dict[str, Any] | None = Field(
        default=None, description="The executor's identity of the running workload (to stop an orphan)."
    )
    artifacts: list[dict[str, Any]] | None = Field(
        default=None, description="Profiler artifacts (path, bytes, sha256), listed when the run ended."
    )
    revision: RevisionArm | None = Field(
        default=None, description="The git revision the run's code came from (arms at revisions), else absent."
    )
    workload: WorkloadRecord | None = Field(
        default=None, description="The trainer's version and warm start, as its log said (ingest); else absent."
    )
    seeds: dict[str, str] | None = Field(
        default=None,
        description="The seed flags' values the runner set for the run's block ([run] seeds = \"per-block\"); else "
        "absent (the recipe's own).",
    )

    @field_validator("gpu", "hashes", "invariants", "fingerprint", "ingest", mode="before")
    @classmethod
    def _null_is_empty(cls, value: Any) -> Any:
        """A section written as null (nothing was recorded) reads as an empty one."""
        return {} if value is None else value

    @property
    def complete(self) -> bool:
        return self.status == Status.COMPLETE

    @property
    def start_step(self) -> int:
        """The step the run's log starts at (a run resumed from a checkpoint), else 0."""
        attempts = self.ingest.lifecycle.attempts if self.ingest.lifecycle is not None else []
        start = attempts[0].start_step if attempts else None
        return start if start is not None and start > 0 else 0

    @property
    def attempts(self) -> list[Attempt]:
        """The attempts its log shows (ingest.lifecycle), in log order; [] when none were read."""
        return list(self.ingest.lifecycle.attempts) if self.ingest.lifecycle is not None else []


class Events(StoreFile):
    """runs/<experiment>/<arm>/<repeat>/events.json: failure events found by ingest."""

    KIND: ClassVar[str] = "reportgen.events"

    events: list[LogEvent] = Field(default_factory=list, description="oom, nan, traceback, ... in log order.")


def _command_from_unversioned(data: dict[str, Any]) -> dict[str, Any]:
    """command.json before version 1 had neither schema_version nor kind; the oldest said `argv`."""
    out = {**data, "schema_version": 1, "kind": RunCommand.KIND}
    if "command" not in out and "argv" in out:
        out["command"] = out.pop("argv")
    return out


class RunCommand(StoreFile):
    """runs/<experiment>/<arm>/<repeat>/command.json: what the runner ran, for the provenance page
    (credentials redacted; only the environment that may be published)."""

    KIND: ClassVar[str] = "reportgen.command"
    UNVERSIONED: ClassVar[int | None] = 0
    UPGRADES: ClassVar[Mapping[int, Upgrade]] = {0: _command_from_unversioned}

    command: list[str] = Field(default_factory=list, description="The command as argv, credentials redacted.")
    cwd: str | None = Field(default=None, description="Its working directory.")
    env: dict[str, str] = Field(
        default_factory=dict, description="The published environment: the frameworks' variables and the recipe's own."
    )
    env_total: int | None = Field(default=None, description="How many variables the run's environment had in all.")


def _git_from_unversioned(data: dict[str, Any]) -> dict[str, Any]:
    """git.json before version 1 had neither schema_version nor kind; its keys are the same."""
    return {**data, "schema_version": 1, "kind": GitProvenance.KIND}


class GitProvenance(StoreFile):
    """runs/<experiment>/<arm>/<repeat>/provenance/git.json: the code the run ran."""

    KIND: ClassVar[str] = "reportgen.git"
    UNVERSIONED: ClassVar[int | None] = 0
    UPGRADES: ClassVar[Mapping[int, Upgrade]] = {0: _git_from_unversioned}

    repository: bool | None = Field(default=None, description="Whether the recipe's folder is a git repository.")
    repo: Any = Field(default=None, description="The repository's top folder.")
    commit: str | None = Field(default=None, description="The commit (older files: `head`).")
    head: str | None = Field(default=None, description="HEAD's commit.")
    branch: str | None = Field(default=None, description="The branch checked out (`HEAD` when detached).")
    dirty: bool | None = Field(default=None, description="Whether the tree had changes.")

    @property
    def repo_path(self) -> str | None:
        return self.repo if isinstance(self.repo, str) else None

    @property
    def commit_id(self) -> str | None:
        return self.commit or self.head


def git_document(info: Mapping[str, Any]) -> dict[str, Any]:
    """git.json's content as the capture writes it: versioned."""
    return GitProvenance.create(info).to_dict()
