"""The words of the domain, defined once: arm names, run roles and statuses, failure kinds, verdict
statuses and their labels, the better direction of a metric, and the Relax metric keys with their
title, meaning and unit.

Every stage (spec, plan, execute, ingest, analysis, render) imports these names instead of spelling
the strings, so renaming a word or adding a metric is one edit here. This module sits at the bottom
of the import graph: it imports nothing from reportgen.

The metric keys are Relax's own (relax/utils/training/train_metric_utils.py and
relax/backends/megatron/{actor,model,data}.py at 039ce87); the facts behind each meaning are in
/work/shared/reference/relax-formats.md and docs/relax.md.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Final, Literal, get_args

# -- arms and runs -------------------------------------------------------------------------------

BASELINE = "baseline"
"""The arm that runs the recipe as it is; every candidate is compared with it."""
PROFILE_PREFIX = "profile-"
"""A profiler arm is named after the arm it profiles: `profile-<arm>`."""
ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
"""Experiment and candidate ids: they name folders under runs/ and pages on the site."""

ArmRole = Literal["baseline", "candidate", "profile"]
"""What an arm of the plan is for."""
RunRole = Literal["formal", "profile"]
"""What a run is for (manifest.json `role`): formal runs are measured, profile runs only explain."""
FORMAL: RunRole = "formal"
PROFILE: RunRole = "profile"


def profile_arm(arm_id: str) -> str:
    """The id of the profiler arm of `arm_id`."""
    return PROFILE_PREFIX + arm_id


def is_profile_arm(arm_id: str) -> bool:
    return arm_id.startswith(PROFILE_PREFIX)


def run_role(arm_id: str, recorded: object = None) -> str:
    """A run's role: the one its manifest recorded, else the one its arm's name implies."""
    return str(recorded or (PROFILE if is_profile_arm(arm_id) else FORMAL))


class Status:
    """Run statuses (manifest.json `status`), written by the runner and by `reportgen ingest`."""

    RUNNING = "running"  # the run is under way, or the runner died: redone on resume
    COMPLETE = "complete"
    FAILED = "failed"
    INTERRUPTED = "interrupted"  # stopped by the user: redone on resume
    UNKNOWN = "unknown"  # no manifest to say


FINAL_STATUSES = (Status.COMPLETE, Status.FAILED)
"""Finished runs: kept on resume, never overwritten."""

# -- failure kinds -------------------------------------------------------------------------------

OOM = "oom"
NAN = "nan"
TRACEBACK = "traceback"
FATAL = "fatal"
ABNORMAL_EXIT = "abnormal_exit"
TIMEOUT = "timeout"
INTERRUPTED = "interrupted"

RECOVERED = "recovered"
"""The one event kind that is no failure: a failure (or stop) that a later attempt of the same run
got past (Relax's in-run restart, a retried job in the same log); `details.failure` names its kind,
the run's status does not rest on it."""

FAILURE_KINDS = (OOM, NAN, TRACEBACK, FATAL, ABNORMAL_EXIT, TIMEOUT, INTERRUPTED)
"""The kinds of event in events.json that are failures (every kind but `RECOVERED`). In this order
a run's failure is named: the most specific cause first (an OOM explains the traceback and the exit
code that follow it)."""
LOG_FAILURE_KINDS = frozenset({OOM, NAN, TRACEBACK, FATAL})
"""The kinds found by reading a console log; the other kinds come from the process's end (exit code,
time limit, signal), which a run made outside reportgen does not record."""
FAILURE_DISPLAY_ORDER = (OOM, NAN, FATAL, TRACEBACK, TIMEOUT, ABNORMAL_EXIT, INTERRUPTED)
"""The order a page lists a candidate's events in: what a reader acts on first."""

# -- verdicts -------------------------------------------------------------------------------------

VerdictStatus = Literal["accepted", "rejected", "no_change", "inconclusive", "failed", "invalid", "incomplete"]
"""A candidate's verdict (analysis.json `verdict.status`, analysis/decision.py decides it)."""


class Verdicts:
    """The verdict statuses by name."""

    ACCEPTED: Final = "accepted"  # the interval cleared the threshold: faster
    REJECTED: Final = "rejected"  # the interval cleared it the other way: slower
    NO_CHANGE: Final = "no_change"  # the interval lies inside the equivalence margin
    INCONCLUSIVE: Final = "inconclusive"  # not decided (yet): too few pairs, too wide, windows disagree
    FAILED: Final = "failed"  # a run or a guardrail failed
    INVALID: Final = "invalid"  # the arms are not comparable (machine, model, data, disturbance, work)
    INCOMPLETE: Final = "incomplete"  # runs are unfinished: resuming redoes them


VERDICT_STATUSES: tuple[VerdictStatus, ...] = get_args(VerdictStatus)
DECIDED: tuple[VerdictStatus, ...] = (Verdicts.ACCEPTED, Verdicts.REJECTED, Verdicts.NO_CHANGE)
"""Verdicts the interval decided (the others say why it could not)."""
BROKEN: tuple[VerdictStatus, ...] = (Verdicts.FAILED, Verdicts.INVALID, Verdicts.INCOMPLETE)
"""Verdicts whose cause, not a figure, is the answer."""


@dataclass(frozen=True)
class VerdictLabel:
    """How a verdict status is shown: the one place its words and emoji live."""

    word: str  # the one word for it on every page: badges, answer lines, the home page, reports
    pr: str  # the PR body: the same word behind an emoji


VERDICT_LABELS: dict[str, VerdictLabel] = {
    Verdicts.ACCEPTED: VerdictLabel("accepted", "✅ accepted"),
    Verdicts.REJECTED: VerdictLabel("rejected", "❌ rejected"),
    Verdicts.NO_CHANGE: VerdictLabel("no significant change", "➖ no significant change"),
    Verdicts.INCONCLUSIVE: VerdictLabel("inconclusive", "❔ inconclusive"),
    Verdicts.FAILED: VerdictLabel("failed", "💥 failed"),
    Verdicts.INVALID: VerdictLabel("invalid", "⛔ invalid comparison"),
    Verdicts.INCOMPLETE: VerdictLabel("incomplete", "⏸️ incomplete"),
}


def verdict_label(status: str) -> VerdictLabel:
    """The label of `status`; an unknown status (a newer analysis.json) is shown as it is."""
    return VERDICT_LABELS.get(status) or VerdictLabel(status, status)


# Why a verdict is what it is: the one piece of the evidence that decided it (docs/analysis.md#verdicts).
Basis = Literal[
    "invalid",  # machine, model or data differ
    "disturbed",  # another measurement or other load shared the machine (no_overlap, quiet_machine)
    "same_work",  # the arms generated different work
    "failed",  # a run failed or a guardrail failed
    "pending",  # runs are unfinished: resuming redoes them
    "missing_metric",  # an arm never logged the primary metric
    "windows_missed",  # a declared window holds no step of some run (resumed or short runs)
    "no_pairs",  # no pair of finished runs with a run-level figure
    "too_few_pairs",  # fewer pairs than a decision needs (design.min_pairs, or a fixed design's planned pairs)
    "interval",  # the repeated confidence interval crossed a decision boundary
    "futility",  # the minimum effect is out of reach (sequential: the campaign stopped for it)
    "windows",  # the interval cleared the threshold but the windows disagree in direction
    "open",  # the interval is too wide to decide yet; more pairs may decide
    "max_pairs",  # the design's last look came without a decision
    "base",  # decided against the candidate's base
    "quality",  # training quality worse than the declared margin: rejected whatever the speed
    "quality_open",  # faster, but training quality is not shown to be within the margin yet
    "quality_untestable",  # faster, but training quality cannot be tested (flat, not logged, replayed seeds)
]
"""Why a verdict is what it is (analysis.json `verdict.basis`): `invalid` and `failed` are named
after the verdict they give."""

IntervalOutcome = Literal["accepted", "rejected", "no_change", "futility", "windows", "open", "too_few_pairs"]
"""What a run-level interval says under the design's rules (analysis.json `run_level.outcome`): the
first three are the verdicts it decides (`Verdicts`), the others why it does not decide."""
INTERVAL_OUTCOMES: tuple[IntervalOutcome, ...] = get_args(IntervalOutcome)

QualityOutcome = Literal["not_worse", "identical", "worse", "open", "not_testable", "not_judged"]
"""What the training-quality half of a verdict says (analysis.json `quality.status`, analysis/quality.py):
not worse than the declared margin, identical in every pair, worse beyond the margin, open (the interval
does not decide yet), not testable (flat in both arms, not logged, or replayed pairs), not judged (the spec
asks for speed alone)."""

# -- better direction ------------------------------------------------------------------------------

Direction = Literal["higher", "lower"]
"""Which way a metric is better."""
HIGHER: Final = "higher"
LOWER: Final = "lower"
DIRECTIONS: tuple[Direction, ...] = get_args(Direction)


def gain(ratio: float, direction: str | None) -> float:
    """`ratio` (candidate / reference) turned the way that is better: itself when higher is better,
    its inverse (reference / candidate) when lower is; above 1 is better either way. A direction of
    None (neither is better) keeps the ratio."""
    if direction != LOWER:
        return ratio
    return math.inf if ratio == 0 else 1.0 / ratio


def is_better(ratio: float, direction: str | None) -> bool:
    """Whether candidate / reference = `ratio` is an improvement in `direction`."""
    return gain(ratio, direction) > 1.0


# -- Relax metric keys ---------------------------------------------------------------------------

PERF_PREFIX = "perf/"  # per-step performance keys; "<name>_time" ones are timers of a phase
MULTI_TURN_PREFIX = "multi_turn/"  # logged by multi-turn rollouts only

# perf/*: logged once per rollout step; timers are wall-clock seconds.
STEP_RESP_TOKEN_PER_S = "perf/step_resp_token_per_s"
STEP_TOKEN_PER_S = "perf/step_token_per_s"
STEP_TIME = "perf/step_time"
TRAIN_TIME = "perf/train_time"
TRAIN_WAIT_TIME = "perf/train_wait_time"
ACTOR_TRAIN_TIME = "perf/actor_train_time"
ROLLOUT_TIME = "perf/rollout_time"
ACTOR_TRAIN_TOKENS = "perf/actor_train_tokens"
INIT_ACTOR_TIME = "perf/init_actor_time"  # logged once, at start-up (step 0)
LOG_PROBS_TIME = "perf/log_probs_time"  # the policy's log-prob pass (inside train time)
REF_LOG_PROBS_TIME = "perf/ref_log_probs_time"  # the reference model's, when there is one
OPTIMIZER_TIME = "perf/optimizer_time"  # the optimizer steps (inside actor train time); the workload logs it
MAX_MEMORY_ALLOCATED_GIB = "perf/max_memory_allocated_gib"  # PyTorch's peak allocation (GiB); the workload logs it
# gpu/*: reportgen's own, from the 1 Hz GPU samples (capture/gpu.py), never a Relax line.
PEAK_GPU_MEMORY = "gpu/mem_peak_mib"
# The headline's row of the framework's peak allocation (MiB; analysis/memory.py): what a memory cap bounds.
ALLOCATED_PEAK = "memory/allocated_peak_mib"
# rollout/*: per rollout.
NUM_SAMPLES = "rollout/num_samples"
RESPONSE_LENGTHS = "rollout/response_lengths"
RESPONSE_LEN_MEAN = "rollout/response_len/mean"
TOTAL_LENGTHS = "rollout/total_lengths"
NUM_TURN_MAX = "rollout/num_turn/max"
RAW_REWARD = "rollout/raw_reward"
REWARDS = "rollout/rewards"
# train/*: per optimizer step.
LOSS = "train/loss"
PPO_KL = "train/ppo_kl"
KL_LOSS = "train/kl_loss"
PG_CLIPFRAC = "train/pg_clipfrac"
GRAD_NORM = "train/grad_norm"
ENTROPY = "train/entropy_loss"
# train/critic-*: per optimizer step of the critic (PPO, `critic-step N` lines); Relax tags a critic's
# keys `critic-` so they never share a name with the actor's `train/*` of the same step.
CRITIC_VALUE_LOSS = "train/critic-value_loss"
CRITIC_VALUE_CLIPFRAC = "train/critic-value_clipfrac"
CRITIC_GRAD_NORM = "train/critic-grad_norm"


@dataclass(frozen=True)
class Metric:
    """A Relax metric key and what it means to a reader."""

    key: str
    title: str  # short label for tables and charts
    unit: str  # "" when the value has none
    direction: Direction | None  # which way is better; None where neither is (quality signals)
    meaning: str


METRICS: dict[str, Metric] = {
    m.key: m
    for m in (
        Metric(
            STEP_RESP_TOKEN_PER_S,
            "response tokens/s",
            "tok/s",
            "higher",
            "response (loss-mask) tokens of all samples of the step / step time",
        ),
        Metric(
            STEP_TOKEN_PER_S,
            "total tokens/s",
            "tok/s",
            "higher",
            "prompt + response tokens of all samples of the step / step time",
        ),
        Metric(STEP_TIME, "step time", "s", "lower", "train wait time + train time; written once the step trained"),
        Metric(
            TRAIN_TIME,
            "train time",
            "s",
            "lower",
            "the training block: ref and actor log-probs, advantages, logging, actor train",
        ),
        Metric(
            TRAIN_WAIT_TIME,
            "train wait time",
            "s",
            "lower",
            "end of one training block to the start of the next (rollout, weight update in colocate mode)",
        ),
        Metric(
            ACTOR_TRAIN_TIME, "actor train time", "s", "lower", "forward + backward + optimizer of all micro-batches"
        ),
        Metric(ROLLOUT_TIME, "rollout time", "s", "lower", "generation of the step's samples (rollout manager)"),
        Metric(ACTOR_TRAIN_TOKENS, "actor train tokens", "tok", None, "total tokens (prompt + response) trained on"),
        Metric(INIT_ACTOR_TIME, "actor init time", "s", None, "building the actor, once at start-up"),
        Metric(NUM_SAMPLES, "samples", "", None, "samples trained on in the step (not printed by Relax itself)"),
        Metric(RESPONSE_LENGTHS, "response length", "tok", None, "mean response length of the step's samples"),
        Metric(RESPONSE_LEN_MEAN, "response length", "tok", None, "mean response length (rollout manager)"),
        Metric(TOTAL_LENGTHS, "total length", "tok", None, "mean prompt + response length of the step's samples"),
        Metric(NUM_TURN_MAX, "turns (max)", "", None, "most turns of a sample (multi-turn rollouts)"),
        Metric(RAW_REWARD, "reward", "", None, "mean reward before normalisation"),
        Metric(REWARDS, "reward (normalised)", "", None, "mean reward after normalisation"),
        Metric(LOSS, "loss", "", None, "training loss"),
        Metric(PPO_KL, "KL", "", None, "KL divergence between the rollout and the trained policy"),
        Metric(KL_LOSS, "KL loss", "", None, "KL loss against the reference model (with --use-kl-loss)"),
        Metric(PG_CLIPFRAC, "clip fraction", "", None, "fraction of tokens whose policy ratio was clipped"),
        Metric(GRAD_NORM, "grad norm", "", None, "gradient norm before clipping"),
        Metric(ENTROPY, "entropy", "", None, "mean token entropy of the policy on the step's samples"),
        Metric(CRITIC_VALUE_LOSS, "critic value loss", "", None, "the critic's clipped value loss (PPO)"),
        Metric(
            CRITIC_VALUE_CLIPFRAC,
            "critic clip fraction",
            "",
            None,
            "fraction of tokens whose value prediction moved more than --value-clip",
        ),
        Metric(CRITIC_GRAD_NORM, "critic grad norm", "", None, "the critic's gradient norm before clipping"),
        Metric(
            MAX_MEMORY_ALLOCATED_GIB,
            "peak memory allocated",
            "GiB",
            "lower",
            "torch.cuda.max_memory_allocated() of the fullest GPU so far (the embedded workload; Relax logs none)",
        ),
        Metric(
            PEAK_GPU_MEMORY,
            "peak GPU memory",
            "MiB",
            "lower",
            "nvidia-smi's memory used at its peak inside the windows, of the fullest GPU (context and cache included)",
        ),
    )
}
ALLOCATED_MEMORY_KEYS = (MAX_MEMORY_ALLOCATED_GIB,)
"""Keys holding the framework's own peak allocation in GiB, first found wins: what a memory cap bounds."""
MEMORY_CAP_FLAG = "--gpu-memory-cap-gib"
"""The embedded workload's cap on its own GPU memory (torch.cuda.set_per_process_memory_fraction)."""
TOKEN_BUDGET_FLAG = "--max-tokens-per-gpu"
"""Relax's token budget per micro-batch: a smaller one uses less memory per step for the same maths (the
next step of an out-of-memory failure, the flag `reportgen init`'s example candidate lowers)."""

PRIMARY_DEFAULT = STEP_RESP_TOKEN_PER_S
"""The metric a spec compares arms on unless it names another."""
SECONDARY_DEFAULT = (STEP_TOKEN_PER_S, STEP_TIME, ACTOR_TRAIN_TIME)
PROFILER_FLAGS = ("--use-pytorch-profiler", "--record-memory-history", "--sglang-profile", "--use-nsys")
"""Relax flags that turn on a profiler or memory recorder: they belong in profile runs, never formal ones."""
MATHS_FLAGS: dict[str, str] = {
    "--use-precision-aware-optimizer": "the precision of Adam's moments (bf16 with it, fp32 without)",
    "--bf16": "the weights' and compute's precision",
    "--fp32": "the weights' and compute's precision",
    "--fp16": "the weights' and compute's precision",
    "--optimizer": "the optimizer",
    "--lr": "the learning rate",
    "--weight-decay": "the weight decay",
    "--adam-beta1": "Adam's beta1",
    "--adam-beta2": "Adam's beta2",
    "--adam-eps": "Adam's epsilon",
    "--clip-grad": "the gradient clipping",
    "--advantage-estimator": "the advantage estimator",
    "--eps-clip": "the policy-ratio clip",
    "--eps-clip-high": "the policy-ratio clip",
    "--use-kl-loss": "the KL loss",
    "--kl-loss-coef": "the KL loss",
    "--kl-loss-type": "the KL loss",
    "--entropy-coef": "the entropy bonus",
    "--global-batch-size": "the samples per optimizer step",
}
"""Flags whose edit changes the training's maths (what is computed, not how fast or where): a
candidate that edits one trains a different model, whatever its speed. Each maps to what it changes,
in words. The pages name such an edit beside the verdict (analysis.json `comparisons[].maths_changes`).
Flags of placement and scheduling (offload, overlap, recompute, micro-batching) are not here: they
move the same computation."""
TRAIN_DONE_KEYS = (TRAIN_TIME, STEP_TIME, ACTOR_TRAIN_TIME)
"""Keys written once a step's training block finished: a step that logged one of them trained."""
STEP_PARTS = (
    ROLLOUT_TIME,
    TRAIN_WAIT_TIME,
    TRAIN_TIME,
    ACTOR_TRAIN_TIME,
    LOG_PROBS_TIME,
    REF_LOG_PROBS_TIME,
    OPTIMIZER_TIME,
)
"""The timers a step's time is split into on the site ("where a step's time goes")."""


_GENERIC_PREFIXES = ("perf", "rollout", "train")


def title(key: str) -> str:
    """A metric's title: the known one, else one made from the key that reads well (any key Relax
    logs can be used): `perf/decode_tokens_per_s` -> "decode tokens per s", `gpu/util_mean` ->
    "util mean (gpu)"; a `:p95` suffix stays ("step time p95")."""
    known = METRICS.get(key)
    if known is not None:
        return known.title
    base, colon, stat = key.partition(":")
    if colon and base in METRICS:
        return f"{METRICS[base].title} {stat}"
    *groups, leaf = base.split("/")
    words = (leaf or base).replace("_", " ").replace("-", " ").strip() or key
    groups = [g for g in groups if g and g not in _GENERIC_PREFIXES]
    return (f"{words} ({'/'.join(groups)})" if groups else words) + (f" {stat}" if colon else "")


def metric(key: str) -> Metric:
    """The known metric for `key`, or one titled from the key itself (`title`)."""
    return METRICS.get(key) or Metric(key, title(key), "", None, "")


# -- workloads ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KnownWorkload:
    """A trainer reportgen knows by its module (the spec's `[recipe] entrypoint`): what it is, how its
    model is made, and the model of each `--preset`, so a report can say what ran."""

    name: str  # in words; `{version}` stands for the version that made the runs
    doc: str  # the documentation page about it, relative to the docs root
    models: dict[str, str]  # version -> how its model is made
    unversioned: str  # the version of runs whose log names none (made before versions were printed)
    presets: dict[str, tuple[str, int]]  # --preset -> (its shape in words, parameters)


WORKLOADS: dict[str, KnownWorkload] = {
    "reportgen.workloads.grpo": KnownWorkload(
        name="the embedded stand-in GRPO trainer (reportgen.workloads.grpo, workload grpo-max {version}), not Relax",
        doc="workload.md",
        models={
            "v1": "random init (seeded), no pretrained weights, a synthetic task",
            "v2": "a warm start on the task (a short supervised pass, cached; no pretrained weights), a synthetic task",
        },
        unversioned="v1",
        # Counted from the presets' configs (tests/workloads/test_knobs.py checks them).
        presets={
            "cpu-tiny": ("Qwen3 architecture, 4 layers, hidden 128", 791_936),
            "gpu-small": ("Qwen3 architecture, 16 layers, hidden 1024", 201_395_200),
        },
    ),
}
"""Trainers whose model a report can describe without reading logs; any other entrypoint (Relax's)
is described by the model files the spec declared."""
