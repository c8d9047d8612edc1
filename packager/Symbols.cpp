//===- packager/Symbols.cpp - Symbols and kernels of cubins and PTX -------===//
//
// What a relocatable cubin or a PTX module defines, references and offers
// as kernels, with each kernel's parameter sizes: the device link resolves
// nvcc's code against fatlink's with it (lto/Inputs.cpp), and `inspect`
// lists the kernels of every entry. Cubins are read as ELF (LLVM's object
// reader; kernels are the symbols with STO_CUDA_ENTRY, parameters come from
// `.nv.info.<kernel>`), PTX from its directives: a line that starts one,
// and for `.entry` and `.func` the parameter list up to its matching `)`
// and whether a body follows (a definition) or `;` (a prototype).
//
//===----------------------------------------------------------------------===//

#include "packager/Packager.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Object/ObjectFile.h"
#include "llvm/Support/Endian.h"

#include <cctype>
#include <map>
#include <optional>

using namespace llvm;

namespace fatlink::packager {

static void sortKernels(std::vector<KernelInfo> &Kernels) {
  llvm::sort(Kernels, [](const KernelInfo &A, const KernelInfo &B) {
    return A.Name < B.Name;
  });
}

/// st_other bits of a cubin's symbols: entry functions (kernels), and
/// variables in shared memory (nvcc 13.0's cubins, readelf).
static constexpr uint8_t StoCudaEntry = 0x10, StoCudaShared = 0x40;

/// Calls \p Fn(attribute, value) for each sized (EIFMT_SVAL) attribute of
/// an `.nv.info` section.
static void forEachSizedAttr(StringRef Info,
                             function_ref<void(uint8_t, StringRef)> Fn) {
  constexpr uint8_t FmtSized = 4;
  for (size_t Pos = 0; Pos + 4 <= Info.size();) {
    uint8_t Fmt = Info[Pos], Attr = Info[Pos + 1];
    uint16_t Len = support::endian::read16le(Info.data() + Pos + 2);
    Pos += 4;
    if (Fmt != FmtSized)
      continue;
    if (Pos + Len > Info.size())
      break;
    Fn(Attr, Info.substr(Pos, Len));
    Pos += Len;
  }
}

/// The parameter sizes of a cubin's kernel, from its `.nv.info.<kernel>`
/// section: a list of attributes, each a u8 format, a u8 attribute and a
/// u16 that is the value (formats 1 to 3) or the size of the value that
/// follows (format 4, EIFMT_SVAL). EIATTR_KPARAM_INFO (0x17) describes one
/// parameter in 12 bytes: u32 index, u16 ordinal, u16 offset, u32 whose
/// bits 18 to 31 are its size (measured against nvcc 13.0's cubins and
/// cuobjdump -elf). Empty when the section is absent or says nothing.
static std::vector<unsigned> cubinParamSizes(StringRef Info) {
  constexpr uint8_t AttrKParamInfo = 0x17;
  std::map<unsigned, unsigned> ByOrdinal;
  forEachSizedAttr(Info, [&](uint8_t Attr, StringRef V) {
    if (Attr == AttrKParamInfo && V.size() >= 12)
      ByOrdinal[support::endian::read16le(V.data() + 4)] =
          support::endian::read32le(V.data() + 8) >> 18;
  });
  std::vector<unsigned> Sizes;
  for (auto [Ordinal, Size] : ByOrdinal) {
    if (Ordinal != Sizes.size())
      return {}; // a gap: not what nvcc writes; say nothing rather than guess
    Sizes.push_back(Size);
  }
  return Sizes;
}

/// Fills in the resources of \p Kernels from the cubin \p Obj: registers
/// from the module's `.nv.info` (EIATTR_REGCOUNT, 0x2f: u32 symbol index,
/// u32 count; else bits 24-31 of `.text.<kernel>`'s sh_info, all that
/// older cubins have), the stack from there too (EIATTR_MIN_STACK_SIZE,
/// 0x12, laid out alike: the kernel's frame and its callees', 0xffffffff
/// when ptxas cannot bound it; a relocatable cubin has none, and then its
/// own frame, EIATTR_FRAME_SIZE, 0x11, is all there is), shared, local and
/// constant bank 0 from the sizes of
/// `.nv.shared.<kernel>`, `.nv.local.<kernel>` and
/// `.nv.constant0.<kernel>` (less, for shared, the system-reserved block
/// that sm_90 and newer executables place at its start: see
/// KernelResources::SharedReserved), and declared block sizes from
/// `.nv.info.<kernel>` (EIATTR_MAX_THREADS 0x05, EIATTR_REQNTID 0x10: three
/// u32), and the code size from `.text.<kernel>`'s size. Measured against
/// nvcc 13.0's cubins and cuobjdump -res-usage, and the shared, local,
/// register and block-size figures against the CUDA driver's
/// cuFuncGetAttribute on an H200 (tests/gpu/res_check.cpp).
static void readResources(const object::ELF64LEObjectFile &Obj,
                          std::vector<KernelInfo> &Kernels) {
  constexpr uint8_t AttrMaxThreads = 0x05, AttrReqNtid = 0x10,
                    AttrFrameSize = 0x11, AttrMinStackSize = 0x12,
                    AttrRegCount = 0x2f;
  constexpr uint32_t UnknownStack = 0xffffffff;
  std::map<std::string, KernelResources> Res;
  std::map<uint32_t, std::string> BySymbol; // symbol index -> kernel
  std::map<std::string, uint64_t> RegCount, MinStack;
  // The reserved shared memory each kernel's .nv.shared section starts
  // with: executables for sm_90 and newer, whose code addresses it through
  // .nv.reservedSmem.offset0 (ptxas's and nvlink's alike; relocatable
  // cubins leave the reserve to nvlink). sm_100 and newer give its size in
  // .nv.reservedSmem.cap; sm_90's is 1 KB (the driver reports each
  // kernel's shared size 1 KB less than its section on an H200).
  bool Executable = Obj.getELFFile().getHeader().e_type == ELF::ET_EXEC;
  bool HasReserve = false;
  uint64_t ReservedShared = 1024;
  for (const object::ELFSymbolRef Sym : Obj.symbols()) {
    Expected<StringRef> Name = Sym.getName();
    if (!Name) {
      consumeError(Name.takeError());
      continue;
    }
    if (*Name == ".nv.reservedSmem.offset0")
      HasReserve = Executable;
    // Its raw st_value: nvlink gives it a processor-specific type, whose
    // value SymbolRef::getValue does not report (0).
    if (*Name == ".nv.reservedSmem.cap") {
      if (auto Raw = Obj.getSymbol(Sym.getRawDataRefImpl()))
        ReservedShared = (*Raw)->st_value;
      else
        consumeError(Raw.takeError());
    }
    if (any_of(Kernels, [&](const KernelInfo &K) { return K.Name == *Name; }))
      BySymbol[Sym.getRawDataRefImpl().d.b] = Name->str();
  }
  if (!HasReserve)
    ReservedShared = 0;
  for (const KernelInfo &K : Kernels)
    Res[K.Name];
  for (const object::ELFSectionRef Sec : Obj.sections()) {
    Expected<StringRef> NameOrErr = Sec.getName();
    if (!NameOrErr) {
      consumeError(NameOrErr.takeError());
      continue;
    }
    StringRef Name = *NameOrErr;
    auto For = [&](StringRef Prefix) -> KernelResources * {
      if (!Name.starts_with(Prefix))
        return nullptr;
      auto It = Res.find(Name.drop_front(Prefix.size()).str());
      return It == Res.end() ? nullptr : &It->second;
    };
    if (KernelResources *R = For(".text.")) {
      Expected<const object::ELF64LE::Shdr *> Hdr =
          Obj.getELFFile().getSection(Sec.getIndex());
      if (Hdr)
        R->Registers = (*Hdr)->sh_info >> 24;
      else
        consumeError(Hdr.takeError());
      R->CodeSize = Sec.getSize();
    } else if (KernelResources *R = For(".nv.shared.")) {
      R->SharedReserved = std::min<uint64_t>(Sec.getSize(), ReservedShared);
      R->Shared = Sec.getSize() - R->SharedReserved;
    } else if (KernelResources *R = For(".nv.local.")) {
      R->Local = Sec.getSize();
    } else if (KernelResources *R = For(".nv.constant0.")) {
      R->Constant0 = Sec.getSize();
    } else if (Name == ".nv.info" || Name.starts_with(".nv.info.")) {
      Expected<StringRef> Contents = Sec.getContents();
      if (!Contents) {
        consumeError(Contents.takeError());
        continue;
      }
      KernelResources *Own = For(".nv.info.");
      forEachSizedAttr(*Contents, [&](uint8_t Attr, StringRef V) {
        if ((Attr == AttrFrameSize || Attr == AttrMinStackSize ||
             Attr == AttrRegCount) &&
            V.size() >= 8 && Name == ".nv.info") {
          auto It = BySymbol.find(support::endian::read32le(V.data()));
          if (It == BySymbol.end())
            return;
          uint32_t Value = support::endian::read32le(V.data() + 4);
          if (Attr == AttrFrameSize)
            Res[It->second].Stack = Value;
          else
            (Attr == AttrMinStackSize ? MinStack : RegCount)[It->second] =
                Value;
        } else if ((Attr == AttrMaxThreads || Attr == AttrReqNtid) && Own &&
                   V.size() >= 12) {
          uint32_t *Dims =
              Attr == AttrMaxThreads ? Own->MaxThreads : Own->ReqThreads;
          for (int I = 0; I < 3; ++I)
            Dims[I] = support::endian::read32le(V.data() + 4 * I);
        }
      });
    }
  }
  // EIATTR_REGCOUNT where the cubin has it (sm_90 and newer keep no count
  // in sh_info).
  for (auto &[Kernel, Count] : RegCount)
    Res[Kernel].Registers = Count;
  // EIATTR_MIN_STACK_SIZE, which counts the callees, over the frame.
  for (auto &[Kernel, Bytes] : MinStack)
    Res[Kernel].Stack =
        Bytes == UnknownStack ? std::nullopt : std::optional<uint64_t>(Bytes);
  for (KernelInfo &K : Kernels)
    K.Resources = Res[K.Name];
}

Expected<ModuleSymbols> readCubinSymbols(StringRef Cubin) {
  Expected<std::unique_ptr<object::ObjectFile>> ObjOrErr =
      object::ObjectFile::createObjectFile(MemoryBufferRef(Cubin, "cubin"));
  if (!ObjOrErr)
    return createStringError("corrupt relocatable cubin: %s",
                             toString(ObjOrErr.takeError()).c_str());
  ModuleSymbols S;
  for (const object::SymbolRef &Sym : (*ObjOrErr)->symbols()) {
    Expected<uint32_t> Flags = Sym.getFlags();
    Expected<StringRef> Name = Sym.getName();
    if (!Flags || !Name) {
      if (!Flags)
        consumeError(Flags.takeError());
      if (!Name)
        consumeError(Name.takeError());
      return createStringError("corrupt symbol table");
    }
    if (Name->empty())
      continue;
    object::ELFSymbolRef ElfSym(Sym);
    bool IsUndefined = *Flags & object::SymbolRef::SF_Undefined;
    if (!IsUndefined && ElfSym.getELFType() == ELF::STT_FUNC &&
        (ElfSym.getOther() & StoCudaEntry))
      S.Kernels.push_back({Name->str(), {}});
    if (!(*Flags & object::SymbolRef::SF_Global))
      continue;
    if (!IsUndefined) {
      S.Defined.push_back(Name->str());
      if (*Flags & object::SymbolRef::SF_Weak)
        S.Weak.push_back(Name->str());
    } else if ((*Flags & object::SymbolRef::SF_Weak) ||
               (ElfSym.getOther() & StoCudaShared)) {
      S.OptionalUndefined.push_back(Name->str());
    } else {
      S.Undefined.push_back(Name->str());
      if (ElfSym.getELFType() == ELF::STT_FUNC)
        S.UndefinedFunctions.push_back(Name->str());
    }
  }
  for (const object::SectionRef &Sec : (*ObjOrErr)->sections()) {
    Expected<StringRef> Name = Sec.getName();
    if (!Name) {
      consumeError(Name.takeError());
      continue;
    }
    if (!Name->consume_front(".nv.info."))
      continue;
    auto K = find_if(S.Kernels,
                     [&](const KernelInfo &K) { return K.Name == *Name; });
    Expected<StringRef> Contents = Sec.getContents();
    if (K == S.Kernels.end() || !Contents) {
      if (!Contents)
        consumeError(Contents.takeError());
      continue;
    }
    K->ParamSizes = cubinParamSizes(*Contents);
  }
  if (const auto *Elf = dyn_cast<object::ELF64LEObjectFile>(ObjOrErr->get()))
    readResources(*Elf, S.Kernels);
  sortKernels(S.Kernels);
  return S;
}

/// The size of a PTX parameter declaration's type: `.u64` 8, `.f32` 4,
/// `.b8 name[24]` 24; 0 when it is not one.
static unsigned ptxParamSize(StringRef Decl) {
  unsigned Elem = 0;
  for (auto [Suffix, Size] : {std::pair<StringRef, unsigned>{"8", 1},
                              {"16", 2},
                              {"32", 4},
                              {"64", 8}})
    for (StringRef Ty : {".u", ".s", ".b", ".f"})
      if (Decl.contains((Ty + Suffix + " ").str()))
        Elem = Size;
  if (!Elem)
    return 0;
  size_t Open = Decl.find('[');
  unsigned Count = 1;
  if (Open != StringRef::npos &&
      Decl.substr(Open + 1)
          .take_until([](char C) { return C == ']'; })
          .getAsInteger(10, Count))
    return 0;
  return Elem * Count;
}

/// The parameter list that starts at \p Rest[0] == '(' up to its matching
/// ')', without the parentheses; \p Rest is left past it. None when it is
/// not closed.
static std::optional<StringRef> takeParenthesized(StringRef &Rest) {
  int Depth = 0;
  for (size_t I = 0; I < Rest.size(); ++I) {
    if (Rest[I] == '(') {
      ++Depth;
    } else if (Rest[I] == ')' && --Depth == 0) {
      StringRef Inside = Rest.slice(1, I);
      Rest = Rest.drop_front(I + 1);
      return Inside;
    }
  }
  return std::nullopt;
}

/// Reads the `.entry` or `.func` declaration at the start of \p Rest (past
/// its linkage): its name, its parameter sizes (the list up to its
/// matching `)`, split on commas, on one line or many), and whether it is
/// a definition (a body `{` follows, perhaps after performance directives)
/// rather than a prototype ending in `;`, which the PTX linker writes
/// before each definition. False when it cannot be read.
static bool readFunction(StringRef Rest, bool IsEntry, StringRef &Name,
                         std::vector<uint32_t> &ParamSizes,
                         bool &IsDefinition) {
  Rest = Rest.drop_front(IsEntry ? 7 : 6).ltrim();
  // `.func (.param .b32 r) name(`: an optional return value list first.
  if (!IsEntry && Rest.starts_with("(") && !takeParenthesized(Rest))
    return false;
  Rest = Rest.ltrim();
  Name = Rest.take_until([](char C) {
    return C == '(' || C == ';' || C == '{' || isspace(static_cast<uint8_t>(C));
  });
  Rest = Rest.drop_front(Name.size()).ltrim();
  if (Rest.starts_with("(")) {
    std::optional<StringRef> Params = takeParenthesized(Rest);
    if (!Params)
      return false;
    SmallVector<StringRef, 8> Decls;
    Params->split(Decls, ',', -1, /*KeepEmpty=*/false);
    for (StringRef Decl : Decls) {
      Decl = Decl.trim();
      if (Decl.consume_front(".param"))
        ParamSizes.push_back(ptxParamSize((Decl + " ").str()));
    }
  }
  size_t End = Rest.find_first_of(";{");
  IsDefinition = End != StringRef::npos && Rest[End] == '{';
  return !Name.empty();
}

ModuleSymbols readPtxSymbols(StringRef Ptx) {
  ModuleSymbols S;
  std::vector<std::string> &Defined = S.Defined, &Undefined = S.Undefined;
  std::vector<KernelInfo> &Kernels = S.Kernels;
  // Comments could hide or fake a directive or a parenthesis.
  std::string Text = minifyPtx(Ptx);
  StringRef Rest = Text;
  while (!Rest.empty()) {
    StringRef Line;
    StringRef From = Rest; // this line and what follows it
    std::tie(Line, Rest) = Rest.split('\n');
    size_t Lead = Line.size() - Line.ltrim().size();
    From = From.drop_front(Lead);
    Line = Line.trim();
    size_t Before = Line.size();
    bool Extern = Line.consume_front(".extern ");
    bool Visible = !Extern && (Line.consume_front(".visible ") ||
                               Line.consume_front(".weak "));
    Line = Line.ltrim();
    From = From.drop_front(Before - Line.size());
    bool IsEntry = Line.starts_with(".entry ") || Line.starts_with(".entry\t");
    bool IsFunc = Line.starts_with(".func ");
    bool IsVar = Line.starts_with(".global ") || Line.starts_with(".const ");
    // A bare `.entry` is a kernel all the same: nvcc writes `static` and
    // anonymous-namespace kernels so, and the driver loads them by name.
    // Other bare directives are module-local and not symbols here.
    if (!Extern && !Visible && !IsEntry)
      continue;
    if (!IsEntry && !IsFunc && !IsVar)
      continue;
    if (IsEntry || IsFunc) {
      StringRef Name;
      std::vector<uint32_t> ParamSizes;
      bool IsDefinition = false;
      if (!readFunction(From, IsEntry, Name, ParamSizes, IsDefinition))
        continue;
      if (Extern) {
        Undefined.push_back(Name.str());
        continue;
      }
      // A prototype (`;`) names what the module defines further on, or
      // nothing: only the definition counts, once.
      if (!IsDefinition)
        continue;
      if (Visible)
        Defined.push_back(Name.str());
      if (IsEntry)
        Kernels.push_back({Name.str(), std::move(ParamSizes)});
      continue;
    }
    // `.global .align 4 .u32 name;`, `.global .align 8 .b8 name[16] = ...`
    StringRef Decl =
        Line.take_until([](char C) { return C == ';' || C == '=' || C == '['; })
            .rtrim();
    StringRef Name = Decl.substr(Decl.rfind(' ') + 1);
    if (!Name.empty())
      (Extern ? Undefined : Defined).push_back(Name.str());
  }
  sortKernels(Kernels);
  return S;
}

} // namespace fatlink::packager
