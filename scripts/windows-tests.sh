#!/usr/bin/env bash
# The test suite built for Windows (x86_64-pc-windows-gnu) and run under Wine, from this Linux
# machine (issue 31):
#
#   scripts/windows-tests.sh                  the whole suite (library, binary, tests/it) under
#                                             Wine but the tests Wine cannot run (WINE_SKIPS
#                                             below, each with its reason); prints the count
#                                             run/passed and fails on any failure or when fewer
#                                             pass than the floor below; the SQL engines'
#                                             tests against PostgreSQL and MariaDB started here
#                                             (DB_SKIPS below). What CI runs (.ci/run, the pack
#                                             block): about 4 min on 2 cores
#   scripts/windows-tests.sh test ARGS...     `cargo test --target x86_64-pc-windows-gnu ARGS`
#                                             under Wine, for one module while porting:
#       scripts/windows-tests.sh test --test it -- files::
#       scripts/windows-tests.sh test --lib process
#   scripts/windows-tests.sh run ARGS...      the Windows binary (debug) under Wine:
#       scripts/windows-tests.sh run check examples/notes/mcp-server.toml
#   scripts/windows-tests.sh sdk              the official Python SDK client (mcp, PyPI) driving
#                                             the Windows binary under Wine over stdio, in both
#                                             protocol eras (scripts/wine/stdio_interop.py)
#   scripts/windows-tests.sh setup            installs what the others need and makes the Wine
#                                             prefix and the helper (CI times it apart)
#   scripts/windows-tests.sh env              prints the variables that make `cargo test
#                                             --target x86_64-pc-windows-gnu` run under Wine, to
#                                             `eval` in a shell
#
# The tests see MCP_MANIFEST_TEST_WINE=1 and MCP_MANIFEST_TEST_HELPER (the test helper program,
# tests/helper/proc_helper.rs, cross-built here: no rustc runs under Wine). What Wine cannot
# show (it is not Windows): renaming over an open file is refused (newer Windows allows it),
# links Wine makes are Unix symlinks read back as `Z:\…` paths (tests make none there), no
# `git` program exists in the Windows path, and CI checks the -gnu target while a release may
# ship -msvc; the release workflow (.github/workflows/release.yml) builds and runs the whole
# suite on a real Windows runner for those.
#
# Installs what it needs when missing: the x86_64-pc-windows-gnu standard library (rustup),
# Debian's gcc-mingw-w64-x86-64 and wine/wine64. Debian's Wine 8.0 cannot start a Rust 1.78+
# program (std imports ProcessPrng from bcryptprimitives.dll, which Wine 8.0 lacks): a stand-in
# DLL (scripts/wine/bcryptprimitives.c) is built with mingw into the harness's own Wine prefix,
# never into a release. The prefix and downloads are cached outside the clone
# (MCP_MANIFEST_CI_CACHE, default ~/.cache/mcp-manifest-ci).
# Exit: 0 when the tests pass, 1 on a failure (a build error included, loudly), 3 (saying so)
# only when a package registry cannot be reached.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

# The count of passing tests under Wine must not fall below this (the whole suite). Raise it in
# the commit that makes more pass (each run prints its count).
FLOOR_PASSED=576

# Tests of tests/it that Wine cannot run, each with why (libtest `--skip` filters, matched
# against the test names of tests/it only).
WINE_SKIPS=(
  "git::|compares with the git CLI and builds its repositories with it: no git under Wine (the release's Windows runner has it)"
  "hygiene::nothing_generated_is_tracked|asks git ls-files: no git under Wine"
  "watch::a_change_right_after_start_up_is_never_lost|Wine's ReadDirectoryChangesW adds a tree's watches folder by folder after it returns (inotify), so a change right then is missed; Windows watches the tree at once"
  "watch::a_file_created_after_listing_a_big_tree_is_announced|the same with 10 000 folders (Wine's recursive watch is an inotify watch per folder)"
  "tools::powershell_scripts_print_values_from_the_environment_literally_and_run_none|Wine's powershell.exe is a stub that runs nothing (the release's Windows runner runs it)"
  "http::each_session_has_at_most_256_requests_in_flight|starts 256 tool processes at once, which Wine's process start (through wineserver) makes slower than the test's deadlines"
)

