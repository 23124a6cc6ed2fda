"""Provenance capture (execute+capture stage): what a run ran on, written into provenance/.

`capture_provenance` records the recipe repository's git state (on a copy without `.git`, the
commit and state from its verified tree stamp, see tree_stamp.py), nvidia-smi, the workload's
Python and packages, the machine fingerprint, the model manifest, data hashes and any extra
commands the spec asks for. Every byte goes through `redact_text` with the secret values of
the workload's environment (and of the runner's own) before it is written, each file
atomically. External commands never raise: a missing tool, a non-zero exit or a timeout is
recorded as data.

The workload's Python and its packages cannot change between the runs of one campaign on one
machine, and `pip freeze` is the slowest probe (seconds); `CampaignProbes` asks them once and every
run folder gets its own copy of the answer. Given a cache folder it also keeps the answer on disk,
keyed by what decides it (the interpreter, its environment variables, the listing of the
distributions on its sys.path, pip's configuration, editable projects' git state): the next
`reportgen run` of the campaign, or the next run job on a Ray node, reads it instead of starting pip
while that key is unchanged. What can change between runs (the tree's git state, nvidia-smi's GPU
state, the fingerprint the campaign checks, the spec's extra commands) is asked for every run.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from reportgen.capture.fingerprint import fingerprint_id, machine_fingerprint
from reportgen.capture.model_manifest import data_hashes, model_manifest
from reportgen.capture.redact import redact_obj, redact_text, secret_values
from reportgen.capture.tree_stamp import (
    TREE_STAMP_ENV,
    StampError,
    changes_code,
    find_stamp,
    read_stamp,
    status_lines,
    verify_tree,
)
from reportgen.store import atomic
from reportgen.store.models import git_document

SCHEMA_VERSION = 1
COMMAND_TIMEOUT_S = 60.0
PIP_TIMEOUT_S = 180.0
OUTPUT_LIMIT = 64 * 1024  # characters of stdout/stderr kept per extra command in commands.json

GIT_JSON = "git.json"
GIT_STATUS = "git-status.txt"
GIT_DIFF = "git-diff.patch"
NVIDIA_SMI = "nvidia-smi.txt"
PYTHON = "python.txt"
PIP_FREEZE = "pip-freeze.txt"
FINGERPRINT = "fingerprint.json"
MODEL_MANIFEST = "model-manifest.json"
DATA_HASHES = "data-hashes.json"
COMMANDS = "commands.json"

# Lists installed distributions where pip is missing (uv-made venvs have none).
_LIST_DISTRIBUTIONS = (
    "import importlib.metadata as m\n"
    "rows = sorted({(d.metadata['Name'] or '?', d.version) for d in m.distributions()}, key=lambda r: r[0].lower())\n"
    "print('\\n'.join(f'{n}=={v}' for n, v in rows))\n"
)


@dataclass(frozen=True)
class CommandResult:
    """One external command as it ran: never raised, always recorded."""

    argv: list[str] | str
    exit_code: int | None  # None when it could not start or timed out
    stdout: str
    stderr: str
    duration_s: float
    error: str | None = None  # "not found: ...", "timed out after 60 s", ...

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and self.error is None


def run_command(
    cmd: str | Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path | None = None,
    timeout_s: float = COMMAND_TIMEOUT_S,
) -> CommandResult:
    """Run a list as argv (no shell) or a string through /bin/sh; capture everything, raise nothing."""
    shell = isinstance(cmd, str)
    argv: list[str] | str = cmd if isinstance(cmd, str) else [str(a) for a in cmd]
    t0 = time.monotonic()
    try:
        proc = subprocess.run(
            argv,
            shell=shell,
            env=dict(env),
            cwd=cwd,
            capture_output=True,
            timeout=timeout_s,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as exc:
        return CommandResult(
            argv,
            None,
            _decode(exc.stdout),
            _decode(exc.stderr),
            time.monotonic() - t0,
            f"timed out after {timeout_s:g} s",
        )
    except OSError as exc:  # FileNotFoundError, PermissionError: the tool is not there
        return CommandResult(argv, None, "", "", time.monotonic() - t0, f"{type(exc).__name__}: {exc}")
    return CommandResult(argv, proc.returncode, _decode(proc.stdout), _decode(proc.stderr), time.monotonic() - t0)


def _decode(data: bytes | str | None) -> str:
    if data is None:
        return ""
    return data if isinstance(data, str) else data.decode("utf-8", errors="replace")


def _clip(text: str, limit: int = OUTPUT_LIMIT) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n... [{len(text) - limit} characters cut] ...\n{text[-half:]}"


def _child_env(env: Mapping[str, str]) -> dict[str, str]:
    out = {str(k): str(v) for k, v in env.items()}
    # Commands are looked up on the workload's PATH; fall back to ours if it has none.
    out.setdefault("PATH", os.environ.get("PATH", "/usr/bin:/bin"))
    out["GIT_TERMINAL_PROMPT"] = "0"  # never wait for a password
    out["GIT_PAGER"] = "cat"
    return out


class _Writer:
    """Writes files into dest atomically, each passed through redaction first."""

    def __init__(self, dest: Path, secrets: list[str]) -> None:
        self.dest = Path(dest)
        self.secrets = secrets
        self.files: list[str] = []

    def text(self, name: str, text: str) -> None:
        atomic.write_text(self.dest / name, redact_text(text, self.secrets))
        self.files.append(name)

    def json(self, name: str, obj: Any) -> None:
        # Redact the strings first (JSON escaping could hide a value containing quotes or
        # backslashes from a pass over the dumped text), then the dumped text as well.
        if name == GIT_JSON:  # versioned through its model (reportgen.store.models.GitProvenance)
            obj = git_document(obj)
        clean = redact_obj(obj, self.secrets)
        text = json.dumps(clean, indent=2, ensure_ascii=False, default=str) + "\n"
        self.text(name, text)


def _git(repo: Path, env: dict[str, str], log: list[CommandResult], *args: str) -> CommandResult:
    res = run_command(["git", "-C", str(repo), "--no-pager", *args], env=env)
    log.append(res)
    return res


def _relative(paths: Sequence[str | Path], root: Path) -> list[str]:
    out = []
    for p in paths:
        try:
            out.append(Path(p).resolve().relative_to(root.resolve()).as_posix())
        except (ValueError, OSError):
            continue  # outside the repository: its state is not the repository's
    return out


def _capture_git(
    w: _Writer,
    recipe_repo: Path | None,
    env: dict[str, str],
    log: list[CommandResult],
    reads: Sequence[str | Path] = (),
) -> dict[str, Any]:
    if recipe_repo is None:
        info: dict[str, Any] = {"repository": False, "reason": "no recipe repository given"}
        w.json(GIT_JSON, info)
        return {"head": None, "dirty": None}
    start = Path(recipe_repo)
    start = start if start.is_dir() else start.parent
    named = env.get(TREE_STAMP_ENV)
    # The stamp describes the tree it sits at the top of: a recipe elsewhere (a Relax checkout)
    # keeps its own git record even when the variable is set for reportgen's own tree.
    if named and not start.resolve().is_relative_to(Path(named).resolve().parent):
        named = None
    if named:
        # Asked for by name (scripts/device/showcase.sh does): the copy's own `.git`, if any, may
        # hold another commit's history (a GPU machine's copy did: HEAD was an older commit and
        # every file "modified"), so the verified stamp says what ran; git's HEAD is kept beside.
        here = _git(start, env, log, "rev-parse", "HEAD")
        stamped = _capture_stamp(
            w,
            start,
            f"{TREE_STAMP_ENV} is set",
            in_repository=here.ok,
            path=Path(named),
            git_head=here.stdout.strip() if here.ok else None,
            reads=reads,
        )
        assert stamped is not None  # a named stamp is always recorded, readable or not
        return stamped
    top = _git(start, env, log, "rev-parse", "--show-toplevel")
    if not top.ok:
        reason = (top.error or top.stderr.strip() or f"exit {top.exit_code}").splitlines()[0]
        stamped = _capture_stamp(w, start, reason, in_repository=False, reads=reads)
        if stamped is not None:
            return stamped
        w.json(GIT_JSON, {"repository": False, "path": str(start), "reason": f"not a git repository: {reason}"})
        return {"head": None, "dirty": None}
    root = Path(top.stdout.strip())
    head_res = _git(root, env, log, "rev-parse", "HEAD")
    head = head_res.stdout.strip() if head_res.ok else None  # None in a repo with no commit yet
    if head is None:
        # A copy whose `.git` has no history (a GPU machine's working-tree copy can come so): the
        # tree stamp, if there is one, knows the commit; otherwise record the empty repository.
        stamped = _capture_stamp(w, start, "the repository has no commit", in_repository=True, reads=reads)
        if stamped is not None:
            return stamped
    branch = _git(root, env, log, "rev-parse", "--abbrev-ref", "HEAD")
    status = _git(root, env, log, "status", "--short")
    # Against HEAD so staged changes count too; a repo without commits diffs the index.
    diff = _git(root, env, log, "diff", "HEAD") if head else _git(root, env, log, "diff")
    origin = _git(root, env, log, "remote", "get-url", "origin")
    # Untracked files count only when the run reads them (tree_stamp.changes_code): a log saved beside
    # the checkout does not make the code that ran different from the commit.
    dirty = changes_code(status.stdout, _relative(reads, root)) if status.ok else None
    w.text(GIT_STATUS, status.stdout if status.ok else f"# git status failed: {status.error or status.stderr}")
    w.text(GIT_DIFF, diff.stdout if diff.ok else f"# git diff failed: {diff.error or diff.stderr}")
    w.json(
        GIT_JSON,
        {
            "repository": True,
            "repo": str(root),
            "head": head,
            "branch": branch.stdout.strip() if branch.ok else None,
            "origin": origin.stdout.strip() if origin.ok else None,
            "dirty": dirty,
            "status_short": status.stdout if status.ok else None,
        },
    )
    return {"head": head, "dirty": dirty}


def _capture_stamp(
    w: _Writer,
    start: Path,
    reason: str,
    *,
    in_repository: bool,
    path: Path | None = None,
    git_head: str | None = None,
    reads: Sequence[str | Path] = (),
) -> dict[str, Any] | None:
    """A copy of a tree without usable git history (a GPU machine's): its commit from the tree stamp, verified.

    `path` is the stamp named by REPORTGEN_TREE_STAMP; else the nearest one above `start`, and None
    when there is none, so the caller records what git said. A stamp that cannot be read is
    recorded as such (and the commit stays unknown) rather than trusted.
    """
    path = path if path is not None else find_stamp(start)
    if path is None:
        return None
    base = {
        "repository": in_repository,
        "source": "tree-stamp",
        "stamp": str(path),
        "repo": str(path.parent),
        "git_head": git_head,  # what the copy's own git said, if it had any history
    }
    try:
        stamp = read_stamp(path)
    except StampError as exc:
        w.json(GIT_JSON, {**base, "head": None, "dirty": None, "reason": f"no git history ({reason}); {exc}"})
        return {"head": None, "dirty": None}
    check = verify_tree(path.parent, stamp)
    status = status_lines(stamp, check)
    dirty = stamp.dirty_for(_relative(reads, path.parent)) or not check.matches
    diff = stamp.diff
    if check.changed:
        diff += (
            f"# {len(check.changed)} file(s) changed after the tree was stamped (their contents are not "
            f"in the stamp): {', '.join(check.changed)}\n"
        )
    w.text(GIT_STATUS, status)
    w.text(GIT_DIFF, diff)
    w.json(
        GIT_JSON,
        {
            **base,
            "head": stamp.commit,
            "branch": stamp.branch,
            "origin": stamp.origin,
            "dirty": dirty,
            "status_short": status,
            "stamped_utc": stamp.stamped_utc,
            "tracked_files": len(stamp.files),
            "verified": check.matches,
            "changed_since_stamp": check.changed,
            "missing_since_stamp": check.missing,
        },
    )
    return {"head": stamp.commit, "dirty": dirty}


@dataclass(frozen=True)
class PythonProbe:
    """What the workload's Python answered: `-V`, `pip freeze`, and where pip failed the list from
    importlib.metadata; the commands as they ran, for python.txt, pip-freeze.txt and commands.json."""

    version: CommandResult
    freeze: CommandResult
    listed: CommandResult | None  # only when `pip freeze` failed

    @property
    def commands(self) -> list[CommandResult]:
        return [self.version, self.freeze] + ([self.listed] if self.listed is not None else [])


# What decides which interpreter a name resolves to and which packages it sees: a run whose
# environment differs in one of these asks its Python again.
_PYTHON_ENV = ("PATH", "HOME", "VIRTUAL_ENV", "CONDA_PREFIX")
_PYTHON_ENV_PREFIXES = ("PYTHON", "PIP_")


class CampaignProbes:
    """The answers of the probes that cannot change between the runs of one campaign on one machine.

    The runner keeps one for the runs it makes here (one `run_plan`); `capture_provenance` asks
    through it, so the workload's Python is asked its version and package list once per
    interpreter and environment, not once per run. Runs that differ in what decides the answer (the
    interpreter, PATH, a PYTHON* or PIP_* variable, the virtual environment, HOME) each get theirs.
    In memory the answers are kept as they came, unredacted: each run's writer redacts them with its
    own secrets.

    With `cache_dir` the answer is also kept on disk (`<cache_dir>/probes/<key>.json`, written
    atomically), so a later `reportgen run` of the campaign or a later run job on the same Ray node
    does not start pip again. Its key is what decides the answer, asked of the interpreter itself by
    a short script (`_ENVIRONMENT_STATE`: interpreter, version, sys.path and the name, mtime and size of
    every distribution's metadata folder and .pth file on it, pip's configuration files, editable
    projects' git state), plus the values above and the hash of the secrets redacted from it (what is
    stored is redacted, never a credential). A cached answer is used only when its key is the
    key computed now; an answer that did not come (a timeout, an interpreter that does not start) is
    never stored.
    """

    def __init__(self, cache_dir: Path | None = None) -> None:
        self._python: dict[tuple[str, tuple[tuple[str, str], ...]], PythonProbe] = {}
        self.cache_dir = Path(cache_dir) / "probes" if cache_dir is not None else None

    def python(self, python: str, env: Mapping[str, str], secrets: Sequence[str] = ()) -> PythonProbe:
        """`python -V` and `python -m pip freeze` in `env`: asked the first time, reused after."""
        decides = tuple(
            sorted((k, v) for k, v in env.items() if k in _PYTHON_ENV or k.startswith(_PYTHON_ENV_PREFIXES))
        )
        key = (python, decides)
        if key not in self._python:
            self._python[key] = self._stored_or_asked(python, env, decides, secrets)
        return self._python[key]

    def _stored_or_asked(
        self, python: str, env: Mapping[str, str], decides: tuple[tuple[str, str], ...], secrets: Sequence[str]
    ) -> PythonProbe:
        state = _environment_state(python, env) if self.cache_dir is not None else None
        if self.cache_dir is None or state is None:
            return _ask_python(python, env)
        key = hashlib.sha256(
            json.dumps(
                {
                    "schema_version": PROBE_CACHE_SCHEMA_VERSION,
                    "python": python,
                    "env": decides,
                    "state": state,
                    "secrets": hashlib.sha256("\0".join(sorted(set(secrets))).encode()).hexdigest(),
                },
                sort_keys=True,
            ).encode()
        ).hexdigest()
        path = self.cache_dir / f"{key}.json"
        stored = _read_probe(path, key)
        if stored is not None:
            return stored
        probe = _ask_python(python, env)
        if probe.version.ok and probe.freeze.error is None and (probe.listed is None or probe.listed.ok):
            clean = redact_obj({"key": key, "probe": _probe_document(probe)}, list(secrets))
            # A cache that cannot be written only costs the next run a pip freeze.
            with contextlib.suppress(OSError):
                atomic.write_json(path, {"schema_version": PROBE_CACHE_SCHEMA_VERSION, **clean})
        return probe


PROBE_CACHE_SCHEMA_VERSION = 1

# Run by the workload's Python (from stdin, in the run's environment): what decides the answer of
# `-V` and `-m pip freeze`. A distribution installed, removed or upgraded adds, removes or renames a
# metadata folder (or rewrites a .pth file) on sys.path; pip's configuration can filter the list; an
# editable project is listed with its git origin and commit. Prints one JSON document.
_ENVIRONMENT_STATE = r"""
import json, os, subprocess, sys
from urllib.parse import unquote
def stat(p):
    try:
        s = os.stat(p)
    except OSError:
        return None
    return [s.st_mtime_ns, s.st_size]
META = ('.dist-info', '.egg-info', '.egg-link', '.egg', '.pth')
paths, editable = [], set()
for entry in sys.path:
    d = entry or os.getcwd()
    try:
        names = sorted(n for n in os.listdir(d) if n.endswith(META))
    except OSError:
        paths.append([entry, None])
        continue
    rows = []
    for n in names:
        rows.append([n, stat(os.path.join(d, n))])
        if n.endswith('.dist-info'):
            try:
                with open(os.path.join(d, n, 'direct_url.json')) as f:
                    url = json.load(f)
            except (OSError, ValueError):
                continue
            if (url.get('dir_info') or {}).get('editable'):
                rows.append([n + '/direct_url.json', url])
                u = url.get('url', '')
                editable.add(unquote(u[len('file://'):]) if u.startswith('file://') else u)
        elif n.endswith('.egg-link'):
            try:
                with open(os.path.join(d, n)) as f:
                    editable.add(f.readline().strip())
            except OSError:
                pass
        elif n.endswith('.egg-info') and os.path.basename(d) not in ('site-packages', 'dist-packages'):
            editable.add(d)  # a project folder on sys.path (a legacy develop install)
    paths.append([entry, rows])
def git(where, *args):
    try:
        r = subprocess.run(['git', '-C', where, *args], capture_output=True, text=True, timeout=30)
        return [r.returncode, r.stdout]
    except (OSError, subprocess.SubprocessError) as e:
        return [None, type(e).__name__]
vcs = {p: [git(p, 'rev-parse', '--show-toplevel', '--show-prefix', 'HEAD'),
           git(p, 'config', '--get-regexp', r'^remote\..*\.url$')] for p in sorted(editable)}
home = os.path.expanduser('~')
xdg = os.environ.get('XDG_CONFIG_HOME') or os.path.join(home, '.config')
dirs = (os.environ.get('XDG_CONFIG_DIRS') or '/etc/xdg').split(os.pathsep)
configs = [os.path.join(x, 'pip', 'pip.conf') for x in dirs] + ['/etc/pip.conf', os.path.join(xdg, 'pip', 'pip.conf'),
           os.path.join(home, '.pip', 'pip.conf'), os.path.join(sys.prefix, 'pip.conf')]
if os.environ.get('PIP_CONFIG_FILE'):
    configs.append(os.environ['PIP_CONFIG_FILE'])
print(json.dumps({'executable': sys.executable, 'real': os.path.realpath(sys.executable),
    'binary': stat(os.path.realpath(sys.executable)), 'version': sys.version, 'prefix': sys.prefix,
    'paths': paths, 'vcs': vcs, 'pip_config': [[c, stat(c)] for c in configs]}, sort_keys=True))
"""


def _environment_state(python: str, env: Mapping[str, str]) -> Any | None:
    """What `_ENVIRONMENT_STATE` printed in the workload's Python, or None where it gave no answer."""
    try:
        proc = subprocess.run(
            [python, "-"],
            input=_ENVIRONMENT_STATE,
            env=dict(env),
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT_S,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    try:
        return json.loads(proc.stdout)
    except ValueError:
        return None


def _probe_document(probe: PythonProbe) -> dict[str, Any]:
    return {
        "version": asdict(probe.version),
        "freeze": asdict(probe.freeze),
        "listed": asdict(probe.listed) if probe.listed is not None else None,
    }


def _read_probe(path: Path, key: str) -> PythonProbe | None:
    """The answer stored under `key`, or None where there is none, or it is damaged or not for `key`."""
    try:
        doc = atomic.read_json(path)
        if doc.get("schema_version") != PROBE_CACHE_SCHEMA_VERSION or doc.get("key") != key:
            return None
        p = doc["probe"]
        listed = CommandResult(**p["listed"]) if p["listed"] is not None else None
        return PythonProbe(CommandResult(**p["version"]), CommandResult(**p["freeze"]), listed)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _ask_python(python: str, env: Mapping[str, str]) -> PythonProbe:
    version = run_command([python, "-V"], env=env)
    freeze = run_command([python, "-m", "pip", "freeze"], env=env, timeout_s=PIP_TIMEOUT_S)
    listed = None if freeze.ok else run_command([python, "-c", _LIST_DISTRIBUTIONS], env=env)
    return PythonProbe(version, freeze, listed)


def _capture_python(w: _Writer, python: str, probe: PythonProbe, log: list[CommandResult]) -> str | None:
    log.extend(probe.commands)
    ver = probe.version
    text = (ver.stdout + ver.stderr).strip()  # Python 2 printed -V to stderr
    if ver.ok:
        w.text(PYTHON, text + "\n")
    else:
        w.text(PYTHON, f"# {python} -V failed: {ver.error or f'exit {ver.exit_code}'}\n{text}\n")
    version = text.split()[-1] if ver.ok and text.startswith("Python ") else None

    freeze = probe.freeze
    if freeze.ok:
        w.text(PIP_FREEZE, freeze.stdout)
    else:
        why = freeze.error or f"exit {freeze.exit_code}: {freeze.stderr.strip()[-500:]}"
        body = probe.listed.stdout if probe.listed is not None and probe.listed.ok else ""
        w.text(PIP_FREEZE, f"# pip freeze failed ({why}); listed by importlib.metadata instead\n{body}")
    return version


def capture_provenance(
    dest: Path,
    *,
    python: str,
    recipe_repo: Path | None,
    model_dir: Path | None,
    data_files: Sequence[Path],
    commands: Sequence[str | list[str]],
    env: Mapping[str, str],
    cache_path: Path | None,
    reads: Sequence[str | Path] = (),
    probes: CampaignProbes | None = None,
) -> dict[str, Any]:
    """Write a run's provenance/ folder and return the summary for its manifest.

    `reads`: the files the run reads (its spec, recipe and data files): an untracked one makes the run
    dirty, any other untracked file does not. `probes`: the campaign's answers so far (the runner's,
    shared by its runs); without it the Python is asked afresh. Summary: {"git": {head, dirty},
    "fingerprint_id", "fingerprint", "hashes": {"model_manifest_sha256", "data"}, "python_version",
    "nvidia_smi", "files"}.
    Raises UserError only for bad input (a model folder or data file that does not exist).
    """
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    secrets = sorted(set(secret_values(env)) | set(secret_values(os.environ)), key=lambda s: (-len(s), s))
    w = _Writer(dest, secrets)
    child_env = _child_env(env)
    log: list[CommandResult] = []

    # Hash first: a wrong model or data path is the user's mistake and should stop the run
    # before anything else is recorded.
    manifest = model_manifest(Path(model_dir), cache_path=cache_path) if model_dir is not None else None
    data = data_hashes([Path(p) for p in data_files], cache_path=cache_path)

    git = _capture_git(w, recipe_repo, child_env, log, reads)

    smi = run_command(["nvidia-smi", "-q"], env=child_env)
    log.append(smi)
    if smi.ok:
        w.text(NVIDIA_SMI, smi.stdout)
    else:
        w.text(
            NVIDIA_SMI, f"# nvidia-smi -q unavailable: {smi.error or f'exit {smi.exit_code}: {smi.stderr.strip()}'}\n"
        )

    probe = (probes or CampaignProbes()).python(python, child_env, secrets)
    python_version = _capture_python(w, python, probe, log)

    fp = machine_fingerprint(env)
    fp_id = fingerprint_id(fp)
    w.json(FINGERPRINT, {"schema_version": SCHEMA_VERSION, "fingerprint_id": fp_id, **fp})

    if manifest is not None:
        w.json(MODEL_MANIFEST, {"schema_version": SCHEMA_VERSION, **manifest})
    else:
        w.json(
            MODEL_MANIFEST,
            {
                "schema_version": SCHEMA_VERSION,
                "root": None,
                "files": [],
                "sha256": None,
                "note": "no model folder given",
            },
        )
    w.json(DATA_HASHES, {"schema_version": SCHEMA_VERSION, "files": data})

    extra = []
    for cmd in commands:
        res = run_command(cmd, env=child_env)
        extra.append({**asdict(res), "stdout": _clip(res.stdout), "stderr": _clip(res.stderr)})
    builtin = [
        {
            "argv": r.argv,
            "exit_code": r.exit_code,
            "duration_s": round(r.duration_s, 3),
            "error": r.error,
            "stderr": _clip(r.stderr, 4096),
        }
        for r in log
    ]
    w.json(COMMANDS, {"schema_version": SCHEMA_VERSION, "commands": extra, "builtin": builtin})

    summary = {
        "git": git,
        "fingerprint_id": fp_id,
        "fingerprint": fp,
        "hashes": {"model_manifest_sha256": manifest["sha256"] if manifest else None, "data": data},
        "python_version": python_version,
        "nvidia_smi": smi.ok,
        "files": sorted(w.files),
    }
    return redact_obj(summary, secrets)
