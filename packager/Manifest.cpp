//===- packager/Manifest.cpp - Reading module descriptors back ------------===//
//
// The reader of what HostObject.cpp writes: the fatlink_module descriptors
// (Descriptor.h), their kernel tables and the kernels' manifests, for
// `fatlink inspect --manifest` and `fatlink bindgen`. The runtime reads the
// same bytes in memory, after the static and dynamic linkers have done
// their work; here they are read from the file, where a pointer field is
// one of three things:
//
//   relocatable object (ET_REL)   the bytes are 0; an absolute 64-bit
//                                 relocation (R_X86_64_64, R_AARCH64_ABS64)
//                                 at the field names a symbol (fatlink
//                                 writes section symbols) and an addend
//   executable (ET_EXEC, ET_DYN)  the address itself, or, in a position-
//                                 independent file whose linker does not
//                                 store dynamic relocations' addends in
//                                 place (lld), the addend of the
//                                 R_*_RELATIVE relocation at the field
//
// An address is turned back into (section, offset) through the section
// headers. Everything inside a manifest is an offset from the kernel array,
// so once the array is found no more relocation is needed. Every offset is
// checked against the section it lands in, in a form that cannot overflow;
// a corrupt table is an error that names the file, the section and the
// offset, never a crash (fuzz/manifest_fuzzer.cpp).
//
//===----------------------------------------------------------------------===//

#include "packager/Packager.h"

#include "intake/Intake.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/BinaryFormat/ELF.h"
#include "llvm/Object/ELF.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/Format.h"

#include <cstddef>
#include <map>

using namespace llvm;

namespace fatlink::packager {

namespace {

using ELFT = object::ELF64LE;
using Shdr = ELFT::Shdr;

/// A place in the file: an offset in a section.
struct Loc {
  unsigned Sec = 0;
  uint64_t Off = 0;
};

/// One ELF file's sections and the relocations that matter for pointers.
class ElfReader {
public:
  static Expected<ElfReader> create(StringRef Data, StringRef Name);

  /// The target of the pointer field at \p Field, or std::nullopt for a
  /// null pointer.
  Expected<std::optional<Loc>> pointer(Loc Field) const;

  /// Where \p At is, in messages: "fatlink_modules+0x30".
  std::string where(Loc At) const {
    return (SecNames[At.Sec] + "+0x" + utohexstr(At.Off, /*LowerCase=*/true))
        .str();
  }

  /// The NUL-terminated string at \p At.
  Expected<StringRef> string(Loc At, StringRef What) const;

  object::ELFFile<ELFT> File;
  ArrayRef<Shdr> Sections;
  std::vector<StringRef> SecNames;
  std::vector<StringRef> Contents; ///< empty for SHT_NOBITS
  std::string Name;

private:
  explicit ElfReader(object::ELFFile<ELFT> File) : File(File) {}

  Error readRelocations();

