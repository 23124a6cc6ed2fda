"""The warm start: the policy's first weights, from a short supervised pass on the task, made once
and cached by content.

Why: from a random init the policy must discover the "max" task by sampling, and in the runs
reportgen makes (16 CPU steps, 48 GPU steps) it did not: on one H200 the reward was 0 from step 5
on, every prompt group had the same reward (advantage 0) and the policy-gradient loss was 0, so a
candidate that learnt less could not be told from one that learnt as well. A real RL run starts
from a pretrained model (Relax's `--hf-checkpoint`); this is the stand-in's pretrained model, made
in seconds:

1. **Learn the task**: supervised steps on the right answer (`D </answer> <eos> <eos>`, the
   trailing `<eos>` so that a fixed-length response, `--rollout-ignore-eos`, goes on with `<eos>`)
   until the answer sampled at the rollout temperature is right on KNOW of a held-out set of
   prompts (checked every EVAL_EVERY steps; at most `max_steps`). The "max" feature is then
   represented.
2. **Unlearn part of it**: `mixture_steps` supervised steps whose target is the right answer with
   probability `accuracy`, else another digit of the prompt (always well formed): the policy keeps
   the feature but answers right only about that often, so GRPO starts from a controlled mid-range
   reward with room to rise and mixed groups (non-zero advantages), and sharpens what is there
   instead of hoping to discover it.

Everything is seeded by the warm start's own seed (never `--seed` or `--rollout-seed`, which a
campaign varies per block): every run of a campaign starts from the same weights. On CUDA the pass
runs with deterministic algorithms (math attention, `torch.use_deterministic_algorithms`), so one
machine class makes the same bytes; the SHA-256 of the file is printed (`warm start: sha256 ...`),
and reportgen's ingest records it so the same-inputs guardrail sees the same start in both runs of
a pair.

The cache: `<cache>/workloads/grpo/warm-start-<key>.pt`, where `<cache>` is `--warm-start-cache`,
else reportgen's cache folder by the rule of `reportgen.store.layout.default_cache` (the workload
imports nothing of reportgen): $REPORTGEN_CACHE, else $XDG_CACHE_HOME/reportgen, else
~/.cache/reportgen. The key hashes the model config, the recipe, the device type and this
module's and the model's source. Written to a temporary file and renamed (two runs may make it at
once: both succeed, the last rename wins, the bytes are the same); a `.sha256` file beside it,
written after it, holds the file's hash. Read back with `torch.load(weights_only=True)` only, after
checking the hash: a corrupt, truncated or foreign file is made again, never unpickled freely.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import random
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from reportgen.workloads.grpo import VERSION, WORKLOAD, qwen3, task
from reportgen.workloads.grpo import model as model_mod

KNOW = 0.97  # phase 1 ends once the sampled answer is right this often on the held-out prompts
EVAL_EVERY = 10
EVAL_PROMPTS = 256
TRAILING_EOS = 2  # `<eos>` targets after `</answer>` (free-length responses)
BATCH = 32
SOFTEN_STEPS = 20
SOFTEN_LR = 0.3  # of the recipe's learning rate
SUBDIR = Path("workloads") / "grpo"


@dataclass(frozen=True)
class Recipe:
    """How the warm start is made; every field is part of its cache key."""

    max_steps: int  # phase 1's limit
    accuracy: float  # phase 2: the sampled accuracy it aims at
    lr: float
    batch: int
    seed: int
    temperature: float  # the rollout temperature, at which phase 1's accuracy is measured
    max_prompt_len: int
    trailing_eos: int  # `<eos>` targets after `</answer>`: to the response's end when it has a fixed length
    warmup: int = 10  # steps of linear learning-rate warm-up


def recipe_of(args: argparse.Namespace) -> Recipe:
    """The recipe the flags give. The learning rate scales as 1/hidden size from 3e-3 at hidden
    128 (the cpu-tiny preset), as the updates of a wider model move its function further."""
    return Recipe(
        max_steps=args.warm_start_steps,
        accuracy=args.warm_start_accuracy,
        lr=3e-3 * 128 / args.hidden_size,
        batch=BATCH,
        seed=args.warm_start_seed,
        temperature=args.rollout_temperature,
        max_prompt_len=args.rollout_max_prompt_len,
        # With --rollout-ignore-eos every response goes on past `<eos>` to its full length: the warm
        # start then writes `<eos>` to the end, so those tokens are certain (no noise in the gradient)
        # instead of whatever an untrained position samples.
        trailing_eos=args.rollout_max_response_len - 2 if args.rollout_ignore_eos else TRAILING_EOS,
    )


@dataclass(frozen=True)
class Made:
    """A warm start as the run got it: where, its hash, and whether it was made now."""

    path: Path
    sha256: str
    made: bool
    seconds: float
    outcome: Outcome | None = None  # how it was made, when made now
    note: str = ""  # why a cached file was made again


def cache_root(explicit: str | None = None, environ: dict[str, str] | None = None) -> Path:
    """`--warm-start-cache`, else reportgen's cache folder (reportgen.store.layout.default_cache's rule)."""
    if explicit:
        return Path(explicit).expanduser().resolve()
    env = os.environ if environ is None else environ
    if env.get("REPORTGEN_CACHE"):
        return Path(env["REPORTGEN_CACHE"]).expanduser().resolve()
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return (Path(base) / "reportgen").resolve()


def code_digest() -> str:
    """SHA-256 of the source that makes a warm start: this module, the model, its modules and the task."""
    h = hashlib.sha256()
    for mod in (__file__, model_mod.__file__, qwen3.__file__, task.__file__):
        h.update(Path(mod).read_bytes())
    return h.hexdigest()


def cache_key(args: argparse.Namespace, device: torch.device) -> str:
    config = model_mod.build_config(args).to_dict()
    payload = {
        "workload": f"{WORKLOAD} {VERSION}",
        "config": config,
        "recipe": asdict(recipe_of(args)),
        "device": device.type,
        "torch": torch.__version__,
        "code": code_digest(),
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:32]


# -- making it -------------------------------------------------------------------------------------

DIGIT_IDS = tuple(task.TOKEN_ID[str(d)] for d in range(10))


@dataclass(frozen=True)
class _Example:
    prompt: list[int]
    target: list[int]  # `D </answer> <eos> <eos>` with D the right answer
    shown: list[int]  # what the target rows read: the target, its digit replaced half of the time
    answer: int


def _example(rng: random.Random, most: int, trailing: int) -> _Example:
    """A fresh prompt and its target. Half of the time the rows after the answer read another digit
    in its place, so that `</answer>` follows any digit the policy samples, not only the right one
    (otherwise a policy that answered wrong went on writing digits, as if to correct itself)."""
    prompt = task.Prompt(-1, task.draw_digits(rng, most))
    target = [task.TOKEN_ID[str(prompt.answer)], task.CLOSE_ID] + [task.EOS_ID] * trailing
    shown = list(target)
    if rng.random() < 0.5:
        shown[0] = task.TOKEN_ID[str(rng.randrange(10))]
    return _Example(prompt.token_ids, target, shown, prompt.answer)


@dataclass(frozen=True)
class _Batch:
    """Right-padded sequences, [B, T], and flat indices into their B x T logits rows."""

    ids: torch.Tensor
    valid: torch.Tensor
    rows: torch.Tensor  # the logits rows that predict a target token
    targets: torch.Tensor
    weights: torch.Tensor  # of each target row in the loss: the answer 1, `</answer>` 1, the `<eos>` run 1 in all
    answer_rows: torch.Tensor  # the rows that predict the answer (each prompt's last token)
    answers: torch.Tensor  # the right answer's index among the ten digits


def _pack(examples: list[_Example], device: torch.device) -> _Batch:
    width = max(len(e.prompt) + len(e.shown) for e in examples)
    ids = torch.full((len(examples), width), task.PAD_ID, dtype=torch.long)
    valid = torch.zeros((len(examples), width), dtype=torch.bool)
    rows: list[int] = []
    tgt: list[int] = []
    weights: list[float] = []
    answer_rows: list[int] = []
    for j, e in enumerate(examples):
        full = e.prompt + e.shown
        trailing = len(e.target) - 2
        weights += [1.0, 1.0] + [1.0 / trailing] * trailing
        ids[j, : len(full)] = torch.tensor(full)
        valid[j, : len(full)] = True
        start = j * width + len(e.prompt) - 1
        rows += range(start, start + len(e.shown))
        tgt += e.target
        answer_rows.append(start)

    def t(x: list[int]) -> torch.Tensor:
        return torch.tensor(x, dtype=torch.long, device=device)

    return _Batch(
        ids.to(device),
        valid.to(device),
        t(rows),
        t(tgt),
        torch.tensor(weights, device=device),
        t(answer_rows),
        t([e.answer for e in examples]),
    )


def _most_digits(max_prompt_len: int) -> int:
    return min(task.MAX_DIGITS, max_prompt_len - task.PROMPT_OVERHEAD)


def _logits(model: qwen3.Qwen3ForCausalLM, batch: _Batch) -> torch.Tensor:
    """[B x T, vocab]: every position's logits, the rows `batch.rows` and `batch.answer_rows` index."""
    logits = model_mod.forward_batch(model, batch.ids, batch.valid)
    return logits.reshape(-1, logits.shape[-1])


