//===- lto/Libraries.h - Device libraries nvlink links after codegen -----===//
//
// Internal to lto/. Some of what a program calls is not bitcode: CUDA's
// device runtime (libcudadevrt.a), which kernels that launch kernels call
// (`__cudaCDP2LaunchDevice`, ...), ships only as nvcc relocatable cubins.
// The LTO part leaves such references undefined; the driver assembles its
// PTX relocatable and nvlink links the library into each cubin. This file
// decides which references a library satisfies and which libraries a
// program uses.
//
//===----------------------------------------------------------------------===//

#ifndef FATLINK_LTO_LIBRARIES_H
#define FATLINK_LTO_LIBRARIES_H

#include "lto/LTO.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>

namespace fatlink::lto {

/// Whether \p Name belongs to CUDA's device runtime interface: what clang
/// calls for a launch from device code (`__cudaCDP2*`) and the older names
/// the CUDA headers declare (`cudaGetParameterBuffer`, `cudaLaunchDevice`).
bool isDeviceRuntimeSymbol(llvm::StringRef Name);

/// Resolves a link's undefined references against the device libraries:
/// those named as inputs, else the toolkit's device runtime
/// (LinkOptions::DeviceRuntimePath), read only when a device runtime symbol
/// is referenced, so other programs never pay for reading it.
class LibraryResolver {
public:
  LibraryResolver(const InputSet &Inputs, const LinkOptions &Opts)
      : Inputs(Inputs), Opts(Opts) {}

  /// For every symbol \p M references but does not define, that is not in
  /// \p Provided and not \p IsBuiltin: if a library defines it, adds it to
  /// \p Provided and Out.LibrarySymbols, and the library to Out.Libraries.
  llvm::Error resolve(const llvm::Module &M, llvm::StringSet<> &Provided,
                      llvm::function_ref<bool(llvm::StringRef)> IsBuiltin,
                      LinkedProgram &Out);

  /// The same for the relocatable cubins' references to the device runtime
  /// (clang -fgpu-rdc without -foffload-lto): nvlink would otherwise find
  /// them undefined.
  llvm::Error resolveObjects(LinkedProgram &Out);

  /// Lines to add to the message for \p Name, undefined after resolve:
  /// each input with nvcc device code that fatlink skipped and that defines
  /// it (InputSet::NvccObjects, read on first call), and for a device
  /// runtime symbol, why the runtime did not provide it. Each line starts
  /// with "\n>>> ".
  std::string notesFor(llvm::StringRef Name);

private:
  llvm::Error take(llvm::ArrayRef<llvm::StringRef> Missing,
                   llvm::StringSet<> &Provided, LinkedProgram &Out);

  const InputSet &Inputs;
  const LinkOptions &Opts;
  std::optional<DeviceLibrary> Runtime; ///< the toolkit's, once read
  std::string Note; ///< why a device runtime symbol can be undefined
  /// Symbol -> the skipped nvcc inputs that define it (built on first need).
  std::optional<llvm::StringMap<std::vector<std::string>>> NvccDefs;
};

} // namespace fatlink::lto

#endif // FATLINK_LTO_LIBRARIES_H
