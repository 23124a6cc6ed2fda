"""Profiler outputs turned into stored summaries: where the time and the memory went.

Pipeline position: after a profiler run ends (the runner) or when a hand-made run is ingested
with `--traces`, `reportgen.traces.store.summarize_run` reads the run's `traces/` folder once
(Chrome traces of torch.profiler and SGLang, CUDA memory snapshots) and writes
`traces.parquet` (owned by `reportgen.traces.model`). Pages read that table, never the traces.
"""