def sampled_accuracy(model: qwen3.Qwen3ForCausalLM, batch: _Batch, temperature: float) -> float:
    """Mean probability, at `temperature`, that the first response token is the right answer: the
    accuracy a rollout would sample, without its sampling noise."""
    with torch.no_grad():
        probs = torch.softmax(_logits(model, batch)[batch.answer_rows].float() / temperature, dim=-1)
        right = torch.tensor(DIGIT_IDS, device=probs.device)[batch.answers]
        return float(probs.gather(1, right[:, None]).mean())


def _tempered(digit_logits: torch.Tensor, tau: float) -> torch.Tensor:
    return torch.softmax(digit_logits / tau, dim=-1)


def _softening(digit_logits: torch.Tensor, answers: torch.Tensor, target: float, temperature: float) -> float:
    """The factor tau (>= 1) by which to divide the answer's digit logits so that sampling at the
    rollout temperature is right `target` of the time (bisection in log tau; 1 when already below)."""

    def accuracy(tau: float) -> float:
        return float(_tempered(digit_logits, tau * temperature).gather(1, answers[:, None]).mean())

    if accuracy(1.0) <= target:
        return 1.0
    lo, hi = 0.0, 6.0  # log tau: from 1 to about 400
    for _ in range(30):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if accuracy(float(torch.tensor(mid).exp())) > target else (lo, mid)
    return float(torch.tensor(hi).exp())


