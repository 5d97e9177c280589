#!/usr/bin/env bash
# Installs what CodeSmith's tests use beyond Rust itself. Idempotent; safe to rerun.
#  - bubblewrap: the Linux sandbox backend (tests skip the sandbox cases without it)
#  - ripgrep: the benchmark's reference for grep_files
#  - tmux: drives the terminal UI in its end-to-end test (skipped without it)
#  - the Python MCP SDK: the real MCP client the MCP server is tested with
set -euo pipefail

have() { command -v "$1" >/dev/null 2>&1; }

apt_install() {
  local missing=()
  for pkg in "$@"; do dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -eq 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
  elif have sudo; then
    sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
  else
    echo "dev-setup: please install ${missing[*]} (tests that need them will be skipped)" >&2
  fi
}

if have apt-get; then apt_install bubblewrap ripgrep tmux || echo "dev-setup: apt install failed; continuing" >&2; fi

if ! python3 -c 'import mcp' >/dev/null 2>&1; then
  python3 -m pip install --quiet --disable-pip-version-check 'mcp>=1.2,<2' \
    || echo "dev-setup: could not install the Python MCP SDK; the MCP client test will be skipped" >&2
fi
