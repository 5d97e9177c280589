#!/usr/bin/env bash
# Installs what CodeSmith's tests use beyond Rust itself. Idempotent; safe to rerun.
#  - bubblewrap: the Linux sandbox backend (tests skip the sandbox cases without it)
#  - ripgrep: the benchmark's reference for grep_files
#  - tmux: drives the terminal UI in its end-to-end test (skipped without it)
#  - the Python MCP SDK: the real MCP client the MCP server is tested with, and the
#    FastMCP servers the MCP client is tested against
#  - @modelcontextprotocol/server-everything (npm, pinned, into target/mcp-everything/):
#    the official reference MCP server the MCP client is tested against
#    (nodejs and npm come from apt when missing)
set -euo pipefail

cd "$(dirname "$0")/.."

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
if have apt-get && ! have npm; then apt_install nodejs npm || echo "dev-setup: apt install of nodejs/npm failed; continuing" >&2; fi

if ! python3 -c 'import mcp' >/dev/null 2>&1; then
  python3 -m pip install --quiet --disable-pip-version-check 'mcp>=1.2,<2' \
    || echo "dev-setup: could not install the Python MCP SDK; the MCP client test will be skipped" >&2
fi

# Keep in step with MCP_EVERYTHING_VERSION in crates/codesmith-cli/tests/mcp_everything.rs.
EVERYTHING_VERSION=2026.8.31
EVERYTHING_DIR=target/mcp-everything
EVERYTHING_PKG="$EVERYTHING_DIR/node_modules/@modelcontextprotocol/server-everything/package.json"
if ! grep -qs "\"version\": \"$EVERYTHING_VERSION\"" "$EVERYTHING_PKG"; then
  if have npm; then
    echo "dev-setup: installing @modelcontextprotocol/server-everything@$EVERYTHING_VERSION (npm) into $EVERYTHING_DIR"
    npm install --silent --no-audit --no-fund --prefix "$EVERYTHING_DIR" \
      "@modelcontextprotocol/server-everything@$EVERYTHING_VERSION" \
      || echo "dev-setup: could not install server-everything; its MCP client test reports MCP SERVER MISSING" >&2
  else
    echo "dev-setup: npm is missing; the server-everything MCP client test reports MCP SERVER MISSING" >&2
  fi
fi
