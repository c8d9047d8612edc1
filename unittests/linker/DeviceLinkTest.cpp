//===- unittests/linker/DeviceLinkTest.cpp - `fatlink device-link` in-process ===//
//
// deviceLinkMain's option handling, run in-process with its output and
// errors captured: help, version, and the errors for bad options, which
// must come before any tool runs or file is read. --list-targets runs the
// installed ptxas ($CUDA_PATH, else /usr/local/cuda).
//
//===----------------------------------------------------------------------===//

#include "linker/Linker.h"
#include "unittests/TestSupport.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;
using namespace fatlink;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

namespace {

/// The exit code, stdout and stderr of one run.
struct Result {
  int Code;
  std::string Out, Err;
};

Result deviceLink(std::vector<const char *> Args) {
  Result R;
  raw_string_ostream Out(R.Out), Err(R.Err);
  R.Code = deviceLinkMain(Args, Out, Err);
  Out.flush();
  Err.flush();
  return R;
}

} // namespace

TEST(DeviceLinkMain, Help) {
  Result R = deviceLink({"--help"});
  EXPECT_EQ(R.Code, 0);
  EXPECT_EQ(R.Err, "");
  EXPECT_THAT(R.Out, HasSubstr("fatlink device-link [options] <inputs...>"));
  for (const char *Group : {"TARGETS:", "OUTPUT:", "TOOLS:", "DIAGNOSTICS:"})
    EXPECT_THAT(R.Out, HasSubstr(Group));
  for (const char *Opt :
       {"--arch=<list>", "--list-targets", "--ptx-version=<X.Y>", "-O<0-3>",
        "--export-symbol=<name>", "--ftz", "--no-prec-div", "-o <path>",
        "--emit-ptx", "--json=<file>", "--cuda-path=<dir>", "--ptxas=<path>",
        "--ptxas-timeout=<seconds>", "--libdevice=<file>", "-j <N>", "-v",
        "--save-temps", "--time-trace=<file>", "--cache-policy=<policy>",
        "--version"})
    EXPECT_THAT(R.Out, HasSubstr(Opt));
  EXPECT_EQ(deviceLink({"-h"}).Out, R.Out);
}

TEST(DeviceLinkMain, Version) {
  Result R = deviceLink({"--version"});
  EXPECT_EQ(R.Code, 0);
  EXPECT_EQ(R.Out, std::string(versionString()) + "\n");
  EXPECT_THAT(R.Out, StartsWith("fatlink "));
  EXPECT_THAT(R.Out, HasSubstr("(LLVM "));
}

TEST(DeviceLinkMain, UnknownOptionSuggestsNearest) {
  Result R = deviceLink({"--arhc=sm_80", "-o", "out", "a.bc"});
  EXPECT_EQ(R.Code, 1);
  EXPECT_EQ(R.Out, "");
  EXPECT_EQ(R.Err, "fatlink: error: unknown option '--arhc=sm_80': did you "
                   "mean '--arch=sm_80'?\n");
}

TEST(DeviceLinkMain, UnknownOptionFarFromAny) {
  Result R = deviceLink({"--completely-unknown", "-o", "out", "a.bc"});
  EXPECT_EQ(R.Code, 1);
  EXPECT_EQ(R.Err, "fatlink: error: unknown option '--completely-unknown': "
                   "see --help\n");
}

TEST(DeviceLinkMain, EveryBadOptionReported) {
  Result R = deviceLink({"--arhc=sm_80", "--emit-pts", "-o", "out", "a.bc"});
  EXPECT_EQ(R.Code, 1);
  EXPECT_THAT(R.Err, HasSubstr("unknown option '--arhc=sm_80'"));
  EXPECT_THAT(R.Err, HasSubstr("unknown option '--emit-pts': did you mean "
                               "'--emit-ptx'?"));
}

TEST(DeviceLinkMain, MissingValue) {
  Result R = deviceLink({"-o", "out", "a.bc", "--arch"});
  EXPECT_EQ(R.Code, 1);
  EXPECT_EQ(R.Err, "fatlink: error: option --arch needs a value\n");
}

TEST(DeviceLinkMain, BadOptLevel) {
  Result R = deviceLink({"-O7", "-o", "out", "a.bc"});
  EXPECT_EQ(R.Code, 1);
  EXPECT_EQ(R.Err, "fatlink: error: invalid value for -O: '7' (expected 0 to "
                   "3)\n");
  R = deviceLink({"-Ofast", "-o", "out", "a.bc"});
  EXPECT_EQ(R.Code, 1);
  EXPECT_THAT(R.Err, HasSubstr("invalid value for -O: 'fast'"));
}

