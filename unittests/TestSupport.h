//===- unittests/TestSupport.h - Helpers shared by the unit tests ---------===//
//
// LLVM's Error matchers (ASSERT_THAT_EXPECTED(X, Succeeded()),
// FailedWithMessage(...)) and a temporary directory under $TEST_TMPDIR that
// removes itself. Debian's llvm-22-dev ships the matchers' header but not
// libLLVMTestingSupport, so TestSupport.cpp defines the one function the
// header needs.
//
//===----------------------------------------------------------------------===//

#ifndef FATLINK_UNITTESTS_TESTSUPPORT_H
#define FATLINK_UNITTESTS_TESTSUPPORT_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Testing/Support/Error.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include <cstdint>
#include <string>

namespace fatlink::test {

/// A fresh directory under $TEST_TMPDIR (else the system temp directory),
/// removed with its contents when the object is destroyed.
class TempDir {
public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;

  const std::string &path() const { return Path; }
  /// The path of Name inside the directory.
  std::string file(llvm::StringRef Name) const;
  /// Writes Data to Name inside the directory; returns its path.
  std::string write(llvm::StringRef Name, llvm::StringRef Data) const;

private:
  std::string Path;
};

/// The resident memory of this process, in KB (VmRSS: a mapped file on
/// tmpfs, as the test's temporary directory may be, is shared memory there,
/// not RssFile); 0 where /proc/self/status cannot be read.
uint64_t residentKB();

} // namespace fatlink::test

#endif // FATLINK_UNITTESTS_TESTSUPPORT_H
