//===- unittests/packager/TestUtil.h - Helpers for the packager tests -*- C++ -*-===//
//
// Runs the real tools (llc, ptxas, fatbinary, cc, llvm-readelf, ...) for the
// end-to-end tests and reads and writes files in the test's TEST_TMPDIR.
// Tools are found through environment variables with the defaults of this
// machine: LLVM_BIN (/usr/lib/llvm-22/bin), CUDA_PATH (/usr/local/cuda),
// CC (cc). A missing tool fails the test with a message; nothing is skipped.
//
//===----------------------------------------------------------------------===//

#ifndef FATLINK_UNITTESTS_PACKAGER_TESTUTIL_H
#define FATLINK_UNITTESTS_PACKAGER_TESTUTIL_H

#include "packager/Packager.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <cstdlib>
#include <optional>

/// Fails the test with the error's message unless \p E holds a value.
#define ASSERT_OK(E) ASSERT_TRUE(bool(E)) << llvm::toString((E).takeError())

namespace fatlink {
namespace packager {
namespace test {

/// The message of the error in \p E, or "<success>".
template <typename T> std::string errorOf(llvm::Expected<T> E) {
  if (E)
    return "<success>";
  return llvm::toString(E.takeError());
}

inline std::string envOr(const char *Name, const std::string &Default) {
  const char *V = std::getenv(Name);
  return V && *V ? V : Default;
}

inline std::string llvmTool(llvm::StringRef Name) {
  return envOr("LLVM_BIN", "/usr/lib/llvm-22/bin") + "/" + Name.str();
}

inline std::string cudaTool(llvm::StringRef Name) {
  return envOr("CUDA_PATH", "/usr/local/cuda") + "/bin/" + Name.str();
}

/// A fresh directory under TEST_TMPDIR for one test.
inline std::string tempDir(llvm::StringRef Name) {
  llvm::SmallString<256> Dir(envOr("TEST_TMPDIR", "/tmp"));
  llvm::sys::path::append(Dir, Name);
  llvm::sys::fs::remove_directories(Dir);
  EXPECT_FALSE(llvm::sys::fs::create_directories(Dir));
  return std::string(Dir);
}

inline std::string readFile(const std::string &Path) {
  auto BufOrErr = llvm::MemoryBuffer::getFile(Path, /*IsText=*/false,
                                              /*RequiresNullTerminator=*/false);
  EXPECT_TRUE(bool(BufOrErr)) << "cannot read " << Path;
  return BufOrErr ? (*BufOrErr)->getBuffer().str() : std::string();
}

inline void writeFile(const std::string &Path, llvm::StringRef Data) {
  std::error_code EC;
  llvm::raw_fd_ostream OS(Path, EC);
  ASSERT_FALSE(EC) << "cannot write " << Path << ": " << EC.message();
  OS << Data;
}

/// Runs \p Argv (Argv[0] is a path or a name on PATH) and returns its exit
/// code; its stdout and stderr go to \p Output.
inline int run(std::vector<std::string> Argv, std::string &Output) {
  std::string Program = Argv[0];
  if (!llvm::sys::path::is_absolute(Program)) {
    auto P = llvm::sys::findProgramByName(Program);
    if (!P) {
      Output = "tool not found on PATH: " + Program;
      return -1;
    }
    Program = *P;
  }
  if (!llvm::sys::fs::can_execute(Program)) {
    Output = "tool not found: " + Program;
    return -1;
  }
  llvm::SmallString<256> Log;
  llvm::sys::fs::createTemporaryFile("tool", "log", Log);
  std::vector<llvm::StringRef> Args(Argv.begin(), Argv.end());
  std::optional<llvm::StringRef> Redirects[] = {std::nullopt, Log.str(),
                                                Log.str()};
  std::string Err;
  int RC = llvm::sys::ExecuteAndWait(Program, Args, std::nullopt, Redirects,
                                     /*SecondsToWait=*/120, 0, &Err);
  Output = readFile(std::string(Log)) + Err;
  llvm::sys::fs::remove(Log);
  return RC;
}

/// Runs \p Argv and fails the test unless it exits with 0.
inline std::string runOk(std::vector<std::string> Argv) {
  std::string Output;
  int RC = run(Argv, Output);
  std::string Cmd;
  for (const std::string &A : Argv)
    Cmd += A + " ";
  EXPECT_EQ(RC, 0) << Cmd << "\n" << Output;
  return Output;
}

/// PTX and cubin for \p Arch built from testdata/scale.ll with llc and
/// ptxas in \p Dir. Returns {ptx path, cubin path}.
inline std::pair<std::string, std::string> buildDeviceCode(
    const std::string &Dir, const std::string &Arch) {
  std::string Ptx = Dir + "/scale." + Arch + ".ptx";
  std::string Cubin = Dir + "/scale." + Arch + ".cubin";
  runOk({llvmTool("llc"), "-march=nvptx64", "-mcpu=" + Arch,
         "unittests/packager/testdata/scale.ll", "-o", Ptx});
  runOk({cudaTool("ptxas"), "-arch=" + Arch, Ptx, "-o", Cubin});
  return {Ptx, Cubin};
}

} // namespace test
} // namespace packager
} // namespace fatlink

#endif // FATLINK_UNITTESTS_PACKAGER_TESTUTIL_H
