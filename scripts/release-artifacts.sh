#!/usr/bin/env bash
# Turns the release archives (scripts/build-release.sh, one per target) into everything a release
# publishes (issue 32). The release workflow runs it on the archives of every target; on a Linux
# x86_64 machine these two commands reproduce every Linux x86_64 artifact of a release:
#
#   scripts/build-release.sh                        # → dist/mcp-manifest-VERSION-TARGET.tar.gz
#   scripts/release-artifacts.sh [--repo OWNER/NAME] [--out DIR] [ARCHIVES_DIR]
#
# ARCHIVES_DIR (default dist) holds mcp-manifest-VERSION-TARGET.tar.gz / .zip. Writes to DIR
# (default dist/release):
#   - the archives themselves;
#   - mcp-manifest-VERSION.mcpb: one bundle with a binary per OS found (linux: x86_64; darwin:
#     a universal binary when both Apple archives are there and `lipo` exists, else the one
#     found; win32: x86_64), platform_overrides choosing among them (scripts/pack-mcpb.sh);
#   - mcp-manifest.rb: the Homebrew formula with the archives' checksums;
#   - server.json for the MCP Registry (npm, PyPI, mcpb and cargo packages);
#   - SHA256SUMS of the files above;
#   - npm/: the launcher package and one per platform found (scripts/pack_npm.py);
#   - wheels/: a PyPI wheel per target (scripts/pack_wheel.py);
#   - crate/: the crates.io package (`cargo package`, verified by `cargo publish --dry-run` in CI).
# --repo (default $GITHUB_REPOSITORY, else the placeholder OWNER/mcp-manifest) names the GitHub
# repository in URLs and the MCP Registry name. Needs python3, npm, cargo.
set -euo pipefail
cd "$(dirname "$0")/.."

repo=${GITHUB_REPOSITORY:-OWNER/mcp-manifest}
out=dist/release
archives=dist
while [ $# -gt 0 ]; do
  case "$1" in
    --repo) repo=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
    -*) echo "release-artifacts: unexpected option '$1' (see --help)" >&2; exit 2 ;;
    *) archives=$1; shift ;;
  esac
done

version=$(python3 -c 'import tomllib; print(tomllib.load(open("Cargo.toml", "rb"))["package"]["version"])')
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
rm -rf "$out"
mkdir -p "$out/npm" "$out/wheels" "$out/crate"

# Each archive unpacked to $stage/TARGET/.
targets=()
for a in "$archives"/mcp-manifest-"$version"-*; do
  name=$(basename "$a")
  case "$name" in
    *.tar.gz) t=${name%.tar.gz}; tar -xzf "$a" -C "$stage" ;;
    *.zip) t=${name%.zip}; python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$a" "$stage" ;;
    *) continue ;;
  esac
  t=${t#mcp-manifest-"$version"-}
  mv "$stage/mcp-manifest-$version-$t" "$stage/$t"
  cp "$a" "$out/"
  targets+=("$t")
done
[ ${#targets[@]} -gt 0 ] || { echo "release-artifacts: no mcp-manifest-$version-* archive in $archives" >&2; exit 1; }
echo "-- targets: ${targets[*]}" >&2

exe_of() {
  case "$1" in *windows*) echo "$stage/$1/mcp-manifest.exe" ;; *) echo "$stage/$1/mcp-manifest" ;; esac
}
has() { [ -d "$stage/$1" ]; }

# npm and wheels: one per target.
npm_pairs=()
for t in "${targets[@]}"; do
  case "$t" in
    x86_64-unknown-linux-gnu) npm_pairs+=("linux-x64=$(exe_of "$t")") ;;
    aarch64-unknown-linux-gnu) npm_pairs+=("linux-arm64=$(exe_of "$t")") ;;
    x86_64-apple-darwin) npm_pairs+=("darwin-x64=$(exe_of "$t")") ;;
    aarch64-apple-darwin) npm_pairs+=("darwin-arm64=$(exe_of "$t")") ;;
    x86_64-pc-windows-*) npm_pairs+=("win32-x64=$(exe_of "$t")") ;;
  esac
  python3 scripts/pack_wheel.py --repo "$repo" --target "$t" --out "$out/wheels" "$(exe_of "$t")" >/dev/null
done
python3 scripts/pack_npm.py --repo "$repo" --out "$out/npm" "${npm_pairs[@]}" >/dev/null

# One .mcpb for every OS found.
mcpb=()
has x86_64-unknown-linux-gnu && mcpb+=("linux=$(exe_of x86_64-unknown-linux-gnu)")
if has aarch64-apple-darwin && has x86_64-apple-darwin && command -v lipo >/dev/null; then
  lipo -create -output "$stage/mcp-manifest-darwin-universal" \
    "$(exe_of aarch64-apple-darwin)" "$(exe_of x86_64-apple-darwin)"
  mcpb+=("darwin=$stage/mcp-manifest-darwin-universal")
elif has aarch64-apple-darwin; then
  echo "release-artifacts: the bundle's darwin binary is arm64 only (no x86_64 archive or no lipo)" >&2
  mcpb+=("darwin=$(exe_of aarch64-apple-darwin)")
elif has x86_64-apple-darwin; then
  mcpb+=("darwin=$(exe_of x86_64-apple-darwin)")
fi
for t in x86_64-pc-windows-msvc x86_64-pc-windows-gnu; do
  if has "$t"; then mcpb+=("win32=$(exe_of "$t")"); break; fi
done
bundle=$(scripts/pack-mcpb.sh --out "$out" "${mcpb[@]}")

# The formula, server.json, the crate.
tars=("$out"/mcp-manifest-"$version"-*.tar.gz)
python3 scripts/homebrew_formula.py --repo "$repo" --out "$out/mcp-manifest.rb" "${tars[@]}" >/dev/null
python3 scripts/server_json.py --repo "$repo" --bundle "$bundle" --out "$out/server.json"
cargo package --locked --no-verify --quiet >&2
cp "target/package/mcp-manifest-$version.crate" "$out/crate/"

# SHA256SUMS of the release assets (the files at the top of DIR), and a listing (portable: the
# release job runs on macOS).
python3 - "$out" <<'PY' >&2
import hashlib, os, sys
out = sys.argv[1]
assets = sorted(f for f in os.listdir(out) if os.path.isfile(os.path.join(out, f)) and f != "SHA256SUMS")
with open(os.path.join(out, "SHA256SUMS"), "w") as sums:
    for f in assets:
        sums.write(f"{hashlib.sha256(open(os.path.join(out, f), 'rb').read()).hexdigest()}  {f}\n")
for folder, _, files in sorted(os.walk(out)):
    for f in sorted(files):
        path = os.path.join(folder, f)
        print(f"   {os.path.getsize(path):>10}  {os.path.relpath(path, out)}")
PY
echo "$out"
