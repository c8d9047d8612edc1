//===- packager/Offload.cpp - OffloadBinary objects and file scanning -----===//
//
// Two jobs that need LLVM's object readers, kept in one translation unit
// because those headers are heavy:
//
// * Embedding device bitcode the way clang --offload-new-driver does: each
//   module becomes an LLVM OffloadBinary (llvm/Object/OffloadBinary.h: magic
//   10 FF 10 AD, image kind IMG_Bitcode, offload kind OFK_Cuda, strings
//   `triple` and `arch`), the binaries are concatenated at 8-byte alignment
//   in a `.llvm.offloading` section of type SHT_LLVM_OFFLOADING with
//   SHF_EXCLUDE (so a host link drops it), and clang-linker-wrapper or
//   fatlink's own driver finds them there.
//
// * Scanning any file for device code (`inspect`): bare fatbins and
//   OffloadBinaries, ELF objects, executables and shared libraries (their
//   .nv_fatbin / __nv_relfatbin and .llvm.offloading sections), and ar
//   archives of those, with every image's origin ("libfoo.a(bar.o)").
//
//===----------------------------------------------------------------------===//

#include "packager/Descriptor.h"
#include "packager/ElfWriter.h"

#include "llvm/BinaryFormat/ELF.h"
#include "llvm/BinaryFormat/Magic.h"
#include "llvm/Object/Archive.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Object/OffloadBinary.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace llvm;
using namespace llvm::object;
using namespace fatlink;
using namespace fatlink::packager;

namespace {

constexpr StringLiteral OffloadingSection = ".llvm.offloading";

Error makeError(const Twine &Msg) {
  return createStringError(inconvertibleErrorCode(), Msg);
}

/// A thin archive (`ar rcT`) holds paths instead of member bytes, and
/// LLVM's Archive opens whatever file a path names (a FIFO, /dev/zero, any
/// file the user can read) when a member's bytes are asked for. Everything
/// here works on bytes in memory and opens no file, so a thin archive is an
/// error naming up to three of its members, which the user can pass
/// instead. (The link commands read their inputs in lto/Inputs.cpp, which
/// follows the members as the host linker does.)
Error refuseThinArchive(const Archive &Ar, StringRef Name) {
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
  return makeError(Name + ": thin archive: its members are files elsewhere" +
                   (N ? " (" + Members + ")" : std::string()) +
                   ", which are not followed here: pass those files instead");
}

/// Calls \p Fn(Name, Bytes) for each member of the archive \p Data.
Error forEachMember(StringRef Data, StringRef Name,
                    function_ref<Error(StringRef, StringRef)> Fn) {
  Expected<std::unique_ptr<Archive>> ArOrErr =
      Archive::create(MemoryBufferRef(Data, Name));
  if (!ArOrErr)
    return createFileError(Name, ArOrErr.takeError());
  if ((*ArOrErr)->isThin())
    return refuseThinArchive(**ArOrErr, Name);
  Error Err = Error::success();
  for (const Archive::Child &C : (*ArOrErr)->children(Err)) {
    Expected<StringRef> MemberName = C.getName();
    if (!MemberName)
      return createFileError(Name, MemberName.takeError());
    Expected<StringRef> Buf = C.getBuffer();
    if (!Buf)
      return createFileError(Name + "(" + *MemberName + ")", Buf.takeError());
    // LLVM checks a member's size against the archive only when it moves to
    // the next member, after this one has been handed out.
    if (Buf->data() < Data.data() ||
        Buf->size() > size_t(Data.end() - Buf->data()))
      return makeError(Name + ": corrupt archive: member " + *MemberName +
                       " of " + Twine(Buf->size()) + " bytes at offset " +
                       Twine(Buf->data() - Data.data()) +
                       " goes past the end of the archive (" +
                       Twine(Data.size()) + " bytes)");
    if (Error E = Fn(*MemberName, *Buf))
      return E;
  }
  if (Err)
    return createFileError(Name, std::move(Err));
  return Error::success();
}

bool isFatbin(StringRef Data) {
  return Data.size() >= 4 &&
         support::endian::read32le(Data.data()) == FATLINK_FATBIN_MAGIC;
}

Error addFatbin(StringRef Data, StringRef Origin, StringRef Section,
                std::vector<EmbeddedImage> &Out) {
  Expected<std::vector<FatbinEntry>> Entries = readFatbin(Data);
  if (!Entries)
    return createFileError(Section.empty() ? Origin
                                           : Origin + " section " + Section,
                           Entries.takeError());
  for (FatbinEntry &E : *Entries) {
    EmbeddedImage Img;
    Img.Container = EmbeddedImage::ContainerKind::Fatbin;
    Img.Origin = Origin.str();
    Img.Section = Section.str();
    Img.Offset = E.Offset;
    Img.Kind = E.Kind == packager::ImageKind::PTX     ? "ptx"
               : E.Kind == packager::ImageKind::Cubin ? "cubin"
                                            : "nvvm-ir";
    Img.Arch = E.Arch;
    Img.Flags = E.Flags;
    Img.Major = E.Major;
    Img.Minor = E.Minor;
    Img.StoredSize = E.StoredSize;
    Img.Data = std::move(E.Payload);
    Out.push_back(std::move(Img));
  }
  return Error::success();
}

/// Adds every OffloadBinary in \p Data (concatenated at 8-byte alignment,
/// possibly with zero padding between them).
Error addOffloadBinaries(StringRef Data, StringRef Origin, StringRef Section,
                         std::vector<EmbeddedImage> &Out) {
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
    if (Expected<uint64_t> Checked = checkOffloadBinary(Rest); !Checked)
      return createFileError(Origin + " section " + Section + " offset " +
                                 Twine(Off),
                             Checked.takeError());
    Expected<std::unique_ptr<OffloadBinary>> BinOrErr =
        OffloadBinary::create(MemoryBufferRef(Rest, Origin));
    if (!BinOrErr)
      return createFileError(Origin + " section " + Section + " offset " +
                                 Twine(Off),
                             BinOrErr.takeError());
    OffloadBinary &Bin = **BinOrErr;
    if (Bin.getSize() == 0 || Bin.getSize() > Rest.size())
      return makeError(Origin + " section " + Section +
                       ": OffloadBinary at offset " + Twine(Off) +
                       " declares size " + Twine(Bin.getSize()) + " but " +
                       Twine(Rest.size()) + " bytes remain");
    EmbeddedImage Img;
    Img.Container = EmbeddedImage::ContainerKind::OffloadBinary;
    Img.Origin = Origin.str();
    Img.Section = Section.str();
    Img.Offset = Off;
    Img.Kind = getImageKindName(Bin.getImageKind()).str();
    Img.Arch = Bin.getArch().str();
    Img.Triple = Bin.getTriple().str();
    Img.Flags = Bin.getFlags();
    Img.Data = Bin.getImage().str();
    Img.StoredSize = Img.Data.size();
    Out.push_back(std::move(Img));
    Off += Bin.getSize();
  }
  return Error::success();
}

