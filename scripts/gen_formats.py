"""Write the generated part of docs/formats/analysis.md (field reference and JSON Schema) from
the model in reportgen/analysis/document/ (the package's modules). Run after changing the model:

    PYTHONPATH=. python scripts/gen_formats.py

tests/analysis/test_document.py fails when the page and the model disagree.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reportgen.analysis.schema_doc import replace_generated

PAGE = Path(__file__).resolve().parents[1] / "docs" / "formats" / "analysis.md"


def main() -> None:
    text = PAGE.read_text(encoding="utf-8")
    new = replace_generated(text)
    if new != text:
        PAGE.write_text(new, encoding="utf-8")
        print(f"updated {PAGE}")
    else:
        print(f"{PAGE} is current")


if __name__ == "__main__":
    main()
