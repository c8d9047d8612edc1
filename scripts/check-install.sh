#!/usr/bin/env bash
# check-install.sh: every external program that fatlink's tests, examples,
# benchmarks and CI run must come from a package scripts/setup.sh installs,
# from the CUDA toolkit ($CUDA_PATH), from rustup (~/.cargo, ~/.rustup) or
# from what setup.sh unpacks under ~/.cache/fatlink/deps (cuobjdump),
# or be part of Debian's essential set; and so must the libraries the
# fuzzers link (libclang_rt.*). A fresh machine of the CI kind has
# no LLVM, clang or Bazel at all, so a program that some earlier work left
# on this machine would otherwise pass here and fail there (issue #14:
# clang-linker-wrapper, run by clang's offload link, is in clang-tools-22).
#
# The programs are listed below, each with who runs it. A cross-check keeps
# the list honest: every LLVM tool the repository's scripts, rules and
# sources name (anything ending in -22, llvm-*, clang-*) must be listed.
# Run by scripts/test.sh before `bazel test`; prints one line per program
# and exits non-zero when one is not accounted for.
set -uo pipefail
cd "$(dirname "$0")/.."
CUDA="${CUDA_PATH:-/usr/local/cuda}"
# What setup.sh unpacks outside the package manager (zstd, cuobjdump).
DEPS="${FATLINK_DEPS_DIR:-$HOME/.cache/fatlink/deps}"
export PATH="$HOME/.cargo/bin:$PATH"

# program  who runs it (directly or through another program)
PROGRAMS=(
  "bazel                 scripts/test.sh, the rules' checks"
  "clang-22              tests (C hosts, offload links)"
  "clang++-22            tests and examples (CUDA C++ device code)"
  "clang-linker-wrapper  clang-22's --offload-new-driver link (host_object_test, test/embed/round-trip.test)"
  "clang-nvlink-wrapper  clang-22's device link of relocatable cubins"
  "clang-offload-packager  packager tests"
  "llvm-offload-binary   clang-22 --offload-new-driver compiles"
  "ld.lld-22             bench/, host links with -fuse-ld=lld"
  "llvm-objdump-22       tests (--offloading)"
  "llvm-readelf-22       tests"
  "llvm-nm-22            lit tests (symbols of cubins and objects)"
  "llvm-objcopy-22       lit tests (objects with a section taken out or added)"
  "llvm-link-22          bench/ (the floor)"
  "opt-22                bench/ (the floor)"
  "llc-22                bench/ (the floor)"
  "llvm-dis-22           tests"
  "llvm-as-22            lit tests (device-link/cuda-inline-ptx-isa)"
  "llvm-ar-22            packager tests (archives, thin archives)"
  "llvm-config-22        bazel/system.bzl"
  "llvm-tblgen-22        bazel/tblgen.bzl (option tables)"
  "FileCheck             lit tests (test/, llvm-22-tools)"
  "lit                   scripts/test.sh through //test (test/lit_test.sh, llvm-22-tools)"
  "not                   lit tests (llvm-22-tools)"
  "count                 lit tests (llvm-22-tools)"
  "split-file-22         lit tests (llvm-22-tools)"
  "yaml2obj-22           lit tests: malformed ELF objects (llvm-22-tools)"
  "cc                    host links (fatlink cc runs it)"
  "gcc                   host links"
  "g++                   Bazel's C++ toolchain, runtime.hpp hosts in tests"
  "ar                    tests (archives)"
  "nm                    tests"
  "readelf               tests"
  "objdump               tests"
  "python3               bench/, fuzz/"
  "script                lit tests on a pseudo-terminal (%on_tty: the progress line)"
  "curl                  scripts/setup.sh"
  "/usr/bin/time         lit tests (peak memory: reliability/cache-entry-checks), bench/"
  "zstd                  packager tests"
  "ptxas                 the device link (CUDA toolkit)"
  "nvlink                the device link (CUDA toolkit)"
  "fatbinary             packager tests (CUDA toolkit)"
  "nvcc                  bench/, tests (CUDA toolkit)"
  "cuobjdump             corpus_test, test/inspect/nvcc-* (scripts/setup.sh: the nvidia-cuda-cuobjdump wheel)"
  "rustc                 tests (rustup)"
  "cargo                 the cargo example (rustup)"
)

