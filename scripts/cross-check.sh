#!/usr/bin/env bash
# Lints the crate for Windows and macOS from this Linux machine (issue 31) and prints the errors
# per source file, so that each module's owner sees what is left on each platform:
#
#   scripts/cross-check.sh [windows|macos|macos-arm|all] [--lib] [--verbose]
#
#   windows  x86_64-pc-windows-gnu  (C built by mingw-w64; the test binaries also link and run
#            under Wine: scripts/windows-tests.sh)
#   macos    aarch64-apple-darwin and x86_64-apple-darwin (the vendored C of SQLite, libgit2 and
#            ring compiled by zig's clang; linking needs Apple's SDK, which only the release
#            workflow's macOS runners have, so macOS is linted and type-checked, never linked);
#   macos-arm  aarch64-apple-darwin alone (what CI lints: the crate has no code that differs
#            between the two Apple architectures, only between operating systems)
#   all      both (the default)
#
# Each target runs `cargo clippy --all-targets --locked --target T -- -D warnings` (`--lib`: the
# library and binary only, faster while porting), writes the whole output to
# target/cross-check/T.log (`--verbose` also prints it) and ends with the count of errors per
# file. Errors in tests/ and benches/ show only once the library compiles for that target.
#
# Installs what it needs when missing, downloads cached outside the clone
# (MCP_MANIFEST_CI_CACHE, default ~/.cache/mcp-manifest-ci): the targets' standard libraries
# (rustup), Debian's gcc-mingw-w64-x86-64, zig from PyPI (ziglang, pinned below).
# Exit: 0 when every target is clean, 1 when one has errors, 3 (saying so) when something it
# needs cannot be installed (a registry cannot be reached).
set -euo pipefail
cd "$(dirname "$0")/.."

ZIGLANG_VERSION=0.15.2
cache="${MCP_MANIFEST_CI_CACHE:-$HOME/.cache/mcp-manifest-ci}"

which=all
scope=(--all-targets)
verbose=0
if [ "${1:-}" = --summarize ]; then summarize_only=1; else summarize_only=0; fi
for arg in "$@"; do
  [ "$summarize_only" = 0 ] || break
  case "$arg" in
    windows|macos|macos-arm|all) which=$arg ;;
    --lib) scope=(--lib --bins) ;;
    --verbose|-v) verbose=1 ;;
    -h|--help) sed -n '2,26p' "$0"; exit 0 ;;
    *) echo "cross-check: unexpected argument '$arg' (see --help)" >&2; exit 2 ;;
  esac
done

skip() {
  echo "cross-check: SKIPPED: $*" >&2
  exit 3
}

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

need_target() {
  if ! rustup target list --installed 2>/dev/null | grep -qx "$1"; then
    echo "-- rustup target add $1" >&2
    rustup target add "$1" >&2 || skip "the $1 standard library could not be installed"
  fi
}

need_mingw() {
  if ! command -v x86_64-w64-mingw32-gcc >/dev/null; then
    echo "-- installing gcc-mingw-w64-x86-64 (Debian)" >&2
    { $SUDO apt-get update -qq &&
      DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
        gcc-mingw-w64-x86-64 >/dev/null; } || skip "mingw-w64 could not be installed"
  fi
  export CC_x86_64_pc_windows_gnu=x86_64-w64-mingw32-gcc
  export AR_x86_64_pc_windows_gnu=x86_64-w64-mingw32-ar
  export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER=x86_64-w64-mingw32-gcc
}

