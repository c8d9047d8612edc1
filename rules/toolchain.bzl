"""The fatlink toolchain: fatlink, rustc, clang and the CUDA toolkit.

The GPU rules find their tools through Bazel's toolchain resolution, as
rules_cc and rules_cuda do: each rule asks for the toolchain type
`@fatlink//rules:toolchain_type`, and Bazel picks the first registered
`toolchain()` of that type whose constraints match the execution platform.
A `fatlink_toolchain` target names the compilers by path (they are
installed on the machine, like a C++ toolchain's), fatlink and the host
runtime by label (they are built from source), and the CUDA runtime library
as a cc target. `fatlink_gpu_toolchain` (rules/repositories.bzl) generates
one for the machine; WORKSPACE registers it:

    register_toolchains("@fatlink_gpu_toolchain//:toolchain")

A machine with other paths registers its own first (or passes
`--extra_toolchains=//tools:my_toolchain`, which comes before every
registered one), without editing any BUILD file that uses the rules.

The rules set `incompatible_use_toolchain_transition` (the default from
Bazel 5 on): the toolchain's `fatlink` is then built for the execution
platform that the rule's actions were resolved to, not for the first one.

A tool that the generated toolchain could not find is recorded in
`missing` (with what was looked at), and the rule that needs it fails at
analysis with the variable to set (`require_tools`), not with an execvp or
clang error at execution.

Also here: the `--//rules:archs` build setting, which overrides every
`gpu_device_link`'s `archs` for a whole build, and `parse_arch`, the one
reader of GPU arch names (sm_NN[a|f], compute_NN[a|f]) the rules share.
"""

TOOLCHAIN_TYPE = Label("//rules:toolchain_type")

FatlinkToolchainInfo = provider(
    doc = "Tools and libraries the GPU rules run and link.",
    fields = {
        "rustc": "path of the rustc binary (not a rustup proxy: actions run without HOME)",
        "clang": "path of clang++ 22 or newer",
        "cuda_path": "CUDA toolkit directory (headers, ptxas, libdevice)",
        "fatlink": "FilesToRunProvider of the fatlink executable",
        "runtime": "CcInfo of fatlink's host runtime, linked with every device link",
        "cudart": "CcInfo of the CUDA runtime, linked with CUDA C++ host objects",
        "rustc_inputs": "depset of files rustc needs in the sandbox (empty: it is on the machine)",
        "clang_inputs": "depset of files clang needs in the sandbox",
        "cuda_inputs": "depset of files ptxas and libdevice need in the sandbox",
        "env": "environment of every action (includes the tool versions, so that a new compiler invalidates the cache)",
        "missing": "dict: what the fetch did not find (rustc, clang, cuda, ptxas) -> where it looked",
        "label": "the fatlink_toolchain target, for messages",
    },
)

def fatlink_toolchain_info(ctx):
    """The FatlinkToolchainInfo resolved for a rule that lists TOOLCHAIN_TYPE."""
    return ctx.toolchains[TOOLCHAIN_TYPE].fatlink

def _fatlink_toolchain_impl(ctx):
    env = dict(ctx.attr.env)
    if ctx.attr.tool_versions:
        env["FATLINK_TOOL_VERSIONS"] = ctx.attr.tool_versions
    info = FatlinkToolchainInfo(
        rustc = ctx.attr.rustc,
        clang = ctx.attr.clang,
        cuda_path = ctx.attr.cuda_path,
        fatlink = ctx.attr.fatlink[DefaultInfo].files_to_run,
        runtime = ctx.attr.runtime[CcInfo] if ctx.attr.runtime else CcInfo(),
        cudart = ctx.attr.cudart[CcInfo] if ctx.attr.cudart else CcInfo(),
        rustc_inputs = depset(ctx.files.rustc_files),
        clang_inputs = depset(ctx.files.clang_files),
        cuda_inputs = depset(ctx.files.cuda_files),
        env = env,
        missing = dict(ctx.attr.missing),
        label = ctx.label,
    )
    return [platform_common.ToolchainInfo(fatlink = info), info]

# The tools a toolchain may lack, by their key in `missing`: (what it is, in
# messages; its fatlink_toolchain attribute; the variable that
# @fatlink_gpu_toolchain reads; what to point that variable to). rustc is
# for the Rust crate rules, clang and cuda for cuda_gpu_library, ptxas for
# gpu_device_link.
_TOOLS = {
    "rustc": ("rustc", "rustc", "FATLINK_RUSTC", "a rustc built on LLVM <= 22 (or put rustc in PATH)"),
    "clang": ("clang++", "clang", "FATLINK_CLANG", "clang++ 22 or newer (or put clang++-22 in PATH)"),
    "cuda": ("the CUDA toolkit for clang", "cuda_path", "CUDA_PATH", "a CUDA toolkit"),
    "ptxas": ("ptxas and libdevice for the device link", "cuda_path", "CUDA_PATH", "a CUDA toolkit"),
}

