"""Workloads reportgen can launch itself (the embedded default GRPO trainer lives in `grpo`)."""
