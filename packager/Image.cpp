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
// note. Every offset is checked before use.
//
// PTX names its target in `.target sm_NN[a|f][, option...]` and its ISA in
// `.version X.Y`; both must appear before the first other directive.
//
//===----------------------------------------------------------------------===//

#include "packager/Packager.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Endian.h"

using namespace llvm;
using namespace fatlink;
using namespace fatlink::packager;

namespace {

constexpr uint16_t EMCuda = 190;
constexpr uint8_t CudaAbiV2 = 8;

Error makeError(const Twine &Msg) {
  return createStringError(inconvertibleErrorCode(), Msg);
}

/// A bounds-checked view of a cubin's section headers.
struct CubinSections {
  StringRef File;
  uint64_t ShOff = 0, ShEntSize = 0, ShNum = 0, ShStrNdx = 0;

  /// Returns the contents of section \p I, or an error naming the field.
  Expected<StringRef> contents(uint64_t I) const {
    using namespace support::endian;
    const char *H = File.data() + ShOff + I * ShEntSize;
    uint64_t Off = read64le(H + 24), Size = read64le(H + 32);
    uint32_t Type = read32le(H + 4);
    if (Type == 8 /*SHT_NOBITS*/)
      return StringRef();
    if (Off > File.size() || Size > File.size() - Off)
      return makeError("cubin section " + Twine(I) + " at offset " +
                       Twine(Off) + " with size " + Twine(Size) +
                       " lies outside the " + Twine(File.size()) +
                       "-byte file");
    return File.substr(Off, Size);
  }

  /// Finds the section named \p Name; an empty StringRef when absent.
  Expected<StringRef> find(StringRef Name) const {
    Expected<StringRef> Names = contents(ShStrNdx);
    if (!Names)
      return Names.takeError();
    for (uint64_t I = 1; I < ShNum; ++I) {
      uint32_t NameOff = support::endian::read32le(File.data() + ShOff +
                                                   I * ShEntSize);
      if (NameOff >= Names->size())
        return makeError("cubin section " + Twine(I) + " has name offset " +
                         Twine(NameOff) + " past .shstrtab");
      if (Names->drop_front(NameOff).take_until([](char C) {
            return C == '\0';
          }) == Name)
        return contents(I);
    }
    return StringRef();
  }
};

Expected<CubinSections> readSectionTable(StringRef File) {
  using namespace support::endian;
  const char *P = File.data();
  CubinSections S;
  S.File = File;
  S.ShOff = read64le(P + 40);
  S.ShEntSize = read16le(P + 58);
  S.ShNum = read16le(P + 60);
  S.ShStrNdx = read16le(P + 62);
  if (S.ShNum == 0)
    return S;
  if (S.ShEntSize < 64)
    return makeError("cubin section header size " + Twine(S.ShEntSize) +
                     " is less than 64");
  if (S.ShOff > File.size() ||
      S.ShNum > (File.size() - S.ShOff) / S.ShEntSize)
    return makeError("cubin section table at offset " + Twine(S.ShOff) +
                     " with " + Twine(S.ShNum) + " entries lies outside the " +
                     Twine(File.size()) + "-byte file");
  if (S.ShStrNdx >= S.ShNum)
    return makeError("cubin .shstrtab index " + Twine(S.ShStrNdx) +
                     " is out of range");
  return S;
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
  using namespace support::endian;
  if (Data.size() < 64)
    return makeError("cubin is " + Twine(Data.size()) +
                     " bytes, shorter than an ELF64 header");
  if (Data[4] != 2 /*ELFCLASS64*/ || Data[5] != 1 /*ELFDATA2LSB*/)
    return makeError("cubin is not a little-endian ELF64 file");
  uint16_t Machine = read16le(Data.data() + 18);
  if (Machine != EMCuda)
    return makeError("ELF file has e_machine " + Twine(Machine) +
                     ", not EM_CUDA (190): not a cubin");
  uint8_t Abi = Data[8];
  uint32_t Flags = read32le(Data.data() + 48);
  unsigned SM = Abi >= CudaAbiV2 ? (Flags >> 8) & 0xff : Flags & 0xff;
  if (SM == 0)
    return makeError("cubin e_flags 0x" + utohexstr(Flags, true) +
                     " name no SM");

  FatbinImage Img;
  Img.Kind = ImageKind::Cubin;
  Img.Major = 1;
  Img.Minor = Abi;
  Img.Arch = "sm_" + std::to_string(SM);
  Img.Data = Data.str();

  Expected<CubinSections> Sections = readSectionTable(Data);
  if (!Sections)
    return Sections.takeError();
  if (Sections->ShNum == 0)
    return Img;
  Expected<StringRef> Compat = Sections->find(".nv.compat");
  if (!Compat)
    return Compat.takeError();
  Img.Compat = Compat->str();
  if (compatSaysArchSpecific(*Compat)) {
    Img.Arch += 'a';
    return Img;
  }
  Expected<StringRef> TkInfo = Sections->find(".note.nv.tkinfo");
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
        return makeError("PTX .version '" + Line.trim() +
                         "' is not of the form X.Y");
      HaveVersion = true;
      continue;
    }
    if (Line.consume_front(".target")) {
      StringRef Target = Line.split(',').first.trim();
      StringRef Num = Target;
      if (!Num.consume_front("sm_"))
        return makeError("PTX .target '" + Target +
                         "' is not an sm_NN target");
      Num.consume_back("a") || Num.consume_back("f");
      unsigned SM;
      if (Num.getAsInteger(10, SM))
        return makeError("PTX .target '" + Target + "' has no SM number");
      Img.Arch = Target.str();
      continue;
    }
    return makeError("PTX has '" + Line.take_front(40) +
                     "' before its .target directive");
  }
  if (!HaveVersion)
    return makeError("PTX has no .version directive before .target");
  if (Img.Arch.empty())
    return makeError("PTX has no .target directive");
  Img.Data = Data.str();
  return Img;
}

} // namespace

Expected<FatbinImage> fatlink::packager::describeImage(StringRef Data) {
  if (Data.starts_with("\x7f" "ELF"))
    return describeCubin(Data);
  // PTX is text; anything with a NUL before its end is not.
  if (Data.drop_back(Data.ends_with(StringRef("\0", 1))).contains('\0'))
    return makeError("image is neither a cubin (ELF) nor PTX text");
  return describePtx(Data);
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