MCP_PY_VERSION=2.3.0   # mcp (PyPI), the official Python SDK, as scripts/http-interop.sh

target=x86_64-pc-windows-gnu
cache="${MCP_MANIFEST_CI_CACHE:-$HOME/.cache/mcp-manifest-ci}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

skip() {
  echo "windows-tests: SKIPPED: $*" >&2
  exit 3
}

setup() {
  if ! rustup target list --installed 2>/dev/null | grep -qx "$target"; then
    echo "-- rustup target add $target" >&2
    rustup target add "$target" >&2 || skip "the $target standard library could not be installed"
  fi
  local pkgs=()
  command -v x86_64-w64-mingw32-gcc >/dev/null || pkgs+=(gcc-mingw-w64-x86-64)
  { command -v wine >/dev/null && [ -d /usr/lib/x86_64-linux-gnu/wine/x86_64-windows ]; } ||
    pkgs+=(wine wine64)
  if [ ${#pkgs[@]} -gt 0 ]; then
    echo "-- installing ${pkgs[*]} (Debian)" >&2
    local t0=$SECONDS
    { $SUDO apt-get update -qq &&
      DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
        "${pkgs[@]}" >/dev/null; } || skip "${pkgs[*]} could not be installed"
    echo "-- installed in $((SECONDS - t0)) s" >&2
  fi

  # The Wine prefix, made once per stand-in DLL source and Wine version.
  local key
  key=$( { cat scripts/wine/bcryptprimitives.c scripts/wine/bcryptprimitives.def; wine --version 2>/dev/null; } |
    sha256sum | cut -c1-12)
  prefix="$cache/wine-prefix-$key"
  export WINEPREFIX="$prefix" WINEARCH=win64 WINEDEBUG=-all
  # No Mono or Gecko installer dialogs.
  export WINEDLLOVERRIDES="mscoree,mshtml="
  if [ ! -f "$prefix/.ready" ]; then
    echo "-- creating the Wine prefix $prefix" >&2
    local t0=$SECONDS
    rm -rf "$prefix"
    mkdir -p "$cache"
    wineboot -i >/dev/null 2>&1 || true
    wineserver -w
    [ -d "$prefix/drive_c/windows/system32" ] || { echo "windows-tests: wineboot made no prefix" >&2; exit 1; }
    x86_64-w64-mingw32-gcc -O2 -shared -o "$prefix/drive_c/windows/system32/bcryptprimitives.dll" \
      scripts/wine/bcryptprimitives.c scripts/wine/bcryptprimitives.def -ladvapi32
    touch "$prefix/.ready"
    echo "-- prefix ready in $((SECONDS - t0)) s" >&2
  fi

  # The test helper program (tests/helper/proc_helper.rs), built for Windows: the tests find it
  # through MCP_MANIFEST_TEST_HELPER (there is no rustc under Wine to build it).
  mkdir -p target/windows-tests
  helper="$root/target/windows-tests/proc-helper.exe"
  if [ ! -f "$helper" ] || [ tests/helper/proc_helper.rs -nt "$helper" ]; then
    rustc --target "$target" -C linker=x86_64-w64-mingw32-gcc --edition 2021 -C opt-level=1 \
      -o "$helper.part" tests/helper/proc_helper.rs
    mv "$helper.part" "$helper"
  fi
  # Wine's Z: drive is the Unix root.
  local helper_win
  helper_win="Z:$(printf '%s' "$helper" | tr / '\\')"

  # Cargo runs each test binary through this wrapper.
  runner="$root/target/windows-tests/wine-run"
  cat >"$runner.tmp" <<EOF
#!/bin/sh
# Runs a Windows program under the test Wine prefix (written by scripts/windows-tests.sh).
export WINEPREFIX="$prefix" WINEARCH=win64 WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
export MCP_MANIFEST_TEST_WINE=1
export MCP_MANIFEST_TEST_HELPER='$helper_win'
exec wine "\$@"
EOF
  chmod +x "$runner.tmp"
  mv "$runner.tmp" "$runner"

  export CC_x86_64_pc_windows_gnu=x86_64-w64-mingw32-gcc
  export AR_x86_64_pc_windows_gnu=x86_64-w64-mingw32-ar
  export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER=x86_64-w64-mingw32-gcc
  export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER="$runner"
  export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUSTFLAGS="-D warnings"
}

# Runs `cargo test` for Windows with ARGS; the output goes to the terminal and to $log (appended
# to when APPEND=1).
run_tests() {
  mkdir -p target/windows-tests
  log=target/windows-tests/cargo-test.log
  local status=0
  if [ "${APPEND:-0}" != 1 ]; then : >"$log"; fi
  cargo test --locked --target "$target" --message-format=short "$@" 2>&1 | tee -a "$log" ||
    status=${PIPESTATUS[0]}
  # Wine's server outlives the last program by a few seconds; end ours now.
  wineserver -k 2>/dev/null || true
  if grep -qE '^error: could not compile' "$log"; then
    echo "windows-tests: FAILED: the crate does not build for $target; errors per file:" >&2
    scripts/cross-check.sh --summarize "$log" "$target" >&2
    return 1
  fi
  return "$status"
}

# Sums libtest's closing lines of $log: "test result: ok. 5 passed; 1 failed; 2 ignored; ...".
count() {
  awk '/^test result:/ {
         for (i = 1; i <= NF; i++) {
           if ($(i) ~ /^passed;?$/) p += $(i - 1)
           if ($(i) ~ /^failed;?$/) f += $(i - 1)
           if ($(i) ~ /^ignored;?$/) g += $(i - 1)
         }
       }
       END { printf "%d %d %d\n", p, f, g }' "$log"
}

# The `--skip` arguments of WINE_SKIPS, and the list printed with the reasons.
skip_args() {
  local entry
  for entry in "${WINE_SKIPS[@]}"; do
    printf -- '--skip\n%s\n' "${entry%%|*}"
  done
}
print_skips() {
  local entry
  echo "windows-tests: not run under Wine (tests/it):"
  for entry in "${WINE_SKIPS[@]}" "${DB_SKIPS[@]}"; do
    echo "   ${entry%%|*}  (${entry#*|})"
  done
}

# The SQL engines' tests (tests/it's postgres::, mysql::, engines::{postgres,mysql}::) start
# their servers from the system's Unix binaries, which a Windows program cannot: here they get a
# PostgreSQL cluster and a MariaDB server started on the Linux side, on loopback, named by
# MCP_MANIFEST_TEST_PG_PORT and MCP_MANIFEST_TEST_MARIADB_PORT (tests/it/postgres/cluster.rs
# `external_port`), and run with libtest's --ignored (on Windows they are ignored otherwise).
# Those that stop and start their own server cannot use these, each with why:
DB_SKIPS=(
  "postgres::a_database_that_is_down_is_each_requests_error_and_comes_back|stops and starts a cluster of its own"
  "mysql::a_server_that_goes_away_is_each_requests_error_and_comes_back|stops and starts a server of its own"
)
DB_FILTERS=(postgres:: mysql::)

# A free port on loopback.
port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Starts the two servers (as `nobody` when root: PostgreSQL refuses root), stopped on exit.
db_dir="" pg_pid="" my_pid=""
start_db_servers() {
  local pgbin="${PG_BIN:-}"
  if [ -z "$pgbin" ]; then
    pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
  fi
  local mybin="${MARIADB_BIN:-}" mariadbd install
  mariadbd=${mybin:+$mybin/}mariadbd
  install=${mybin:+$mybin/}mariadb-install-db
  [ -z "$mybin" ] && [ -x /usr/sbin/mariadbd ] && mariadbd=/usr/sbin/mariadbd
  if [ ! -x "$pgbin/initdb" ] || ! command -v "$mariadbd" >/dev/null || ! command -v "$install" >/dev/null; then
    echo "windows-tests: FAILED: the SQL engines' tests need PostgreSQL's and MariaDB's server" \
      "binaries (Debian: postgresql-15, mariadb-server; .ci/run installs them)" >&2
    exit 1
  fi
  db_dir=$(mktemp -d /tmp/mcp-wine-db.XXXXXX)
  trap stop_db_servers EXIT
  chmod 755 "$db_dir"
  local as=()
  if [ "$(id -u)" -eq 0 ]; then
    chown nobody "$db_dir"
    as=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
  fi
  printf '%s' 'pg-Secret-d0nt-print' >"$db_dir/pw"   # tests/it/postgres/cluster.rs PASSWORD
  chmod 644 "$db_dir/pw"
  HOME=/tmp "${as[@]}" "$pgbin/initdb" -D "$db_dir/pg" -U postgres --pwfile "$db_dir/pw" \
    --auth-local=trust --auth-host=scram-sha-256 --encoding=UTF8 --locale=C --no-sync \
    >"$db_dir/pg-init.log" 2>&1 || { cat "$db_dir/pg-init.log" >&2; exit 1; }
  MCP_MANIFEST_TEST_PG_PORT=$(port)
  HOME=/tmp "${as[@]}" "$pgbin/postgres" -D "$db_dir/pg" -p "$MCP_MANIFEST_TEST_PG_PORT" \
    -k "$db_dir" -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off \
    -c full_page_writes=off -c max_connections=60 -c shared_buffers=16MB \
    </dev/null >"$db_dir/pg.log" 2>&1 &
  pg_pid=$!
  HOME=/tmp "${as[@]}" "$install" --no-defaults --datadir="$db_dir/my" \
    --auth-root-authentication-method=normal --skip-test-db --skip-name-resolve \
    >"$db_dir/my-init.log" 2>&1 || { cat "$db_dir/my-init.log" >&2; exit 1; }
  MCP_MANIFEST_TEST_MARIADB_PORT=$(port)
  HOME=/tmp "${as[@]}" "$mariadbd" --no-defaults --datadir="$db_dir/my" \
    --port="$MCP_MANIFEST_TEST_MARIADB_PORT" --socket="$db_dir/my.sock" \
    --pid-file="$db_dir/my.pid" --log-error="$db_dir/my.log" --bind-address=127.0.0.1 \
    --skip-name-resolve --skip-log-bin --innodb-buffer-pool-size=32M \
    --innodb-log-file-size=16M --innodb-flush-log-at-trx-commit=0 --max-connections=100 \
    --max-allowed-packet=64M </dev/null >/dev/null 2>&1 &
  my_pid=$!
  export MCP_MANIFEST_TEST_PG_PORT MCP_MANIFEST_TEST_MARIADB_PORT
  # The tests wait until each accepts a connection (`Cluster::start`, `Server::start`).
  echo "== PostgreSQL on 127.0.0.1:$MCP_MANIFEST_TEST_PG_PORT, MariaDB on 127.0.0.1:$MCP_MANIFEST_TEST_MARIADB_PORT ($db_dir)"
}

stop_db_servers() {
  [ -n "$db_dir" ] || return 0
  # PostgreSQL's fast shutdown (SIGINT: clients cut off), MariaDB's shutdown (SIGTERM).
  kill -INT "$pg_pid" 2>/dev/null || true
  kill -TERM "$my_pid" 2>/dev/null || true
  wait "$pg_pid" "$my_pid" 2>/dev/null || true
  rm -rf "$db_dir"
  db_dir=""
}

# Builds the test binaries (timed apart from running them), runs the library's tests, then
# tests/it but WINE_SKIPS, then the SQL engines' tests against the servers above but DB_SKIPS,
# and checks the count against FLOOR.
suite() {
  local floor=$1
  local start=$SECONDS status=0
  echo "== building the tests for $target"
  run_tests --no-run --tests || { echo "windows-tests: FAILED: the build" >&2; exit 1; }
  echo "== built in $((SECONDS - start)) s"
  local ran=$SECONDS
  APPEND=1 run_tests --no-fail-fast --lib || status=$?
  local skips=()
  mapfile -t skips < <(skip_args)
  APPEND=1 run_tests --no-fail-fast --test it -- "${skips[@]}" || status=$?
  local p0 f0 g0
  read -r p0 f0 g0 < <(count)
  start_db_servers
  local db_skips=() entry
  for entry in "${DB_SKIPS[@]}"; do db_skips+=(--skip "${entry%%|*}"); done
  APPEND=1 run_tests --no-fail-fast --test it -- --ignored "${DB_FILTERS[@]}" "${db_skips[@]}" ||
    status=$?
  stop_db_servers
  read -r passed failed ignored < <(count)
  # The SQL engines' tests ran in the second pass: no longer ignored.
  local sql=$((passed + failed - p0 - f0))
  ignored=$((g0 - sql))
  print_skips
  echo "windows-tests: $((passed + failed)) tests run under Wine ($sql of them the SQL engines' against the servers started here): $passed passed, $failed failed, $ignored ignored (floor: $floor passed; run in $((SECONDS - ran)) s)"
  if [ "$status" -ne 0 ] || [ "$failed" -gt 0 ]; then
    echo "windows-tests: FAILED (see above; the whole output: target/windows-tests/cargo-test.log)" >&2
    exit 1
  fi
  if [ "$passed" -lt "$floor" ]; then
    echo "windows-tests: FAILED: $passed tests passed under Wine, below the floor of $floor" >&2
    exit 1
  fi
}

mode=${1:-all}
[ $# -gt 0 ] && shift
case "$mode" in
  all)
    setup
    suite "$FLOOR_PASSED"
    ;;
  setup)
    setup
    echo "windows-tests: ready (prefix $WINEPREFIX; $(wine --version))"
    ;;
  test)
    setup
    run_tests "$@"
    ;;
  run)
    setup
    cargo build --locked --target "$target" --bin mcp-manifest >&2
    "$runner" "target/$target/debug/mcp-manifest.exe" "$@"
    ;;
  env)
    setup
    for v in WINEPREFIX WINEARCH WINEDEBUG WINEDLLOVERRIDES CC_x86_64_pc_windows_gnu \
      AR_x86_64_pc_windows_gnu CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER \
      CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER; do
      printf 'export %s=%q\n' "$v" "${!v}"
    done
    ;;
  sdk)
    setup
    exe=${1:-}
    if [ -z "$exe" ]; then
      cargo build --locked --target "$target" --bin mcp-manifest >&2
      exe="target/$target/debug/mcp-manifest.exe"
    fi
    py_dir="$cache/py-mcp-$MCP_PY_VERSION"
    py="$py_dir/bin/python"
    if [ ! -x "$py" ] || ! "$py" -c "import mcp" 2>/dev/null; then
      python3 -m venv "$py_dir" ||
        { echo "windows-tests: python3 -m venv failed (apt-get install python3-venv)" >&2; exit 1; }
      if ! "$py_dir/bin/pip" install -q "mcp==$MCP_PY_VERSION" >&2; then
        rm -rf "$py_dir"
        skip "PyPI cannot be reached (or mcp==$MCP_PY_VERSION is missing)"
      fi
    fi
    status=0
    "$py" scripts/wine/stdio_interop.py "$runner" "$(realpath "$exe")" || status=$?
    wineserver -k 2>/dev/null || true
    exit "$status"
    ;;
  *)
    echo "windows-tests: unknown mode '$mode' (see the top of $0)" >&2
    exit 2
    ;;
esac
