""" "Where the time went": the profiler runs' breakdown on the candidate and experiment pages.

Render stage. Reads only the stored summaries (`traces.parquet`, written by reportgen.traces
when a profiler run is ingested), never a trace: a site built from a clone without the traces
(a committed showcase) shows the same section. Trace files that are present are copied next
to the experiment page as downloads (the build writes them into the site, never into runs/).

What it shows, per arm with a profiler run (`profile-<arm>`, or a run ingested with --traces):
stacked bars of each profiled step and rank (GPU kernel time by category, copies by direction,
GPU idle; on a CPU-only trace, CPU operator self time and Python overhead), the difference
candidate minus baseline by category with the operators that account for it, the host spans
(optimizer step, data movement, Python overhead) and, for a failed candidate, the memory at
the failure from its OOM snapshot.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from reportgen import vocab
from reportgen.render import blocks, charts, figures, safe
from reportgen.render.blocks import table
from reportgen.render.format import fmt_num
from reportgen.render.load import ExperimentData
from reportgen.store import layout
from reportgen.traces import categories as cats
from reportgen.traces import model

TOP_DIFF_OPS = 8
IDLE = "GPU idle"
PYTHON = "Python overhead"
SPAN_TITLES = {
    "optimizer_step": "host: optimizer step",
    "data_movement": "host: data movement",
    "python_overhead": "host: Python overhead",
}
PART_ORDER = (*cats.COMPUTE_CATEGORIES, *cats.MEMCPY_DIRECTIONS, IDLE, PYTHON)
# Every colour at least 3:1 against the white and the dark page (render/charts.py ARM_COLORS).
PART_COLORS = (
    "#1a73e8",  # GEMM
    "#a142f4",  # attention
    "#12a4af",  # elementwise/norm
    "#e37400",  # optimizer
    "#1e8e3e",  # communication
    "#5c6bc0",  # other
    "#d93025",  # H2D
    "#e52592",  # D2H
    "#b35c00",  # D2D
    "#8a8f94",  # GPU idle
    "#8a8f94",  # Python overhead (CPU view, where there is no GPU idle)
)
TRACE_DIR = "traces"
PERFETTO = "https://ui.perfetto.dev/"


@dataclasses.dataclass(frozen=True)
class Section:
    markdown: str
    charts: dict[str, dict] = dataclasses.field(default_factory=dict)
    files: dict[str, bytes] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class ArmTime:
    """One arm's stored summary rows (from its profiler runs) and where they came from."""

    arm: str
    runs: tuple[str, ...]  # run folders relative to the experiment, e.g. "profile-A1/1"
    rows: tuple[model.TraceRow, ...]
    traces: tuple[tuple[str, Path | None, dict[str, Any]], ...]  # (run rel, file on disk or None, artifact)
    notes: tuple[str, ...] = ()  # summaries that could not be read

    @property
    def view(self) -> str:
        views = {r.view for r in self.rows if r.source == "train"}
        return "gpu" if "gpu" in views else "cpu"


def _arm_of(folder: str) -> str:
    return folder[len(vocab.PROFILE_PREFIX) :] if folder.startswith(vocab.PROFILE_PREFIX) else folder


def load(exp: ExperimentData) -> dict[str, ArmTime]:
    """Every arm's summaries: time from its profiler runs (formal runs' when it has none), memory
    from all its runs (an OOM snapshot comes from the run that failed, not the profiler run)."""
    memo = exp.derived
    if "time_section" in memo:
        return memo["time_section"]
    found: dict[str, list[tuple[bool, str, Path]]] = defaultdict(list)
    for folder, repeat, path in layout.iter_runs(exp.path):
        if (path / model.FILENAME).is_file():
            found[_arm_of(folder)].append((folder.startswith(vocab.PROFILE_PREFIX), f"{folder}/{repeat}", path))
    out: dict[str, ArmTime] = {}
    manifests = {r.rel: r.manifest for r in exp.runs}
    for arm, runs in found.items():
        timed = {rel for is_profile, rel, _ in runs if is_profile} or {rel for _, rel, _ in runs}
        rows: list[model.TraceRow] = []
        traces: list[tuple[str, Path | None, dict[str, Any]]] = []
        notes: list[str] = []
        for _, rel, path in runs:
            try:
                got = model.read(path / model.FILENAME)
            except (model.SummaryFormatError, OSError, ValueError) as exc:
                notes.append(f"{rel}/{model.FILENAME}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}")
                continue
            keep = [r for r in got if rel in timed or r.source == "memory"]
            rows += keep
            files = {r.file for r in keep}
            for a in (manifests.get(rel) or {}).get("artifacts") or []:
                if str(a.get("path", "")) in files:
                    file = path / str(a["path"])
                    traces.append((rel, file if file.is_file() else None, a))
        out[arm] = ArmTime(arm, tuple(sorted(timed)), tuple(rows), tuple(traces), tuple(notes))
    memo["time_section"] = out
    return out


