#!/usr/bin/env bash
# reliability_test.sh: fatlink under bad input, faults, and many runs.
#
#  1. Bad input: corrupt OffloadBinaries inside objects, truncated rlibs,
#     an empty archive, a thin archive, compression bombs; each built here
#     from a real file, with a comment on what is wrong with it.
#  2. Faults: a full file system, a file size limit, outputs that cannot be
#     created, SIGTERM/SIGINT of `fatlink cc` during the device link and
#     during the host link.
#     Each: non-zero exit, a message naming the problem and the file, no
#     output left (or the previous one intact), no temporary file left.
#  3. Determinism: byte-identical fatbins, host objects, cubins and linked
#     executables' device sections across -j1/-j2/-j8, repeated runs, input
#     path prefixes, working directories, TMPDIR and locale, and the cache.
#  4. Concurrency: several fatlink processes at once on the same inputs, the
#     same output and the same cache directory.
#  5. Outputs against inputs and each other (issue #14): an output that is
#     an input, outputs that cannot all be written, --save-temps names, the
#     same input twice.
source "$(dirname "$0")/testlib.sh"
build_testdata
D="$WORK/dev"
ARCHS=sm_75,sm_90,compute_90
INPUTS=($RLIBS "$D/softplus.bc")
OBJ_INPUTS=($RLIBS "$D/softplus.o") # the CUDA side as clang's per-arch images
export FATLINK_CACHE_DIR=off # fatlink cc caches by default; not here
unset FATLINK_ARCH FATLINK_CONFIG FATLINK_VERBOSE

# Rewrites one u64 field of the first LLVM OffloadBinary in an object:
# patch_offload IN OUT FIELD VALUE, FIELD one of size (header: whole
# binary), value0 (first string's value offset), image-size, magic (VALUE
# replaces the 4 magic bytes, little-endian).
patch_offload() {
  python3 - "$@" <<'EOF'
import struct, sys
src, dst, field, value = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4], 0)
b = bytearray(open(src, "rb").read())
at = b.find(b"\x10\xff\x10\xad")
assert at >= 0, "no OffloadBinary in " + src
entry = at + struct.unpack_from("<Q", b, at + 16)[0]
strings = at + struct.unpack_from("<Q", b, entry + 8)[0]
off = {"size": at + 8, "value0": strings + 8, "image-size": entry + 32}.get(field)
if field == "magic":
    struct.pack_into("<I", b, at, value)
else:
    struct.pack_into("<Q", b, off, value)
open(dst, "wb").write(b)
EOF
}

#===------------------------------------------------------------------===#
# 1. Bad input
#===------------------------------------------------------------------===#
OUT="$WORK/out.o"
"$FATLINK" embed "${INPUTS[@]}" -o "$D/emb.o"

# The first string's value offset points 29 PB into the binary: LLVM's
# OffloadBinary reader would strlen() there.
patch_offload "$D/emb.o" "$D/badstr.o" value0 0x0069000000000075
expect_error "OffloadBinary string outside the binary (device-link)" \
  "$D/badstr.o: cannot read its .llvm.offloading section: offset 0: OffloadBinary string at offset 29554872554618997 is not a NUL-terminated string" \
  device-link --arch=sm_80 "$D/badstr.o" -o "$OUT"
expect_error "OffloadBinary string outside the binary (inspect)" \
  "'$D/badstr.o section .llvm.offloading offset 0': OffloadBinary string at offset" \
  inspect "$D/badstr.o"
# The binary claims 1 MiB, more than its section holds (a cut object).
patch_offload "$D/emb.o" "$D/badsize.o" size 0x100000
expect_error "OffloadBinary larger than its section" \
  "$D/badsize.o: cannot read its .llvm.offloading section: offset 0: OffloadBinary declares size 1048576 but" \
  device-link --arch=sm_80 "$D/badsize.o" -o "$OUT"
# The image claims 1 TiB from inside the binary.
patch_offload "$D/emb.o" "$D/badimage.o" image-size 0x10000000000
expect_error "OffloadBinary image outside the binary" \
  "$D/badimage.o: cannot read its .llvm.offloading section: offset 0: OffloadBinary image (1099511627776 bytes" \
  device-link --arch=sm_80 "$D/badimage.o" -o "$OUT"
# The magic is gone: the section holds no OffloadBinary at all.
patch_offload "$D/emb.o" "$D/nomagic.o" magic 0
expect_error "section without an OffloadBinary" \
  "$D/nomagic.o: cannot read its .llvm.offloading section" \
  device-link --arch=sm_80 "$D/nomagic.o" -o "$OUT"
expect_error "corrupt OffloadBinary in an object given to fatlink cc" \
  "$D/badstr.o: cannot read its .llvm.offloading section" \
  cc "$D/badstr.o" -o "$OUT" --fatlink-arch=sm_80

# An rlib cut 500 bytes into its bitcode member (a crate build killed
# while writing): the member declares more bytes than the file has.
size=$(python3 -c 'import sys; print(open(sys.argv[1], "rb").read().find(b"BC\xc0\xde") + 500)' "$D/libsaxpy.rlib")
head -c "$size" "$D/libsaxpy.rlib" > "$D/libcut.rlib"
expect_error "truncated rlib (device-link)" \
  "$D/libcut.rlib: corrupt archive: member libsaxpy.saxpy." \
  device-link --arch=sm_80 "$D/libcut.rlib" "$D/libvecmath.rlib" "$D/libminicore.rlib" -o "$OUT"
expect_error "truncated rlib: the message says it goes past the end" \
  "goes past the end of the archive ($size bytes)" \
  device-link --arch=sm_80 "$D/libcut.rlib" -o "$OUT"
