"""Performance history across commits: every run's figure kept as a point, per recipe, profile and
machine class, with change points found and attributed to a commit range.

Pipeline position: analysis.json + each run's stored tables -> **history** -> history.parquet and
the history pages. Pure modules: `model.py` (the table, one typed row per run and metric),
`figures.py` (a run's figures and their within-run intervals), `changepoints.py` (the detector),
`series.py` (points per campaign, series, change points, "this baseline vs history"). The I/O edge
that reads a runs/ root and writes history.parquet is `store.py`. docs/performance-history.md says why.
"""
