#!/usr/bin/env bash
# The performance history's real-run check of the GRPO workload (tests/history/test_real_history.py,
# the test the suite skips: REPORTGEN_HISTORY_STEPS set here runs it) on the GPU machine's quiet
# CPUs: twelve baseline runs of the embedded CPU workload at twelve commits of a throw-away
# repository, a 10 % slowdown added at the seventh; prints the A/A noise a point, the measured drop
# and whether the change point was found at its commit (docs/performance-history.md#the-real-run-test).
#
#   bash scripts/device/history_check.sh     # on the GPU machine, `.whl` carried (docs/device.md)
#   bash scripts/device/history_check.sh     # anywhere else: the checkout's environment runs it
#
# Environment: STEPS (60): steps per run (the test suite runs 10). About 5 minutes there. Leaves
# pytest's report in $OUT/history-check.txt when OUT is set.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
export PYTHONUNBUFFERED=1
if compgen -G ".whl/*.whl" >/dev/null && [ ! -x .venv/bin/python ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site:$PWD
fi
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] && PY=.venv/bin/python
nproc
REPORTGEN_HISTORY_STEPS=${STEPS:-60} "$PY" -m pytest tests/history/test_real_history.py -k grpo -p no:cacheprovider -rs -s -q 2>&1 | tee "${OUT:-/tmp}/history-check.txt"
