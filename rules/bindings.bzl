"""`gpu_bindings`: typed host bindings of a device link's kernels.

    fatlink bindgen --lang=c++ [--namespace=NS] K.o -o NAME.h     (CcInfo: the header)
    fatlink bindgen --lang=rust K.o -o NAME.rs

The kernel manifests fatlink stored in the device link's host object give
every kernel's parameter types (docs/abi.md, "Generated bindings"): C++
gets one typed launch function per kernel over fatlink/runtime.hpp and
`check_all()`, which checks every kernel against the program's manifest
without a driver; Rust gets a `Kernels` struct of typed
`fatlink_rt::Kernel<P>` handles. The bindings change only when a kernel's
signature does, and a cc_binary that includes the header recompiles then.
"""

load(":providers.bzl", "GpuDeviceLinkInfo")
load(":toolchain.bzl", "TOOLCHAIN_TYPE", "fatlink_toolchain_info")

def _gpu_bindings_impl(ctx):
    tc = fatlink_toolchain_info(ctx)
    host_object = ctx.attr.device_link[GpuDeviceLinkInfo].host_object
    ext = ".h" if ctx.attr.lang == "c++" else ".rs"
    out = ctx.actions.declare_file(ctx.attr.out or ctx.label.name + ext)
    args = ctx.actions.args()
    args.add("bindgen")
    args.add("--lang=" + ctx.attr.lang)
    if ctx.attr.namespace:
        if ctx.attr.lang != "c++":
            fail("%s: namespace is for lang = \"c++\"" % ctx.label)
        args.add("--namespace=" + ctx.attr.namespace)
    args.add(host_object)
    args.add("-o", out)
    ctx.actions.run(
        executable = tc.fatlink,
        arguments = [args],
        inputs = [host_object],
        outputs = [out],
        env = tc.env,
        mnemonic = "GpuBindgen",
        progress_message = "Generating %s bindings %s" % (ctx.attr.lang, out.short_path),
    )
    providers = [DefaultInfo(files = depset([out]))]
    if ctx.attr.lang == "c++":
        # Its directory is an include path: `#include "NAME.h"`.
        providers.append(CcInfo(
            compilation_context = cc_common.create_compilation_context(
                headers = depset([out]),
                includes = depset([out.dirname]),
            ),
        ))
    return providers

gpu_bindings = rule(
    implementation = _gpu_bindings_impl,
    doc = "Typed host bindings (a C++ header, or a Rust module) of a gpu_device_link's kernels, from their manifests.",
    attrs = {
        "device_link": attr.label(
            mandatory = True,
            # Anything else is an analysis error that names the attribute.
            providers = [GpuDeviceLinkInfo],
            doc = "The gpu_device_link whose kernels to bind.",
        ),
        "lang": attr.string(
            default = "c++",
            values = ["c++", "rust"],
            doc = "c++: a header (CcInfo; `#include \"NAME.h\"`); rust: a module for fatlink-rt.",
        ),
        "namespace": attr.string(
            doc = "C++ only: the namespace of the launch functions (fatlink bindgen's default: fatlink_kernels).",
        ),
        "out": attr.string(
            doc = "The output's file name (default: NAME.h or NAME.rs).",
        ),
    },
    toolchains = [str(TOOLCHAIN_TYPE)],
    incompatible_use_toolchain_transition = True,
)
