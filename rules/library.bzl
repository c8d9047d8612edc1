"""`rust_gpu_library` and `cuda_gpu_library`: device code compiled to bitcode.

Neither rule generates machine code: each compiles its sources to LLVM
bitcode that `gpu_device_link` links with everything else the program has,
so that calls across crates and across languages are optimized away.

- A Rust device crate becomes an rlib for `nvptx64-nvidia-cuda` (rustc's
  rlibs for that target hold bitcode). Crate dependencies work as in Cargo:
  `--extern` for direct dependencies, `-L dependency=` for the rest.
- A proc-macro crate (`rust_gpu_proc_macro`, e.g. fatlink-macros, whose
  `#[fatlink_device::kernel]` records a kernel's Rust signature) is built
  for the exec platform with the toolchain's rustc: a shared library that
  rustc loads while it compiles the device crates that name it in
  `proc_macro_deps` (`--extern`), and those that depend on them
  (`-L dependency=`).
- A CUDA C++ file becomes a host object from clang's new offload driver
  (`--offload-new-driver -fgpu-rdc -foffload-lto`): the host code (the
  kernels' launch stubs) in `.text`, the device bitcode in
  `.llvm.offloading`. The objects go to `cc_binary` through CcInfo and to
  the device link through GpuLibraryInfo.

Output paths cannot collide with another target's: a crate's rlib (or a
proc-macro's library) is `lib<crate>.rlib` beside the BUILD file when the
crate is named as its target, else `_rust/<target>/lib<crate>.rlib` (two
targets may name the same crate: rustc tells them apart by the hash of
their -Cmetadata when it finds both under -L dependency=); a CUDA C++
library's objects and archive are in its own `_objs/<target>/`, each object
named by its source's path with the extension kept (`a/util.cu.o`,
`util.cc.o`), so sources that share a base name keep apart too.

Both are deterministic: rustc runs with `-Zremap-cwd-prefix=.` (else the
sandbox directory ends up in the rlib's metadata) and `-C metadata` made of
the label and the configuration (see _crate_metadata); clang sees relative
paths only and no debug info is made.
"""

load("@bazel_tools//tools/cpp:toolchain_utils.bzl", "find_cpp_toolchain")
load(":providers.bzl", "GpuLibraryInfo")
load(":toolchain.bzl", "TOOLCHAIN_TYPE", "fatlink_toolchain_info", "parse_arch", "require_tools")

def _merge_cc(cc_infos):
    return cc_common.merge_cc_infos(cc_infos = cc_infos) if cc_infos else CcInfo()

RustProcMacroInfo = provider(
    doc = "A proc-macro crate built for the exec platform (rust_gpu_proc_macro).",
    fields = {
        "crate_name": "the crate name, for `--extern`",
        "dylib": "the shared library rustc loads (lib<crate>.so)",
    },
)

def _crate_root(ctx):
    if ctx.file.crate_root:
        return ctx.file.crate_root
    if len(ctx.files.srcs) == 1:
        return ctx.files.srcs[0]
    for f in ctx.files.srcs:
        if f.basename == "lib.rs":
            return f
    fail("%s: several srcs and none is lib.rs: set crate_root" % ctx.label)

def _crate_metadata(ctx):
    """`-Cmetadata`: the crate's identity, its label and its configuration.

    rustc hashes the metadata strings (with the crate name) into the crate's
    StableCrateId and so into every mangled symbol: they must tell apart any
    two crates that can meet in one program, and must not change when the
    same crate is rebuilt, here or on another machine. The label is unique
    within a configuration, but one label is built once per configuration
    (a transition, -c dbg next to -c opt), and the copies differ whenever a
    select() or a flag does. The output root
    (bazel-out/k8-opt/bin, bazel-out/k8-opt-ST-<hash of the changed
    options>/bin) is what Bazel itself keeps configurations apart by: two
    that share it could not hold the same rlib either. It is relative, so
    equal in every sandbox and on every machine. Both go to rustc as text:
    it hashes them to 64 bits itself, where a 32-bit hash() of the label
    collides with even odds among some 77,000 labels.
    """
    return "-Cmetadata=%s@%s" % (ctx.label, ctx.bin_dir.path)