_SYNC = "`bazel sync --only=fatlink_gpu_toolchain`"

def require_tools(ctx, tc, tools):
    """Fails the analysis of ctx's target if the toolchain lacks one of tools.

    tools: keys of _TOOLS. The generated toolchain records what its fetch did
    not find in `missing`; a toolchain of one's own may leave a path empty.
    Either way the message names the target, the tool, and what to set.
    """
    for tool in tools:
        what, attr_name, var, target = _TOOLS[tool]
        where = tc.missing.get(tool)
        if where:
            fail(("%s: %s not found when @fatlink_gpu_toolchain was fetched (%s): " +
                  "set %s to %s and run %s") % (ctx.label, what, where, var, target, _SYNC))
        if not getattr(tc, attr_name):
            fail(("%s: %s not found: the fatlink toolchain %s has %s = \"\": set it there, " +
                  "or, for @fatlink_gpu_toolchain, set %s to %s and run %s") %
                 (ctx.label, what, tc.label, attr_name, var, target, _SYNC))

fatlink_toolchain = rule(
    implementation = _fatlink_toolchain_impl,
    doc = "Where the GPU rules find rustc, clang, CUDA and fatlink; " +
          "wrap it in a `toolchain()` of type @fatlink//rules:toolchain_type and register that.",
    attrs = {
        "rustc": attr.string(
            doc = "Absolute path of rustc (for rustup: `$(rustc --print sysroot)/bin/rustc`).",
        ),
        "clang": attr.string(
            default = "/usr/bin/clang++-22",
            doc = "Absolute path of clang++ (22 or newer) for CUDA C++.",
        ),
        "cuda_path": attr.string(
            default = "/usr/local/cuda",
            doc = "CUDA toolkit directory: headers for clang, ptxas and libdevice for fatlink.",
        ),
        "fatlink": attr.label(
            default = Label("//tools/fatlink"),
            executable = True,
            cfg = "exec",
            doc = "The fatlink executable.",
        ),
        "runtime": attr.label(
            default = Label("//runtime"),
            providers = [CcInfo],
            doc = "fatlink's host runtime, linked into every program with a device link.",
        ),
        "cudart": attr.label(
            providers = [CcInfo],
            doc = "The CUDA runtime (the host stubs of CUDA C++ kernels call cudaLaunchKernel).",
        ),
        "rustc_files": attr.label_list(
            allow_files = True,
            doc = "Files rustc needs as action inputs (its sysroot), for remote execution.",
        ),
        "clang_files": attr.label_list(
            allow_files = True,
            doc = "Files clang needs as action inputs, for remote execution.",
        ),
        "cuda_files": attr.label_list(
            allow_files = True,
            doc = "Files of the CUDA toolkit the actions need as inputs, for remote execution.",
        ),
        "tool_versions": attr.string(
            doc = "`rustc -V; clang --version; ptxas --version` in one line: part of every action's key.",
        ),
        "env": attr.string_dict(
            doc = "Extra environment of every action.",
        ),
        "missing": attr.string_dict(
            doc = "What fatlink_gpu_toolchain did not find, so that the rules that need it " +
                  "fail at analysis: rustc, clang, cuda (clang's CUDA headers and libdevice), " +
                  "ptxas (ptxas and libdevice) -> where it looked.",
        ),
    },
)

ArchsInfo = provider(
    doc = "The value of the `--//rules:archs` build setting.",
    fields = {"archs": "list of targets; empty when the setting is not given"},
)

def parse_arch(name):
    """sm_NN[a|f] or compute_NN[a|f] -> struct(kind, sm, suffix, cpu); else None.

    As fatlink reads them (lto/Target.cpp parseArchName): NN is a decimal
    number (no leading zero), a and f mark arch- and family-specific code.
    cpu is the sm_ name a compute_ target compiles for.
    """
    for kind in ["sm", "compute"]:
        if not name.startswith(kind + "_"):
            continue
        digits = name[len(kind) + 1:]
        suffix = ""
        if digits and digits[-1] in ["a", "f"]:
            suffix = digits[-1]
            digits = digits[:-1]
        if not digits or not digits.isdigit() or digits[0] == "0":
            return None
        return struct(kind = kind, sm = int(digits), suffix = suffix, cpu = "sm_" + digits + suffix)
    return None

def _archs_setting_impl(ctx):
    value = ctx.build_setting_value
    return [ArchsInfo(archs = [a.strip() for a in value.split(",") if a.strip()])]

archs_setting = rule(
    implementation = _archs_setting_impl,
    build_setting = config.string(flag = True),
    doc = "A comma-separated GPU target list that overrides every gpu_device_link's archs.",
)
