""" "Where the time went": the profiler runs' breakdown on the candidate and experiment pages.

Render stage: formats the figures the analysis stored in analysis.json (`traces`, computed by
reportgen.traces.stats from the stored summaries `traces.parquet`); it computes none and never
reads a trace: a site built from a clone without the traces (a committed showcase) shows the
same section. Trace files that are present are copied next
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
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from reportgen import vocab
from reportgen.render import blocks, figures, safe
from reportgen.render.blocks import table
from reportgen.render.chart_data import frame_csv
from reportgen.render.chart_spec import finish, named, template, to_dict
from reportgen.render.format import fmt_num
from reportgen.render.load import PublishedExperiment
from reportgen.render.palette import NEUTRAL
from reportgen.traces import categories as cats
from reportgen.traces import model
from reportgen.traces.stats import IDLE, PART_ORDER, PYTHON, ArmTraces, TraceDiff, table_keys

# Every colour at least 3:1 against the white and the dark page (render/palette.py).
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
    copies: dict[str, Path] = dataclasses.field(default_factory=dict)  # site path -> the run's file copied there


def load(exp: PublishedExperiment) -> dict[str, ArmTraces]:
    """Every arm's stored figures (analysis.json's `traces`), by arm, in run order."""
    stats = exp.analysis.traces
    return {a.arm: a for a in stats.arms} if stats is not None else {}


def _diff(exp: PublishedExperiment, cand: str) -> TraceDiff | None:
    stats = exp.analysis.traces
    return stats.diff(cand) if stats is not None else None


def step_parts(at: ArmTraces) -> pd.DataFrame:
    """arm, bar ("baseline · rank 0 · step 3"), part, ms, o: one stacked bar per step and rank."""
    out = []
    for p in at.step_parts:
        step = "whole trace" if p.step == model.WHOLE_TRACE else f"step {p.step}"
        out.append(
            {
                "arm": at.arm,
                "bar": f"{at.arm} · rank {p.rank} · {step}",
                "part": p.part,
                "ms": p.ms,
                "o": PART_ORDER.index(p.part),
            }
        )
    return pd.DataFrame(out, columns=["arm", "bar", "part", "ms", "o"])


BARS_DATA = pd.DataFrame({"arm": ["a"], "bar": ["a · rank 0 · step 1"], "part": ["GEMM"], "ms": [0.0], "o": [0]})
DIFF_DATA = pd.DataFrame({"part": ["GEMM"], "ms": [0.0], "sign": ["faster"]})


# The template store keys a template by the chart modules' text and the arguments: this file's own
# digest goes into the arguments so an edit here is not served a stale cached template.
_SOURCE = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]


@template
def _bars_template(source: str, bars: tuple[str, ...], parts: tuple[str, ...], xtitle: str) -> dict:
    import altair as alt  # imported on a template-store miss only (about 1 s)

    colors = [PART_COLORS[PART_ORDER.index(p)] for p in parts]
    chart = (
        alt.Chart(named("main", BARS_DATA))
        .mark_bar(stroke=NEUTRAL, strokeWidth=0.3)
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
    return to_dict(chart)


@template
def _diff_template(source: str, parts: tuple[str, ...], title: str) -> dict:
    import altair as alt  # imported on a template-store miss only (about 1 s)

    chart = (
        alt.Chart(named("main", DIFF_DATA))
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
    return to_dict(chart)


def bars_chart(arms: list[ArmTraces]) -> dict | None:
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
    return finish(_bars_template(_SOURCE, bars, parts, xtitle), {"main": frame_csv(frame)})


def diff_chart(d: TraceDiff) -> dict | None:
    """Candidate minus baseline per category, GPU and host alike (a host-side optimizer step the GPU
    waits for is the cause its idle time is the symptom of), largest first."""
    parts = sorted(
        ((p.part, p.difference) for p in d.parts if (p.baseline or p.candidate) and p.part != PYTHON),
        key=lambda t: -abs(t[1]),
    )
    if not parts or all(x == 0.0 for _, x in parts):
        return None
    frame = pd.DataFrame(
        {
            "part": [k for k, _ in parts],
            "ms": [x for _, x in parts],
            "sign": ["less time" if x < 0 else "more time" for _, x in parts],
        }
    )
    title = f"{d.candidate} minus {d.baseline}, ms per step"
    return finish(_diff_template(_SOURCE, tuple(frame["part"]), title), {"main": frame_csv(frame)})


def _ms(x: float) -> str:
    return fmt_num(x, 1 if abs(x) >= 10 else 2)


def _mib(x: float) -> str:
    return fmt_num(x / 2**20, 1)


def _signed(d: float, fmt: Callable[[float], str]) -> str:
    return ("+" if d > 0 else "") + fmt(d)


def headline(d: TraceDiff) -> str:
    """One sentence: the step time's change and the three parts that changed most, copies in MiB."""
    parts = sorted(d.parts, key=lambda p: -abs(p.difference))[:3]
    said = [f"{safe.text(p.part)} {_signed(p.difference, _ms)} ms" for p in parts if p.difference != 0.0]
    if d.copied_total:
        said.append(f"{_signed(d.copied_total, _mib)} MiB copied")
    lead = (
        f"**{safe.text(d.candidate)} against the baseline, per profiled step:** wall time "
        f"{_signed(d.wall.difference, _ms)} ms"
    )
    return lead + ("; largest changes: " + ", ".join(said) if said else "") + ".\n"