def _train_rows(at: ArmTime) -> list[model.TraceRow]:
    """Training-trace rows, one file per rank (the longest, when several targets were traced)."""
    walls: dict[tuple[int, str], float] = defaultdict(float)
    for r in at.rows:
        if r.source == "train" and r.kind == "wall":
            walls[(r.rank, r.file)] += r.time_us
    best: dict[int, str] = {}
    for (rank, file), wall in sorted(walls.items()):
        if rank not in best or wall > walls[(rank, best[rank])]:
            best[rank] = file
    return [r for r in at.rows if r.source == "train" and best.get(r.rank) == r.file]


def step_parts(at: ArmTime) -> pd.DataFrame:
    """arm, bar ("baseline · rank 0 · step 3"), part, ms, o: one stacked bar per step and rank."""
    rows = _train_rows(at)
    out = []
    for r in rows:
        if r.kind in ("compute", "memcpy"):
            part = r.category
        elif r.kind == "idle":
            part = IDLE
        elif r.kind == "cpu_span" and r.category == "python_overhead" and r.view == "cpu":
            part = PYTHON
        else:
            continue
        step = "whole trace" if r.step == model.WHOLE_TRACE else f"step {r.step}"
        out.append(
            {
                "arm": at.arm,
                "bar": f"{at.arm} · rank {r.rank} · {step}",
                "part": part,
                "ms": r.time_us / 1000.0,
                "o": PART_ORDER.index(part),
            }
        )
    return pd.DataFrame(out, columns=["arm", "bar", "part", "ms", "o"])


def per_step(at: ArmTime) -> dict[str, float]:
    """Mean per profiled step (over steps and ranks) of every quantity the tables show, in ms
    (bytes for `bytes:<direction>`)."""
    rows = _train_rows(at)
    n = len({(r.rank, r.step) for r in rows if r.kind == "wall"}) or 1
    sums: dict[str, float] = defaultdict(float)
    for r in rows:
        if r.kind == "wall":
            sums["wall"] += r.time_us / 1000
        elif r.kind in ("compute", "memcpy"):
            sums[r.category] += r.time_us / 1000
            if r.kind == "memcpy":
                sums[f"bytes:{r.category}"] += r.bytes
        elif r.kind == "idle":
            sums[IDLE] += r.time_us / 1000
        elif r.kind == "cpu_span":
            sums[SPAN_TITLES[r.category]] += r.time_us / 1000
            if r.category == "python_overhead" and r.view == "cpu":
                sums[PYTHON] += r.time_us / 1000  # a part of the CPU view's bars
    return {k: v / n for k, v in sums.items()}


def top_ops(at: ArmTime) -> dict[str, tuple[float, str]]:
    """Operator name -> (mean ms per step, category) from the stored top operators."""
    rows = _train_rows(at)
    n = len({(r.rank, r.step) for r in rows if r.kind == "wall"}) or 1
    out: dict[str, list] = {}
    for r in rows:
        if r.kind == "top_op":
            slot = out.setdefault(r.name, [0.0, r.category])
            slot[0] += r.time_us / 1000 / n
    return {k: (v[0], v[1]) for k, v in out.items()}


BARS_DATA = pd.DataFrame({"arm": ["a"], "bar": ["a · rank 0 · step 1"], "part": ["GEMM"], "ms": [0.0], "o": [0]})
DIFF_DATA = pd.DataFrame({"part": ["GEMM"], "ms": [0.0], "sign": ["faster"]})


# charts' template store keys a template by charts.py's text and the arguments: this file's own
# digest goes into the arguments so an edit here is not served a stale cached template.
_SOURCE = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]