@contextlib.contextmanager
def _deterministic(device: torch.device) -> Iterator[None]:
    """Deterministic kernels while the warm start is made (CUDA: cuBLAS workspace, no TF32, math
    attention), restored afterwards so the run itself keeps its own settings."""
    if device.type != "cuda":
        yield
        return
    from torch.nn.attention import SDPBackend, sdpa_kernel

    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    was = torch.are_deterministic_algorithms_enabled()
    tf32 = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.use_deterministic_algorithms(True)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    try:
        with sdpa_kernel(SDPBackend.MATH):
            yield
    finally:
        torch.use_deterministic_algorithms(was)
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = tf32


@dataclass(frozen=True)
class Outcome:
    """What making a warm start did: steps of each phase, the softening factor, the accuracies."""

    learn_steps: int
    soften_steps: int
    tau: float
    learnt_accuracy: float  # sampled accuracy on the held-out prompts after phase 1
    accuracy: float  # ... and at the end


class _Trainer:
    """The supervised pass: one fp32 policy, its AdamW, a stream of fresh prompts, the held-out set."""

    def __init__(self, args: argparse.Namespace, recipe: Recipe, device: torch.device) -> None:
        self.recipe, self.device = recipe, device
        self.most = _most_digits(recipe.max_prompt_len)
        self.model = model_mod.build_policy(args, device, torch.float32)
        self.model.train()
        held_out = random.Random(recipe.seed + 1)
        self.evals = _pack([_example(held_out, self.most, recipe.trailing_eos) for _ in range(EVAL_PROMPTS)], device)
        self.rng = random.Random(recipe.seed)
        self.digit_ids = torch.tensor(DIGIT_IDS, device=device)
        self.optimizer = self.new_optimizer()

    def new_optimizer(self) -> torch.optim.AdamW:
        return torch.optim.AdamW(self.model.parameters(), lr=self.recipe.lr, betas=(0.9, 0.98), weight_decay=0.0)

    def accuracy(self) -> float:
        return sampled_accuracy(self.model, self.evals, self.recipe.temperature)

    def step(self, lr: float, loss_of: Callable[[_Batch, torch.Tensor], torch.Tensor]) -> None:
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        examples = [_example(self.rng, self.most, self.recipe.trailing_eos) for _ in range(self.recipe.batch)]
        batch = _pack(examples, self.device)
        loss_of(batch, _logits(self.model, batch)).backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)

    def learn(self) -> int:
        """Phase 1: right answers until the sampled accuracy reaches KNOW (or `max_steps`)."""

        def hard(batch: _Batch, logits: torch.Tensor) -> torch.Tensor:
            loss = F.cross_entropy(logits[batch.rows], batch.targets, reduction="none")
            return (loss * batch.weights).sum() / batch.weights.sum()

        n = 0
        while n < self.recipe.max_steps:
            self.step(self.recipe.lr * min(1.0, (n + 1) / self.recipe.warmup), hard)
            n += 1
            if n % EVAL_EVERY == 0 and self.accuracy() >= KNOW:
                break
        return n

    def soften(self) -> tuple[float, int]:
        """Phase 2: the answer's distribution over the ten digits tempered by tau, chosen so that
        the rollout samples the right answer `accuracy` of the time: first exactly, in the output
        rows of the digits (shrunk towards their mean by 1/tau: within the digits, softmax(z/tau));
        then SOFTEN_STEPS steps of distillation from the phase-1 policy so tempered, which give the
        digits back the share of the answer's probability the shrink lent to `</answer>` and
        `<eos>` (every answer well formed) and keep the other targets. (tau, steps)."""
        teacher = model_mod.frozen_copy(self.model)
        with torch.no_grad():
            held = _logits(teacher, self.evals)[self.evals.answer_rows][:, self.digit_ids].float()
        tau = _softening(held, self.evals.answers, self.recipe.accuracy, self.recipe.temperature)
        if tau == 1.0:
            return tau, 0
        weight = self.model.lm_head.weight
        with torch.no_grad():
            rows = weight[self.digit_ids]
            mean = rows.mean(0, keepdim=True)
            weight[self.digit_ids] = mean + (rows - mean) / tau
        self.optimizer = self.new_optimizer()  # phase 1's moments belong to other targets
        digit_ids = self.digit_ids

        def soft(batch: _Batch, logits: torch.Tensor) -> torch.Tensor:
            with torch.no_grad():
                wanted = torch.zeros(len(batch.answer_rows), logits.shape[-1], device=logits.device)
                wanted[:, digit_ids] = _tempered(_logits(teacher, batch)[batch.answer_rows][:, digit_ids].float(), tau)
            answer = -(wanted * F.log_softmax(logits[batch.answer_rows].float(), dim=-1)).sum(-1)
            rest = ~torch.isin(batch.rows, batch.answer_rows)
            others = F.cross_entropy(logits[batch.rows[rest]], batch.targets[rest], reduction="none")
            weights = batch.weights[rest]
            return (answer.sum() + (others * weights).sum()) / (len(answer) + weights.sum())

        for _ in range(SOFTEN_STEPS):
            self.step(self.recipe.lr * SOFTEN_LR, soft)
        return tau, SOFTEN_STEPS