def conclusion(d: TraceDiff) -> str:
    """Why the step got faster or slower, in one sentence: the host-side spans and copies that
    changed (the cause), GPU kernel time (unchanged or not), and GPU idle time (the symptom)."""
    wall = d.wall.difference
    if d.same_step:
        return (
            f"**Where the time went:** {safe.text(d.candidate)}'s profiled step takes the same time as the baseline's "
            f"({_ms(d.wall.baseline)} and {_ms(d.wall.candidate)} ms).\n"
        )
    k = d.kernels
    gpu = (
        f"the GPU's kernels take the same time ({_ms(k.baseline)} and {_ms(k.candidate)} ms)"
        if d.same_kernels
        else f"the GPU's kernels take {_signed(k.difference, _ms)} ms"
    )
    way = "shorter" if wall < 0 else "longer"
    causes = [f"{p.part.removeprefix('host: ')} {_signed(p.difference, _ms)} ms" for p in d.causes]
    text = f"**Where the time went:** {safe.text(d.candidate)}'s profiled step is {_ms(abs(wall))} ms {way}"
    if causes:
        text += f" because of the host side ({safe.text(', '.join(causes))})"
    text += f"; {gpu}"
    idle = d.idle_ms
    if idle and d.same_kernels:
        text += f", and the GPU idles {_ms(abs(idle))} ms {'less' if idle < 0 else 'more'}: it waits on the host"
    return text + ".\n"


def diff_table(d: TraceDiff) -> str:
    w = d.wall
    rows = [
        ["**step wall time**", f"**{_ms(w.baseline)}**", f"**{_ms(w.candidate)}**", f"**{_signed(w.difference, _ms)}**"]
    ]
    for p in d.parts:
        rows.append([safe.text(p.part), _ms(p.baseline), _ms(p.candidate), _signed(p.difference, _ms)])
    for p in d.copied:
        rows.append([f"{p.part} copied (MiB)", _mib(p.baseline), _mib(p.candidate), _signed(p.difference, _mib)])
    header = [
        "ms per profiled step",
        safe.text(d.baseline),
        safe.text(d.candidate),
        f"{safe.text(d.candidate)} − baseline",
    ]
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


def ops_table(d: TraceDiff) -> str:
    rows = [
        [
            safe.code(operator_label(p.part), title=p.part),
            safe.text(d.op_categories.get(p.part, "")),
            _ms(p.baseline),
            _ms(p.candidate),
            ("+" if p.difference > 0 else "") + _ms(p.difference),
        ]
        for p in d.ops
    ]
    return table(
        ["operator", "category", f"{safe.text(d.baseline)} ms", f"{safe.text(d.candidate)} ms", "difference"], rows
    )


