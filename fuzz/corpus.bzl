"""fuzz_corpus_test: replays fuzz/corpus/<name>/ through <name>_fuzzer.cpp."""

load("//bazel:copts.bzl", "CXX_COPTS")

def fuzz_corpus_test(name, deps = []):
    """A cc_test that runs every checked-in corpus file of one fuzz target.

    Args:
      name: the target, as in fuzz/<name>_fuzzer.cpp and fuzz/corpus/<name>/.
      deps: what the target needs beyond the packager and LLVM.
    """
    native.cc_test(
        name = name + "_corpus_test",
        size = "small",
        srcs = [
            "CorpusMain.cpp",
            name + "_fuzzer.cpp",
        ],
        copts = CXX_COPTS,
        args = ["fuzz/corpus/" + name],
        data = native.glob(["corpus/" + name + "/*"]),
        deps = [":support"] + deps,
    )
