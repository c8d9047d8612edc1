//===- intake/Intake.cpp - Reading device code out of input files ---------===//
//
// Archives, object sections and OffloadBinaries, read from bytes in memory
// with LLVM's object readers, plus the checks those readers leave out:
//
// * An ar member's size is checked against the archive only when LLVM's
//   Archive steps to the next member, after the member has been handed
//   out; forEachMember checks it first.
// * LLVM's OffloadBinary::create (llvm/Object/OffloadBinary.h: magic
//   10 FF 10 AD, a header, one entry, a string table, the image) checks the
//   header but reads every key and value up to a NUL wherever the table
//   points, and trusts the image size; checkOffloadBinary checks them all.
// * A thin archive holds paths, and LLVM's Archive opens whatever file a
//   path names (a FIFO, /dev/zero) when a member's bytes are asked for;
//   here the member's file is opened only when the caller follows thin
//   archives, and only when it is a regular file.
//
//===----------------------------------------------------------------------===//

#include "intake/Intake.h"

#include "llvm/BinaryFormat/ELF.h"
#include "llvm/BinaryFormat/Magic.h"
#include "llvm/Object/Archive.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Object/OffloadBinary.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"

#include <sys/mman.h>

using namespace llvm;
using namespace llvm::object;

namespace fatlink::intake {

//===----------------------------------------------------------------------===//
// Archives
//===----------------------------------------------------------------------===//

/// The error for a thin archive that is not followed, naming up to three
/// of its members, which the user can pass instead.
static Error refuseThinArchive(const Archive &Ar, StringRef Path) {
  std::string Members;
  unsigned N = 0;
  Error Err = Error::success();
  for (const Archive::Child &C : Ar.children(Err)) {
    Expected<StringRef> MemberName = C.getName();
    if (!MemberName) {
      consumeError(MemberName.takeError());
      break;
    }
    if (++N <= 3)
      Members += (N > 1 ? ", " : "") + MemberName->str();
  }
  consumeError(std::move(Err));
  if (N > 3)
    Members += ", ...";
  return createStringError(
      Path + ": thin archive: its members are files elsewhere" +
      (N ? " (" + Members + ")" : std::string()) +
      ", which are not followed here: pass those files instead");
}

/// Reads member \p Member of the thin archive \p Archive. As GNU ld and lld
/// do (and as LLVM's Archive::Child::getFullName does), a relative path is
/// taken from the archive's directory and an absolute one as it is, so
/// fatlink finds the device code in exactly the files the host linker
/// links. The file must be a regular one: a FIFO, a device (/dev/zero,
/// /dev/stdin) or a directory named by a crafted archive would block,
/// never end or fail obscurely. (A member that is an archive is the
/// caller's to skip, so an archive naming itself ends too.)
static Expected<std::unique_ptr<MemoryBuffer>>
readThinMember(StringRef Archive, StringRef Member) {
  SmallString<256> Full;
  if (!sys::path::is_absolute(Member))
    Full = sys::path::parent_path(Archive);
  sys::path::append(Full, Member);
  sys::fs::file_status Status;
  if (std::error_code EC = sys::fs::status(Full, Status))
    return createStringError(
        "%s: cannot open %s, a member of this thin archive: %s",
        Archive.str().c_str(), Full.c_str(), EC.message().c_str());
  if (Status.type() != sys::fs::file_type::regular_file)
    return createStringError("%s: member %s of this thin archive is not a "
                             "regular file",
                             Archive.str().c_str(), Full.c_str());
  ErrorOr<std::unique_ptr<MemoryBuffer>> MBOrErr =
      MemoryBuffer::getFile(Full, /*IsText=*/false,
                            /*RequiresNullTerminator=*/false);
  if (!MBOrErr)
    return createStringError(
        "%s: cannot read %s, a member of this thin archive: %s",
        Archive.str().c_str(), Full.c_str(),
        MBOrErr.getError().message().c_str());
  return std::move(*MBOrErr);
}

Error forEachMember(MemoryBufferRef MB, StringRef Path, ThinArchive Thin,
                    function_ref<Error(Member &)> Fn,
                    function_ref<void(Error)> OnMemberError) {
  Expected<std::unique_ptr<Archive>> ArOrErr = Archive::create(MB);
  if (!ArOrErr)
    return createStringError("%s: corrupt archive: %s", Path.str().c_str(),
                             toString(ArOrErr.takeError()).c_str());
  const Archive &Ar = **ArOrErr;
  if (Ar.isThin() && Thin == ThinArchive::Refuse)
    return refuseThinArchive(Ar, Path);

  // The first error that ends the walk; Err, the iteration's own, must be
  // checked after the loop however it ends.
  Error Result = Error::success();
  Error Err = Error::success();
  size_t Index = 0;
  for (const Archive::Child &C : Ar.children(Err)) {
    ++Index;
    Expected<StringRef> NameOrErr = C.getName();
    if (!NameOrErr) {
      Result = createStringError("%s: corrupt archive member %zu: %s",
                                 Path.str().c_str(), Index,
                                 toString(NameOrErr.takeError()).c_str());
      break;
    }
    Member M;
    M.Name = *NameOrErr;
    if (Ar.isThin()) {
      // Not C.getMemoryBufferRef(): LLVM would open any file the path
      // names.
      Expected<std::unique_ptr<MemoryBuffer>> ThinOrErr =
          readThinMember(Path, M.Name);
      if (!ThinOrErr) {
        if (OnMemberError) {
          OnMemberError(ThinOrErr.takeError());
          continue;
        }
        Result = ThinOrErr.takeError();
        break;
      }
      M.Owned = std::move(*ThinOrErr);
      M.Data = M.Owned->getMemBufferRef();
    } else {
      Expected<MemoryBufferRef> BufOrErr = C.getMemoryBufferRef();
      if (!BufOrErr) {
        Result = createStringError("%s(%s): corrupt archive member: %s",
                                   Path.str().c_str(), M.Name.str().c_str(),
                                   toString(BufOrErr.takeError()).c_str());
        break;
      }
      // LLVM checks a member's size against the archive only when it moves
      // to the next member, after this one has been handed out.
      StringRef Whole = MB.getBuffer(), Bytes = BufOrErr->getBuffer();
      if (Bytes.data() < Whole.data() ||
          Bytes.size() > size_t(Whole.end() - Bytes.data())) {
        Result = createStringError(
            "%s: corrupt archive: member %s of %zu bytes at offset %zu goes "
            "past the end of the archive (%zu bytes)",
            Path.str().c_str(), M.Name.str().c_str(), Bytes.size(),
            size_t(Bytes.data() - Whole.data()), Whole.size());
        break;
      }
      M.Data = *BufOrErr;
    }
    if (Error E = Fn(M)) {
      Result = std::move(E);
      break;
    }
  }
  if (Err)
    return joinErrors(std::move(Result),
                      createStringError("%s: corrupt archive: %s",
                                        Path.str().c_str(),
                                        toString(std::move(Err)).c_str()));
  return Result;
}

//===----------------------------------------------------------------------===//
// Objects
//===----------------------------------------------------------------------===//

Error forEachDeviceSection(
    const ObjectFile &Obj, StringRef Origin,
    function_ref<Error(SectionKind, StringRef, StringRef)> Fn) {
  bool IsELF = isa<ELFObjectFileBase>(&Obj);
  for (const SectionRef &Sec : Obj.sections()) {
    Expected<StringRef> Name = Sec.getName();
    if (!Name)
      return createFileError(Origin, Name.takeError());
    bool IsOffloading =
        *Name == ".llvm.offloading" ||
        (IsELF && ELFSectionRef(Sec).getType() == ELF::SHT_LLVM_OFFLOADING);
    bool IsFatbin = *Name == ".nv_fatbin" || *Name == "__nv_relfatbin";
    if (!IsOffloading && !IsFatbin)
      continue;
    Expected<StringRef> Contents = Sec.getContents();
    if (!Contents)
      return createFileError(Origin + " section " + *Name,
                             Contents.takeError());
    if (Error E = Fn(IsFatbin ? SectionKind::Fatbin : SectionKind::Offloading,
                     *Name, *Contents))
      return E;
  }
  return Error::success();
}

//===----------------------------------------------------------------------===//
// OffloadBinaries
//===----------------------------------------------------------------------===//

Expected<uint64_t> checkOffloadBinary(StringRef Data) {
  using support::endian::read64le;
  // Header: magic, u32 version, u64 size, u64 entry offset, u64 entry size.
  // Entry: u16 image kind, u16 offload kind, u32 flags, u64 string offset,
  // u64 string count, u64 image offset, u64 image size. Strings: pairs of
  // u64 key and value offsets to NUL-terminated strings.
  constexpr uint64_t HeaderSize = 32, EntrySize = 40, StringEntrySize = 16;
  if (Data.size() < HeaderSize ||
      identify_magic(Data) != file_magic::offload_binary)
    return createStringError("not an OffloadBinary (no 10 ff 10 ad header)");
  uint64_t Size = read64le(Data.data() + 8);
  uint64_t EntryOff = read64le(Data.data() + 16);
  if (Size < HeaderSize + EntrySize || Size > Data.size())
    return createStringError("OffloadBinary declares size " + Twine(Size) +
                             " but " + Twine(Data.size()) + " bytes remain");
  if (EntryOff > Size - EntrySize)
    return createStringError("OffloadBinary entry at offset " +
                             Twine(EntryOff) + " lies outside its " +
                             Twine(Size) + " bytes");
  const char *E = Data.data() + EntryOff;
  uint64_t StringOff = read64le(E + 8), NumStrings = read64le(E + 16);
  uint64_t ImageOff = read64le(E + 24), ImageSize = read64le(E + 32);
  if (StringOff > Size || NumStrings > (Size - StringOff) / StringEntrySize)
    return createStringError("OffloadBinary string table (" +
                             Twine(NumStrings) + " entries at offset " +
                             Twine(StringOff) + ") lies outside its " +
                             Twine(Size) + " bytes");
  for (uint64_t I = 0; I < NumStrings * 2; ++I) {
    uint64_t Off = read64le(Data.data() + StringOff + I * 8);
    if (Off >= Size ||
        Data.substr(Off, Size - Off).find('\0') == StringRef::npos)
      return createStringError("OffloadBinary string at offset " + Twine(Off) +
                               " is not a NUL-terminated string within its " +
                               Twine(Size) + " bytes");
  }
  if (ImageOff > Size || ImageSize > Size - ImageOff)
    return createStringError("OffloadBinary image (" + Twine(ImageSize) +
                             " bytes at offset " + Twine(ImageOff) +
                             ") lies outside its " + Twine(Size) + " bytes");
  return Size;
}

Error forEachOffloadBinary(
    StringRef Data, function_ref<Error(uint64_t, const OffloadBinary &)> Fn,
    function_ref<Error(uint64_t, Error)> AtOffset) {
  // OffloadBinary::create wants 8-byte aligned bytes; a section of an
  // archive member is only 2-byte aligned.
  std::unique_ptr<MemoryBuffer> Copy;
  if (!isAddrAligned(Align(OffloadBinary::getAlignment()), Data.data())) {
    Copy = MemoryBuffer::getMemBufferCopy(Data);
    Data = Copy->getBuffer();
  }
  uint64_t Off = 0;
  while (Off < Data.size()) {
    if (Data[Off] == '\0') { // padding
      ++Off;
      continue;
    }
    StringRef Rest = Data.drop_front(Off);
    Expected<uint64_t> Size = checkOffloadBinary(Rest);
    if (!Size)
      return AtOffset(Off, Size.takeError());
    Expected<std::unique_ptr<OffloadBinary>> BinOrErr =
        OffloadBinary::create(MemoryBufferRef(Rest, ""));
    if (!BinOrErr)
      return AtOffset(Off, BinOrErr.takeError());
    if (Error E = Fn(Off, **BinOrErr))
      return E;
    Off += *Size;
  }
  return Error::success();
}

//===----------------------------------------------------------------------===//
// Mapped files
//===----------------------------------------------------------------------===//

void releasePages(StringRef Range, StringRef Mapping) {
  uintptr_t Page = sys::Process::getPageSizeEstimate();
  uintptr_t Begin =
      std::max(uintptr_t(Range.begin()), uintptr_t(Mapping.begin()));
  uintptr_t End = std::min(uintptr_t(Range.end()), uintptr_t(Mapping.end()));
  // Whole pages only: a partial page at either end may still be read.
  Begin = alignTo(Begin, Page);
  End = End == uintptr_t(Mapping.end()) ? alignTo(End, Page)
                                        : alignDown(End, Page);
  if (Begin < End) // advice: nothing to report if it is refused
    (void)::madvise(reinterpret_cast<void *>(Begin), End - Begin,
                    MADV_DONTNEED);
}

} // namespace fatlink::intake
