"""Charts drawn at build time: a Vega-Lite spec in, an SVG to put inline in the page out (render stage).

The report pages ship no chart library: Vega alone is about 300 KB gzipped, more than a whole page
may weigh, and drawing in the browser took a second or more before the first chart showed. Each
chart's spec (built in charts.py and machine_charts.py) is rendered once by `vl_convert` (Vega's own renderer, no
browser), cached by the spec's hash, and rewritten so it reads well inside a Material page:

- it scales to its column, down to PHONE_MIN px (on a phone its box scrolls sideways, as a wide
  table's does, rather than shrink the labels to 6 px), and takes its colours for text, axes and grid from
  docs/assets/report.css, so the light and the dark scheme both read (the chart itself has no
  background);
- the arms' legend is HTML beside the chart (`legend_html`), in the site's arm colours: it wraps on
  a phone instead of running off the chart's right edge;
- the tooltip Vega-Lite writes for a mark (its ARIA description, "field: value; ...") becomes the
  mark's `data-tip`, rows without a value left out (never "null" or "NaN"); docs/assets/charts.js
  shows it in a box kept inside the window, on a pointer or a tap. On a step chart (and in each
  panel of the training-quality chart) the plot is cut into one band per step (Vega-Lite's Voronoi
  cells of its `nearest` selection); a band carries the values of every run at its step and is
  shaded under the pointer, the crosshair of the old charts (the hidden rules that carried those
  values in Vega, and other marks never shown, are left out);
- ids are prefixed with the chart's name, so two charts of a page do not share a clip path.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import html
import json
import os
import re
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reportgen.store import atomic

WIDTH = 600  # the plot width of a chart sized to its column: with its axes it fits Material's column at 1440 px
# The narrowest a chart is drawn (px): its text at least 0.75 of its size; wider than its column, it scrolls.
PHONE_MIN = 480
FONT = {"labelFontSize": 12, "titleFontSize": 12}


def static_spec(spec: dict) -> dict:
    """The spec as drawn at build time: a fixed width, no background, larger text, no arm legend."""
    out = copy.deepcopy(spec)
    _fix_width(out)
    config = out.setdefault("config", {})
    config["background"] = "transparent"
    for part in ("axis", "legend", "header"):
        config[part] = {**config.get(part, {}), **FONT}
    config["title"] = {**config.get("title", {}), "fontSize": 14}
    for enc in _arm_colors(out):
        enc["legend"] = None
    return out


def _fix_width(node: Any) -> None:
    if isinstance(node, dict):
        if node.get("width") == "container":
            node["width"] = WIDTH
        for v in node.values():
            _fix_width(v)
    elif isinstance(node, list):
        for v in node:
            _fix_width(v)


def _arm_colors(node: Any) -> list[dict]:
    """Every colour encoding of the field `arm` in a spec (each layer has its own)."""
    found: list[dict] = []
    if isinstance(node, dict):
        enc = node.get("color")
        if isinstance(enc, dict) and enc.get("field") == "arm":
            found.append(enc)
        for k, v in node.items():
            if k != "color":
                found += _arm_colors(v)
    elif isinstance(node, list):
        for v in node:
            found += _arm_colors(v)
    return found


def arm_legend(spec: dict) -> list[tuple[str, str]]:
    """(arm, colour) of the chart's arms, in its order: what the HTML legend lists."""
    for enc in _arm_colors(spec):
        scale = enc.get("scale") or {}
        domain, colours = scale.get("domain"), scale.get("range")
        if isinstance(domain, list) and isinstance(colours, list):
            return [(str(a), str(c)) for a, c in zip(domain, colours, strict=False)]
    return []


def legend_html(entries: Sequence[tuple[str, str]]) -> str:
    """The arms' legend as a list that wraps with the text (a swatch in the arm's colour, its id)."""
    if not entries:
        return ""
    items = "".join(
        f'<li><span class="rg-swatch" style="background:{html.escape(c)}"></span>{html.escape(a)}</li>'
        for a, c in entries
    )
    return f'<ul class="rg-legend" aria-label="arms">{items}</ul>'


