"""Analysis: window statistics, an autocorrelation-aware interval, guardrails and verdicts.

Pipeline position: ingest -> **analysis** -> render. Pure: functions take data (pandas frames,
dicts already read from disk) and return frozen dataclasses or plain dicts. No file I/O, no CLI,
no subprocess. The I/O edge that reads runs/ and writes analysis.json is `reportgen.analyze`.
"""

from reportgen.analysis.stats import WindowStats, change, window_stats, summarize
from reportgen.analysis.guardrails import Guardrail
from reportgen.analysis.verdict import Verdict, decide
from reportgen.analysis.interval import Interval, ratio_interval, block_length, dependence

__all__ = [
    "WindowStats", "change", "window_stats", "summarize",
    "Interval", "ratio_interval", "block_length", "dependence", "Guardrail", "Verdict", "decide",

]