expect_error "truncated rlib (embed)" "$D/libcut.rlib: corrupt archive" \
  embed "$D/libcut.rlib" -o "$OUT"
expect_error "truncated rlib (inspect)" "$D/libcut.rlib: corrupt archive" \
  inspect "$D/libcut.rlib"
# An rlib whose bitcode member is intact in size but garbage inside.
mkdir -p "$D/garbage" && (cd "$D/garbage" && ar x "$D/libsaxpy.rlib")
member=$(cd "$D/garbage" && ls ./*.rcgu.o | head -1)
printf 'BC\xc0\xde\x35\x14\x00\x00\x05\x00\x00\x00\x62\x0c\x30\x24' > "$D/garbage/$member"
(cd "$D/garbage" && ar rc "$D/libgarbage.rlib" lib.rmeta "$member")
expect_error "rlib with a corrupt bitcode member names the member" \
  "$D/libgarbage.rlib(${member#./}): corrupt bitcode" \
  device-link --arch=sm_80 "$D/libgarbage.rlib" -o "$OUT"
rm -f "$D/empty.a" && ar rc "$D/empty.a"
expect_error "empty archive (embed)" "$D/empty.a: archive contains no device bitcode" \
  embed "$D/empty.a" -o "$OUT"

# A thin archive (`ar rcT`) holds the paths of its members' files, not
# their bytes. inspect works on bytes and follows no path a file names (a
# crafted one could name any file, a FIFO or /dev/zero): it refuses it and
# names the members.
mkdir -p "$D/thin" && (cd "$D/thin" && ar rcT libthin.a ../softplus.bc)
expect_error "thin archive (inspect)" \
  "$D/thin/libthin.a: thin archive: its members are files elsewhere (../softplus.bc), which are not followed here: pass those files instead" \
  inspect "$D/thin/libthin.a"
# The link commands follow a thin archive as ld and lld do: a member's path
# is taken from the archive's directory (here ../softplus.bc), whatever the
# working directory.
(cd / && "$FATLINK" device-link --arch=sm_80 $RLIBS "$D/thin/libthin.a" -o "$WORK/thin.fatbin")
check "thin archive: device-link reads its member from the archive's directory" \
  test -s "$WORK/thin.fatbin"
"$FATLINK" device-link --arch=sm_80 $RLIBS "$D/softplus.bc" -o "$WORK/direct.fatbin"
check "thin archive: the same fatbin as from the member itself" \
  cmp "$WORK/thin.fatbin" "$WORK/direct.fatbin"
# A member whose file is gone, and one whose file is now a FIFO (reading it
# would block until some writer came): errors that name the resolved path.
cp "$D/softplus.bc" "$D/thin/gone.bc" && (cd "$D/thin" && ar rcT libgone.a gone.bc) &&
  rm "$D/thin/gone.bc"
expect_error "thin archive: a member's file is missing" \
  "$D/thin/libgone.a: cannot open $D/thin/gone.bc, a member of this thin archive: No such file or directory" \
  device-link --arch=sm_80 "$D/thin/libgone.a" -o "$OUT"
cp "$D/softplus.bc" "$D/thin/fifo.bc" && (cd "$D/thin" && ar rcT libfifo.a fifo.bc) &&
  rm "$D/thin/fifo.bc" && mkfifo "$D/thin/fifo.bc"
expect_error "thin archive: a FIFO in a member's place" \
  "$D/thin/libfifo.a: member $D/thin/fifo.bc of this thin archive is not a regular file" \
  device-link --arch=sm_80 "$D/thin/libfifo.a" -o "$OUT"

# Compression bombs: a few bytes that declare gigabytes. A zstd frame that
# says it holds 3 GiB (as does its entry header) but has one 1-byte block;
# an LZ4 entry declaring 2 GiB for a 1-byte literal.
python3 - "$D" <<'EOF'
import struct, sys
def fatbin(flags, stored, size, payload):
    payload += b"\0" * (-len(payload) % 8)
    entry = struct.pack("<HHIQIIHHIIIQQQ", 2, 0x101, 64, len(payload), stored, 0,
                        8, 1, 80, 0, 0, flags, 0, size)
    return struct.pack("<IHHQ", 0xBA55ED50, 1, 16, len(entry) + len(payload)) + entry + payload
zstd = b"\x28\xb5\x2f\xfd\xe0" + struct.pack("<Q", 3 << 30) + b"\x0b\x00\x00A"
open(sys.argv[1] + "/zbomb.fatbin", "wb").write(fatbin(0x8011, len(zstd), 3 << 30, zstd))
open(sys.argv[1] + "/lz4bomb.fatbin", "wb").write(fatbin(0x2011, 2, 2 << 30, b"\x10A"))
EOF
OUT="$WORK/extract"
expect_error "zstd frame declaring 3 GiB" \
  "'$D/zbomb.fatbin': cannot decompress fatbin entry at offset 0x10: Frame requires too much memory" \
  inspect --extract="$OUT" "$D/zbomb.fatbin"
expect_error "LZ4 entry declaring 2 GiB" \
  "malformed LZ4 payload in fatbin entry at offset 0x10: decodes to 1 bytes, header says 2147483648" \
  inspect --extract="$OUT" "$D/lz4bomb.fatbin"

#===------------------------------------------------------------------===#
# 2. Faults
#===------------------------------------------------------------------===#
mkdir -p "$WORK/ref"
"$FATLINK" device-link --arch=$ARCHS "${INPUTS[@]}" -o "$WORK/ref/k.fatbin"
# Device code in a host static library, as in test/cc/link-forwarding.test (the clang
# object's host stubs need the CUDA runtime when linked directly).
"$FATLINK" embed $RLIBS -o "$D/rust_dev.o"
rm -f "$D/libdev.a" && ar rcs "$D/libdev.a" "$D/rust_dev.o" "$D/softplus.o"
cc -I"$RUNFILES" -c "$RUNFILES/examples/mixed/main.c" -o "$D/main.o"

# A full file system: a 64 KiB tmpfs, filled up, holding a previous
# output. Mounted directly when the test may mount (root), else in a private
# mount namespace (unshare -m). Results are written outside it.
FULL="$WORK/full"
mkdir -p "$FULL"
cat > "$WORK/full.sh" <<EOF
mount -t tmpfs -o size=64k tmpfs "$FULL" || exit 99
cp "$WORK/ref/k.fatbin" "$FULL/k.fatbin"
dd if=/dev/zero of="$FULL/fill" bs=4k 2>/dev/null
"$FATLINK" device-link --arch=sm_80,compute_80 --compress=none ${INPUTS[*]} \
  -o "$FULL/k.fatbin" 2>"$WORK/full.err"
echo \$? > "$WORK/full.rc"
cmp -s "$FULL/k.fatbin" "$WORK/ref/k.fatbin" && echo intact > "$WORK/full.intact"
# fatlink cc with its temporary device object on the full disk.
TMPDIR="$FULL" "$FATLINK" cc "$D/main.o" -L"$D" -ldev -o "$WORK/full-app" \
  --fatlink-arch=sm_80 2>"$WORK/full-cc.err"
echo \$? > "$WORK/full-cc.rc"
# A cache on the full disk: storing fails, the link does not.
"$FATLINK" device-link --cache-dir="$FULL" --arch=sm_80 ${INPUTS[*]} \
  -o "$WORK/full-cache.fatbin" 2>"$WORK/full-cache.err"
echo \$? > "$WORK/full-cache.rc"
ls -A "$FULL" > "$WORK/full.ls"
umount "$FULL"
EOF
rm -f "$WORK"/full.{rc,intact,ls,err}
bash "$WORK/full.sh" 2>/dev/null
[ -s "$WORK/full.rc" ] || unshare -m bash "$WORK/full.sh" 2>/dev/null
if [ ! -s "$WORK/full.rc" ]; then
  fail "full disk: cannot mount a tmpfs here, neither directly nor with unshare -m"
else
  check "full disk: exit non-zero ($(cat "$WORK/full.rc"))" test "$(cat "$WORK/full.rc")" -ne 0
  check "full disk: message names the output and the problem" \
    grep -qE "^fatlink: error: .*$FULL/k.fatbin.*No space left on device" "$WORK/full.err"
  check "full disk: previous output intact" test -e "$WORK/full.intact"
  check "full disk: no temporary file left" test "$(cat "$WORK/full.ls" | tr '\n' ' ')" = "fill k.fatbin "
  # The first temporary fatlink cc needs there is ptxas's captured output.
  check "full disk as TMPDIR (cc): exit non-zero" test "$(cat "$WORK/full-cc.rc")" -ne 0
  check "full disk as TMPDIR (cc): message names the directory and the problem" \
    grep -qF "its output is captured in a temporary file in $FULL: is that file system full" "$WORK/full-cc.err"
  check "full disk as TMPDIR (cc): no output" test ! -e "$WORK/full-app"
  check "full disk, cache: the link still succeeds" test "$(cat "$WORK/full-cache.rc")" -eq 0
  check "full disk, cache: same fatbin as without a cache" \
    bash -c "'$FATLINK' device-link --arch=sm_80 ${INPUTS[*]} -o '$WORK/nocache.fatbin' && cmp '$WORK/nocache.fatbin' '$WORK/full-cache.fatbin'"
fi

# A file size limit below the output's size: the kernel stops the write
# with SIGXFSZ; the signal handler still removes the temporary file.
mkdir -p "$WORK/fsize"
(ulimit -f 8; exec "$FATLINK" device-link --arch=$ARCHS --compress=none \
  "${INPUTS[@]}" -o "$WORK/fsize/k.fatbin") 2>/dev/null
rc=$?
check "file size limit: stopped ($rc)" test "$rc" -ne 0
check "file size limit: no output, no temporary file" test -z "$(ls -A "$WORK/fsize")"

# Outputs that cannot be created, even by root.
echo x > "$D/regular"
OUT="$D/regular/k.fatbin"
expect_error "output whose parent is a regular file" "$D/regular/k.fatbin" \
  device-link --arch=sm_80 "${INPUTS[@]}" -o "$OUT"
OUT="/proc/fatlink-test-$$.fatbin"
expect_error "output in /proc" "/proc/fatlink-test-$$.fatbin" \
  device-link --arch=sm_80 "${INPUTS[@]}" -o "$OUT"
OUT="$WORK/out.o"

# SIGTERM and SIGINT of `fatlink cc` while ptxas runs (device link) and
# while the host linker runs: killed by the signal, no output, and the
# temporary device object is gone.
# slow_tool NAME: a ptxas that answers the probes with the real one, or a
# cc, that records its pid and sleeps.
slow_tool() {
  printf '#!/bin/sh\ncase "$1" in --version|--help) exec %s "$@";; esac\necho $$ > %s.pid\nexec sleep 30\n' \
    "$CUDA/bin/ptxas" "$D/$1" > "$D/$1"
  chmod +x "$D/$1"
}
slow_tool slow-ptxas
slow_tool slow-cc
for stage in ptxas cc; do
  for sig in TERM INT; do
    rm -f "$D"/slow-*.pid "$WORK/app"
    if [ $stage = ptxas ]; then setting=--fatlink-ptxas="$D/slow-ptxas"; else setting=--fatlink-linker="$D/slow-cc"; fi
    # Background jobs of a script start with SIGINT ignored; restore it.
    python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])' \
      "$FATLINK" cc "$D/main.o" -L"$D" -ldev -o "$WORK/app" \
      --fatlink-arch=sm_80 "$setting" 2>/dev/null &
    pid=$!
    for _ in $(seq 200); do [ -s "$D/slow-$stage.pid" ] && break; sleep 0.1; done
    kill -s $sig $pid
    wait $pid; rc=$?
    [ -s "$D/slow-$stage.pid" ] && kill "$(cat "$D/slow-$stage.pid")" 2>/dev/null
    check "cc SIG$sig during $stage: killed by the signal ($rc)" test "$rc" -eq $((128 + $(kill -l $sig)))
    check "cc SIG$sig during $stage: no output" test ! -e "$WORK/app"
    check "cc SIG$sig during $stage: no temporary file left" test -z "$(ls -A "$TMPDIR")"
    rm -rf "${TMPDIR:?}"/*
  done
done

#===------------------------------------------------------------------===#
# 3. Determinism
#===------------------------------------------------------------------===#
R="$WORK/ref"
"$FATLINK" device-link -j1 --arch=$ARCHS "${OBJ_INPUTS[@]}" -o "$R/k.o"
"$FATLINK" device-link -j1 --arch=$ARCHS "${INPUTS[@]}" -o "$R/dir"
for j in 2 8; do
  mkdir -p "$WORK/j$j"
  "$FATLINK" device-link -j$j --arch=$ARCHS "${INPUTS[@]}" -o "$WORK/j$j/k.fatbin"
  "$FATLINK" device-link -j$j --arch=$ARCHS "${OBJ_INPUTS[@]}" -o "$WORK/j$j/k.o"
  "$FATLINK" device-link -j$j --arch=$ARCHS "${INPUTS[@]}" -o "$WORK/j$j/dir"
  check "-j$j: same fatbin as the default -j" cmp "$R/k.fatbin" "$WORK/j$j/k.fatbin"
  check "-j$j: same host object as -j1" cmp "$R/k.o" "$WORK/j$j/k.o"
  check "-j$j: same cubins and PTX as -j1" diff -r "$R/dir" "$WORK/j$j/dir"
done
"$FATLINK" device-link --arch=$ARCHS "${INPUTS[@]}" -o "$WORK/again.fatbin"
check "a repeated run: same fatbin" cmp "$R/k.fatbin" "$WORK/again.fatbin"

# The same inputs under two path prefixes, linked from inside each with
# relative paths and from elsewhere with absolute ones, with different
# TMPDIR and locale settings.
P1="$WORK/p1"
P2="$WORK/p2/a/much/longer/path/prefix"
mkdir -p "$P1" "$P2" "$WORK/tmp2"
cp $RLIBS "$D/softplus.o" "$P1/"
cp $RLIBS "$D/softplus.o" "$P2/"
REL=(libsaxpy.rlib libvecmath.rlib libminicore.rlib softplus.o)
(cd "$P1" && LC_ALL=C LANG=C "$FATLINK" device-link -j1 --arch=$ARCHS "${REL[@]}" -o k.o)
(cd / && TMPDIR="$WORK/tmp2" LANG=de_DE.UTF-8 LC_ALL=tr_TR.UTF-8 TZ=Asia/Tokyo \
  "$FATLINK" device-link -j2 --arch=$ARCHS "${REL[@]/#/$P2/}" -o "$P2/k.o")
check "prefix, cwd, LC_ALL=C: same host object" cmp "$R/k.o" "$P1/k.o"
check "another prefix, cwd /, TMPDIR, tr_TR locale, TZ: same host object" cmp "$R/k.o" "$P2/k.o"
check "no temporary file left in the other TMPDIR" test -z "$(ls -A "$WORK/tmp2")"
# Linked into executables in each directory: the same device sections.
for p in "$P1" "$P2"; do
  (cd "$p" && cc -I"$RUNFILES" "$RUNFILES/examples/mixed/main.c" k.o -o app &&
    for s in .nv_fatbin .nvFatBinSegment .data.rel.ro fatlink_modules; do
      objcopy -O binary --only-section="$s" app "app$s"
    done)
done
# (The kernel table's section is merged into .data.rel.ro by the linker.)
for s in .nv_fatbin .nvFatBinSegment .data.rel.ro fatlink_modules; do
  check "executables from both prefixes: same $s" \
    bash -c "test -s '$P1/app$s' && cmp '$P1/app$s' '$P2/app$s'"
done
# Through the cache: a cold and a warm run give the reference bytes.
C="$WORK/cache"
"$FATLINK" device-link --cache-dir="$C" --arch=$ARCHS "${INPUTS[@]}" -o "$WORK/cold.fatbin"
"$FATLINK" device-link --cache-dir="$C" --arch=$ARCHS "${INPUTS[@]}" -o "$WORK/warm.fatbin" -v 2>"$WORK/warm.log"
check "cache: cold run gives the same fatbin" cmp "$R/k.fatbin" "$WORK/cold.fatbin"
check "cache: warm run is a hit" grep -q '^cache: hit ' "$WORK/warm.log"
check "cache: warm run gives the same fatbin" cmp "$R/k.fatbin" "$WORK/warm.fatbin"

#===------------------------------------------------------------------===#
# 4. Concurrency
#===------------------------------------------------------------------===#
N=4
mkdir -p "$WORK/conc" "$WORK/same"
pids=()
for i in $(seq $N); do
  "$FATLINK" device-link -j2 --arch=$ARCHS "${INPUTS[@]}" -o "$WORK/conc/k$i.fatbin" & pids+=($!)
  "$FATLINK" device-link -j2 --arch=$ARCHS "${INPUTS[@]}" -o "$WORK/same/k.fatbin" & pids+=($!)
done
rcs=0; for p in "${pids[@]}"; do wait "$p" || rcs=1; done
check "$N concurrent links and $N to one output: all succeed" test $rcs -eq 0
for i in $(seq $N); do
  check "concurrent link $i: same fatbin" cmp "$R/k.fatbin" "$WORK/conc/k$i.fatbin"
done
check "$N links to one output: it is complete and correct" cmp "$R/k.fatbin" "$WORK/same/k.fatbin"
check "$N links to one output: no temporary file left" test "$(ls -A "$WORK/same")" = k.fatbin

# The same cache directory, cold then warm, $N processes at once.
for phase in cold warm; do
  C="$WORK/shared-cache"
  pids=()
  for i in $(seq $N); do
    "$FATLINK" device-link -j2 --cache-dir="$C" --arch=$ARCHS "${INPUTS[@]}" \
      -o "$WORK/conc/$phase$i.fatbin" -v 2>"$WORK/conc/$phase$i.log" & pids+=($!)
  done
  rcs=0; for p in "${pids[@]}"; do wait "$p" || rcs=1; done
  check "shared cache, $phase, $N at once: all succeed" test $rcs -eq 0
  for i in $(seq $N); do
    check "shared cache, $phase, link $i: same fatbin" cmp "$R/k.fatbin" "$WORK/conc/$phase$i.fatbin"
  done
  check "shared cache, $phase: one entry, no temporary file" \
    bash -c "test \$(ls -A '$C' | grep -c '^llvmcache-') -eq 1 && test -z \"\$(ls -A '$C' | grep tmp)\""
done
check "shared cache, warm: every link hit" test "$(cat "$WORK"/conc/warm*.log | grep -c '^cache: hit ')" -eq $N
# The same in partitions: $N links at once fill (cold), then read (warm),
# the per-partition code cache and the O3 memo.
"$FATLINK" device-link -j2 --partitions=3 --arch=$ARCHS "${INPUTS[@]}" -o "$WORK/part-ref.fatbin"
for phase in cold warm; do
  C="$WORK/part-cache"
  pids=()
  for i in $(seq $N); do
    "$FATLINK" device-link -j2 --partitions=3 --cache-dir="$C" --arch=$ARCHS "${INPUTS[@]}" \
      -o "$WORK/conc/p$phase$i.fatbin" & pids+=($!)
  done
  rcs=0; for p in "${pids[@]}"; do wait "$p" || rcs=1; done
  check "partitioned, shared cache, $phase, $N at once: all succeed" test $rcs -eq 0
  for i in $(seq $N); do
    check "partitioned, shared cache, $phase, link $i: same fatbin as uncached" \
      cmp "$WORK/part-ref.fatbin" "$WORK/conc/p$phase$i.fatbin"
  done
  check "partitioned, shared cache, $phase: code entries stored, no temporary file" \
    bash -c "test -n \"\$(ls -A '$C/codegen')\" && test -z \"\$(find '$C' -name '*.tmp*')\""
done
# fatlink cc, $N at once with one shared cache: same device sections.
pids=()
for i in $(seq $N); do
  FATLINK_CACHE_DIR="$WORK/cc-cache" "$FATLINK" cc "$D/main.o" -L"$D" -ldev \
    -o "$WORK/conc/app$i" --fatlink-arch=$ARCHS & pids+=($!)
done
rcs=0; for p in "${pids[@]}"; do wait "$p" || rcs=1; done
check "$N concurrent fatlink cc with one cache: all succeed" test $rcs -eq 0
for i in $(seq $N); do
  objcopy -O binary --only-section=.nv_fatbin "$WORK/conc/app$i" "$WORK/conc/app$i.fatbin"
done
for i in $(seq 2 $N); do
  check "concurrent fatlink cc $i: same .nv_fatbin as the first" \
    bash -c "test -s '$WORK/conc/app1.fatbin' && cmp '$WORK/conc/app1.fatbin' '$WORK/conc/app$i.fatbin'"
done

#===------------------------------------------------------------------===#
# 5. Outputs against inputs and against each other (issue #14)
#===------------------------------------------------------------------===#
O="$WORK/outs"
mkdir -p "$O"
cp $RLIBS "$D/softplus.bc" "$O/"
ORLIBS=("$O/libsaxpy.rlib" "$O/libvecmath.rlib" "$O/libminicore.rlib")
cp "$O/softplus.bc" "$O/softplus.bc.orig"
ln -sf softplus.bc "$O/alias.bc"
ln -f "$O/softplus.bc" "$O/hard.bc"
# expect_same_file NAME FILE ARGS...: -o names an input (by another name,
# maybe): refused as gcc does, and the input is intact.
expect_same_file() {
  local name="$1" file="$2"; shift 2
  local err rc
  err=$("$FATLINK" "$@" 2>&1 >/dev/null); rc=$?
  check "$name: refused ($rc)" test "$rc" -ne 0
  check "$name: message" grep -qF "fatlink: error: input file '" <<<"$err"
  check "$name: message names the output" grep -qF "is the same as output file '$file'" <<<"$err"
  check "$name: the input is intact" cmp "$O/softplus.bc" "$O/softplus.bc.orig"
  cp "$O/softplus.bc.orig" "$O/softplus.bc" # for the next cases, if not
}
expect_same_file "device-link -o an input" "$O/softplus.bc" \
  device-link --arch=sm_80 "${ORLIBS[@]}" "$O/softplus.bc" -o "$O/softplus.bc"
expect_same_file "device-link -o a symlink to an input" "$O/alias.bc" \
  device-link --arch=sm_80 "${ORLIBS[@]}" "$O/softplus.bc" -o "$O/alias.bc"
expect_same_file "device-link -o a hard link to an input" "$O/hard.bc" \
  device-link --arch=sm_80 "${ORLIBS[@]}" "$O/softplus.bc" -o "$O/hard.bc"
expect_same_file "device-link --json= an input" "$O/softplus.bc" \
  device-link --arch=sm_80 "${ORLIBS[@]}" "$O/softplus.bc" -o "$O/k.fatbin" --json="$O/softplus.bc"
expect_same_file "embed -o an input" "$O/softplus.bc" \
  embed "${ORLIBS[@]}" "$O/softplus.bc" -o "$O/softplus.bc"
# Compared by identity, not by spelling: a relative -o from another
# directory.
expect_same_file "embed -o the input by a relative path" "outs/./softplus.bc" \
  embed "${ORLIBS[@]}" "$O/softplus.bc" -o outs/./softplus.bc

# A --json or --time-trace that cannot be written: the run fails, saying
# which file and why, and the previous output stays (every output or none).
echo previous > "$O/previous"
for opt in json time-trace; do
  cp "$O/previous" "$O/prev.fatbin"
  err=$("$FATLINK" device-link --arch=sm_80 "${INPUTS[@]}" -o "$O/prev.fatbin" \
    --$opt="$O/no-such-dir/x.json" 2>&1); rc=$?
  check "--$opt unwritable: exit non-zero ($rc)" test "$rc" -ne 0
  check "--$opt unwritable: message names the file and the reason" \
    grep -qF "fatlink: error: cannot write $O/no-such-dir/x.json: No such file or directory" <<<"$err"
  check "--$opt unwritable: previous output intact" cmp "$O/prev.fatbin" "$O/previous"
  check "--$opt unwritable: no temporary file left" \
    test "$(ls -A "$O" | grep -c tmp)" -eq 0
done
# And when they can be written, all are.
"$FATLINK" device-link --arch=sm_80 "${INPUTS[@]}" -o "$O/prev.fatbin" \
  --json="$O/k.json" --time-trace="$O/k.trace.json"
check "--json and --time-trace written with the output" \
  bash -c "! cmp -s '$O/prev.fatbin' '$O/previous' && grep -q '\"kernels\"' '$O/k.json' && grep -q traceEvents '$O/k.trace.json'"

# --save-temps names its files after the output (out.fatbin ->
# out.sm_80.ptx, out.linked.bc): a user's files with the names it used to
# write (sm_80.cubin, sm_80.ptx, ptxas.log, fatlink.linked.bc) stay, and two
# links into one directory keep their own.
S="$WORK/savetemps"
mkdir -p "$S"
for f in sm_80.cubin sm_80.ptx ptxas.log fatlink.linked.bc; do echo mine > "$S/$f"; done
for o in a b; do
  "$FATLINK" device-link --arch=sm_80 --save-temps "${INPUTS[@]}" -o "$S/$o.fatbin" 2>/dev/null
done
for f in sm_80.cubin sm_80.ptx ptxas.log fatlink.linked.bc; do
  check "--save-temps: the user's $f is untouched" test "$(cat "$S/$f")" = mine
done
for o in a b; do
  check "--save-temps: $o.fatbin's temporaries are named after it" \
    bash -c "test -s '$S/$o.sm_80.ptx' && test -s '$S/$o.sm_80.cubin' && test -s '$S/$o.linked.bc'"
done
check "--save-temps: each link's PTX is its own (both complete)" cmp "$S/a.sm_80.ptx" "$S/b.sm_80.ptx"

# The same archive twice (-ldev -ldev for circular dependencies, rustc's
# link lines) or under another name is read once, as ld takes it: no
# "duplicate device symbol".
ln -sf libsaxpy.rlib "$O/libsaxpy-alias.rlib"
"$FATLINK" device-link --arch=sm_80 "${ORLIBS[@]}" "${ORLIBS[@]}" "$O/libsaxpy-alias.rlib" \
  "$O/softplus.bc" "$O/softplus.bc" -o "$O/dup.fatbin" 2>"$O/dup.err"
check "the same inputs twice (device-link): links" test -s "$O/dup.fatbin"
check "the same inputs twice (device-link): no error" test ! -s "$O/dup.err"
"$FATLINK" device-link --arch=sm_80 "${ORLIBS[@]}" "$O/softplus.bc" -o "$O/nodup.fatbin"
check "the same inputs twice (device-link): same fatbin as once" cmp "$O/nodup.fatbin" "$O/dup.fatbin"
"$FATLINK" cc "$D/main.o" -L"$D" -ldev -ldev -Wl,-ldev -o "$O/dupapp" \
  --fatlink-arch=sm_80 2>"$O/dupcc.err"
check "-ldev -ldev (cc): links" test -x "$O/dupapp"
check "-ldev -ldev (cc): no duplicate device symbol" \
  lacks 'duplicate device symbol' "$O/dupcc.err"

# A cache entry is checked (a regular file, of the size its header states)
# before it is read, and hashed through a small buffer before it is kept:
# a FIFO in its place hung the link, a symlink to /dev/zero was read until
# memory ran out, a large damaged entry was held whole. Each is a miss:
# the link is rebuilt, with the reference bytes.
C5="$WORK/cache5"
/usr/bin/time -f %M -o "$O/rss.cold" "$FATLINK" device-link --cache-dir="$C5" \
  --arch=sm_80 "${INPUTS[@]}" -o "$O/c5.fatbin"
entry=$(find "$C5" -maxdepth 1 -type f -name 'llvmcache-*')
check "cache: one entry" test "$(wc -w <<<"$entry")" -eq 1
# A 1 GiB entry whose header states the right length, with a wrong hash
# (sparse: no disk used).
python3 - "$entry" <<'PY'
import sys
with open(sys.argv[1], "r+b") as f:
    size = 1 << 30
    f.seek(8); f.write((size - 48).to_bytes(8, "little")); f.write(b"\xff" * 32)
    f.truncate(size)
PY
/usr/bin/time -f %M -o "$O/rss.big" timeout 120 "$FATLINK" device-link \
  --cache-dir="$C5" --arch=sm_80 "${INPUTS[@]}" -o "$O/c5-big.fatbin" -v 2>"$O/c5-big.log"
check "cache: a damaged 1 GiB entry is a miss, rebuilt" cmp "$O/c5.fatbin" "$O/c5-big.fatbin"
check "cache: a damaged 1 GiB entry is not held in memory ($(cat "$O/rss.big") KiB, cold link $(cat "$O/rss.cold") KiB)" \
  test "$(cat "$O/rss.big")" -lt $(( $(cat "$O/rss.cold") + 262144 ))
check "cache: -v says why the entry was ignored" grep -qF "cache: corrupt entry $entry (hash mismatch)" "$O/c5-big.log"
# A bound on the address space, so that a regression fails instead of
# eating memory: 4 GiB, or none under --config=asan, whose shadow memory
# alone reserves terabytes of it (timeout still bounds the run).
VLIMIT=4194304
[ "${#SAN_LDFLAGS[@]}" -eq 0 ] || VLIMIT=unlimited
for kind in fifo zero; do
  rm -f "$entry"
  if [ $kind = fifo ]; then mkfifo "$entry"; else ln -s /dev/zero "$entry"; fi
  # (ulimit -v: without the check, /dev/zero would be read until the limit.)
  (ulimit -v $VLIMIT; exec timeout 60 "$FATLINK" device-link --cache-dir="$C5" \
    --arch=sm_80 "${INPUTS[@]}" -o "$O/c5-$kind.fatbin" -v) 2>"$O/c5-$kind.log"; rc=$?
  check "cache: entry is a $kind: the link succeeds ($rc)" test "$rc" -eq 0
  check "cache: entry is a $kind: rebuilt, same fatbin" cmp "$O/c5.fatbin" "$O/c5-$kind.fatbin"
  check "cache: entry is a $kind: -v says so" grep -qF "cache: corrupt entry $entry (not a regular file)" "$O/c5-$kind.log"
done

# Command-line inputs and response files: only regular files are read, a
# response file has at most 64 MiB.
mkfifo "$O/fifo"
truncate -s 65M "$O/big.rsp"
OUT="$O/nr.fatbin"
# (Bounded, so that a regression fails instead of hanging or eating memory.)
printf '#!/bin/sh\nulimit -v %s\nexec timeout 30 %s "$@"\n' "$VLIMIT" "$FATLINK" > "$O/bounded-fatlink"
chmod +x "$O/bounded-fatlink"
REAL_FATLINK="$FATLINK"
FATLINK="$O/bounded-fatlink"
for input in /dev/zero "$O/fifo"; do
  expect_error "input $input: refused" "$input: not a regular file" \
    device-link --arch=sm_80 "$input" -o "$OUT"
  expect_error "response file @$input: refused" \
    "cannot expand response file: $input is not a regular file" \
    device-link --arch=sm_80 "@$input" -o "$OUT"
done
expect_error "response file over 64 MiB: refused" \
  "cannot expand response file: $O/big.rsp has 68157440 bytes, more than the 64 MiB" \
  embed "@$O/big.rsp" -o "$OUT"
FATLINK="$REAL_FATLINK"
rm -f "$O/big.rsp"

# SIGTERM, SIGINT and SIGPIPE during a partitioned link running ptxas in
# parallel: the ptxas children are stopped before the temporaries are
# removed, so none runs on (re-parented to init) and none writes a file
# into TMPDIR afterwards. This ptxas records its pid, takes 4 s, then
# writes its output, as a real one would.
cat > "$D/slow-part-ptxas" <<PTXAS
#!/bin/sh
case "\$1" in --version|--help) exec "$CUDA/bin/ptxas" "\$@";; esac
echo \$\$ >> "$D/ptxas-pids"
i=0; while [ \$i -lt 40 ]; do sleep 0.1; i=\$((i+1)); done
out=; prev=; for a; do [ "\$prev" = -o ] && out=\$a; prev=\$a; done
echo late > "\$out"
PTXAS
chmod +x "$D/slow-part-ptxas"
PART=(device-link -v -j2 --partitions=4 --arch=sm_80,sm_90 --ptxas="$D/slow-part-ptxas"
  "${INPUTS[@]}" -o "$O/sig.fatbin")
# ptxas_left: how many of the recorded ptxas are still running.
ptxas_left() {
  local n=0 p
  for p in $(cat "$D/ptxas-pids" 2>/dev/null); do kill -0 "$p" 2>/dev/null && n=$((n + 1)); done
  echo $n
}
wait_for_ptxas() {
  for _ in $(seq 300); do [ "$(wc -l 2>/dev/null < "$D/ptxas-pids" || echo 0)" -ge "$1" ] && return; sleep 0.1; done
}
for sig in TERM INT PIPE; do
  rm -f "$D/ptxas-pids" "$O/sig.fatbin"
  if [ $sig = PIPE ]; then
    # The reader goes away once ptxas runs; fatlink's next -v line (the
    # next ptxas command) raises SIGPIPE.
    "$FATLINK" "${PART[@]}" 2>&1 | { wait_for_ptxas 2; exit 0; }
    rc=${PIPESTATUS[0]}
    check "SIGPIPE during partitioned ptxas: killed by the signal ($rc)" test "$rc" -eq $((128 + $(kill -l PIPE)))
  else
    python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])' \
      "$FATLINK" "${PART[@]}" 2>/dev/null &
    pid=$!
    wait_for_ptxas 2
    kill -s $sig $pid
    wait $pid; rc=$?
    check "SIG$sig during partitioned ptxas: killed by the signal ($rc)" test "$rc" -eq $((128 + $(kill -l $sig)))
  fi
  check "SIG$sig during partitioned ptxas: ptxas ran ($(wc -l < "$D/ptxas-pids"))" test -s "$D/ptxas-pids"
  sleep 0.5
  check "SIG$sig during partitioned ptxas: no ptxas left running ($(ptxas_left))" test "$(ptxas_left)" -eq 0
  sleep 4 # a ptxas left running would now write its output
  check "SIG$sig during partitioned ptxas: no output" test ! -e "$O/sig.fatbin"
  check "SIG$sig during partitioned ptxas: no temporary file left ($(ls -A "$TMPDIR" | head -3 | tr '\n' ' '))" test -z "$(ls -A "$TMPDIR")"
  for p in $(cat "$D/ptxas-pids" 2>/dev/null); do kill "$p" 2>/dev/null; done
  rm -rf "${TMPDIR:?}"/*
done

# The cache is pruned after each store, by LLVM's pruneCache (--cache-policy,
# the cache-policy setting), and pruning removes cache entries alone: its
# entries are the directory's "llvmcache-*" files; nothing else in it (a
# user's file, build dependencies, an older fatlink's entries) is touched.
P="$WORK/prune"
Z64=0000000000000000000000000000000000000000000000000000000000000000
mkdir -p "$P/deps/zstd"
echo dep > "$P/deps/zstd/libzstd.a"
echo mine > "$P/notes.txt"
echo older > "$P/$Z64"
echo expired > "$P/llvmcache-${Z64%0}1"
touch -d '30 days ago' "$P/deps/zstd/libzstd.a" "$P/deps/zstd" "$P/deps" "$P/notes.txt" "$P/$Z64" "$P/llvmcache-${Z64%0}1"
"$FATLINK" device-link --cache-dir="$P" --cache-policy=prune_interval=0s:prune_after=168h \
  --arch=sm_80 "${INPUTS[@]}" -o "$O/p1.fatbin"
check "cache policy: an entry unused for 30 days is pruned" test ! -e "$P/llvmcache-${Z64%0}1"
check "cache policy: this link's entry is kept" \
  bash -c "test -s '$O/p1.fatbin' && test \$(ls '$P' | grep -c '^llvmcache-[0-9a-f]\{64\}$') -eq 1"
"$FATLINK" device-link --cache-dir="$P" --cache-policy=prune_interval=0s:cache_size_bytes=1 \
  --arch=sm_90 "${INPUTS[@]}" -o "$O/p2.fatbin"
check "cache policy: beyond the size limit, entries are pruned" test "$(ls "$P" | grep -c '^llvmcache-[0-9a-f]')" -eq 0
check "cache policy: nothing but entries removed" \
  bash -c "test -s '$P/deps/zstd/libzstd.a' && test -s '$P/notes.txt' && test -s '$P/$Z64'"
OUT="$O/p3.fatbin"
expect_error "cache policy: a bad one is refused" \
  "invalid value for --cache-policy: 'prune_after=3x': " \
  device-link --cache-dir="$P" --cache-policy=prune_after=3x --arch=sm_80 "${INPUTS[@]}" -o "$OUT"
err=$(FATLINK_CACHE_DIR="$P" FATLINK_CACHE_POLICY=cache_sise=1 "$FATLINK" cc "$D/main.o" -L"$D" -ldev \
  -o "$O/papp" --fatlink-arch=sm_80 2>&1)
check "cache policy: a bad FATLINK_CACHE_POLICY is refused, named" \
  grep -qF "fatlink: error: invalid value for FATLINK_CACHE_POLICY: 'cache_sise=1'" <<<"$err"
# The default cache of fatlink cc is a directory of its own, not
# ~/.cache/fatlink, where scripts/setup.sh unpacks build dependencies
# (deps/): even a policy that prunes everything leaves them.
H="$WORK/home"
mkdir -p "$H/.cache/fatlink/deps/zstd"
echo dep > "$H/.cache/fatlink/deps/zstd/libzstd.a"
touch -d '30 days ago' "$H/.cache/fatlink/deps/zstd/libzstd.a"
env -u FATLINK_CACHE_DIR -u XDG_CACHE_HOME HOME="$H" "$FATLINK" cc "$D/main.o" -L"$D" -ldev \
  -o "$O/happ" --fatlink-arch=sm_80 --fatlink-cache-policy=prune_interval=0s:prune_after=1s:cache_size_bytes=1
check "default cache: fatlink cc links" test -x "$O/happ"
check "default cache: in ~/.cache/fatlink/device-links" test -e "$H/.cache/fatlink/device-links/llvmcache.timestamp"
check "default cache: nothing of its own in ~/.cache/fatlink" \
  test "$(ls -A "$H/.cache/fatlink" | tr '\n' ' ')" = "deps device-links "
check "default cache: the build dependencies are intact" test -s "$H/.cache/fatlink/deps/zstd/libzstd.a"

check "no temporary file left anywhere in TMPDIR" test -z "$(ls -A "$TMPDIR")"

finish
