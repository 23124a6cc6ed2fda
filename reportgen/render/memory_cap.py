"""The GPU memory cap a workload applied to itself, read from a run's effective command line (render
stage; shared by the experiment page's memory chart and a failed candidate's write-up)."""

from __future__ import annotations

from reportgen.render.load import ExperimentData

CAP_FLAG = "--gpu-memory-cap-gib"


def _flag_value(argv: object, flag: str) -> object:
    """A flag's value from an effective argv: a {flag: value} dict or a list of words."""
    if isinstance(argv, dict):
        return argv.get(flag)
    if isinstance(argv, list):
        for i, word in enumerate(argv):
            if word == flag and i + 1 < len(argv):
                return argv[i + 1]
            if isinstance(word, str) and word.startswith(flag + "="):
                return word.split("=", 1)[1]
    return None


def memory_cap_mib(exp: ExperimentData, cand: str) -> float | None:
    """The GPU memory cap the workload applied to itself (`--gpu-memory-cap-gib N` in the effective
    argv), in MiB; None when no run of the arm set one."""
    for run in exp.formal_runs(cand):
        for argv in (run.manifest.get("effective_argv"), run.command.get("argv"), run.manifest.get("command")):
            value = _flag_value(argv, CAP_FLAG)
            if value is None:
                continue
            try:
                return float(str(value)) * 1024.0
            except (TypeError, ValueError):
                continue
    return None
