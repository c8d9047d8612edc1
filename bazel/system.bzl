"""A repository rule over a toolchain installed on the machine.

`system_repository` symlinks the top-level entries of an installed tree (LLVM,
the CUDA toolkit) into an external repository and adds a BUILD file, so that
targets can use its headers and libraries without absolute paths. The tree is
taken from an environment variable when set, else from a default path, and
the repository is refetched when that variable changes.
"""

def _system_repository_impl(ctx):
    path = ctx.os.environ.get(ctx.attr.env_var, ctx.attr.default_path)
    root = ctx.path(path)
    if not root.exists:
        fail("%s not found: install it or set %s to its location" % (path, ctx.attr.env_var))
    for entry in root.readdir():
        ctx.symlink(entry, entry.basename)
    ctx.symlink(ctx.attr.build_file, "BUILD.bazel")

system_repository = repository_rule(
    implementation = _system_repository_impl,
    attrs = {
        "build_file": attr.label(mandatory = True, allow_single_file = True),
        "default_path": attr.string(mandatory = True),
        "env_var": attr.string(mandatory = True),
    },
    environ = ["FATLINK_LLVM_ROOT", "CUDA_PATH"],
    local = True,
)
