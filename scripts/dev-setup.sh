#!/usr/bin/env bash
# Installs what CodeSmith's tests use beyond Rust itself. Idempotent; safe to rerun.
#  - bubblewrap: the Linux sandbox backend (tests skip the sandbox cases without it)
#  - ripgrep: the benchmark's reference for grep_files
#  - tmux: drives the terminal UI in its end-to-end test (skipped without it)
#  - the Python MCP SDK: the real MCP client the MCP server is tested with, and the
#    FastMCP servers the MCP client is tested against; installed into a virtual
#    environment at target/mcp-venv (never into the system Python), where the tests find it
#    (codesmith_testkit::mcp_python). Without the venv module it goes to the user's
#    site-packages (pip install --user).
#  - @modelcontextprotocol/server-everything (npm, pinned, into target/mcp-everything/):
#    the official reference MCP server the MCP client is tested against
#    (nodejs and npm come from apt when missing)
#  - pyright, typescript-language-server and typescript (npm, pinned, installed globally so
#    the language servers are on the PATH inside the sandbox, under /usr): the servers the
#    post-write diagnostics and `lsp` tool tests talk to
# It says what it is going to install before it does.
set -euo pipefail

cd "$(dirname "$0")/.."

have() { command -v "$1" >/dev/null 2>&1; }

VENV=target/mcp-venv
MCP_REQ='mcp>=1.2,<2'
# Keep in step with MCP_EVERYTHING_VERSION in crates/codesmith-cli/tests/mcp_everything.rs.
EVERYTHING_VERSION=2026.8.31
EVERYTHING_DIR=target/mcp-everything
EVERYTHING_PKG="$EVERYTHING_DIR/node_modules/@modelcontextprotocol/server-everything/package.json"
# Keep in step with the language-server tests in crates/codesmith-tools/tests/lsp.rs.
LSP_PKGS=(pyright@1.1.414 typescript-language-server@5.1.3 typescript@5.9.3)

apt_missing=()
if have apt-get && have dpkg; then
  for pkg in bubblewrap ripgrep tmux; do dpkg -s "$pkg" >/dev/null 2>&1 || apt_missing+=("$pkg"); done
  if ! have npm; then
    for pkg in nodejs npm; do dpkg -s "$pkg" >/dev/null 2>&1 || apt_missing+=("$pkg"); done
  fi
fi
need_mcp=1
if [ -x "$VENV/bin/python3" ] && "$VENV/bin/python3" -c 'import mcp' >/dev/null 2>&1; then
  need_mcp=0
fi
need_everything=1
if grep -qs "\"version\": \"$EVERYTHING_VERSION\"" "$EVERYTHING_PKG"; then need_everything=0; fi
need_lsp=0
if have npm; then
  npm_root="$(npm root -g 2>/dev/null || true)"
  for spec in "${LSP_PKGS[@]}"; do
    name="${spec%@*}"; version="${spec##*@}"
    grep -qs "\"version\": \"$version\"" "$npm_root/$name/package.json" || need_lsp=1
  done
fi

if [ ${#apt_missing[@]} -eq 0 ] && [ "$need_mcp" -eq 0 ] && [ "$need_everything" -eq 0 ] && [ "$need_lsp" -eq 0 ]; then
  echo "dev-setup: nothing to install (bubblewrap, ripgrep, tmux, the MCP SDK in $VENV and server-everything in $EVERYTHING_DIR are present)"
  exit 0
fi
echo "dev-setup: will install:"
if [ ${#apt_missing[@]} -gt 0 ]; then echo "  - with apt-get (system packages): ${apt_missing[*]}"; fi
if [ "$need_mcp" -eq 1 ]; then echo "  - the Python MCP SDK ($MCP_REQ) into the virtual environment $VENV"; fi
if [ "$need_everything" -eq 1 ]; then echo "  - @modelcontextprotocol/server-everything@$EVERYTHING_VERSION (npm) into $EVERYTHING_DIR"; fi
if [ "$need_lsp" -eq 1 ]; then echo "  - ${LSP_PKGS[*]} (npm install -g)"; fi

if [ ${#apt_missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ]; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${apt_missing[@]}"; } \
      || echo "dev-setup: apt install failed; continuing" >&2
  elif have sudo; then
    { sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${apt_missing[@]}"; } \
      || echo "dev-setup: apt install failed; continuing" >&2
  else
    echo "dev-setup: please install ${apt_missing[*]} (tests that need them will be skipped)" >&2
  fi
fi

if [ "$need_mcp" -eq 1 ]; then
  mkdir -p target
  if python3 -m venv "$VENV" >/dev/null 2>&1 \
    && "$VENV/bin/python3" -m pip install --quiet --disable-pip-version-check "$MCP_REQ"; then
    echo "dev-setup: the MCP SDK is in $VENV"
  else
    rm -rf "$VENV"
    echo "dev-setup: no virtual environment (python3 -m venv failed); installing the MCP SDK into your user site-packages" >&2
    python3 -m pip install --user --quiet --disable-pip-version-check "$MCP_REQ" \
      || echo "dev-setup: could not install the Python MCP SDK; the MCP client tests will be skipped" >&2
  fi
fi

if [ "$need_everything" -eq 1 ]; then
  if have npm; then
    npm install --silent --no-audit --no-fund --prefix "$EVERYTHING_DIR" \
      "@modelcontextprotocol/server-everything@$EVERYTHING_VERSION" \
      || echo "dev-setup: could not install server-everything; its MCP client test reports MCP SERVER MISSING" >&2
  else
    echo "dev-setup: npm is missing; the server-everything MCP client test reports MCP SERVER MISSING" >&2
  fi
fi

if [ "$need_lsp" -eq 1 ] || ! have pyright-langserver; then
  if have npm; then
    npm install -g --silent --no-audit --no-fund "${LSP_PKGS[@]}" \
      || echo "dev-setup: could not install the language servers; their tests report LSP SERVER MISSING" >&2
  else
    echo "dev-setup: npm is missing; the language-server tests report LSP SERVER MISSING" >&2
  fi
fi
