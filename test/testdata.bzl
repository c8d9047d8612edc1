"""The device code most lit tests link, built once per build.

`%build_testdata DIR` (test/lit.cfg.py) gives a test its own copy of the
Rust crates fatlink_device (with its proc-macro crate fatlink_macros, linked
with the C++ toolchain's compiler), vecmath and saxpy (rlibs) and softplus.cu (.bc for
sm_75, a host object for sm_75 and sm_90). Built by each of the 80-odd
files that use it, that was 8 s of rustc and clang per file, about 11
minutes of CPU per suite. This rule runs test/Inputs/build-testdata.sh once,
with the toolchain's rustc, clang and CUDA (rules/toolchain.bzl), and the
tests copy the result (test/lit_test.sh passes it as lit's
`prebuilt_testdata`). By hand, lit still builds the data itself.
"""

load("@bazel_tools//tools/cpp:toolchain_utils.bzl", "find_cpp_toolchain")
load("//rules:library.bzl", "proc_macro_link_env")
load("//rules:toolchain.bzl", "TOOLCHAIN_TYPE", "fatlink_toolchain_info")

def _fatlink_test_data_impl(ctx):
    tc = fatlink_toolchain_info(ctx)
    if not tc.rustc:
        fail("rustc not found when @fatlink_gpu_toolchain was fetched: set FATLINK_RUSTC")
    # rustc links the proc-macro crate fatlink_macros with the C++
    # toolchain's compiler driver (rules/library.bzl, proc_macro_link_env).
    cc_toolchain = find_cpp_toolchain(ctx)
    env = proc_macro_link_env(cc_toolchain)
    env.update(tc.env)
    out = ctx.actions.declare_directory(ctx.label.name)
    script = ctx.file.script
    ctx.actions.run(
        executable = "/bin/bash",
        arguments = [script.path, ctx.attr.testdata_root, out.path],
        inputs = depset(
            [script] + ctx.files.srcs,
            transitive = [tc.rustc_inputs, tc.clang_inputs, tc.cuda_inputs, cc_toolchain.all_files],
        ),
        outputs = [out],
        env = dict(
            env,
            FATLINK_RUSTC = tc.rustc,
            FATLINK_CLANG = tc.clang,
            CUDA_PATH = tc.cuda_path,
            FATLINK_HOST_CC = cc_toolchain.compiler_executable,
        ),
        mnemonic = "FatlinkTestData",
        progress_message = "Building the lit tests' device code %s" % ctx.label,
    )
    return [DefaultInfo(files = depset([out]), runfiles = ctx.runfiles([out]))]

fatlink_test_data = rule(
    implementation = _fatlink_test_data_impl,
    attrs = {
        "script": attr.label(allow_single_file = True, mandatory = True),
        "srcs": attr.label_list(allow_files = True),
        "testdata_root": attr.string(default = "testdata"),
        "_cc_toolchain": attr.label(default = Label("@bazel_tools//tools/cpp:current_cc_toolchain")),
    },
    fragments = ["cpp"],
    toolchains = [str(TOOLCHAIN_TYPE), "@bazel_tools//tools/cpp:toolchain_type"],
)
