//===- packager/ElfWriter.cpp - Relocatable ELF objects via libelf --------===//
//
// Serializes an ElfSection list with libelf. libelf writes only to a file
// descriptor, so the object is built in an anonymous memory file
// (memfd_create) and read back: no file system path is ever touched.
// libelf lays the file out itself (no ELF_F_LAYOUT), which is deterministic
// for a given section list.
//
// Section indices: 0 null, 1..N the given sections, then one .rela.<name>
// per section with relocations, .note.GNU-stack (non-executable stack),
// .symtab, .strtab, .shstrtab. Symbol I (1..N) is the STT_SECTION symbol of
// section I; those are the local symbols, and the named symbols the caller
// asks for follow them.
//
//===----------------------------------------------------------------------===//

#include "packager/ElfWriter.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/Twine.h"

#include <cerrno>
#include <cstring>
#include <gelf.h>
#include <libelf.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace llvm;
using namespace fatlink;
using namespace fatlink::packager;

namespace {

Error libelfError(const Twine &What) {
  return createStringError(What + ": " + elf_errmsg(-1));
}

/// The host-architecture traits the writer needs.
struct ArchTraits {
  uint16_t Machine;
  uint32_t Abs64;
};

ArchTraits traitsFor(HostArch Arch) {
  switch (Arch) {
  case HostArch::X86_64:
    return {EM_X86_64, R_X86_64_64};
  case HostArch::AArch64:
    return {EM_AARCH64, R_AARCH64_ABS64};
  }
  llvm_unreachable("unknown host arch");
}

/// Appends \p S to a string table; returns its offset.
uint32_t addString(std::string &Table, StringRef S) {
  uint32_t Off = Table.size();
  Table.append(S.data(), S.size());
  Table.push_back('\0');
  return Off;
}

/// Adds a section to \p E whose data is \p Buf (which must outlive the
/// elf_update call). Returns its header for the caller to fill in.
Expected<Elf64_Shdr *> newSection(Elf *E, const void *Buf, size_t Size,
                                  Elf_Type Type, uint64_t Align) {
  Elf_Scn *Scn = elf_newscn(E);
  if (!Scn)
    return libelfError("cannot add an ELF section");
  Elf_Data *D = elf_newdata(Scn);
  if (!D)
    return libelfError("cannot add ELF section data");
  D->d_buf = const_cast<void *>(Buf);
  D->d_size = Size;
  D->d_type = Type;
  D->d_align = Align;
  D->d_off = 0;
  D->d_version = EV_CURRENT;
  Elf64_Shdr *Sh = elf64_getshdr(Scn);
  if (!Sh)
    return libelfError("cannot read back an ELF section header");
  Sh->sh_addralign = Align;
  return Sh;
}

} // namespace

