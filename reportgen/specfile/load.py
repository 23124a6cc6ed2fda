"""Read a spec file: TOML -> named profile applied -> validated `Spec`, or one-line `UserError`."""

from __future__ import annotations

import copy
import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from reportgen.errors import UserError
from reportgen.specfile.model import Spec


def load_spec(path: str | Path, *, profile: str | None = None, check_files: bool = True) -> Spec:
    """Load and validate the spec at `path`; `profile` selects a `[profiles.<name>]` overlay."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: spec file not found; pass the path of an experiment TOML file")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: cannot read the spec ({exc})") from None
    return parse_spec(text, source=path, profile=profile, check_files=check_files)


def parse_spec(text: str, *, source: Path, profile: str | None = None, check_files: bool = True) -> Spec:
    """Validate spec text; `check_files=False` for a stored copy whose recipe lives elsewhere."""
    source = Path(source)
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{source}: not valid TOML: {exc}") from None
    if profile is None:
        _check_overlays(raw, source, check_files)
    raw = apply_profile(raw, profile, source)
    raw = expand_paths(raw, source, strict=check_files)
    raw["source_path"] = str(source.resolve())
    raw["source_dir"] = str(source.resolve().parent)
    raw["profile"] = profile
    raw["profile_tables"] = _profile_tables(text, profile)
    try:
        spec = Spec.model_validate(raw)
    except ValidationError as exc:
        raise UserError(f"{source}: {_first_error(exc)}") from None
    if check_files:
        _check_files(spec, source)
    return spec


_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")
# The paths of a spec that name a checkout on the user's machine.
EXPANDED = (("recipe", "script"), ("recipe", "workdir"), ("provenance", "recipe_repo"), ("provenance", "model_dir"))


def expand_paths(
    raw: dict[str, Any], source: Path, *, strict: bool = True, env: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """`recipe.script`, `recipe.workdir`, `provenance.recipe_repo` and `provenance.model_dir` with
    `${NAME}` / `$NAME` replaced from the environment, so one spec serves every checkout
    (`script = "${RELAX_DIR}/scripts/training/..."`, docs/relax.md). An unset variable is one
    UserError line when `strict`; a stored copy (`strict=False`: its recipe lives elsewhere) keeps
    the text as written."""
    env = os.environ if env is None else env
    out = dict(raw)
    for table, key in EXPANDED:
        section = out.get(table)
        if not isinstance(section, dict):
            continue
        value = section.get(key)
        if not isinstance(value, str) or "$" not in value:
            continue
        unset = [a or b for a, b in _VAR.findall(value) if not env.get(a or b)]
        if unset:
            if strict:
                raise UserError(
                    f"{source}: {table}.{key} uses ${{{unset[0]}}}, which is not set; "
                    f"export {unset[0]}=/path/to/your/checkout (see docs/relax.md)"
                )
            continue
        out[table] = {**section, key: _VAR.sub(lambda m: env[m.group(1) or m.group(2)], value)}
    return out


def _check_overlays(raw: dict[str, Any], source: Path, check_files: bool) -> None:
    """A typo in a profile fails now, not on the day someone selects that profile."""
    profiles = raw.get("profiles", {})
    if not isinstance(profiles, dict):
        return
    for name in profiles:
        try:
            merged = apply_profile(raw, name, source)
            merged.update(source_path=str(source), source_dir=str(source.parent), profile=name)
            Spec.model_validate(merged)
        except ValidationError as exc:
            raise UserError(f"{source}: [profiles.{name}] {_first_error(exc)}") from None


def apply_profile(raw: dict[str, Any], profile: str | None, source: Path) -> dict[str, Any]:
    """Overlay `[profiles.<profile>]` on the spec: tables merge key by key, other values replace."""
    raw = copy.deepcopy(raw)
    profiles = raw.pop("profiles", {})
    if not isinstance(profiles, dict):
        raise UserError(f"{source}: profiles: expected a table of named overlays, e.g. [profiles.gpu]")
    if profile is None:
        return raw
    if profile not in profiles:
        known = ", ".join(sorted(profiles)) or "none"
        raise UserError(f"{source}: --profile {profile}: no [profiles.{profile}] table (profiles: {known})")
    overlay = profiles[profile]
    if not isinstance(overlay, dict):
        raise UserError(f"{source}: profiles.{profile}: expected a table")
    merged = _merge(raw, overlay)
    if "name" not in overlay and isinstance(merged.get("name"), str):
        merged["name"] = f"{merged['name']}-{profile}"
    return merged


def _profile_tables(text: str, profile: str | None) -> list[str]:
    """The sections the profile restates ([profiles.gpu.run], [[profiles.gpu.candidates]]): a value
    of the campaign that ran comes from there, so an edit a next step asks for goes there too."""
    if profile is None:
        return []
    overlay = tomllib.loads(text).get("profiles", {}).get(profile, {})
    return sorted(k for k, v in overlay.items() if isinstance(v, dict | list))


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = _loc(err.get("loc", ()))
    msg = str(err.get("msg", "invalid value"))
    for prefix in ("Value error, ", "Assertion failed, "):
        if msg.startswith(prefix):
            msg = msg[len(prefix) :]
    kind = err.get("type", "")
    if kind == "extra_forbidden":
        msg = "unknown key (check its spelling against docs/formats/spec.md)"
    elif kind == "missing":
        msg = "required key is missing"
    elif "input" in err and kind not in ("value_error",) and not isinstance(err["input"], (dict, list)):
        msg = f"{msg} (got {err['input']!r})"
    more = len(exc.errors()) - 1
    tail = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
    return f"{loc}: {msg}{tail}" if loc else f"{msg}{tail}"


def _loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif str(part).startswith(("function-", "union[", "list[", "str", "int", "float", "bool")):
            continue  # pydantic's union-branch markers say nothing to a user
        else:
            out += ("." if out else "") + str(part)
    return out


def _check_files(spec: Spec, source: Path) -> None:
    base = Path(spec.source_dir)
    if spec.recipe.script is not None:
        script = base / spec.recipe.script
        if not script.is_file():
            raise UserError(f"{source}: recipe.script: {script} does not exist")
    workdir = base / spec.recipe.workdir
    if not workdir.is_dir():
        raise UserError(f"{source}: recipe.workdir: {workdir} is not a folder")
    for i, data in enumerate(spec.provenance.data_files):
        if not (base / data).is_file():
            raise UserError(f"{source}: provenance.data_files[{i}]: {base / data} does not exist")
    if spec.provenance.model_dir is not None and not (base / spec.provenance.model_dir).is_dir():
        raise UserError(f"{source}: provenance.model_dir: {base / spec.provenance.model_dir} is not a folder")
