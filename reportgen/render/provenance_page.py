"""The provenance page (render stage): machine, versions, code, model and data hashes,
nvidia-smi, commands, and profiler artifacts listed (size, SHA-256, how to open), never embedded."""

from __future__ import annotations

import json
import textwrap
from collections import OrderedDict
from typing import Any

from reportgen.render import code_change, safe
from reportgen.render import machine as machine_info
from reportgen.render.blocks import table
from reportgen.render.common import report_kind
from reportgen.render.format import fmt_count, fmt_num
from reportgen.render.load import PublishedExperiment, StoredRun
from reportgen.render.machines_table import MachineRuns, blocks_text, machines_of
from reportgen.render.page import Page, experiment_base
from reportgen.render.reproduce import quote, wrapped_words
from reportgen.store.layout import RECIPE_ARGV, RECIPE_SCRIPT
from reportgen.store.models import MachineGpu

OPEN_WITH = (
    (".trace.json.gz", "Perfetto (ui.perfetto.dev, runs in the browser; the file stays local) or chrome://tracing"),
    (".trace.json", "Perfetto or chrome://tracing"),
    (".pickle", "PyTorch memory viz (pytorch.org/memory_viz, drag the file in; it stays local)"),
    (".pt.trace.json", "Perfetto"),
)


