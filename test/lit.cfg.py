# lit.cfg.py: configuration of fatlink's lit tests (test/**/*.test).
#
# Each test is one feature: RUN lines that build their inputs at test time
# from the readable sources under testdata/ with the real rustc, clang-22
# and ptxas (or write small malformed inputs with yaml2obj and split-file),
# run fatlink and check what it prints with FileCheck, as lld's and
# bloaty's tests do. Bazel runs each file as its own test (test/BUILD.bazel,
# test/lit_test.sh); `lit test/foo.test` runs one by hand (docs/testing.md).
#
# Every tool is looked up here, once: a missing one is a configuration
# error, which fails the test, never a skip.

import os
import platform
import shutil
import subprocess

import lit.formats

config.name = "fatlink"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".test"]
config.excludes = ["Inputs"]
config.test_source_root = os.path.dirname(os.path.abspath(__file__))
# Outputs (%t) go to --param exec_root (Bazel's $TEST_TMPDIR), never into
# the source tree or the runfiles.
config.test_exec_root = lit_config.params.get(
    "exec_root", os.path.join(config.test_source_root, "..", ".lit-out"))

root = os.path.dirname(config.test_source_root)


def param_or(name, default):
    return lit_config.params.get(name) or os.environ.get(name.upper()) or default


def need(path, what):
    if not path or not os.path.exists(path):
        lit_config.fatal("%s not found (%s): run scripts/setup.sh" % (what, path))
    return path


def which(prog, what):
    return need(shutil.which(prog, path=config.environment["PATH"]), what)


# LLVM 22's directory goes first on PATH, so that its test tools (FileCheck,
# not, count, split-file, yaml2obj) and llvm-dis, llvm-objdump and
# llvm-readelf run by their plain names, as in LLVM's own tests (another
# LLVM's /usr/bin/yaml2obj may be installed too); rustup's cargo and rustc
# after it.
try:
    llvm_bindir = subprocess.check_output(["llvm-config-22", "--bindir"], text=True).strip()
except OSError:
    lit_config.fatal("llvm-config-22 not found: run scripts/setup.sh (llvm-22)")
cuda = os.environ.get("CUDA_PATH", "/usr/local/cuda")
home = os.environ.get("HOME", "")
# The CUDA toolkit's bin directory is taken off PATH: a fresh machine does
# not have it there, and fatlink must find every CUDA tool through
# CUDA_PATH (nvcc run as a bare "nvcc" with no CUDA on PATH cannot find
# cicc; the CI machine showed it and this machine did not).
cuda_bin = os.path.realpath(os.path.join(cuda, "bin"))
config.environment["PATH"] = os.pathsep.join(
    [llvm_bindir, os.path.join(home, ".cargo", "bin")] +
    [d for d in config.environment["PATH"].split(os.pathsep)
     if d and os.path.realpath(d) != cuda_bin])
for var in ["RUSTUP_HOME", "CARGO_HOME", "ASAN_OPTIONS", "UBSAN_OPTIONS"]:
    if var in os.environ:
        config.environment[var] = os.environ[var]
for prog in ["FileCheck", "not", "count", "split-file", "yaml2obj"]:
    which(prog, "LLVM test tool (llvm-22-tools)")
# util-linux's script: a command on a pseudo-terminal (the progress line
# is drawn only on a terminal).
script = which("script", "script (util-linux)")

fatlink = need(os.path.abspath(param_or("fatlink", os.path.join(root, "bazel-bin", "tools", "fatlink", "fatlink"))),
               "fatlink (bazel build //tools/fatlink, or --param fatlink=PATH)")
testdata = need(os.path.join(root, "testdata"), "testdata/")
# fuzz/record_sweep, for test/reliability/metadata-sweep.test alone: a
# missing one is a warning here and fails that test at its first use.
record_sweep = os.path.abspath(param_or("record_sweep", os.path.join(root, "bazel-bin", "fuzz", "record_sweep")))
if not os.path.exists(record_sweep):
    lit_config.warning("record_sweep not found (%s): bazel build //fuzz:record_sweep, or --param record_sweep=PATH"
                       % record_sweep)
# The shared device code, prebuilt (Bazel: //test:testdata_dev); else each
# test builds it.
prebuilt_testdata = lit_config.params.get("prebuilt_testdata", "")
if prebuilt_testdata:
    prebuilt_testdata = need(os.path.abspath(prebuilt_testdata), "prebuilt_testdata")
