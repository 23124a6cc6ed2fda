"""Guardrails: checks that must pass before a speed-up counts, each with its reason and evidence.

Part of reportgen.analysis (pure). A guardrail is `pass`, `fail` or `not_applicable` (the data
needed to check it is not there, e.g. a metric key the workload does not log); the reason says
which. Some guardrails make a comparison invalid rather than failed: different machine, different
model or data, another measurement on the machine at once, one arm disturbed far more than the
other (`INVALIDATING`).

Every guardrail is a `Check` (analysis/check.py): one function of a `GuardrailInput` returning a
`GuardrailResult`. `CHECKS` lists them in the order a comparison shows them; `check_all` runs
them. A new guardrail is one module and one line in `CHECKS` (or `register(check)` from a
plug-in or a test).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from reportgen.analysis import memory, overlap, quiet
from reportgen.analysis.check import FAIL as FAIL
from reportgen.analysis.check import NA as NA
from reportgen.analysis.check import PASS as PASS
from reportgen.analysis.check import WARN as WARN
from reportgen.analysis.check import Check as Check
from reportgen.analysis.check import GuardrailInput as GuardrailInput
from reportgen.analysis.check import guardrail as guardrail
from reportgen.analysis.check import which_runs as which_runs
from reportgen.analysis.document import GuardrailResult
from reportgen.analysis.inputs import argv_value
from reportgen.failures import event_label, first_failure, is_handled
from reportgen.store.run import LogEvent, StoredRun
from reportgen.vocab import (
    ACTOR_TRAIN_TOKENS,
    CRITIC_GRAD_NORM,
    CRITIC_VALUE_LOSS,
    FAILURE_KINDS,
    GRAD_NORM,
    KL_LOSS,
    LOSS,
    MULTI_TURN_PREFIX,
    NUM_SAMPLES,
    NUM_TURN_MAX,
    PG_CLIPFRAC,
    PPO_KL,
    PROFILER_FLAGS,
    RAW_REWARD,
    RESPONSE_LENGTHS,
    STEP_RESP_TOKEN_PER_S,
    STEP_TIME,
    TOTAL_LENGTHS,
    Status,
)

# Another measurement on the machine at once, or one arm disturbed much more than the other
# (reportgen.analysis.overlap, reportgen.analysis.quiet): the speed figures are not the arms'.
INVALIDATING = ("same_machine", "same_inputs", "no_overlap", "quiet_machine")
FINITE_KEYS = (
    ("loss", (LOSS,)),
    ("reward", (RAW_REWARD,)),
    ("response length", (RESPONSE_LENGTHS,)),
    ("KL", (PPO_KL, KL_LOSS)),
    ("clip fraction", (PG_CLIPFRAC,)),
    ("grad norm", (GRAD_NORM,)),
)
# A critic's (PPO): judged when logged, never listed as missing (GRPO has no critic).
CRITIC_FINITE_KEYS = (
    ("critic value loss", (CRITIC_VALUE_LOSS,)),
    ("critic grad norm", (CRITIC_GRAD_NORM,)),
)
TOKEN_TOLERANCE = 0.02  # relative; the two sides round and time differently
SAMPLES_TOLERANCE = 0.01  # relative; a derived count is a ratio of printed floats (and DP means)
# What Relax prints that gives a step's sample count (tests/ingest/relax_sources.md): the actor's
# perf line sums every sample's total length (`perf/actor_train_tokens`), the rollout line has
# their mean (`rollout/total_lengths`); their ratio is the count.
# Recipes whose loss masks leave out part of each response (the response-token rate then counts fewer
# tokens than the response lengths): multi-turn logging and partial-rollout masking.
MASKING_FLAGS = ("--log-multi-turn", "--mask-offpolicy-in-partial-rollout")


def _ev(run: StoredRun, event: LogEvent | None = None) -> str:
    if event is not None and event.line is not None:
        return f"{run.rel}/{event.where}"
    return f"{run.rel}/manifest.json"


def _failed_on(run: StoredRun, id: str, title: str, said: str) -> GuardrailResult:
    """A check that failed on one run's manifest record (hashes, fingerprint, flags), named as the evidence."""
    return guardrail(id, title, FAIL, f"{run.rel}: {said}", _ev(run))


