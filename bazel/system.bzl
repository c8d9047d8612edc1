"""Repository rules over libraries and toolchains installed on the machine.

`system_repository` symlinks the top-level entries of an installed tree (LLVM,
the CUDA toolkit) into an external repository and adds a BUILD file, so that
targets can use its headers and libraries without absolute paths. The tree is
taken from an environment variable when set, else from a default path, and
the repository is refetched when that variable changes. With
`llvm_static_components`, it also asks the tree's llvm-config which static
libraries those components need and writes them to `static.bzl`.

`zstd_repository` finds a libzstd of at least `min_version`, built with
threads: the tree in FATLINK_ZSTD_ROOT, the one scripts/setup.sh builds
under ~/.cache/fatlink/deps/zstd, or the system's, in that order.
"""

# The LLVM components the fatlink executable links statically (llvm-config
# adds what they depend on). The x86-64 and AArch64 backends compile the
# registration code fatlink cc generates for nvcc host code
# (hostlink/NvccRegistration.cpp).
LLVM_STATIC_COMPONENTS = [
    "aarch64codegen",
    "bitreader",
    "bitwriter",
    "irreader",
    "linker",
    "nvptx",
    "object",
    "option",
    "passes",
    "support",
    "target",
    "targetparser",
    "x86codegen",
]

def _words(text):
    return [w for w in text.replace("\n", " ").replace("\t", " ").split(" ") if w]

def _llvm_static_linkopts(ctx, root, components):
    """The link flags for `components` from static libraries, or None."""
    config = root.get_child("bin").get_child("llvm-config")
    if not config.exists:
        return None
    libs = ctx.execute([config, "--link-static", "--libs"] + components)
    system = ctx.execute([config, "--link-static", "--system-libs"])
    if libs.return_code != 0 or system.return_code != 0:
        return None

    # The system libraries LLVM was built with; most are never referenced by
    # the components fatlink uses, and --as-needed drops those. zstd is left
    # out: fatlink links its own (@zstd).
    sys_flags = []
    for flag in _words(system.stdout):
        if "zstd" in flag or (flag.startswith("/") and not ctx.path(flag).exists):
            continue
        sys_flags.append(flag)
    return (["-L" + str(root.get_child("lib"))] + _words(libs.stdout) +
            ["-Wl,--push-state,--as-needed"] + sys_flags + ["-Wl,--pop-state"])

def _system_repository_impl(ctx):
    path = ctx.os.environ.get(ctx.attr.env_var, ctx.attr.default_path)
    root = ctx.path(path)
    if not root.exists:
        fail("%s not found: install it or set %s to its location" % (path, ctx.attr.env_var))
    for entry in root.readdir():
        ctx.symlink(entry, entry.basename)
    ctx.symlink(ctx.attr.build_file, "BUILD.bazel")
    if ctx.attr.llvm_static_components:
        opts = _llvm_static_linkopts(ctx, root, ctx.attr.llvm_static_components)
        ctx.file("static.bzl", "STATIC_LINKOPTS = %r\n" % (opts if opts != None else []))

system_repository = repository_rule(
    implementation = _system_repository_impl,
    attrs = {
        "build_file": attr.label(mandatory = True, allow_single_file = True),
        "default_path": attr.string(mandatory = True),
        "env_var": attr.string(mandatory = True),
        "llvm_static_components": attr.string_list(),
    },
    environ = ["FATLINK_LLVM_ROOT", "CUDA_PATH"],
    local = True,
)

def _zstd_version(ctx, header):
    """(major, minor, release) from zstd.h's ZSTD_VERSION_* defines."""
    version = {}
    for line in ctx.read(header).splitlines():
        words = _words(line)
        if len(words) == 3 and words[0] == "#define" and words[1] in [
            "ZSTD_VERSION_MAJOR",
            "ZSTD_VERSION_MINOR",
            "ZSTD_VERSION_RELEASE",
        ]:
            version[words[1]] = int(words[2])
    return (
        version.get("ZSTD_VERSION_MAJOR", 0),
        version.get("ZSTD_VERSION_MINOR", 0),
        version.get("ZSTD_VERSION_RELEASE", 0),
    )

def _zstd_candidates(ctx):
    """(include dir, static library) pairs to try, best first."""
    env = ctx.os.environ
    out = []
    if "FATLINK_ZSTD_ROOT" in env:
        root = env["FATLINK_ZSTD_ROOT"]
        out.append((root + "/include", root + "/lib/libzstd.a"))
    deps = env.get("FATLINK_DEPS_DIR", env.get("HOME", "/nonexistent") + "/.cache/fatlink/deps")
    out.append((deps + "/zstd/include", deps + "/zstd/lib/libzstd.a"))
    for libdir in ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib"]:
        out.append(("/usr/include", libdir + "/libzstd.a"))
    return out

def _zstd_repository_impl(ctx):
    want = tuple([int(x) for x in ctx.attr.min_version.split(".")])
    seen = []
    for include, lib in _zstd_candidates(ctx):
        header = ctx.path(include + "/zstd.h")
        if not header.exists or not ctx.path(lib).exists:
            continue
        have = _zstd_version(ctx, header)
        if have < want:
            seen.append("%s (%d.%d.%d)" % (lib, have[0], have[1], have[2]))
            continue
        # Built with threads: fatlink compresses a large cubin with zstd's
        # workers, which a libzstd.a built without them (Debian's) refuses.
        nm = ctx.execute(["nm", "-u", str(ctx.path(lib))])
        if nm.return_code != 0 or "pthread_create" not in nm.stdout:
            seen.append("%s (%d.%d.%d, no threads)" % (lib, have[0], have[1], have[2]))
            continue
        ctx.symlink(header, "include/zstd.h")
        ctx.symlink(ctx.path(include + "/zstd_errors.h"), "include/zstd_errors.h")
        ctx.symlink(ctx.path(lib), "lib/libzstd.a")
        ctx.file("BUILD.bazel", """# libzstd %d.%d.%d from %s
package(default_visibility = ["//visibility:public"])

exports_files(["lib/libzstd.a"])

cc_library(
    name = "zstd",
    srcs = ["lib/libzstd.a"],
    hdrs = ["include/zstd.h", "include/zstd_errors.h"],
    includes = ["include"],
    linkopts = ["-pthread"],
    alwayslink = True,
    linkstatic = True,
)
""" % (have[0], have[1], have[2], lib))
        return
    fail(("fatlink needs libzstd >= %s built with threads (older compressors make " +
          "fatbins larger than CUDA's fatbinary, and large cubins are compressed by " +
          "zstd's threads); found %s: run scripts/setup.sh, which builds one under " +
          "~/.cache/fatlink/deps, or set FATLINK_ZSTD_ROOT to a tree with " +
          "include/zstd.h and lib/libzstd.a (make -C lib libzstd.a-mt)") % (
        ctx.attr.min_version,
        ", ".join(seen) if seen else "none",
    ))

zstd_repository = repository_rule(
    implementation = _zstd_repository_impl,
    attrs = {"min_version": attr.string(mandatory = True)},
    environ = ["FATLINK_ZSTD_ROOT", "FATLINK_DEPS_DIR", "HOME"],
    local = True,
)
