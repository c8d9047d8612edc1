//===- packager/ElfWriter.h - Relocatable ELF objects via libelf -*- C++ -*-===//
//
// Internal to the packager. Describes a small relocatable ELF64 object
// (sections with bytes and absolute 64-bit relocations between them) and
// serializes it with libelf. The host-object and offload-object writers
// both build on it. Besides one local section symbol per section, an object
// may define named symbols at offsets in its sections (the host object's
// hidden wrapper symbol, which fatlink cc's nvcc registration code uses).
//
//===----------------------------------------------------------------------===//

#ifndef FATLINK_PACKAGER_ELFWRITER_H
#define FATLINK_PACKAGER_ELFWRITER_H

#include "packager/Packager.h"

namespace fatlink {
namespace packager {

/// An absolute 64-bit relocation (R_X86_64_64 / R_AARCH64_ABS64) at Offset
/// in its section, resolving to the start of section Target plus Addend.
struct ElfReloc {
  uint64_t Offset = 0;
  unsigned Target = 0; ///< index into the section list given to the writer
  int64_t Addend = 0;
};

struct ElfSection {
  std::string Name;
  uint32_t Type = 1; ///< SHT_PROGBITS
  uint64_t Flags = 0;
  uint64_t Align = 1;
  std::string Data;
  std::vector<ElfReloc> Relocs;
};

/// A named symbol the object defines: Size bytes at Offset in section
/// Section (an index into the section list given to the writer).
struct ElfSymbol {
  std::string Name;
  unsigned Section = 0;
  uint64_t Offset = 0;
  uint64_t Size = 0;
  bool Weak = false;     ///< STB_WEAK, else STB_GLOBAL
  bool Hidden = false;   ///< STV_HIDDEN, else STV_DEFAULT
  bool Function = false; ///< STT_FUNC, else STT_OBJECT
};

/// Returns the bytes of an ET_REL object for \p Arch with \p Sections (in
/// that order, then .rela.* sections, .note.GNU-stack, .symtab, .strtab and
/// .shstrtab), one local STT_SECTION symbol per section, then \p Symbols
/// in the given order.
llvm::Expected<std::string>
writeRelocatableElf(llvm::ArrayRef<ElfSection> Sections, HostArch Arch,
                    llvm::ArrayRef<ElfSymbol> Symbols = {});

} // namespace packager
} // namespace fatlink

#endif // FATLINK_PACKAGER_ELFWRITER_H