packages=$(sed -n '/^PACKAGES=(/,/^)/p' scripts/setup.sh | tr -s ' \t()' '\n' | grep -v '^PACKAGES=\?$' | grep -v '^$')
# Packages setup.sh installs, and what they depend on directly (python3
# brings python3-minimal, which owns /usr/bin/python3.11).
deps=$(for p in $packages; do dpkg-query -W -f='${Pre-Depends}, ${Depends}\n' "$p" 2>/dev/null; done |
  tr ',|' '\n\n' | sed 's/(.*//; s/:any//; s/ //g' | grep -v '^$' | sort -u)
failed=0
listed=()

# The package that owns PATH or, following its symlinks one at a time, any
# file it leads to (/usr/bin/cc -> /etc/alternatives/cc -> /usr/bin/gcc).
owners_of() {
  local p="$1" n=0
  while [ -n "$p" ] && [ $n -lt 10 ]; do
    dpkg -S "$p" 2>/dev/null | cut -d: -f1 | tr ',' '\n' | tr -d ' '
    local next
    next=$(readlink "$p") || break
    case "$next" in /*) p="$next" ;; *) p="$(dirname "$p")/$next" ;; esac
    n=$((n + 1))
  done
  dpkg -S "$(readlink -f "$1")" 2>/dev/null | cut -d: -f1 | tr ',' '\n' | tr -d ' '
}

for entry in "${PROGRAMS[@]}"; do
  read -r prog why <<<"$entry"
  listed+=("$prog")
  path=$(command -v "$prog" 2>/dev/null || true)
  [ -n "$path" ] || { [ -x "/usr/lib/llvm-22/bin/$prog" ] && path="/usr/lib/llvm-22/bin/$prog"; }
  [ -n "$path" ] || { [ -x "$CUDA/bin/$prog" ] && path="$CUDA/bin/$prog"; }
  [ -n "$path" ] || { [ -x "$DEPS/$prog/bin/$prog" ] && path="$DEPS/$prog/bin/$prog"; }
  if [ -z "$path" ]; then
    echo "check-install: FAIL $prog ($why): not found: add its package to scripts/setup.sh"
    failed=$((failed + 1)); continue
  fi
  # A program on PATH that no package owns (pyenv's python3 shim, say) is a
  # user's override: the fresh machine gets the Debian one, which must then
  # come from setup.sh.
  if [ -z "$(owners_of "$path")" ] && [ -x "/usr/bin/$prog" ] &&
     [ "$(readlink -f "$path")" != "$(readlink -f "/usr/bin/$prog")" ]; then
    path="/usr/bin/$prog"
  fi
  real=$(readlink -f "$path")
  # The CUDA images put one-line wrapper scripts in /usr/local/bin
  # ("exec /usr/local/cuda-13.0/bin/ptxas "$@""), owned by no package:
  # judge the program they run.
  if [ -z "$(owners_of "$path")" ] && [ "$(head -c2 "$real" 2>/dev/null)" = '#!' ] &&
     [ "$(wc -c <"$real")" -lt 1024 ]; then
    target=$(sed -n 's/^exec[[:space:]]\{1,\}\([^[:space:]]*\).*/\1/p' "$real" | head -1)
    case "$target" in /*) [ -x "$target" ] && real=$(readlink -f "$target") ;; esac
  fi
  case "$real" in
    "$(readlink -f "$CUDA")"/*) echo "check-install: ok   $prog: CUDA toolkit"; continue ;;
    "$(readlink -f "$DEPS")"/*) echo "check-install: ok   $prog: scripts/setup.sh, in $DEPS"; continue ;;
    "$HOME"/.cargo/*|"$HOME"/.rustup/*) echo "check-install: ok   $prog: rustup"; continue ;;
  esac
  ok=""
  for o in $(owners_of "$path" | sort -u); do
    if grep -qx "$o" <<<"$packages"; then ok="$o"; break; fi
    if grep -qx "$o" <<<"$deps"; then ok="$o (a dependency of a package setup.sh installs)"; break; fi
    if [ "$(dpkg-query -W -f='${Essential}' "$o" 2>/dev/null)" = yes ]; then ok="$o (essential)"; break; fi
  done
  if [ -n "$ok" ]; then
    echo "check-install: ok   $prog: $ok"
  else
    echo "check-install: FAIL $prog ($why): $path comes from '$(owners_of "$path" | sort -u | tr '\n' ' ')', which scripts/setup.sh does not install"
    failed=$((failed + 1))
  fi
done

# Libraries the builds link that no program above brings along: the
# fuzzers' runtimes (fuzz/build.sh links with -fsanitize=fuzzer,address,
# which look for them in clang's runtime directory).
rtdir=$(clang-22 --print-runtime-dir 2>/dev/null)
for lib in fuzzer asan ubsan_standalone; do
  f=$(ls "$rtdir"/libclang_rt."$lib"*.a 2>/dev/null | grep -v i386 | head -1)
  if [ -z "$f" ]; then
    echo "check-install: FAIL libclang_rt.$lib (fuzz/build.sh): not in clang-22's runtime directory ($rtdir): add libclang-rt-22-dev to scripts/setup.sh"
    failed=$((failed + 1)); continue
  fi
  o=$(dpkg -S "$f" 2>/dev/null | cut -d: -f1)
  if grep -qx "$o" <<<"$packages"; then
    echo "check-install: ok   libclang_rt.$lib: $o"
  else
    echo "check-install: FAIL libclang_rt.$lib (fuzz/build.sh): $f comes from '$o', which scripts/setup.sh does not install"
    failed=$((failed + 1))
  fi
done

# Files the tests read that no program above brings along: the cc crate's
# source (test/cargo/cc-crate.test builds examples/cargo-cc offline with
# Debian's copy as a cargo directory source; docs/cargo.md).
for f in /usr/share/cargo/registry/cc-1.0.73/Cargo.toml; do
  o=$(dpkg -S "$f" 2>/dev/null | cut -d: -f1)
  if [ -n "$o" ] && grep -qx "$o" <<<"$packages"; then
    echo "check-install: ok   $f: $o"
  else
    echo "check-install: FAIL $f (test/cargo/cc-crate.test): ${o:-not installed}: add librust-cc-dev to scripts/setup.sh"
    failed=$((failed + 1))
  fi
done

# The cross-check: LLVM tools named anywhere in the repository's scripts,
# rules and sources are listed above.
named=$(git ls-files -- '*.sh' '*.py' '*.bzl' '*BUILD*' '*.cpp' '*.h' '*.test' '.ci/run' 2>/dev/null |
  grep -v -e '^scripts/check-install.sh$' -e '^scripts/setup.sh$' |
  xargs grep -ohE '\b(clang-[a-z]+(-[a-z]+)*-wrapper|clang-offload-packager|llvm-(objdump|readelf|link|dis|config|tblgen|offload-binary|ar|nm|as|lit|strip|objcopy)|ld\.lld|FileCheck|yaml2obj|split-file|(opt|llc|clang|clang\+\+|lld)-22)\b' 2>/dev/null |
  sed 's/-22$//' | sort -u)
# ... and so are the programs outside Debian's essential set that scripts
# run as commands (/usr/bin/time was missed this way once: a fresh Debian 12
# root lacks it).
named="$named $(git ls-files -- '*.sh' '.ci/run' 2>/dev/null |
  grep -v -e '^scripts/check-install.sh$' -e '^scripts/setup.sh$' -e '^scripts/fresh-machine.sh$' |
  xargs grep -ohE '(^|[;&|({!]|\$\(|then|do|else)[[:space:]]*(/usr/bin/time|xxd|file|jq|hexdump|unzip|pgrep|pkill|ps|make|cmake|strace|hyperfine|valgrind|perf|gdb|wget|bzip2|xz)[[:space:]]' 2>/dev/null |
  sed -E 's/[[:space:]]+$//; s/.*[[:space:];&|({!]//; s/^\$\(//; s/^(then|do|else)//' | sort -u)"
for t in $named; do
  found=""
  for l in "${listed[@]}"; do
    [ "${l%-22}" = "$t" ] && found=1 && break
  done
  if [ -z "$found" ]; then
    echo "check-install: FAIL $t is run by the repository but not listed in scripts/check-install.sh"
    failed=$((failed + 1))
  fi
done

if [ "$failed" -gt 0 ]; then
  echo "check-install: $failed program(s) not accounted for"
  exit 1
fi
echo "check-install: every program the tests run is installed by scripts/setup.sh, the CUDA toolkit or rustup"
