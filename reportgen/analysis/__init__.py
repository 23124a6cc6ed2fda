"""Analysis: window statistics, run-level intervals over pairs of runs, guardrails and verdicts.

Pipeline position: ingest -> **analysis** -> render. Pure: functions take data (pandas frames,
dicts already read from disk) and return the analysis document's models (the document/ package). No file
I/O, no CLI, no subprocess. The I/O edge that reads runs/ and writes analysis.json is
`reportgen.analyze`.

Modules: evidence.py gathers, runlevel.py and design.py give the statistics, decision.py decides
(the only place a verdict is made), report.py builds the document; interval.py is the within-run
diagnostic interval; calibration.py simulates the shipped designs through the same code.
"""

from reportgen.analysis.check import guardrail
from reportgen.analysis.decision import Evidence, decide
from reportgen.analysis.document import GuardrailResult, Interval, Verdict, WindowStats
from reportgen.analysis.interval import block_length, dependence, ratio_interval
from reportgen.analysis.stats import change, summarize, window_stats

__all__ = [
    "Evidence",
    "GuardrailResult",
    "Interval",
    "Verdict",
    "WindowStats",
    "block_length",
    "change",
    "decide",
    "dependence",
    "guardrail",
    "ratio_interval",
    "summarize",
    "window_stats",
]