def make(args: argparse.Namespace, device: torch.device) -> tuple[dict[str, torch.Tensor], Outcome]:
    """Train a fresh fp32 policy by `recipe_of(args)`: (its state dict on the CPU, what it took)."""
    recipe = recipe_of(args)
    with _deterministic(device), torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        torch.manual_seed(recipe.seed)
        trainer = _Trainer(args, recipe, device)
        learn_steps = trainer.learn()
        learnt = trainer.accuracy()
        tau, soften_steps = trainer.soften()
        accuracy = trainer.accuracy()
        state = {k: v.detach().to("cpu", copy=True).contiguous() for k, v in trainer.model.state_dict().items()}
    del trainer
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)
    return state, Outcome(learn_steps, soften_steps, tau, learnt, accuracy)


# -- the cache -------------------------------------------------------------------------------------


def _read(path: Path) -> tuple[dict[str, torch.Tensor] | None, str, str]:
    """(state dict, its file's sha256, why it was refused): None when the file is missing, does
    not match its recorded hash, or does not load as plain tensors."""
    try:
        data = path.read_bytes()
        recorded = path.with_suffix(".sha256").read_text().strip()
    except FileNotFoundError:
        return None, "", ""
    except OSError as exc:
        return None, "", f"unreadable ({exc.strerror})"
    sha = hashlib.sha256(data).hexdigest()
    if sha != recorded:
        return None, sha, "its bytes do not match the hash recorded beside it (corrupt or cut)"
    try:
        state = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except Exception as exc:
        return None, sha, f"not a plain tensor file ({type(exc).__name__})"
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        return None, sha, "not a dict of tensors"
    return state, sha, ""