@charts._template
def _bars_template(source: str, bars: tuple[str, ...], parts: tuple[str, ...], xtitle: str) -> dict:
    import altair as alt  # imported on a template-store miss only (about 1 s)

    colors = [PART_COLORS[PART_ORDER.index(p)] for p in parts]
    chart = (
        alt.Chart(charts._named("main", BARS_DATA))
        .mark_bar(stroke=charts.NEUTRAL, strokeWidth=0.3)
        .encode(
            y=alt.Y(field="bar", type="nominal", sort=list(bars), title=None),
            x=alt.X(field="ms", type="quantitative", aggregate="sum", title=xtitle),
            color=alt.Color(
                field="part",
                type="nominal",
                sort=list(parts),
                scale=alt.Scale(domain=list(parts), range=colors),
                legend=alt.Legend(title=None, orient="top", columns=3),
            ),
            order=alt.Order(field="o", type="quantitative"),
            tooltip=[
                alt.Tooltip(field="bar", type="nominal", title="step"),
                alt.Tooltip(field="part", type="nominal"),
                alt.Tooltip(field="ms", type="quantitative", format=".2f", title="ms"),
            ],
        )
        .properties(width="container", height=26 * len(bars) + 30)
    )
    return charts._to_dict(chart)


@charts._template
def _diff_template(source: str, parts: tuple[str, ...], title: str) -> dict:
    import altair as alt  # imported on a template-store miss only (about 1 s)

    chart = (
        alt.Chart(charts._named("main", DIFF_DATA))
        .mark_bar()
        .encode(
            y=alt.Y(field="part", type="nominal", sort=list(parts), title=None),
            x=alt.X(field="ms", type="quantitative", title=title),
            color=alt.Color(
                field="sign",
                type="nominal",
                scale=alt.Scale(domain=["less time", "more time"], range=["#1e8e3e", "#d93025"]),
                legend=alt.Legend(title=None, orient="top"),
            ),
            tooltip=[
                alt.Tooltip(field="part", type="nominal"),
                alt.Tooltip(field="ms", type="quantitative", format="+.2f", title="ms per step"),
            ],
        )
        .properties(width="container", height=22 * len(parts) + 30)
    )
    return charts._to_dict(chart)


def bars_chart(arms: list[ArmTime]) -> dict | None:
    frames = [step_parts(a) for a in arms]
    frame = (
        pd.concat([f for f in frames if not f.empty], ignore_index=True) if any(not f.empty for f in frames) else None
    )
    if frame is None or float(frame["ms"].sum()) == 0.0:
        return None
    totals = frame.groupby("part")["ms"].sum()
    frame = frame[frame["part"].map(totals) > 0]  # a part no step has (communication on one GPU) is no legend entry
    parts = tuple(p for p in PART_ORDER if p in set(frame["part"]))
    bars = tuple(dict.fromkeys(frame["bar"]))
    view = "gpu" if any(a.view == "gpu" for a in arms) else "cpu"
    xtitle = "ms (kernels, copies, idle)" if view == "gpu" else "ms (CPU operator self time)"
    return charts._finish(_bars_template(_SOURCE, bars, parts, xtitle), {"main": charts._csv(frame)})


def _table_keys(means: list[dict[str, float]]) -> list[str]:
    """Rows of the per-step tables: the bar parts, then the host spans (Python overhead once:
    in the CPU view it is already a part)."""
    spans = list(SPAN_TITLES.values())
    if any(PYTHON in m for m in means):
        spans.remove(SPAN_TITLES["python_overhead"])
    return [*PART_ORDER, *spans]


def diff_parts(base: ArmTime, cand: ArmTime) -> list[tuple[str, float, float, float]]:
    """(part, baseline ms, candidate ms, difference) per step, for every part either arm has."""
    b, c = per_step(base), per_step(cand)
    keys = _table_keys([b, c])
    return [(k, b.get(k, 0.0), c.get(k, 0.0), c.get(k, 0.0) - b.get(k, 0.0)) for k in keys if k in b or k in c]


def diff_chart(base: ArmTime, cand: ArmTime) -> dict | None:
    """Candidate minus baseline per category, GPU and host alike (a host-side optimizer step the GPU
    waits for is the cause its idle time is the symptom of), largest first."""
    parts = sorted(
        ((k, d) for k, bv, cv, d in diff_parts(base, cand) if (bv or cv) and k != PYTHON), key=lambda t: -abs(t[1])
    )
    if not parts or all(d == 0.0 for _, d in parts):
        return None
    frame = pd.DataFrame(
        {
            "part": [k for k, _ in parts],
            "ms": [d for _, d in parts],
            "sign": ["less time" if d < 0 else "more time" for _, d in parts],
        }
    )
    title = f"{cand.arm} minus {base.arm}, ms per step"
    return charts._finish(_diff_template(_SOURCE, tuple(frame["part"]), title), {"main": charts._csv(frame)})


def _ms(x: float) -> str:
    return fmt_num(x, 1 if abs(x) >= 10 else 2)


def _mib(x: float) -> str:
    return fmt_num(x / 2**20, 1)