clangxx = which("clang++-22", "clang++-22 (clang-22)")
clang = which("clang-22", "clang-22")
rustc = which("rustc", "rustc (rustup)")
ptxas = need(os.path.join(cuda, "bin", "ptxas"), "ptxas (CUDA toolkit; set CUDA_PATH)")
nvcc = need(os.path.join(cuda, "bin", "nvcc"), "nvcc (CUDA toolkit; set CUDA_PATH)")
fatbinary = need(os.path.join(cuda, "bin", "fatbinary"), "fatbinary (CUDA toolkit; set CUDA_PATH)")
python = which("python3", "python3")
# NVIDIA's cuobjdump, the reference for `fatlink inspect` on nvcc's output:
# not in the CUDA 13.0 image; scripts/setup.sh unpacks it from its wheel.
cuobjdump = shutil.which("cuobjdump", path=config.environment["PATH"]) or need(
    os.path.join(os.environ.get("FATLINK_DEPS_DIR") or os.path.join(home, ".cache", "fatlink", "deps"),
                 "cuobjdump", "bin", "cuobjdump"),
    "cuobjdump (scripts/setup.sh: the nvidia-cuda-cuobjdump wheel)")


# Fake ptxases in tests hand the probes (--version, --help) to the real one.
config.environment["REAL_PTXAS"] = ptxas

# The ELF machine name llvm-readelf prints for this host's objects.
elf_machine = {"x86_64": "X86-64", "aarch64": "AArch64"}.get(platform.machine())
if not elf_machine:
    lit_config.fatal("fatlink's tests run on x86_64 or aarch64 hosts, not %s" % platform.machine())

cuda_flags = "-x cuda --cuda-path=%s -Wno-unknown-cuda-version" % cuda

# Config substitutions apply before lit's own (%t, %s, %S), so %t inside
# them is expanded for the test that uses them. %fatlink runs with a
# per-test TMPDIR (%t.tmp) and cache, so a test can check that nothing was
# left behind: `ls -A %t.tmp | count 0`.
config.substitutions += [
    ("%fatlink", "env TMPDIR=%t.tmp FATLINK_CACHE_DIR=%t.cache " + fatlink),
    # The device code every feature links: libsaxpy, libvecmath and
    # libfatlink_device rlibs and softplus.cu (.bc for sm_75, .o for sm_75,sm_90),
    # built into DIR by test/Inputs/build-testdata.sh.
    # Under Bazel, //test:testdata_dev built it once for every test
    # (test/testdata.bzl) and each test copies it.
    ("%build_testdata", "bash %s %s" % (
        os.path.join(config.test_source_root, "Inputs", "build-testdata.sh"),
        ("--copy " + prebuilt_testdata) if prebuilt_testdata else testdata)),
    ("%rlibs", "%t.dev/libsaxpy.rlib %t.dev/libvecmath.rlib %t.dev/libfatlink_device.rlib"),
    # CUDA C++ to device bitcode: %clang_cuda_bc --offload-arch=sm_75 a.cu -o a.bc
    ("%clang_cuda_bc", "%s %s --cuda-device-only -fgpu-rdc -O3 -emit-llvm -c" % (clangxx, cuda_flags)),
    # CUDA C++ to a host object with device bitcode (clang's new offload driver).
    ("%clang_cuda_obj_nolto", "%s %s --offload-new-driver -fgpu-rdc -O3 -c" % (clangxx, cuda_flags)),
    ("%clang_cuda_obj", "%s %s --offload-new-driver -fgpu-rdc -foffload-lto -O3 -c" % (clangxx, cuda_flags)),
    ("%clangxx", clangxx),
    ("%clang", clang),
    # A Rust device crate: %rustc_nvptx --crate-name N SRC -o libN.rlib.
    # `-L dependency=%t.dev`: where rustc finds the proc-macro crate
    # fatlink_macros that %build_testdata's libfatlink_device.rlib depends
    # on (#[fatlink_device::kernel]), for crates that take that rlib by
    # --extern alone.
    ("%rustc_nvptx", "env RUSTC_BOOTSTRAP=1 %s --target nvptx64-nvidia-cuda --edition 2021 -O --crate-type rlib -L dependency=%%t.dev" % rustc),
    ("%rustc", rustc),
    ("%ptxas", ptxas),
    ("%nvcc", nvcc),
    ("%fatbinary", fatbinary),
    ("%cuda", cuda),
    ("%testdata", testdata),
    # The repository (in Bazel: its runfiles) for tests that build a crate.
    ("%src_root", root),
    ("%python", python),
    ("%host_elf_machine", elf_machine),
    # Helper scripts for what lit's shell cannot say (test/Inputs).
    ("%inputs", os.path.join(config.test_source_root, "Inputs")),
    ("%record_sweep", record_sweep),
    ("%cuobjdump", cuobjdump),
    # `%on_tty "CMD"` runs CMD with stdin, stdout and stderr on a
    # pseudo-terminal; what it wrote comes out on stdout.
    ("%on_tty", "%s -qec" % script),
]