def _cached(cache: Path | None, key: str, make: Callable[[], bytes]) -> bytes:
    if cache is None:
        return make()
    path = cache / key
    if path.is_file():
        return path.read_bytes()
    data = make()
    atomic.write_bytes(path, data)
    return data


def render(spec: dict, cache: Path | None) -> str:
    """Vega's SVG of the chart as `static_spec` draws it, cached by the spec's hash (about 0.1-1 s a miss)."""
    fixed = static_spec(spec)
    key = spec_key(fixed)
    return _cached(cache, f"svg/{key[:2]}/{key}.svg", lambda: _draw(fixed)).decode()


def _draw(fixed: dict) -> bytes:
    import vl_convert

    return numbered(vl_convert.vega_to_svg(uncut(silent(to_vega(fixed))))).encode()


_ENCODED_ARIA = ("description", "ariaRoleDescription")


def silent(vega: dict) -> dict:
    """The Vega spec without the descriptions that the page's rewrite (`inline`) throws away: Vega
    writes every item's description as its ARIA label, and builds it from its data (a format call per
    field) also for each point of a line, whose path keeps only the first's. Only the items of a mark
    that carries tooltips (`_TIPPED`, and taking the pointer) keep theirs; the others, the axes, the
    legends and the title are drawn with `aria: false`. The SVG for the page is the same (a test
    draws both ways); a step chart is drawn in about a tenth less time."""
    out = dict(vega)
    _silence_group(out)
    return out


def _silence_group(group: dict) -> None:
    for part in ("axes", "legends"):
        if isinstance(group.get(part), list):
            group[part] = [{**g, "aria": False} if isinstance(g, dict) else g for g in group[part]]
    if isinstance(group.get("title"), dict):
        group["title"] = {**group["title"], "aria": False}
    marks = group.get("marks")
    if isinstance(marks, list):
        group["marks"] = [_silent_mark(m) if isinstance(m, dict) else m for m in marks]


CONTINUOUS = {"linear", "log", "pow", "sqrt", "symlog", "time", "utc", "sequential"}
# Vega's defaults: how wide a label may be before it is cut ("…"), and the text size (px) it is drawn at.
LABEL_LIMIT = {"axis": 180.0, "legend": 160.0}
TITLE_LIMIT = 180.0


def uncut(vega: dict) -> dict:
    """The Vega spec without the width limits its labels cannot reach. vl_convert measures a text by
    laying it out in an SVG of its own (about 0.4 ms, never cached), and Vega measures a label with a
    limit twice: once to cut it, once for its bounds. A label cannot reach its limit when it is a
    number (a continuous scale's tick) or one of a few known short strings (an explicit domain,
    each at most one em a character): those limits are set to 0 (none). The SVG is the same (a test
    draws both ways); a chart is drawn in about a tenth less time."""
    out = dict(vega)
    _uncut_group(out, {})
    return out


def _uncut_group(group: dict, scales: dict[str, dict]) -> None:
    scales = {**scales, **{s["name"]: s for s in group.get("scales") or [] if isinstance(s, dict) and "name" in s}}
    config = (group.get("config") or {}) if isinstance(group.get("config"), dict) else {}
    if isinstance(group.get("axes"), list):
        group["axes"] = [_uncut_guide(a, "axis", [a.get("scale")], scales, config) for a in group["axes"]]
    if isinstance(group.get("legends"), list):
        group["legends"] = [
            _uncut_guide(g, "legend", [g.get(k) for k in _LEGEND_SCALES if k in g], scales, config)
            for g in group["legends"]
        ]
    marks = group.get("marks")
    if isinstance(marks, list):
        group["marks"] = [_uncut_mark(m, scales) if isinstance(m, dict) else m for m in marks]


def _uncut_mark(mark: dict, scales: dict[str, dict]) -> dict:
    if mark.get("type") != "group":
        return mark
    mark = dict(mark)
    _uncut_group(mark, scales)
    return mark


_LEGEND_SCALES = ("fill", "stroke", "strokeDash", "shape", "size", "opacity", "strokeWidth", "symbolType")