def _signed(d: float, fmt: Callable[[float], str]) -> str:
    return ("+" if d > 0 else "") + fmt(d)


def headline(base: ArmTime, cand: ArmTime) -> str:
    """One sentence: the step time's change and the three parts that changed most, copies in MiB."""
    b, c = per_step(base), per_step(cand)
    parts = sorted(diff_parts(base, cand), key=lambda t: -abs(t[3]))[:3]
    said = [f"{safe.text(k)} {_signed(d, _ms)} ms" for k, _, _, d in parts if d != 0.0]
    copied = sum(c.get(f"bytes:{d}", 0.0) - b.get(f"bytes:{d}", 0.0) for d in cats.MEMCPY_DIRECTIONS)
    if copied:
        said.append(f"{_signed(copied, _mib)} MiB copied")
    wall = c.get("wall", 0.0) - b.get("wall", 0.0)
    lead = f"**{safe.text(cand.arm)} against the baseline, per profiled step:** wall time {_signed(wall, _ms)} ms"
    return lead + ("; largest changes: " + ", ".join(said) if said else "") + ".\n"


SAME_WITHIN = 0.05  # kernels within 5 % (or 1 ms) of the baseline's are "the same"


def conclusion(base: ArmTime, cand: ArmTime) -> str:
    """Why the step got faster or slower, in one sentence: the host-side spans and copies that
    changed (the cause), GPU kernel time (unchanged or not), and GPU idle time (the symptom)."""
    b, c = per_step(base), per_step(cand)
    wall = c.get("wall", 0.0) - b.get("wall", 0.0)
    kernels_b = sum(b.get(k, 0.0) for k in cats.COMPUTE_CATEGORIES)
    kernels_c = sum(c.get(k, 0.0) for k in cats.COMPUTE_CATEGORIES)
    host = sorted(
        ((k, c.get(k, 0.0) - b.get(k, 0.0)) for k in SPAN_TITLES.values() if k in b or k in c),
        key=lambda t: -abs(t[1]),
    )
    copies = sum(c.get(d, 0.0) - b.get(d, 0.0) for d in cats.MEMCPY_DIRECTIONS)
    idle = c.get(IDLE, 0.0) - b.get(IDLE, 0.0)
    way = "shorter" if wall < 0 else "longer"
    big = max(1.0, 0.05 * abs(wall))  # a part that moved less than this explains nothing of the change
    # the host-side spans that moved the way the step did (a span that grew cannot explain a faster step)
    causes = [f"{k.removeprefix('host: ')} {_signed(d, _ms)} ms" for k, d in host if abs(d) >= big and d * wall > 0][:2]
    if abs(copies) >= big and copies * wall > 0:
        causes.append(f"copies between host and device {_signed(copies, _ms)} ms")
    if abs(wall) < max(1.0, SAME_WITHIN * b.get("wall", 0.0)):
        return (
            f"**Where the time went:** {safe.text(cand.arm)}'s profiled step takes the same time as the baseline's "
            f"({_ms(b.get('wall', 0.0))} and {_ms(c.get('wall', 0.0))} ms).\n"
        )
    same = abs(kernels_c - kernels_b) <= max(1.0, SAME_WITHIN * kernels_b)
    gpu = (
        f"the GPU's kernels take the same time ({_ms(kernels_b)} and {_ms(kernels_c)} ms)"
        if same
        else f"the GPU's kernels take {_signed(kernels_c - kernels_b, _ms)} ms"
    )
    text = f"**Where the time went:** {safe.text(cand.arm)}'s profiled step is {_ms(abs(wall))} ms {way}"
    if causes:
        text += f" because of the host side ({safe.text(', '.join(causes))})"
    text += f"; {gpu}"
    if idle and same:
        text += f", and the GPU idles {_ms(abs(idle))} ms {'less' if idle < 0 else 'more'}: it waits on the host"
    return text + ".\n"


def diff_table(base: ArmTime, cand: ArmTime) -> str:
    b, c = per_step(base), per_step(cand)
    wall = c.get("wall", 0.0) - b.get("wall", 0.0)
    rows = [
        [
            "**step wall time**",
            f"**{_ms(b.get('wall', 0.0))}**",
            f"**{_ms(c.get('wall', 0.0))}**",
            f"**{_signed(wall, _ms)}**",
        ]
    ]
    for part, bv, cv, d in diff_parts(base, cand):
        rows.append([safe.text(part), _ms(bv), _ms(cv), _signed(d, _ms)])
    for direction in cats.MEMCPY_DIRECTIONS:
        key = f"bytes:{direction}"
        if b.get(key) or c.get(key):
            bv, cv = b.get(key, 0.0), c.get(key, 0.0)
            rows.append([f"{direction} copied (MiB)", _mib(bv), _mib(cv), _signed(cv - bv, _mib)])
    header = ["ms per profiled step", safe.text(base.arm), safe.text(cand.arm), f"{safe.text(cand.arm)} − baseline"]
    return table(header, rows)