def _json(text: str | None) -> dict[str, Any]:
    """A JSON object from a provenance file; {} when it is missing, unreadable or not an object."""
    try:
        doc = json.loads(text or "")
    except (ValueError, TypeError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _freeze(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, ver = line.partition("==")
        out[name.strip().lower()] = ver.strip() if sep else line
    return out


def _size(n: int | None) -> str:
    if n is None:
        return "n/a"
    x = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if x < 1024 or unit == "GiB":
            return f"{x:.0f} {unit}" if unit == "B" else f"{x:.1f} {unit}"
        x /= 1024
    return str(x)


def _open_with(path: str) -> str:
    for suffix, how in OPEN_WITH:
        if path.endswith(suffix):
            return how
    return "any viewer for its type"


def _gpu_text(g: MachineGpu) -> str:
    mem = g.mem_total_mib
    return (
        safe.text(g.name) + (f", {fmt_num(mem, 0)} MiB" if mem else "") + (f"<br>{safe.code(g.uuid)}" if g.uuid else "")
    )


def machines_section(exp: PublishedExperiment, machines: list[MachineRuns]) -> list[str]:
    """The Machine section of a campaign whose runs came from several machines: one column a machine,
    each with its blocks and runs, so that every run is under the machine that made it."""
    runs = {m.share.machine: [r for r in exp.formal_runs() if r.machine == m.share.machine] for m in machines}

    def python(m: MachineRuns) -> str:
        said = sorted({r.provenance.get("python.txt", "").strip() for r in runs[m.share.machine]} - {""})
        return safe.text("; ".join(said) or "n/a")

    def item(name: str, key: str) -> list[str]:
        return [name, *(safe.text(getattr(m.fingerprint, key) or "n/a") for m in machines)]

    rows = [
        ["blocks", *(safe.text(blocks_text(m.share)) for m in machines)],
        ["runs", *(safe.text(f"{len(m.runs)}: {', '.join(m.runs)}") for m in machines)],
        item("host", "hostname"),
        item("kernel", "kernel"),
        ["CPU", *(safe.text(machine_info.cpu_text(exp.analysis.machine, m.fingerprint) or "n/a") for m in machines)],
        item("driver", "driver"),
        item("CUDA", "cuda"),
        ["fingerprint", *(safe.code(m.share.machine) for m in machines)],
    ]
    gpus = max((len(m.fingerprint.gpus) for m in machines), default=0)
    for i in range(gpus):
        cells = []
        for m in machines:
            listed = m.fingerprint.gpus
            cells.append(_gpu_text(listed[i]) if i < len(listed) else "n/a")
        rows.append([f"GPU {i}", *cells])
    rows.append(["Python", *(python(m) for m in machines)])
    head = ["item", *(f"machine {i}: {safe.code(m.short)}" for i, m in enumerate(machines, start=1))]
    blocks = len({b for m in machines for b in m.share.blocks})
    intro = (
        f"The campaign's {fmt_count(blocks, 'block')} came from {len(machines)} machines of one class (same GPU "
        "model and count, driver, CPU, memory and image); each block, a pair of runs of every arm it holds, ran on "
        "one machine. Each machine below with the runs it made; the files of every run follow, each under its run "
        "and machine."
    )
    return ["## Machine\n", safe.text(intro) + "\n", table(head, rows, align=["l"] * len(head)) + "\n"]


def _machine_label(exp: PublishedExperiment, machines: list[MachineRuns], run: StoredRun) -> str:
    """A run's label in a folded section: its folder, and its machine where there are several."""
    if len(machines) < 2:
        return run.rel
    short = next((m.short for m in machines if m.share.machine == run.machine), None)
    return f"{run.rel} · machine {short or 'not recorded'}"


def machine_section(exp: PublishedExperiment) -> list[str]:
    machines = machines_of(exp)
    if len(machines) >= 2:
        return machines_section(exp, machines)
    m = exp.analysis.machine
    rows = [
        ["host", safe.text(m.hostname)],
        ["CPU", safe.text(machine_info.cpu_text(m, machine_info.fingerprint(exp)) or "n/a")],
        ["driver", safe.text(m.driver or "n/a")],
        ["CUDA", safe.text(m.cuda or "n/a")],
        ["fingerprint", safe.code(m.fingerprint_id)],
    ]
    for g in m.gpus or []:
        mem = g.get("memory_total_mib") or g.get("mem_total_mib")
        mem = mem if isinstance(mem, (int, float)) else None
        rows.append(
            [f"GPU {safe.text(g.get('index'))}", safe.text(g.get("name")) + (f", {fmt_num(mem, 0)} MiB" if mem else "")]
        )
    python = OrderedDict((r.rel, r.provenance.get("python.txt", "").strip()) for r in exp.formal_runs())
    if python:
        vals = set(python.values())
        rows.append(
            [
                "Python",
                safe.text(vals.pop())
                if len(vals) == 1
                else "**differs:** " + "; ".join(safe.text(f"{k}: {v}") for k, v in python.items()),
            ]
        )
    return ["## Machine\n", table(["item", "value"], rows, align=["l", "l"]) + "\n"]


def packages_section(exp: PublishedExperiment) -> list[str]:
    freezes = OrderedDict(
        (r.rel, _freeze(r.provenance["pip-freeze.txt"])) for r in exp.formal_runs() if "pip-freeze.txt" in r.provenance
    )
    if not freezes:
        return ["## Packages\n", "No pip freeze was recorded.\n"]
    first_rel, first = next(iter(freezes.items()))
    names = sorted(set().union(*freezes.values()))
    diffs = [n for n in names if len({f.get(n) for f in freezes.values()}) > 1]
    out = ["## Packages\n"]
    if diffs:
        out.append(f"**{len(diffs)} package(s) differ between runs** (the arms must run the same software):\n")
        out.append(
            table(
                ["package", *[safe.text(k) for k in freezes]],
                [[safe.text(n), *[safe.text(f.get(n, "absent")) for f in freezes.values()]] for n in diffs],
                align=["l"] * (1 + len(freezes)),
            )
            + "\n"
        )
    else:
        out.append(f"No difference between the {len(freezes)} runs' `pip freeze`.\n")
    out.append(f'??? info "All {len(first)} packages ({safe.text(first_rel)})"\n')
    out.append(
        "\n".join(
            "    " + line
            for line in table(
                ["package", "version"],
                [[safe.text(n), safe.text(v)] for n, v in sorted(first.items())],
                align=["l", "l"],
                html=False,
            ).split("\n")
        )
        + "\n"
    )
    return out


def code_section(exp: PublishedExperiment) -> list[str]:
    """Commit and state of each run's code; runs in the same state share one row."""
    info = exp.analysis.experiment
    groups: dict[tuple[str, str, str, str], list[str]] = {}
    for r in exp.formal_runs():
        g = r.git
        status = r.provenance.get("git-status.txt", "").strip()
        key = (
            safe.code((g.commit_id if g else None) or "not recorded"),
            safe.text((g.branch if g else None) or ""),
            "**uncommitted changes**" if (g and g.dirty) or status else "clean",
            safe.text(status) if status else "",
        )
        groups.setdefault(key, []).append(r.rel)
    rows = [
        [safe.text(", ".join(rels) if len(groups) > 1 else f"all {len(rels)} runs"), *key]
        for key, rels in groups.items()
    ]
    commit = info.baseline_commit
    out = [
        "## Code\n",
        (
            f"Baseline commit {safe.code(commit)}"
            if commit
            else "No commit was recorded for the baseline (the runs ran from a copy without git history)"
        )
        + (", with **uncommitted changes** in the working tree" if info.dirty else ", clean working tree")
        + ".\n",
    ]
    revisions = [(c.candidate, c.code_change) for c in exp.analysis.comparisons if c.code_change is not None]
    if revisions:
        out.append("The arms ran at git revisions, each from a clean checkout of its commit:\n")
        out += [f"- {safe.text(cand)}: {code_change.summary(code)}" for cand, code in revisions]
        out.append("")
    if rows:
        out.append(table(["runs", "commit", "branch", "state", "git status"], rows, align=["l"] * 5) + "\n")
    return out


def model_data_section(exp: PublishedExperiment) -> list[str]:
    """Model files and data files with their hashes; "none declared" when the spec named none (an
    empty manifest is not a table)."""
    runs = exp.formal_runs()
    out = ["## Model and data\n"]
    manifests = {
        r.rel: r.provenance.get("model-manifest.json") for r in runs if r.provenance.get("model-manifest.json")
    }
    doc = _json(next(iter(manifests.values()))) if manifests else {}
    files = doc.get("files")
    if isinstance(files, list) and files:
        same = len(set(manifests.values())) == 1
        out.append(
            ("Every run used the same model manifest. " if same else "**The model manifest differs between runs.** ")
            + f"Model folder {safe.code(doc.get('root'))}:\n"
        )
        out.append(
            table(
                ["file", "size", "SHA-256"],
                [[safe.text(f.get("path")), _size(f.get("size")), safe.code(f.get("sha256"))] for f in files],
                align=["l", "r", "l"],
            )
            + "\n"
        )
    else:
        w = exp.analysis.workload
        made = f" The model: {safe.text(w.model)}." if w.model and w.parameters else ""
        out.append(f"**Model:** no model files declared (spec `[provenance] model_dir`), so none was hashed.{made}\n")
    data = {r.rel: r.provenance.get("data-hashes.json") for r in runs if r.provenance.get("data-hashes.json")}
    ddoc = _json(next(iter(data.values()))) if data else {}
    # capture writes {"schema_version": 1, "files": {path: sha256}}; a bare {path: sha256} reads the same
    dfiles = ddoc.get("files") if "files" in ddoc else {k: v for k, v in ddoc.items() if k != "schema_version"}
    if isinstance(dfiles, dict) and dfiles:
        same = len(set(data.values())) == 1
        out.append(("Every run read the same data. " if same else "**The data hashes differ between runs.** ") + "\n")
        out.append(
            table(["file", "SHA-256"], [[safe.text(k), safe.code(v)] for k, v in dfiles.items()], align=["l", "l"])
            + "\n"
        )
    else:
        out.append("**Data:** none declared (spec `[provenance] data_files`), so no data file was hashed.\n")
    return out


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _field(line: str) -> tuple[int, str]:
    """A line of `nvidia-smi -q` by its place in the report: its indentation and its field's name."""
    return _indent(line), line.split(" : ", 1)[0].strip() if " : " in line else line.strip()


def changed_lines(text: str, first: str) -> str | None:
    """The lines of one `nvidia-smi -q` report that differ from another report of the same layout
    (`first`), each under the headings it sits in ("GPU 00000000:00:06.0", "Temperature"); "" when
    none differs, None when the two are not laid out alike (other fields, GPUs): then the report is
    shown whole. The runs of one machine print the same report but for its timestamp and readings
    (temperatures, power, clocks, a board of another slot): a twelfth of the text, not all of it again."""
    lines, base = text.splitlines(), first.splitlines()
    if len(lines) != len(base) or any(_field(a) != _field(b) for a, b in zip(lines, base, strict=True)):
        return None
    shown: dict[int, None] = {}
    for i, (line, was) in enumerate(zip(lines, base, strict=True)):
        if line == was:
            continue
        heads, depth = [], _indent(line)
        for j in range(i - 1, -1, -1):
            if depth == 0:
                break
            if lines[j].strip() and _indent(lines[j]) < depth:
                heads.append(j)
                depth = _indent(lines[j])
        shown.update(dict.fromkeys(reversed(heads)))
        shown[i] = None
    return "\n".join(lines[i] for i in sorted(shown))


def nvidia_smi_section(exp: PublishedExperiment) -> list[str]:
    """Each run's `nvidia-smi -q`: the first run of each machine's whole, every other run of that
    machine as the lines that differ from it (`changed_lines`; issue 45: twelve runs' reports were a
    fifth of a report's pages), or whole where its layout differs."""
    out = ["## nvidia-smi -q\n"]
    found = False
    machines = machines_of(exp)
    firsts: dict[str | None, tuple[str, str]] = {}  # machine -> (its first run's label, its report)
    for r in exp.formal_runs():
        text = r.provenance.get("nvidia-smi.txt")
        if not text:
            continue
        found = True
        label = _machine_label(exp, machines, r)
        first = firsts.get(r.machine)
        changed = changed_lines(text, first[1]) if first is not None else None
        if first is None or changed is None:
            firsts.setdefault(r.machine, (r.rel, text))
            out.append(f'??? note "{safe.text(label)}"\n' + safe.fence(text, "text", indent="    ") + "\n")
        elif not changed:
            out.append(f'??? note "{safe.text(label)}: the same as {safe.text(first[0])}\'s"\n')
            out.append(f"    Every line as in {safe.code(first[0])}'s report, above.\n")
        else:
            out.append(f'??? note "{safe.text(label)}: the lines that differ from {safe.text(first[0])}\'s"\n')
            out.append(
                f"    Every other line as in {safe.code(first[0])}'s report, above; each line here under its headings.\n"
            )
            out.append(safe.fence(changed, "text", indent="    ") + "\n")
    if not found:
        out.append("Not recorded (no NVIDIA driver on the machine).\n")
    return out


ENV_WIDTH = 100


def _env_lines(env: dict) -> str:
    """KEY=value, one a line; a value longer than the page column continues on indented lines."""
    out = []
    for k, v in env.items():
        text = f"{k}={v}"
        out += textwrap.wrap(text, ENV_WIDTH, subsequent_indent="    ", break_on_hyphens=False) or [text]
    return "\n".join(out)


TEMPORARY_RECIPE = ".reportgen."  # the runner's patched copy beside the recipe (plan.arms.Plan.launch_script)


def kept_command(exp: PublishedExperiment, run: StoredRun) -> tuple[list[str], list[str]]:
    """(shell lines, what was changed, in words) of a run's command as it can be run again: the
    runner's temporary recipe (removed when the run ended) becomes the copy kept in the run folder,
    and a working directory that was the repository's root becomes "from your checkout's root"."""
    cmd = run.command
    if cmd is None:
        return [], []
    lines: list[str] = []
    notes: list[str] = []
    repo = run.git.repo_path if run.git is not None else None
    if cmd.cwd and repo and cmd.cwd.rstrip("/") == repo.rstrip("/"):
        lines.append(f"# in the root of a checkout of this repository (it ran in its root, {cmd.cwd})")
    elif cmd.cwd:
        lines.append(f"cd {quote(cmd.cwd)}")
    words = []
    for w in (str(w) for w in cmd.command):
        name = w.rsplit("/", 1)[-1]
        if name.startswith(TEMPORARY_RECIPE):
            kept = RECIPE_SCRIPT if name.endswith(".sh") else RECIPE_ARGV
            words.append(f"runs/{exp.name}/{run.rel}/{kept}")
            notes.append(
                f"The runner ran its patched copy {safe.code(w)}, removed when the run ended; "
                f"the run folder keeps that file as {safe.code(kept)}."
            )
        else:
            words.append(w)
    if words:
        lines.append(wrapped_words(words))
    return lines, notes


def commands_section(exp: PublishedExperiment) -> list[str]:
    """Each run's command, working directory and environment, as command.json recorded them, with
    the temporary recipe it ran replaced by the copy kept in the run folder so the command runs as
    printed; the command wrapped so no line runs off the page (an environment value can be kilobytes)."""
    out = ["## Commands\n"]
    machines = machines_of(exp)
    for r in exp.formal_runs():
        cmd = r.command
        if cmd is None or not (cmd.command or cmd.cwd or cmd.env):
            continue
        body, notes = kept_command(exp, r)
        out.append(f'??? note "{safe.text(_machine_label(exp, machines, r))}"\n')
        if body:
            out.append(safe.fence("\n".join(body), "bash", indent="    ") + "\n")
        for note in notes:
            out.append(f"    {note}\n")
        env = cmd.env
        if env:
            total = cmd.env_total
            left = (
                f"; {total - len(env)} others of the machine's environment are not published"
                if total is not None and total > len(env)
                else ""
            )
            out.append(
                f"    Environment: the {len(env)} variables of the frameworks (CUDA, NCCL, PyTorch, ...) and of the "
                f"recipe{left}; to make this run again, set the recipe's own as here:\n"
            )
            out.append(safe.fence(_env_lines(env), "text", indent="    ") + "\n")
    if len(out) == 1:
        out.append("No command was recorded.\n")
    return out


def artifacts_section(exp: PublishedExperiment) -> list[str]:
    out = [
        "## Artifacts\n",
        "Profiler output comes from separate short runs (never the formal measurements). "
        "The files stay in `runs/`; they are listed here, not embedded.\n",
    ]
    rows = []
    for p in exp.analysis.profiler_runs:
        for a in p.artifacts:
            path = f"{p.path}/{a.path}"
            rows.append(
                [
                    safe.code(f"runs/{exp.name}/{path}"),
                    _size(a.bytes),
                    safe.code(a.sha256),
                    safe.text(_open_with(a.path)),
                ]
            )
    if rows:
        out.append(table(["file", "size", "SHA-256", "open with"], rows, align=["l", "r", "l", "l"]) + "\n")
    else:
        out.append("No profiler run was recorded.\n")
    return out


def render(exp: PublishedExperiment) -> Page:
    md = [
        "# Provenance\n",
        "[← back to the experiment](../index.md)\n",
        *machine_section(exp),
        *packages_section(exp),
        *code_section(exp),
        *model_data_section(exp),
        *nvidia_smi_section(exp),
        *commands_section(exp),
        *artifacts_section(exp),
    ]
    return Page(
        path=f"{experiment_base(exp.name)}/provenance/index.md",
        title=f"Provenance: {exp.name} ({report_kind(exp).label})",
        nav_title="Provenance",
        markdown="\n".join(md),
    )