def failure_events(run: StoredRun) -> list[LogEvent]:
    """The run's events that are failures: all but tracebacks the run survived (ingest's rule,
    reportgen.failures: a traceback that Relax's clean end follows was handled)."""
    ends = run.manifest.ingest.clean_ends()
    return [e for e in run.events if e.kind in FAILURE_KINDS and not is_handled(e, ends)]


def failure_event(run: StoredRun) -> LogEvent | None:
    """The event that names the run's failure (ingest's rule, `first_failure`), or None."""
    return first_failure(run.events, run.manifest.ingest.clean_ends())


def describe_failure(run: StoredRun) -> str | None:
    """One line for why a run failed, e.g. "OOM at step 9, tried to allocate 2.46 GiB": the event
    ingest's status reason names (`first_failure`, one rule for both)."""
    e = failure_event(run)
    if e is not None:
        if e.kind == "oom":
            return memory.oom_cause(event_label(e), e, memory.declared_cap_mib([run]))
        msg = e.message.strip()
        return event_label(e) + (f": {msg[:160]}" if msg else "")
    m = run.manifest
    if run.status == Status.FAILED and m.status_reason:
        return str(m.status_reason)
    if m.timed_out:
        return "timed out"
    if m.signal:
        return f"killed by {m.signal}"
    if m.exit_code not in (0, None):
        return f"exit code {m.exit_code}"
    if run.status == "unknown":
        return "manifest.json missing or unreadable"
    if run.status != "complete":
        return f"run status is {run.status}"
    return None


def _grouped(found: Sequence[tuple[StoredRun, str]]) -> str:
    """Every failing run with its finding, runs with the same finding on one line: "A2/1, A2/2: ...";
    a failure in one repeat must not hide the same or another failure in the next."""
    by: dict[str, list[str]] = {}
    for r, what in found:
        by.setdefault(what, []).append(r.rel)
    return "; ".join(f"{', '.join(paths)}: {what}" for what, paths in by.items())


def steps_completed(ctx: GuardrailInput) -> GuardrailResult:
    runs, expected = ctx.runs, ctx.expected_steps
    title = "All declared steps completed"
    if not runs:
        return guardrail("steps_completed", title, FAIL, "no formal run")
    if expected is None:
        return guardrail("steps_completed", title, NA, "no step count declared ([workload].steps or the steps flag)")
    # A run resumed from a checkpoint at step S had steps 0..S-1 done before it started (StoredRun.steps_before).
    short = [(r, r.steps_before + r.steps_completed) for r in runs if r.steps_before + r.steps_completed < expected]
    if short:
        said = _grouped([(r, f"{n}/{expected} steps") for r, n in short])
        return guardrail("steps_completed", title, FAIL, said, _ev(short[0][0]))
    return guardrail("steps_completed", title, PASS, f"{which_runs(runs)}: {expected}/{expected} steps")


def no_failures(ctx: GuardrailInput) -> GuardrailResult:
    runs = ctx.runs
    title = "No OOM, NaN/Inf, traceback or abnormal exit"
    failed = [(r, cause) for r in runs if (cause := describe_failure(r))]
    if failed:
        first = failed[0][0]
        return guardrail("no_failures", title, FAIL, _grouped(failed), _ev(first, failure_event(first)))
    if not runs:
        return guardrail("no_failures", title, FAIL, "no formal run")
    notes = [f"{r.rel}: {w}" for r in runs for w in r.manifest.ingest.warnings]
    tail = f" (warnings: {'; '.join(notes)})" if notes else ""
    return guardrail("no_failures", title, PASS, f"{which_runs(runs)}: no failure event{tail}")


def _number(argv: dict[str, Any], flag: str) -> float | None:
    """A flag's numeric value, None when absent, a switch, null (the dump's `None`) or not a number."""
    v = argv.get(flag)
    if isinstance(v, (list, tuple)):
        v = v[-1] if v else None
    if v is None or isinstance(v, bool):
        return None
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def expected_samples(run: StoredRun, batch_flag: str) -> tuple[float | None, str]:
    """Samples a rollout step trains on, from the effective argv, and how it was worked out: Relax's
    rollout batch is `--rollout-batch-size` prompts x `--n-samples-per-prompt` samples (its global
    batch is that over `--num-steps-per-rollout`); else the global batch times the steps per rollout."""
    argv = run.argv
    prompts, per_prompt = _number(argv, "--rollout-batch-size"), _number(argv, "--n-samples-per-prompt")
    if prompts is not None and per_prompt is not None:
        return prompts * per_prompt, f"--rollout-batch-size {prompts:g} x --n-samples-per-prompt {per_prompt:g}"
    batch = _number(argv, batch_flag)
    if batch is not None:
        per_rollout = _number(argv, "--num-steps-per-rollout") or 1.0
        how = f"{batch_flag} {batch:g}" + (f" x --num-steps-per-rollout {per_rollout:g}" if per_rollout != 1 else "")
        return batch * per_rollout, how
    return None, f"the effective argv has neither --rollout-batch-size with --n-samples-per-prompt nor {batch_flag}"


