#!/usr/bin/env bash
# The paired history's noise and error rates on this machine: an A/A campaign of fixed pairs
# (scripts/recipes/aa.toml, profile cpu-pairs on the CPU or gpu on one GPU), then
# scripts/paired_history_eval.py on its pairs' log ratios: the pair-level noise, the false-alarm
# rate of A/A paired histories and the detection of a 10 % step (docs/performance-history.md#the-paired-history).
#
#   bash scripts/device/paired_history_check.sh            # on the GPU machine: PROFILE=gpu (default there):
#       aa.toml's GPU profile, 24-step runs, sequential (A/A candidates stop at about 4-5 pairs), within BUDGET_S
#   device tool: run(kind="nvidia-h200", timeout_s=600, carry=[".whl"],
#                    command="bash scripts/device/paired_history_check.sh")
#   PROFILE=cpu-pairs bash scripts/device/paired_history_check.sh   # the CPU workload on quiet CPUs
#
# `.whl` carried (docs/device.md). About 5-8 minutes. Leaves the campaign as $OUT/NAME.tar.gz and the
# figures in $OUT/paired-history.json when OUT is set.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
export PYTHONUNBUFFERED=1
if compgen -G ".whl/*.whl" >/dev/null && [ ! -x .venv/bin/python ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
fi
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] && PY=.venv/bin/python
if [ -z "${PROFILE:-}" ]; then
  PROFILE=cpu-pairs
  command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 && PROFILE=gpu
fi
NAME=${NAME:-aa-paired-$PROFILE}
RUNS=${RUNS:-/tmp/paired-runs}
mkdir -p "$RUNS"
nproc
# `|| true`: a campaign stopped by its timeout still leaves its finished pairs to measure.
timeout "${BUDGET_S:-480}" "$PY" -m reportgen run scripts/recipes/aa.toml --profile "$PROFILE" --runs "$RUNS" \
  --name "$NAME" --no-profiler || true
"$PY" -m reportgen analyze "$NAME" --runs "$RUNS" || true
echo "== this machine's campaign alone =="
"$PY" scripts/paired_history_eval.py --runs "$RUNS" --sims "${SIMS:-1000}"
echo "== pooled with the committed runs/ (same machine class string) =="
"$PY" scripts/paired_history_eval.py --runs "$RUNS" runs --sims "${SIMS:-1000}"
if [ -n "${OUT:-}" ]; then
  "$PY" scripts/paired_history_eval.py --runs "$RUNS" runs --sims "${SIMS:-1000}" --json > "$OUT/paired-history.json"
  tar --exclude=traces -czf "$OUT/$NAME.tar.gz" -C "$RUNS" "$NAME"
fi
