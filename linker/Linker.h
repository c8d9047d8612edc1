//===- linker/Linker.h - fatlink's commands as library entry points ------===//
//
// The drivers. Each fatlink subcommand is a function from its arguments to
// an exit code, so that the `fatlink` executable is a thin dispatcher and
// tests can run a command in-process. Arguments exclude the program and
// subcommand names; `@file` response files are expanded here. The device
// link takes device code (bitcode, rlibs, objects) and options and gives
// cubins, PTX, a fatbin or a host object, by running lto/, codegen/ and
// packager/ in turn. `fatlink cc` and `fatlink llbc` are hostlink/'s
// (hostlink/HostLink.h).
//
//===----------------------------------------------------------------------===//

#ifndef FATLINK_LINKER_LINKER_H
#define FATLINK_LINKER_LINKER_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/raw_ostream.h"

namespace fatlink {

/// The version line printed by --version.
const char *versionString();

/// `fatlink device-link`: device bitcode in, cubins and PTX out.
int deviceLinkMain(llvm::ArrayRef<const char *> Args, llvm::raw_ostream &Out,
                   llvm::raw_ostream &Err);

/// `fatlink embed`: device bitcode in, a host object with OffloadBinaries out.
int embedMain(llvm::ArrayRef<const char *> Args, llvm::raw_ostream &Out,
              llvm::raw_ostream &Err);

/// `fatlink inspect`: lists and extracts the GPU code inside any file.
int inspectMain(llvm::ArrayRef<const char *> Args, llvm::raw_ostream &Out,
                llvm::raw_ostream &Err);

/// `fatlink bindgen`: typed C++ or Rust launch bindings from the kernel
/// manifests in an object, executable or shared library.
int bindgenMain(llvm::ArrayRef<const char *> Args, llvm::raw_ostream &Out,
                llvm::raw_ostream &Err);

/// `fatlink package`: cubins and PTX in, a fatbin or host object out.
int packageMain(llvm::ArrayRef<const char *> Args, llvm::raw_ostream &Out,
                llvm::raw_ostream &Err);

} // namespace fatlink

#endif // FATLINK_LINKER_LINKER_H
