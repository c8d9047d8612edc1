//===- unittests/TestSupport.cpp - Helpers shared by the unit tests -------===//
//
// See TestSupport.h.
//
//===----------------------------------------------------------------------===//

#include "unittests/TestSupport.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

using namespace llvm;

// What llvm/lib/Testing/Support/Error.cpp defines: every error in Err, for
// the matchers of llvm/Testing/Support/Error.h.
detail::ErrorHolder llvm::detail::TakeError(Error Err) {
  std::vector<std::shared_ptr<ErrorInfoBase>> Infos;
  handleAllErrors(std::move(Err),
                  [&Infos](std::unique_ptr<ErrorInfoBase> Info) {
                    Infos.emplace_back(std::move(Info));
                  });
  return {std::move(Infos)};
}

namespace fatlink::test {

TempDir::TempDir() {
  // An absolute prefix is used as is; a relative one goes to the system
  // temp directory.
  std::string Prefix = "fatlink-unit";
  if (const char *Tmp = std::getenv("TEST_TMPDIR"))
    Prefix = (Twine(Tmp) + "/fatlink-unit").str();
  SmallString<256> Result;
  std::error_code EC = sys::fs::createUniqueDirectory(Prefix, Result);
  if (EC)
    ADD_FAILURE() << "cannot create a temporary directory: " << EC.message();
  Path = std::string(Result);
}

TempDir::~TempDir() {
  if (!Path.empty())
    sys::fs::remove_directories(Path);
}

std::string TempDir::file(StringRef Name) const {
  SmallString<256> P(Path);
  sys::path::append(P, Name);
  return std::string(P);
}

std::string TempDir::write(StringRef Name, StringRef Data) const {
  std::string P = file(Name);
  std::error_code EC;
  raw_fd_ostream OS(P, EC, sys::fs::OF_None);
  if (EC) {
    ADD_FAILURE() << "cannot write " << P << ": " << EC.message();
    return P;
  }
  OS << Data;
  return P;
}

uint64_t residentKB() {
  ErrorOr<std::unique_ptr<MemoryBuffer>> MB =
      MemoryBuffer::getFileAsStream("/proc/self/status");
  if (!MB)
    return 0;
  for (StringRef Rest = (*MB)->getBuffer(); !Rest.empty();) {
    StringRef Line;
    std::tie(Line, Rest) = Rest.split('\n');
    if (!Line.consume_front("VmRSS:"))
      continue;
    StringRef N = Line.trim();
    N.consume_back("kB");
    uint64_t KB = 0;
    return N.trim().getAsInteger(10, KB) ? 0 : KB;
  }
  return 0;
}

} // namespace fatlink::test
