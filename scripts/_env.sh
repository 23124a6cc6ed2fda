# Shared set-up for scripts/demo, scripts/site and scripts/test: a local .venv with reportgen installed.
# Sourced, not run. Idempotent: reinstalls only when pyproject.toml or this file changed, or an extra
# is missing. REPORTGEN_VENV names another venv; REPORTGEN_ENV=none uses what is on PATH as it is.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${REPORTGEN_VENV:-$REPO/.venv}"
export NO_MKDOCS_2_WARNING=1 DISABLE_MKDOCS_2_WARNING=true PIP_DISABLE_PIP_VERSION_CHECK=1

reportgen_env() {
  local extras="$1"
  # The code of this checkout, whatever checkout the venv's editable install points at
  # (REPORTGEN_VENV may name a venv another checkout set up).
  export PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}"
  if [ "${REPORTGEN_ENV:-}" = none ]; then
    return  # the python and mkdocs already on PATH (tests; a venv shared with other checkouts)
  fi
  local stamp="$VENV/.reportgen-stamp"
  local want
  want="$(cat "$REPO/pyproject.toml" "$REPO/scripts/_env.sh" | sha256sum | cut -c1-16)-$extras"
  if [ ! -x "$VENV/bin/python" ]; then
    local py
    py="$(pick_python "${PYTHON_BOOTSTRAP:-}" "$(command -v python3 || true)" /usr/bin/python3)"
    echo "setting up $VENV with $py ..." >&2
    "$py" -m venv "$VENV"
  fi
  if ! stamp_covers "$stamp" "$want"; then
    "$VENV/bin/python" -m pip install -q --upgrade pip
    # Pin torch: an unpinned requirement pulls a multi-GB CUDA build; 2.13.0 is the CPU build.
    local torch=()
    if [[ ",$extras," == *",workload,"* ]]; then
      torch=("torch==2.13.0")
    fi
    # One pip call without its byte-compiling (serial), then all of it compiled on every core,
    # package tests left out: about 110 s instead of 118-156 s on a 2-core machine (README.md, Quick start).
    # Compiled ahead because PYTHONDONTWRITEBYTECODE may be set (it is on CI): every workload run
    # would otherwise compile torch and transformers again on import.
    "$VENV/bin/python" -m pip install -q --no-compile "${torch[@]}" -e "$REPO[$extras]"
    "$VENV/bin/python" -m compileall -q -j 0 -x '/(tests?|testing)/' "$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" >/dev/null || true
    echo "$want" > "$stamp"
  fi
  export PATH="$VENV/bin:$PATH"
  export VIRTUAL_ENV="$VENV"
}

stamp_covers() {
  # True when the venv was set up from this pyproject.toml and _env.sh with at least the wanted
  # extras: a venv scripts/test made (every extra) serves scripts/demo without a reinstall.
  local stamp="$1" want="$2" have extra wanted
  [ -f "$stamp" ] || return 1
  have="$(cat "$stamp")"
  [ "${have%%-*}" = "${want%%-*}" ] || return 1
  IFS=, read -ra wanted <<< "${want#*-}"
  for extra in "${wanted[@]}"; do
    [[ ",${have#*-}," == *",$extra,"* ]] || return 1
  done
}

need_chromium() {
  # Browser tests drive Debian's Chromium through Playwright (no browser download).
  if ! command -v chromium >/dev/null 2>&1; then
    echo "installing chromium (Debian package) for the browser tests ..." >&2
    if [ "$(id -u)" = 0 ]; then
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    else
      sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    fi
  fi
}

# The interpreter a new venv is made from: $1 (PYTHON_BOOTSTRAP) when given; else, of the other
# arguments that are Python 3.11 or newer and can make a venv, the fastest on a short pure-Python loop
# (each timed three times, interleaved, its best kept), the first unless another is 10 % faster.
# Builds differ that much: on this project's VM pyenv's 3.11.7 (a shared libpython, no profile-guided
# optimisation) ran the loop in about 0.98 s and Debian's 3.11.2 in 0.73, and the whole suite took
# 8 min 39 s against 7 min 59 s with its set-up (docs/testing.md, runs 52 and 53).
pick_python() {
  local chosen="$1"
  shift
  if [ -n "$chosen" ]; then
    echo "$chosen"
    return
  fi
  local c cands=() seen=() best=() i round t
  for c in "$@"; do
    [ -n "$c" ] && [ -x "$c" ] || continue
    local real
    real="$(readlink -f "$c")"
    [[ " ${seen[*]} " == *" $real "* ]] && continue
    seen+=("$real")
    "$c" -c 'import sys, ensurepip, venv; sys.exit(sys.version_info < (3, 11))' >/dev/null 2>&1 || continue
    cands+=("$c")
    best+=("")
  done
  if [ "${#cands[@]}" -eq 0 ]; then
    echo python3
    return
  fi
  for round in 1 2 3; do
    for i in "${!cands[@]}"; do
      t="$("${cands[$i]}" -c '
import time
t = time.process_time()
s = 0
for i in range(300_000):
    s += i * i % 7
print(int((time.process_time() - t) * 1e6))' 2>/dev/null)" || continue
      if [ -z "${best[$i]}" ] || [ "$t" -lt "${best[$i]}" ]; then best[i]="$t"; fi
    done
  done
  local pick=0
  for i in "${!cands[@]}"; do
    [ -n "${best[$i]}" ] || continue
    # One that could not run the loop is never kept over one that could.
    if [ -z "${best[$pick]}" ] || [ $((best[i] * 10)) -lt $((best[pick] * 9)) ]; then pick="$i"; fi
  done
  if [ "$pick" != 0 ] && [ -n "${best[0]}" ]; then
    echo "using ${cands[$pick]} for the venv: $((100 - 100 * best[pick] / best[0])) % faster than ${cands[0]} on a pure-Python loop (PYTHON_BOOTSTRAP chooses another)" >&2
  fi
  echo "${cands[$pick]}"
}
