//===- codegen/CubinSplit.cpp - One ptxas run's cubin, cut per input -----===//
//
// `ptxas -c a.ptx b.ptx ...` compiles several PTX inputs in one run into
// one relocatable cubin, for the price of one start-up (about 22 ms of CPU
// here, as much as a small partition's code). A partitioned link caches
// each partition's cubin alone, so a batch is only of use if its cubin can
// be cut back into what each input alone gives. This file does the cut.
//
// What a batch holds, measured on ptxas 13.0 (docs/codegen.md, "Batched
// ptxas"): each function's sections (.text.F, .nv.info.F, .rel.text.F,
// .rela.text.F, .nv.constant0.F, .nv.constant2.F, .nv.shared.F) byte for
// byte as the input alone has them, and the sections and symbols of all
// inputs in the order each input alone has them, interleaved by kind. What
// the inputs share is rebuilt per input: the symbol and string tables, the
// module's .nv.info (per-function attributes, each naming its function's
// symbol), .nv.callgraph (edges between symbols), and .debug_frame (one CIE
// and FDE per function, tied to it by relocations). Symbol numbers change,
// so every place that holds one is rewritten: relocations, .text.F's
// sh_info, the attributes that name a symbol.
//
// The string tables are the one thing whose order cannot be recovered (a
// name two inputs share is stored once, where the first used it), so every
// cubin this file writes, batch piece or single run alike, gets string
// tables laid out one way: names in the order of the sections (.shstrtab)
// and symbols (.strtab) that use them. nvlink's output does not depend on
// that order (checked by test/device-link/ptxas-batch.test).
//
// Anything the cut does not know how to divide is an error, never a guess:
// a section shared by the inputs other than those above (module-scope
// variables in .nv.global or .nv.constant3, .nv.prototype), an attribute
// not known to hold or not to hold a symbol, a symbol no input defines, a
// .debug_frame entry not tied to one input's function. The caller then
// compiles the inputs one by one.
//
//===----------------------------------------------------------------------===//

#include "codegen/Codegen.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/BinaryFormat/ELF.h"
#include "llvm/Object/ELF.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/MathExtras.h"

using namespace llvm;
using namespace llvm::object;
using namespace llvm::support;

