"""Analysis tests of the GPU rules: the actions each rule registers.

An analysis test analyses a target (nothing is built or run) and checks the
actions it would run: mnemonic, argv, inputs and environment, byte for
byte. The targets under test are analysed with the fixed toolchain
//tests/bazel/analysis:test_toolchain (given as --extra_toolchains, which
comes before every registered toolchain), so that the expected command lines
name /test/bin/rustc rather than this machine's tools.

Expected command lines are written with three placeholders:
  {bin}        the output root of the target's configuration
               (bazel-out/k8-opt-ST-<hash>/bin)
  {host_arch}  fatlink's --host-arch for the target CPU (x86_64, aarch64)
  *            as a whole element, any one argument; inside one, any text
               (`*/tools/fatlink/fatlink` is fatlink in any configuration)
"""

load("@bazel_tools//tools/cpp:toolchain_utils.bzl", "find_cpp_toolchain")
load("//rules:device_link.bzl", "HOST_ARCHS")
load("//rules:providers.bzl", "GpuLibraryInfo")

_TEST_TOOLCHAIN = "//tests/bazel/analysis:test_toolchain"

def _matches(pattern, value):
    if "*" not in pattern:
        return pattern == value
    prefix, _, suffix = pattern.partition("*")
    return (len(value) >= len(prefix) + len(suffix) and
            value.startswith(prefix) and value.endswith(suffix))

def _expand(s, subst):
    for k, v in subst.items():
        s = s.replace(k, v)
    return s

def _bin_dir(target):
    """The output root of a target's configuration, from one of its outputs."""
    for f in target[DefaultInfo].files.to_list():
        return f.root.path
    fail("%s has no default outputs" % target.label)

def _is_tool_file(path):
    # fatlink (built for the exec configuration) and the C++ toolchain's
    # files: the toolchains' business, not the rule's.
    return "-exec-" in path or path.startswith("external/") or "/_middlemen/" in path

def _diff(what, expected, got):
    return "%s:\n  expected %s\n  got      %s" % (what, expected, got)

def _check_list(errors, what, expected, got):
    ok = len(expected) == len(got)
    for i in range(min(len(expected), len(got))):
        if not _matches(expected[i], got[i]):
            ok = False
            what += " (argument %d: expected '%s', got '%s')" % (i, expected[i], got[i])
            break
    if not ok:
        errors.append(_diff(what, expected, got))

def _result(ctx, errors):
    if errors:
        return [AnalysisTestResultInfo(
            success = False,
            message = "%s: %d failed check(s)\n%s" % (ctx.label, len(errors), "\n".join(errors)),
        )]
    return [AnalysisTestResultInfo(success = True, message = "")]

def _actions_test_impl(ctx):
    target = ctx.attr.target_under_test[0]
    cc_toolchain = find_cpp_toolchain(ctx)
    subst = {"{bin}": _bin_dir(target), "{host_arch}": HOST_ARCHS.get(cc_toolchain.cpu, "?")}
    prefix = subst["{bin}"] + "/"
    errors = []

    # Every action, keyed by its first output relative to the output root.
    actions = {}
    for a in target.actions:
        outs = a.outputs.to_list()
        if not outs or not a.mnemonic or a.mnemonic in ["FileWrite", "SourceSymlinkManifest", "SymlinkTree"]:
            continue
        key = outs[0].path[len(prefix):] if outs[0].path.startswith(prefix) else outs[0].path
        if key in actions:
            errors.append("two actions write %s" % key)
        actions[key] = a

    expected_keys = sorted(ctx.attr.actions.keys())
    if sorted(actions.keys()) != expected_keys:
        errors.append(_diff("actions (by first output)", expected_keys, sorted(actions.keys())))

    for out, spec in ctx.attr.actions.items():
        a = actions.get(out)
        if not a:
            continue
        if a.mnemonic != spec[0]:
            errors.append(_diff(out + ": mnemonic", spec[0], a.mnemonic))
        _check_list(errors, out + ": argv", [_expand(s, subst) for s in spec[1:]], a.argv)
        outputs = [f.path for f in a.outputs.to_list()]
        want = [prefix + _expand(o, subst) for o in ctx.attr.outputs.get(out, [out])]
        if outputs != want:
            errors.append(_diff(out + ": outputs", want, outputs))

    for out, expected in ctx.attr.inputs.items():
        a = actions.get(out)
        if not a:
            errors.append("%s: no action to check the inputs of" % out)
            continue
        got = sorted([f.path for f in a.inputs.to_list() if not _is_tool_file(f.path)])
        want = sorted([_expand(s, subst) for s in expected])
        if got != want:
            errors.append(_diff(out + ": inputs (tools left out)", want, got))

    for out, expected in ctx.attr.env.items():
        a = actions.get(out)
        if not a:
            errors.append("%s: no action to check the environment of" % out)
            continue
        got = sorted(["%s=%s" % kv for kv in a.env.items()])
        if got != sorted(expected):
            errors.append(_diff(out + ": env", sorted(expected), got))

    if ctx.attr.device_inputs:
        got = sorted([f.path for f in target[GpuLibraryInfo].device_inputs.to_list()])
        want = sorted([_expand(s, subst) for s in ctx.attr.device_inputs])
        if got != want:
            errors.append(_diff("GpuLibraryInfo.device_inputs", want, got))

    for group, expected in ctx.attr.output_groups.items():
        got = sorted([f.path for f in getattr(target[OutputGroupInfo], group).to_list()])
        want = sorted([_expand(s, subst) for s in expected])
        if got != want:
            errors.append(_diff("output group " + group, want, got))

    if ctx.attr.links:
        # The libraries the host link gets from CcInfo (a Rust crate's host
        # part is in GpuLibraryInfo.cc_info), as OWNER:FILE (or OWNER:FLAG
        # for link options), alwayslink ones marked "whole".
        cc_info = target[CcInfo] if CcInfo in target else target[GpuLibraryInfo].cc_info
        got = []
        for li in cc_info.linking_context.linker_inputs.to_list():
            for lib in li.libraries:
                f = lib.static_library or lib.pic_static_library
                got.append("%s:%s%s" % (li.owner, f.basename if f else "?", " whole" if lib.alwayslink else ""))
            for opt in li.user_link_flags:
                got.append("%s:%s" % (li.owner, opt))
        for want in ctx.attr.links:
            if want not in got:
                errors.append(_diff("CcInfo linker inputs: missing " + want, ctx.attr.links, got))
    return _result(ctx, errors)