# `%without_dac_override CMD` runs CMD bound by file modes: as root (CI
# runs as root), without the capabilities that let root write and search
# any directory (setpriv drops CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH,
# so a mode 555 directory is read-only even to its owner, root); as another
# user, CMD as it is. Tests of unwritable outputs run it, never skip.
if os.getuid() == 0:
    setpriv = which("setpriv", "setpriv (util-linux)")
    config.substitutions.append(("%without_dac_override", "%s --inh-caps=-dac_override,-dac_read_search "
                                 "--bounding-set=-dac_override,-dac_read_search" % setpriv))
else:
    config.substitutions.append(("%without_dac_override", ""))

# fatlink itself, for the few tests that must choose its environment
# (another TMPDIR, a locale): %fatlink fixes TMPDIR and the cache.
config.substitutions.append(("%{fatlink-exe}", fatlink))

# An address-space limit (KiB, for `ulimit -v`) that stops a fatlink
# reading without bound before it eats the machine's memory: 4 GiB, or none
# under --config=asan (its ASAN_OPTIONS reach the tests), whose shadow
# memory alone reserves terabytes of address space.
config.substitutions.append(("%{vlimit}", "unlimited" if "ASAN_OPTIONS" in os.environ else "4194304"))

# The host runtime's archive (runtime/, docs/runtime.md) for the tests that
# link it into programs (test/runtime, test/cargo/example.test): Bazel's
# runfiles (//runtime:e2e_data, passed by lit_test.sh), or by hand the one
# under bazel-bin. Only those tests need it, so a missing one is a warning
# here and fails them at their first RUN line (`test -s %rt_lib`).
rt_lib = os.path.abspath(param_or("rt_lib", os.path.join(root, "bazel-bin", "runtime", "libfatlink_rt.a")))
if not os.path.exists(rt_lib):
    lit_config.warning("libfatlink_rt.a not found (%s): bazel build //runtime:e2e_data, or --param rt_lib=PATH" % rt_lib)
# Under --config=asan the archive is instrumented: a program that links it
# needs the sanitizers' runtimes too, gcc's libasan first of all; rustc's
# links pass -nodefaultlibs, so they name the libraries.
rt_ldflags = rt_rustflags = ""
if os.path.exists(rt_lib):
    rt_syms = subprocess.run(["nm", rt_lib], capture_output=True, text=True).stdout
    if " U __asan_" in rt_syms:
        rt_ldflags = "-fsanitize=address,undefined"
        rt_rustflags = "-ldylib=asan -ldylib=ubsan"
# A machine with an NVIDIA driver installed: the runtime's "no driver"
# messages for the default libcuda.so.1 can only be seen without one.
ldconfig = shutil.which("ldconfig") or "/sbin/ldconfig"
if "libcuda.so.1 " in subprocess.run([ldconfig, "-p"], capture_output=True, text=True).stdout:
    config.available_features.add("libcuda")
config.substitutions += [
    ("%rt_lib", rt_lib),
    ("%rt_ldflags", rt_ldflags),
    ("%rt_rustflags", rt_rustflags),
    # The C compiler the runtime's users link with (gcc: its sanitizer
    # runtimes match an instrumented archive).
    ("%host_cc", which("cc", "cc (gcc)")),
    # The C++ compiler of hosts that use fatlink/runtime.hpp.
    ("%host_cxx", which("g++", "g++")),
]
