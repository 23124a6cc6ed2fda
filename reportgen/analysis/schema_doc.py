"""The generated part of docs/formats/analysis.md: a field reference and the JSON Schema of
`AnalysisDocument` (reportgen.analysis.document).

Part of reportgen.analysis (pure: text in, text out). scripts/gen_formats.py writes it into the
page between the two markers; tests/analysis/test_document.py fails when page and model drift,
so the documentation of analysis.json cannot go stale silently.
"""

from __future__ import annotations

import json
from typing import Any

from reportgen.analysis.document import SCHEMA_VERSION, AnalysisDocument

BEGIN = "<!-- BEGIN GENERATED: scripts/gen_formats.py (do not edit by hand) -->"
END = "<!-- END GENERATED -->"


def json_schema() -> dict[str, Any]:
    schema = AnalysisDocument.model_json_schema()
    schema["$id"] = f"https://reportgen.invalid/schemas/analysis-{SCHEMA_VERSION}.json"
    return schema


def _type(prop: dict[str, Any]) -> str:
    """A short type in words: "string", "number | null", "list of ArmResult", "map of string to ..."."""
    if "$ref" in prop:
        return str(prop["$ref"]).rsplit("/", 1)[-1]
    if "anyOf" in prop:
        return " | ".join(_type(p) for p in prop["anyOf"])
    if "enum" in prop:
        return " | ".join(json.dumps(v) for v in prop["enum"])
    if "const" in prop:
        return json.dumps(prop["const"])
    t = prop.get("type", "any")
    if t == "array":
        return f"list of {_type(prop.get('items', {}))}"
    if t == "object":
        extra = prop.get("additionalProperties")
        return f"map of string to {_type(extra)}" if isinstance(extra, dict) else "object"
    return str(t)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _table(name: str, model: dict[str, Any]) -> list[str]:
    required = set(model.get("required", []))
    out = [f"#### `{name}`", ""]
    if model.get("description"):
        out += [" ".join(model["description"].split()), ""]
    out += ["| field | type | required | meaning |", "|---|---|---|---|"]
    for field, prop in model.get("properties", {}).items():
        out.append(
            f"| `{field}` | {_cell(_type(prop))} | {'yes' if field in required else 'no'} | "
            f"{_cell(prop.get('description', ''))} |"
        )
    return out + [""]


def generated_section() -> str:
    """The Markdown between BEGIN and END: every model's fields, then the whole JSON Schema."""
    schema = json_schema()
    defs = schema.get("$defs", {})
    lines = [BEGIN, "", "### Fields", ""]
    lines += _table("AnalysisDocument", schema)
    for name in sorted(defs):
        if name == "JsonValue":
            continue
        lines += _table(name, defs[name])
    lines += [
        "### JSON Schema",
        "",
        '??? info "The JSON Schema of schema version ' + str(SCHEMA_VERSION) + ' (draft 2020-12)"',
        "",
        "    ```json",
        *("    " + line for line in json.dumps(schema, indent=2, ensure_ascii=False).splitlines()),
        "    ```",
        "",
        END,
    ]
    return "\n".join(lines)


def replace_generated(page: str) -> str:
    """`page` with its generated section replaced by the current one (appended if absent)."""
    if BEGIN in page and END in page:
        head, rest = page.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        return head + generated_section() + tail
    return page.rstrip("\n") + "\n\n" + generated_section() + "\n"
