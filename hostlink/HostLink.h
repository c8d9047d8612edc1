//===- hostlink/HostLink.h - The host link: device link inside a cc link ===//
//
// The host link stage. It takes a command line written for another tool
// (cargo's and build systems' `cc` link line, or rustc's nvptx64 `llbc`
// device-linker line) with fatlink's own `--fatlink-*` settings mixed in,
// and gives what that tool would have written: for `cc`, the host link's
// output, with the device link of every input's device code added to it as
// a host object (linker/'s device link, then codegen/ and packager/); for
// `llbc`, the PTX (or fatbin, cubin, host object) rustc asked for. Every
// argument that is not fatlink's reaches the host linker byte for byte.
//
// Each command is a function from its arguments to an exit code (as in
// linker/Linker.h), so tests can run it in-process.
//
//===----------------------------------------------------------------------===//

#ifndef FATLINK_HOSTLINK_HOSTLINK_H
#define FATLINK_HOSTLINK_HOSTLINK_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/raw_ostream.h"

namespace fatlink {

/// `fatlink cc` (fatlink-cc): a cc/clang link command line in; the device
/// link of its inputs' device code, then the host link with the result.
/// The exit code is the host linker's.
int hostLinkMain(llvm::ArrayRef<const char *> Args, llvm::raw_ostream &Out,
                 llvm::raw_ostream &Err);

/// `fatlink llbc` (fatlink-llbc): rustc's nvptx64 device linker.
int llbcMain(llvm::ArrayRef<const char *> Args, llvm::raw_ostream &Out,
             llvm::raw_ostream &Err);

/// Whether \p Args is rustc's nvptx64 device-linker line (`--target-cpu
/// sm_XX`, `--target nvptx64-nvidia-cuda`): what `fatlink llbc` takes, and
/// what a cc (which reads `--target` as `--target-help`) must never see.
bool isLlbcCommandLine(llvm::ArrayRef<const char *> Args);

} // namespace fatlink

#endif // FATLINK_HOSTLINK_HOSTLINK_H