def observed_samples(run: StoredRun) -> tuple[pd.Series | None, str]:
    """Samples each step trained on, from what the run printed: `rollout/num_samples` where a
    workload logs it, else Relax's `perf/actor_train_tokens` / `rollout/total_lengths`."""
    df = run.steps
    if NUM_SAMPLES in df.columns:
        return df[NUM_SAMPLES].dropna(), NUM_SAMPLES
    if ACTOR_TRAIN_TOKENS in df.columns and TOTAL_LENGTHS in df.columns:
        n = (df[ACTOR_TRAIN_TOKENS] / df[TOTAL_LENGTHS]).replace([np.inf, -np.inf], np.nan).dropna()
        if len(n):
            return n, f"{ACTOR_TRAIN_TOKENS} / {TOTAL_LENGTHS}"
    have = [k for k in (ACTOR_TRAIN_TOKENS, TOTAL_LENGTHS) if k in df.columns]
    missing = [k for k in (ACTOR_TRAIN_TOKENS, TOTAL_LENGTHS) if k not in df.columns]
    if have and not missing:
        return None, f"{ACTOR_TRAIN_TOKENS} and {TOTAL_LENGTHS} never logged together on a step"
    return None, f"no {NUM_SAMPLES} and no {' or '.join(missing)} logged"


def _fails_in_metrics(id: str, title: str, run: StoredRun, said: str) -> GuardrailResult:
    """A failure a step of `run` shows: the reason names the run, the evidence is its metrics table."""
    return guardrail(id, title, FAIL, f"{run.rel}: {said}", f"{run.rel}/metrics.parquet")


def _not_checkable(id: str, title: str, why_not: Sequence[str]) -> GuardrailResult:
    """No run could be checked: why not, run by run."""
    return guardrail(id, title, NA, "not checkable: " + "; ".join(why_not or ["no formal run"]))


def samples_per_step(ctx: GuardrailInput) -> GuardrailResult:
    runs, batch_flag = ctx.runs, ctx.batch_flag
    title = "Samples per step equal the global batch"
    checked: list[StoredRun] = []
    why_not: list[str] = []
    how, source, want = "", "", 0.0
    for r in runs:
        expected, source = expected_samples(r, batch_flag)
        if expected is not None:
            want = expected
        got, how = observed_samples(r)
        if expected is None or got is None:
            why_not.append(f"{r.rel}: {source if expected is None else how}")
            continue
        bad = got[(got - want).abs() > SAMPLES_TOLERANCE * want]
        checked.append(r)
        if len(bad):
            said = (
                f"step {int(bad.index[0])} trained on {bad.iloc[0]:.4g} samples ({how}), expected {want:g} ({source})"
            )
            return _fails_in_metrics("samples_per_step", title, r, said)
    if not checked:
        return _not_checkable("samples_per_step", title, why_not)
    tail = f"; not checkable: {'; '.join(why_not)}" if why_not else ""
    return guardrail(
        "samples_per_step",
        title,
        PASS,
        f"{which_runs(checked)}: every step trained on the expected {want:g} samples ({how}; {source}){tail}",
    )


def masked_responses(run: StoredRun) -> str | None:
    """Why a run's loss masks leave out part of its responses (then response-token throughput x
    time is not response length x samples), or None: multi-turn rollouts (observation tokens are
    inside the response and masked) or a masking flag."""
    multi = [k for k in run.steps.columns if str(k).startswith(MULTI_TURN_PREFIX)]
    if multi:
        return f"multi-turn rollouts ({multi[0]} logged): loss masks leave out the observation tokens"
    if NUM_TURN_MAX in run.steps.columns and (run.steps[NUM_TURN_MAX].dropna() > 1).any():
        return f"multi-turn rollouts ({NUM_TURN_MAX} > 1): loss masks leave out the observation tokens"
    for flag in MASKING_FLAGS:
        v = run.argv.get(flag)
        if v is not None and v is not False and str(v).lower() != "false":
            return f"masked recipe ({flag}): loss masks leave out part of each response"
    return None


