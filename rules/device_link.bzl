"""`gpu_device_link`: the whole-program device link, split into actions.

    fatlink device-link --arch=A,B,C <rlibs, CUDA objects> -o NAME.bc     link + LTO, once
    fatlink device-link --codegen-only --arch=A NAME.bc -o NAME/A.cubin   one per target
    fatlink package NAME/*.cubin NAME/*.ptx --kernels-from=NAME.bc -o NAME.o
    fatlink package ... -o NAME.fatbin                                    (output group fatbin)

Splitting lets Bazel run the targets' code generation in parallel (or
remotely) and re-run only what changed: a new target reruns one codegen
action and the packaging, not the link. The result is byte-identical to the
one-step `fatlink device-link --arch=A,B,C ... -o NAME.o`. Every action sees
only its declared inputs and writes no timestamps or paths.

With `partitions = N`, each cubin target's code generation is split too,
one action per (target, partition), as `--partitions=N` splits it:

    fatlink device-link --split=N NAME.bc -o NAME/parts                  once: part-0.bc .. part-N-1.bc
    fatlink device-link --codegen-only --arch=A NAME/parts/part-K.bc -o NAME/A/part-K.cubin
    fatlink device-link --arch=A NAME.bc --join NAME/A/part-0.cubin ... -o NAME/A.cubin

A partition's code generation sees only its own piece, so after an edit
only the partitions whose bitcode changed compile again; the join (nvlink)
and the packaging always run. Each A.cubin is byte-identical to
`fatlink device-link --codegen-only --partitions=N --arch=A NAME.bc`.
PTX targets (compute_XX) stay one action: the driver JITs one module.

The targets come from `--//rules:archs` when it is given, else from `archs`.
What fatlink would reject only after the link is rejected at analysis, with
the attribute and the value: a target that is not sm_NN[a|f] or
compute_NN[a|f], a `compress` fatlink does not know, a CUDA C++ library
anywhere in deps whose offload_arch is newer than the oldest target (its
bitcode cannot serve that target; fatlink's own message would tell a
command-line user to recompile with --offload-arch), and a toolchain
without ptxas or libdevice.
"""

load("@bazel_tools//tools/cpp:toolchain_utils.bzl", "find_cpp_toolchain")
load(":library.bzl", "CC_TOOLCHAIN_ATTRS", "archive_objects", "offload_archs")
load(":providers.bzl", "GpuDeviceLinkInfo", "GpuLibraryInfo")
load(":toolchain.bzl", "ArchsInfo", "TOOLCHAIN_TYPE", "fatlink_toolchain_info", "parse_arch", "require_tools")

DEFAULT_ARCHS = ["sm_75", "sm_80", "sm_90", "sm_100", "sm_120", "compute_120"]

# Bazel's cc toolchain CPU names -> fatlink's --host-arch.
HOST_ARCHS = {
    "k8": "x86_64",
    "x86_64": "x86_64",
    "aarch64": "aarch64",
    "arm64": "aarch64",
}

def _targets(ctx):
    """The GPU targets, without duplicates, in order, and where they come from.

    Entries are stripped of spaces, as --//rules:archs's are ("sm_80 " is
    sm_80, not a file "sm_80 .cubin").
    """
    flag = ctx.attr._archs[ArchsInfo].archs
    if flag:
        archs, source = flag, "--%s" % ctx.attr._archs.label
    elif ctx.attr.archs:
        archs, source = [a.strip() for a in ctx.attr.archs], "its archs"
    else:
        archs, source = DEFAULT_ARCHS, "the default archs"
    seen = {}
    for a in archs:
        if not parse_arch(a):
            fail("%s: GPU target '%s' in %s is not sm_XX[a|f] or compute_XX[a|f] " % (ctx.label, a, source) +
                 "(presets such as all-major are not expanded here: list the targets)")
        seen[a] = True
    return seen.keys(), source

# What fatlink's --compress accepts (linker/DeviceLink.cpp, parseCompression).
_COMPRESS = ["none", "zstd"] + ["zstd-%d" % n for n in range(1, 23)]

def _check_compress(ctx):
    if ctx.attr.compress and ctx.attr.compress not in _COMPRESS:
        fail(("%s: compress = \"%s\" is not none, zstd or zstd-1 to zstd-22 (zstd-N: zstd at " +
              "level N); leave it unset for fatlink's default, zstd-19") % (ctx.label, ctx.attr.compress))