_ACTIONS_TEST_ATTRS = {
    "actions": attr.string_list_dict(
        doc = "first output (relative to the output root) -> [mnemonic] + exact argv; every action must be listed",
    ),
    "inputs": attr.string_list_dict(doc = "first output -> exact inputs, tool files left out"),
    "outputs": attr.string_list_dict(doc = "first output -> every output, in order, relative to the output root (default: the first output alone)"),
    "env": attr.string_list_dict(doc = "first output -> exact environment as NAME=VALUE"),
    "device_inputs": attr.string_list(doc = "exact GpuLibraryInfo.device_inputs"),
    "output_groups": attr.string_list_dict(doc = "output group -> exact files"),
    "links": attr.string_list(doc = "OWNER:FILE[ whole] or OWNER:FLAG entries the CcInfo must link"),
    "_cc_toolchain": attr.label(default = Label("@bazel_tools//tools/cpp:current_cc_toolchain")),
}

def _actions_test_rule(settings):
    return rule(
        implementation = _actions_test_impl,
        analysis_test = True,
        attrs = dict(_ACTIONS_TEST_ATTRS, target_under_test = attr.label(
            mandatory = True,
            cfg = analysis_test_transition(settings = settings),
        )),
        fragments = ["cpp"],
        toolchains = ["@bazel_tools//tools/cpp:toolchain_type"],
    )

# The actions of a target built with the test toolchain.
gpu_actions_test = _actions_test_rule({
    "//command_line_option:extra_toolchains": [_TEST_TOOLCHAIN],
})

# The same, under --//rules:archs=sm_80,compute_80.
gpu_actions_archs_test = _actions_test_rule({
    "//command_line_option:extra_toolchains": [_TEST_TOOLCHAIN],
    "//rules:archs": "sm_80,compute_80",
})

def _failure_test_impl(ctx):
    target = ctx.attr.target_under_test[0]
    if AnalysisFailureInfo not in target:
        return _result(ctx, ["analysis of %s succeeded; expected it to fail with: %s" %
                             (target.label, ctx.attr.message)])
    messages = [c.message for c in target[AnalysisFailureInfo].causes.to_list()]
    for m in messages:
        if ctx.attr.message in m:
            return _result(ctx, [])
    return _result(ctx, [_diff("analysis error of %s" % target.label, ctx.attr.message, messages)])

def _failure_test_rule(toolchain, settings = {}):
    return rule(
        implementation = _failure_test_impl,
        analysis_test = True,
        attrs = {
            "target_under_test": attr.label(
                mandatory = True,
                cfg = analysis_test_transition(settings = dict(settings, **{
                    "//command_line_option:extra_toolchains": [toolchain],
                    "//command_line_option:allow_analysis_failures": True,
                })),
            ),
            "message": attr.string(mandatory = True, doc = "text the analysis error must contain"),
        },
    )