def token_accounting(ctx: GuardrailInput) -> GuardrailResult:
    """response tokens/s x step time = mean response length x samples, step by step."""
    runs, batch_flag = ctx.runs, ctx.batch_flag
    title = "Response-token accounting consistent"
    need = (STEP_RESP_TOKEN_PER_S, STEP_TIME, RESPONSE_LENGTHS)
    checked: list[StoredRun] = []
    why_not: list[str] = []
    for r in runs:
        masked = masked_responses(r)
        if masked:
            return guardrail("token_accounting", title, NA, f"not applicable: {r.rel}: {masked}")
    for r in runs:
        df = r.steps
        missing = [k for k in need if k not in df.columns]
        if missing:
            why_not.append(f"{r.rel} logged no {', '.join(missing)}")
            continue
        got, how = observed_samples(r)
        samples: pd.Series | float | None = got
        if got is None:
            samples, how = expected_samples(r, batch_flag)
        if samples is None:
            why_not.append(f"{r.rel}: sample count unknown ({how})")
            continue
        lhs = df[STEP_RESP_TOKEN_PER_S] * df[STEP_TIME]
        rhs = df[RESPONSE_LENGTHS] * samples
        ok = lhs.notna() & rhs.notna() & np.isfinite(lhs) & np.isfinite(rhs) & (rhs != 0)
        if not ok.any():
            why_not.append(f"{r.rel}: no step logged all of {', '.join(need)}")
            continue
        checked.append(r)
        rel = (lhs[ok] - rhs[ok]).abs() / rhs[ok].abs()
        bad = rel[rel > TOKEN_TOLERANCE]
        if len(bad):
            s = int(bad.index[0])
            said = (
                f"step {s}: {lhs[s]:.1f} tokens from throughput x time vs "
                f"{rhs[s]:.1f} from lengths x samples ({bad.iloc[0]:.1%} apart)"
            )
            return _fails_in_metrics("token_accounting", title, r, said)
    if not checked:
        return _not_checkable("token_accounting", title, why_not)
    return guardrail(
        "token_accounting", title, PASS, f"{which_runs(checked)}: agree within {TOKEN_TOLERANCE:.0%} on every step"
    )


def finite_training(ctx: GuardrailInput) -> GuardrailResult:
    runs = ctx.runs
    title = "Loss, reward, response length, KL, clip fraction, grad norm finite"
    absent, seen = [], 0
    for label, keys in (*FINITE_KEYS, *CRITIC_FINITE_KEYS):
        present = False
        for r in runs:
            for key in keys:
                if key not in r.steps.columns:
                    continue
                present = True
                skipped = _loss_scale_skipped(r, key)
                bad = sorted((step, value) for k, step, value in r.nonfinite if k == key and step not in skipped)
                if bad:
                    step, value = bad[0]
                    return guardrail(
                        "finite_training",
                        title,
                        FAIL,
                        f"{r.rel}: {key} = {value} at step {step}",
                        f"{r.rel}/metrics.parquet",
                    )
        if present:
            seen += 1
        elif (label, keys) in FINITE_KEYS:
            absent.append(label)
    if not seen:
        return guardrail("finite_training", title, NA, "not checkable: none of the keys was logged")
    tail = f" (not logged: {', '.join(absent)})" if absent else ""
    skips = sum(len(_loss_scale_skipped(r, GRAD_NORM)) + len(_loss_scale_skipped(r, CRITIC_GRAD_NORM)) for r in runs)
    if skips:
        tail += f"; grad norm nan on {skips} step(s) whose update fp16 loss scaling skipped (routine)"
    return guardrail("finite_training", title, PASS, f"{seen} quantities finite on every step{tail}")


def _loss_scale_skipped(run: StoredRun, key: str) -> set[int]:
    """Steps whose update the fp16 loss scaler skipped, for the actor's grad norm or the critic's:
    Relax logs their grad norm as nan (ingest lists them apart: docs/ingest.md). None for other keys."""
    skips = run.manifest.ingest.loss_scale_skips
    if skips is None:
        return set()
    steps = {GRAD_NORM: skips.skipped_steps, CRITIC_GRAD_NORM: skips.critic_skipped_steps}.get(key, [])
    return {int(s) for s in steps}


