"""What kind of report a page is: a CPU demo, a GPU showcase or a GPU run (render stage).

The CPU demo (the embedded trainer on a laptop or CI) and a GPU showcase of the same spec share
a title but not their verdicts; a reader who lands on one from a search must see which it is
before any number. The kind goes in front of the page title (nav, search results, browser tab)
and in a badge with the machine under the heading.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from reportgen.render import safe

SHOWCASE_PREFIX = "showcase-"  # committed GPU showcases live in runs/showcase-*


@dataclass(frozen=True)
class ReportKind:
    key: str  # "demo", "showcase" or "run": a CSS class suffix
    label: str  # "CPU demo", "GPU showcase", "GPU run"
    machine: str  # "1 x NVIDIA H200", "Intel(R) Xeon(R) Processor, 2 cores"


def classify(name: str, gpu_names: Sequence[str], machine: str) -> ReportKind:
    """CPU only: the demo (Relax needs GPUs; on a CPU only the embedded stand-in trainer runs).
    With GPUs: a showcase when the folder is a committed runs/showcase-*, else a GPU run."""
    if not gpu_names:
        return ReportKind("demo", "CPU demo", machine)
    if name.startswith(SHOWCASE_PREFIX):
        return ReportKind("showcase", "GPU showcase", machine)
    return ReportKind("run", "GPU run", machine)


def page_title(title: str, kind: ReportKind) -> str:
    """The title as the nav, the search index and the browser tab show it: kind first."""
    return f"{kind.label}: {title}"


def nav_title(name: str, kind: ReportKind) -> str:
    """A few words for the navigation: the kind and the experiment's folder (its handle for every
    command), less a "showcase-" the kind already says: "GPU showcase: 1xh200-grpo-offload-r3"."""
    short = name[len(SHOWCASE_PREFIX) :] if kind.key == "showcase" and name.startswith(SHOWCASE_PREFIX) else name
    return f"{kind.label}: {short}"


def badge(kind: ReportKind) -> str:
    """A badge naming the kind and the machine, e.g. "GPU showcase · 1 x NVIDIA H200"."""
    return f'<span class="rg-kind rg-kind-{safe.attr(kind.key)}">{safe.text(kind.label)} · {safe.text(kind.machine)}</span>'