def _crate_output(ctx, crate_name, ext):
    """lib<crate>.<ext>: beside the BUILD file when the crate is named as its
    target, else in _rust/<target>/.

    Two targets of one package may give the same crate_name (and "a-b"
    and "a_b" the same default one): only the target named exactly as its
    crate gets the plain path, so no two outputs meet. Dependents find
    both through -L dependency=<dir>, and rustc picks the one whose hash
    (of -Cmetadata, which holds the label) the dependent recorded.
    """
    name = "lib%s.%s" % (crate_name, ext)
    if crate_name == ctx.label.name:
        return ctx.actions.declare_file(name)
    return ctx.actions.declare_file("_rust/%s/%s" % (ctx.label.name, name))

def _rust_gpu_library_impl(ctx):
    tc = fatlink_toolchain_info(ctx)
    require_tools(ctx, tc, ["rustc"])
    crate_name = ctx.attr.crate_name or ctx.label.name.replace("-", "_")
    rlib = _crate_output(ctx, crate_name, "rlib")

    args = ctx.actions.args()
    args.add("--target=nvptx64-nvidia-cuda")
    args.add("--crate-type=rlib")
    args.add("--crate-name=" + crate_name)
    args.add("--edition=" + ctx.attr.edition)
    args.add("-Copt-level=3")
    args.add(_crate_metadata(ctx))
    # No absolute path in the output: the sandbox directory differs per run.
    args.add("-Zremap-cwd-prefix=.")
    args.add_all(ctx.attr.crate_features, format_each = '--cfg=feature="%s"')
    args.add_all(ctx.attr.rustc_flags)

    rust_deps = []
    for dep in ctx.attr.deps:
        info = dep[GpuLibraryInfo]
        if info.rlib:
            rust_deps.append(info)
            args.add("--extern=%s=%s" % (info.crate_name, info.rlib.path))
    proc_macros = [d[RustProcMacroInfo] for d in ctx.attr.proc_macro_deps]
    for pm in proc_macros:
        args.add("--extern=%s=%s" % (pm.crate_name, pm.dylib.path))
    own_macros = [pm.dylib for pm in proc_macros]

    # What a dependent's rustc must find by -L dependency=: the rlibs and
    # the proc-macro libraries they were built with (rustc loads the
    # crate's whole dependency graph, proc-macros included).
    transitive_rlibs = depset(
        [rlib] + own_macros,
        transitive = [d.transitive_rlibs for d in rust_deps],
    )
    dep_rlibs = depset(own_macros, transitive = [d.transitive_rlibs for d in rust_deps])
    args.add_all(
        dep_rlibs,
        map_each = _dependency_dir,
        uniquify = True,
        format_each = "-Ldependency=%s",
    )
    args.add(_crate_root(ctx))
    args.add("-o", rlib)

    ctx.actions.run(
        executable = tc.rustc,
        arguments = [args],
        inputs = depset(ctx.files.srcs, transitive = [dep_rlibs, tc.rustc_inputs]),
        outputs = [rlib],
        # #![no_core] and the ptx-kernel ABI are unstable; so is -Z.
        env = dict(tc.env, RUSTC_BOOTSTRAP = "1"),
        mnemonic = "RustGpuCompile",
        progress_message = "Compiling Rust device crate %s (%s)" % (crate_name, ctx.label),
    )

    return [
        DefaultInfo(files = depset([rlib])),
        GpuLibraryInfo(
            crate_name = crate_name,
            rlib = rlib,
            transitive_rlibs = transitive_rlibs,
            device_inputs = depset(
                [rlib],
                transitive = [d[GpuLibraryInfo].device_inputs for d in ctx.attr.deps],
            ),
            cc_info = _merge_cc([d[GpuLibraryInfo].cc_info for d in ctx.attr.deps]),
            offload_archs = depset(transitive = [offload_archs(d[GpuLibraryInfo]) for d in ctx.attr.deps]),
        ),
    ]

def offload_archs(info):
    """GpuLibraryInfo.offload_archs; empty for a provider made without it."""
    return getattr(info, "offload_archs", None) or depset()

def _dependency_dir(f):
    return f.dirname