def fixed_workload(ctx: GuardrailInput) -> GuardrailResult:
    """Every fixed-workload flag of a candidate run as the baseline's; a seed set per block
    (`ctx.seed_flags`) as the baseline run of its own pair, whose block set the same one."""
    baseline, candidate, flags = ctx.baseline, ctx.candidate, ctx.fixed_flags
    title = "Fixed-workload flags unchanged from the baseline"
    for r in candidate:
        for v in r.manifest.invariants.violations:
            return _failed_on(r, "fixed_workload", title, f"{v.flag} is {v.actual!r}, expected {v.expected!r}")
    if not flags:
        return guardrail("fixed_workload", title, NA, "no fixed-workload flags declared ([workload].flags)")
    if not baseline or not candidate:
        return guardrail("fixed_workload", title, NA, "an arm has no formal run")
    ref = baseline[0]
    pair_of = {r.repeat: r for r in baseline}
    per_block = set(ctx.seed_flags)
    unknown = []
    for flag in flags:
        for r in candidate:
            mate = pair_of.get(r.repeat) if flag in per_block else ref
            if mate is None:  # an unpaired run: its block's seed has no baseline run to match
                continue
            want, got = argv_value(mate.argv, flag), argv_value(r.argv, flag)
            if want is None and got is None:
                unknown.append(flag)
                continue
            if got != want:
                whose = f"its pair's baseline ({mate.rel})" if flag in per_block else "baseline"
                return _failed_on(r, "fixed_workload", title, f"{flag} = {got!r}, {whose} {want!r}")
    if len(set(unknown)) == len(flags):
        return guardrail("fixed_workload", title, NA, "not checkable: no effective argv recorded")
    tail = f" ({', '.join(sorted(set(unknown)))} not recorded)" if unknown else ""
    said = "1 flag" if len(flags) == 1 else f"{len(flags)} flags"
    seeds = (
        f"; {', '.join(f for f in flags if f in per_block)} equal within each pair (seeds per block)"
        if per_block
        else ""
    )
    return guardrail("fixed_workload", title, PASS, f"{said} equal to the baseline{tail}{seeds}")


def _hashes(r: StoredRun) -> tuple[Any, Any]:
    h = r.manifest.hashes
    return h.model_manifest_sha256, dict(h.data)


def _warm_start(r: StoredRun) -> str | None:
    """The SHA-256 of the warm start the run's policy began from, as its log said (None: not said)."""
    return r.manifest.workload.warm_start_sha256 if r.manifest.workload is not None else None


def same_inputs(ctx: GuardrailInput) -> GuardrailResult:
    """The declared model and data files hashed alike in every run, and the warm start a trainer
    made or read (the embedded workload's) the same in both runs of each pair."""
    baseline, candidate = ctx.baseline, ctx.candidate
    title = "Identical model manifest and data hashes"
    # A run that recorded no hashes (e.g. an unreadable manifest) is unknown, not different:
    # its own failure is reported by the other guardrails.
    runs = [r for r in (*baseline, *candidate) if _hashes(r) != (None, {})]
    warm = [r for r in (*baseline, *candidate) if _warm_start(r) is not None]
    if not runs and not warm:
        return guardrail(
            "same_inputs",
            title,
            NA,
            "not checkable: no model or data files declared ([provenance] model_dir, data_files), so none was hashed",
        )
    if runs:
        ref = _hashes(runs[0])
        for r in runs[1:]:
            model, data = _hashes(r)
            if model != ref[0]:
                return _failed_on(r, "same_inputs", title, f"model manifest hash differs from {runs[0].rel}")
            if data != ref[1]:
                return _failed_on(r, "same_inputs", title, f"data hashes differ from {runs[0].rel}")
    first: dict[int, StoredRun] = {}
    for r in warm:  # a pair is one block: both its runs start from the same weights
        mate = first.setdefault(r.repeat, r)
        if _warm_start(r) != _warm_start(mate):
            return _failed_on(
                r,
                "same_inputs",
                title,
                f"warm start {str(_warm_start(r))[:12]} differs from its pair's ({mate.rel}: "
                f"{str(_warm_start(mate))[:12]}): the two runs began from different weights",
            )
    said = [f"{which_runs(runs)}: same hashes"] if runs else []
    if warm:
        starts = sorted({str(_warm_start(r)) for r in warm})
        said.append(f"{which_runs(warm)}: the same warm start in each pair ({', '.join(s[:12] for s in starts)})")
    return guardrail("same_inputs", title, PASS, "; ".join(said))