_IDENT = re.compile(r"[A-Za-z_]\w*")
_GENERIC = frozenset({"BinaryFunctor", "UnaryFunctor", "TernaryFunctor", "gpu_kernel_impl", "gpu_kernel_impl_nocast"})


def _split_template(text: str) -> tuple[str, str]:
    """(name before its template arguments, the arguments) of `name<args>(params)`, at depth 0."""
    depth, cut = 0, len(text)
    for i, ch in enumerate(text):
        if ch == "<":
            if depth == 0 and cut == len(text):
                cut = i
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0:
            return text[: min(cut, i)], text[cut + 1 : i] if cut < i else ""
    return text[:cut], text[cut + 1 :] if cut < len(text) else ""


def operator_label(name: str) -> str:
    """A readable name for a demangled CUDA kernel: its function's own name and the functor or
    kernel its template names ("elementwise_kernel<MulFunctor>"), not the first 70 characters of
    a 700-character signature (which read "void at::native::elementwise_kernel<128, 4, at::…").
    Names without a template or parameter list (aten ops, cuBLAS kernels) stay as they are."""
    text = " ".join(name.split()).replace("(anonymous namespace)::", "")
    if not text.startswith("void ") and "<" not in text:
        return text  # not a C++ signature: an aten op, a cuBLAS/cuDNN kernel, "Memcpy HtoD (...)"
    text = text.removeprefix("void ")
    outer, args = _split_template(text)
    outer = outer.rsplit("::", 1)[-1] or outer
    idents = [w for w in _IDENT.findall(args) if w not in _GENERIC]
    telling = [w for w in idents if w.endswith(("Functor", "Ops", "Op")) or "Functor_" in w]
    telling = telling or [w for w in idents if w.endswith(("_kernel_cuda", "_kernel_impl", "_kernel"))]
    return f"{outer}<{telling[-1]}>" if telling else outer


def ops_table(base: ArmTime, cand: ArmTime) -> str:
    b, c = top_ops(base), top_ops(cand)
    names = set(b) | set(c)
    diffs = sorted(((c.get(n, (0.0, ""))[0] - b.get(n, (0.0, ""))[0], n) for n in names), key=lambda t: -abs(t[0]))[
        :TOP_DIFF_OPS
    ]
    rows = []
    for d, n in diffs:
        cat = (c.get(n) or b.get(n) or (0.0, ""))[1]
        rows.append(
            [
                safe.code(operator_label(n), title=n),
                safe.text(cat),
                _ms(b.get(n, (0.0, ""))[0]),
                _ms(c.get(n, (0.0, ""))[0]),
                ("+" if d > 0 else "") + _ms(d),
            ]
        )
    return table(["operator", "category", f"{safe.text(base.arm)} ms", f"{safe.text(cand.arm)} ms", "difference"], rows)


def memory_lines(at: ArmTime) -> list[str]:
    """Peak memory of the arm's snapshots, and for an OOM snapshot what was live at the failure."""
    mem = [r for r in at.rows if r.source == "memory"]
    out = []
    peaks = {r.category: r.bytes for r in mem if r.kind == "mem_peak"}
    if "cpu_peak_rss" in peaks:
        out.append(
            f"Peak resident memory of the process (CPU run, no CUDA allocator): {_mib(peaks['cpu_peak_rss'])} MiB.\n"
        )
    if "allocated" in peaks:
        out.append(
            f"Memory snapshot: peak allocated {_mib(peaks['allocated'])} MiB, peak reserved "
            f"{_mib(peaks.get('reserved', 0))} MiB.\n"
        )
        live = [r for r in mem if r.kind == "mem_live" and not r.name]
        if live:
            out.append(
                "Live at the peak by code area: "
                + ", ".join(
                    f"{safe.text(r.category)} {_mib(r.bytes)} MiB" for r in sorted(live, key=lambda r: -r.bytes)
                )
                + ".\n"
            )
        frames = [r for r in mem if r.kind == "mem_live" and r.name][:5]
        if frames:
            out.append(
                table(
                    ["largest live allocations at the peak (allocating frame)", "area", "MiB", "blocks"],
                    [[safe.code(r.name), safe.text(r.category), _mib(r.bytes), fmt_num(r.count, 0)] for r in frames],
                )
                + "\n"
            )
    oom = [r for r in mem if r.kind == "mem_oom"]
    if oom:
        req = next((r.bytes for r in oom if r.category == "requested"), 0)
        free = next((r.bytes for r in oom if r.category == "device_free"), 0)
        out.append(
            f"**Memory at the failure** (OOM snapshot): {_mib(req)} MiB requested with {_mib(free)} MiB free on the device. Live then:\n"
        )
        out.append(
            table(
                ["allocating frame", "MiB", "blocks"],
                [[safe.code(r.name), _mib(r.bytes), fmt_num(r.count, 0)] for r in oom if r.category == "live"],
            )
            + "\n"
        )
    return out