def _uncut_guide(guide: Any, kind: str, names: Sequence[Any], scales: dict[str, dict], config: dict) -> Any:
    if not isinstance(guide, dict) or guide.get("labels") is False:
        return guide
    found = config.get(kind)
    own: dict = found if isinstance(found, dict) else {}
    size = float(guide.get("labelFontSize") or own.get("labelFontSize") or 12)
    out = dict(guide)
    used = [scales.get(n) for n in names if isinstance(n, str)]
    if (
        "labelLimit" not in guide
        and "labelLimit" not in own
        and used
        and all(_short_labels(s, size, LABEL_LIMIT[kind]) for s in used)
    ):
        out["labelLimit"] = 0
    title = guide.get("title")
    title_size = float(guide.get("titleFontSize") or own.get("titleFontSize") or 12)
    fits = isinstance(title, str) and len(title) * title_size < TITLE_LIMIT
    if kind == "legend" and fits and "titleLimit" not in guide and "titleLimit" not in own:
        out["titleLimit"] = 0
    return out


def _short_labels(scale: dict | None, size: float, limit: float) -> bool:
    """Whether every label of `scale` is narrower than `limit` at `size` px: numbers of a continuous
    scale (formatted ticks, a dozen characters), or an explicit domain of short values."""
    if scale is None:
        return False
    if scale.get("type", "linear") in CONTINUOUS:
        return True
    domain = scale.get("domain")
    return (
        isinstance(domain, list)
        and bool(domain)
        and all(isinstance(v, (str, int, float)) and len(str(v)) * size < limit for v in domain)
    )


def _silent_mark(mark: dict) -> dict:
    mark = dict(mark)
    if mark.get("type") == "group":
        _silence_group(mark)
    elif mark.get("type") not in _TIPPED or mark.get("interactive") is False:
        mark["aria"] = False
        encode = mark.get("encode")
        if isinstance(encode, dict):
            mark["encode"] = {
                k: {n: v for n, v in props.items() if n not in _ENCODED_ARIA} if isinstance(props, dict) else props
                for k, props in encode.items()
            }
    return mark


# Vega specs compiled from Vega-Lite, by the chart's shape (its spec with a placeholder for each data
# set's values): a process draws many charts of a few shapes (every report's step charts share one),
# and compiling is an eighth of drawing one. Kept for the process (the build's workers live a build).
_COMPILED: dict[str, dict] = {}
_PLACEHOLDER = "\0reportgen-dataset:"


def to_vega(fixed: dict) -> dict:
    """The Vega spec Vega-Lite compiles `fixed` into: what `vl_convert.vegalite_to_vega` gives,
    compiled once per shape and given this chart's data (Vega-Lite copies a data set's values into
    the Vega spec as they are, never reading them: the test compares both ways on every chart of the
    committed reports)."""
    import vl_convert

    datasets = fixed.get("datasets") or {}
    if not all(isinstance(v, str) for v in datasets.values()):
        return vl_convert.vegalite_to_vega(fixed)
    values: dict[str, Any] = {_PLACEHOLDER + name: text for name, text in datasets.items()}
    shape = {**fixed, "datasets": {name: _PLACEHOLDER + name for name in datasets}}
    # A number a chart sets on its shape (the step charts' axis top, `ymax`) becomes a signal's value.
    params = []
    for param in fixed.get("params") or []:
        value = param.get("value") if isinstance(param, dict) and "select" not in param else None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            values[f"{_PLACEHOLDER}param:{param.get('name')}"] = value
            param = {**param, "value": f"{_PLACEHOLDER}param:{param.get('name')}"}
        params.append(param)
    if params:
        shape["params"] = params
    shape.pop("usermeta", None)  # notes for the page (render/charts.py): copied as they are, put back below
    key = json.dumps(shape, sort_keys=True)
    compiled = _COMPILED.get(key)
    if compiled is None:
        compiled = vl_convert.vegalite_to_vega(shape)
        if key.count(_PLACEHOLDER) != json.dumps(compiled).count(_PLACEHOLDER):
            return vl_convert.vegalite_to_vega(fixed)  # a placeholder read, not copied: compiled as it is
        _COMPILED[key] = compiled
    vega = _filled(compiled, values)
    if "usermeta" in fixed:
        vega["usermeta"] = copy.deepcopy(fixed["usermeta"])
    return vega