def _write(path: Path, state: dict[str, torch.Tensor]) -> str:
    """Write `state` and its hash beside it, each by a rename from a temporary file in the same
    folder (so a reader sees a whole file or none); returns the sha256."""
    path.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    torch.save(state, buffer)
    data = buffer.getvalue()
    sha = hashlib.sha256(data).hexdigest()
    for target, content in ((path, data), (path.with_suffix(".sha256"), f"{sha}\n".encode())):
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(content)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    return sha


def obtain(args: argparse.Namespace, device: torch.device) -> tuple[dict[str, torch.Tensor], Made]:
    """The warm start for these flags on this device type: read from the cache, else made and cached."""
    t0 = time.perf_counter()
    path = cache_root(args.warm_start_cache) / SUBDIR / f"warm-start-{cache_key(args, device)}.pt"
    state, sha, why = _read(path)
    if state is not None:
        return state, Made(path, sha, made=False, seconds=time.perf_counter() - t0)
    state, outcome = make(args, device)
    sha = _write(path, state)
    note = f"the cached file was made again: {why}" if why else ""
    return state, Made(path, sha, True, time.perf_counter() - t0, outcome, note)


def log_line(made: Made) -> str:
    """The line reportgen's ingest reads (`warm start: sha256 <hex> ...`)."""
    o = made.outcome
    if o is not None:
        how = (
            f"made in {made.seconds:.1f} s ({o.learn_steps} steps on right answers: sampled accuracy "
            f"{o.learnt_accuracy:.2f}; {o.soften_steps} softening steps, tau {o.tau:.2f}: {o.accuracy:.2f})"
        )
    else:
        how = f"read from the cache in {made.seconds:.2f} s"
    tail = f"; {made.note}" if made.note else ""
    return f"warm start: sha256 {made.sha256} {how}: {made.path}{tail}"


def main(argv: list[str] | None = None) -> int:
    """`python -m reportgen.workloads.grpo.warm_start [FLAGS]`: make (or find) the warm start the
    same flags would give a run, and print its line; e.g. ahead of a campaign, so that no run pays
    for it. Takes the workload's flags (a recipe's, or any subset)."""
    from reportgen.workloads.grpo.args import parse_args
    from reportgen.workloads.grpo.console import get_logger
    from reportgen.workloads.grpo.device import cpu_thread_choice, resolve_device
    from reportgen.workloads.grpo.distributed import DistEnv

    args = parse_args(argv)
    if args.warm_start_steps == 0:
        print("warm start: none (--warm-start-steps 0)", flush=True)
        return 0
    device = resolve_device(args.device)
    torch.set_num_threads(cpu_thread_choice(args, device, DistEnv()).threads)  # as a run would make it
    _, made = obtain(args, device)
    get_logger().info(log_line(made))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
