//===- fuzz/CorpusMain.cpp - Replay a checked-in corpus without libFuzzer -===//
//
// The main of each //fuzz:<target>_corpus_test: links one fuzz target's
// LLVMFuzzerTestOneInput (built by Bazel's gcc, or with --config=asan) and
// runs every file of the directories given on the command line through it,
// as libFuzzer would replay them. A target that finds a bad input aborts,
// which fails the test. An empty or missing corpus is a failure too: the
// test must have something to replay.
//
//===----------------------------------------------------------------------===//

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size);

int main(int Argc, char **Argv) {
  std::vector<std::string> Files;
  for (int I = 1; I < Argc; ++I) {
    std::error_code EC;
    for (llvm::sys::fs::directory_iterator It(Argv[I], EC), End;
         !EC && It != End; It.increment(EC))
      Files.push_back(It->path());
    if (EC) {
      llvm::errs() << "corpus: cannot list " << Argv[I] << ": " << EC.message()
                   << "\n";
      return 1;
    }
  }
  if (Files.empty()) {
    llvm::errs() << "corpus: no inputs to replay\n";
    return 1;
  }
  std::sort(Files.begin(), Files.end());
  for (const std::string &F : Files) {
    llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> Buf =
        llvm::MemoryBuffer::getFile(F, /*IsText=*/false,
                                    /*RequiresNullTerminator=*/false);
    if (!Buf) {
      llvm::errs() << "corpus: cannot read " << F << ": "
                   << Buf.getError().message() << "\n";
      return 1;
    }
    llvm::outs() << "replay " << F << " (" << (*Buf)->getBufferSize()
                 << " bytes)\n";
    llvm::outs().flush();
    LLVMFuzzerTestOneInput(
        reinterpret_cast<const uint8_t *>((*Buf)->getBufferStart()),
        (*Buf)->getBufferSize());
  }
  llvm::outs() << "corpus: " << Files.size() << " inputs replayed\n";
  return 0;
}
