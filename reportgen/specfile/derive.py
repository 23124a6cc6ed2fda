"""A spec derived from another for a comparison of two revisions (PR mode, docs/revisions.md).

`reportgen run --baseline-ref main --candidate-ref HEAD` measures a spec's baseline recipe at two
revisions of the recipe's repository as one campaign, without a spec written for it: this module
turns the spec's TOML (profile applied) into one whose baseline names the first revision and whose
one candidate (`CANDIDATE`) names the second, with no flag edits and no profiler runs. Its paths are
made absolute (it is written elsewhere than the spec it came from), and it is written as TOML so
that runs/<experiment>/experiment.toml holds it like any spec. Pure: dicts and text in, text out.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

CANDIDATE = "candidate"  # the id of the one candidate of a comparison of two revisions
_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def revision_spec(
    raw: Mapping[str, Any],
    *,
    source_dir: Path,
    repo: Path,
    baseline_ref: str,
    candidate_ref: str,
    name: str,
    candidate_title: str,
    pairs: int | None = None,
    sequential: bool = False,
) -> dict[str, Any]:
    """The spec (`raw`: a spec's TOML as loaded, profile already applied) with its baseline at
    `baseline_ref` and one candidate at `candidate_ref`. `pairs` sizes the campaign: that many pairs
    (`sequential`: up to that many, stopping when decided), else the spec's own [run] design."""
    out: dict[str, Any] = {k: v for k, v in raw.items() if k not in ("profiles", "profiler", "candidates")}
    out["name"] = name
    recipe_of = str(raw.get("title") or raw.get("name") or "the spec")
    # The spec's own title and hypothesis are about its flag candidates, which are dropped here.
    out["title"] = f"Code change: {candidate_title}"
    out["hypothesis"] = (
        f"The baseline recipe of {recipe_of!r} runs faster with the code at {candidate_ref} than at {baseline_ref}, "
        "doing the same work."
    )
    recipe = dict(out.get("recipe") or {})
    for key in ("script", "workdir"):
        if isinstance(recipe.get(key), str) or key == "workdir":
            recipe[key] = str((Path(source_dir) / str(recipe.get(key, "."))).resolve())
    recipe["ref"] = baseline_ref
    recipe["repo"] = str(Path(repo).resolve())
    out["recipe"] = recipe
    prov = dict(out.get("provenance") or {})
    for key in ("recipe_repo", "model_dir"):
        if isinstance(prov.get(key), str):
            prov[key] = str((Path(source_dir) / prov[key]).resolve())
    if prov.get("data_files"):
        prov["data_files"] = [str((Path(source_dir) / d).resolve()) for d in prov["data_files"]]
    if prov:
        out["provenance"] = prov
    analysis = {k: v for k, v in dict(out.get("analysis") or {}).items() if k != "pr_candidate"}
    if analysis:
        out["analysis"] = analysis
    if pairs is not None:
        run = {k: v for k, v in dict(out.get("run") or {}).items() if k not in ("until", "repeats", "order")}
        run.pop("budget_minutes", None)
        if sequential:  # a sequential design looks from the first pair that may decide, the second, on
            run.update(until="decided", min_pairs=2, max_pairs=max(2, pairs))
        else:
            run.update(until="fixed", repeats=pairs, order="interleaved", min_pairs=2, max_pairs=max(2, pairs))
        out["run"] = run
    out["candidates"] = [
        {
            "id": CANDIDATE,
            "title": candidate_title,
            "rationale": f"the code at {candidate_ref}, against the baseline recipe at {baseline_ref}",
            "ref": candidate_ref,
        }
    ]
    return out


# --------------------------------------------------------------------------- TOML text


def _key(k: str) -> str:
    return k if _BARE_KEY.match(k) else json.dumps(k)


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise ValueError(f"a spec value {v!r} has no TOML spelling here")
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)  # a JSON string is a TOML basic string (\", \\, \n, \uXXXX)
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_value(x)}" for k, x in v.items()) + " }"
    raise ValueError(f"a spec value of type {type(v).__name__} has no TOML spelling")


def _is_table_list(v: Any) -> bool:
    return isinstance(v, list) and bool(v) and all(isinstance(x, dict) for x in v)


def toml_text(doc: Mapping[str, Any], _prefix: str = "") -> str:
    """`doc` as TOML: scalars first, then each table, then each array of tables (what tomllib reads
    back as `doc`; enough for a spec)."""
    lines = [f"{_key(k)} = {_value(v)}" for k, v in doc.items() if not isinstance(v, dict) and not _is_table_list(v)]
    for k, v in doc.items():
        if isinstance(v, dict):
            name = f"{_prefix}{_key(k)}"
            lines += ["", f"[{name}]", toml_text(v, name + ".").rstrip("\n")]
    for k, v in doc.items():
        if _is_table_list(v):
            name = f"{_prefix}{_key(k)}"
            for item in v:
                lines += ["", f"[[{name}]]", toml_text(item, name + ".").rstrip("\n")]
    return "\n".join(line for line in lines) + "\n"
