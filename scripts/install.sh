#!/bin/sh
# Installs a CodeSmith release binary, verified against the release's SHA-256 manifest.
#
#   sh install.sh --base-url URL [--version V] [--prefix DIR]
#
# URL is the release host's directory (as written by scripts/release.sh); also taken from
# CODESMITH_RELEASE_URL. V defaults to the one in URL/LATEST. DIR defaults to ~/.local/bin.
# The script downloads URL/V/codesmith-TARGET and URL/V/SHA256SUMS and installs only when
# the manifest is there, names that file, and its SHA-256 matches. There is no way to skip
# the check. The binary is written next to its destination and renamed into place, so
# an interrupted install leaves the old binary (or none), never half a file.
# It records URL in $CODESMITH_HOME/release-url (default ~/.codesmith), where
# `codesmith doctor` looks for newer releases.
set -eu

die() { echo "install: $*" >&2; exit 1; }

base="${CODESMITH_RELEASE_URL:-}"
version=""
prefix="${HOME}/.local/bin"
while [ $# -gt 0 ]; do
  case "$1" in
    --base-url) base="${2:-}"; shift 2 ;;
    --version) version="${2:-}"; shift 2 ;;
    --prefix) prefix="${2:-}"; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
[ -n "$base" ] || die "no release URL: pass --base-url URL or set CODESMITH_RELEASE_URL"
base="${base%/}"

if command -v curl >/dev/null 2>&1; then
  fetch() { curl -fsSL --proto '=https,http' --retry 2 -o "$2" "$1"; }
elif command -v wget >/dev/null 2>&1; then
  fetch() { wget -q -O "$2" "$1"; }
else
  die "neither curl nor wget is installed"
fi
if command -v sha256sum >/dev/null 2>&1; then
  digest() { sha256sum "$1" | cut -d' ' -f1; }
elif command -v shasum >/dev/null 2>&1; then
  digest() { shasum -a 256 "$1" | cut -d' ' -f1; }
else
  die "neither sha256sum nor shasum is installed; cannot verify the download"
fi

case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) target=x86_64-unknown-linux-gnu ;;
  Linux-aarch64|Linux-arm64) target=aarch64-unknown-linux-gnu ;;
  Darwin-x86_64) target=x86_64-apple-darwin ;;
  Darwin-arm64) target=aarch64-apple-darwin ;;
  *) die "no release build for $(uname -s) $(uname -m); build from source with cargo" ;;
esac

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

if [ -z "$version" ]; then
  fetch "$base/LATEST" "$work/LATEST" || die "cannot read $base/LATEST; pass --version V"
  version="$(head -n1 "$work/LATEST" | tr -d '[:space:]')"
  [ -n "$version" ] || die "$base/LATEST is empty"
fi
file="codesmith-$target"
fetch "$base/$version/SHA256SUMS" "$work/SHA256SUMS" ||
  die "refusing to install: the manifest $base/$version/SHA256SUMS could not be downloaded"
expected="$(awk -v f="$file" '$2 == f || $2 == "*" f { print $1; exit }' "$work/SHA256SUMS")"
case "$expected" in
  [0-9a-f]*) [ "${#expected}" -eq 64 ] || expected="" ;;
  *) expected="" ;;
esac
[ -n "$expected" ] || die "refusing to install: the manifest names no SHA-256 for $file"
fetch "$base/$version/$file" "$work/$file" || die "cannot download $base/$version/$file"
actual="$(digest "$work/$file")"
[ "$actual" = "$expected" ] ||
  die "refusing to install: $file has SHA-256 $actual, the manifest says $expected"

mkdir -p "$prefix"
staging="$prefix/.codesmith.install.$$"
cp "$work/$file" "$staging"
chmod 755 "$staging"
mv -f "$staging" "$prefix/codesmith" || { rm -f "$staging"; die "cannot install into $prefix"; }

home="${CODESMITH_HOME:-$HOME/.codesmith}"
if mkdir -p "$home" 2>/dev/null; then
  printf '%s\n' "$base" > "$home/release-url.new" && mv -f "$home/release-url.new" "$home/release-url" || true
fi
echo "installed codesmith $version ($target) to $prefix/codesmith (SHA-256 $actual verified)"
