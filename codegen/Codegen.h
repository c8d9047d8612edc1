//===- linker/Toolkit.h - The CUDA toolkit and external programs ---------===//
//
// Internal to linker/. Finds ptxas and libdevice, asks ptxas once which
// arches and PTX versions it accepts, and runs external programs with their
// output captured, a time limit, and errors that say what happened
// (not found, not executable, crashed, timed out, failed).
//
//===----------------------------------------------------------------------===//

#ifndef FATLINK_LINKER_TOOLKIT_H
#define FATLINK_LINKER_TOOLKIT_H

#include "linker/Context.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace fatlink {

struct ToolkitPaths {
  std::string CudaPath;  ///< --cuda-path, else $CUDA_PATH, else /usr/local/cuda
  std::string Ptxas;     ///< --ptxas, else <CudaPath>/bin/ptxas
  std::string Libdevice; ///< --libdevice, else <CudaPath>/nvvm/libdevice/...
  std::string Nvlink;    ///< <CudaPath>/bin/nvlink (relocatable cubins only)
  /// <CudaPath>/lib64/libcudadevrt.a, CUDA's device runtime (read only for
  /// kernels that launch kernels; may not exist).
  std::string DeviceRuntime;
};

/// What the installed ptxas accepts.
struct PtxasInfo {
  std::string Path;
  std::string Release;         ///< "13.0", from `ptxas --version`
  unsigned MaxPtxVersion = 0;  ///< x10: 90 for PTX ISA 9.0
  std::vector<std::string> Arches; ///< "sm_75", "compute_120f", ...
};

/// Fills in the defaults of Paths from the environment.
ToolkitPaths resolveToolkitPaths(llvm::StringRef CudaPath, llvm::StringRef Ptxas,
                                 llvm::StringRef Libdevice);

/// Runs `ptxas --version` and `ptxas --help` and reads the answers.
llvm::Expected<PtxasInfo> probePtxas(Context &Ctx, llvm::StringRef Ptxas);

/// Parses the two outputs of probePtxas (split out for unit tests).
llvm::Expected<PtxasInfo> parsePtxasInfo(llvm::StringRef Path,
                                         llvm::StringRef VersionOutput,
                                         llvm::StringRef HelpOutput);

/// The newest PTX ISA version (x10) a CUDA release's ptxas accepts, from
/// NVIDIA's PTX ISA release notes. Releases newer than the table are assumed
/// to accept the newest version it knows.
unsigned maxPtxVersionForCudaRelease(unsigned Major, unsigned Minor);

/// Runs Program with Args (Args[0] is the program name as shown), stdout and
/// stderr captured together. Fails if it cannot start, crashes, runs past
/// TimeoutSeconds (0: no limit) or exits non-zero; What names it in the
/// message ("ptxas for sm_80").
llvm::Expected<std::string> runProgram(Context &Ctx, llvm::StringRef Program,
                                       llvm::ArrayRef<llvm::StringRef> Args,
                                       unsigned TimeoutSeconds,
                                       llvm::StringRef What);

} // namespace fatlink

#endif // FATLINK_LINKER_TOOLKIT_H
