//===- hostlink/NvccRegistration.h - Registering nvcc modules -*- C++ -*-===//
//
// Internal to hostlink/. nvcc's relocatable host code (`nvcc -dc`,
// `-rdc=true`) registers its kernels by calling
// __cudaRegisterLinkedBinary_<module id> from a static constructor, a
// function that `nvcc -dlink` defines from the toolkit's crt/link.stub.
// `fatlink cc` defines them instead, registering the fatbin of its own
// device link: no nvcc -dlink step, and one copy of the device code.
//
//   findNvccInputs:         the modules of the objects and archive members
//                           on the host link line (the functions they call),
//                           and the nvcc -dlink outputs among them;
//   archiveWithout:         an archive less some members (the host link
//                           takes an nvcc -dlink output's archive so);
//   writeNvccRegistration:  an archive of host objects (compiled in-process
//                           by LLVM's x86-64 or AArch64 backend) that define
//                           them, one member per module, so that the host
//                           linker takes exactly the members of the modules
//                           it links, and counts them.
//
// docs/nvcc-host.md describes the design and what was rejected.
//
//===----------------------------------------------------------------------===//

#ifndef FATLINK_HOSTLINK_NVCCREGISTRATION_H
#define FATLINK_HOSTLINK_NVCCREGISTRATION_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace fatlink {

/// One nvcc module on the host link line.
struct NvccModule {
  std::string Id;     ///< "_9f38b5d6_10_nv_host_cu_main"
  std::string Origin; ///< the object: "nv_host.o", "libnv.a(nv_math.o)"
  /// Whether the object carries nvcc device code (__nv_relfatbin). nvcc
  /// writes one into every relocatable object, even one with no kernel.
  bool HasDeviceCode = false;

  /// The function its host code calls.
  std::string registerFunction() const {
    return "__cudaRegisterLinkedBinary" + Id;
  }
};

/// An nvcc -dlink output on the host link line (`nvcc -dlink`, CMake's
/// cmake_device_link.o, the `cc` crate's <lib>_dlink.o archive member): an
/// object that defines __cudaRegisterLinkedBinary_<id> for the modules
/// nvlink linked and registers nvlink's fatbin, a second copy of their
/// device code.
struct NvccDeviceLink {
  size_t Input = 0; ///< the index of its file among the paths searched
  /// Its index among the archive's members; none for an object file.
  std::optional<size_t> Member;
  std::string Origin;           ///< "libnv_ops.a(nv_ops_dlink.o)"
  std::vector<std::string> Ids; ///< the modules it registers
};

/// What the host link line holds of nvcc's relocatable host code.
struct NvccInputs {
  std::vector<NvccModule> Modules;
  std::vector<NvccDeviceLink> DeviceLinks;
};

/// Reads the nvcc -rdc modules of the relocatable objects among \p Paths
/// and of every relocatable object in the archives among them (members of
/// thin archives are followed, as the host linker does), in link order: the
/// undefined __cudaRegisterLinkedBinary_<id> symbols. (The object's
/// __nv_module_id section names the same ids, but nvcc -c whole-program
/// objects, which register themselves, carry one too.) An object that
/// defines such a symbol is an nvcc -dlink output. Shared libraries and
/// other files are skipped: a shared library registers its own modules. A
/// module id that is not an identifier, or an unreadable archive, is an
/// error naming the file.
llvm::Expected<NvccInputs> findNvccInputs(llvm::ArrayRef<std::string> Paths);

/// The ar archive at \p Path, less the members whose indices (in member
/// order) are in \p Drop: a regular archive (a thin one's members read in),
/// deterministic, with a symbol index, for the host link to take instead.
llvm::Expected<std::string> archiveWithout(llvm::StringRef Path,
                                           llvm::ArrayRef<size_t> Drop);

/// Returns an ar archive (deterministic, with a symbol index) for the host
/// \p Triple (x86_64 or aarch64) defining, hidden,
/// __cudaRegisterLinkedBinary_<id> for each distinct id of \p Modules (one
/// member each, by id) and the registration they share (one more member),
/// which registers the fatbin whose wrapper is the hidden symbol
/// \p WrapperSymbol (packager::wrapperSymbol) as crt/link.stub does, and
/// FATLINK_CUDART_JOIN for the runtime (packager/Descriptor.h).
llvm::Expected<std::string>
writeNvccRegistration(llvm::ArrayRef<NvccModule> Modules,
                      llvm::StringRef WrapperSymbol, llvm::StringRef Triple);

} // namespace fatlink

#endif // FATLINK_HOSTLINK_NVCCREGISTRATION_H
