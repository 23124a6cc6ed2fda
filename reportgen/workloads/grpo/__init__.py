"""The embedded default workload: a small real GRPO trainer speaking Relax's flags and metrics.

Run it as `python -m reportgen.workloads.grpo [FLAGS]`. It sits before the reportgen pipeline,
as the thing a recipe launches: its console lines and TensorBoard scalars are what
`reportgen.ingest` reads, in the same formats as a Relax run. It needs only torch and
transformers; nothing else in reportgen imports it.
"""
