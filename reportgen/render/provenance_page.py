"""The provenance page (render stage): machine, versions, code, model and data hashes,
nvidia-smi, commands, and profiler artifacts listed (size, SHA-256, how to open), never embedded."""

from __future__ import annotations

import json
from collections import OrderedDict

from reportgen.render import machine as machine_info
from reportgen.render import safe
from reportgen.render.blocks import table
from reportgen.render.format import fmt_num
from reportgen.render.load import ExperimentData
from reportgen.render.page import Page, experiment_base

OPEN_WITH = (
    (".trace.json.gz", "Perfetto (ui.perfetto.dev, runs in the browser; the file stays local) or chrome://tracing"),
    (".trace.json", "Perfetto or chrome://tracing"),
    (".pickle", "PyTorch memory viz (pytorch.org/memory_viz, drag the file in; it stays local)"),
    (".pt.trace.json", "Perfetto"),
)


def _json(text: str) -> object | None:
    try:
        return json.loads(text)
    except (ValueError, TypeError):
        return None


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
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def _open_with(path: str) -> str:
    for suffix, how in OPEN_WITH:
        if path.endswith(suffix):
            return how
    return "any viewer for its type"


def machine_section(exp: ExperimentData) -> list[str]:
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


def packages_section(exp: ExperimentData) -> list[str]:
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


def code_section(exp: ExperimentData) -> list[str]:
    info = exp.analysis.experiment
    rows = []
    for r in exp.formal_runs():
        g = _json(r.provenance.get("git.json", "")) or {}
        status = r.provenance.get("git-status.txt", "").strip()
        rows.append(
            [
                safe.text(r.rel),
                safe.code(g.get("commit") or g.get("head") or "n/a"),  # capture writes "head"
                safe.text(g.get("branch") or ""),
                "**dirty**" if g.get("dirty") or status else "clean",
                safe.text(status) if status else "",
            ]
        )
    out = [
        "## Code\n",
        f"Baseline commit {safe.code(info.baseline_commit or 'unknown')}, "
        + ("**dirty working tree**" if info.dirty else "clean working tree")
        + ".\n",
    ]
    if rows:
        out.append(table(["run", "commit", "branch", "state", "git status"], rows, align=["l"] * 5) + "\n")
    return out


def model_data_section(exp: ExperimentData) -> list[str]:
    runs = exp.formal_runs()
    out = ["## Model and data\n"]
    manifests = {
        r.rel: r.provenance.get("model-manifest.json") for r in runs if r.provenance.get("model-manifest.json")
    }
    if manifests:
        same = len(set(manifests.values())) == 1
        _rel, text = next(iter(manifests.items()))
        doc = _json(text) or {}
        files = doc.get("files", []) if isinstance(doc, dict) else []
        out.append(
            ("Every run used the same model manifest. " if same else "**The model manifest differs between runs.** ")
            + f"Model folder {safe.code(doc.get('root') if isinstance(doc, dict) else '')}:\n"
        )
        out.append(
            table(
                ["file", "size", "SHA-256"],
                [[safe.text(f.get("path")), _size(f.get("size")), safe.code(f.get("sha256"))] for f in files],
                align=["l", "r", "l"],
            )
            + "\n"
        )
    data = {r.rel: r.provenance.get("data-hashes.json") for r in runs if r.provenance.get("data-hashes.json")}
    if data:
        same = len(set(data.values())) == 1
        doc = _json(next(iter(data.values()))) or {}
        out.append(("Every run read the same data. " if same else "**The data hashes differ between runs.** ") + "\n")
        items = doc.items() if isinstance(doc, dict) else []
        out.append(
            table(["file", "SHA-256"], [[safe.text(k), safe.code(v)] for k, v in items], align=["l", "l"]) + "\n"
        )
    if len(out) == 1:
        out.append("No model manifest or data hashes were recorded.\n")
    return out


def nvidia_smi_section(exp: ExperimentData) -> list[str]:
    out = ["## nvidia-smi -q\n"]
    found = False
    for r in exp.formal_runs():
        text = r.provenance.get("nvidia-smi.txt")
        if text:
            found = True
            out.append(f'??? note "{safe.text(r.rel)}"\n' + safe.fence(text, "text", indent="    ") + "\n")
    if not found:
        out.append("Not recorded (no NVIDIA driver on the machine).\n")
    return out


def commands_section(exp: ExperimentData) -> list[str]:
    out = ["## Commands\n"]
    for r in exp.formal_runs():
        if r.command:
            out.append(
                f'??? note "{safe.text(r.rel)}"\n'
                + safe.fence(json.dumps(r.command, indent=2, ensure_ascii=False), "json", indent="    ")
                + "\n"
            )
    return out


def artifacts_section(exp: ExperimentData) -> list[str]:
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


def render(exp: ExperimentData) -> Page:
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
    return Page(path=f"{experiment_base(exp.name)}/provenance/index.md", title="Provenance", markdown="\n".join(md))