def sglang_table(arms: list[ArmTime]) -> str:
    """Rollout engines' kernel time by category (mean per profiled step, or the whole trace)."""
    rows = []
    for at in arms:
        per: dict[tuple[int, int], dict[str, float]] = defaultdict(lambda: defaultdict(float))
        steps: dict[tuple[int, int], set[int]] = defaultdict(set)
        for r in at.rows:
            if r.source != "sglang":
                continue
            key = (r.engine, r.rank)
            if r.kind == "wall":
                steps[key].add(r.step)
                per[key]["wall"] += r.time_us / 1000
            elif r.kind in ("compute", "memcpy", "idle"):
                per[key][IDLE if r.kind == "idle" else r.category] += r.time_us / 1000
        for (engine, tp), sums in sorted(per.items()):
            n = len(steps[(engine, tp)]) or 1
            rows.append(
                [safe.text(at.arm), f"{engine} / TP {tp}"]
                + [_ms(sums.get(k, 0.0) / n) for k in ("wall", *cats.COMPUTE_CATEGORIES, IDLE)]
            )
    if not rows:
        return ""
    head = ["arm", "engine", "wall ms", *(f"{c} ms" for c in cats.COMPUTE_CATEGORIES), "GPU idle ms"]
    return "Rollout (SGLang) engines, kernel time per profiled step:\n\n" + table(head, rows) + "\n"


def _notes(arms: list[ArmTime]) -> list[str]:
    return [f"- summary not read: {safe.code(n)}" for a in arms for n in a.notes]


def _size(n: float) -> str:
    return f"{fmt_num(n / 2**20, 1)} MiB" if n >= 2**20 else f"{fmt_num(n / 1024, 1)} KiB"


def _download_name(rel: str, artifact: dict[str, Any]) -> str:
    return f"{rel.replace('/', '-')}-{Path(str(artifact['path'])).name}"


def downloads(arms: list[ArmTime], prefix: str, experiment: str = "<experiment>") -> tuple[str, dict[str, Path]]:
    """Markdown list of the trace files (links to copies made at build time) and the files to copy,
    by site path: only the experiment page reads them (a trace can be hundreds of MiB). For a file
    not in this copy of the runs, where it was and how to get it."""
    lines: list[str] = []
    files: dict[str, Path] = {}
    missing: list[str] = []
    for at in arms:
        for rel, file, artifact in at.traces:
            name = _download_name(rel, artifact)
            size = _size(float(artifact.get("bytes", 0)))
            if file is not None:
                files[f"{TRACE_DIR}/{name}"] = file
                lines.append(
                    f"- {safe.text(at.arm)}: [{safe.text(Path(str(artifact['path'])).name)}]({prefix}{TRACE_DIR}/{name}) ({size})"
                )
            else:
                sha = str(artifact.get("sha256", ""))[:12]
                where = f"runs/{experiment}/{rel}/{artifact['path']}"
                missing.append(where)
                lines.append(
                    f"- {safe.text(at.arm)}: {safe.code(where)} ({size}, sha256 {safe.code(sha)}…): not in this "
                    "copy of the runs"
                )
    if not lines:
        return "", {}
    if missing:
        lines.append(
            "\nTrace files stay out of git (megabytes each); the tables and charts above come from their stored "
            "summaries (`traces.parquet`, committed). To open a trace: copy it from the machine that ran the "
            "campaign to the same path in your checkout (the SHA-256 above tells it is the same file) and build the "
            "site again, and the names above become download links; or run the experiment again (its profiler runs "
            "make new traces, `[profiler]` in the spec), then `python -m reportgen.traces RUN` summarises a run's "
            "traces again."
        )
    how = (
        "Chrome traces (`.json.gz`) open in [Perfetto](" + PERFETTO + ") (Open trace file; no upload, it runs in "
        "the browser) or in TensorBoard (`pip install torch-tb-profiler`, put the file under a folder `D/`, run "
        "`tensorboard --logdir D`, PyTorch Profiler tab). Memory snapshots (`.pickle`) open at "
        "<https://pytorch.org/memory_viz>.\n"
    )
    return "\n".join(lines) + "\n\n" + how, files


