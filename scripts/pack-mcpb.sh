#!/usr/bin/env bash
# Packs mcp-manifest into a desktop extension (.mcpb) that Claude Desktop (and any MCP Bundle
# host) installs in one click; the user picks their mcp-server.toml at install time.
#
#   cargo build --release --locked
#   scripts/pack-mcpb.sh [--out DIR] [OS=BINARY ...]
#
# OS is one of linux, darwin, win32; BINARY the release binary for it. Default: this machine's
# OS and its release binary (linux=target/release/mcp-manifest on Linux, darwin=… on macOS,
# win32=target/release/mcp-manifest.exe on Windows). The bundle holds server/OS/mcp-manifest (.exe on win32)
# for each OS given; mcpb/manifest.json goes in with its version taken from Cargo.toml and its
# platforms (entry point, platform_overrides, compatibility) cut to the ones packed.
# Writes DIR/mcp-manifest-VERSION.mcpb (default DIR: dist) and prints its path on stdout.
#
# Needs Node.js and npm (the pinned @anthropic-ai/mcpb CLI is installed once outside the
# repository by scripts/npm-tools.sh) and python3.
set -euo pipefail
cd "$(dirname "$0")/.."

out=dist
pairs=()
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *=*) pairs+=("$1"); shift ;;
    *) echo "pack-mcpb: unexpected argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
if [ ${#pairs[@]} -eq 0 ]; then
  case "$(uname -s)" in
    Linux) pairs=("linux=target/release/mcp-manifest") ;;
    Darwin) pairs=("darwin=target/release/mcp-manifest") ;;
    MINGW*|MSYS*|CYGWIN*|Windows_NT) pairs=("win32=target/release/mcp-manifest.exe") ;;
    *) echo "pack-mcpb: no bundle platform for $(uname -s): name one (OS=BINARY)" >&2; exit 2 ;;
  esac
fi

version=$(python3 -c 'import tomllib; print(tomllib.load(open("Cargo.toml", "rb"))["package"]["version"])')
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/server"
oses=()
for pair in "${pairs[@]}"; do
  os=${pair%%=*}
  bin=${pair#*=}
  case "$os" in
    linux|darwin) name=mcp-manifest ;;
    win32) name=mcp-manifest.exe ;;
    *) echo "pack-mcpb: unknown OS '$os' (linux, darwin or win32)" >&2; exit 2 ;;
  esac
  if [ ! -f "$bin" ]; then
    echo "pack-mcpb: no binary at $bin (build it first: cargo build --release --locked)" >&2
    exit 1
  fi
  mkdir -p "$stage/server/$os"
  cp "$bin" "$stage/server/$os/$name"
  chmod 755 "$stage/server/$os/$name"
  oses+=("$os")
done

python3 - "$version" "$stage/manifest.json" "${oses[@]}" <<'PY'
import json, sys
version, dest, oses = sys.argv[1], sys.argv[2], sys.argv[3:]
m = json.load(open("mcpb/manifest.json"))
m["version"] = version
exe = lambda os: f"server/{os}/mcp-manifest" + (".exe" if os == "win32" else "")
first = oses[0]
cfg = m["server"]["mcp_config"]
m["server"]["entry_point"] = exe(first)
cfg["command"] = "${__dirname}/" + exe(first)
cfg["platform_overrides"] = {os: {"command": "${__dirname}/" + exe(os)} for os in oses}
m["compatibility"]["platforms"] = oses
json.dump(m, open(dest, "w"), indent=2)
open(dest, "a").write("\n")
PY

tools=$(scripts/npm-tools.sh)
mkdir -p "$out"
bundle="$out/mcp-manifest-$version.mcpb"
rm -f "$bundle"
"$tools/node_modules/.bin/mcpb" pack "$stage" "$bundle" >&2
echo "$bundle"
