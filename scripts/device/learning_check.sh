#!/usr/bin/env bash
# One device command: does the embedded workload learn its task on this GPU? The GPU profile's
# baseline and A1 of scripts/recipes/default.toml, one 48-step run each (the warm start made by the
# first), then the reward per window, the share of prompt groups with no advantage, whether
# pg_loss is ever non-zero, the warm start's time (and whether a second making gives the same
# bytes) and each run's duration; the experiment folder, the table and the curves come back in $OUT.
#
#   bash scripts/device/learning_check.sh            # profile gpu (one GPU); about 4 minutes on one H200
#   LR=5e-5 bash scripts/device/learning_check.sh    # another RL learning rate than the profile's
#   PROFILE=- bash scripts/device/learning_check.sh  # the CPU demo's profile (how the script is tested)
#
# Run from the repository root of the copy the device tool sends, with `.whl` carried
# (docs/device.md: scripts/device/fetch-wheels.sh); no stamp is needed, the runs say "dirty" without one.
set -euo pipefail

OUT=${OUT:?OUT must name the folder whose files come back}
PROFILE=${PROFILE:-gpu}
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1

# Wheels of what the image lacks (no package index there), as showcase.sh installs them.
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site:$PWD
else
  echo "[learning-check] no .whl/*.whl carried: relying on what the image has" >&2
  export PYTHONPATH=$PWD
fi
if [ -f .tree-stamp.json ]; then export REPORTGEN_TREE_STAMP=$PWD/.tree-stamp.json; fi

ARGS=(--profile "$PROFILE")
if [ -n "${LR:-}" ]; then ARGS+=(--lr "$LR"); fi
exec python3 scripts/device/learning_check.py "$OUT" "${ARGS[@]}"