def _no_profile(arm: str) -> str:
    return (
        f"No profiler run of {safe.code(arm)}: add it to the spec's `[profiler] arms` (a profiler run traces "
        "a few steps apart from the measured runs) to see where its time goes.\n"
    )


def _view_note(arms: list[ArmTime], exp: ExperimentData | None = None) -> str:
    steps = ", ".join(f"{a.arm} {_steps(a)}" for a in arms)
    caveat = (
        f" Profiled steps ({steps}) are few and carry no interval: the measured runs say whether a change is "
        "real, this section says where the time goes."
    )
    return _view_text(arms).rstrip("\n") + caveat + "\n" + (measured_note(exp, arms) if exp is not None else "")


def measured_note(exp: ExperimentData, arms: list[ArmTime]) -> str:
    """Profiled steps are slower than measured ones (the profiler's own cost, and they are early
    steps): the two figures side by side, so nobody reads one as the other."""
    pairs = []
    for a in arms:
        arm = exp.analysis.arm(a.arm)
        measured = arm.overall.get(vocab.STEP_TIME) if arm else None
        wall = per_step(a).get("wall")
        if measured and wall:
            shown = figures.arm_value(exp.analysis, a.arm, vocab.STEP_TIME, measured, unit="s")
            pairs.append(f"{safe.text(a.arm)} {_ms(wall)} ms a profiled step, {safe.text(shown)} a measured one")
    if not pairs:
        return ""
    return (
        "\n**Profiled is not measured:** a profiled step takes longer than a measured one ("
        + "; ".join(pairs)
        + "): the profiler records every kernel and copy, and the profiled steps come early in a short run. "
        "Compare the rows with each other, not with the measured step times.\n"
    )


def copy_notes(arms: list[ArmTime]) -> str:
    """Copies from pageable (unpinned) host memory, named with their size and rate: the runtime stages
    them through a pinned buffer, so they are slower than pinned copies and cannot overlap compute."""
    out = []
    for a in arms:
        ops = top_ops(a)
        per = per_step(a)
        for name, (ms, direction) in sorted(ops.items(), key=lambda t: -t[1][0]):
            if "Pageable" not in name or ms <= 0:
                continue
            size = per.get(f"bytes:{direction}", 0.0)
            rate = f", about {size / (ms / 1000) / 1e9:.0f} GB/s" if size else ""
            out.append(f"{safe.text(a.arm)}: {_mib(size)} MiB a step {safe.code(name)} in {_ms(ms)} ms{rate}")
    if not out:
        return ""
    return (
        "**Copies from pageable host memory** (not pinned: the CUDA runtime stages them through a pinned "
        "buffer, so they run slower than pinned copies and do not overlap the GPU's work): " + "; ".join(out) + ".\n"
    )


def _steps(at: ArmTime) -> str:
    walls = [r for r in _train_rows(at) if r.kind == "wall"]
    n, ranks = len({r.step for r in walls}), len({r.rank for r in walls})
    return f"{n} step{'s' if n != 1 else ''}" + (f" × {ranks} ranks" if ranks > 1 else "")


def _view_text(arms: list[ArmTime]) -> str:
    if any(a.view == "gpu" for a in arms):
        return (
            "GPU view: kernel time by category, copies by direction and the time the GPU ran nothing (idle), "
            "per profiled step (CPU step span) and rank. Host spans overlap the GPU work and are listed apart.\n"
        )
    return (
        "CPU view: this trace has no GPU kernels (a CPU-only run), so CPU operator self time by category "
        "(aten::mm/addmm/bmm count as GEMM, ...) stands in for kernel time, and the main thread's time outside "
        "any operator is Python overhead. There are no copies between devices and no GPU idle time to show.\n"
    )


def _timed(at: ArmTime | None) -> bool:
    """The arm has a time breakdown (a training trace), not only memory snapshots."""
    return at is not None and any(r.source == "train" for r in at.rows)


