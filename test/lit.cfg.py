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
config.environment["PATH"] = os.pathsep.join(
    [llvm_bindir, os.path.join(home, ".cargo", "bin"), config.environment["PATH"]])
for var in ["RUSTUP_HOME", "CARGO_HOME", "ASAN_OPTIONS", "UBSAN_OPTIONS"]:
    if var in os.environ:
        config.environment[var] = os.environ[var]
for prog in ["FileCheck", "not", "count", "split-file", "yaml2obj"]:
    which(prog, "LLVM test tool (llvm-22-tools)")

fatlink = need(os.path.abspath(param_or("fatlink", os.path.join(root, "bazel-bin", "tools", "fatlink", "fatlink"))),
               "fatlink (bazel build //tools/fatlink, or --param fatlink=PATH)")
# The runtime library, for programs whose CUDA C++ host code the runtime
# registers (bazel build //runtime:fatlink_rt, or --param fatlink_rt=PATH):
# next to fatlink in bazel-bin and in Bazel's runfiles, else this tree's
# bazel-bin. Only the tests that link it need it, so a missing one is not a
# configuration error: their links fail naming the path.
fatlink_rt = param_or("fatlink_rt", "")
if not fatlink_rt:
    candidates = [os.path.join(os.path.dirname(fatlink), "..", "..", "runtime", "libfatlink_rt.a"),
                  os.path.join(root, "bazel-bin", "runtime", "libfatlink_rt.a")]
    fatlink_rt = next((c for c in candidates if os.path.exists(c)), candidates[0])
fatlink_rt = os.path.abspath(fatlink_rt)
testdata = need(os.path.join(root, "testdata"), "testdata/")
clangxx = which("clang++-22", "clang++-22 (clang-22)")
clang = which("clang-22", "clang-22")
rustc = which("rustc", "rustc (rustup)")
ptxas = need(os.path.join(cuda, "bin", "ptxas"), "ptxas (CUDA toolkit; set CUDA_PATH)")
nvcc = need(os.path.join(cuda, "bin", "nvcc"), "nvcc (CUDA toolkit; set CUDA_PATH)")
fatbinary = need(os.path.join(cuda, "bin", "fatbinary"), "fatbinary (CUDA toolkit; set CUDA_PATH)")
python = which("python3", "python3")

# As root every directory is writable: tests of unwritable outputs need
# another user (LLVM's own lit config has the same feature).
if os.getuid() != 0:
    config.available_features.add("non-root-user")

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
    ("%fatlink_rt", fatlink_rt),
    ("%fatlink", "env TMPDIR=%t.tmp FATLINK_CACHE_DIR=%t.cache " + fatlink),
    # The device code every feature links: libsaxpy, libvecmath and
    # libminicore rlibs and softplus.cu (.bc for sm_75, .o for sm_75,sm_90),
    # built into DIR by test/Inputs/build-testdata.sh.
    ("%build_testdata", "%s %s %s" % ("bash", os.path.join(config.test_source_root, "Inputs", "build-testdata.sh"), testdata)),
    ("%rlibs", "%t.dev/libsaxpy.rlib %t.dev/libvecmath.rlib %t.dev/libminicore.rlib"),
    # CUDA C++ to device bitcode: %clang_cuda_bc --offload-arch=sm_75 a.cu -o a.bc
    ("%clang_cuda_bc", "%s %s --cuda-device-only -fgpu-rdc -O3 -emit-llvm -c" % (clangxx, cuda_flags)),
    # CUDA C++ to a host object with device bitcode (clang's new offload driver).
    ("%clang_cuda_obj_nolto", "%s %s --offload-new-driver -fgpu-rdc -O3 -c" % (clangxx, cuda_flags)),
    ("%clang_cuda_obj", "%s %s --offload-new-driver -fgpu-rdc -foffload-lto -O3 -c" % (clangxx, cuda_flags)),
    ("%clangxx", clangxx),
    ("%clang", clang),
    # A Rust device crate: %rustc_nvptx --crate-name N SRC -o libN.rlib
    ("%rustc_nvptx", "env RUSTC_BOOTSTRAP=1 %s --target nvptx64-nvidia-cuda --edition 2021 -O --crate-type rlib" % rustc),
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
]
