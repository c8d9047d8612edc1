"""WORKSPACE setup for fatlink's GPU rules.

`fatlink_gpu_toolchain` is a repository rule that finds the tools on the
machine once, when the repository is fetched, and writes a
`fatlink_toolchain` target with their absolute paths and versions, and the
`toolchain()` that WORKSPACE registers, limited to execution platforms of
this machine's OS and CPU (the paths are this machine's):

  rustc  $FATLINK_RUSTC, else `rustc` in PATH or ~/.cargo/bin, resolved
         through `rustc --print sysroot` to the real binary, so that actions
         run it without rustup, HOME or RUSTUP_HOME
  clang  $FATLINK_CLANG, else clang++-22 in PATH
  CUDA   $CUDA_PATH, else /usr/local/cuda

A tool that is missing is not an error here (fatlink itself builds without
rustc): the toolchain records it in `missing`, with where it looked, and
the rule that needs it fails at analysis with the variable to set
(rules/toolchain.bzl, require_tools). CUDA counts as found for clang when
the toolkit has include/cuda_runtime.h and nvvm/libdevice/libdevice.10.bc
(clang's CUDA mode needs both), and for the device link when it has
bin/ptxas and libdevice (fatlink runs the one and links the other). The versions
become part of every action's key, so a refetch after a compiler upgrade
(`bazel sync --only=fatlink_gpu_toolchain`, or any change of those
variables) rebuilds the device code.

`fatlink_rules_dependencies` declares everything another workspace needs to
use the rules (fatlink builds from source there, so LLVM 22 too). The
toolchain is registered by the WORKSPACE itself, after it:

    register_toolchains("@fatlink_gpu_toolchain//:toolchain")

so that a workspace sees, and orders, the toolchains it registers.
"""

load("//bazel:system.bzl", "LLVM_STATIC_COMPONENTS", "system_repository", "zstd_repository")

def _run(ctx, argv):
    result = ctx.execute(argv, timeout = 30)
    if result.return_code != 0:
        return None
    return result.stdout.strip()

def _why_not(ctx, var, path, version_flag):
    """Why the tool at path (from $var, if set) does not run: for `missing`."""
    where = ("%s=%s" % (var, path)) if var in ctx.os.environ else path
    if not ctx.path(path).exists:
        return where + ": no such file"
    return "%s: `%s %s` fails" % (where, path, version_flag)

def _find_rustc(ctx):
    """(rustc, its version, None), or (None, None, where it looked)."""
    rustc = ctx.os.environ.get("FATLINK_RUSTC", "")
    if not rustc:
        found = ctx.which("rustc")
        home = ctx.os.environ.get("HOME", "")
        if found:
            rustc = str(found)
        elif home and ctx.path(home + "/.cargo/bin/rustc").exists:
            rustc = home + "/.cargo/bin/rustc"
    if not rustc:
        return None, None, "FATLINK_RUSTC is not set and no rustc is in PATH or ~/.cargo/bin"
    sysroot = _run(ctx, [rustc, "--print", "sysroot"])
    if sysroot and ctx.path(sysroot + "/bin/rustc").exists:
        # The real compiler, not the rustup proxy in front of it.
        rustc = sysroot + "/bin/rustc"
    version = _run(ctx, [rustc, "-V"])
    if not version:
        return None, None, _why_not(ctx, "FATLINK_RUSTC", rustc, "-V")
    return rustc, version, None

def _find_clang(ctx):
    """(clang, its version or None, None or where it looked)."""
    clang = ctx.os.environ.get("FATLINK_CLANG", "")
    if not clang:
        found = ctx.which("clang++-22")
        if not found:
            return "/usr/bin/clang++-22", None, "FATLINK_CLANG is not set and no clang++-22 is in PATH"
        clang = str(found)
    version = _run(ctx, [clang, "--version"])
    if not version:
        return clang, None, _why_not(ctx, "FATLINK_CLANG", clang, "--version")
    return clang, version, None

def _cuda_lacks(ctx, cuda, files):
    """Where the toolkit is and which of files it lacks, or None if it has them all."""
    absent = [f for f in files if not ctx.path(cuda + "/" + f).exists]
    if not absent:
        return None
    where = ("CUDA_PATH=" + cuda) if "CUDA_PATH" in ctx.os.environ else (cuda + " (CUDA_PATH is not set)")
    return "%s: no %s" % (where, ", ".join(absent))

_LIBDEVICE = "nvvm/libdevice/libdevice.10.bc"