def same_machine(ctx: GuardrailInput) -> GuardrailResult:
    baseline, candidate = ctx.baseline, ctx.candidate
    title = "Same machine fingerprint"
    runs = [r for r in (*baseline, *candidate) if r.manifest.fingerprint_id is not None]
    if not runs:
        return guardrail("same_machine", title, NA, "not checkable: no fingerprint recorded")
    # A pair is one block (one repeat of each arm), made back to back on one machine; a campaign's
    # blocks may come from several machines of one class (docs/device.md), never one block from two.
    first: dict[int, StoredRun] = {}
    for r in runs:
        ref = first.setdefault(r.repeat, r)
        if r.manifest.fingerprint_id != ref.manifest.fingerprint_id:
            return _failed_on(
                r,
                "same_machine",
                title,
                f"fingerprint {r.manifest.fingerprint_id} differs from {ref.rel}'s {ref.manifest.fingerprint_id}: "
                "a pair's runs must be made on one machine",
            )
    machines = {r.manifest.fingerprint_id for r in runs}
    if len(machines) == 1:
        return guardrail(
            "same_machine", title, PASS, f"{which_runs(runs)}: fingerprint {str(runs[0].manifest.fingerprint_id)[:12]}"
        )
    return guardrail(
        "same_machine",
        title,
        PASS,
        f"{which_runs(runs)}: each pair on one machine ({len(machines)} machines of the campaign's class gave pairs)",
    )


def _switched_on(value: Any) -> bool:
    """A flag's value in an effective argv means on: True or a value, not False, None or "false"."""
    return value is not None and value is not False and str(value).lower() not in ("false", "none")


def no_profiler(ctx: GuardrailInput) -> GuardrailResult:
    runs = ctx.runs
    title = "No profiler or memory recorder in formal runs"
    for r in runs:
        # A log's argument dump lists every flag, the ones off too (`use_pytorch_profiler ... False`).
        on = [f for f in PROFILER_FLAGS if _switched_on(r.argv.get(f, False))]
        if on:
            return guardrail(
                "no_profiler", title, FAIL, f"{r.rel}: {', '.join(on)} in a formal run", f"{r.rel}/manifest.json"
            )
    if runs and all(not r.argv for r in runs):
        return guardrail("no_profiler", title, NA, "not checkable: no effective argv recorded")
    return guardrail("no_profiler", title, PASS, "no profiler flag in the effective argv")


# Every guardrail, in the order a comparison lists them (same_work, made from the statistics'
# runs, follows them: analysis/report.py). The machine's checks need facts the I/O edge gathered
# (GuardrailInput.spans, the sampler's load): overlap.py, quiet.py.
CHECKS: list[Check] = [
    steps_completed,
    no_failures,
    samples_per_step,
    token_accounting,
    finite_training,
    fixed_workload,
    same_inputs,
    same_machine,
    no_profiler,
    overlap.check,
    quiet.check,
]


def register(check: Check) -> Check:
    """Add a guardrail after the others (a plug-in's, or a test's); returns it, so it decorates."""
    if check not in CHECKS:
        CHECKS.append(check)
    return check


def unregister(check: Check) -> None:
    """Take a registered guardrail out again."""
    CHECKS.remove(check)


def check_all(ctx: GuardrailInput, *, pending: str | None = None) -> list[GuardrailResult]:
    """Every registered guardrail over the finished runs of both arms, in `CHECKS`' order. `pending`
    names the runs left unfinished (interrupted, or running when the runner died), which resuming
    redoes: they are not judged, and while an arm has no finished run at all no check can be made
    yet. A warning (a plug-in's `warn`) is shown beside the verdict and never decides it."""
    checks = [check(ctx) for check in list(CHECKS)]
    if pending is None:
        return checks
    if not ctx.baseline or not ctx.candidate:
        return [guardrail(g.id, g.title, NA, f"not judged yet: {pending}") for g in checks]
    first = checks[0]
    note = f"{first.reason}; not counted yet: {pending}"
    return [guardrail(first.id, first.title, first.status, note, first.evidence), *checks[1:]]