namespace fatlink::codegen {

namespace {

using Shdr = ELF64LE::Shdr;
using Sym = ELF64LE::Sym;

constexpr int Shared = -1;

/// Sections that take no room in the file: ELF's NOBITS and CUDA's
/// uninitialized globals, local and shared memory (SHT_CUDA_GLOBAL,
/// SHT_CUDA_LOCAL, SHT_CUDA_SHARED).
bool takesNoRoom(uint32_t Type) {
  return Type == ELF::SHT_NOBITS || Type == ELF::SHT_LOPROC + 7 ||
         Type == ELF::SHT_LOPROC + 9 || Type == ELF::SHT_LOPROC + 10;
}
constexpr uint32_t NoSection = ~0u;
constexpr uint8_t StoCudaEntry = 0x10; ///< st_other of a kernel's symbol

/// .nv.info attribute formats (EIFMT_*): no value, a byte, a half word,
/// or a u16 size and that many bytes.
enum : uint8_t { FmtNone = 1, FmtByte = 2, FmtHalf = 3, FmtSized = 4 };

/// What an `.nv.info` attribute holds, for the attributes ptxas 13.0 writes
/// (names from cuobjdump -elf on testdata/cuda's cubins; 0x05 and 0x10 from
/// packager/Symbols.cpp's measurements on nvcc's).
enum class AttrKind { NoSymbol, FirstIsSymbol, SymbolList };

std::optional<AttrKind> moduleAttr(uint8_t Attr) {
  switch (Attr) {
  case 0x11: // EIATTR_FRAME_SIZE: u32 symbol, u32 bytes
  case 0x12: // EIATTR_MIN_STACK_SIZE
  case 0x23: // EIATTR_MAX_STACK_SIZE
  case 0x2f: // EIATTR_REGCOUNT
    return AttrKind::FirstIsSymbol;
  case 0x5f: // EIATTR_MERCURY_ISA_VERSION (a module without kernels has one)
    return AttrKind::NoSymbol;
  }
  return std::nullopt;
}

std::optional<AttrKind> functionAttr(uint8_t Attr) {
  switch (Attr) {
  case 0x0a: // EIATTR_PARAM_CBANK: u32 symbol (.nv.constant0.F), offset, size
    return AttrKind::FirstIsSymbol;
  case 0x0f: // EIATTR_EXTERNS: the u32 symbols the function calls
    return AttrKind::SymbolList;
  case 0x05: // EIATTR_MAX_THREADS
  case 0x10: // EIATTR_REQNTID
  case 0x17: // EIATTR_KPARAM_INFO
  case 0x19: // EIATTR_CBANK_PARAM_SIZE
  case 0x1b: // EIATTR_MAXREG_COUNT
  case 0x1c: // EIATTR_EXIT_INSTR_OFFSETS
  case 0x1e: // EIATTR_CRS_STACK_SIZE
  case 0x2b: // EIATTR_WMMA_USED
  case 0x31: // EIATTR_INT_WARP_WIDE_INSTR_OFFSETS
  case 0x35: // EIATTR_SW2861232_WAR
  case 0x36: // EIATTR_SW_WAR
  case 0x37: // EIATTR_CUDA_API_VERSION
  case 0x4c: // EIATTR_NUM_BARRIERS
  case 0x5f: // EIATTR_MERCURY_ISA_VERSION
    return AttrKind::NoSymbol;
  }
  return std::nullopt;
}

/// One attribute of an `.nv.info` section: its bytes, and where in them
/// symbol numbers are (offsets of u32 fields).
struct Attr {
  StringRef Bytes;
  SmallVector<uint32_t, 2> SymbolAt;
};

Expected<std::vector<Attr>>
readAttrs(StringRef Data, StringRef Section,
          function_ref<std::optional<AttrKind>(uint8_t)> KindOf) {
  std::vector<Attr> Out;
  for (size_t Pos = 0; Pos < Data.size();) {
    // Every attribute starts with four bytes: format, attribute, and a u16
    // that is the value (formats 1 to 3) or the size of the value after it.
    if (Data.size() - Pos < 4)
      return createStringError("%s: attribute cut short at offset %zu",
                               Section.str().c_str(), Pos);
    uint8_t Fmt = Data[Pos], Code = Data[Pos + 1];
    size_t Len = 0, Head = 4;
    if (Fmt == FmtSized)
      Len = endian::read16le(Data.data() + Pos + 2);
    else if (Fmt != FmtNone && Fmt != FmtByte && Fmt != FmtHalf)
      return createStringError("%s: unknown attribute format %u at offset %zu",
                               Section.str().c_str(), Fmt, Pos);
    if (Data.size() - Pos < Head + Len)
      return createStringError("%s: attribute 0x%02x runs past the section",
                               Section.str().c_str(), Code);
    std::optional<AttrKind> Kind = KindOf(Code);
    if (!Kind)
      return createStringError("%s: attribute 0x%02x is not one fatlink knows "
                               "whether to renumber",
                               Section.str().c_str(), Code);
    Attr A{Data.substr(Pos, Head + Len), {}};
    if (*Kind != AttrKind::NoSymbol) {
      if (Fmt != FmtSized || Len < 4 || Len % 4)
        return createStringError("%s: attribute 0x%02x has %zu bytes, not a "
                                 "symbol list",
                                 Section.str().c_str(), Code, Len);
      size_t Count = *Kind == AttrKind::FirstIsSymbol ? 1 : Len / 4;
      for (size_t I = 0; I != Count; ++I)
        A.SymbolAt.push_back(Head + 4 * I);
    }
    Out.push_back(std::move(A));
    Pos += Head + Len;
  }
  return Out;
}

/// A relocation of a REL or RELA section, in its list's order.
struct Reloc {
  uint64_t Offset = 0;
  uint32_t Symbol = 0, Type = 0;
  int64_t Addend = 0;
  bool HasAddend = false;
};

/// A parsed batch cubin, every offset checked.
struct Batch {
  ELF64LE::Ehdr Header;
  std::vector<Shdr> Sections;
  std::vector<StringRef> SectionNames, SectionData;
  std::vector<Sym> Symbols;
  std::vector<StringRef> SymbolNames;
  StringRef StrTab; ///< the symbol names' table
  uint32_t SymtabIndex = 0;
  size_t NumInputs = 0;
  /// Owner of each section and symbol: an input, or Shared.
  std::vector<int> SectionOwner, SymbolOwner;
};

Error fail(const Twine &Msg) { return createStringError(Msg); }

Expected<Batch> parse(StringRef Bytes) {
  Expected<ELF64LEFile> FileOrErr = ELF64LEFile::create(Bytes);
  if (!FileOrErr)
    return FileOrErr.takeError();
  const ELF64LEFile &File = *FileOrErr;
  Batch B;
  B.Header = File.getHeader();
  if (B.Header.e_type != ELF::ET_REL || B.Header.e_machine != ELF::EM_CUDA)
    return fail("not a relocatable cubin");
  Expected<ELF64LE::ShdrRange> SecsOrErr = File.sections();
  if (!SecsOrErr)
    return SecsOrErr.takeError();
  B.Sections.assign(SecsOrErr->begin(), SecsOrErr->end());
  std::optional<uint32_t> Symtab;
  for (const Shdr &S : B.Sections) {
    Expected<StringRef> Name = File.getSectionName(S);
    if (!Name)
      return Name.takeError();
    B.SectionNames.push_back(*Name);
    StringRef Data;
    if (!takesNoRoom(S.sh_type) && S.sh_type != ELF::SHT_NULL) {
      Expected<ArrayRef<uint8_t>> D = File.getSectionContents(S);
      if (!D)
        return D.takeError();
      Data = toStringRef(*D);
    }
    B.SectionData.push_back(Data);
    if (S.sh_type == ELF::SHT_SYMTAB) {
      if (Symtab)
        return fail("two symbol tables");
      Symtab = B.SectionNames.size() - 1;
    }
  }
  if (!Symtab)
    return fail("no symbol table");
  B.SymtabIndex = *Symtab;
  const Shdr &SymSec = B.Sections[*Symtab];
  Expected<ELF64LE::SymRange> SymsOrErr = File.symbols(&SymSec);
  if (!SymsOrErr)
    return SymsOrErr.takeError();
  B.Symbols.assign(SymsOrErr->begin(), SymsOrErr->end());
  Expected<StringRef> StrTab = File.getStringTableForSymtab(SymSec);
  if (!StrTab)
    return StrTab.takeError();
  B.StrTab = *StrTab;
  // The cut writes two string tables anew, the section names and the
  // symbol names (.shstrtab and .strtab): another is not one it knows.
  uint32_t ShStr = B.Header.e_shstrndx, Str = SymSec.sh_link;
  if (ShStr == Str || ShStr >= B.Sections.size() ||
      B.Sections[ShStr].sh_type != ELF::SHT_STRTAB)
    return fail("no section name table of its own");
  for (auto [I, S] : enumerate(B.Sections))
    if (S.sh_type == ELF::SHT_STRTAB && I != ShStr && I != Str)
      return fail("section " + B.SectionNames[I] +
                  " is a string table, neither of section nor symbol names");
  for (const Sym &S : B.Symbols) {
    Expected<StringRef> Name = S.getName(*StrTab);
    if (!Name)
      return Name.takeError();
    B.SymbolNames.push_back(*Name);
    if (S.st_shndx >= ELF::SHN_LORESERVE && S.st_shndx != ELF::SHN_ABS)
      return fail("symbol '" + *Name + "' has a reserved section index");
    if (S.st_shndx != ELF::SHN_ABS && S.st_shndx >= B.Sections.size())
      return fail("symbol '" + *Name + "' is in section " + Twine(S.st_shndx) +
                  ", past the last");
  }
  for (auto [Name, S] : zip(B.SectionNames, B.Sections)) {
    if (S.sh_link >= B.Sections.size())
      return fail("section " + Name + " links section " + Twine(S.sh_link) +
                  ", past the last");
    // ptxas aligns to 128 bytes at most; the cut lays sections out again.
    if (S.sh_addralign > 4096 ||
        !isPowerOf2_64(std::max<uint64_t>(S.sh_addralign, 1)))
      return fail("section " + Name + " has alignment " +
                  Twine(S.sh_addralign));
  }
  return B;
}

Expected<std::vector<Reloc>> readRelocs(const Batch &B, uint32_t Sec) {
  const Shdr &S = B.Sections[Sec];
  bool A = S.sh_type == ELF::SHT_RELA;
  size_t Size = A ? sizeof(ELF64LE::Rela) : sizeof(ELF64LE::Rel);
  StringRef Data = B.SectionData[Sec];
  if (Data.size() % Size)
    return fail(B.SectionNames[Sec] + ": size is not a multiple of " +
                Twine(Size));
  std::vector<Reloc> Out;
  for (size_t Pos = 0; Pos != Data.size(); Pos += Size) {
    const char *P = Data.data() + Pos;
    uint64_t Info = endian::read64le(P + 8);
    Reloc R{endian::read64le(P), uint32_t(Info >> 32), uint32_t(Info),
            A ? int64_t(endian::read64le(P + 16)) : 0, A};
    if (R.Symbol >= B.Symbols.size())
      return fail(B.SectionNames[Sec] + ": relocation of symbol " +
                  Twine(R.Symbol) + ", past the last");
    Out.push_back(R);
  }
  return Out;
}

void writeRelocs(std::string &Out, ArrayRef<Reloc> Relocs) {
  for (const Reloc &R : Relocs) {
    char Buf[24];
    endian::write64le(Buf, R.Offset);
    endian::write64le(Buf + 8, (uint64_t(R.Symbol) << 32) | R.Type);
    endian::write64le(Buf + 16, uint64_t(R.Addend));
    Out.append(Buf, R.HasAddend ? 24 : 16);
  }
}

bool isSharedName(StringRef Name) {
  return Name.empty() || Name == ".shstrtab" || Name == ".strtab" ||
         Name == ".symtab" || Name == ".nv.info" || Name == ".nv.callgraph" ||
         Name == ".nv.prototype" || Name == ".debug_frame" ||
         Name == ".rel.debug_frame" || Name == ".rela.debug_frame" ||
         Name == ".note.nv.tkinfo" || Name == ".note.nv.cuinfo";
}

/// Gives every section and symbol of B an owner: functions by name (or all
/// to input 0 with one input), each function's sections through .text.F's
/// symbol and the sh_info links that lead to it.
Error assignOwners(Batch &B, ArrayRef<std::vector<std::string>> Inputs) {
  StringMap<int> FunctionOwner;
  for (auto [I, Functions] : enumerate(Inputs))
    for (const std::string &F : Functions)
      if (!FunctionOwner.try_emplace(F, int(I)).second)
        return fail("function '" + F + "' is in two inputs");
  size_t NumSecs = B.Sections.size(), NumSyms = B.Symbols.size();
  B.NumInputs = Inputs.size();
  B.SectionOwner.assign(NumSecs, Shared);
  B.SymbolOwner.assign(NumSyms, Shared);
  // Each function's .text.F names its symbol in sh_info's low 24 bits.
  std::vector<int> TextOwner(NumSecs, Shared);
  for (uint32_t S = 0; S != NumSecs; ++S) {
    const Shdr &H = B.Sections[S];
    if (!(H.sh_flags & ELF::SHF_EXECINSTR))
      continue;
    uint32_t Fn = H.sh_info & 0xffffff;
    if (Fn == 0 || Fn >= NumSyms)
      return fail(B.SectionNames[S] + ": names no function symbol");
    int Owner = 0;
    if (Inputs.size() > 1) {
      auto It = FunctionOwner.find(B.SymbolNames[Fn]);
      if (It == FunctionOwner.end())
        return fail("function '" + B.SymbolNames[Fn] + "' is in no input");
      Owner = It->second;
    }
    TextOwner[S] = Owner;
    B.SectionOwner[S] = Owner;
  }
  // Sections that hang off a function's code: their sh_info (with
  // SHF_INFO_LINK) names its .text.F.
  for (uint32_t S = 0; S != NumSecs; ++S) {
    const Shdr &H = B.Sections[S];
    if (B.SectionOwner[S] == Shared && (H.sh_flags & ELF::SHF_INFO_LINK) &&
        H.sh_info < NumSecs)
      B.SectionOwner[S] = TextOwner[H.sh_info];
    if (B.SectionOwner[S] == Shared && !isSharedName(B.SectionNames[S]))
      return fail("section " + B.SectionNames[S] +
                  " is shared by the inputs, and fatlink does not divide it");
  }
  // ptxas marks a module without kernels (a module-level attribute in
  // .nv.info) that a batch, which has kernels, does not: each input of a
  // batch must define a kernel (STO_CUDA_ENTRY).
  std::vector<bool> HasKernel(Inputs.size());
  for (uint32_t K = 1; K != NumSyms; ++K) {
    const Sym &S = B.Symbols[K];
    if (S.st_shndx == ELF::SHN_UNDEF || S.st_shndx == ELF::SHN_ABS)
      return fail("symbol '" + B.SymbolNames[K] +
                  "' is defined outside the inputs");
    B.SymbolOwner[K] = B.SectionOwner[S.st_shndx];
    if (B.SymbolOwner[K] == Shared && S.getType() != ELF::STT_SECTION)
      return fail("symbol '" + B.SymbolNames[K] + "' is in shared section " +
                  B.SectionNames[S.st_shndx]);
    if (B.SymbolOwner[K] != Shared && S.getType() == ELF::STT_FUNC &&
        (S.st_other & StoCudaEntry))
      HasKernel[B.SymbolOwner[K]] = true;
  }
  if (Inputs.size() > 1)
    for (auto [I, Has] : enumerate(HasKernel))
      if (!Has)
        return fail("input " + Twine(I) + " defines no kernel");
  return Error::success();
}

/// A string table in the order of first use, each name once.
struct StringTable {
  std::string Bytes = std::string(1, '\0');
  StringMap<uint32_t> At;
  uint32_t add(StringRef S) {
    if (S.empty())
      return 0;
    auto [It, New] = At.try_emplace(S, Bytes.size());
    if (New) {
      Bytes += S;
      Bytes += '\0';
    }
    return It->second;
  }
};

/// The debug frame entries (CIE or FDE) of .debug_frame, each with the
/// input that owns it.
struct FrameEntry {
  uint64_t Offset = 0, Size = 0;
  int Owner = Shared;
};

class Cutter {
public:
  Cutter(const Batch &B) : B(B) {}
  Error prepare();
  Expected<std::string> cut(int Input);

private:
  const Batch &B;
  // Shared sections, by role (NoSection when absent).
  uint32_t Info = NoSection, CallGraph = NoSection, Prototype = NoSection,
           Frame = NoSection, FrameRel = NoSection, FrameRela = NoSection;
  std::vector<Attr> InfoAttrs;
  std::vector<int> InfoOwner;
  std::vector<FrameEntry> Frames;
  /// .debug_frame's section symbol, which CIE pointers relocate against
  /// (0: none).
  uint32_t FrameSym = 0;
  std::vector<Reloc> FrameRels, FrameRelas;
  std::vector<int> FrameRelOwner, FrameRelaOwner;
  std::vector<std::vector<Reloc>> SectionRelocs;