def memory_lines(at: ArmTraces) -> list[str]:
    """Peak memory of the arm's snapshots, and for an OOM snapshot what was live at the failure."""
    mem = at.memory
    out = []
    if mem.cpu_peak_rss is not None:
        out.append(f"Peak resident memory of the process (CPU run, no CUDA allocator): {_mib(mem.cpu_peak_rss)} MiB.\n")
    if mem.allocated is not None:
        out.append(
            f"Memory snapshot: peak allocated {_mib(mem.allocated)} MiB, peak reserved {_mib(mem.reserved or 0)} MiB.\n"
        )
        if mem.live_by_area:
            out.append(
                "Live at the peak by code area: "
                + ", ".join(f"{safe.text(f.area)} {_mib(f.bytes)} MiB" for f in mem.live_by_area)
                + ".\n"
            )
        if mem.live_frames:
            out.append(
                table(
                    ["largest live allocations at the peak (allocating frame)", "area", "MiB", "blocks"],
                    [
                        [safe.code(f.name), safe.text(f.area), _mib(f.bytes), fmt_num(f.count, 0)]
                        for f in mem.live_frames
                    ],
                )
                + "\n"
            )
    if mem.oom:
        out.append(
            f"**Memory at the failure** (OOM snapshot): {_mib(mem.oom_requested)} MiB requested with "
            f"{_mib(mem.oom_device_free)} MiB free on the device. Live then:\n"
        )
        out.append(
            table(
                ["allocating frame", "MiB", "blocks"],
                [[safe.code(f.name), _mib(f.bytes), fmt_num(f.count, 0)] for f in mem.oom_live],
            )
            + "\n"
        )
    return out


def sglang_table(arms: list[ArmTraces]) -> str:
    """Rollout engines' kernel time by category (mean per profiled step, or the whole trace)."""
    rows = [
        [safe.text(at.arm), f"{e.engine} / TP {e.tp}"]
        + [_ms(e.ms.get(k, 0.0)) for k in ("wall", *cats.COMPUTE_CATEGORIES, IDLE)]
        for at in arms
        for e in at.sglang
    ]
    if not rows:
        return ""
    head = ["arm", "engine", "wall ms", *(f"{c} ms" for c in cats.COMPUTE_CATEGORIES), "GPU idle ms"]
    return "Rollout (SGLang) engines, kernel time per profiled step:\n\n" + table(head, rows) + "\n"


def _notes(arms: list[ArmTraces]) -> list[str]:
    return [f"- summary not read: {safe.code(n)}" for a in arms for n in a.notes]


def _size(n: float) -> str:
    return f"{fmt_num(n / 2**20, 1)} MiB" if n >= 2**20 else f"{fmt_num(n / 1024, 1)} KiB"


def _download_name(rel: str, path: str) -> str:
    return f"{rel.replace('/', '-')}-{Path(path).name}"


def downloads(
    exp_dir: Path, arms: list[ArmTraces], prefix: str, experiment: str = "<experiment>"
) -> tuple[str, dict[str, Path]]:
    """Markdown list of the trace files (links to copies made at build time) and the files to copy,
    by site path: only the experiment page reads them (a trace can be hundreds of MiB). For a file
    not in this copy of the runs, where it was and how to get it."""
    lines: list[str] = []
    files: dict[str, Path] = {}
    missing: list[str] = []
    for at in arms:
        for t in at.traces:
            rel = t.run
            name = _download_name(rel, t.path)
            size = _size(float(t.bytes or 0))
            file = exp_dir / rel / t.path
            if file.is_file():
                files[f"{TRACE_DIR}/{name}"] = file
                lines.append(
                    f"- {safe.text(at.arm)}: [{safe.text(Path(t.path).name)}]({prefix}{TRACE_DIR}/{name}) ({size})"
                )
            else:
                sha = (t.sha256 or "")[:12]
                where = f"runs/{experiment}/{rel}/{t.path}"
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


def _view_note(arms: list[ArmTraces], exp: PublishedExperiment | None = None) -> str:
    steps = ", ".join(f"{a.arm} {_steps(a)}" for a in arms)
    caveat = (
        f" Profiled steps ({steps}) are few and carry no interval: the measured runs say whether a change is "
        "real, this section says where the time goes."
    )
    return _view_text(arms).rstrip("\n") + caveat + "\n" + (measured_note(exp, arms) if exp is not None else "")


def measured_note(exp: PublishedExperiment, arms: list[ArmTraces]) -> str:
    """Profiled steps are slower than measured ones (the profiler's own cost, and they are early
    steps): the two figures side by side, so nobody reads one as the other."""
    pairs = []
    for a in arms:
        arm = exp.analysis.arm(a.arm)
        measured = arm.overall.get(vocab.STEP_TIME) if arm else None
        wall = a.per_step.get("wall")
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


def copy_notes(arms: list[ArmTraces]) -> str:
    """Copies from pageable (unpinned) host memory, named with their size and rate: the runtime stages
    them through a pinned buffer, so they are slower than pinned copies and cannot overlap compute."""
    out = []
    for a in arms:
        for c in a.pageable:
            rate = f", about {c.gb_per_s:.0f} GB/s" if c.gb_per_s is not None else ""
            out.append(f"{safe.text(a.arm)}: {_mib(c.bytes)} MiB a step {safe.code(c.name)} in {_ms(c.ms)} ms{rate}")
    if not out:
        return ""
    return (
        "**Copies from pageable host memory** (not pinned: the CUDA runtime stages them through a pinned "
        "buffer, so they run slower than pinned copies and do not overlap the GPU's work): " + "; ".join(out) + ".\n"
    )