Error scanObject(StringRef Data, StringRef Origin,
                 std::vector<EmbeddedImage> &Out) {
  Expected<std::unique_ptr<ObjectFile>> ObjOrErr =
      ObjectFile::createObjectFile(MemoryBufferRef(Data, Origin));
  if (!ObjOrErr)
    return createFileError(Origin, ObjOrErr.takeError());
  for (const SectionRef &Sec : (*ObjOrErr)->sections()) {
    Expected<StringRef> Name = Sec.getName();
    if (!Name)
      return createFileError(Origin, Name.takeError());
    bool IsOffloading = *Name == OffloadingSection;
    if (isa<ELFObjectFileBase>(ObjOrErr->get()))
      IsOffloading |= ELFSectionRef(Sec).getType() == ELF::SHT_LLVM_OFFLOADING;
    bool IsFatbin = *Name == ".nv_fatbin" || *Name == "__nv_relfatbin";
    if (!IsOffloading && !IsFatbin)
      continue;
    Expected<StringRef> Contents = Sec.getContents();
    if (!Contents)
      return createFileError(Origin + " section " + *Name,
                             Contents.takeError());
    if (Error E = IsFatbin ? addFatbin(*Contents, Origin, *Name, Out)
                           : addOffloadBinaries(*Contents, Origin, *Name, Out))
      return E;
  }
  return Error::success();
}

/// Scans \p Data. At the top level an unknown format is an error; inside an
/// archive it is skipped (rlibs hold lib.rmeta, archives hold symbol
/// tables and text files).
Error scan(StringRef Data, StringRef Origin, bool InArchive,
           std::vector<EmbeddedImage> &Out) {
  if (isFatbin(Data))
    return addFatbin(Data, Origin, "", Out);
  switch (identify_magic(Data)) {
  case file_magic::offload_binary:
    return addOffloadBinaries(Data, Origin, "", Out);
  case file_magic::archive:
    return forEachMember(Data, Origin, [&](StringRef Member, StringRef Buf) {
      return scan(Buf, (Origin + "(" + Member + ")").str(), true, Out);
    });
  case file_magic::elf_relocatable:
  case file_magic::elf_executable:
  case file_magic::elf_shared_object:
    return scanObject(Data, Origin, Out);
  default:
    if (InArchive)
      return Error::success();
    return makeError(Origin + ": not a fatbin, OffloadBinary, ELF file or "
                              "archive");
  }
}

} // namespace

Expected<std::vector<BitcodeMember>>
fatlink::packager::collectBitcode(StringRef Data, StringRef Name) {
  std::vector<BitcodeMember> Out;
  file_magic Magic = identify_magic(Data);
  if (Magic == file_magic::bitcode) {
    Out.push_back({Name.str(), Data.str()});
    return Out;
  }
  if (Magic != file_magic::archive)
    return makeError(Name + ": neither LLVM bitcode nor an archive");
  Error Err = forEachMember(Data, Name, [&](StringRef Member, StringRef Buf) {
    if (identify_magic(Buf) == file_magic::bitcode)
      Out.push_back({(Name + "(" + Member + ")").str(), Buf.str()});
    return Error::success();
  });
  if (Err)
    return std::move(Err);
  if (Out.empty())
    return makeError(Name + ": archive has no LLVM bitcode member");
  return Out;
}

