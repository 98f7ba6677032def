#!/usr/bin/env bash
# The library's unit tests built for aarch64 and run under qemu-user, so that the aarch64 half
# of the raw system calls (src/process/sys.rs: `svc 0`, used by every supervisor) and the rest
# of the architecture-dependent code are compiled, linted (-D warnings) and run on every CI run,
# not only on x86_64.
#
# What qemu-user cannot show, and how the run deals with it (MCP_MANIFEST_TEST_EMULATED=1 tells
# the tests they run emulated):
# - it refuses `clone(CLONE_VM)` for a process that is not a thread (EINVAL), so the trial clone
#   in src/process/launch.rs must pick the forked supervisor (a test checks that it does);
# - it runs `clone(CLONE_VM | CLONE_VFORK)` as a plain fork, so an `execve` failure written by
#   the child into shared memory never reaches the supervisor, which reports exit 127 instead
#   of the missing program: the two tests of those messages are skipped here (they run natively).
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
cargo test --locked --target "$target" --lib -- \
  --skip process::tests::missing_programs_and_folders_are_named \
  --skip process::tests::scripts_without_an_interpreter_line_run_in_sh_and_a_missing_interpreter_is_named
