//===- packager/Image.cpp - What a cubin or PTX image is for --------------===//
//
// Reads the target and version of a device image from the image itself, so
// that fatbin entries never disagree with their payload, and minifies PTX
// the way fatbinary stores it.
//
// A cubin is an ELF64 file with e_machine EM_CUDA (190). Its SM sits in
// e_flags: bits 8..15 for ELF ABI version 8 (CUDA 12.8 and later), bits
// 0..7 before. fatbinary records a cubin's version as 1.<ABI version>.
// e_flags is the same for sm_90 and sm_90a, and for sm_100 and sm_100f, so
// the suffix comes from elsewhere: the `.nv.compat` section holds
// (format, attribute, value) records in .nv.info style, and attribute 9
// is 1 for arch-specific ("a") code; the family suffix "f" is recorded
// only in ptxas's command line ("-arch sm_100f") in the .note.nv.tkinfo
// note. The ELF is read with LLVM's object::ELFFile<ELF64LE>, which checks
// every offset before use.
//
// PTX names its target in `.target sm_NN[a|f][, option...]` and its ISA in
// `.version X.Y`; both must appear before the first other directive.
//
//===----------------------------------------------------------------------===//

#include "packager/Packager.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/BinaryFormat/ELF.h"
#include "llvm/Object/ELF.h"
#include "llvm/Support/Endian.h"

using namespace llvm;
using namespace fatlink;
using namespace fatlink::packager;

namespace {

constexpr uint8_t CudaAbiV2 = 8;

using Cubin = object::ELFFile<object::ELF64LE>;

/// "cubin: " and LLVM's message, which names the section, its index and the
/// offending field and offset ("section [index 3] has a sh_offset (0x...) +
/// sh_size (0x...) that is greater than the file size (0x...)").
Error cubinError(Error E) {
  return createStringError("cubin: " + toString(std::move(E)));
}

/// The contents of the section named \p Name; an empty StringRef when there
/// is none (or it is SHT_NOBITS).
Expected<StringRef> findSection(const Cubin &File,
                                ArrayRef<Cubin::Elf_Shdr> Sections,
                                StringRef Name) {
  // LLVM gives no sections for an e_shoff of 0, whatever e_shnum says
  // (found by fuzz/image_fuzzer): there is no null section to skip then.
  if (Sections.empty())
    return StringRef();
  for (const Cubin::Elf_Shdr &Sec : Sections.drop_front()) {
    Expected<StringRef> SecName = File.getSectionName(Sec);
    if (!SecName)
      return cubinError(SecName.takeError());
    if (*SecName != Name)
      continue;
    if (Sec.sh_type == ELF::SHT_NOBITS)
      return StringRef();
    Expected<ArrayRef<uint8_t>> Contents = File.getSectionContents(Sec);
    if (!Contents)
      return cubinError(Contents.takeError());
    return toStringRef(*Contents);
  }
  return StringRef();
}

/// Returns true when .nv.compat says the code is arch-specific ("a").
bool compatSaysArchSpecific(StringRef Compat) {
  // Records: u8 format, u8 attribute, then by format: 1 nothing more,
  // 2 u8 value + u8 pad, 3 u16 value, 4 u16 size + size bytes.
  size_t I = 0;
  while (Compat.size() - I >= 2) {
    uint8_t Format = Compat[I], Attr = Compat[I + 1];
    if (Format == 1) {
      I += 2;
      continue;
    }
    if (Compat.size() - I < 4)
      return false;
    if (Format == 2 && Attr == 9)
      return Compat[I + 2] == 1;
    uint64_t Len = 4;
    if (Format == 4)
      Len += support::endian::read16le(Compat.data() + I + 2);
    else if (Format != 2 && Format != 3)
      return false;
    if (Len > Compat.size() - I)
      return false;
    I += Len;
  }
  return false;
}

Expected<FatbinImage> describeCubin(StringRef Data) {
  if (Data.size() < sizeof(Cubin::Elf_Ehdr))
    return createStringError("cubin is " + Twine(Data.size()) +
                             " bytes, shorter than an ELF64 header");
  if (Data[ELF::EI_CLASS] != ELF::ELFCLASS64 ||
      Data[ELF::EI_DATA] != ELF::ELFDATA2LSB)
    return createStringError("cubin is not a little-endian ELF64 file");
  Expected<Cubin> FileOrErr = Cubin::create(Data);
  if (!FileOrErr)
    return cubinError(FileOrErr.takeError());
  const Cubin &File = *FileOrErr;
  const Cubin::Elf_Ehdr &Header = File.getHeader();
  if (Header.e_machine != ELF::EM_CUDA)
    return createStringError("ELF file has e_machine " +
                             Twine(Header.e_machine) +
                             ", not EM_CUDA (190): not a cubin");
  uint8_t Abi = Header.e_ident[ELF::EI_ABIVERSION];
  uint32_t Flags = Header.e_flags;
  unsigned SM = Abi >= CudaAbiV2 ? (Flags >> 8) & 0xff : Flags & 0xff;
  if (SM == 0)
    return createStringError("cubin e_flags 0x" + utohexstr(Flags, true) +
                             " name no SM");

  FatbinImage Img;
  Img.Kind = ImageKind::Cubin;
  Img.Major = 1;
  Img.Minor = Abi;
  Img.Arch = "sm_" + std::to_string(SM);

  if (Header.e_shnum == 0) // no sections: no suffix to find
    return Img;
  Expected<Cubin::Elf_Shdr_Range> Sections = File.sections();
  if (!Sections)
    return cubinError(Sections.takeError());
  Expected<StringRef> Compat = findSection(File, *Sections, ".nv.compat");
  if (!Compat)
    return Compat.takeError();
  Img.Compat = Compat->str();
  if (compatSaysArchSpecific(*Compat)) {
    Img.Arch += 'a';
    return Img;
  }
  Expected<StringRef> TkInfo = findSection(File, *Sections, ".note.nv.tkinfo");
  if (!TkInfo)
    return TkInfo.takeError();
  // The note's strings include ptxas's options, e.g. "-arch sm_100f ".
  std::string Family = "-arch " + Img.Arch + "f";
  size_t At = TkInfo->find(Family);
  if (At != StringRef::npos) {
    StringRef After = TkInfo->drop_front(At + Family.size());
    if (After.empty() || After[0] == ' ' || After[0] == '\0')
      Img.Arch += 'f';
  }
  return Img;
}

/// Reads .version and .target, which precede every other directive.
Expected<FatbinImage> describePtx(StringRef Data) {
  std::string Text = minifyPtx(Data);
  StringRef Rest = Text;
  FatbinImage Img;
  Img.Kind = ImageKind::PTX;
  bool HaveVersion = false;
  while (!Rest.empty() && Img.Arch.empty()) {
    StringRef Line;
    std::tie(Line, Rest) = Rest.split('\n');
    Line = Line.trim();
    if (Line.empty())
      continue;
    if (Line.consume_front(".version")) {
      StringRef Major, Minor;
      std::tie(Major, Minor) = Line.trim().split('.');
      if (Major.getAsInteger(10, Img.Major) ||
          Minor.getAsInteger(10, Img.Minor))
        return createStringError("PTX .version '" + Line.trim() +
                                 "' is not of the form X.Y");
      HaveVersion = true;
      continue;
    }
    if (Line.consume_front(".target")) {
      StringRef Target = Line.split(',').first.trim();
      StringRef Num = Target;
      if (!Num.consume_front("sm_"))
        return createStringError("PTX .target '" + Target +
                                 "' is not an sm_NN target");
      Num.consume_back("a") || Num.consume_back("f");
      unsigned SM;
      if (Num.getAsInteger(10, SM))
        return createStringError("PTX .target '" + Target +
                                 "' has no SM number");
      Img.Arch = Target.str();
      continue;
    }
    return createStringError("PTX has '" + Line.take_front(40) +
                             "' before its .target directive");
  }
  if (!HaveVersion)
    return createStringError("PTX has no .version directive before .target");
  if (Img.Arch.empty())
    return createStringError("PTX has no .target directive");
  return Img;
}

} // namespace