def _bars(timed: list[ArmTime], specs: dict[str, dict], *, svg: bool) -> list[str]:
    """The profiled steps' stacked bars (both pages), its spec added to `specs`."""
    bars = bars_chart(timed)
    if bars is None:
        return []
    specs["time-steps"] = bars
    return [blocks.chart("time-steps", bars, title="Profiled steps per arm and rank", svg=svg)]


def _rollout_and_notes(arms: list[ArmTime]) -> list[str]:
    """Both pages: the rollout engines' table, then the summaries that could not be read."""
    rollout = sglang_table(arms)
    return ([rollout] if rollout else []) + _notes(arms)


def _trace_files(arms: list[ArmTime], prefix: str, experiment: str) -> tuple[list[str], dict[str, Path]]:
    """Both pages' last part: the trace files' list under its heading, and the files to copy."""
    listing, files = downloads(arms, prefix, experiment)
    return (["### Trace files\n", listing] if listing else []), files


def candidate_section(exp: ExperimentData, cand: str, *, svg: bool, failed: bool = False) -> Section:
    """The full section for a candidate page (links to trace copies on the experiment page)."""
    data = load(exp)
    if not data:  # no profiler summaries in this experiment at all: no section
        return Section("")
    md = ["## Where the time went\n"]
    base, mine = data.get(vocab.BASELINE), data.get(cand)
    timed = [a for a in (base, mine) if a is not None and _timed(a)]
    specs: dict[str, dict] = {}
    if mine is None or not _timed(mine):
        md.append(_no_profile(cand))
    else:
        runs = ", ".join(safe.code(r) for a in timed for r in a.runs)
        against = base if base is not None and _timed(base) and base is not mine else None
        if against is not None:
            md.append(conclusion(against, mine))
        md.append(f"From the profiler runs {runs} (stored summaries). {_view_note(timed, exp)}")
        notes = copy_notes(timed)
        if notes:
            md.append(notes)
        if against is not None:
            md.append(headline(against, mine))
        md += _bars(timed, specs, svg=svg)
        if against is not None:
            diff = diff_chart(against, mine)
            if diff is not None:
                specs["time-diff"] = diff
                md.append(blocks.chart("time-diff", diff, title=f"{cand} minus baseline by category", svg=svg))
            md.append(diff_table(against, mine) + "\n")
            md.append("Operators that account for the difference (largest change in time per step first):\n")
            md.append(ops_table(against, mine) + "\n")
        elif not _timed(base):
            md.append(_no_profile(vocab.BASELINE))
    present = [a for a in (base, mine) if a is not None]
    if mine is None:  # nothing of this candidate was traced: the baseline's files are on its own pages
        present = []
    md += _rollout_and_notes(present)
    mem = memory_lines(mine) if mine is not None else []
    if mem:
        oom = mine is not None and any(r.kind == "mem_oom" for r in mine.rows)
        md.append("### Memory at the failure\n" if failed and oom else "### Memory\n")
        md += mem
    md += _trace_files(present, "../", exp.name)[0]  # the copies are written next to the experiment page
    return Section("\n".join(md), specs)


def experiment_section(exp: ExperimentData, *, svg: bool) -> Section:
    """The compact section for the experiment page: a per-arm table, the bars, the downloads."""
    data = load(exp)
    if not data:
        return Section("")
    order = [a for a in exp.arm_ids() if a in data] + sorted(set(data) - set(exp.arm_ids()))
    arms = [data[a] for a in order]
    timed = [a for a in arms if _timed(a)]
    md = ["## Where the time went\n"]
    specs: dict[str, dict] = {}
    if timed:
        base = next((a for a in timed if a.arm == vocab.BASELINE), None)
        for a in timed:
            if base is not None and a is not base:
                md.append(conclusion(base, a))
        md.append(_view_note(timed, exp))
        notes = copy_notes(timed)
        if notes:
            md.append(notes)
        means = {a.arm: per_step(a) for a in timed}
        present = [k for k in _table_keys(list(means.values())) if any(k in m for m in means.values())]
        rows = [["**step wall time**", *[f"**{_ms(means[a.arm].get('wall', 0))}**" for a in timed]]]
        rows += [[safe.text(k), *[_ms(means[a.arm].get(k, 0.0)) for a in timed]] for k in present]
        md.append(table(["ms per profiled step", *[safe.text(a.arm) for a in timed]], rows) + "\n")
        md += _bars(timed, specs, svg=svg)
        md.append("Each candidate's page shows its difference from the baseline and the operators behind it.\n")
    md += _rollout_and_notes(arms)
    listing, copies = _trace_files(arms, "", exp.name)
    return Section("\n".join(md + listing), specs, {name: path.read_bytes() for name, path in copies.items()})
