# Shared set-up for scripts/demo and scripts/test: a local .venv with reportgen installed.
# Sourced, not run. Idempotent: reinstalls only when pyproject.toml or this file changed.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${REPORTGEN_VENV:-$REPO/.venv}"
PY="${PYTHON_BOOTSTRAP:-python3}"
export NO_MKDOCS_2_WARNING=1 DISABLE_MKDOCS_2_WARNING=true PIP_DISABLE_PIP_VERSION_CHECK=1

reportgen_env() {
  local extras="$1"
  local stamp="$VENV/.reportgen-stamp"
  local want
  want="$(cat "$REPO/pyproject.toml" "$REPO/scripts/_env.sh" | sha256sum | cut -c1-16)-$extras"
  if [ ! -x "$VENV/bin/python" ]; then
    echo "setting up $VENV ..." >&2
    "$PY" -m venv "$VENV"
  fi
  if [ ! -f "$stamp" ] || ! grep -qx -- "$want" "$stamp"; then
    "$VENV/bin/python" -m pip install -q --upgrade pip
    # Pin torch: an unpinned requirement pulls a multi-GB CUDA build; 2.13.0 is the CPU build.
    if [[ ",$extras," == *",workload,"* ]]; then
      "$VENV/bin/python" -m pip install -q "torch==2.13.0"
    fi
    "$VENV/bin/python" -m pip install -q -e "$REPO[$extras]"
    echo "$want" > "$stamp"
  fi
  export PATH="$VENV/bin:$PATH"
  export VIRTUAL_ENV="$VENV"
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
