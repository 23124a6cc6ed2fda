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

The models type the fields code reads and allow the rest (`extra="allow"`): the files carry more
than any one reader needs (an ingest summary, a fingerprint), and a file written by an older
reportgen must still load. A file's `schema_version` is checked on read: an older one passes
through one upgrade function per version (`UPGRADES`) up to the current one; a newer one, or a
file that is not the model's kind, is refused with one `UserError` line. Nothing is written
back: an upgrade happens in memory, the file on disk stays as it was recorded.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from reportgen.errors import UserError, first_problem
from reportgen.store import atomic
from reportgen.vocab import Status

Number = int | float  # int first: a whole number stays an int, so a file reads and writes back the same

Upgrade = Callable[[dict[str, Any]], dict[str, Any]]


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
        dumped = self.model_dump(exclude_unset=True, by_alias=True)
        return {k: dumped[k] for k in [*self._order, *dumped] if k in dumped} if self._order else dumped

    def write(self, path: Path) -> Path:
        """Write atomically (store.atomic), the only way these files are written."""
        return atomic.write_json(Path(path), self.to_dict())


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
    fingerprint: dict[str, Any] = Field(
        default_factory=dict,
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
    gpu: dict[str, Any] | None = Field(default=None, description="GPU sampling: the GPUs seen, or why none was.")
    hashes: dict[str, Any] | None = Field(default=None, description="Model manifest and data file hashes.")
    invariants: dict[str, Any] | None = Field(default=None, description="Flags checked and violations found.")
    campaign_id: str | None = Field(default=None, description="The campaign the run belongs to.")
    fingerprint_id: str | None = Field(default=None, description="The machine the run ran on.")
    fingerprint: dict[str, Any] | None = Field(
        default=None,
        description="That machine's fingerprint (host, CPU, GPUs, driver), whose class_id the history keys on.",
    )
    effective_argv: dict[str, Any] | None = Field(default=None, description="Flag -> value as the workload saw it.")
    ingest: dict[str, Any] | None = Field(default=None, description="Counts and lifecycle from ingestion.")
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

    @property
    def complete(self) -> bool:
        return self.status == Status.COMPLETE

    @property
    def start_step(self) -> int:
        """The step the run's log starts at (a run resumed from a checkpoint), else 0."""
        lifecycle = (self.ingest or {}).get("lifecycle") or {}
        attempts = lifecycle.get("attempts") if isinstance(lifecycle, dict) else None
        first = attempts[0] if isinstance(attempts, list) and attempts and isinstance(attempts[0], dict) else {}
        start = first.get("start_step")
        return start if isinstance(start, int) and start > 0 else 0


class Events(StoreFile):
    """runs/<experiment>/<arm>/<repeat>/events.json: failure events found by ingest."""

    KIND: ClassVar[str] = "reportgen.events"

    events: list[dict[str, Any]] = Field(default_factory=list, description="oom, nan, traceback, ... in log order.")


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
