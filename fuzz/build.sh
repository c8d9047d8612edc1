#!/usr/bin/env bash
# build.sh: builds fatlink's libFuzzer targets with clang-22
# (-fsanitize=fuzzer,address,undefined) into build/fuzz/ (or $1).
#
# Bazel's toolchain is gcc, which has no libFuzzer, so the targets are built
# here, directly from the project's sources (intake/, lto/, packager/,
# codegen/, linker/, hostlink/, and the runtime's C fatbin reader for
# fatbin_diff; not tools/): each source becomes an instrumented object in one
# static archive, and each fuzz/*_fuzzer.cpp links against it, pulling in
# only what it uses.
# libLLVM itself is not instrumented. Objects are rebuilt only when their
# source or a project header is newer, so a second run costs seconds.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OUT="${1:-$ROOT/build/fuzz}"
LLVM="${FATLINK_LLVM_ROOT:-/usr/lib/llvm-22}"
CXX="${CXX_FUZZ:-clang++-22}"
TBLGEN="$LLVM/bin/llvm-tblgen"
mkdir -p "$OUT/obj" "$OUT/gen/linker" "$OUT/gen/hostlink"

SAN="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined"
# vptr needs RTTI, which libLLVM (and so its headers' users) lacks.
SAN="$SAN -fno-sanitize=vptr"
# FUZZ_OPT: -O1 -g by default (fuzzing throughput); CI's short smoke run
# builds with -O0 -g1, which compiles the LLVM-heavy sources about 35%
# faster (lto/Link.cpp: 52 s against 80 s) and runs about half as fast.
OPT="${FUZZ_OPT:--O1 -g}"
CXXFLAGS="-std=c++17 $OPT -fno-omit-frame-pointer -fno-rtti $SAN \
  -I$ROOT -I$ROOT/runtime/include -I$OUT/gen -I$LLVM/include -D_GNU_SOURCE \
  -D__STDC_CONSTANT_MACROS -D__STDC_LIMIT_MACROS -w"
# The runtime's C sources (plain C11, as //runtime builds them).
CFLAGS="-std=c11 $OPT -fno-omit-frame-pointer $SAN -I$ROOT \
  -I$ROOT/runtime/include -D_GNU_SOURCE -w"

# Option tables, as //linker:*_options and //hostlink:*_options generate them.
for td in "$ROOT"/linker/*Options.td "$ROOT"/hostlink/*Options.td; do
  inc="$OUT/gen/$(basename "$(dirname "$td")")/$(basename "${td%.td}").inc"
  if [ ! -e "$inc" ] || [ "$td" -nt "$inc" ]; then
    "$TBLGEN" -gen-opt-parser-defs -I "$LLVM/include" "$td" -o "$inc"
  fi
done

# Objects built with other flags are rebuilt.
flags_file="$OUT/obj/flags"
if [ ! -e "$flags_file" ] || [ "$(cat "$flags_file")" != "$CXX $CXXFLAGS $CFLAGS" ]; then
  rm -f "$OUT"/obj/*.o "$OUT/libfatlink_fuzz.a"
  printf '%s' "$CXX $CXXFLAGS $CFLAGS" > "$flags_file"
fi

# Newest project header or generated table: a change rebuilds everything.
newest=$(ls -t "$ROOT"/{intake,lto,packager,codegen,linker,hostlink,runtime/lib}/*.h \
  "$ROOT"/runtime/include/fatlink/runtime.h "$ROOT"/linker/*.inc \
  "$OUT"/gen/{linker,hostlink}/*.inc | head -1)
SRCS=$(ls "$ROOT"/{intake,lto,packager,codegen,linker,hostlink}/*.cpp \
  "$ROOT"/runtime/lib/Fatbin.c "$ROOT"/runtime/lib/Error.c)
stale=()
for src in $SRCS; do
  obj="$OUT/obj/$(basename "$(dirname "$src")")_$(basename "${src%.*}").o"
  if [ ! -e "$obj" ] || [ "$src" -nt "$obj" ] || [ "$newest" -nt "$obj" ]; then
    stale+=("$src")
  fi
done
if [ "${#stale[@]}" -gt 0 ]; then
  echo "fuzz/build.sh: compiling ${#stale[@]} sources" >&2
  printf '%s\n' "${stale[@]}" | xargs -P "$(nproc)" -I{} sh -c '
    src="$1"; shift
    obj="'"$OUT"'/obj/$(basename "$(dirname "$src")")_$(basename "${src%.*}").o"
    case "$src" in
      *.c) exec '"$CXX"' -x c '"$CFLAGS"' -c "$src" -o "$obj" ;;
      *) exec '"$CXX"' '"$CXXFLAGS"' -c "$src" -o "$obj" ;;
    esac' _ {}
  rm -f "$OUT/libfatlink_fuzz.a"
fi
# The objects of today's sources only: one left from a source since moved
# or removed would define its symbols twice.
objs=()
for src in $SRCS; do
  objs+=("$OUT/obj/$(basename "$(dirname "$src")")_$(basename "${src%.*}").o")
done
[ -e "$OUT/libfatlink_fuzz.a" ] || ar rcs "$OUT/libfatlink_fuzz.a" "${objs[@]}"

for f in "$ROOT"/fuzz/*_fuzzer.cpp; do
  bin="$OUT/$(basename "${f%.cpp}")"
  if [ ! -e "$bin" ] || [ "$f" -nt "$bin" ] || [ "$OUT/libfatlink_fuzz.a" -nt "$bin" ] ||
     [ "$ROOT/fuzz/FuzzSupport.h" -nt "$bin" ] || [ "$ROOT/fuzz/RoundTrip.h" -nt "$bin" ] ||
     [ "$newest" -nt "$bin" ]; then
    echo "fuzz/build.sh: linking $(basename "$bin")" >&2
    $CXX $CXXFLAGS -fsanitize=fuzzer "$f" "$OUT/libfatlink_fuzz.a" \
      -L"$LLVM/lib" -Wl,-rpath,"$LLVM/lib" -lLLVM -lelf -lzstd -lpthread -o "$bin"
  fi
done
