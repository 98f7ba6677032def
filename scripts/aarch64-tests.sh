#!/usr/bin/env bash
# The library's unit tests built for aarch64 and run under qemu-user, so that the
# architecture-dependent code (the socket queries and the libc structure layouts they use) is compiled, linted (-D warnings) and run on every CI run, not only
# on x86_64. (Tool processes no longer make raw system calls: src/process/ has nothing
# architecture-dependent, and its tests start programs only in the integration tests.)
#
# What qemu-user cannot show, and how the run deals with it (MCP_MANIFEST_TEST_EMULATED=1 tells
# the tests they run emulated):
# - nothing this crate does needs a special case today (no raw system calls, no clone, no
#   pwritev2); the variable stays so a test can say what the emulator cannot show.
#
#   scripts/aarch64-tests.sh
#
# Installs what it needs when missing: the rust-std of aarch64-unknown-linux-gnu (rustup), the
# cross C compiler (SQLite and libgit2 are built from source) and qemu-user (Debian's). Exits 0
# when the tests pass, 3 (saying so) when one of those cannot be installed, 1 on a failure.
set -euo pipefail
cd "$(dirname "$0")/.."

target=aarch64-unknown-linux-gnu
if ! rustup target list --installed 2>/dev/null | grep -qx "$target"; then
  echo "-- rustup target add $target"
  if ! rustup target add "$target"; then
    echo "aarch64-tests: SKIPPED: the $target standard library could not be installed" >&2
    exit 3
  fi
fi
if ! command -v aarch64-linux-gnu-gcc >/dev/null || ! command -v qemu-aarch64 >/dev/null ||
  [ ! -d /usr/aarch64-linux-gnu/lib ]; then
  echo "-- installing gcc-aarch64-linux-gnu, libc6-dev-arm64-cross, qemu-user (Debian)"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  if ! { $SUDO apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
      gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user >/dev/null; }; then
    echo "aarch64-tests: SKIPPED: the cross compiler or qemu-user could not be installed" >&2
    exit 3
  fi
fi

export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
export CC_aarch64_unknown_linux_gnu=aarch64-linux-gnu-gcc
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="qemu-aarch64 -L /usr/aarch64-linux-gnu"
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUSTFLAGS="-D warnings"
export MCP_MANIFEST_TEST_EMULATED=1
cargo test --locked --target "$target" --lib
