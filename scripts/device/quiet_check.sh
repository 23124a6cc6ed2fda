#!/usr/bin/env bash
# The quiet-machine check on the GPU machine: a small campaign with a second process on the GPU
# beside A1 only; prints what the analysis flagged and leaves summary.txt and analysis.json in $OUT.
#
#   bash scripts/device/quiet_check.sh            # on the GPU machine, `.whl` carried (docs/device.md)
#   DEVICE=cpu bash scripts/device/quiet_check.sh # anywhere: a CPU hog instead (how the script is tested)
#
# Environment: DEVICE (cuda), STEPS (20), WORK (products of two 8192x8192 bf16 matrices per step, 400;
# on the CPU, 100k-iteration loops per step, 60), ROOT (/tmp/reportgen-quiet-check: the campaign's folder,
# emptied first; the suite gives each run its own, so two checkouts tested at once do not share one).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
OUT=${OUT:?OUT must name the folder whose files come back}
export PYTHONUNBUFFERED=1
# The carried wheels are the GPU machine's (Python 3.12): on the CPU the checkout's environment runs it.
if [ "${DEVICE:-cuda}" = cuda ] && compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
fi
if [ "${DEVICE:-cuda}" = cuda ]; then
  nvidia-smi --query-gpu=index,name,driver_version,clocks_event_reasons.active --format=csv || true
fi
exec "${PYTHON:-python3}" scripts/device/quiet_check.py --device "${DEVICE:-cuda}" --steps "${STEPS:-20}" \
  ${WORK:+--work "$WORK"} ${ROOT:+--root "$ROOT"} --out "$OUT"
