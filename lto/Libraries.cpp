//===- lto/Libraries.cpp - Device libraries nvlink links after codegen ---===//
//
// See Libraries.h. Policy: a library satisfies only references that no
// bitcode input defines (bitcode always wins, as an object before an
// archive does in a host link), libraries named as inputs replace the
// toolkit's device runtime, and the toolkit's is read only for a program
// that references a device runtime symbol.
//
//===----------------------------------------------------------------------===//

#include "lto/Libraries.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FileSystem.h"

using namespace llvm;

namespace fatlink::lto {

bool isDeviceRuntimeSymbol(StringRef Name) {
  return Name.starts_with("__cudaCDP2") ||
         Name.starts_with("cudaGetParameterBuffer") ||
         Name.starts_with("cudaLaunchDevice");
}

Error LibraryResolver::resolve(const Module &M, StringSet<> &Provided,
                               function_ref<bool(StringRef)> IsBuiltin,
                               LinkedProgram &Out) {
  std::vector<StringRef> Missing;
  for (const GlobalValue &GV : M.global_values())
    if (GV.isDeclarationForLinker() && !GV.use_empty() &&
        !GV.getName().starts_with("llvm.") && !IsBuiltin(GV.getName()) &&
        !Provided.contains(GV.getName()))
      Missing.push_back(GV.getName());
  if (Missing.empty())
    return Error::success();

  std::vector<const DeviceLibrary *> Libs;
  for (const DeviceLibrary &L : Inputs.Libraries)
    Libs.push_back(&L);
  if (Libs.empty() && !Opts.DeviceRuntimePath.empty() &&
      any_of(Missing, isDeviceRuntimeSymbol)) {
    if (!Runtime && Note.empty()) {
      if (sys::fs::exists(Opts.DeviceRuntimePath)) {
        Expected<DeviceLibrary> L = readDeviceLibrary(Opts.DeviceRuntimePath);
        if (!L)
          return L.takeError();
        Runtime = std::move(*L);
      } else {
        Note = "a symbol of CUDA's device runtime, which kernels that launch "
               "kernels need: " +
               Opts.DeviceRuntimePath +
               " does not exist; pass --cuda-path=<a CUDA toolkit with "
               "lib64/libcudadevrt.a> or name libcudadevrt.a as an input";
      }
    }
    if (Runtime)
      Libs.push_back(&*Runtime);
  }

  for (const DeviceLibrary *L : Libs) {
    bool Used = false;
    for (StringRef Name : Missing)
      if (!Provided.contains(Name) && binary_search(L->Defined, Name)) {
        Provided.insert(Name);
        Out.LibrarySymbols.push_back(Name.str());
        Used = true;
      }
    if (Used && none_of(Out.Libraries, [&](const DeviceLibrary &U) {
          return U.Path == L->Path;
        }))
      Out.Libraries.push_back(*L);
    if (Note.empty())
      Note = "not defined by " + L->Path + " either";
  }
  return Error::success();
}

} // namespace fatlink::lto