def _steps(at: ArmTraces) -> str:
    n, ranks = at.steps, at.ranks
    return f"{n} step{'s' if n != 1 else ''}" + (f" × {ranks} ranks" if ranks > 1 else "")


def _view_text(arms: list[ArmTraces]) -> str:
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


def _timed(at: ArmTraces | None) -> bool:
    """The arm has a time breakdown (a training trace), not only memory snapshots."""
    return at is not None and at.timed


def _bars(timed: list[ArmTraces], specs: dict[str, dict], *, svg: bool) -> list[str]:
    """The profiled steps' stacked bars (both pages), its spec added to `specs`."""
    bars = bars_chart(timed)
    if bars is None:
        return []
    specs["time-steps"] = bars
    return [blocks.chart("time-steps", bars, title="Profiled steps per arm and rank", svg=svg)]


def _rollout_and_notes(arms: list[ArmTraces]) -> list[str]:
    """Both pages: the rollout engines' table, then the summaries that could not be read."""
    rollout = sglang_table(arms)
    return ([rollout] if rollout else []) + _notes(arms)


def _trace_files(
    exp_dir: Path, arms: list[ArmTraces], prefix: str, experiment: str
) -> tuple[list[str], dict[str, Path]]:
    """Both pages' last part: the trace files' list under its heading, and the files to copy."""
    listing, files = downloads(exp_dir, arms, prefix, experiment)
    return (["### Trace files\n", listing] if listing else []), files


def candidate_section(exp: PublishedExperiment, cand: str, *, svg: bool, failed: bool = False) -> Section:
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
        diff = _diff(exp, cand) if against is not None else None
        if diff is not None:
            md.append(conclusion(diff))
        md.append(f"From the profiler runs {runs} (stored summaries). {_view_note(timed, exp)}")
        notes = copy_notes(timed)
        if notes:
            md.append(notes)
        if diff is not None:
            md.append(headline(diff))
        md += _bars(timed, specs, svg=svg)
        if diff is not None:
            chart = diff_chart(diff)
            if chart is not None:
                specs["time-diff"] = chart
                md.append(blocks.chart("time-diff", chart, title=f"{cand} minus baseline by category", svg=svg))
            md.append(diff_table(diff) + "\n")
            md.append("Operators that account for the difference (largest change in time per step first):\n")
            md.append(ops_table(diff) + "\n")
        elif not _timed(base):
            md.append(_no_profile(vocab.BASELINE))
    present = [a for a in (base, mine) if a is not None]
    if mine is None:  # nothing of this candidate was traced: the baseline's files are on its own pages
        present = []
    md += _rollout_and_notes(present)
    mem = memory_lines(mine) if mine is not None else []
    if mem:
        oom = mine is not None and mine.memory.oom
        md.append("### Memory at the failure\n" if failed and oom else "### Memory\n")
        md += mem
    md += _trace_files(exp.path, present, "../", exp.name)[0]  # the copies are written next to the experiment page
    return Section("\n".join(md), specs)


def experiment_section(exp: PublishedExperiment, *, svg: bool) -> Section:
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
            diff = _diff(exp, a.arm) if base is not None and a is not base else None
            if diff is not None:
                md.append(conclusion(diff))
        md.append(_view_note(timed, exp))
        notes = copy_notes(timed)
        if notes:
            md.append(notes)
        means = {a.arm: a.per_step for a in timed}
        present = [k for k in table_keys(list(means.values())) if any(k in m for m in means.values())]
        rows = [["**step wall time**", *[f"**{_ms(means[a.arm].get('wall', 0))}**" for a in timed]]]
        rows += [[safe.text(k), *[_ms(means[a.arm].get(k, 0.0)) for a in timed]] for k in present]
        md.append(table(["ms per profiled step", *[safe.text(a.arm) for a in timed]], rows) + "\n")
        md += _bars(timed, specs, svg=svg)
        md.append("Each candidate's page shows its difference from the baseline and the operators behind it.\n")
    md += _rollout_and_notes(arms)
    listing, copies = _trace_files(exp.path, arms, "", exp.name)
    return Section("\n".join(md + listing), specs, copies)
