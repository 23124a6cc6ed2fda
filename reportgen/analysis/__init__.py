"""Analysis: window statistics, an autocorrelation-aware interval, guardrails and verdicts.

Pipeline position: ingest -> **analysis** -> render. Pure: functions take data (pandas frames,
dicts already read from disk) and return frozen dataclasses or plain dicts. No file I/O, no CLI,
no subprocess. The I/O edge that reads runs/ and writes analysis.json is `reportgen.analyze`.
"""

from reportgen.analysis.guardrails import Guardrail
from reportgen.analysis.interval import Interval, block_length, dependence, ratio_interval
from reportgen.analysis.stats import WindowStats, change, summarize, window_stats
from reportgen.analysis.verdict import Verdict, decide

__all__ = [
    "Guardrail",
    "Interval",
    "Verdict",
    "WindowStats",
    "block_length",
    "change",
    "decide",
    "dependence",
    "ratio_interval",
    "summarize",
    "window_stats",
]
