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
#include "lto/Support.h"

#include "packager/Packager.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Object/ObjectFile.h"
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
  return take(Missing, Provided, Out);
}

Error LibraryResolver::resolveObjects(LinkedProgram &Out) {
  StringSet<> Provided;
  for (const DeviceObject &O : Inputs.Objects)
    for (const std::string &Name : O.Defined)
      Provided.insert(Name);
  std::vector<StringRef> Missing;
  for (const DeviceObject &O : Inputs.Objects)
    for (const std::string &Name : O.Undefined)
      if (isDeviceRuntimeSymbol(Name) && !Provided.contains(Name) &&
          !is_contained(Missing, Name))
        Missing.push_back(Name);
  if (Error E = take(Missing, Provided, Out))
    return E;
  // What no library provided would only make nvlink fail later, with less
  // to say: report it here, as the LTO part's undefined symbols are.
  ErrorList Errors;
  for (StringRef Name : Missing) {
    if (Provided.contains(Name))
      continue;
    std::string Msg = "undefined device symbol: " + Name.str();
    for (const DeviceObject &O : Inputs.Objects)
      if (is_contained(O.Undefined, Name))
        Msg += "\n>>> referenced by " + O.Origin;
    Errors.add(createStringError(Msg + notesFor(Name)));
  }
  if (Error E = Errors.take())
    return E;
  llvm::sort(Out.LibrarySymbols);
  Out.LibrarySymbols.erase(llvm::unique(Out.LibrarySymbols),
                           Out.LibrarySymbols.end());
  return Error::success();
}

/// Takes each of \p Missing that a device library defines from it.
Error LibraryResolver::take(ArrayRef<StringRef> Missing, StringSet<> &Provided,
                            LinkedProgram &Out) {
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

/// The global symbols the cubins of an nvcc object define (of its first
/// cubin: nvcc compiles one program for every arch). Best effort: an
/// object whose device code cannot be read, or holds no cubin (nvcc
/// -dlto's LTO-IR), defines nothing here.
static std::vector<std::string> nvccDefinitions(const NvccObject &O) {
  std::vector<std::string> Defs;
  Expected<std::vector<packager::EmbeddedImage>> ImagesOrErr =
      packager::scanFile(O.Data.getBuffer(), O.Origin);
  if (!ImagesOrErr) {
    consumeError(ImagesOrErr.takeError());
    return Defs;
  }
  for (const packager::EmbeddedImage &I : *ImagesOrErr) {
    if (I.Kind != "cubin")
      continue;
    Expected<std::unique_ptr<object::ObjectFile>> ObjOrErr =
        object::ObjectFile::createObjectFile(MemoryBufferRef(I.Data, I.Origin));
    if (!ObjOrErr) {
      consumeError(ObjOrErr.takeError());
      continue;
    }
    for (const object::SymbolRef &Sym : (*ObjOrErr)->symbols()) {
      Expected<uint32_t> Flags = Sym.getFlags();
      Expected<StringRef> Name = Sym.getName();
      if (Flags && Name && (*Flags & object::SymbolRef::SF_Global) &&
          !(*Flags & object::SymbolRef::SF_Undefined) && !Name->empty())
        Defs.push_back(Name->str());
      if (!Flags)
        consumeError(Flags.takeError());
      if (!Name)
        consumeError(Name.takeError());
    }
    break;
  }
  return Defs;
}

std::string LibraryResolver::notesFor(StringRef Name) {
  std::string Notes;
  if (!NvccDefs) {
    NvccDefs.emplace();
    for (const NvccObject &O : Inputs.NvccObjects)
      for (const std::string &Def : nvccDefinitions(O))
        (*NvccDefs)[Def].push_back(O.Origin);
  }
  auto It = NvccDefs->find(Name);
  if (It != NvccDefs->end())
    for (const std::string &Origin : It->second)
      Notes += "\n>>> defined in " + Origin +
               ", which carries nvcc whole-program device code (nvcc -c "
               "without -rdc), whose symbols other code cannot use: compile "
               "it with nvcc -dc (-rdc=true) to link it";
  if (isDeviceRuntimeSymbol(Name) && !Note.empty())
    Notes += "\n>>> (" + Note + ")";
  return Notes;
}

} // namespace fatlink::lto