Expected<FatbinImage> fatlink::packager::identifyImage(StringRef Data) {
  if (Data.empty())
    return createStringError("image is empty: neither a cubin nor PTX");
  if (Data.starts_with("\x7f" "ELF"))
    return describeCubin(Data);
  // PTX is text; anything with a NUL before its end is not.
  if (Data.drop_back(Data.ends_with(StringRef("\0", 1))).contains('\0'))
    return createStringError("image is neither a cubin (ELF) nor PTX text");
  return describePtx(Data);
}

Expected<FatbinImage> fatlink::packager::describeImage(StringRef Data) {
  Expected<FatbinImage> Img = identifyImage(Data);
  if (Img)
    Img->Data = Data.str();
  return Img;
}

std::string fatlink::packager::minifyPtx(StringRef Ptx) {
  std::string Out;
  Out.reserve(Ptx.size());
  bool AtLineStart = true;
  size_t I = 0, N = Ptx.size();
  auto IsBlank = [](char C) { return C == ' ' || C == '\t'; };
  while (I < N) {
    char C = Ptx[I];
    if (C == '\n') {
      Out += C;
      AtLineStart = true;
      ++I;
    } else if (IsBlank(C)) {
      // A run of blanks: dropped at the start of a line, else kept as its
      // first character.
      if (!AtLineStart)
        Out += C;
      while (I < N && IsBlank(Ptx[I]))
        ++I;
    } else if (C == '/' && I + 1 < N && Ptx[I + 1] == '/') {
      while (I < N && Ptx[I] != '\n')
        ++I;
      AtLineStart = false;
    } else if (C == '/' && I + 1 < N && Ptx[I + 1] == '*') {
      size_t End = Ptx.find("*/", I + 2);
      I = End == StringRef::npos ? N : End + 2;
      AtLineStart = false;
    } else if (C == '"') {
      // A string literal, copied whole; a backslash escapes the next byte.
      size_t J = I + 1;
      while (J < N && Ptx[J] != '"' && Ptx[J] != '\n')
        J += Ptx[J] == '\\' ? 2 : 1;
      J = std::min(J, N);
      if (J < N && Ptx[J] == '"')
        ++J;
      Out.append(Ptx.data() + I, J - I);
      I = J;
      AtLineStart = false;
    } else {
      Out += C;
      AtLineStart = false;
      ++I;
    }
  }
  return Out;
}
