//===- fuzz/ptx_link_fuzzer.cpp - Fuzz the PTX linker ---------------------===//
//
// codegen::linkPTX reads the PTX entries of nvcc objects, which are user
// input. The input is split at NUL bytes into up to four modules. Besides
// memory safety, it checks the linker's promises: what it writes is PTX it
// reads back, with the same unresolved symbols, and nothing to
// change when linked again alone (the output is a fixed point).
//
//===----------------------------------------------------------------------===//

#include "codegen/Codegen.h"

using namespace fatlink;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  llvm::StringRef In(reinterpret_cast<const char *>(Data), Size);
  std::vector<codegen::PtxModule> Mods;
  while (Mods.size() < 4) {
    auto [Head, Rest] = In.split('\0');
    Mods.push_back({"m" + std::to_string(Mods.size()) + ".ptx", Head});
    if (Rest.data() == nullptr || Head.size() == In.size())
      break;
    In = Rest;
  }
  llvm::Expected<codegen::PtxLinkResult> R = codegen::linkPTX(Mods, "sm_90");
  if (!R) {
    llvm::consumeError(R.takeError());
    return 0;
  }
  codegen::PtxModule Once[] = {{"linked.ptx", R->PTX}};
  llvm::Expected<codegen::PtxLinkResult> Again =
      codegen::linkPTX(Once, "sm_90");
  if (!Again) {
    llvm::consumeError(Again.takeError());
    __builtin_trap(); // the linker wrote PTX it cannot read
  }
  if (Again->Unresolved != R->Unresolved)
    __builtin_trap();
  // Linked PTX is a fixed point: linked again alone, only the comment that
  // names the inputs changes.
  auto Body = [](llvm::StringRef P) { return P.substr(P.find("\n.version")); };
  if (Body(Again->PTX) != Body(R->PTX))
    __builtin_trap();
  return 0;
}