def _check_offload_archs(ctx, infos, targets, source):
    """Every CUDA C++ library in deps can serve every target.

    fatlink's rule (lto/Link.cpp, planGroups): bitcode for sm_NN serves the
    targets of sm_NN and newer; bitcode for an arch-specific sm_NNa (or
    family sm_NNf) serves that arch only.
    """
    parsed = [(t, parse_arch(t)) for t in targets]
    oldest, oldest_arch = parsed[0]
    for t, p in parsed:
        if p.sm < oldest_arch.sm:
            oldest, oldest_arch = t, p
    errors = []
    libraries = depset(transitive = [offload_archs(i) for i in infos]).to_list()
    for label, arch in sorted(libraries):
        a = parse_arch(arch)
        if not a:
            continue  # cuda_gpu_library checks its own
        if a.suffix:
            bad = [t for t, p in parsed if p.cpu != a.cpu]
            why = "whose code runs on %s only, not on %s, a target" % (a.cpu, bad[0]) if bad else ""
        else:
            bad = [t for t, p in parsed if p.sm < a.sm]
            why = "newer than %s, the oldest target" % oldest
        if bad:
            errors.append(
                ("%s: cuda_gpu_library %s has offload_arch = \"%s\", %s of %s (%s): set " +
                 "offload_arch = \"sm_%d\" on %s (the bitcode of one arch serves every target " +
                 "at or above it)") % (ctx.label, label, arch, why, ctx.label, source, oldest_arch.sm, label),
            )
    if errors:
        fail("\n".join(errors))

def _path(f):
    return f.path

def _package(ctx, tc, images, out, program, host_arch):
    """`fatlink package`: a host object (with the kernel table) or a fatbin."""
    args = ctx.actions.args()
    args.add("package")
    args.add_all(images)
    if program:
        args.add("--kernels-from=" + program.path)
        args.add("--host-arch=" + host_arch)
    if ctx.attr.compress:
        args.add("--compress=" + ctx.attr.compress)
    args.add("-o", out)
    ctx.actions.run(
        executable = tc.fatlink,
        arguments = [args],
        inputs = images + ([program] if program else []),
        outputs = [out],
        env = tc.env,
        mnemonic = "GpuPackage",
        progress_message = "Packaging %s" % out.short_path,
    )

def _gpu_device_link_impl(ctx):
    tc = fatlink_toolchain_info(ctx)
    cc_toolchain = find_cpp_toolchain(ctx)
    host_arch = HOST_ARCHS.get(cc_toolchain.cpu)
    if not host_arch:
        fail("%s: no fatlink host object format for CPU '%s' (x86_64 and aarch64 only)" %
             (ctx.label, cc_toolchain.cpu))
    require_tools(ctx, tc, ["ptxas"])
    targets, source = _targets(ctx)
    _check_compress(ctx)
    infos = [d[GpuLibraryInfo] for d in ctx.attr.deps]
    _check_offload_archs(ctx, infos, targets, source)
    n = ctx.attr.partitions
    if n < 0 or n > 256:
        fail("%s: partitions = %d: give 1 to 256 (or 0: one code generation action per target)" %
             (ctx.label, n))
    # Sorted by path: the module order (and so the bytes) then does not
    # depend on the order of deps, only on what is linked.
    device_inputs = sorted(
        depset(transitive = [i.device_inputs for i in infos]).to_list(),
        key = _path,
    )
    tools_in = tc.cuda_inputs
    cuda = "--cuda-path=" + tc.cuda_path
    name = ctx.label.name

    # 1. Link every library's bitcode and optimize the program once.
    program = ctx.actions.declare_file(name + ".bc")
    args = ctx.actions.args()
    args.add("device-link")
    args.add("--arch=" + ",".join(targets))
    args.add(cuda)
    args.add_all(ctx.attr.link_opts)
    args.add_all(device_inputs)
    args.add("-o", program)
    ctx.actions.run(
        executable = tc.fatlink,
        arguments = [args],
        inputs = depset(device_inputs, transitive = [tools_in]),
        outputs = [program],
        env = tc.env,
        mnemonic = "GpuDeviceLink",
        progress_message = "Device-linking %s for %s" % (ctx.label, ",".join(targets)),
    )

    # 2. Code generation and ptxas, one action per target, or per (cubin
    # target, partition) with a join per target.
    pieces = []
    if n and any([not t.startswith("compute_") for t in targets]):
        pieces = [ctx.actions.declare_file("%s/parts/part-%d.bc" % (name, k)) for k in range(n)]
        ctx.actions.run(
            executable = tc.fatlink,
            arguments = ["device-link", "--split=%d" % n, program.path, "-o", pieces[0].dirname],
            inputs = [program],
            outputs = pieces,
            env = tc.env,
            mnemonic = "GpuSplit",
            progress_message = "Splitting %s into %d partitions" % (ctx.label, n),
        )
    images = []
    part_cubins = []
    for t in targets:
        image = ctx.actions.declare_file(
            "%s/%s.%s" % (name, t, "ptx" if t.startswith("compute_") else "cubin"),
        )
        images.append(image)
        if pieces and not t.startswith("compute_"):
            cubins = []
            for k, piece in enumerate(pieces):
                cubin = ctx.actions.declare_file("%s/%s/part-%d.cubin" % (name, t, k))
                cubins.append(cubin)
                ctx.actions.run(
                    executable = tc.fatlink,
                    arguments = ["device-link", "--codegen-only", "--arch=" + t, cuda, "-j", "1"] +
                                ctx.attr.codegen_opts + [piece.path, "-o", cubin.path],
                    inputs = depset([piece], transitive = [tools_in]),
                    outputs = [cubin],
                    env = tc.env,
                    mnemonic = "GpuCodegen",
                    progress_message = "Generating %s code for partition %d of %s" % (t, k, ctx.label),
                )
            part_cubins.extend(cubins)
            args = ctx.actions.args()
            args.add_all(["device-link", "--arch=" + t, cuda])
            args.add_all(ctx.attr.codegen_opts)
            args.add(program)
            args.add_all(cubins, before_each = "--join")
            args.add("-o", image)
            ctx.actions.run(
                executable = tc.fatlink,
                arguments = [args],
                inputs = depset([program] + cubins, transitive = [tools_in]),
                outputs = [image],
                env = tc.env,
                mnemonic = "GpuJoin",
                progress_message = "Joining %d partitions of %s for %s" % (n, ctx.label, t),
            )
            continue
        ctx.actions.run(
            executable = tc.fatlink,
            arguments = ["device-link", "--codegen-only", "--arch=" + t, cuda, "-j", "1"] +
                        ctx.attr.codegen_opts + [program.path, "-o", image.path],
            inputs = depset([program], transitive = [tools_in]),
            outputs = [image],
            env = tc.env,
            mnemonic = "GpuCodegen",
            progress_message = "Generating %s code for %s" % (t, ctx.label),
        )

    # 3. Package: a host object (for cc_binary) and a plain fatbin.
    host_object = ctx.actions.declare_file(name + ".o")
    _package(ctx, tc, images, host_object, program, host_arch)
    fatbin = ctx.actions.declare_file(name + ".fatbin")
    _package(ctx, tc, images, fatbin, None, None)

    # The host object has no global symbols: link it whole.
    archive = archive_objects(ctx, cc_toolchain, "lib%s_device.a" % name, [host_object])
    feature_configuration = cc_common.configure_features(
        ctx = ctx,
        cc_toolchain = cc_toolchain,
        requested_features = ctx.features,
        unsupported_features = ctx.disabled_features,
    )
    library = cc_common.create_library_to_link(
        actions = ctx.actions,
        feature_configuration = feature_configuration,
        cc_toolchain = cc_toolchain,
        static_library = archive,
        alwayslink = True,
    )
    own = CcInfo(linking_context = cc_common.create_linking_context(
        linker_inputs = depset([cc_common.create_linker_input(
            owner = ctx.label,
            libraries = depset([library]),
        )]),
    ))
    cc_info = cc_common.merge_cc_infos(
        cc_infos = [own, tc.runtime] + [i.cc_info for i in infos],
    )
    return [
        DefaultInfo(files = depset([host_object])),
        cc_info,
        GpuDeviceLinkInfo(
            host_object = host_object,
            fatbin = fatbin,
            bitcode = program,
            targets = targets,
        ),
        OutputGroupInfo(
            fatbin = depset([fatbin]),
            bitcode = depset([program]),
            images = depset(images),
            partitions = depset(pieces + part_cubins),
        ),
    ]

