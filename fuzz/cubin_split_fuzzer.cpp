//===- fuzz/cubin_split_fuzzer.cpp - Fuzz the cut of shared ptxas runs ---===//
//
// codegen::splitBatchCubin cuts the cubin of a `ptxas -c` run over several
// partitions' PTX back into one cubin per partition, rebuilding sections
// (.nv.info, .nv.callgraph, .nv.prototype, .debug_frame), symbol tables
// and string tables; canonicalCubin lays out a cubin's string tables the
// one way the cut does. Their input is ptxas's output, but a cut that
// walks offsets and indices taken from the file must still never read or
// write out of bounds, whatever the file says.
//
// Input: the function lists, one line per partition (names separated by
// spaces), then NUL, then the cubin. Besides memory safety it checks the
// cut's promises: one piece per partition, each a cubin that canonicalCubin
// takes and leaves as it is, and canonicalCubin a fixed point on any cubin
// it accepts.
//
//===----------------------------------------------------------------------===//

#include "codegen/Codegen.h"

#include "llvm/ADT/StringExtras.h"

using namespace fatlink;

/// canonicalCubin(C) must be C itself; false where it is not.
static bool isCanonical(llvm::StringRef C) {
  llvm::Expected<std::string> Again = codegen::canonicalCubin(C);
  if (!Again) {
    llvm::consumeError(Again.takeError());
    return false;
  }
  return *Again == C;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  llvm::StringRef In(reinterpret_cast<const char *>(Data), Size);
  auto [Lists, Cubin] = In.split('\0');
  if (Cubin.data() == nullptr)
    return 0; // no NUL: no cubin
  std::vector<std::vector<std::string>> Inputs;
  for (llvm::StringRef Line : llvm::split(Lists, '\n')) {
    if (Inputs.size() == 16)
      break; // fatlink's batches have 8
    std::vector<std::string> &Names = Inputs.emplace_back();
    llvm::SmallVector<llvm::StringRef, 8> Words;
    Line.split(Words, ' ', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
    for (llvm::StringRef W : Words)
      Names.push_back(W.str());
  }

  llvm::Expected<std::string> Canonical = codegen::canonicalCubin(Cubin);
  if (Canonical) {
    if (!isCanonical(*Canonical))
      __builtin_trap(); // not a fixed point
  } else {
    llvm::consumeError(Canonical.takeError());
  }

  llvm::Expected<std::vector<std::string>> Pieces =
      codegen::splitBatchCubin(Cubin, Inputs);
  if (!Pieces) {
    llvm::consumeError(Pieces.takeError());
    return 0;
  }
  if (Pieces->size() != Inputs.size())
    __builtin_trap(); // a piece per partition
  for (const std::string &P : *Pieces)
    if (!isCanonical(P))
      __builtin_trap(); // each piece is canonical already
  return 0;
}
