#!/usr/bin/env bash
# One device command of a GPU showcase: install the carried wheels, check the tree against its
# stamp, start or continue the campaign until a deadline, say where it stands, pack the experiment
# folder into $OUT.
#
#   bash scripts/device/showcase.sh PROFILE NAME        # e.g. gpu showcase-1xh200-grpo-offload-r3
#
# PROFILE is a profile of scripts/recipes/default.toml (gpu, gpu2), or - for none (the CPU demo,
# which needs no GPU: how the script itself is tested).
#
# Run on the GPU machine from the repository root, with `.whl` and `.tree-stamp.json` carried
# (docs/device.md says how to make both). To continue a campaign on the next command, whatever
# lease it lands on, bring its folder back: unpack the NAME.tar.gz an earlier command left in $OUT
# into runs/ of the checkout that is sent (a runs/showcase-* folder travels with the tree), or name
# the file in FROM. Any machine of the campaign's class (GPU model and count, driver, CPU model and
# count, memory, image) adds blocks; finished blocks are kept, a block another machine left
# unfinished is redone whole; a machine of another class is refused (exit 2).
#
# Environment: BUDGET_S (default 560): seconds this command may take in all; the campaign gets
# what is left after set-up, less PACK_S (default 30) for the state line and packing. FROM: the
# experiment folder of an earlier command, as NAME.tar.gz (unpacked into runs/) or a folder
# (copied); refused when runs/NAME is there too. ALLOW_DIRTY=1 runs even if the tree does not
# match its stamp (the runs then say "dirty"). SPEC: another spec than scripts/recipes/default.toml
# (e.g. scripts/recipes/aa.toml). A sequential campaign also gets --budget-minutes: CAMPAIGN_MINUTES
# when set, else what is left less 150 s (so it stops between pairs by itself, before run_until.py
# would have to interrupt a run).
#
# The last lines say where the campaign stands (scripts/device/campaign_state.py): "undecided after
# N pairs: run again to add pairs", "decided after N pairs: ...", or for a fixed design "campaign
# finished: every run is done", then the machines and the blocks each gave. Exit code: reportgen
# run's (0; 130 stopped at the deadline; 2 refused, e.g. another machine class), 3 when the tree
# does not match its stamp, 4 when FROM cannot be used.
set -euo pipefail

PROFILE=${1:?usage: showcase.sh PROFILE NAME}
NAME=${2:?usage: showcase.sh PROFILE NAME}
BUDGET_S=${BUDGET_S:-560}
PACK_S=${PACK_S:-30}
OUT=${OUT:?OUT must name the folder whose files come back}
T0=$(date +%s)
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
say() { echo "[showcase +$(($(date +%s) - T0))s] $*" >&2; }

# NVLink multicast stays off on these hosts (KINDS.md); the launcher sets NCCL's too.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1

# 1. Wheels of what the image lacks (no package index there): pydantic & co, tbparse, megatron-core.
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site:$PWD
else
  say "no .whl/*.whl carried: relying on what the image has"
  export PYTHONPATH=$PWD
fi

# 2. The commit: the tree must match its stamp, so every run names a clean commit.
if ! python3 scripts/device/stamp-tree.py --verify; then
  if [ "${ALLOW_DIRTY:-}" != 1 ]; then
    say "the tree does not match .tree-stamp.json: stamp it right before sending (or ALLOW_DIRTY=1)"
    exit 3
  fi
  say "ALLOW_DIRTY=1: running on a tree that differs from its stamp"
fi
# The copy's own .git may hold another commit's history (one machine's had an older HEAD): the runs'
# provenance takes the commit from the stamp, verified file by file, whatever git says there.
if [ -f .tree-stamp.json ]; then export REPORTGEN_TREE_STAMP=$PWD/.tree-stamp.json; fi

# 3. The campaign's folder from an earlier command, when FROM names it (a runs/NAME folder carried
#    with the tree is used as it is).
if [ -n "${FROM:-}" ]; then
  if [ -e "runs/$NAME" ]; then
    say "FROM=$FROM and runs/$NAME both there: keep one (the folder carried with the tree, or FROM)"
    exit 4
  fi
  mkdir -p runs
  if [ -d "$FROM" ]; then
    cp -a "$FROM" "runs/$NAME"
  elif [ -f "$FROM" ]; then
    tar -C runs -xzf "$FROM"
  else
    say "FROM=$FROM: no such file or folder"
    exit 4
  fi
  if [ ! -f "runs/$NAME/campaign.json" ]; then
    say "FROM=$FROM holds no runs/$NAME/campaign.json (packed under another NAME?)"
    exit 4
  fi
fi
if [ -f "runs/$NAME/campaign.json" ]; then
  say "continuing the campaign in runs/$NAME: $(find "runs/$NAME" -mindepth 3 -maxdepth 3 -name manifest.json -not -path '*/archive/*' | wc -l) runs there"
