#!/usr/bin/env bash
# Builds the release artifacts of this checkout into a directory laid out as the release
# host serves it:
#   DIST/LATEST                      the version, one line (what `codesmith doctor` compares)
#   DIST/VERSION/codesmith-TARGET    the binary (TARGET: the Rust host triple)
#   DIST/VERSION/SHA256SUMS          the manifest: `<sha256>  <file>` per artifact
#   DIST/VERSION/install.sh          the installer (scripts/install.sh)
# Usage: scripts/release.sh [DIST]   (default DIST: target/dist)
# Upload DIST as it is; scripts/install.sh refuses any binary the manifest does not vouch for.
set -euo pipefail
cd "$(dirname "$0")/.."

dist="${1:-target/dist}"
version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)"
target="$(rustc -vV | sed -n 's/^host: //p')"
[ -n "$version" ] && [ -n "$target" ] || { echo "release: cannot read the version or the host triple" >&2; exit 2; }

if [ -z "${CODESMITH_RELEASE_BINARY:-}" ]; then
  cargo build --release --locked -p codesmith-cli
  binary=target/release/codesmith
else
  # A binary built elsewhere (CI's build step); it is hashed exactly as given.
  binary="$CODESMITH_RELEASE_BINARY"
fi

out="$dist/$version"
mkdir -p "$out"
cp "$binary" "$out/codesmith-$target.new"
mv -f "$out/codesmith-$target.new" "$out/codesmith-$target"
cp scripts/install.sh "$out/install.sh"
(
  cd "$out"
  # Every artifact except the manifest itself, sorted, in sha256sum's own format.
  find . -maxdepth 1 -type f ! -name SHA256SUMS ! -name '*.new' -printf '%f\n' | LC_ALL=C sort |
    xargs sha256sum > SHA256SUMS.new
  mv -f SHA256SUMS.new SHA256SUMS
)
printf '%s\n' "$version" > "$dist/LATEST.new"
mv -f "$dist/LATEST.new" "$dist/LATEST"
echo "release: $out (codesmith-$target, SHA256SUMS); LATEST = $version"
