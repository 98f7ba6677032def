#!/usr/bin/env bash
# The npm packages installed as a user installs them (issue 32): packs `mcp-manifest` (the
# launcher) and `@mcp-manifest/linux-x64` (BINARY inside), publishes both to a throwaway
# registry (verdaccio, pinned, on a loopback port, no uplink: nothing else can be fetched), then
# in a fresh HOME with an empty npm cache:
#   - `npx -y mcp-manifest --version` prints the binary's version (timed);
#   - `npx -y mcp-manifest init` in a fresh project folder writes mcp-server.toml, which
#     `npx mcp-manifest check` accepts (timed from the fresh HOME to init done);
#   - an MCP `initialize` over stdio through the launcher is answered; exit codes pass through;
#   - the launcher's messages: no package for this platform (another arch), the platform package
#     omitted (`--omit=optional`); MCP_MANIFEST_BINARY, and MCP_MANIFEST_LAUNCHER passed on.
#
#   scripts/check-npm.sh [BINARY]        (default target/release/mcp-manifest)
#
# Verdaccio goes to a cache outside the clone (MCP_MANIFEST_CI_CACHE, default
# ~/.cache/mcp-manifest-ci). Exit 3 when the npm registry cannot be reached (nothing checked).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

VERDACCIO_VERSION=6.8.0   # 6.10 needs Node 22; Debian's and this machine's Node is 20

bin=$(realpath "${1:-target/release/mcp-manifest}")
[ -x "$bin" ] || { echo "check-npm: no binary at $bin (cargo build --release first)" >&2; exit 1; }
cache="${MCP_MANIFEST_CI_CACHE:-$HOME/.cache/mcp-manifest-ci}"
command -v npm >/dev/null 2>&1 || { echo "check-npm: npm is not installed" >&2; exit 3; }
node=$(command -v node)
npm=$(command -v npm)
npx=$(command -v npx)

vdir="$cache/verdaccio-$VERDACCIO_VERSION"
if [ ! -x "$vdir/node_modules/.bin/verdaccio" ]; then
  if ! npm view "verdaccio@$VERDACCIO_VERSION" version >/dev/null 2>&1; then
    echo "check-npm: SKIPPED: the npm registry cannot be reached" >&2
    exit 3
  fi
  npm install --prefix "$vdir" --no-audit --no-fund --loglevel=error "verdaccio@$VERDACCIO_VERSION" >&2
fi