# What both Rust crate rules take.
_CRATE_ATTRS = {
    "srcs": attr.label_list(
        allow_files = [".rs"],
        mandatory = True,
        doc = "The crate's sources.",
    ),
    "crate_root": attr.label(
        allow_single_file = [".rs"],
        doc = "The crate root; default: the only source, else lib.rs.",
    ),
    "crate_name": attr.string(doc = "Default: the target name with - replaced by _."),
    "edition": attr.string(default = "2021", values = ["2015", "2018", "2021", "2024"]),
}

rust_gpu_library = rule(
    implementation = _rust_gpu_library_impl,
    doc = "A Rust device crate compiled for nvptx64-nvidia-cuda to an rlib of bitcode.",
    attrs = dict(_CRATE_ATTRS, **{
        "deps": attr.label_list(
            providers = [GpuLibraryInfo],
            doc = "Rust device crates (passed with --extern) and CUDA C++ GPU libraries whose device functions this crate calls.",
        ),
        "rustc_flags": attr.string_list(doc = "Extra rustc flags, e.g. -Ctarget-cpu=sm_80 or --cfg=feature=\"x\"."),
        "crate_features": attr.string_list(
            doc = "Cargo features of this crate, each passed as --cfg=feature=\"NAME\" " +
                  "(fatlink-device's `macros` with fatlink_macros in proc_macro_deps).",
        ),
        "proc_macro_deps": attr.label_list(
            providers = [RustProcMacroInfo],
            cfg = "exec",
            doc = "rust_gpu_proc_macro crates this crate uses (passed with --extern); " +
                  "built for the exec platform, where rustc runs.",
        ),
    }),
    toolchains = [str(TOOLCHAIN_TYPE)],
    incompatible_use_toolchain_transition = True,
)

def _check_offload_arch(ctx):
    arch = parse_arch(ctx.attr.offload_arch)
    if not arch or arch.kind != "sm":
        fail(("%s: offload_arch = \"%s\" is not of the form sm_NN, sm_NNa or sm_NNf: give " +
              "the oldest target of the device links that use this library, e.g. \"sm_80\"") %
             (ctx.label, ctx.attr.offload_arch))

def _package_path(ctx, src):
    """The path of src from the library's package, or from the workspace
    root (external/<repo>/... for another repository's) when src lives in
    another package. Generated sources count from their output root."""
    path = src.path[len(src.root.path) + 1:] if src.root.path else src.path
    pkg = "/".join([p for p in [ctx.label.workspace_root, ctx.label.package] if p])
    if pkg and path.startswith(pkg + "/"):
        return path[len(pkg) + 1:]
    return path

def _object_paths(ctx):
    """_objs/<name>/<package path of the source>.o for each source, in srcs
    order: a/util.cu -> a/util.cu.o, util.cc -> util.cc.o, so that sources
    that share a base name (or a stem) get objects of their own."""
    objects = {}
    for src in ctx.files.srcs:
        obj = "_objs/%s/%s.o" % (ctx.label.name, _package_path(ctx, src))
        if objects.get(obj) == src:
            continue  # the same file twice (a filegroup and its member)
        if obj in objects:
            fail(("%s: srcs %s and %s would both compile to %s: move one of them, or put it " +
                  "in a cuda_gpu_library of its own") % (ctx.label, objects[obj].owner, src.owner, obj))
        objects[obj] = src
    return objects

