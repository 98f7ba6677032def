#!/usr/bin/env bash
# The build's weight, measured rather than typed: how many crates a release build compiles, how
# long a fresh one takes, how big the binary and the desktop bundle are.
#
#   scripts/sizes.sh            crates; the binary and bundle sizes of target/release (built
#                               first if needed, incrementally)
#   scripts/sizes.sh --build    also a fresh `cargo build --release --locked` into a temporary
#                               target directory (deleted after), timed: CPU seconds (user+sys,
#                               the figure that does not depend on what else the machine runs),
#                               wall time, the load average before and after
#   scripts/sizes.sh --build --readme
#                               the same, and rewrites README.md's two generated blocks
#                               (<!-- sizes:build --> and <!-- sizes:bundle -->) with the figures
#   scripts/sizes.sh --check    only the crate count, failing above MAX_CRATES (CI: cheap, catches
#                               a dependency that brings a tree of crates)
#
# The budget (issue 32): a fresh release build ≤ 600 CPU-seconds, a stripped binary ≤ 20 MB;
# --build exits 1 when a figure is over it. The bundle is packed by scripts/pack-mcpb.sh when
# Node.js and npm are there (else its size is estimated as the binary deflated, which is what
# a .mcpb holds, and the line says so). Needs cargo, python3, GNU time (/usr/bin/time).
set -euo pipefail
cd "$(dirname "$0")/.."

# Crates of the host's release build (normal and build dependencies, each name+version once).
MAX_CRATES=245
MAX_CPU_SECONDS=600
MAX_BINARY_BYTES=20000000

build=0 readme=0 check=0
for a in "$@"; do
  case "$a" in
    --build) build=1 ;;
    --readme) readme=1 ;;
    --check) check=1 ;;
    -h|--help) sed -n '2,23p' "$0"; exit 0 ;;
    *) echo "sizes: unexpected argument '$a' (see --help)" >&2; exit 2 ;;
  esac
done
if [ "$readme" = 1 ] && [ "$build" = 0 ]; then
  echo "sizes: --readme needs --build (the README's figures come from one run)" >&2
  exit 2
fi

crates=$(cargo tree --locked -e normal,build --prefix none | awk 'NF {print $1, $2}' | sort -u | wc -l)
echo "crates: $crates (release build of $(rustc -vV | sed -n 's/^host: //p'); ceiling $MAX_CRATES)"
if [ "$check" = 1 ]; then
  if [ "$crates" -gt "$MAX_CRATES" ]; then
    echo "sizes: $crates crates, more than the $MAX_CRATES this build allows (MAX_CRATES in $0):" >&2
    echo "       which dependency brought them? (cargo tree -e normal,build -i CRATE)" >&2
    exit 1
  fi
  exit 0
fi

over=()
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ "$build" = 1 ]; then
  [ -x /usr/bin/time ] || { echo "sizes: --build needs GNU time (/usr/bin/time; apt-get install time)" >&2; exit 2; }
  cargo fetch --locked >/dev/null   # downloads are not part of the build time
  tmp=target/sizes-build
  rm -rf "$tmp"
  trap 'rm -rf "$tmp"' EXIT
  load0=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo '?')
  start=$(date +%s)
  CARGO_TARGET_DIR=$tmp /usr/bin/time -f '%U %S' -o "$tmp.time" \
    cargo build --release --locked --quiet
  wall=$(( $(date +%s) - start ))
  load1=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo '?')
  cpu=$(awk '{printf "%d", $1 + $2 + 0.5}' "$tmp.time")
  rm -f "$tmp.time"
  bin=$tmp/release/mcp-manifest
  cores=$(nproc)
  echo "build: $cpu CPU-seconds (user+sys), $((wall / 60)) min $((wall % 60)) s wall on $cores cores, load average $load0 before, $load1 after (commit $commit)"
  [ "$cpu" -le "$MAX_CPU_SECONDS" ] || over+=("build: $cpu CPU-seconds > $MAX_CPU_SECONDS")
else
  cargo build --release --locked --quiet
  bin=target/release/mcp-manifest
fi

bytes=$(wc -c < "$bin")
mb() { python3 -c "print(f'{$1 / 1e6:.1f}')"; }
spaced() { python3 -c "print(f'{$1:,}'.replace(',', ' '))"; }
echo "binary: $(mb "$bytes") MB ($(spaced "$bytes") bytes, stripped by the release profile)"
[ "$bytes" -le "$MAX_BINARY_BYTES" ] || over+=("binary: $bytes bytes > $MAX_BINARY_BYTES")

bundle_how="packed by scripts/pack-mcpb.sh"
bundle=""
if command -v npm >/dev/null 2>&1; then
  out=$(mktemp -d)
  if path=$(scripts/pack-mcpb.sh --out "$out" "linux=$bin" 2>/dev/null); then
    bundle=$(wc -c < "$path")
  fi
  rm -rf "$out"
fi
if [ -z "$bundle" ]; then
  bundle_how="estimated: the binary deflated, as a .mcpb holds it (no npm to pack one)"
  bundle=$(python3 -c "import sys, zlib; print(len(zlib.compress(open(sys.argv[1], 'rb').read(), 9)))" "$bin")
fi
echo "bundle: $(mb "$bundle") MB ($(spaced "$bundle") bytes, Linux x86_64 .mcpb, $bundle_how)"

if [ "$readme" = 1 ]; then
  build_text="Measured by \`scripts/sizes.sh --build\` (commit $commit, $cores cores, load average $load0 → $load1): a fresh
\`cargo build --release --locked\` (what \`cargo install\` runs) compiles $crates crates in $cpu CPU-seconds
(user+sys), $((wall / 60)) min $((wall % 60)) s of wall time; the stripped binary is $(mb "$bytes") MB."
  bundle_text="The Linux x86_64 bundle is $(mb "$bundle") MB ($(spaced "$bundle") bytes; the stripped binary inside is
$(mb "$bytes") MB), measured by \`scripts/sizes.sh\`."
  python3 - "$build_text" "$bundle_text" <<'EOF'
import re, sys
text = open("README.md", encoding="utf-8").read()
for name, body in (("build", sys.argv[1]), ("bundle", sys.argv[2])):
    pattern = re.compile(r"(<!-- sizes:%s -->\n).*?(\n<!-- /sizes:%s -->)" % (name, name), re.S)
    if not pattern.search(text):
        sys.exit(f"sizes: README.md has no <!-- sizes:{name} --> … <!-- /sizes:{name} --> block")
    text = pattern.sub(lambda m: m.group(1) + body + m.group(2), text)
open("README.md", "w", encoding="utf-8").write(text)
EOF
  echo "README.md: the sizes blocks rewritten"
fi

if [ ${#over[@]} -gt 0 ]; then
  printf 'sizes: over budget: %s\n' "${over[@]}" >&2
  exit 1
fi