work=$(mktemp -d)
vpid=""
cleanup() {
  if [ -n "$vpid" ]; then kill "$vpid" 2>/dev/null || true; wait "$vpid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

fail() {
  echo "check-npm: FAILED: $*" >&2
  exit 1
}

# ---- pack ----------------------------------------------------------------------------------------
# The binary is stripped of debug information first when it has any (CI packs its debug build).
packed="$work/bin/mcp-manifest"
mkdir -p "$work/bin"
cp "$bin" "$packed"
if command -v objcopy >/dev/null && objcopy --strip-debug "$packed" 2>/dev/null; then :; fi
mapfile -t tarballs < <(python3 scripts/pack_npm.py --out "$work/dist" "linux-x64=$packed")
echo "-- packed: $(cd "$work/dist" && ls -s --block-size=K ./*.tgz | tr '\n' ' ')"

# ---- the throwaway registry ---------------------------------------------------------------------
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
registry="http://127.0.0.1:$port/"
cat >"$work/verdaccio.yaml" <<EOF
storage: $work/storage
auth:
  htpasswd:
    file: $work/htpasswd
uplinks: {}
max_body_size: 300mb
packages:
  '**':
    access: \$all
    publish: \$authenticated
log: { type: stdout, format: pretty, level: warn }
EOF
"$vdir/node_modules/.bin/verdaccio" --config "$work/verdaccio.yaml" --listen "127.0.0.1:$port" \
  >"$work/verdaccio.log" 2>&1 &
vpid=$!
for _ in $(seq 1 200); do
  if curl -fsS "${registry}-/ping" >/dev/null 2>&1; then break; fi
  kill -0 "$vpid" 2>/dev/null || { cat "$work/verdaccio.log" >&2; fail "verdaccio did not start"; }
  sleep 0.1
done
token=$(curl -fsS -X PUT -H 'content-type: application/json' \
  -d '{"name":"ci","password":"ci-password-not-secret"}' \
  "${registry}-/user/org.couchdb.user:ci" | python3 -c 'import json, sys; print(json.load(sys.stdin)["token"])')
printf '//127.0.0.1:%s/:_authToken=%s\n' "$port" "$token" >"$work/publish.npmrc"
for t in "${tarballs[@]}"; do
  NPM_CONFIG_USERCONFIG="$work/publish.npmrc" "$npm" publish "$t" --registry "$registry" \
    --loglevel=error >/dev/null || fail "npm publish $t"
done
echo "-- published ${#tarballs[@]} packages to verdaccio $VERDACCIO_VERSION at $registry"

# ---- as a user: a fresh HOME, an empty npm cache, only the local registry -----------------------
user_env() {
  env -i PATH="$(dirname "$node"):/usr/bin:/bin" HOME="$1" npm_config_registry="$registry" \
    npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false "${@:2}"
}
home="$work/home"
mkdir -p "$home/project/docs"
printf '# Notes\n' >"$home/project/docs/notes.md"
want=$("$bin" --version)

t0=$(date +%s.%N)
got=$(cd "$home" && user_env "$home" "$npx" -y mcp-manifest --version) || fail "npx -y mcp-manifest --version"
t1=$(date +%s.%N)
[ "$got" = "$want" ] || fail "npx -y mcp-manifest --version printed '$got', not '$want'"
echo "ok: npx -y mcp-manifest --version → $got ($(python3 -c "print(f'{$t1 - $t0:.1f}')") s from a fresh HOME)"

home2="$work/home2"
mkdir -p "$home2/project/docs"
printf '# Notes\n' >"$home2/project/docs/notes.md"
t0=$(date +%s.%N)
(cd "$home2/project" && user_env "$home2" "$npx" -y mcp-manifest init >/dev/null) || fail "npx -y mcp-manifest init"
t1=$(date +%s.%N)
[ -f "$home2/project/mcp-server.toml" ] || fail "npx -y mcp-manifest init wrote no mcp-server.toml"
(cd "$home2/project" && user_env "$home2" "$npx" mcp-manifest check >/dev/null) ||
  fail "the manifest init wrote does not pass check"
echo "ok: npx -y mcp-manifest init → mcp-server.toml that check accepts ($(python3 -c "print(f'{$t1 - $t0:.1f}')") s from a fresh HOME to init done)"

# stdio through the launcher: an initialize request answered, then EOF ends the server.
answer=$(cd "$home2/project" && printf '%s\n' \
  '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"check-npm","version":"1"}}}' |
  user_env "$home2" "$npx" mcp-manifest serve) || fail "serve through the launcher"
grep -q '"protocolVersion":"2025-11-25"' <<<"$answer" || fail "no initialize answer through the launcher: $answer"
echo "ok: an MCP session over stdio through the launcher"

status=0
(cd "$home2/project" && user_env "$home2" "$npx" mcp-manifest check no-such.toml >/dev/null 2>&1) || status=$?
direct=0
(cd "$home2/project" && "$bin" check no-such.toml >/dev/null 2>&1) || direct=$?
[ "$status" = "$direct" ] && [ "$status" != 0 ] || fail "exit code through the launcher $status, the binary's $direct"
echo "ok: the binary's exit code ($status) passes through the launcher"

# ---- the launcher's messages ---------------------------------------------------------------------
launcher=$(find "$home2/.npm/_npx" -path '*/node_modules/mcp-manifest/bin/mcp-manifest.js' | head -1)
[ -n "$launcher" ] || fail "no launcher in npx's cache"
msg=$("$node" -e "Object.defineProperty(process, 'arch', { value: 'riscv64' }); require(process.argv[1])" "$launcher" 2>&1) &&
  fail "the launcher ran on an unsupported platform"
grep -q "no prebuilt binary for linux-riscv64" <<<"$msg" || fail "unclear message on another platform: $msg"
echo "ok: another platform: $msg"
omit="$work/omit"
mkdir -p "$omit"
(cd "$omit" && user_env "$home2" "$npm" install --omit=optional --loglevel=error mcp-manifest >/dev/null) ||
  fail "npm install --omit=optional mcp-manifest"
msg=$(cd "$omit" && user_env "$home2" "$omit/node_modules/.bin/mcp-manifest" --version 2>&1) &&
  fail "the launcher ran without its platform package"
grep -q "@mcp-manifest/linux-x64, which holds the binary for this platform, is not installed" <<<"$msg" ||
  fail "unclear message without the platform package: $msg"
echo "ok: platform package omitted: $msg"
# MCP_MANIFEST_BINARY runs another binary (here `env`), which learns it was started by npm.
msg=$(cd "$home2/project" && user_env "$home2" MCP_MANIFEST_BINARY=/usr/bin/env "$npx" mcp-manifest) ||
  fail "the launcher with MCP_MANIFEST_BINARY=/usr/bin/env"
grep -qx "MCP_MANIFEST_LAUNCHER=npm:mcp-manifest@${want#mcp-manifest }" <<<"$msg" ||
  fail "the binary was not told it runs through npm: $msg"
echo "ok: MCP_MANIFEST_BINARY runs another binary, told MCP_MANIFEST_LAUNCHER=npm:mcp-manifest@${want#mcp-manifest }"
echo "check-npm: every check passed"