  Expected<int> frameEntryAt(uint64_t Offset) const {
    auto It = partition_point(Frames, [&](const FrameEntry &E) {
      return E.Offset + E.Size <= Offset;
    });
    if (It == Frames.end() || It->Offset > Offset)
      return fail(".debug_frame: a relocation at offset " + Twine(Offset) +
                  " is in no entry");
    return int(It - Frames.begin());
  }
  Error prepareFrames();
  int ownerOfSymbols(ArrayRef<uint32_t> Syms, bool &Mixed) const;
  Error cutPairs(uint32_t Sec, function_ref<bool(int)> Keeps,
                 function_ref<Expected<uint32_t>(uint32_t)> MapSym,
                 StringTable &Names, std::string &Out) const;
};

/// .nv.callgraph (caller, callee: symbols, or 0 and markers past
/// 0xfffffff0 in its header entries) and .nv.prototype (function symbol,
/// offset of its prototype's string, "#ii", in .strtab): u32 pairs, kept
/// where their symbols are kept.
Error Cutter::cutPairs(uint32_t Sec, function_ref<bool(int)> Keeps,
                       function_ref<Expected<uint32_t>(uint32_t)> MapSym,
                       StringTable &Names, std::string &Out) const {
  StringRef D = B.SectionData[Sec], Name = B.SectionNames[Sec];
  bool BothSymbols = Sec == CallGraph;
  auto IsSymbol = [&](unsigned Field, uint32_t V) {
    return (Field == 0 || BothSymbols) && V != 0 && V < 0xfffffff0;
  };
  for (size_t Pos = 0; Pos != D.size(); Pos += 8) {
    uint32_t Pair[2] = {endian::read32le(D.data() + Pos),
                        endian::read32le(D.data() + Pos + 4)};
    SmallVector<uint32_t, 2> Syms;
    for (unsigned F = 0; F != 2; ++F)
      if (IsSymbol(F, Pair[F])) {
        if (Pair[F] >= B.Symbols.size())
          return fail(Name + ": symbol " + Twine(Pair[F]) + ", past the last");
        Syms.push_back(Pair[F]);
      }
    bool Mixed = false;
    int Owner = ownerOfSymbols(Syms, Mixed);
    if (Mixed)
      return fail(Name + ": an entry joins two inputs");
    if (!Keeps(Owner))
      continue;
    for (unsigned F = 0; F != 2; ++F)
      if (IsSymbol(F, Pair[F])) {
        Expected<uint32_t> M = MapSym(Pair[F]);
        if (!M)
          return M.takeError();
        Pair[F] = *M;
      }
    if (!BothSymbols) {
      if (Pair[1] >= B.StrTab.size())
        return fail(Name + ": string " + Twine(Pair[1]) + " past .strtab");
      Pair[1] = Names.add(B.StrTab.data() + Pair[1]);
    }
    char Buf[8];
    endian::write32le(Buf, Pair[0]);
    endian::write32le(Buf + 4, Pair[1]);
    Out.append(Buf, 8);
  }
  return Error::success();
}

int Cutter::ownerOfSymbols(ArrayRef<uint32_t> Syms, bool &Mixed) const {
  int Owner = Shared;
  for (uint32_t K : Syms) {
    int O = B.SymbolOwner[K];
    if (O == Shared)
      continue;
    if (Owner != Shared && O != Owner)
      Mixed = true;
    Owner = O;
  }
  return Owner;
}

Error Cutter::prepare() {
  SectionRelocs.resize(B.Sections.size());
  for (uint32_t S = 0; S != B.Sections.size(); ++S) {
    StringRef Name = B.SectionNames[S];
    uint32_t Type = B.Sections[S].sh_type;
    if (Type == ELF::SHT_REL || Type == ELF::SHT_RELA) {
      Expected<std::vector<Reloc>> R = readRelocs(B, S);
      if (!R)
        return R.takeError();
      SectionRelocs[S] = std::move(*R);
    }
    uint32_t *Known = Name == ".nv.info"            ? &Info
                      : Name == ".nv.callgraph"     ? &CallGraph
                      : Name == ".nv.prototype"     ? &Prototype
                      : Name == ".debug_frame"      ? &Frame
                      : Name == ".rel.debug_frame"  ? &FrameRel
                      : Name == ".rela.debug_frame" ? &FrameRela
                                                    : nullptr;
    if (!Known)
      continue;
    // The cut rebuilds each of these once, from the one section.
    if (*Known != NoSection)
      return fail("two sections named " + Name);
    *Known = S;
  }
  if (Info != NoSection) {
    Expected<std::vector<Attr>> A =
        readAttrs(B.SectionData[Info], ".nv.info", moduleAttr);
    if (!A)
      return A.takeError();
    InfoAttrs = std::move(*A);
    for (const Attr &At : InfoAttrs) {
      SmallVector<uint32_t, 2> Syms;
      for (uint32_t Off : At.SymbolAt) {
        uint32_t K = endian::read32le(At.Bytes.data() + Off);
        if (K >= B.Symbols.size())
          return fail(".nv.info: symbol " + Twine(K) + ", past the last");
        Syms.push_back(K);
      }
      bool Mixed = false;
      InfoOwner.push_back(ownerOfSymbols(Syms, Mixed));
      if (Mixed)
        return fail(".nv.info: an attribute names two inputs' symbols");
      // One no input owns says something of the whole module, which its
      // inputs alone need not say alike.
      if (InfoOwner.back() == Shared && B.NumInputs > 1)
        return fail(".nv.info: module attribute 0x" +
                    utohexstr(uint8_t(At.Bytes[1])) + " in a batch");
    }
  }
  for (uint32_t S : {CallGraph, Prototype})
    if (S != NoSection && B.SectionData[S].size() % 8)
      return fail(B.SectionNames[S] + ": size is not a multiple of 8");
  return prepareFrames();
}

/// Cuts .debug_frame into its entries (DWARF 32- or 64-bit lengths) and
/// gives each FDE the owner of the function its relocations name, each
/// CIE the owner of the FDEs that point to it (through a relocation
/// against .debug_frame's own section symbol).
Error Cutter::prepareFrames() {
  if (Frame == NoSection) {
    if (FrameRel != NoSection || FrameRela != NoSection)
      return fail(".debug_frame's relocations without .debug_frame");
    return Error::success();
  }
  StringRef D = B.SectionData[Frame];
  for (uint64_t Pos = 0; Pos < D.size();) {
    if (D.size() - Pos < 4)
      return fail(".debug_frame: entry cut short at offset " + Twine(Pos));
    uint64_t Len = endian::read32le(D.data() + Pos), Head = 4;
    if (Len == 0xffffffff) {
      if (D.size() - Pos < 12)
        return fail(".debug_frame: entry cut short at offset " + Twine(Pos));
      Len = endian::read64le(D.data() + Pos + 4);
      Head = 12;
    } else if (Len >= 0xfffffff0) {
      return fail(".debug_frame: reserved length at offset " + Twine(Pos));
    }
    if (Len > D.size() - Pos - Head)
      return fail(".debug_frame: entry at offset " + Twine(Pos) +
                  " runs past the section");
    Frames.push_back({Pos, Head + Len, Shared});
    Pos += Head + Len;
  }
  for (uint32_t K = 0; K != B.Symbols.size(); ++K)
    if (B.Symbols[K].getType() == ELF::STT_SECTION &&
        B.Symbols[K].st_shndx == Frame)
      FrameSym = K;
  // FDEs first: the function each relocates against.
  std::vector<std::pair<int, uint64_t>> CiePointers; // FDE, CIE offset
  for (uint32_t S : {FrameRel, FrameRela}) {
    if (S == NoSection)
      continue;
    // The cut rebuilds these two as .debug_frame's: refuse them otherwise,
    // rather than drop what they relocate.
    if (B.Sections[S].sh_info != Frame)
      return fail(B.SectionNames[S] + " does not relocate .debug_frame");
    for (const Reloc &R : SectionRelocs[S]) {
      Expected<int> E = frameEntryAt(R.Offset);
      if (!E)
        return E.takeError();
      if (R.Symbol == FrameSym && FrameSym) {
        // ptxas writes a CIE pointer's target in the relocation's addend,
        // or where it is 0 in place under .rel: 0 in place either way.
        // The cut moves pointers between the two, so it takes no other.
        const FrameEntry &F = Frames[*E];
        if (R.Offset + 8 > F.Offset + F.Size)
          return fail(".debug_frame: the CIE pointer at offset " +
                      Twine(R.Offset) + " runs past its entry");
        uint64_t InPlace = endian::read64le(D.data() + R.Offset);
        if (InPlace != 0)
          return fail(".debug_frame: the CIE pointer at offset " +
                      Twine(R.Offset) + " holds " + Twine(InPlace) +
                      " in place, not 0");
        CiePointers.push_back({*E, R.HasAddend ? uint64_t(R.Addend) : 0});
        continue;
      }
      int O = B.SymbolOwner[R.Symbol];
      if (O == Shared || (Frames[*E].Owner != Shared && Frames[*E].Owner != O))
        return fail(".debug_frame: the entry at offset " +
                    Twine(Frames[*E].Offset) +
                    " is not one input's function's");
      Frames[*E].Owner = O;
    }
  }
  for (auto [Fde, Target] : CiePointers) {
    Expected<int> Cie = frameEntryAt(Target);
    if (!Cie)
      return Cie.takeError();
    if (Frames[*Cie].Offset != Target)
      return fail(".debug_frame: an FDE points into the middle of an entry");
    int O = Frames[Fde].Owner;
    if (O == Shared ||
        (Frames[*Cie].Owner != Shared && Frames[*Cie].Owner != O))
      return fail(".debug_frame: a CIE is shared by two inputs' functions");
    Frames[*Cie].Owner = O;
  }
  for (const FrameEntry &E : Frames)
    if (E.Owner == Shared)
      return fail(".debug_frame: the entry at offset " + Twine(E.Offset) +
                  " is no function's");
  return Error::success();
}

void put32(std::string &S, size_t At, uint32_t V) {
  endian::write32le(S.data() + At, V);
}

Expected<std::string> Cutter::cut(int Input) {
  size_t NumSecs = B.Sections.size(), NumSyms = B.Symbols.size();
  auto Keeps = [&](int Owner) { return Owner == Shared || Owner == Input; };
  // The numbering of what the piece keeps, in the batch's order.
  std::vector<uint32_t> NewSec(NumSecs, NoSection), NewSym(NumSyms, ~0u);
  std::vector<uint32_t> Secs, Syms;
  // .nv.prototype is written only where some function has a prototype.
  bool KeepPrototype = false;
  if (Prototype != NoSection) {
    StringRef D = B.SectionData[Prototype];
    for (size_t Pos = 0; Pos != D.size() && !KeepPrototype; Pos += 8) {
      uint32_t K = endian::read32le(D.data() + Pos);
      KeepPrototype = K < NumSyms && Keeps(B.SymbolOwner[K]);
    }
  }
  for (uint32_t S = 0; S != NumSecs; ++S) {
    if (!Keeps(B.SectionOwner[S]))
      continue;
    if (!KeepPrototype && Prototype != NoSection &&
        (S == Prototype || ((B.Sections[S].sh_type == ELF::SHT_REL ||
                             B.Sections[S].sh_type == ELF::SHT_RELA) &&
                            B.Sections[S].sh_info == Prototype)))
      continue;
    NewSec[S] = Secs.size();
    Secs.push_back(S);
  }
  for (uint32_t K = 0; K != NumSyms; ++K)
    if (Keeps(B.SymbolOwner[K]) && NewSec[B.Symbols[K].st_shndx] != NoSection) {
      NewSym[K] = Syms.size();
      Syms.push_back(K);
    }
  auto MapSym = [&](uint32_t K) -> Expected<uint32_t> {
    if (K >= NumSyms || NewSym[K] == ~0u)
      return fail("symbol " + Twine(K) + " belongs to another input");
    return NewSym[K];
  };

  // Frame entries: new offsets.
  DenseMap<uint64_t, uint64_t> FrameAt; // old entry offset -> new
  std::string FrameData;
  for (const FrameEntry &E : Frames)
    if (E.Owner == Input) {
      FrameAt[E.Offset] = FrameData.size();
      FrameData += B.SectionData[Frame].substr(E.Offset, E.Size);
    }
  auto MapFrameOffset = [&](uint64_t Old) -> Expected<uint64_t> {
    Expected<int> E = frameEntryAt(Old);
    if (!E)
      return E.takeError();
    if (Frames[*E].Owner != Input)
      return fail(".debug_frame: a relocation reaches another input's entry");
    return FrameAt[Frames[*E].Offset] + (Old - Frames[*E].Offset);
  };

  // Contents, section by section.
  std::vector<std::string> Data(Secs.size());
  // Prototype strings first in .strtab, as ptxas writes them.
  StringTable SymNames;
  if (KeepPrototype) {
    StringRef D = B.SectionData[Prototype];
    for (size_t Pos = 0; Pos != D.size(); Pos += 8) {
      uint32_t K = endian::read32le(D.data() + Pos);
      uint32_t Str = endian::read32le(D.data() + Pos + 4);
      if (K < NumSyms && Keeps(B.SymbolOwner[K]) && Str < B.StrTab.size())
        SymNames.add(B.StrTab.data() + Str);
    }
  }
  std::string SymtabBytes;
  uint32_t FirstGlobal = 0;
  for (uint32_t K : Syms) {
    Sym S = B.Symbols[K];
    S.st_name = SymNames.add(B.SymbolNames[K]);
    if (S.st_shndx != ELF::SHN_UNDEF && S.st_shndx != ELF::SHN_ABS)
      S.st_shndx = NewSec[S.st_shndx];
    if (S.getBinding() == ELF::STB_LOCAL)
      FirstGlobal = NewSym[K] + 1;
    SymtabBytes.append(reinterpret_cast<const char *>(&S), sizeof(S));
  }
  // .debug_frame's relocations, first. A CIE pointer holds its target
  // as ptxas writes it (prepareFrames): 0 in place under .rel.debug_frame,
  // any other in .rela.debug_frame's addend with 0 in place. One whose
  // target becomes 0 moves to the end of .rel.debug_frame, where ptxas
  // writes such a pointer.
  std::vector<Reloc> FrameRelOut, FrameRelaOut, RelTail;
  for (uint32_t S : {FrameRel, FrameRela}) {
    if (S == NoSection)
      continue;
    for (Reloc R : SectionRelocs[S]) {
      Expected<int> E = frameEntryAt(R.Offset);
      if (!E)
        return E.takeError();
      if (Frames[*E].Owner != Input)
        continue;
      R.Offset = FrameAt[Frames[*E].Offset] + (R.Offset - Frames[*E].Offset);
      Expected<uint32_t> K = MapSym(R.Symbol);
      if (!K)
        return K.takeError();
      bool ToFrame = FrameSym && R.Symbol == FrameSym;
      R.Symbol = *K;
      if (!ToFrame) {
        (R.HasAddend ? FrameRelaOut : FrameRelOut).push_back(R);
        continue;
      }
      if (!R.HasAddend) { // to offset 0, its owner's first entry
        FrameRelOut.push_back(R);
        continue;
      }
      Expected<uint64_t> Target = MapFrameOffset(uint64_t(R.Addend));
      if (!Target)
        return Target.takeError();
      R.Addend = int64_t(*Target);
      if (R.Addend == 0) {
        R.HasAddend = false;
        RelTail.push_back(R);
      } else {
        FrameRelaOut.push_back(R);
      }
    }
  }
  append_range(FrameRelOut, RelTail);
  for (auto [New, Old] : enumerate(Secs)) {
    StringRef Name = B.SectionNames[Old];
    std::string &Out = Data[New];
    if (Old == B.SymtabIndex) {
      Out = SymtabBytes;
    } else if (Old == Info) {
      for (auto [A, Owner] : zip(InfoAttrs, InfoOwner)) {
        if (!Keeps(Owner))
          continue;
        size_t At = Out.size();
        Out += A.Bytes;
        for (uint32_t Off : A.SymbolAt) {
          Expected<uint32_t> K = MapSym(endian::read32le(A.Bytes.data() + Off));
          if (!K)
            return K.takeError();
          put32(Out, At + Off, *K);
        }
      }
    } else if (Old == CallGraph || Old == Prototype) {
      if (Error E = cutPairs(Old, Keeps, MapSym, SymNames, Out))
        return std::move(E);
    } else if (Old == Frame) {
      Out = FrameData;
    } else if (Old == FrameRel || Old == FrameRela) {
      writeRelocs(Out, Old == FrameRel ? FrameRelOut : FrameRelaOut);
    } else if (B.Sections[Old].sh_type == ELF::SHT_REL ||
               B.Sections[Old].sh_type == ELF::SHT_RELA) {
      std::vector<Reloc> Kept = SectionRelocs[Old];
      for (Reloc &R : Kept) {
        Expected<uint32_t> K = MapSym(R.Symbol);
        if (!K)
          return K.takeError();
        R.Symbol = *K;
      }
      writeRelocs(Out, Kept);
    } else if (Name.starts_with(".nv.info.")) {
      Expected<std::vector<Attr>> A =
          readAttrs(B.SectionData[Old], Name, functionAttr);
      if (!A)
        return A.takeError();
      for (const Attr &At : *A) {
        size_t Base = Out.size();
        Out += At.Bytes;
        for (uint32_t Off : At.SymbolAt) {
          Expected<uint32_t> K =
              MapSym(endian::read32le(At.Bytes.data() + Off));
          if (!K)
            return K.takeError();
          put32(Out, Base + Off, *K);
        }
      }
    } else if (B.Sections[Old].sh_type != ELF::SHT_STRTAB) {
      Out = B.SectionData[Old].str();
    }
  }
  if (!FrameRelOut.empty() && FrameRel == NoSection)
    return fail(".debug_frame: a CIE pointer would need .rel.debug_frame, "
                "which the batch has not");

  // Headers, and the section name table.
  StringTable SecNames;
  std::vector<Shdr> Headers;
  for (auto [New, Old] : enumerate(Secs)) {
    Shdr H = B.Sections[Old];
    H.sh_name = SecNames.add(B.SectionNames[Old]);
    if (H.sh_link)
      H.sh_link = NewSec[H.sh_link];
    if (Old == B.SymtabIndex) {
      H.sh_info = FirstGlobal;
    } else if (H.sh_flags & ELF::SHF_EXECINSTR) {
      Expected<uint32_t> K = MapSym(H.sh_info & 0xffffff);
      if (!K)
        return K.takeError();
      H.sh_info = (H.sh_info & 0xff000000) | *K;
    } else if ((H.sh_flags & ELF::SHF_INFO_LINK) || H.sh_type == ELF::SHT_REL ||
               H.sh_type == ELF::SHT_RELA) {
      if (H.sh_info >= NumSecs || NewSec[H.sh_info] == NoSection)
        return fail(B.SectionNames[Old] + ": links a section of another input");
      H.sh_info = NewSec[H.sh_info];
    }
    if (H.sh_link == NoSection)
      return fail(B.SectionNames[Old] + ": links a section of another input");
    Headers.push_back(H);
  }
  uint32_t ShStrNdx = NewSec[B.Header.e_shstrndx];
  if (ShStrNdx == NoSection)
    return fail("no section name table");
  for (auto [New, Old] : enumerate(Secs))
    if (B.Sections[Old].sh_type == ELF::SHT_STRTAB)
      Data[New] = New == ShStrNdx ? SecNames.Bytes : SymNames.Bytes;

  // The file: header, sections in order at their alignment, then the
  // section header table, as ptxas lays it out.
  std::string Out(sizeof(ELF64LE::Ehdr), '\0');
  for (auto [H, D] : zip(Headers, Data)) {
    if (H.sh_type == ELF::SHT_NULL)
      continue;
    uint64_t Align = std::max<uint64_t>(H.sh_addralign, 1);
    if (!takesNoRoom(H.sh_type)) {
      Out.resize(alignTo(Out.size(), Align), '\0');
      H.sh_offset = Out.size();
      H.sh_size = D.size();
      Out += D;
    } else {
      H.sh_offset = alignTo(Out.size(), Align);
    }
  }
  Out.resize(alignTo(Out.size(), 8), '\0');
  ELF64LE::Ehdr E = B.Header;
  E.e_shoff = Out.size();
  E.e_shnum = Headers.size();
  E.e_shstrndx = ShStrNdx;
  E.e_phoff = 0;
  E.e_phnum = 0;
  memcpy(Out.data(), &E, sizeof(E));
  for (const Shdr &H : Headers)
    Out.append(reinterpret_cast<const char *>(&H), sizeof(H));
  return Out;
}

} // namespace

Expected<std::vector<std::string>>
splitBatchCubin(StringRef Cubin, ArrayRef<std::vector<std::string>> Inputs) {
  if (Inputs.empty())
    return fail("a batch of no inputs");
  Expected<Batch> B = parse(Cubin);
  if (!B)
    return B.takeError();
  if (Error E = assignOwners(*B, Inputs))
    return std::move(E);
  Cutter C(*B);
  if (Error E = C.prepare())
    return std::move(E);
  std::vector<std::string> Pieces;
  for (size_t I = 0; I != Inputs.size(); ++I) {
    Expected<std::string> P = C.cut(int(I));
    if (!P)
      return P.takeError();
    Pieces.push_back(std::move(*P));
  }
  return Pieces;
}

Expected<std::string> canonicalCubin(StringRef Cubin) {
  Expected<std::vector<std::string>> P =
      splitBatchCubin(Cubin, std::vector<std::vector<std::string>>(1));
  if (!P)
    return P.takeError();
  return std::move(P->front());
}

} // namespace fatlink::codegen
