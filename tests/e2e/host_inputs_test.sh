#!/usr/bin/env bash
# host_inputs_test.sh: `fatlink cc` finds the files the host link opens
# (issue #14 item 13). Each case puts a device archive where only one form
# of the link line reaches it: LIBRARY_PATH, -Wl,--library-path= and
# -Wl,--library=, -Xlinker -L/-l, -Wl,@file, --sysroot with -L= and
# -L$SYSROOT, GNU ld scripts (INPUT, GROUP, AS_NEEDED, SEARCH_DIR, found as
# inputs, via -l and via -T). The host program references no device
# symbol, so a link that misses the archive still succeeds: each case checks
# that the executable carries the device code (`fatlink inspect`). Before
# the fix every case linked without it. What fatlink cannot follow is a
# warning naming the argument or file.
source "$(dirname "$0")/testlib.sh"
build_testdata
D="$WORK/dev"
ln -s "$FATLINK" "$WORK/fatlink-cc"
CC_WRAP="$WORK/fatlink-cc"
unset FATLINK_ARCH FATLINK_CONFIG FATLINK_VERBOSE LIBRARY_PATH

"$FATLINK" embed $RLIBS -o "$D/rust_dev.o"
# Kept outside the working directory, where no form below may find it.
ar rcs "$D/device-code.a" "$D/rust_dev.o" "$D/softplus.o"
# A host program that uses nothing from the archive: the link succeeds
# whether or not its device code is found.
cc -c -x c - -o main.o <<<'int main(void) { return 0; }'

# place DIR [NAME]: a copy of the device archive as DIR/NAME (libdev.a).
place() { mkdir -p "$1" && cp "$D/device-code.a" "$1/${2:-libdev.a}"; }

