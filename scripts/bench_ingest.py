"""Benchmark the console-log parser and the whole run ingest on a generated Relax-format log.

    PYTHONPATH=. python scripts/bench_ingest.py [--steps 10000] [--keep DIR] [--repeat N] [--phases]

The log mimics a Relax run: coloured and plain logger prefixes, Ray actor prefixes, two
`perf N` lines per step, rollout/step dicts (nested values every 10th step, nan grad norms),
and non-metric noise (reward `parse error`s, progress, warnings). Reports MB/s of wall and CPU
time, peak RSS, and the load average before and after (the figures are only comparable at a
similar load). `--phases` adds the CPU time of the parts the parser cannot avoid (reading,
ANSI stripping, JSON-decoding the metric dicts), best of three.

That a faster ingest reads the same: `tests/ingest/test_bench_log_digest.py` pins the ingest of
this generator's 2,000-step log by digest; `scripts/check_ingest_same.py --rev REV` compares this
checkout's output with another revision's on the 10,000-step log.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import resource
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from reportgen.ingest import console
from reportgen.ingest.console import ConsoleParser, iter_chunks
from reportgen.ingest.run_dir import ingest_run


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def step_lines(s: int, rng: random.Random) -> list[str]:
    ts = f"2026-08-05 {10 + s // 3600 % 14:02d}:{s // 60 % 60:02d}:{s % 60:02d}"
    col = f"\x1b[32m{ts}\x1b[0m | \x1b[1mINFO\x1b[0m | \x1b[36mrelax.backends.megatron.actor:977\x1b[0m "
    plain = f"[{ts}] data.py:123 - "
    roll, actor = "(RolloutManager pid=2345) ", "(MegatronTrainRayActor pid=1234) "
    r = rng.random
    noise = [roll + plain + "parse error: no \\boxed{} answer" for _ in range(rng.randrange(0, 4))]
    noise += [f"{actor}[rank0]: iteration {s} micro-batch {i} done, {r() * 1e3:.1f} ms" for i in range(4)]
    noise += [f"W{s % 10000:04d} 10:11:12.123 ray/_private/worker.py:2512: progress {r():.3f}"]
    grad = "nan" if s % 997 == 3 else f"{r() * 2:.6f}"
    perf_roll = ", ".join(
        [f"'perf/rollout_time': {10 + r() * 5:.6f}", f"'perf/tokens_per_gpu_per_sec': {900 + r() * 50:.4f}"]
        + [f"'rollout/response_len/{k}': {r() * 1000:.2f}" for k in ("mean", "median", "max", "min")]
        + ["'rollout/truncated_ratio': 0.0"]
    )
    perf_act = ", ".join(
        [
            f"'perf/{k}': {r() * 40:.6f}"
            for k in (
                "train_time",
                "train_wait_time",
                "step_time",
                "wait_time_ratio",
                "step_token_per_s",
                "step_resp_token_per_s",
                "actor_train_time",
                "actor_train_tokens",
                "actor_train_tok_per_s",
                "actor_train_tflops",
                "log_probs_time",
                "ref_log_probs_time",
            )
        ]
        + ["'perf/mfu/actor_train': inf"]
    )
    rollout = ", ".join(
        f"'rollout/{k}': {r() - 0.5:.6f}"
        for k in (
            "raw_reward",
            "rewards",
            "response_lengths",
            "total_lengths",
            "advantages",
            "log_probs",
            "ref_log_probs",
            "rollout_log_probs",
            "returns",
        )
    )
    if s % 10 == 0:
        rollout += ", 'rollout/meta': {'source': 'openr1mm', 'note': \"it's fine\"}"
    train = ", ".join(
        [f"'train/{k}': {r():.6f}" for k in ("loss", "pg_loss", "entropy_loss", "pg_clipfrac", "ppo_kl", "kl_loss")]
        + [f"'train/grad_norm': {grad}", "'train/lr-pg_0': 1e-06", f"'train/step': {s}"]
    )
    return [
        *noise[:2],
        roll + col + f"perf {s}: {{{perf_roll}}}",
        roll + col + f"rollout {s}: {{{rollout}}}",
        *noise[2:],
        actor + plain + f"step {s}: {{{train}}}",
        actor + col + f"perf {s}: {{{perf_act}}}",
    ]


def generate(path: Path, steps: int) -> int:
    rng = random.Random(1)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("+ python3 -m relax.entrypoints.train --global-batch-size 16 --n-samples-per-prompt 8\n")
        for s in range(steps):
            fh.write("\n".join(step_lines(s, rng)) + "\n")
            if s % 500 == 250:  # a line garbled by interleaved output
                fh.write(
                    "(MegatronTrainRayActor pid=1234) perf 1: {'perf/train_time': 1.0, 'pe(RolloutManager pid=2345) x\n"
                )
    return path.stat().st_size


def _best_cpu(fn: Callable[[], object], runs: int = 3) -> float:
    best = math.inf
    for _ in range(runs):
        c = time.process_time()
        fn()
        best = min(best, time.process_time() - c)
    return best


def phases(log: Path) -> dict[str, float]:
    """CPU seconds (best of three) of what any parse of `log` along the parser's route costs:
    reading and UTF-8 decoding, ANSI stripping, and JSON-decoding every metric dict (taken from
    the lines the parser batches)."""
    chunks = list(iter_chunks(log))
    clean = [console.ANSI.sub("", c) for c in chunks]
    texts = []
    for c in clean:
        for line in c.split("\n"):
            at = line.find(": {")
            if at >= 0 and console._head(line, at) is not None:
                d = line[at + 2 : line.rfind("}") + 1]
                if console._json_ready(d):
                    texts.append(d)
    blocks = [texts[i : i + 2000] for i in range(0, len(texts), 2000)]
    return {
        "read": _best_cpu(lambda: list(iter_chunks(log))),
        "ansi": _best_cpu(lambda: [console.ANSI.sub("", c) for c in chunks]),
        "json": _best_cpu(lambda: [console._decode_many(b) for b in blocks]),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=10_000)
    ap.add_argument("--keep", type=Path, default=None, help="write the log and run folder here instead of a temp dir")
    ap.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="also run parser and ingest_run this many times more and print the best CPU-time rates",
    )
    ap.add_argument("--phases", action="store_true", help="also time reading, ANSI stripping and JSON decoding alone")
    args = ap.parse_args()
    load_before = os.getloadavg()[0]
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-ingest-"))
    work.mkdir(parents=True, exist_ok=True)
    log = work / "stdout.log"
    size = generate(log, args.steps)
    mb = size / 1e6
    rss0 = peak_rss_mib()

    t, c = time.perf_counter(), time.process_time()
    parser = ConsoleParser()
    n = 0
    for chunk in iter_chunks(log):
        n += len(parser.feed(chunk))
    n += len(parser.close())
    parse_s, parse_cpu = time.perf_counter() - t, time.process_time() - c
    rss1 = peak_rss_mib()

    t, c = time.perf_counter(), time.process_time()
    ingested = ingest_run(work, invariants=["--global-batch-size"])
    ingest_s, ingest_cpu = time.perf_counter() - t, time.process_time() - c
    rss2 = peak_rss_mib()

    print(f"load average (1 min) before: {load_before:.2f}, after: {os.getloadavg()[0]:.2f}, on {os.cpu_count()} CPUs")
    print(f"log: {args.steps} steps, {mb:.1f} MB, {parser.lines} lines, {n} records, {parser.skipped} skipped")
    print(
        f"parser (ConsoleParser.feed): {parse_s:.2f} s = {mb / parse_s:.1f} MB/s wall, "
        f"{mb / parse_cpu:.1f} MB/s of CPU time; "
        f"peak RSS {rss0:.0f} MiB before, {rss1:.0f} MiB after (+{rss1 - rss0:.0f})"
    )
    print(
        f"ingest_run (parse + events + argv + parquet): {ingest_s:.2f} s = {mb / ingest_s:.1f} MB/s wall, "
        f"{mb / ingest_cpu:.1f} MB/s of CPU time; "
        f"peak RSS {rss2:.0f} MiB; {ingested.ingest['events']} events, "
        f"{ingested.ingest['steps']} steps"
    )
    if args.repeat > 1:
        best_p, best_i = parse_cpu, ingest_cpu
        for _ in range(args.repeat):
            c = time.process_time()
            parser = ConsoleParser()
            for chunk in iter_chunks(log):
                parser.feed(chunk)
            parser.close()
            best_p = min(best_p, time.process_time() - c)
            c = time.process_time()
            ingest_run(work, invariants=["--global-batch-size"])
            best_i = min(best_i, time.process_time() - c)
        print(
            f"best of {args.repeat + 1} runs in this process (CPU time): parser {mb / best_p:.1f} MB/s, "
            f"ingest_run {mb / best_i:.1f} MB/s"
        )
    if args.phases:
        ph = phases(log)
        print(
            "unavoidable parts (CPU, best of 3): "
            + ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in ph.items())
            + f"; together {mb / sum(ph.values()):.1f} MB/s"
        )
    if args.keep is None:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
