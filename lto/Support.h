//===- lto/Support.h - Error helpers shared by the lto library -----------===//
//
// Internal to lto/. Errors are llvm::Error values with lower-case messages
// that name the file, symbol and value. ErrorList gathers the errors of one
// phase so that a run reports every problem up to a cap (as lld does) rather
// than stopping at the first.
//
//===----------------------------------------------------------------------===//

#ifndef FATLINK_LTO_SUPPORT_H
#define FATLINK_LTO_SUPPORT_H

#include "lto/LTO.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBufferRef.h"

namespace fatlink::lto {

/// Errors of one phase, at most Limit of them (0: no limit).
class ErrorList {
public:
  explicit ErrorList(unsigned Limit = DefaultErrorLimit) : Limit(Limit) {}

  void add(llvm::Error E) {
    if (!E)
      return;
    if (++Count > Limit && Limit != 0) {
      llvm::consumeError(std::move(E));
      return;
    }
    All = llvm::joinErrors(std::move(All), std::move(E));
  }
  bool hasErrors() const { return Count != 0; }
  unsigned count() const { return Count; }

  /// The joined errors (success if none), with a note when some were left
  /// out.
  llvm::Error take() {
    if (Count > Limit && Limit != 0)
      All = llvm::joinErrors(
          std::move(All),
          llvm::createStringError("too many errors (%u), the first %u shown: "
                                  "--error-limit=0 shows all",
                                  Count, Limit));
    Count = 0;
    return std::move(All);
  }

private:
  unsigned Limit;
  llvm::Error All = llvm::Error::success();
  unsigned Count = 0;
};

/// Switches off, once per process, what LLVM's bitcode reader does with a
/// module's debug info when it materializes it: verify the whole module,
/// printing what is wrong to stderr with the IR around it (for corrupt
/// metadata, memory read as a string: 500 KB of the heap, once), and drop
/// invalid debug info without a word to the caller. Whoever reads an input
/// verifies it instead (DeviceLinker::parse: the verifier's first line,
/// and a warning where debug info is dropped at -O0).
void takeOverDebugInfoChecks();

/// Checks that a buffer is bitcode fatlink can read: nvptx64 and produced by
/// an LLVM no newer than this one.
llvm::Error checkBitcode(llvm::MemoryBufferRef MB, llvm::StringRef Origin);

} // namespace fatlink::lto

#endif // FATLINK_LTO_SUPPORT_H