def _cuda_gpu_library_impl(ctx):
    tc = fatlink_toolchain_info(ctx)
    require_tools(ctx, tc, ["clang", "cuda"])
    _check_offload_arch(ctx)
    cc_toolchain = find_cpp_toolchain(ctx)
    feature_configuration = cc_common.configure_features(
        ctx = ctx,
        cc_toolchain = cc_toolchain,
        requested_features = ctx.features,
        unsupported_features = ctx.disabled_features,
    )

    cc_deps = [d[CcInfo] for d in ctx.attr.deps if CcInfo in d]
    gpu_deps = [d[GpuLibraryInfo] for d in ctx.attr.deps if GpuLibraryInfo in d]
    dep_cc = _merge_cc(cc_deps)
    comp = dep_cc.compilation_context

    own = cc_common.create_compilation_context(headers = depset(ctx.files.hdrs))
    common = ctx.actions.args()
    common.add_all([
        "-x",
        "cuda",
        "--cuda-path=" + tc.cuda_path,
        "-Wno-unknown-cuda-version",
        "--offload-new-driver",
        "-fgpu-rdc",
        "-foffload-lto",
        "--offload-arch=" + ctx.attr.offload_arch,
        "-O3",
        "-fPIC",
    ])
    common.add_all(ctx.attr.defines, format_each = "-D%s")
    common.add_all(comp.defines, format_each = "-D%s")
    # Includes relative to the repository root, as cc_library allows.
    root = ctx.label.workspace_root
    common.add_all(["-iquote", root or ".", "-iquote", ctx.bin_dir.path + ("/" + root if root else "")])
    common.add_all(comp.quote_includes, before_each = "-iquote")
    common.add_all(comp.includes, before_each = "-I")
    common.add_all(comp.system_includes, before_each = "-isystem")
    common.add_all(ctx.attr.copts)

    objects = []
    for path, src in _object_paths(ctx).items():
        obj = ctx.actions.declare_file(path)
        objects.append(obj)
        ctx.actions.run(
            executable = tc.clang,
            arguments = [common, "-c", src.path, "-o", obj.path],
            inputs = depset(
                [src] + ctx.files.hdrs,
                transitive = [comp.headers, tc.clang_inputs],
            ),
            outputs = [obj],
            env = tc.env,
            mnemonic = "CudaGpuCompile",
            progress_message = "Compiling CUDA C++ %s (%s)" % (src.short_path, ctx.label),
        )

    # In _objs/<name>/ with the objects: a gpu_device_link named K writes
    # lib<K>_device.a, which a library named K_device beside it would too.
    archive = _archive(ctx, cc_toolchain, "_objs/%s/lib%s.a" % (ctx.label.name, ctx.label.name), objects)
    library = cc_common.create_library_to_link(
        actions = ctx.actions,
        feature_configuration = feature_configuration,
        cc_toolchain = cc_toolchain,
        static_library = archive,
    )
    own_cc = CcInfo(
        compilation_context = own,
        linking_context = cc_common.create_linking_context(
            linker_inputs = depset([cc_common.create_linker_input(
                owner = ctx.label,
                libraries = depset([library]),
            )]),
        ),
    )
    host_cc = _merge_cc([own_cc, tc.cudart] + [g.cc_info for g in gpu_deps])
    return [
        DefaultInfo(files = depset(objects)),
        _merge_cc([host_cc] + cc_deps),
        GpuLibraryInfo(
            crate_name = None,
            rlib = None,
            transitive_rlibs = depset(),
            device_inputs = depset(objects, transitive = [g.device_inputs for g in gpu_deps]),
            cc_info = host_cc,
            offload_archs = depset(
                [(str(ctx.label), ctx.attr.offload_arch)],
                transitive = [offload_archs(g) for g in gpu_deps],
            ),
        ),
    ]

def _archive(ctx, cc_toolchain, name, objects):
    """A static archive of objects: `ar rcsD` (D: no timestamps, uids, modes)."""
    archive = ctx.actions.declare_file(name)
    ctx.actions.run(
        executable = cc_toolchain.ar_executable,
        arguments = ["rcsD", archive.path] + [o.path for o in objects],
        inputs = depset(objects, transitive = [cc_toolchain.all_files]),
        outputs = [archive],
        mnemonic = "GpuArchive",
        progress_message = "Archiving %s" % archive.short_path,
    )
    return archive

archive_objects = _archive

CC_TOOLCHAIN_ATTRS = {
    "_cc_toolchain": attr.label(default = Label("@bazel_tools//tools/cpp:current_cc_toolchain")),
}

