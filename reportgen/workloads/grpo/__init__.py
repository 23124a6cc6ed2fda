"""The embedded default workload: a small real GRPO trainer speaking Relax's flags and metrics.

Run it as `python -m reportgen.workloads.grpo [FLAGS]`. It sits before the reportgen pipeline,
as the thing a recipe launches: its console lines and TensorBoard scalars are what
`reportgen.ingest` reads, in the same formats as a Relax run. It needs only torch (its Qwen3
decoder is transformers' written again, qwen3.py); nothing else in reportgen imports it.
"""

# The workload's name and version, printed first in every run's log (`workload: grpo-max v2`) and
# recorded by reportgen's ingest, so a report says which workload made its runs. v1: random init, no
# warm start (the showcases made before v2 print no such line and read as v1). v2: a cached warm
# start on the task (warm_start.py), answers whose largest digit is uniform over 0-9 (task.py).
WORKLOAD = "grpo-max"
VERSION = "v2"
