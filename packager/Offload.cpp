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
//   archives of those, with every image's origin ("libfoo.a(bar.o)"). The
//   archive walk, the section scan and the checked OffloadBinary walk are
//   intake/'s, shared with the link commands' lto::readInputs; what is
//   added here is reading the fatbins, and telling nvcc's kinds of device
//   code apart: relocatable cubins (ET_REL), the module id of an nvcc -dc
//   object (section __nv_module_id) for its __nv_relfatbin entries, and
//   the whole-program .nv_fatbin of a relocatable object. Thin archives
//   are refused: this works on bytes in memory and opens no file.
//
//===----------------------------------------------------------------------===//

#include "packager/Descriptor.h"
#include "packager/ElfWriter.h"

#include "intake/Intake.h"

#include "llvm/BinaryFormat/ELF.h"
#include "llvm/BinaryFormat/Magic.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Object/OffloadBinary.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace llvm;
using namespace llvm::object;
using namespace fatlink;
using namespace fatlink::packager;

bool fatlink::packager::isRelocatableCubin(StringRef Data) {
  return Data.size() >= 18 &&
         Data.starts_with("\x7f"
                          "ELF") &&
         support::endian::read16le(Data.data() + 16) == ELF::ET_REL;
}

namespace {

constexpr StringLiteral OffloadingSection = ".llvm.offloading";

bool isFatbin(StringRef Data) {
  return Data.size() >= 4 &&
         support::endian::read32le(Data.data()) == FATLINK_FATBIN_MAGIC;
}

/// What an ELF relocatable object says about the fatbins it carries.
struct ObjectInfo {
  bool Relocatable = false; ///< an ET_REL host object
  std::string ModuleId;     ///< section __nv_module_id, up to its NUL
};

/// How errors name an image's place: "lib.a(k.o) section .nv_fatbin".
std::string placeOf(StringRef Origin, StringRef Section) {
  return Section.empty() ? Origin.str()
                         : (Origin + " section " + Section).str();
}

Error addFatbin(StringRef Data, StringRef Origin, StringRef Section,
                const ObjectInfo &Obj, bool Decompress,
                std::vector<EmbeddedImage> &Out) {
  Expected<std::vector<FatbinEntry>> Entries = readFatbin(Data, Decompress);
  if (!Entries)
    return createFileError(placeOf(Origin, Section), Entries.takeError());
  for (FatbinEntry &E : *Entries) {
    EmbeddedImage Img;
    Img.Container = EmbeddedImage::ContainerKind::Fatbin;
    Img.Origin = Origin.str();
    Img.Section = Section.str();
    Img.Offset = E.Offset;
    Img.Kind = E.Kind == packager::ImageKind::PTX     ? "ptx"
               : E.Kind == packager::ImageKind::Cubin ? "cubin"
                                                      : "lto-ir";
    Img.Arch = E.Arch;
    Img.Flags = E.Flags;
    Img.Major = E.Major;
    Img.Minor = E.Minor;
    Img.StoredSize = E.StoredSize;
    Img.Options = std::move(E.Options);
    // An obfuscated entry cannot be decompressed: it is passed on as a
    // fatbin of its own, which nvJitLink and cuobjdump read.
    Img.Data = E.Flags & FlagObfuscated ? fatbinOfEntry(E.Encoded)
                                        : std::move(E.Payload);
    Img.UncompressedSize = E.UncompressedSize;
    Img.Compressed = !Decompress && (E.Flags & (FlagZstd | FlagLZ4)) &&
                     !(E.Flags & FlagObfuscated);
    if (E.Kind == packager::ImageKind::Cubin && Img.Compressed) {
      // The ELF header alone says ET_REL.
      Expected<std::string> Head = decompressFatbinPayload(
          Img.Data, E.Flags, E.UncompressedSize, E.Offset, /*Max=*/64);
      if (!Head)
        return createFileError(placeOf(Origin, Section), Head.takeError());
      Img.Relocatable = isRelocatableCubin(*Head);
    } else {
      Img.Relocatable =
          E.Kind == packager::ImageKind::Cubin && isRelocatableCubin(Img.Data);
    }
    if (Obj.Relocatable && Section == "__nv_relfatbin")
      Img.ModuleId = Obj.ModuleId;
    Img.WholeProgram = Obj.Relocatable && Section == ".nv_fatbin";
    Out.push_back(std::move(Img));
  }
  return Error::success();
}

/// Adds every OffloadBinary in \p Data (see intake::forEachOffloadBinary).
Error addOffloadBinaries(StringRef Data, StringRef Origin, StringRef Section,
                         std::vector<EmbeddedImage> &Out) {
  return intake::forEachOffloadBinary(
      Data,
      [&](uint64_t Off, const OffloadBinary &Bin) {
        EmbeddedImage Img;
        Img.Container = EmbeddedImage::ContainerKind::OffloadBinary;
        Img.Origin = Origin.str();
        Img.Section = Section.str();
        Img.Offset = Off;
        Img.Kind = getImageKindName(Bin.getImageKind()).str();
        Img.Arch = Bin.getArch().str();
        Img.Triple = Bin.getTriple().str();
        Img.EmbeddedOrigin = Bin.getString(OriginKey).str();
        Img.Flags = Bin.getFlags();
        Img.Data = Bin.getImage().str();
        Img.StoredSize = Img.Data.size();
        Out.push_back(std::move(Img));
        return Error::success();
      },
      [&](uint64_t Off, Error E) {
        return createFileError(Origin + " section " + Section + " offset " +
                                   Twine(Off),
                               std::move(E));
      });
}

Error scanObject(StringRef Data, StringRef Origin, bool Decompress,
                 std::vector<EmbeddedImage> &Out) {
  Expected<std::unique_ptr<ObjectFile>> ObjOrErr =
      ObjectFile::createObjectFile(MemoryBufferRef(Data, Origin));
  if (!ObjOrErr)
    return createFileError(Origin, ObjOrErr.takeError());
  ObjectInfo Info;
  if (const auto *ELF = dyn_cast<ELFObjectFileBase>(ObjOrErr->get())) {
    Info.Relocatable = ELF->getEType() == ELF::ET_REL;
    // nvcc -dc names the module its host stubs register in __nv_module_id
    // (a NUL-terminated string; `nvcc -c` writes the placeholder
    // "__NV_MODULE_ID" there, and it is not reported).
    for (const SectionRef &Sec : ELF->sections()) {
      Expected<StringRef> Name = Sec.getName();
      if (!Name || *Name != "__nv_module_id") {
        consumeError(Name.takeError());
        continue;
      }
      Expected<StringRef> Contents = Sec.getContents();
      if (!Contents)
        return createFileError(Origin + " section __nv_module_id",
                               Contents.takeError());
      Info.ModuleId = Contents->take_until([](char C) { return C == 0; });
    }
  }
  return intake::forEachDeviceSection(
      **ObjOrErr, Origin,
      [&](intake::SectionKind Kind, StringRef Name, StringRef Contents) {
        return Kind == intake::SectionKind::Fatbin
                   ? addFatbin(Contents, Origin, Name, Info, Decompress, Out)
                   : addOffloadBinaries(Contents, Origin, Name, Out);
      });
}

/// Scans \p Data. At the top level an unknown format is an error; inside an
/// archive it is skipped (rlibs hold lib.rmeta, archives hold symbol
/// tables and text files).
Error scan(StringRef Data, StringRef Origin, bool InArchive, bool Decompress,
           std::vector<EmbeddedImage> &Out) {
  if (isFatbin(Data))
    return addFatbin(Data, Origin, "", ObjectInfo(), Decompress, Out);
  switch (identify_magic(Data)) {
  case file_magic::offload_binary:
    return addOffloadBinaries(Data, Origin, "", Out);
  case file_magic::archive:
    return intake::forEachMember(
        MemoryBufferRef(Data, Origin), Origin, intake::ThinArchive::Refuse,
        [&](intake::Member &M) {
          return scan(M.Data.getBuffer(), (Origin + "(" + M.Name + ")").str(),
                      true, Decompress, Out);
        });
  case file_magic::elf_relocatable:
  case file_magic::elf_executable:
  case file_magic::elf_shared_object:
    return scanObject(Data, Origin, Decompress, Out);
  default:
    if (InArchive)
      return Error::success();
    return createStringError(Origin +
                             ": not a fatbin, OffloadBinary, ELF file or "
                             "archive");
  }
}

} // namespace