Expected<std::string> fatlink::packager::writeRelocatableElf(
    ArrayRef<ElfSection> Sections, HostArch Arch, ArrayRef<ElfSymbol> Symbols) {
  ArchTraits Traits = traitsFor(Arch);
  if (elf_version(EV_CURRENT) == EV_NONE)
    return libelfError("libelf is too old");

  int Fd = memfd_create("fatlink-object", MFD_CLOEXEC);
  if (Fd < 0)
    return createStringError(Twine("cannot create an in-memory file: ") +
                             std::strerror(errno));
  scope_exit CloseFd([&] { close(Fd); });
  Elf *E = elf_begin(Fd, ELF_C_WRITE, nullptr);
  if (!E)
    return libelfError("cannot start an ELF object");
  scope_exit EndElf([&] { elf_end(E); });

  Elf64_Ehdr *Eh = elf64_newehdr(E);
  if (!Eh)
    return libelfError("cannot create the ELF header");
  Eh->e_ident[EI_DATA] = ELFDATA2LSB;
  Eh->e_ident[EI_OSABI] = ELFOSABI_NONE;
  Eh->e_type = ET_REL;
  Eh->e_machine = Traits.Machine;
  Eh->e_version = EV_CURRENT;

  // Everything libelf points into must live until elf_update.
  std::string ShStrTab(1, '\0'), StrTab(1, '\0');
  std::vector<Elf64_Sym> Syms(1 + Sections.size());
  size_t NumLocal = Syms.size();
  std::vector<std::vector<Elf64_Rela>> Relas(Sections.size());

  for (const ElfSection &S : Sections) {
    Expected<Elf64_Shdr *> Sh =
        newSection(E, S.Data.data(), S.Data.size(), ELF_T_BYTE, S.Align);
    if (!Sh)
      return Sh.takeError();
    (*Sh)->sh_name = addString(ShStrTab, S.Name);
    (*Sh)->sh_type = S.Type;
    (*Sh)->sh_flags = S.Flags;
  }
  for (size_t I = 0; I < Sections.size(); ++I) {
    Elf64_Sym &Sym = Syms[I + 1];
    Sym.st_info = ELF64_ST_INFO(STB_LOCAL, STT_SECTION);
    Sym.st_shndx = I + 1;
  }
  for (const ElfSymbol &S : Symbols) {
    assert(S.Section < Sections.size() && "symbol in a missing section");
    assert(S.Offset <= Sections[S.Section].Data.size() &&
           S.Size <= Sections[S.Section].Data.size() - S.Offset &&
           "symbol past its section");
    Elf64_Sym Sym = {};
    Sym.st_name = addString(StrTab, S.Name);
    Sym.st_info = ELF64_ST_INFO(S.Weak ? STB_WEAK : STB_GLOBAL,
                                S.Function ? STT_FUNC : STT_OBJECT);
    Sym.st_other = S.Hidden ? STV_HIDDEN : STV_DEFAULT;
    Sym.st_shndx = S.Section + 1;
    Sym.st_value = S.Offset;
    Sym.st_size = S.Size;
    Syms.push_back(Sym);
  }

  // Indices of the sections that follow the given ones.
  size_t NumRela = 0;
  for (const ElfSection &S : Sections)
    NumRela += !S.Relocs.empty();
  size_t SymTabIndex = 1 + Sections.size() + NumRela + 1;

  for (size_t I = 0; I < Sections.size(); ++I) {
    const ElfSection &S = Sections[I];
    if (S.Relocs.empty())
      continue;
    for (const ElfReloc &R : S.Relocs) {
      assert(R.Target < Sections.size() && "relocation to a missing section");
      assert(R.Offset + 8 <= S.Data.size() && "relocation past its section");
      Elf64_Rela Rela = {};
      Rela.r_offset = R.Offset;
      Rela.r_info = ELF64_R_INFO(R.Target + 1, Traits.Abs64);
      Rela.r_addend = R.Addend;
      Relas[I].push_back(Rela);
    }
    Expected<Elf64_Shdr *> Sh =
        newSection(E, Relas[I].data(), Relas[I].size() * sizeof(Elf64_Rela),
                   ELF_T_RELA, 8);
    if (!Sh)
      return Sh.takeError();
    (*Sh)->sh_name = addString(ShStrTab, ".rela" + S.Name);
    (*Sh)->sh_type = SHT_RELA;
    (*Sh)->sh_flags = SHF_INFO_LINK;
    (*Sh)->sh_link = SymTabIndex;
    (*Sh)->sh_info = I + 1;
    (*Sh)->sh_entsize = sizeof(Elf64_Rela);
  }

  Expected<Elf64_Shdr *> Stack = newSection(E, nullptr, 0, ELF_T_BYTE, 1);
  if (!Stack)
    return Stack.takeError();
  (*Stack)->sh_name = addString(ShStrTab, ".note.GNU-stack");
  (*Stack)->sh_type = SHT_PROGBITS;

  Expected<Elf64_Shdr *> SymTab = newSection(
      E, Syms.data(), Syms.size() * sizeof(Elf64_Sym), ELF_T_SYM, 8);
  if (!SymTab)
    return SymTab.takeError();
  (*SymTab)->sh_name = addString(ShStrTab, ".symtab");
  (*SymTab)->sh_type = SHT_SYMTAB;
  (*SymTab)->sh_link = SymTabIndex + 1;
  (*SymTab)->sh_info = NumLocal; // one past the last local symbol
  (*SymTab)->sh_entsize = sizeof(Elf64_Sym);

  Expected<Elf64_Shdr *> Str =
      newSection(E, StrTab.data(), StrTab.size(), ELF_T_BYTE, 1);
  if (!Str)
    return Str.takeError();
  (*Str)->sh_name = addString(ShStrTab, ".strtab");
  (*Str)->sh_type = SHT_STRTAB;

  // .shstrtab names itself, so its name goes in before its data is fixed.
  uint32_t ShStrName = addString(ShStrTab, ".shstrtab");
  Expected<Elf64_Shdr *> ShStr =
      newSection(E, ShStrTab.data(), ShStrTab.size(), ELF_T_BYTE, 1);
  if (!ShStr)
    return ShStr.takeError();
  (*ShStr)->sh_name = ShStrName;
  (*ShStr)->sh_type = SHT_STRTAB;
  Eh->e_shstrndx = SymTabIndex + 2;

  if (elf_update(E, ELF_C_WRITE) < 0)
    return libelfError("cannot write the ELF object");
  EndElf.release();
  if (elf_end(E) != 0)
    return libelfError("cannot finish the ELF object");

  struct stat St;
  if (fstat(Fd, &St) != 0)
    return createStringError(Twine("cannot stat the in-memory object: ") +
                             std::strerror(errno));
  std::string Out(St.st_size, '\0');
  for (size_t Done = 0; Done < Out.size();) {
    ssize_t N = pread(Fd, Out.data() + Done, Out.size() - Done, Done);
    if (N <= 0)
      return createStringError(
          Twine("cannot read back the in-memory object: ") +
          std::strerror(N < 0 ? errno : EIO));
    Done += N;
  }
  return Out;
}
