#!/usr/bin/env bash
# setup.sh: installs what fatlink needs to build and test on Debian 12.
#
# Idempotent and non-interactive: packages already installed are not
# touched, and apt-get runs only when something is missing. Checks the tools
# it cannot install (the CUDA toolkit, a rustc whose LLVM fatlink can read)
# and says what to do when one is missing.
set -euo pipefail

# librust-cc-dev: the cc crate's source (cc 1.0.73), which test/cargo/cc-crate.test
# uses offline as a cargo directory source (docs/cargo.md). python3-venv:
# tests/bazel/remote_test.sh installs BuildGrid into a virtualenv.
PACKAGES=(
  llvm-22 llvm-22-dev llvm-22-tools clang-22 clang-tools-22 lld-22
  libclang-22-dev libelf-dev libzstd-dev zstd libgtest-dev libgmock-dev
  gcc g++ make xz-utils libclang-rt-22-dev
  bazel-bootstrap bazel-rules-java python3 python3-pip binutils curl time
  librust-cc-dev python3-venv
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

# zstd >= 1.5.7, built with threads: its compressor matches the one inside
# CUDA's fatbinary byte for byte, while Debian 12's 1.5.4 makes fatbins 1-2%
# larger (docs/packager.md), and a cubin over 32 MB is compressed by zstd's
# threads, which Debian's libzstd.a is built without. Built from Debian 13's
# source (the upstream release; about 30 s on 2 cores) into $DEPS/zstd;
# fatlink links it statically and the system's libzstd stays as it is.
DEPS="${FATLINK_DEPS_DIR:-$HOME/.cache/fatlink/deps}"
has_threads() { # a libzstd.a built with threads calls pthread_create
  case "$(nm -u "$1" 2>/dev/null)" in *pthread_create*) return 0 ;; *) return 1 ;; esac
}
if [ -z "${FATLINK_ZSTD_ROOT:-}" ] &&
   ! { [ -f "$DEPS/zstd/include/zstd.h" ] && has_threads "$DEPS/zstd/lib/libzstd.a"; }; then
  src="libzstd_1.5.7+dfsg.orig.tar.xz"
  sha=0c092ef267edce57ba7f3f2645c861f72eaf5e76273c6c3632869423464b90a5
  url="${FATLINK_DEBIAN_MIRROR:-http://deb.debian.org/debian}/pool/main/libz/libzstd/$src"
  echo "setup: building zstd 1.5.7 with threads ($url) into $DEPS/zstd"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  if ! curl -fsSL --retry 3 -o "$tmp/$src" "$url"; then
    echo "setup: error: could not download $url: set FATLINK_DEBIAN_MIRROR, or FATLINK_ZSTD_ROOT to a zstd >= 1.5.7 tree built with threads" >&2
    exit 1
  fi
  if ! echo "$sha  $tmp/$src" | sha256sum -c --status; then
    echo "setup: error: $src does not have the expected SHA-256 $sha" >&2
    exit 1
  fi
  tar -xJf "$tmp/$src" -C "$tmp"
  if ! make -C "$tmp/zstd-1.5.7/lib" -j"$(nproc)" libzstd.a-mt > "$tmp/build.log" 2>&1; then
    tail -20 "$tmp/build.log" >&2
    echo "setup: error: building zstd 1.5.7 failed (log above)" >&2
    exit 1
  fi
  mkdir -p "$tmp/zstd/include" "$tmp/zstd/lib" "$DEPS"
  cp "$tmp"/zstd-1.5.7/lib/zstd.h "$tmp"/zstd-1.5.7/lib/zstd_errors.h "$tmp/zstd/include/"
  cp "$tmp"/zstd-1.5.7/lib/libzstd.a "$tmp/zstd/lib/"
  cp "$tmp"/zstd-1.5.7/LICENSE "$tmp"/zstd-1.5.7/COPYING "$tmp/zstd/"
  rm -rf "$DEPS/zstd"
  mv "$tmp/zstd" "$DEPS/zstd"
fi

# NVIDIA's cuobjdump, which the CUDA 13.0 image lacks: test/corpus/corpus.test lists
# the kernels of fatlink's outputs with it, a reader independent of
# fatlink's own, and test/inspect/nvcc-*.test (%cuobjdump) compare
# `fatlink inspect` on nvcc's objects with it. It comes from the nvidia-cuda-cuobjdump wheel, fetched with
# `pip download` (no pip install), checked against a pinned SHA-256 and
# unpacked to $DEPS/cuobjdump/bin.
# fetch_tool WHEEL VERSION PROGRAM SHA256-AMD64 SHA256-ARM64: one program
# from one of NVIDIA's wheels, into $DEPS/cuobjdump/bin.
fetch_tool() {
  local wheel="$1" version="$2" prog="$3" wplat wsha
  [ -x "$DEPS/cuobjdump/bin/$prog" ] && return 0
  case "$(dpkg --print-architecture)" in
    amd64) wplat=manylinux2014_x86_64 wsha="$4" ;;
    arm64) wplat=manylinux2014_aarch64 wsha="$5" ;;
    *) echo "setup: error: no pinned $wheel wheel for $(dpkg --print-architecture)" >&2; exit 1 ;;
  esac
  echo "setup: fetching $prog ($wheel $version) into $DEPS/cuobjdump/bin"
  local wtmp
  wtmp=$(mktemp -d)
  if ! python3 -m pip download -q --no-deps --only-binary=:all: --platform "$wplat" \
      --python-version 3.11 "$wheel==$version" -d "$wtmp" >/dev/null; then
    echo "setup: error: pip could not download $wheel $version" >&2
    rm -rf "$wtmp"; exit 1
  fi
  local whl
  whl=$(ls "$wtmp"/*.whl)
  if ! echo "$wsha  $whl" | sha256sum -c --status; then
    echo "setup: error: $whl does not have the expected SHA-256 $wsha" >&2
    rm -rf "$wtmp"; exit 1
  fi
  mkdir -p "$DEPS/cuobjdump/bin"
  python3 -c 'import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
open(sys.argv[2], "wb").write(z.read("nvidia/cu13/bin/" + sys.argv[3]))' "$whl" "$wtmp/$prog" "$prog"
  chmod +x "$wtmp/$prog"
  mv "$wtmp/$prog" "$DEPS/cuobjdump/bin/$prog"
  rm -rf "$wtmp"
}
fetch_tool nvidia-cuda-cuobjdump 13.2.86 cuobjdump \
  d332c2ffe78e703ca0a3894be927f83124244e2acf0d792b8c12b4362d44d837 \
  9a025b92d5faca837f69841317760df9b27f3871bfa089d80cc428399743fd56
# nvdisasm, which `cuobjdump -sass` runs (found beside it): bench/nvcc_paths.sh
# counts each kernel's SASS instructions and calls with it.
fetch_tool nvidia-cuda-nvdisasm 13.2.86 nvdisasm \
  53606e719ecae07a2335f95902d5a1393a0cc1c317499ee7ffcf628a44385f2c \
  d02c627f7aecfcac4dd5e923e94adeaa6607c5fdae8df750b01ad948d38941d3