def _filled(node: Any, values: dict[str, str]) -> Any:
    """`node` with each placeholder string replaced by its data set's values (copied where it changes)."""
    if isinstance(node, str):
        return values.get(node, node)
    if isinstance(node, dict):
        return {k: _filled(v, values) for k, v in node.items()}
    if isinstance(node, list):
        return [_filled(v, values) for v in node]
    return node


_CLIP = re.compile(r'(id="clip|url\(#clip)(\d+)')


def numbered(svg: str) -> str:
    """Vega's clip-path ids numbered from 1 in the order they appear: its renderer counts them over
    every chart it drew before in the process, so a chart's SVG depended on what was drawn first."""
    seen: dict[str, int] = {}
    return _CLIP.sub(lambda m: f"{m.group(1)}{seen.setdefault(m.group(2), len(seen) + 1)}", svg)


@functools.cache
def _renderer() -> str:
    """The renderer's version: a chart drawn by another vl_convert is drawn again."""
    try:
        import importlib.metadata as md

        return md.version("vl-convert-python")
    except Exception:  # metadata missing: the spec's hash alone
        return "unknown"


def spec_key(fixed: dict) -> str:
    """The cache key of a chart as `static_spec` gives it: its spec, the renderer's version and the code
    that hands the spec to it (`_draw`: what it leaves out changes the SVG Vega writes)."""
    return hashlib.sha256(json.dumps([_renderer(), _source_hash(), fixed], sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class Drawn:
    """A chart drawn into the cache folder: Vega's SVG (`svg`, the standalone file) and its rewrite
    for the page (`inline`, render/chart_svg.inline)."""

    svg: Path
    inline: Path


@dataclass(frozen=True)
class DrawJob:
    """What drawing one chart takes: Vega's SVG of `fixed` into `drawn.svg`, its rewrite for the
    page (`name` prefixes its ids) into `drawn.inline`."""

    name: str
    fixed: dict
    drawn: Drawn

    def done(self) -> bool:
        return self.drawn.inline.is_file()

    def make(self) -> None:
        if self.done():
            return
        raw = self.drawn.svg
        if raw.is_file():
            text = raw.read_bytes()
        else:
            text = _draw(self.fixed)
            atomic.write_bytes(raw, text)
        atomic.write_bytes(self.drawn.inline, inline(text.decode(), self.name).encode())


# The cache folder's subfolders of drawn charts, each file named by what it holds (`plan`): a cache
# folder of another's may link them and draw nothing twice (the suite's incremental-build tests do).
SVG_FOLDER, INLINE_FOLDER = "svg", "inline"


def plan(jobs: Sequence[tuple[Any, str, dict]], cache: Path) -> tuple[dict[Any, Drawn], list[DrawJob]]:
    """Where each (key, name, spec)'s drawn files go in `cache`, both kept by content, and the
    charts still to draw (one job per file: two pages of one chart share it). The page's copy is
    keyed by the drawn chart's key, `name` and this module's source, so a change to the rewrite
    redraws nothing but rewrites every chart."""
    where: dict[Any, Drawn] = {}
    todo: dict[Path, DrawJob] = {}
    for key, name, spec in jobs:
        fixed = static_spec(spec)
        svg_key = spec_key(fixed)
        inline_key = hashlib.sha256(b"\0".join((_source_hash().encode(), name.encode(), svg_key.encode()))).hexdigest()
        drawn = Drawn(
            cache / SVG_FOLDER / svg_key[:2] / f"{svg_key}.svg",
            cache / INLINE_FOLDER / inline_key[:2] / f"{inline_key}.svg",
        )
        where[key] = drawn
        if drawn.inline not in todo and not drawn.inline.is_file():
            todo[drawn.inline] = DrawJob(name, fixed, drawn)
    return where, list(todo.values())


def draw_all(jobs: Sequence[tuple[Any, str, dict]], cache: Path, workers: int | None = None) -> dict[Any, Drawn]:
    """Each (key, name, spec) drawn and rewritten for the page into `cache` (`plan`): a chart drawn
    before costs a look-up; misses are drawn on a few threads (vl_convert's renderer lets them overlap)."""
    where, todo = plan(jobs, cache)
    workers = workers or min(4, os.cpu_count() or 1)
    if len(todo) < 2 or workers < 2:
        for job in todo:
            job.make()
    else:
        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(DrawJob.make, todo))
    return where


def render_all(jobs: Sequence[tuple[Any, dict]], cache: Path | None, workers: int | None = None) -> dict[Any, str]:
    """`render` of every (key, spec); misses run on a few threads, which vl_convert's native
    renderer lets overlap (1.3-1.5x on 2 cores)."""
    workers = workers or min(4, os.cpu_count() or 1)
    if len(jobs) < 2 or workers < 2:
        return {key: render(spec, cache) for key, spec in jobs}
    with ThreadPoolExecutor(workers) as pool:
        done = pool.map(lambda job: render(job[1], cache), jobs)
        return {key: svg for (key, _), svg in zip(jobs, done, strict=True)}


# One leaf mark group of Vega's SVG: <g class="mark-TYPE role-ROLE NAME" ...> items </g> (a leaf mark
# holds no <g>).
# The body is written as runs of text without "<" and tags that open no group, so the engine never
# steps back through it (a lazy `.` checked against "<g" at every character was a fifth of the rewrite).
_LEAF = re.compile(r'<g class="mark-(?!group)(\w+) role-([\w-]+)(?: ([^"]*))?"([^>]*)>((?:[^<]+|<(?!g[ >]|/g>))*)</g>')
_ITEM = re.compile(r"<(path|line|rect|text)\b([^>]*?)(/?)>")
_LABEL = re.compile(r'\saria-label="([^"]*)"')
_OPACITY = re.compile(r'\sopacity="([\d.]+)"')
_TIPPED = ("symbol", "rule", "rect")  # marks whose items carry a tooltip (a line's would be its first point's)
_MISSING = {"null", "NaN", "undefined", ""}
VEGA_BASE = "https://vega.github.io/vega-datasets/"


def _tip(label: str) -> str:
    """Vega-Lite's description "a: 1; b: null" as the tooltip's lines, rows without a value left out."""
    rows = []
    for part in html.unescape(label).split("; "):
        _key, sep, value = part.partition(": ")
        if sep and value.strip() in _MISSING:
            continue
        rows.append(part)
    return html.escape("\n".join(rows)).replace("\n", "&#10;")


# A point mark's circle as Vega draws it, moved to its place: a path of two arcs.
_SYMBOL = re.compile(
    r'<path transform="translate\((-?[\d.e-]+),(-?[\d.e-]+)\)" d="M([\d.]+),0A\3,\3,0,1,1,-\3,0A\3,\3,0,1,1,\3,0"'
)
# The attributes that hold coordinates (a path's `d` among them), and the digits of a number past its
# first decimal: removed outright (a look-behind, no group to copy back: the rewrite's hottest loop).
_NUMBERS = re.compile(r'\s(?:d|x|y|x1|x2|y1|y2|width|height|transform)="[^"]*"')
_PAST_TENTH = re.compile(r"(?<=\d\.\d)\d+")
_HIDDEN = re.compile(r' opacity="0\.001"| stroke-width="[\d.]+"(?=[^>]* class="rg-hit")')


def lean(svg: str) -> str:
    """Coordinates to a tenth of a pixel (a third of a chart's bytes were digits no screen shows)."""
    return _NUMBERS.sub(lambda m: _PAST_TENTH.sub("", m.group(0)), svg)


def lean_items(body: str) -> str:
    """One mark's items with tooltips in fewer bytes (issue 45: a report's page folder at most
    1.5 MB): a point drawn as a `<circle>` (Vega writes each as a path of two arcs behind a
    transform), the invisible hit points' opacity left to the stylesheet (`.rg-hit`), and the
    items' tooltips folded into templates (`_fold`)."""
    body = _SYMBOL.sub(lambda m: f'<circle cx="{_num(m.group(1))}" cy="{_num(m.group(2))}" r="{m.group(3)}"', body)
    if "<circle " in body:
        body = re.sub(r"<circle [^>]*>", lambda m: _HIDDEN.sub("", m.group(0)), body)
    return _fold(body)


def _num(text: str) -> str:
    """A coordinate to a tenth of a pixel, without a trailing `.0`."""
    value = round(float(text), 1)
    return f"{value:g}" if abs(value) < 1e6 else text


_DATA_TIP = re.compile(r' data-tip="([^"]*)"')
ROW = "&#10;"  # the tooltip's line break, as the attribute holds it
SEPARATOR = "|"


def tip_template(tips: Sequence[str]) -> tuple[str, list[str]] | None:
    """One mark's tooltips ("field: value" rows, escaped, ROW between rows) as a template and each
    item's values: rows whose value every item shares are written once in the template, the others
    as "{i}" with the item's values joined by SEPARATOR (a value two rows always share, once). An
    item without a row has "" there, and the row is left out of its tooltip (docs/assets/charts.js
    fills a template back in the same way). None when the tooltips do not fold so (fewer than two,
    a row that is no "field: value", a SEPARATOR or brace in the text, rows in differing orders)."""
    if len(tips) < 2 or any(SEPARATOR in t or "{" in t or "}" in t for t in tips):
        return None
    items: list[dict[str, str]] = []
    keys: dict[str, None] = {}
    for t in tips:
        item: dict[str, str] = {}
        for row in t.split(ROW):
            key, sep, value = row.partition(": ")
            if not sep or key in item:
                return None
            item[key] = value
        items.append(item)
        keys.update(dict.fromkeys(item))
    cols = {k: [item.get(k, "") for item in items] for k in keys}
    slots: list[list[str]] = []  # the distinct columns of values that vary, in order
    parts = []
    for k, values in cols.items():
        if values[0] and values.count(values[0]) == len(values):
            parts.append(f"{k}: {values[0]}")
            continue
        if values not in slots:
            slots.append(values)
        parts.append(f"{k}: {{{slots.index(values)}}}")
    template = ROW.join(parts)
    values = [SEPARATOR.join(col[i] for col in slots) for i in range(len(tips))]
    fill = _compiled(template)
    if any(fill(v) != t for t, v in zip(tips, values, strict=True)):
        return None  # rows in another order than the template's: left as they are
    return template, values


def fill_template(template: str, values: str) -> str:
    """An item's tooltip from its mark's template and its values (what docs/assets/charts.js does)."""
    return _compiled(template)(values)


def _compiled(template: str) -> Callable[[str], str]:
    rows = [(row, re.search(r"\{(\d+)\}", row)) for row in template.split(ROW)]
    parts = [(row, None, "") if m is None else (row[: m.start()], int(m.group(1)), row[m.end() :]) for row, m in rows]

    def fill(values: str) -> str:
        got = values.split(SEPARATOR)
        return ROW.join(a if i is None else a + got[i] + b for a, i, b in parts if i is None or got[i])

    return fill


_ELEMENT = re.compile(r"<\w+\b[^>]*/>")
_HIT = ' class="rg-hit"'
_FILL = re.compile(r' fill="([^"]*)"')
_RADIUS = re.compile(r' r="([\d.]+)"')


def _tip_of(item: str) -> str:
    found = _DATA_TIP.search(item)
    return found.group(1) if found else ""


def _fold(body: str) -> str:
    """One mark's items with tooltips, each run of items of one colour wrapped in a group that holds
    the colour and the run's tooltip template (`tip_template`): a mark lists its items run by run
    (one line of the chart after another), and a run's arm and run are its template's."""
    items = _ELEMENT.findall(body)
    if not items or "".join(items) != body or not all(" data-tip=" in i for i in items):
        return body
    out, run = [], [items[0]]

    def close(run: list[str]) -> str:
        colour = colour_of(run[0])
        folded = tip_template([_tip_of(i) for i in run]) if len(run) > 1 else None
        if folded is None:
            return "".join(run)
        template, values = folded
        hits = all(_HIT in i for i in run)  # the hidden points: their class once, on the group
        # Points of one size: their radius once, on the group (`.rg-r > circle { r: inherit }` in
        # docs/assets/report.css; CSS geometry properties, in every browser since 2020).
        radii = {m.group(1) if m and i.startswith("<circle ") else None for i in run for m in [_RADIUS.search(i)]}
        radius = next(iter(radii)) if len(radii) == 1 else None
        inner = []
        for item, value in zip(run, values, strict=True):
            if colour is not None:
                item = _FILL.sub("", item, 1)
            if hits:
                item = item.replace(_HIT, "")
            if radius is not None:
                item = _RADIUS.sub("", item, 1)
            inner.append(_DATA_TIP.sub(f' data-tip="{value}"'.replace("\\", "\\\\"), item, 1))
        paint = f' fill="{colour}"' if colour is not None else ""
        classes = " ".join(c for c, on in (("rg-hits", hits), ("rg-r", radius is not None)) if on)
        kind = f' class="{classes}"' if classes else ""
        size = f' style="r:{radius}px"' if radius is not None else ""
        return f'<g{kind}{paint}{size} data-tips="{template}">{"".join(inner)}</g>'

    def colour_of(item: str) -> str | None:
        fill = _FILL.search(item)
        return fill.group(1) if fill else None

    for item in items[1:]:
        if colour_of(item) == colour_of(run[0]):
            run.append(item)
        else:
            out.append(close(run))
            run = [item]
    out.append(close(run))
    return "".join(out)


def inline(svg: str, name: str) -> str:
    """Vega's SVG rewritten for the page (see the module's docstring); `name` prefixes its ids."""
    # A rule's tooltips by mark name, for its Voronoi bands: one list per drawing of the mark, in the
    # SVG's order (a faceted chart draws its rule and bands once per panel, under the same names).
    tips: dict[str, list[list[str]]] = {}

    def items(m: re.Match) -> str:
        mark, role, mname, rest, body = m.group(1), m.group(2), m.group(3) or "", m.group(4), m.group(5)
        # a mark Vega draws without pointer events had no tooltip (its description only repeats its x)
        tipped = role == "mark" and mark in _TIPPED and 'pointer-events="none"' not in rest
        if tipped and mname.endswith("_marks") and mname[: -len("_marks")] in banded:
            # hidden rules whose tooltips their bands carry: not drawn
            tips.setdefault(mname[: -len("_marks")], []).append([_tip(x.group(1)) for x in _LABEL.finditer(body)])
            return f'<g class="mark-{mark} role-{role} {mname}"{rest}></g>'

        def item(i: re.Match) -> str:
            tag, attrs, close = i.group(1), i.group(2), i.group(3)
            label = _LABEL.search(attrs)
            attrs = _LABEL.sub("", attrs)
            if (not tipped or label is None) and re.search(r'\sopacity="0"', attrs) and close:
                return ""  # never shown and says nothing (a crosshair rule of a static chart)
            if tipped and label is not None:
                attrs += f' data-tip="{_tip(label.group(1))}"'
                op = _OPACITY.search(attrs)
                if op is not None and float(op.group(1)) < 0.05:
                    attrs += ' class="rg-hit"'
            return f"<{tag}{attrs}{close}>"

        body = _ITEM.sub(item, body)
        if tipped:
            body = lean_items(body)
        return f'<g class="mark-{mark} role-{role}{" " + mname if mname else ""}"{rest}>{body}</g>'

    svg = re.sub(r'\s(?:role|aria-roledescription|aria-hidden)="[^"]*"', "", svg)
    banded = set(re.findall(r'<g class="mark-path role-mark (\S+)_voronoi"', svg))
    svg = _LEAF.sub(items, svg)

    def bands(m: re.Match) -> str:
        drawings = tips.get(m.group(1))
        paths = iter(drawings.pop(0) if drawings else [])

        def band(p: re.Match) -> str:
            tip = next(paths, "")
            return f'<path class="rg-band"{p.group(1)}{f" data-tip={chr(34)}{tip}{chr(34)}" if tip else ""}/>'

        return m.group(0)[: m.start(2) - m.start(0)] + _fold(re.sub(r"<path\b([^>]*?)/>", band, m.group(2))) + "</g>"

    svg = re.sub(r'<g class="mark-path role-mark (\S+)_voronoi"[^>]*>(.*?)</g>', bands, svg, flags=re.S)
    svg = _LABEL.sub("", svg)  # axes' and groups' descriptions: the figure is one image, named by its title
    # A mark's link (the history's points): Vega resolves it against its loader's base URL, which
    # vl_convert sets to Vega's data sets site; the page's link is the relative one the spec holds. It
    # stays an xlink:href: Material's instant navigation rewrites every [href] of a page it loads, and an
    # SVG link's href cannot be set (a console error on every history page reached that way).
    svg = svg.replace(f'xlink:href="{VEGA_BASE}', 'xlink:href="')
    svg = lean(shared_once(svg))
    svg = re.sub(r'\sid="([^"]+)"', lambda m: f' id="rg-{name}-{m.group(1)}"', svg)
    svg = re.sub(r"url\(#([^)]+)\)", lambda m: f"url(#rg-{name}-{m.group(1)})", svg)
    width = re.search(r'<svg[^>]*?\swidth="([\d.]+)"', svg)
    w = float(width.group(1)) if width else float(WIDTH)
    # At most its own width; on a phone no narrower than PHONE_MIN (its box scrolls sideways instead):
    # scaled to a 358-px column, a chart's 12-px labels would be 6 px high.
    size = f"max-width:{w:g}px;min-width:min({PHONE_MIN}px,{w:g}px)"
    svg = svg.replace('class="marks"', f'class="rg-plot" style="{size}" aria-hidden="true" focusable="false"', 1)
    return re.sub(r"<\?xml[^>]*>\s*", "", svg)


# What changes nothing: an attribute (with the whitespace before it) or an element, each a literal.
_NO_EFFECT_ATTRS = (' opacity="1"', ' transform="translate(0,0)"')
_NO_EFFECT_ELEMENT = '<path class="foreground" d="" display="none"/>'
_FONT = re.compile(r'<text\b[^>]*?( font-family="[^"]*")')


def shared_once(svg: str) -> str:
    """Vega's SVG without what changes nothing (issue 45: 5 % of a report's chart bytes): an
    opacity of 1 (the initial value; opacity is not inherited), the identity transform, a group's
    empty foreground path that is not displayed, and the font family every text repeats, written
    once on the root instead (font-family is inherited)."""
    for attr in _NO_EFFECT_ATTRS:
        svg = _without_attr(svg, attr[1:])
    svg = svg.replace(_NO_EFFECT_ELEMENT, "")
    texts = svg.count("<text")
    found = _FONT.findall(svg)
    fonts = set(found)
    if texts and len(fonts) == 1 and len(found) == texts:
        font = fonts.pop()
        svg = svg.replace(font, "")
        svg = re.sub(r"<svg\b", lambda m: m.group(0) + font, svg, count=1)
    return svg


def _without_attr(svg: str, attr: str) -> str:
    """`svg` without every `attr` that follows whitespace, that whitespace character included (what
    `re.sub(r"\\s" + re.escape(attr), "", svg)` gives): found as a literal, not by a regex that tries
    every position of a 100-KB chart (a fifth of the rewrite's time)."""
    if attr not in svg:
        return svg
    parts = svg.split(attr)
    out = [parts[0]]
    for part in parts[1:]:
        last = out[-1]
        if last and last[-1].isspace():
            out[-1] = last[:-1]
        else:
            out.append(attr)
        out.append(part)
    return "".join(out)


@functools.cache
def _source_hash() -> str:
    """This module's source, hashed once: `inline` depends on nothing else but the stdlib."""
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()


def inline_cached(svg: str, name: str, cache: Path | None) -> str:
    """`inline(svg, name)`, cached (`inline/` in the cache folder) by the hash of the SVG, the name
    and this module's source, so a warm build skips the rewrite (about 15 ms a chart) and any
    change to the code that rewrites draws every chart again."""
    if cache is None:
        return inline(svg, name)
    key = hashlib.sha256(b"\0".join((_source_hash().encode(), name.encode(), svg.encode()))).hexdigest()
    return _cached(cache, f"inline/{key[:2]}/{key}.svg", lambda: inline(svg, name).encode()).decode()
