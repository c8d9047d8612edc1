#!/usr/bin/env bash
# setup.sh: installs what fatlink needs to build and test on Debian 12.
#
# Idempotent and non-interactive: packages already installed are not
# touched, and apt-get runs only when something is missing. Checks the tools
# it cannot install (the CUDA toolkit, a rustc whose LLVM fatlink can read)
# and says what to do when one is missing.
set -euo pipefail

PACKAGES=(
  llvm-22 llvm-22-dev llvm-22-tools clang-22 lld-22 libclang-22-dev
  libelf-dev libzstd-dev zstd libgtest-dev libgmock-dev
  bazel-bootstrap bazel-rules-java python3 binutils
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

CUDA="${CUDA_PATH:-/usr/local/cuda}"
if [ ! -x "$CUDA/bin/ptxas" ] || [ ! -f "$CUDA/nvvm/libdevice/libdevice.10.bc" ]; then
  echo "setup: error: no CUDA toolkit at $CUDA (ptxas, libdevice): install CUDA 12.x or 13.x, or set CUDA_PATH" >&2
  exit 1
fi

export PATH="$HOME/.cargo/bin:$PATH"
if ! command -v rustc >/dev/null; then
  echo "setup: error: rustc not found: install Rust with rustup (https://rustup.rs)" >&2
  exit 1
fi
rust_llvm=$(rustc -vV | sed -n 's/^LLVM version: \([0-9]*\).*/\1/p')
if [ -z "$rust_llvm" ] || [ "$rust_llvm" -gt 22 ]; then
  echo "setup: error: rustc uses LLVM ${rust_llvm:-?}; fatlink reads bitcode from LLVM <= 22: use a rustc built on LLVM 22 (rustc 1.95)" >&2
  exit 1
fi