# The analysis of target_under_test fails with message, under the test
# toolchain (gpu_failure_test; gpu_failure_archs_test with
# --//rules:archs=sm_80,compute_80), or one that lacks tools: rustc (a
# fatlink_toolchain of one's own with rustc = ""), or, as the generated
# toolchain records them in `missing`, clang, or CUDA (clang's headers and
# libdevice, ptxas).
gpu_failure_test = _failure_test_rule(_TEST_TOOLCHAIN)
gpu_failure_archs_test = _failure_test_rule(_TEST_TOOLCHAIN, {"//rules:archs": "sm_80,compute_80"})
gpu_failure_no_rustc_test = _failure_test_rule("//tests/bazel/analysis:no_rustc_toolchain")
gpu_failure_no_clang_test = _failure_test_rule("//tests/bazel/analysis:no_clang_toolchain")
gpu_failure_no_cuda_test = _failure_test_rule("//tests/bazel/analysis:no_cuda_toolchain")

def _outputs_test_impl(ctx):
    target = ctx.attr.target_under_test[0]
    if AnalysisFailureInfo in target:
        return _result(ctx, ["analysis of %s failed: %s" % (
            target.label,
            [c.message for c in target[AnalysisFailureInfo].causes.to_list()],
        )])
    subst = {"{bin}": _bin_dir(target)}
    errors = []
    for group, expected in ctx.attr.output_groups.items():
        got = sorted([f.path for f in getattr(target[OutputGroupInfo], group).to_list()])
        want = sorted([_expand(s, subst) for s in expected])
        if got != want:
            errors.append(_diff("output group " + group, want, got))
    return _result(ctx, errors)

# target_under_test analyses (under the test toolchain), and its output
# groups hold exactly these files: for what the rules accept and would
# otherwise be tempted to refuse.
gpu_outputs_test = rule(
    implementation = _outputs_test_impl,
    analysis_test = True,
    attrs = {
        "target_under_test": attr.label(
            mandatory = True,
            cfg = analysis_test_transition(settings = {
                "//command_line_option:extra_toolchains": [_TEST_TOOLCHAIN],
                "//command_line_option:allow_analysis_failures": True,
            }),
        ),
        "output_groups": attr.string_list_dict(doc = "output group -> exact files ({bin} for the output root)"),
    },
)

def _metadata(target):
    for a in target.actions:
        if a.mnemonic == "RustGpuCompile":
            for arg in a.argv:
                if arg.startswith("-Cmetadata="):
                    return arg
    fail("%s: no RustGpuCompile action with -Cmetadata" % target.label)

def _metadata_test_impl(ctx):
    errors = []
    seen = {}
    for attr_name in ["crates", "crates_dbg"]:
        for target in getattr(ctx.attr, attr_name):
            metadata = _metadata(target)
            want = "-Cmetadata=%s@%s" % (target.label, _bin_dir(target))
            if metadata != want:
                errors.append(_diff("%s (%s)" % (target.label, attr_name), want, metadata))
            if metadata in seen:
                errors.append("%s (%s) and %s share %s" % (target.label, attr_name, seen[metadata], metadata))
            seen[metadata] = "%s (%s)" % (target.label, attr_name)
    return _result(ctx, errors)

# Every crate in crates, analysed in the test configuration and again with
# -c dbg, has its own -Cmetadata, made of its label and its output root.
gpu_crate_metadata_test = rule(
    implementation = _metadata_test_impl,
    analysis_test = True,
    attrs = {
        "crates": attr.label_list(cfg = analysis_test_transition(settings = {
            "//command_line_option:extra_toolchains": [_TEST_TOOLCHAIN],
        })),
        "crates_dbg": attr.label_list(cfg = analysis_test_transition(settings = {
            "//command_line_option:extra_toolchains": [_TEST_TOOLCHAIN],
            "//command_line_option:compilation_mode": "dbg",
        })),
    },
)

def _registered_toolchain_test_impl(ctx):
    target = ctx.attr.target_under_test
    errors = []
    for a in target.actions:
        if a.mnemonic == ctx.attr.mnemonic:
            tool = a.argv[0]
            if not tool.startswith("/") or tool.startswith("/test/"):
                errors.append("%s runs %s: not the registered toolchain's absolute path" % (a.mnemonic, tool))
            if "FATLINK_TOOL_VERSIONS" not in a.env:
                errors.append("%s: no FATLINK_TOOL_VERSIONS in %s" % (a.mnemonic, a.env))
            return _result(ctx, errors)
    return _result(ctx, ["%s has no %s action" % (target.label, ctx.attr.mnemonic)])

# Without --extra_toolchains, target_under_test resolves the toolchain that
# WORKSPACE registers: the tools found on this machine, with their versions.
gpu_registered_toolchain_test = rule(
    implementation = _registered_toolchain_test_impl,
    analysis_test = True,
    attrs = {
        "target_under_test": attr.label(mandatory = True),
        "mnemonic": attr.string(mandatory = True),
    },
)