  bool Relocatable = false;
  /// ET_REL: absolute relocations, by (section, offset).
  std::map<std::pair<unsigned, uint64_t>, Loc> Relocs;
  /// ET_REL: (section, offset) of relocations of another type, which no
  /// descriptor pointer may carry.
  std::map<std::pair<unsigned, uint64_t>, uint32_t> OtherRelocs;
  /// Linked files: R_*_RELATIVE addends by address.
  /// (A std::map: DenseMap reserves two keys, and an offset is any value.)
  std::map<uint64_t, uint64_t> Relative;
};

} // namespace

Expected<ElfReader> ElfReader::create(StringRef Data, StringRef Name) {
  Expected<object::ELFFile<ELFT>> FileOrErr =
      object::ELFFile<ELFT>::create(Data);
  if (!FileOrErr)
    return createStringError(Name + ": " + toString(FileOrErr.takeError()));
  ElfReader R(*FileOrErr);
  R.Name = Name.str();
  Expected<ArrayRef<Shdr>> SecsOrErr = R.File.sections();
  if (!SecsOrErr)
    return createStringError(Name + ": " + toString(SecsOrErr.takeError()));
  R.Sections = *SecsOrErr;
  for (const Shdr &S : R.Sections) {
    Expected<StringRef> SecName = R.File.getSectionName(S);
    if (!SecName)
      return createStringError(Name + ": " + toString(SecName.takeError()));
    R.SecNames.push_back(*SecName);
    StringRef Bytes;
    if (S.sh_type != ELF::SHT_NOBITS && S.sh_type != ELF::SHT_NULL) {
      Expected<ArrayRef<uint8_t>> C = R.File.getSectionContents(S);
      if (!C)
        return createStringError(Name + ": section " + *SecName + ": " +
                                 toString(C.takeError()));
      Bytes = toStringRef(*C);
    }
    R.Contents.push_back(Bytes);
  }
  R.Relocatable = R.File.getHeader().e_type == ELF::ET_REL;
  if (Error E = R.readRelocations())
    return std::move(E);
  return std::move(R);
}

Error ElfReader::readRelocations() {
  uint16_t Machine = File.getHeader().e_machine;
  bool AArch64 = Machine == ELF::EM_AARCH64;
  uint32_t Abs64 =
      AArch64 ? uint32_t(ELF::R_AARCH64_ABS64) : uint32_t(ELF::R_X86_64_64);
  uint32_t RelativeType = AArch64 ? uint32_t(ELF::R_AARCH64_RELATIVE)
                                  : uint32_t(ELF::R_X86_64_RELATIVE);
  for (const Shdr &S : Sections) {
    if (S.sh_type != ELF::SHT_RELA)
      continue;
    Expected<object::ELFFile<ELFT>::Elf_Rela_Range> Relas = File.relas(S);
    if (!Relas)
      return createStringError(Name + ": " + toString(Relas.takeError()));
    if (!Relocatable) {
      // .rela.dyn: only the relative relocations can point into the file.
      for (const ELFT::Rela &R : *Relas)
        if (R.getType(false) == RelativeType)
          Relative[R.r_offset] = uint64_t(R.r_addend);
      continue;
    }
    unsigned Target = S.sh_info;
    if (Target >= Sections.size() || S.sh_link >= Sections.size())
      return createStringError(Name + ": relocation section " +
                               SecNames[&S - Sections.data()] +
                               " names a section past the end");
    const Shdr *SymTab = &Sections[S.sh_link];
    for (const ELFT::Rela &R : *Relas) {
      std::pair<unsigned, uint64_t> Key(Target, R.r_offset);
      if (R.getType(false) != Abs64) {
        OtherRelocs[Key] = R.getType(false);
        continue;
      }
      Expected<const ELFT::Sym *> Sym = File.getRelocationSymbol(R, SymTab);
      if (!Sym)
        return createStringError(Name + ": " + toString(Sym.takeError()));
      if (!*Sym || (*Sym)->st_shndx == ELF::SHN_UNDEF ||
          (*Sym)->st_shndx >= Sections.size()) {
        // An undefined or special symbol: not a place in this file.
        OtherRelocs[Key] = R.getType(false);
        continue;
      }
      Relocs[Key] = {(*Sym)->st_shndx, (*Sym)->st_value + uint64_t(R.r_addend)};
    }
  }
  return Error::success();
}

Expected<std::optional<Loc>> ElfReader::pointer(Loc Field) const {
  StringRef Sec = Contents[Field.Sec];
  if (Field.Off > Sec.size() || Sec.size() - Field.Off < 8)
    return createStringError(Name + ": " + where(Field) +
                             ": a pointer past the end " + "of its section");
  uint64_t Value = support::endian::read64le(Sec.data() + Field.Off);
  if (Relocatable) {
    std::pair<unsigned, uint64_t> Key(Field.Sec, Field.Off);
    if (auto It = Relocs.find(Key); It != Relocs.end())
      return std::optional<Loc>(It->second);
    if (auto It = OtherRelocs.find(Key); It != OtherRelocs.end())
      return createStringError(
          Name + ": " + where(Field) + ": a pointer with a " +
          "relocation of type " + Twine(It->second) +
          ", not an absolute 64-bit one to a defined symbol");
    if (Value)
      return createStringError(Name + ": " + where(Field) +
                               ": a pointer without a " +
                               "relocation in a relocatable object");
    return std::optional<Loc>();
  }
  uint64_t Addr = Sections[Field.Sec].sh_addr + Field.Off;
  if (auto It = Relative.find(Addr); It != Relative.end())
    Value = It->second;
  if (!Value)
    return std::optional<Loc>();
  for (unsigned I = 0; I < Sections.size(); ++I) {
    const Shdr &S = Sections[I];
    if (!(S.sh_flags & ELF::SHF_ALLOC) || S.sh_type == ELF::SHT_NOBITS ||
        Value < S.sh_addr || Value - S.sh_addr >= Contents[I].size())
      continue;
    return std::optional<Loc>(Loc{I, Value - S.sh_addr});
  }
  return createStringError(Name + ": " + where(Field) + ": pointer 0x" +
                           utohexstr(Value, true) +
                           " is not inside any section " + "of the file");
}

Expected<StringRef> ElfReader::string(Loc At, StringRef What) const {
  StringRef Sec = Contents[At.Sec];
  if (At.Off >= Sec.size())
    return createStringError(Name + ": " + where(At) + ": " + What +
                             " starts past the end of its section");
  StringRef Tail = Sec.drop_front(At.Off);
  size_t Nul = Tail.find('\0');
  if (Nul == StringRef::npos)
    return createStringError(Name + ": " + where(At) + ": " + What +
                             " is not NUL-terminated within its section");
  return Tail.take_front(Nul);
}

/// The descriptor at \p Desc says its fatbin has \p Size bytes: they must
/// lie in the section its `fatbin` pointer points into (a size of
/// 0xffffffffffffff00 was taken, and printed as -256).
static Error checkFatbin(const ElfReader &R, Loc Desc, uint64_t Size) {
  Expected<std::optional<Loc>> FatbinOrErr =
      R.pointer({Desc.Sec, Desc.Off + offsetof(fatlink_module, fatbin)});
  if (!FatbinOrErr)
    return FatbinOrErr.takeError();
  uint64_t Left = 0;
  if (*FatbinOrErr) {
    Loc Fatbin = **FatbinOrErr;
    Left = R.Contents[Fatbin.Sec].size() - Fatbin.Off;
  }
  if (Size > Left)
    return createStringError(
        R.Name + ": " + R.where(Desc) + ": the descriptor's fatbin_size " +
        Twine(Size) + " (0x" + utohexstr(Size, true) + ") is more than the " +
        Twine(Left) + " bytes its fatbin pointer leaves in the section" +
        (*FatbinOrErr ? "" : " (a null pointer)"));
  return Error::success();
}

/// Reads the kernel table of one known descriptor at \p Desc into \p M.
static Error readKernels(const ElfReader &R, Loc Desc, uint32_t NumKernels,
                         ModuleManifest &M) {
  using support::endian::read16le;
  using support::endian::read32le;
  if (NumKernels == 0)
    return Error::success();
  Expected<std::optional<Loc>> TableOrErr =
      R.pointer({Desc.Sec, Desc.Off + offsetof(fatlink_module, kernels)});
  if (!TableOrErr)
    return TableOrErr.takeError();
  if (!*TableOrErr)
    return createStringError(R.Name + ": " + R.where(Desc) +
                             ": the descriptor has " + Twine(NumKernels) +
                             " kernels and a null kernel table");
  Loc Table = **TableOrErr;
  // Manifests count from the table's start; what lies before it in the
  // section belongs to other modules.
  StringRef Base = R.Contents[Table.Sec].drop_front(
      std::min<uint64_t>(Table.Off, R.Contents[Table.Sec].size()));
  constexpr uint64_t RecSize = sizeof(fatlink_kernel);
  if (Base.size() / RecSize < NumKernels)
    return createStringError(
        R.Name + ": " + R.where(Table) + ": the kernel table of " +
        Twine(NumKernels) + " records runs past the end of " + "its section (" +
        Twine(Base.size()) + " bytes left)");
  auto At = [&](uint64_t Off) { return Loc{Table.Sec, Table.Off + Off}; };
  // A string at an offset from the table; 0 is "not known".
  auto StringAt = [&](uint32_t Off, StringRef What) -> Expected<StringRef> {
    if (Off == 0)
      return StringRef();
    return R.string(At(Off), What);
  };

  for (uint32_t I = 0; I < NumKernels; ++I) {
    uint64_t Rec = I * RecSize;
    ManifestKernel K;
    Expected<std::optional<Loc>> NameAt =
        R.pointer(At(Rec + offsetof(fatlink_kernel, name)));
    if (!NameAt)
      return NameAt.takeError();
    if (!*NameAt)
      return createStringError(R.Name + ": " + R.where(At(Rec)) + ": kernel " +
                               Twine(I) + " has a null name");
    Expected<StringRef> Name = R.string(**NameAt, "a kernel name");
    if (!Name)
      return Name.takeError();
    if (Name->empty())
      return createStringError(R.Name + ": " + R.where(At(Rec)) + ": kernel " +
                               Twine(I) + " has an empty name");
    K.Info.Name = Name->str();
    uint32_t NumParams =
        read32le(Base.data() + Rec + offsetof(fatlink_kernel, num_params));
    if (NumParams) {
      Expected<std::optional<Loc>> SizesAt =
          R.pointer(At(Rec + offsetof(fatlink_kernel, param_sizes)));
      if (!SizesAt)
        return SizesAt.takeError();
      if (!*SizesAt)
        return createStringError(
            R.Name + ": " + R.where(At(Rec)) + ": kernel " + K.Info.Name +
            " has " + Twine(NumParams) + " parameters and no parameter sizes");
      StringRef Sec = R.Contents[(*SizesAt)->Sec];
      uint64_t Off = (*SizesAt)->Off;
      if (Off > Sec.size() || (Sec.size() - Off) / 4 < NumParams)
        return createStringError(R.Name + ": " + R.where(**SizesAt) + ": the " +
                                 Twine(NumParams) +
                                 " parameter sizes of kernel " + K.Info.Name +
                                 " run past the end of their section");
      for (uint32_t P = 0; P < NumParams; ++P)
        K.Info.ParamSizes.push_back(read32le(Sec.data() + Off + 4 * P));
    }

    uint32_t ManOff =
        read32le(Base.data() + Rec + offsetof(fatlink_kernel, manifest));
    if (ManOff == 0) {
      M.Kernels.push_back(std::move(K));
      continue;
    }
    constexpr uint64_t ManSize = sizeof(fatlink_kernel_manifest);
    if (ManOff > Base.size() || Base.size() - ManOff < ManSize)
      return createStringError(R.Name + ": " + R.where(At(Rec)) +
                               ": the manifest of " + "kernel " + K.Info.Name +
                               " (offset " + Twine(ManOff) +
                               ") runs past the end of its section");
    // A manifest lies after the table, aligned as its fields are: an
    // offset into the table or between fields is no manifest (read there,
    // it looked like "none", version 0).
    if (ManOff % alignof(fatlink_kernel_manifest) != 0 ||
        ManOff < uint64_t(NumKernels) * RecSize)
      return createStringError(
          R.Name + ": " + R.where(At(Rec)) + ": malformed manifest offset " +
          Twine(ManOff) + " of kernel " + K.Info.Name + ": " +
          (ManOff % alignof(fatlink_kernel_manifest)
               ? "not a multiple of " + Twine(alignof(fatlink_kernel_manifest))
               : "inside the kernel table of " + Twine(NumKernels) +
                     " records"));
    const char *Man = Base.data() + ManOff;
    K.ManifestVersion =
        read16le(Man + offsetof(fatlink_kernel_manifest, version));
    if (K.ManifestVersion != FATLINK_MANIFEST_VERSION) {
      M.Kernels.push_back(std::move(K));
      continue;
    }
    KernelManifest &KM = K.Info.Manifest;
    KM.Language = uint8_t(Man[offsetof(fatlink_kernel_manifest, language)]);
    Expected<StringRef> Origin =
        StringAt(read32le(Man + offsetof(fatlink_kernel_manifest, origin)),
                 "the origin of kernel " + K.Info.Name);
    if (!Origin)
      return Origin.takeError();
    K.Info.Origin = Origin->str();
    for (unsigned D = 0; D < 3; ++D) {
      KM.MaxThreads[D] = read32le(
          Man + offsetof(fatlink_kernel_manifest, max_threads) + 4 * D);
      KM.ReqThreads[D] = read32le(
          Man + offsetof(fatlink_kernel_manifest, req_threads) + 4 * D);
      KM.Cluster[D] =
          read32le(Man + offsetof(fatlink_kernel_manifest, cluster) + 4 * D);
    }
    KM.MinBlocks =
        read32le(Man + offsetof(fatlink_kernel_manifest, min_blocks));
    uint32_t ParamsOff =
        read32le(Man + offsetof(fatlink_kernel_manifest, params));
    if (ParamsOff && NumParams) {
      constexpr uint64_t ParamSize = sizeof(fatlink_param);
      if (ParamsOff > Base.size() ||
          (Base.size() - ParamsOff) / ParamSize < NumParams)
        return createStringError(R.Name + ": " + R.where(At(ManOff)) +
                                 ": the " + Twine(NumParams) +
                                 " parameter records of kernel " + K.Info.Name +
                                 " run past the end of their section");
      for (uint32_t P = 0; P < NumParams; ++P) {
        const char *Rec = Base.data() + ParamsOff + P * ParamSize;
        ParamInfo PI;
        PI.Kind = uint8_t(Rec[offsetof(fatlink_param, kind)]);
        PI.Flags = uint8_t(Rec[offsetof(fatlink_param, flags)]);
        PI.AddrSpace = uint8_t(Rec[offsetof(fatlink_param, addrspace)]);
        PI.ElemKind = uint8_t(Rec[offsetof(fatlink_param, elem_kind)]);
        PI.Size = read32le(Rec + offsetof(fatlink_param, size));
        PI.Align = read32le(Rec + offsetof(fatlink_param, align));
        PI.ElemSize = read32le(Rec + offsetof(fatlink_param, elem_size));
        std::string Which =
            "parameter " + std::to_string(P) + " of kernel " + K.Info.Name;
        Expected<StringRef> Type =
            StringAt(read32le(Rec + offsetof(fatlink_param, type)),
                     "the type of " + Which);
        if (!Type)
          return Type.takeError();
        Expected<StringRef> PName =
            StringAt(read32le(Rec + offsetof(fatlink_param, name)),
                     "the name of " + Which);
        if (!PName)
          return PName.takeError();
        PI.Type = Type->str();
        PI.Name = PName->str();
        KM.Params.push_back(std::move(PI));
      }
    }
    M.Kernels.push_back(std::move(K));
  }
  return Error::success();
}

/// Reads the descriptors of one ELF file into \p Out.
static Error readElf(StringRef Data, StringRef Name,
                     std::vector<ModuleManifest> &Out) {
  using support::endian::read16le;
  using support::endian::read32le;
  using support::endian::read64le;
  if (Data.size() < 6 || Data[4] != ELF::ELFCLASS64 ||
      Data[5] != ELF::ELFDATA2LSB)
    return createStringError(
        Name + ": not a 64-bit little-endian ELF file; fatlink " +
        "writes module descriptors for x86_64 and aarch64 hosts");
  Expected<ElfReader> ROrErr = ElfReader::create(Data, Name);
  if (!ROrErr)
    return ROrErr.takeError();
  const ElfReader &R = *ROrErr;
  for (unsigned SecIdx = 0; SecIdx < R.Sections.size(); ++SecIdx) {
    if (R.SecNames[SecIdx] != FATLINK_MODULES_SECTION)
      continue;
    StringRef Sec = R.Contents[SecIdx];
    // As the runtime walks it (flrt_next_descriptor): 8-byte words of
    // zeros between input sections are padding; each record says its size.
    uint64_t Pos = 0;
    while (Pos < Sec.size()) {
      Loc Desc{SecIdx, Pos};
      if (Sec.size() - Pos < 8)
        return createStringError(Name + ": " + R.where(Desc) + ": " +
                                 Twine(Sec.size() - Pos) +
                                 " stray bytes at the end " + "of the section");
      uint32_t Magic = read32le(Sec.data() + Pos);
      if (Magic == 0) {
        Pos += 8;
        continue;
      }
      uint16_t Version = read16le(Sec.data() + Pos + 4);
      uint16_t Size = read16le(Sec.data() + Pos + 6);
      if (Magic != FATLINK_MODULE_MAGIC || Size < 8 || Size % 8 != 0 ||
          Size > Sec.size() - Pos)
        return createStringError(
            Name + ": " + R.where(Desc) + ": malformed fatlink " +
            "module descriptor (magic 0x" + utohexstr(Magic, true) + ", size " +
            Twine(Size) + ")");
      ModuleManifest M;
      M.Origin = Name.str();
      M.Offset = Pos;
      M.Version = Version;
      M.Size = Size;
      Pos += Size;
      M.Known =
          Version == FATLINK_MODULE_VERSION && Size == sizeof(fatlink_module);
      if (M.Known) {
        const char *D = Sec.data() + Desc.Off;
        M.Flags = read32le(D + offsetof(fatlink_module, flags));
        M.FatbinSize = read64le(D + offsetof(fatlink_module, fatbin_size));
        if (Error E = checkFatbin(R, Desc, M.FatbinSize))
          return E;
        uint32_t NumKernels =
            read32le(D + offsetof(fatlink_module, num_kernels));
        if (Error E = readKernels(R, Desc, NumKernels, M))
          return E;
      }
      Out.push_back(std::move(M));
    }
  }
  return Error::success();
}

static Error readAny(StringRef Data, StringRef Name,
                     std::vector<ModuleManifest> &Out) {
  if (Data.starts_with("!<arch>\n") || Data.starts_with("!<thin>\n"))
    return intake::forEachMember(
        MemoryBufferRef(Data, Name), Name, intake::ThinArchive::Refuse,
        [&](intake::Member &Mem) -> Error {
          std::string Origin = (Name + "(" + Mem.Name + ")").str();
          StringRef Bytes = Mem.Data.getBuffer();
          // Members that are not ELF (an rlib's lib.rmeta, bitcode) carry
          // no descriptor.
          if (!Bytes.starts_with("\x7f"
                                 "ELF") &&
              !Bytes.starts_with("!<arch>\n"))
            return Error::success();
          return readAny(Bytes, Origin, Out);
        });
  if (!Data.starts_with("\x7f"
                        "ELF"))
    return createStringError(Name +
                             ": not an ELF object, executable or shared " +
                             "library, nor an archive of them");
  return readElf(Data, Name, Out);
}

Expected<std::vector<ModuleManifest>> readModuleManifests(StringRef Data,
                                                          StringRef Name) {
  std::vector<ModuleManifest> Out;
  if (Error E = readAny(Data, Name, Out))
    return std::move(E);
  return std::move(Out);
}

} // namespace fatlink::packager