cuda_gpu_library = rule(
    implementation = _cuda_gpu_library_impl,
    doc = "CUDA C++ compiled by clang's new offload driver: host objects (CcInfo) carrying device bitcode (GpuLibraryInfo).",
    attrs = dict(CC_TOOLCHAIN_ATTRS, **{
        "srcs": attr.label_list(
            allow_files = [".cu", ".cc", ".cpp"],
            mandatory = True,
            doc = "CUDA C++ sources, each compiled as CUDA (-x cuda).",
        ),
        "hdrs": attr.label_list(
            allow_files = [".h", ".hpp", ".cuh", ".inc"],
            doc = "Headers of this library, for it and its dependents.",
        ),
        "deps": attr.label_list(
            providers = [[CcInfo], [GpuLibraryInfo]],
            doc = "cc_library targets (headers, host code) and GPU libraries (Rust or CUDA C++) whose device functions this code calls.",
        ),
        "copts": attr.string_list(doc = "Extra clang flags."),
        "defines": attr.string_list(doc = "Preprocessor definitions for these sources."),
        "offload_arch": attr.string(
            default = "sm_75",
            doc = "The one GPU arch the device bitcode is compiled for (its __CUDA_ARCH__), " +
                  "sm_NN[a|f]; it must not be newer than the oldest target of any device link " +
                  "that uses this library (gpu_device_link checks). " +
                  "sm_75 is the oldest that CUDA 13's ptxas accepts.",
        ),
    }),
    fragments = ["cpp"],
    toolchains = [str(TOOLCHAIN_TYPE), "@bazel_tools//tools/cpp:toolchain_type"],
    incompatible_use_toolchain_transition = True,
)

def proc_macro_link_env(cc_toolchain):
    """What rustc needs to link a proc-macro: a PATH to the C++ toolchain.

    rustc links the shared library with a C compiler driver (given by path
    as -Clinker), which runs `ld` from PATH; actions have no PATH of their
    own. So PATH is the directories of the toolchain's compiler and linker.
    """
    dirs = []
    for tool in [cc_toolchain.compiler_executable, cc_toolchain.ld_executable]:
        d = tool.rpartition("/")[0]
        if d and d not in dirs:
            dirs.append(d)
    return {"PATH": ":".join(dirs)}

def _rust_gpu_proc_macro_impl(ctx):
    tc = fatlink_toolchain_info(ctx)
    require_tools(ctx, tc, ["rustc"])
    crate_name = ctx.attr.crate_name or ctx.label.name.replace("-", "_")
    dylib = _crate_output(ctx, crate_name, "so")
    # rustc links the library with the C++ toolchain's compiler driver
    # (proc_macro_link_env).
    cc_toolchain = find_cpp_toolchain(ctx)

    args = ctx.actions.args()
    args.add("--crate-type=proc-macro")
    args.add("--crate-name=" + crate_name)
    args.add("--edition=" + ctx.attr.edition)
    args.add(_crate_metadata(ctx))
    args.add("-Zremap-cwd-prefix=.")
    args.add("-Clinker=" + cc_toolchain.compiler_executable)
    args.add_all(ctx.attr.rustc_flags)
    args.add(_crate_root(ctx))
    args.add("-o", dylib)

    ctx.actions.run(
        executable = tc.rustc,
        arguments = [args],
        inputs = depset(ctx.files.srcs, transitive = [tc.rustc_inputs, cc_toolchain.all_files]),
        outputs = [dylib],
        # -Z is unstable.
        env = dict(proc_macro_link_env(cc_toolchain), **dict(tc.env, RUSTC_BOOTSTRAP = "1")),
        mnemonic = "RustProcMacro",
        progress_message = "Compiling Rust proc-macro crate %s (%s)" % (crate_name, ctx.label),
    )
    return [
        DefaultInfo(files = depset([dylib])),
        RustProcMacroInfo(crate_name = crate_name, dylib = dylib),
    ]

rust_gpu_proc_macro = rule(
    implementation = _rust_gpu_proc_macro_impl,
    doc = "A Rust proc-macro crate (for the host), for rust_gpu_library's proc_macro_deps.",
    attrs = dict(CC_TOOLCHAIN_ATTRS, **dict(_CRATE_ATTRS, **{
        "rustc_flags": attr.string_list(doc = "Extra rustc flags."),
    })),
    fragments = ["cpp"],
    toolchains = [str(TOOLCHAIN_TYPE), "@bazel_tools//tools/cpp:toolchain_type"],
    incompatible_use_toolchain_transition = True,
)