gpu_device_link = rule(
    implementation = _gpu_device_link_impl,
    doc = "Whole-program device link of GPU libraries: a host object with the multi-target fatbin (CcInfo for cc_binary / rust_binary), and a plain fatbin in output group `fatbin`.",
    attrs = dict(CC_TOOLCHAIN_ATTRS, **{
        "deps": attr.label_list(
            providers = [GpuLibraryInfo],
            mandatory = True,
            doc = "rust_gpu_library and cuda_gpu_library targets; their dependencies are linked too.",
        ),
        "archs": attr.string_list(
            doc = "GPU targets: sm_XX[a|f] (cubin) and compute_XX[a|f] (PTX for JIT), spaces " +
                  "stripped. --//rules:archs overrides it; default " + ",".join(DEFAULT_ARCHS) + ".",
        ),
        "link_opts": attr.string_list(
            doc = "Extra `fatlink device-link` options for the link (e.g. --ftz, --export-symbol=NAME, -O2).",
        ),
        "codegen_opts": attr.string_list(
            doc = "Extra options for each target's code generation (e.g. --ptx-version=8.0).",
        ),
        "partitions": attr.int(
            default = 0,
            doc = "Split each cubin target's code generation into this many actions, one per " +
                  "partition (as `fatlink device-link --partitions=N`), joined per target by nvlink; " +
                  "an edit then recompiles only the partitions whose code changed. " +
                  "0 (default): one code generation action per target.",
        ),
        "compress": attr.string(
            doc = "Fatbin entry compression: none, zstd or zstd-1 to zstd-22 (default: fatlink's, zstd-19, which needs an R550+ driver).",
        ),
        "_archs": attr.label(default = Label("//rules:archs")),
    }),
    fragments = ["cpp"],
    toolchains = [str(TOOLCHAIN_TYPE), "@bazel_tools//tools/cpp:toolchain_type"],
    incompatible_use_toolchain_transition = True,
)
