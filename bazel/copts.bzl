"""Compiler options every fatlink C++ target passes itself.

Bazel 4's auto-configured C++ toolchain compiles C++ as `-std=c++0x`, and
LLVM 22's headers (and fatlink) need C++17: with C++11 they fail with
"exponent has no digits" and worse. The option is the targets' own, not a
`--cxxopt` in .bazelrc, because a .bazelrc reaches neither another workspace
that depends on `@fatlink` nor the exec configuration, where the GPU rules
build fatlink as a tool (that needs `--host_cxxopt`). A target's `copts` come
after the toolchain's flags and apply in every configuration.
"""

CXX_COPTS = ["-std=c++17"]