Expected<std::string>
fatlink::packager::writeOffloadObject(ArrayRef<OffloadImage> Images,
                                      HostArch Arch) {
  if (Images.empty())
    return makeError("no device bitcode to embed");
  ElfSection Sec;
  Sec.Name = OffloadingSection.str();
  Sec.Type = ELF::SHT_LLVM_OFFLOADING;
  Sec.Flags = ELF::SHF_EXCLUDE;
  Sec.Align = OffloadBinary::getAlignment();
  for (const OffloadImage &Img : Images) {
    if (Img.Arch.empty())
      return makeError("device bitcode for " + Img.Triple + " has no arch");
    // OffloadBinary strings end at their first NUL: one inside would be
    // read back cut short (found by fuzz/embed_roundtrip).
    if (Img.Arch.find('\0') != std::string::npos ||
        Img.Triple.find('\0') != std::string::npos)
      return makeError("arch '" + Img.Arch + "' or triple '" + Img.Triple +
                       "' of device bitcode holds a NUL byte");
    if (identify_magic(Img.Bitcode) != file_magic::bitcode)
      return makeError("image for " + Img.Arch + " is not LLVM bitcode");
    OffloadBinary::OffloadingImage OI;
    OI.TheImageKind = IMG_Bitcode;
    OI.TheOffloadKind = OFK_Cuda;
    OI.StringData["triple"] = Img.Triple;
    OI.StringData["arch"] = Img.Arch;
    OI.Image = MemoryBuffer::getMemBuffer(Img.Bitcode, "",
                                          /*RequiresNullTerminator=*/false);
    SmallString<0> Bin = OffloadBinary::write(OI);
    Sec.Data.append(Bin.data(), Bin.size());
    Sec.Data.resize(alignTo(Sec.Data.size(), Sec.Align), '\0');
  }
  return writeRelocatableElf(Sec, Arch);
}

Expected<uint64_t> fatlink::packager::checkOffloadBinary(StringRef Data) {
  using support::endian::read64le;
  // Header: magic, u32 version, u64 size, u64 entry offset, u64 entry size.
  // Entry: u16 image kind, u16 offload kind, u32 flags, u64 string offset,
  // u64 string count, u64 image offset, u64 image size. Strings: pairs of
  // u64 key and value offsets to NUL-terminated strings.
  constexpr uint64_t HeaderSize = 32, EntrySize = 40, StringEntrySize = 16;
  if (Data.size() < HeaderSize ||
      identify_magic(Data) != file_magic::offload_binary)
    return makeError("not an OffloadBinary (no 10 ff 10 ad header)");
  uint64_t Size = read64le(Data.data() + 8);
  uint64_t EntryOff = read64le(Data.data() + 16);
  if (Size < HeaderSize + EntrySize || Size > Data.size())
    return makeError("OffloadBinary declares size " + Twine(Size) + " but " +
                     Twine(Data.size()) + " bytes remain");
  if (EntryOff > Size - EntrySize)
    return makeError("OffloadBinary entry at offset " + Twine(EntryOff) +
                     " lies outside its " + Twine(Size) + " bytes");
  const char *E = Data.data() + EntryOff;
  uint64_t StringOff = read64le(E + 8), NumStrings = read64le(E + 16);
  uint64_t ImageOff = read64le(E + 24), ImageSize = read64le(E + 32);
  if (StringOff > Size || NumStrings > (Size - StringOff) / StringEntrySize)
    return makeError("OffloadBinary string table (" + Twine(NumStrings) +
                     " entries at offset " + Twine(StringOff) +
                     ") lies outside its " + Twine(Size) + " bytes");
  for (uint64_t I = 0; I < NumStrings * 2; ++I) {
    uint64_t Off = read64le(Data.data() + StringOff + I * 8);
    if (Off >= Size ||
        Data.substr(Off, Size - Off).find('\0') == StringRef::npos)
      return makeError("OffloadBinary string at offset " + Twine(Off) +
                       " is not a NUL-terminated string within its " +
                       Twine(Size) + " bytes");
  }
  if (ImageOff > Size || ImageSize > Size - ImageOff)
    return makeError("OffloadBinary image (" + Twine(ImageSize) +
                     " bytes at offset " + Twine(ImageOff) +
                     ") lies outside its " + Twine(Size) + " bytes");
  return Size;
}

Expected<std::vector<EmbeddedImage>>
fatlink::packager::scanFile(StringRef Data, StringRef Name) {
  std::vector<EmbeddedImage> Out;
  if (Error E = scan(Data, Name, false, Out))
    return std::move(E);
  return Out;
}