# zig's clang as the C compiler for the Apple targets, through two small wrappers (cc-rs passes
# a clang `--target=` of its own; zig wants its `-target` spelling, so the wrapper drops it).
need_zig() {
  local dir="$cache/ziglang-$ZIGLANG_VERSION"
  if [ ! -x "$dir/ziglang/zig" ]; then
    echo "-- installing zig (PyPI ziglang==$ZIGLANG_VERSION) into $dir" >&2
    local py
    py=$(command -v python3 || command -v python) || skip "python3 is not installed"
    mkdir -p "$cache"
    rm -rf "$dir.part"
    PIP_ROOT_USER_ACTION=ignore "$py" -m pip install --quiet --disable-pip-version-check --no-warn-script-location \
      --target "$dir.part" "ziglang==$ZIGLANG_VERSION" >&2 ||
      skip "zig could not be installed from PyPI"
    mv "$dir.part" "$dir"
  fi
  local arch
  for arch in aarch64 x86_64; do
    local wrap="$dir/$arch-macos-cc"
    cat >"$wrap.tmp" <<EOF
#!/bin/sh
# zig cc for $arch-apple-darwin (written by scripts/cross-check.sh)
for a in "\$@"; do
  shift
  case "\$a" in --target=*|-arch|arm64|x86_64|-mmacosx-version-min=*) continue ;; esac
  set -- "\$@" "\$a"
done
exec "$dir/ziglang/zig" cc -target $arch-macos "\$@"
EOF
    chmod +x "$wrap.tmp"
    mv "$wrap.tmp" "$wrap"
    cat >"$dir/ar.tmp" <<EOF
#!/bin/sh
exec "$dir/ziglang/zig" ar "\$@"
EOF
    chmod +x "$dir/ar.tmp"
    mv "$dir/ar.tmp" "$dir/ar"
    local t="${arch}_apple_darwin"
    export "CC_$t=$wrap"
    export "AR_$t=$dir/ar"
  done
}

# Prints the errors per file of one clippy log (short message format) and returns their total.
summarize() {
  local target=$1 log=$2
  local total
  total=$({ grep -E '^[^ ]+:[0-9]+:[0-9]+: error' "$log" || true; } | sort -u | wc -l)
  local global
  global=$(grep -E '^error(\[E[0-9]+\])?: ' "$log" |
    grep -vcE '^error: (could not compile|aborting|build failed)' || true)
  echo "== $target: $total errors in source files${global:+, $global other}"
  if [ "$total" -gt 0 ]; then
    grep -E '^[^ ]+:[0-9]+:[0-9]+: error' "$log" | sort -u | cut -d: -f1 | sort | uniq -c |
      sort -rn | awk '{ printf "   %5d  %s\n", $1, $2 }'
  fi
  if [ "$global" -gt 0 ]; then
    grep -E '^error(\[E[0-9]+\])?: ' "$log" |
      grep -vE '^error: (could not compile|aborting|build failed)' | head -5 | sed 's/^/   /'
  fi
  return 0
}

# `--summarize LOG TARGET`: only the summary of a log written elsewhere (scripts/windows-tests.sh).
if [ "$summarize_only" = 1 ]; then
  summarize "$3" "$2"
  exit 0
fi

targets=()
case "$which" in
  windows) targets=(x86_64-pc-windows-gnu) ;;
  macos) targets=(aarch64-apple-darwin x86_64-apple-darwin) ;;
  macos-arm) targets=(aarch64-apple-darwin) ;;
  all) targets=(x86_64-pc-windows-gnu aarch64-apple-darwin x86_64-apple-darwin) ;;
esac

for t in "${targets[@]}"; do need_target "$t"; done
case "$which" in windows|all) need_mingw ;; esac
case "$which" in macos|macos-arm|all) need_zig ;; esac

mkdir -p target/cross-check
failed=0
for t in "${targets[@]}"; do
  log="target/cross-check/$t.log"
  start=$(date +%s)
  status=0
  cargo clippy "${scope[@]}" --locked --target "$t" --message-format=short -- -D warnings \
    >"$log" 2>&1 || status=$?
  if [ "$verbose" = 1 ]; then cat "$log"; fi
  summarize "$t" "$log"
  echo "   ($(($(date +%s) - start)) s; the whole output: $log)"
  if [ "$status" -ne 0 ]; then
    failed=1
    if ! grep -qE 'error' "$log"; then tail -20 "$log"; fi
  fi
done
exit "$failed"