Expected<std::string>
fatlink::packager::writeOffloadObject(ArrayRef<OffloadImage> Images,
                                      HostArch Arch) {
  if (Images.empty())
    return createStringError("no device bitcode to embed");
  ElfSection Sec;
  Sec.Name = OffloadingSection.str();
  Sec.Type = ELF::SHT_LLVM_OFFLOADING;
  Sec.Flags = ELF::SHF_EXCLUDE;
  Sec.Align = OffloadBinary::getAlignment();
  for (const OffloadImage &Img : Images) {
    if (Img.Arch.empty())
      return createStringError("device bitcode for " + Img.Triple +
                               " has no arch");
    // OffloadBinary strings end at their first NUL: one inside would be
    // read back cut short (found by fuzz/embed_roundtrip).
    if (Img.Arch.find('\0') != std::string::npos ||
        Img.Triple.find('\0') != std::string::npos ||
        Img.Origin.find('\0') != std::string::npos)
      return createStringError("arch '" + Img.Arch + "', triple '" +
                               Img.Triple + "' or origin '" + Img.Origin +
                               "' of device bitcode holds a NUL byte");
    if (identify_magic(Img.Bitcode) != file_magic::bitcode)
      return createStringError("image for " + Img.Arch +
                               " is not LLVM bitcode");
    OffloadBinary::OffloadingImage OI;
    OI.TheImageKind = IMG_Bitcode;
    OI.TheOffloadKind = OFK_Cuda;
    OI.StringData["triple"] = Img.Triple;
    OI.StringData["arch"] = Img.Arch;
    if (!Img.Origin.empty())
      OI.StringData[OriginKey] = Img.Origin;
    OI.Image = MemoryBuffer::getMemBuffer(Img.Bitcode, "",
                                          /*RequiresNullTerminator=*/false);
    SmallString<0> Bin = OffloadBinary::write(OI);
    Sec.Data.append(Bin.data(), Bin.size());
    Sec.Data.resize(alignTo(Sec.Data.size(), Sec.Align), '\0');
  }
  return writeRelocatableElf(Sec, Arch);
}

Expected<std::vector<EmbeddedImage>>
fatlink::packager::scanFile(StringRef Data, StringRef Name, bool Decompress) {
  std::vector<EmbeddedImage> Out;
  if (Error E = scan(Data, Name, false, Decompress, Out))
    return std::move(E);
  return Out;
}

Error fatlink::packager::decompressImage(EmbeddedImage &Img) {
  if (!Img.Compressed)
    return Error::success();
  Expected<std::string> Data = decompressFatbinPayload(
      Img.Data, Img.Flags, Img.UncompressedSize, Img.Offset);
  if (!Data)
    return createFileError(placeOf(Img.Origin, Img.Section), Data.takeError());
  Img.Data = std::move(*Data);
  Img.Compressed = false;
  return Error::success();
}
