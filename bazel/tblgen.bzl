"""Option tables from TableGen, with LLVM's llvm-tblgen."""

def opt_table(name, src, out):
    """Generates an OptTable .inc from an options .td file."""
    native.genrule(
        name = name,
        srcs = [src, "@llvm//:include/llvm/Option/OptParser.td"],
        outs = [out],
        tools = ["@llvm//:tblgen"],
        cmd = "$(location @llvm//:tblgen) -gen-opt-parser-defs " +
              "-I $$(dirname $(location @llvm//:include/llvm/Option/OptParser.td))/../.. " +
              "$(location %s) -o $@" % src,
    )