# has_device NAME EXE: the executable carries the sm_80 cubin with the
# Rust and CUDA C++ kernels.
has_device() {
  local name="$1" exe="$2"
  if [ ! -x "$exe" ]; then fail "$name: $exe was not linked"; return; fi
  "$FATLINK" inspect --extract="$exe.x" "$exe" > "$exe.inspect" 2>&1
  if grep -q 'cubin *sm_80' "$exe.inspect" &&
     readelf -s "$exe.x"/*.cubin 2>/dev/null | grep -q ' cuda_scale$' &&
     readelf -s "$exe.x"/*.cubin 2>/dev/null | grep -q ' saxpy$'; then
    pass "$name"
  else
    fail "$name: no device code in $exe: $(cat "$exe.inspect")"
  fi
}

# link NAME EXE ARGS...: fatlink-cc main.o ARGS -o EXE for sm_80; its
# stderr is kept in EXE.err.
link() {
  local exe="$1"; shift
  rm -f "$exe"
  "$CC_WRAP" main.o "$@" -o "$exe" --fatlink-arch=sm_80 2> "$exe.err"
}

# 1. LIBRARY_PATH: gcc and clang search its directories for -l after the
# -L ones (an empty entry is the current directory).
place lp
LIBRARY_PATH="$WORK/nonexistent:$WORK/lp" link app_lp -ldev
has_device "LIBRARY_PATH: -ldev found in its second directory" app_lp
LIBRARY_PATH="$WORK/lp" link app_lp_clang -ldev --fatlink-linker=clang-22
has_device "LIBRARY_PATH with clang as the driver" app_lp_clang
# Only compiler drivers read it: with ld itself as the linker it is not a
# search directory (checked through the dry run's input list).
LIBRARY_PATH="$WORK/lp" "$CC_WRAP" main.o -ldev -o app_lp_ld --fatlink-dry-run \
  --fatlink-linker=ld --fatlink-arch=sm_80 > lp_ld.txt 2>&1
check "LIBRARY_PATH: the dry run printed its inputs" test -s lp_ld.txt
check "LIBRARY_PATH: not read when the linker is ld" lacks libdev.a lp_ld.txt

# 1b. The compiler driver's own library directories (`-print-search-dirs`),
# asked for only when a library is in no other: a driver that keeps one of
# its own (as gcc keeps /usr/lib/gcc/<triple>/<version>).
place drv
printf '#!/bin/sh\nif [ "$1" = -print-search-dirs ]; then\n  printf "install: /x/\\nlibraries: =/nonexistent:%s/\\n"\n  exit 0\nfi\nexec cc -L%s "$@"\n' \
  "$WORK/drv" "$WORK/drv" > fake-cc
chmod +x fake-cc
link app_drv -ldev --fatlink-linker="$WORK/fake-cc"
has_device "the driver's library directories (-print-search-dirs)" app_drv
# A library found nowhere fatlink looks: a warning naming it (ld fails too,
# unless its own built-in directories hold it).
link app_nolib -lnowhere_dev
check "-l found nowhere: a warning naming it" \
  grep -q "warning: -lnowhere_dev: not found in the -L directories, LIBRARY_PATH or the compiler's library directories" app_nolib.err
check "-lc (the C library): no warning" lacks 'warning: -lc:' app_nolib.err

# 2. -Wl,--library-path= and -Wl,--library=, and their separate forms.
place wlp
link app_wlp -Wl,--library-path="$WORK/wlp",--library=dev
has_device "-Wl,--library-path=DIR,--library=dev" app_wlp
link app_wlp2 -Wl,--library-path,"$WORK/wlp" -Wl,--library,dev
has_device "-Wl,--library-path,DIR -Wl,--library,dev" app_wlp2
link app_xl -Xlinker -L -Xlinker "$WORK/wlp" -Xlinker -l -Xlinker dev
has_device "-Xlinker -L -Xlinker DIR -Xlinker -l -Xlinker dev" app_xl
link app_wl -Wl,-L,"$WORK/wlp" -Wl,-l:libdev.a
has_device "-Wl,-L,DIR -Wl,-l:libdev.a" app_wl
# A linker option's value is not an input: ld does not open -rpath's, even
# when a file by that name exists (fatlink used to read it as one).
link app_rpath -Wl,-rpath,"$WORK/wlp/libdev.a"
check "-Wl,-rpath,FILE: linked" test -x app_rpath
"$FATLINK" inspect app_rpath > app_rpath.inspect 2>&1
check "-Wl,-rpath,FILE: FILE is no input" grep -q 'no fatbin or OffloadBinary found' app_rpath.inspect

# -Wl,--pop-state ends the -Bstatic pushed with it: -lps is then the shared
# libps.so (no device code), as ld takes it, not libps.a.
place ps libps.a
cc -shared -fPIC -x c - -o ps/libps.so <<<'int ps_function(void) { return 1; }'
link app_ps -L"$WORK/ps" -Wl,--push-state,-Bstatic -Wl,--pop-state -lps -Wl,-rpath,"$WORK/ps"
check "-Wl,--push-state/--pop-state: linked" test -x app_ps
"$FATLINK" inspect app_ps > app_ps.inspect 2>&1
check "-Wl,--pop-state: libps.so taken, not libps.a" grep -q 'no fatbin or OffloadBinary found' app_ps.inspect

# 3. -Wl,@file: ld reads the file's arguments (GNU quoting, nested @file).
place rsp "libdev rsp.a"
printf -- "--library-path '%s'\n-l ':libdev rsp.a'\n" "$WORK/rsp" > linker.rsp
link app_wrsp -Wl,@linker.rsp
has_device "-Wl,@file with --library-path and -l" app_wrsp
printf -- '@linker.rsp\n' > outer.rsp
link app_xrsp -Xlinker @outer.rsp
has_device "-Xlinker @file naming another @file" app_xrsp
link app_norsp -Wl,@missing.rsp
check "-Wl,@file that cannot be read: a warning naming it" \
  grep -q "warning: -Wl,@missing.rsp: cannot expand response file" app_norsp.err

# 4. --sysroot with -L=dir and -L$SYSROOT/dir. The sysroot reaches the
# system through symlinks, so that cc finds its start files and libc there.
SR="$WORK/sysroot"
mkdir -p "$SR" && ln -s /usr "$SR/usr" && ln -s /lib "$SR/lib" && ln -s /lib64 "$SR/lib64"
place "$SR/devlib"
link app_sr1 --sysroot="$SR" -L=/devlib -ldev
has_device "--sysroot=DIR -L=/devlib" app_sr1
link app_sr2 --sysroot "$SR" '-L$SYSROOT/devlib' -ldev
has_device "--sysroot DIR -L\$SYSROOT/devlib" app_sr2
link app_sr3 -Wl,--sysroot="$SR" -Wl,-L=/devlib -ldev
has_device "-Wl,--sysroot=DIR -Wl,-L=/devlib" app_sr3

# 5. GNU ld scripts. ld takes any file that is no object, archive or shared
# library for a script and links what its INPUT and GROUP name.
place scr
printf '/* devices */\nINPUT ( %s )\n' "$WORK/scr/libdev.a" > dev.ld
link app_scr1 dev.ld
has_device "ld script as an input: INPUT(path)" app_scr1
# Found via -l, as libNAME.so (the way libc.so is one): GROUP with a plain
# name, searched in the current directory and then the -L directories.
mkdir -p scr2 && mv scr/libdev.a scr2/libkern_dev.a
printf '/* GNU ld script */\nGROUP ( libkern_dev.a AS_NEEDED ( -lm ) )\n' > scr/libkern.so
link app_scr2 -L"$WORK/scr" -L"$WORK/scr2" -lkern
has_device "ld script found via -l: GROUP(name) searched in -L" app_scr2
# AS_NEEDED(-lNAME) searched like -l; a script as libNAME.a.
printf 'INPUT(AS_NEEDED(-lkern_dev))\n' > scr/libkern2.a
link app_scr3 -L"$WORK/scr" -L"$WORK/scr2" -Wl,-Bstatic -lkern2 -Wl,-Bdynamic
has_device "ld script libNAME.a: AS_NEEDED(-lNAME)" app_scr3
# SEARCH_DIR and INCLUDE, in a script given as an input.
printf 'SEARCH_DIR("%s")\nINCLUDE inner.ld\n' "$WORK/scr2" > outer.ld
printf 'GROUP(-lkern_dev)\n' > inner.ld
link app_scr4 outer.ld
has_device "ld script: SEARCH_DIR and INCLUDE" app_scr4
# -T replaces ld's default script: the default one (ld --verbose) with an
# INPUT added.
ld --verbose | sed -n '/^======/,/^======/p' | sed '1d;$d' > full.ld
printf 'INPUT(%s)\n' "$WORK/scr2/libkern_dev.a" >> full.ld
check "ld --verbose printed its default script" grep -q SECTIONS full.ld
link app_scr6 -Wl,-T,full.ld
has_device "ld script via -Wl,-T: its INPUT" app_scr6
# A script inside the sysroot: its absolute names are in the sysroot.
mkdir -p "$SR/scripts" && cp scr2/libkern_dev.a "$SR/devlib/libkern_dev.a"
printf 'GROUP ( /devlib/libkern_dev.a )\n' > "$SR/scripts/libsk.so"
link app_scr5 --sysroot="$SR" -L=/scripts -lsk
has_device "ld script inside the sysroot: absolute names are the sysroot's" app_scr5
# INCLUDE of a FIFO: not opened, it would block (ld does block on it: a dry
# run, which runs no host link).
mkfifo fifo.ld
printf 'INCLUDE fifo.ld\n' > with_fifo.ld
timeout 20 "$CC_WRAP" main.o with_fifo.ld -o app_fifo --fatlink-dry-run > app_fifo.out 2>&1; rc=$?
check "INCLUDE of a FIFO: fatlink does not block on it (exit $rc)" test "$rc" -ne 124
# One that fatlink cannot read: a warning naming it (ld fails too).
printf 'GROUP ( libkern_dev.a\n' > broken.ld
link app_broken broken.ld
check "unreadable ld script: a warning naming it" \
  grep -q "warning: broken.ld: cannot read it as a GNU ld script (GROUP has no closing ')')" app_broken.err
# A source file the driver compiles is no script, whatever its text ('"'
# would be an unterminated string to ld's lexer), by its extension or -x.
printf 'int main(void) { return %s == 0; }\n' "'\"'" > tricky.c
printf 'int other(void) { return %s == 0; }\n' "'\"'" > tricky.txt
"$CC_WRAP" tricky.c -x c tricky.txt -x none -o app_src 2> app_src.err
check "source files: compiled and linked" test -x app_src
check "source files: no warning" test ! -s app_src.err
link app_mri -Wl,-c,nonexistent.mri
check "MRI script: a warning naming it" \
  grep -q "warning: -c nonexistent.mri: fatlink does not read MRI scripts" app_mri.err
link app_spec -specs=nonexistent.specs
check "-specs: a warning that its libraries are not followed" \
  grep -q "warning: -specs nonexistent.specs: fatlink does not read specs files" app_spec.err

finish