TEST(DeviceLinkMain, BadJobs) {
  for (std::vector<const char *> Jobs :
       {std::vector<const char *>{"-j", "0"}, {"-j0"}, {"--jobs=0"}}) {
    Jobs.insert(Jobs.end(), {"-o", "out", "a.bc"});
    Result R = deviceLink(Jobs);
    EXPECT_EQ(R.Code, 1) << Jobs[0];
    EXPECT_EQ(R.Err, "fatlink: error: invalid value for -j: '0' (expected 1 "
                     "or more)\n")
        << Jobs[0];
  }
  Result R = deviceLink({"-j", "many", "-o", "out", "a.bc"});
  EXPECT_EQ(R.Code, 1);
  EXPECT_THAT(R.Err, HasSubstr("invalid value for -j: 'many'"));
}

TEST(DeviceLinkMain, BadPtxVersion) {
  for (const char *V :
       {"--ptx-version=7", "--ptx-version=7.10", "--ptx-version=seven"}) {
    Result R = deviceLink({V, "-o", "out", "a.bc"});
    EXPECT_EQ(R.Code, 1) << V;
    EXPECT_EQ(R.Err, "fatlink: error: invalid value for --ptx-version: '" +
                         StringRef(V).drop_front(14).str() +
                         "' (expected a PTX ISA version such as 7.8)\n")
        << V;
  }
}

TEST(DeviceLinkMain, NoOutput) {
  Result R = deviceLink({"--arch=sm_80", "a.bc"});
  EXPECT_EQ(R.Code, 1);
  EXPECT_EQ(R.Err, "fatlink: error: no output: pass -o "
                   "<file.o|file.fatbin|file.cubin|file.ptx|file.bc|dir>\n");
}

TEST(DeviceLinkMain, EveryBadValueReported) {
  Result R = deviceLink({"-O9", "-j", "0", "--ptx-version=x", "a.bc"});
  EXPECT_EQ(R.Code, 1);
  EXPECT_THAT(R.Err, HasSubstr("invalid value for -O: '9'"));
  EXPECT_THAT(R.Err, HasSubstr("invalid value for -j: '0'"));
  EXPECT_THAT(R.Err, HasSubstr("invalid value for --ptx-version: 'x'"));
  EXPECT_THAT(R.Err, HasSubstr("no output"));
}

TEST(DeviceLinkMain, ResponseFile) {
  test::TempDir Dir;
  std::string Rsp = Dir.write("args.rsp", "--version\n");
  std::string At = "@" + Rsp;
  Result R = deviceLink({At.c_str()});
  EXPECT_EQ(R.Code, 0);
  EXPECT_EQ(R.Out, std::string(versionString()) + "\n");
}

TEST(DeviceLinkMain, RecursiveResponseFileIsAnError) {
  test::TempDir Dir;
  std::string Rsp = Dir.file("self.rsp");
  std::string At = "@" + Rsp;
  Dir.write("self.rsp", "-O2 " + At + "\n");
  Result R = deviceLink({At.c_str(), "-o", "out"});
  EXPECT_EQ(R.Code, 1);
  EXPECT_THAT(R.Err, StartsWith("fatlink: error: cannot expand response "
                                "file: "));
  EXPECT_THAT(R.Err, HasSubstr("self.rsp"));
}

TEST(DeviceLinkMain, MissingResponseFileIsAnInput) {
  // As with GCC and clang, `@file` naming no file is an ordinary argument:
  // here an input that cannot be opened. (Runs the installed ptxas, since
  // inputs are read after the targets are planned.)
  test::TempDir Dir;
  std::string At = "@" + Dir.file("absent.rsp");
  Result R = deviceLink({At.c_str(), "--arch=sm_80", "-o", "out"});
  EXPECT_EQ(R.Code, 1);
  EXPECT_THAT(R.Err, HasSubstr("fatlink: error: cannot open " + At + ": "));
}

TEST(DeviceLinkMain, ListTargets) {
  // Runs the installed ptxas: the list is what LLVM 22 and it both support.
  Result R = deviceLink({"--list-targets"});
  ASSERT_EQ(R.Code, 0) << R.Err;
  EXPECT_THAT(R.Out, StartsWith("# targets that LLVM "));
  EXPECT_THAT(R.Out, HasSubstr("\nsm_80           cubin   7.0\n"));
  EXPECT_THAT(R.Out, HasSubstr("\nsm_90a          cubin   8.0\n"));
  EXPECT_THAT(R.Out, HasSubstr("\ncompute_90      ptx     7.8\n"));
}