def _fatlink_gpu_toolchain_impl(ctx):
    missing = {}
    rustc, rustc_version, why = _find_rustc(ctx)
    if why:
        missing["rustc"] = why

    clang, clang_version, why = _find_clang(ctx)
    if why:
        missing["clang"] = why

    cuda = ctx.os.environ.get("CUDA_PATH", "/usr/local/cuda")
    ptxas_version = _run(ctx, [cuda + "/bin/ptxas", "--version"])
    # What clang's CUDA mode needs (its wrapper headers include
    # cuda_runtime.h; it links libdevice into the bitcode), and what the
    # device link needs (fatlink runs ptxas and links libdevice).
    for tool, files in [("cuda", ["include/cuda_runtime.h", _LIBDEVICE]), ("ptxas", ["bin/ptxas", _LIBDEVICE])]:
        why = _cuda_lacks(ctx, cuda, files)
        if why:
            missing[tool] = why

    # The CUDA runtime as a cc target (static: no rpath, no runfiles).
    cudart = ""
    if ctx.path(cuda + "/lib64/libcudart_static.a").exists:
        ctx.symlink(cuda + "/lib64/libcudart_static.a", "cuda/libcudart_static.a")
        cudart = """
cc_import(
    name = "cudart_static",
    static_library = "cuda/libcudart_static.a",
)

cc_library(
    name = "cudart",
    linkopts = ["-ldl", "-lpthread", "-lrt"],
    deps = [":cudart_static"],
)
"""

    versions = []
    for v in [rustc_version, clang_version, ptxas_version]:
        if v:
            # First line only; ptxas puts the version on its last.
            versions.append(v.splitlines()[-1 if v.startswith("ptxas") else 0])
    bzl = ctx.attr._toolchain_bzl
    ctx.file("BUILD.bazel", """# Generated by fatlink_gpu_toolchain (rules/repositories.bzl).
load("@local_config_platform//:constraints.bzl", "HOST_CONSTRAINTS")
load("@{repo}//{pkg}:{name}", "fatlink_toolchain")

package(default_visibility = ["//visibility:public"])
{cudart}
fatlink_toolchain(
    name = "fatlink_toolchain",
    rustc = {rustc},
    clang = {clang},
    cuda_path = {cuda},
    cudart = {cudart_label},
    tool_versions = {versions},
    # Not found when this repository was fetched: the rules that need these
    # fail at analysis with the variable to set.
    missing = {missing},
)

# The tools are this machine's paths: only actions that run on an OS and CPU
# like this machine's may use them.
toolchain(
    name = "toolchain",
    exec_compatible_with = HOST_CONSTRAINTS,
    toolchain = ":fatlink_toolchain",
    toolchain_type = "@{repo}//{pkg}:toolchain_type",
)
""".format(
        # repo_name on newer Bazel, where workspace_name is deprecated.
        repo = getattr(bzl, "repo_name", bzl.workspace_name),
        pkg = bzl.package,
        name = bzl.name,
        cudart = cudart,
        rustc = repr(rustc or ""),
        clang = repr(clang),
        cuda = repr(cuda),
        cudart_label = repr(":cudart") if cudart else "None",
        versions = repr("; ".join(versions)),
        missing = repr(missing),
    ))

fatlink_gpu_toolchain = repository_rule(
    implementation = _fatlink_gpu_toolchain_impl,
    attrs = {
        "_toolchain_bzl": attr.label(default = Label("//rules:toolchain.bzl")),
    },
    environ = ["FATLINK_RUSTC", "FATLINK_CLANG", "CUDA_PATH", "PATH"],
    local = True,
    doc = "Finds rustc, clang++-22 and CUDA on this machine; defines the toolchain @<name>//:toolchain to register.",
)

def fatlink_rules_dependencies():
    """Declares the repositories the GPU rules need, unless already declared.

    Call from the WORKSPACE of a project that loads `@fatlink//rules:defs.bzl`.
    """
    if not native.existing_rule("llvm"):
        system_repository(
            name = "llvm",
            build_file = Label("//bazel:llvm.BUILD"),
            default_path = "/usr/lib/llvm-22",
            env_var = "FATLINK_LLVM_ROOT",
            llvm_static_components = LLVM_STATIC_COMPONENTS,
        )
    if not native.existing_rule("cuda"):
        system_repository(
            name = "cuda",
            build_file = Label("//bazel:cuda.BUILD"),
            default_path = "/usr/local/cuda",
            env_var = "CUDA_PATH",
        )
    if not native.existing_rule("zstd"):
        # zstd >= 1.5.7, whose compressor matches CUDA's fatbinary byte for
        # byte (Debian 12's 1.5.4 makes frames 1-2% larger); docs/packager.md.
        zstd_repository(
            name = "zstd",
            min_version = "1.5.7",
        )
    if not native.existing_rule("fatlink_gpu_toolchain"):
        fatlink_gpu_toolchain(name = "fatlink_gpu_toolchain")