fi

# 4. What the runs rely on, checked in one short process (fails in seconds, not minutes). Without a
#    GPU profile (the CPU demo) torch is found, not imported: its import is seconds of CPU, the runs'.
python3 - "$PROFILE" <<'EOF'
import importlib.metadata as md, importlib.util, os, sys
need = {"gpu2": 2, "gpu": 1}.get(sys.argv[1], 0)
def version(name):
    try:
        return md.version(name)
    except md.PackageNotFoundError:
        return "MISSING"
if need:
    import torch
    torch_version, n = torch.__version__, torch.cuda.device_count()
    names = [torch.cuda.get_device_name(i) for i in range(n)]
else:
    torch_version, n, names = version("torch"), 0, []
print(f"torch {torch_version}, {n} GPU(s): {names}, {len(os.sched_getaffinity(0))} cores", flush=True)
have = {p: version(p) for p in ("pydantic", "tbparse", "transformers", "megatron-core")}
print("packages: " + ", ".join(f"{p} {v}" for p, v in have.items()), flush=True)
print(f"msgspec {version('msgspec')} (trace summaries; if MISSING, the runs warn and "
      "`python -m reportgen.traces RUN_DIR` makes them off the device)", flush=True)
if not need:
    have.pop("megatron-core")  # the offload path on a CPU needs no megatron-core
if n < need or "MISSING" in (torch_version, *have.values()) or (need and importlib.util.find_spec("megatron.core") is None):
    sys.exit(f"need {need} GPU(s) and the packages above (carry .whl: docs/device.md)")
EOF

# 5. The campaign, stopped cleanly before the deadline (SIGINT: the run in progress is marked
#    interrupted and redone by the next command). The full analysis and the site happen off the device.
LEFT=$((BUDGET_S - ($(date +%s) - T0) - PACK_S))
say "campaign runs/$NAME, profile $PROFILE, ${LEFT} s"
set +e
PROFILE_ARGS=()
if [ "$PROFILE" != "-" ]; then PROFILE_ARGS=(--profile "$PROFILE"); fi
SPEC_ARGS=()
if [ -n "${SPEC:-}" ]; then SPEC_ARGS=("$SPEC"); fi
# Minutes for the formal runs: what is left less about two GPU-profile runs (profiler runs and the
# last run's end come after the budget's last check).
BUDGET_MIN=${CAMPAIGN_MINUTES:-$(python3 -c "print(max(0.5, ($LEFT - 150) / 60))")}
python3 scripts/device/run_until.py --deadline-s "$LEFT" --experiment "runs/$NAME" -- \
  python3 -m reportgen run "${SPEC_ARGS[@]}" "${PROFILE_ARGS[@]}" --name "$NAME" --no-analyze \
  --budget-minutes "$BUDGET_MIN"
CODE=$?
# Where the campaign stands, from its analysis (a current analysis.json is kept as it is).
STATE=""
if [ "$CODE" != 2 ] && [ -f "runs/$NAME/campaign.json" ]; then
  STATE=$(python3 scripts/device/campaign_state.py "runs/$NAME" --exit-code "$CODE")
fi
set -e

# 6. The experiment folder as two tar.gz files: the runs without their profiler traces (small, always
#    comes back), then the traces alone, in 15 MiB parts if larger (at most 8 files come back).
pack() {  # pack FILE TAR-ARGS...: write $OUT/FILE, split into FILE.partNN when over 16 MiB
  local file=$1; shift
  tar -C runs -czf "$OUT/$file" "$@"
  local size; size=$(stat -c %s "$OUT/$file")
  if [ "$size" -gt $((16 * 1024 * 1024)) ]; then
    split -b 15M -d "$OUT/$file" "$OUT/$file.part"
    rm "$OUT/$file"
    say "packed $file: $size bytes in parts (cat $file.part* > $file)"
  else
    say "packed $file: $size bytes"
  fi
}
if [ -d "runs/$NAME" ]; then
  pack "$NAME.tar.gz" --exclude=traces "$NAME"
  TRACES=$(cd runs && find "$NAME" -type d -name traces -prune)
  if [ -n "$TRACES" ]; then
    # shellcheck disable=SC2086  # one path per line, none with spaces (arm/repeat/traces)
    pack "$NAME-traces.tar.gz" $TRACES
  fi
fi
if [ "$CODE" = 130 ]; then say "stopped at the deadline (exit 130)"; fi
if [ "$CODE" != 0 ] && [ "$CODE" != 130 ]; then say "reportgen exited $CODE"; fi
if [ -n "$STATE" ]; then echo "$STATE"; fi  # on stdout, unprefixed: the first line is the one to act on
exit $CODE
