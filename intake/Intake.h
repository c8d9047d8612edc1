//===- intake/Intake.h - Reading device code out of input files -*- C++ -*-===//
//
// The one place fatlink takes files apart to find device code, shared by
// lto/ (device-link, cc/host link, embed: lto::readInputs) and packager/
// (inspect: packager::scanFile). It takes bytes that are already in memory
// (a file, an archive member, an object's section) and gives:
//
//   - forEachMember: the members of an ar archive, each bounds-checked
//     against the archive; thin archives refused or followed, as the
//     caller says,
//   - forEachDeviceSection: an object's sections that carry device code
//     (.llvm.offloading / SHT_LLVM_OFFLOADING, .nv_fatbin, __nv_relfatbin),
//   - forEachOffloadBinary: the LLVM OffloadBinaries in a .llvm.offloading
//     section, each checked by checkOffloadBinary before LLVM reads it,
//   - releasePages: a mapped file's pages handed back once they are read.
//
// It knows no fatbin and no bitcode: what a member or a section holds is
// the caller's business. Errors are llvm::Error values whose messages name
// the file ("libfoo.a(bar.o)") and the offending offset or size; nothing
// here prints. Only forEachMember with ThinArchive::Follow opens files.
//
//===----------------------------------------------------------------------===//

#ifndef FATLINK_INTAKE_INTAKE_H
#define FATLINK_INTAKE_INTAKE_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstdint>
#include <memory>

namespace llvm::object {
class ObjectFile;
class OffloadBinary;
} // namespace llvm::object

namespace fatlink::intake {

//===----------------------------------------------------------------------===//
// Archives
//===----------------------------------------------------------------------===//

/// What to do with a thin archive (`ar rcT`), whose members are paths to
/// files elsewhere.
enum class ThinArchive {
  /// An error naming up to three members, which the user can pass instead
  /// (inspect: it works on bytes and opens no file).
  Refuse,
  /// Read each member's file as GNU ld and lld do: a relative path from the
  /// archive's directory, an absolute one as it is; only regular files.
  Follow,
};

/// One member of an archive, as forEachMember hands it out.
struct Member {
  llvm::StringRef Name;       ///< as the archive names it ("foo.rcgu.o")
  llvm::MemoryBufferRef Data; ///< its bytes, within the archive's bounds
  /// A thin archive's member file, read here; the callee may take it to
  /// keep Data alive after the call. Null for a regular archive.
  std::unique_ptr<llvm::MemoryBuffer> Owned;
};

/// Calls \p Fn for each member of the archive \p Archive, in order; \p Path
/// names the archive in messages. A member whose size reaches past the end
/// of the archive is an error (LLVM's reader checks that only on stepping
/// to the next member). An error from Fn, or a corrupt archive, ends the
/// walk and is returned. With ThinArchive::Follow, a member file that
/// cannot be read is given to \p OnMemberError and the walk goes on (the
/// other members may have more to report); without OnMemberError it ends
/// the walk.
llvm::Error
forEachMember(llvm::MemoryBufferRef Archive, llvm::StringRef Path,
              ThinArchive Thin, llvm::function_ref<llvm::Error(Member &)> Fn,
              llvm::function_ref<void(llvm::Error)> OnMemberError = nullptr);

//===----------------------------------------------------------------------===//
// Objects
//===----------------------------------------------------------------------===//

enum class SectionKind {
  /// LLVM OffloadBinaries: named .llvm.offloading, or of ELF type
  /// SHT_LLVM_OFFLOADING (clang --offload-new-driver, fatlink embed).
  Offloading,
  /// A CUDA fatbin: .nv_fatbin (nvcc -c, linked programs) or
  /// __nv_relfatbin (nvcc -dc, relocatable device code).
  Fatbin,
};

/// Calls \p Fn(Kind, Name, Contents) for each section of \p Obj that
/// carries device code, in section order. \p Origin names the object in
/// messages.
llvm::Error forEachDeviceSection(
    const llvm::object::ObjectFile &Obj, llvm::StringRef Origin,
    llvm::function_ref<llvm::Error(SectionKind, llvm::StringRef Name,
                                   llvm::StringRef Contents)>
        Fn);

//===----------------------------------------------------------------------===//
// OffloadBinaries
//===----------------------------------------------------------------------===//

/// Checks the LLVM OffloadBinary at the start of \p Data and returns its
/// declared size. LLVM's OffloadBinary::create checks the header but trusts
/// the string table (each key and value is read up to a NUL) and the image
/// size, so every reader calls this first: the entry, the string table,
/// every string with its NUL, and the image must lie within the binary's
/// declared size, and that size within \p Data.
llvm::Expected<uint64_t> checkOffloadBinary(llvm::StringRef Data);

/// Calls \p Fn(Offset, Binary) for each OffloadBinary in \p Contents, a
/// .llvm.offloading section or a bare OffloadBinary file: binaries follow
/// each other, zero bytes between them are padding. Each is checked with
/// checkOffloadBinary before OffloadBinary::create reads it. The first bad
/// binary ends the walk with \p AtOffset(Offset, E), which lets the caller
/// say where (its file, its section, the binary's offset) its own way;
/// an error from Fn ends it as it is. The bytes are copied once when they
/// are not 8-byte aligned (an archive member's section is only 2-byte
/// aligned), so Binary lives only during the call.
llvm::Error forEachOffloadBinary(
    llvm::StringRef Contents,
    llvm::function_ref<llvm::Error(uint64_t Offset,
                                   const llvm::object::OffloadBinary &)>
        Fn,
    llvm::function_ref<llvm::Error(uint64_t Offset, llvm::Error)> AtOffset);

//===----------------------------------------------------------------------===//
// Mapped files
//===----------------------------------------------------------------------===//

/// Hands the whole pages of \p Range, a part of \p Mapping (a file mapped
/// read-only), back to the system: they are clean, and read again they come
/// back from the file. Parts of Range outside Mapping are ignored; a
/// partial page at either end is kept, except Mapping's last page once
/// Range reaches Mapping's end (nothing else lies in it). Not
/// MemoryBuffer::dontNeedIfMmap: LLVM 22 gives that advice with
/// posix_madvise, which glibc ignores for POSIX_MADV_DONTNEED.
void releasePages(llvm::StringRef Range, llvm::StringRef Mapping);

} // namespace fatlink::intake

#endif // FATLINK_INTAKE_INTAKE_H
