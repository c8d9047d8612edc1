//===- packager/HostObject.cpp - Host objects that embed a fatbin ---------===//
//
// Writes the relocatable host object that carries one fatbin into a program.
// Its sections (index order):
//
//   .nv_fatbin               A, align 8: the fatbin container
//   .nvFatBinSegment         WA, align 8: __fatBinC_Wrapper_t
//                            {0x466243B1, 1, &.nv_fatbin, NULL}; what
//                            __cudaRegisterFatBinary takes, and where
//                            cuobjdump and the CUDA runtime look
//   .data.rel.ro.fatlink_kernels
//                            WA, align 8: fatlink_kernel[N] sorted by name,
//                            then the u32 parameter sizes, the manifests
//                            and their parameter records, then the strings;
//                            it holds pointers, so it is RELRO data (read-only
//                            after relocation), not .rodata, which would give
//                            PIE executables text relocations
//   fatlink_modules          WA|SHF_GNU_RETAIN, align 8: one fatlink_module
//                            (Descriptor.h); the linker's
//                            __start_/__stop_fatlink_modules bound the array
//
// plus a .rela section for each of the last three (R_X86_64_64 or
// R_AARCH64_ABS64 against section symbols; the data holds zeros, the
// addends hold the offsets). SHF_GNU_RETAIN keeps the descriptor (and
// through its relocations everything else) alive under --gc-sections.
//
// One symbol is named: __fatlink_wrapper_<16 hex digits of the fatbin's
// BLAKE3 hash>, at the wrapper, weak and hidden, for host code generated
// for this link (fatlink cc's registration of nvcc modules, which must
// register this fatbin and no other). Named by content, weak and hidden,
// it lets the objects of any number of device links go into one program,
// and keeps each executable's and shared library's to itself.
//
//===----------------------------------------------------------------------===//

#include "packager/Descriptor.h"
#include "packager/ElfWriter.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/BLAKE3.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/Path.h"
#include "llvm/TargetParser/Triple.h"

#include <cstddef>

using namespace llvm;
using namespace fatlink;
using namespace fatlink::packager;

namespace {

constexpr uint64_t SHFAlloc = 0x2, SHFWrite = 0x1, SHFGnuRetain = 0x200000;

// Section indices in the list given to writeRelocatableElf.
enum : unsigned { FatbinSec, WrapperSec, KernelsSec, ModulesSec };

void put32(std::string &S, uint64_t Off, uint32_t V) {
  support::endian::write32le(S.data() + Off, V);
}
void put64(std::string &S, uint64_t Off, uint64_t V) {
  support::endian::write64le(S.data() + Off, V);
}

/// The origin as the binary keeps it: without directories, which would
/// tie the program's bytes to where it was built ("/w/libk.rlib(k.o)" is
/// "libk.rlib(k.o)").
static std::string portableOrigin(StringRef Origin) {
  size_t Paren = Origin.find('(');
  StringRef File = Origin.take_front(Paren);
  return (sys::path::filename(File) + Origin.drop_front(File.size())).str();
}

/// Lays out the kernel table and its relocations: the records, the u32
/// parameter sizes, the manifests of the kernels that have one and their
/// parameter records (Descriptor.h: offsets from the table's start, no
/// relocations), then the strings (names by relocation, manifest strings
/// by offset).
Expected<ElfSection> kernelTable(ArrayRef<const KernelInfo *> Kernels) {
  ElfSection Sec;
  Sec.Name = FATLINK_KERNELS_SECTION;
  Sec.Flags = SHFAlloc | SHFWrite;
  Sec.Align = 8;
  uint64_t RecordSize = sizeof(fatlink_kernel);
  uint64_t SizesOff = Kernels.size() * RecordSize;
  uint64_t NumSizes = 0, NumManifests = 0, NumParams = 0;
  for (const KernelInfo *K : Kernels) {
    NumSizes += K->ParamSizes.size();
    if (!K->hasManifest())
      continue;
    if (!K->Manifest.Params.empty() &&
        K->Manifest.Params.size() != K->ParamSizes.size())
      return createStringError(
          "kernel '%s': its manifest has %zu parameters and its record %zu",
          K->Name.c_str(), K->Manifest.Params.size(), K->ParamSizes.size());
    ++NumManifests;
    NumParams += K->Manifest.Params.size();
  }
  uint64_t ManifestsOff = alignTo(SizesOff + 4 * NumSizes, 8);
  uint64_t ParamsOff =
      ManifestsOff + NumManifests * sizeof(fatlink_kernel_manifest);
  Sec.Data.assign(ParamsOff + NumParams * sizeof(fatlink_param), '\0');

  // A string's offset; "" is offset 0, "not known".
  auto addString = [&](StringRef Str) -> uint32_t {
    if (Str.empty())
      return 0;
    uint64_t Off = Sec.Data.size();
    Sec.Data.append(Str.begin(), Str.end());
    Sec.Data.push_back('\0');
    return uint32_t(Off);
  };
  uint64_t NextSize = SizesOff, NextManifest = ManifestsOff,
           NextParam = ParamsOff;
  for (size_t I = 0; I < Kernels.size(); ++I) {
    const KernelInfo &K = *Kernels[I];
    uint64_t Rec = I * RecordSize;
    Sec.Relocs.push_back({Rec + offsetof(fatlink_kernel, name), KernelsSec,
                          int64_t(Sec.Data.size())});
    Sec.Data.append(K.Name);
    Sec.Data.push_back('\0');
    if (!K.ParamSizes.empty())
      Sec.Relocs.push_back({Rec + offsetof(fatlink_kernel, param_sizes),
                            KernelsSec, int64_t(NextSize)});
    put32(Sec.Data, Rec + offsetof(fatlink_kernel, num_params),
          K.ParamSizes.size());
    for (uint32_t Size : K.ParamSizes) {
      put32(Sec.Data, NextSize, Size);
      NextSize += 4;
    }
    const KernelManifest &M = K.Manifest;
    if (!K.hasManifest())
      continue;
    uint64_t MOff = NextManifest;
    NextManifest += sizeof(fatlink_kernel_manifest);
    put32(Sec.Data, Rec + offsetof(fatlink_kernel, manifest), MOff);
    support::endian::write16le(
        Sec.Data.data() + MOff + offsetof(fatlink_kernel_manifest, version),
        FATLINK_MANIFEST_VERSION);
    Sec.Data[MOff + offsetof(fatlink_kernel_manifest, language)] =
        char(M.Language);
    if (!M.Params.empty())
      put32(Sec.Data, MOff + offsetof(fatlink_kernel_manifest, params),
            NextParam);
    put32(Sec.Data, MOff + offsetof(fatlink_kernel_manifest, origin),
          addString(portableOrigin(K.Origin)));
    for (unsigned D = 0; D < 3; ++D) {
      put32(Sec.Data,
            MOff + offsetof(fatlink_kernel_manifest, max_threads) + 4 * D,
            M.MaxThreads[D]);
      put32(Sec.Data,
            MOff + offsetof(fatlink_kernel_manifest, req_threads) + 4 * D,
            M.ReqThreads[D]);
      put32(Sec.Data, MOff + offsetof(fatlink_kernel_manifest, cluster) + 4 * D,
            M.Cluster[D]);
    }
    put32(Sec.Data, MOff + offsetof(fatlink_kernel_manifest, min_blocks),
          M.MinBlocks);
    for (const ParamInfo &P : M.Params) {
      uint64_t POff = NextParam;
      NextParam += sizeof(fatlink_param);
      Sec.Data[POff + offsetof(fatlink_param, kind)] = char(P.Kind);
      Sec.Data[POff + offsetof(fatlink_param, flags)] = char(P.Flags);
      Sec.Data[POff + offsetof(fatlink_param, addrspace)] = char(P.AddrSpace);
      Sec.Data[POff + offsetof(fatlink_param, elem_kind)] = char(P.ElemKind);
      put32(Sec.Data, POff + offsetof(fatlink_param, size), P.Size);
      put32(Sec.Data, POff + offsetof(fatlink_param, align), P.Align);
      put32(Sec.Data, POff + offsetof(fatlink_param, elem_size), P.ElemSize);
      put32(Sec.Data, POff + offsetof(fatlink_param, type), addString(P.Type));
      put32(Sec.Data, POff + offsetof(fatlink_param, name), addString(P.Name));
    }
  }
  Sec.Data.resize(alignTo(Sec.Data.size(), 8), '\0');
  if (Sec.Data.size() > UINT32_MAX)
    return createStringError("the kernel table is %zu bytes; its offsets "
                             "reach 4 GiB",
                             Sec.Data.size());
  return Sec;
}

} // namespace

Expected<std::string>
fatlink::packager::writeHostObject(StringRef Fatbin,
                                   ArrayRef<KernelInfo> Kernels,
                                   HostArch Arch) {
  if (Fatbin.size() < 16 ||
      support::endian::read32le(Fatbin.data()) != FATLINK_FATBIN_MAGIC)
    return createStringError(
        "data to embed is not a fatbin (no magic 0xba55ed50)");

  // Sorted by name so that the table is the same whatever order the kernels
  // were found in, and a runtime may binary-search it.
  std::vector<const KernelInfo *> Sorted;
  for (const KernelInfo &K : Kernels) {
    if (K.Name.empty() || K.Name.find('\0') != std::string::npos)
      return createStringError("kernel name '" + K.Name +
                               "' is empty or holds a NUL");
    Sorted.push_back(&K);
  }
  llvm::sort(Sorted, [](const KernelInfo *L, const KernelInfo *R) {
    return L->Name < R->Name;
  });
  for (size_t I = 1; I < Sorted.size(); ++I)
    if (Sorted[I - 1]->Name == Sorted[I]->Name)
      return createStringError("kernel '" + Sorted[I]->Name +
                               "' is listed twice");
  if (Sorted.size() > UINT32_MAX)
    return createStringError("too many kernels for one module");

  std::vector<ElfSection> Sections(4);
  ElfSection &FatbinS = Sections[FatbinSec];
  FatbinS.Name = FATLINK_FATBIN_SECTION;
  FatbinS.Flags = SHFAlloc;
  FatbinS.Align = 8;
  FatbinS.Data = Fatbin.str();

  ElfSection &Wrapper = Sections[WrapperSec];
  Wrapper.Name = FATLINK_WRAPPER_SECTION;
  Wrapper.Flags = SHFAlloc | SHFWrite;
  Wrapper.Align = 8;
  Wrapper.Data.assign(sizeof(fatlink_fatbin_wrapper), '\0');
  put32(Wrapper.Data, offsetof(fatlink_fatbin_wrapper, magic),
        FATLINK_FATBINC_MAGIC);
  put32(Wrapper.Data, offsetof(fatlink_fatbin_wrapper, version),
        FATLINK_FATBINC_VERSION);
  Wrapper.Relocs.push_back(
      {offsetof(fatlink_fatbin_wrapper, data), FatbinSec, 0});

  Expected<ElfSection> Table = kernelTable(Sorted);
  if (!Table)
    return Table.takeError();
  Sections[KernelsSec] = std::move(*Table);

  ElfSection &Module = Sections[ModulesSec];
  Module.Name = FATLINK_MODULES_SECTION;
  Module.Flags = SHFAlloc | SHFWrite | SHFGnuRetain;
  Module.Align = 8;
  Module.Data.assign(sizeof(fatlink_module), '\0');
  put32(Module.Data, offsetof(fatlink_module, magic), FATLINK_MODULE_MAGIC);
  support::endian::write16le(Module.Data.data() +
                                 offsetof(fatlink_module, version),
                             FATLINK_MODULE_VERSION);
  support::endian::write16le(Module.Data.data() +
                                 offsetof(fatlink_module, size),
                             sizeof(fatlink_module));
  put64(Module.Data, offsetof(fatlink_module, fatbin_size), Fatbin.size());
  put32(Module.Data, offsetof(fatlink_module, num_kernels), Sorted.size());
  if (any_of(Sorted, [](const KernelInfo *K) { return K->hasManifest(); }))
    put32(Module.Data, offsetof(fatlink_module, flags),
          FATLINK_MODULE_FLAG_MANIFEST);
  Module.Relocs.push_back({offsetof(fatlink_module, wrapper), WrapperSec, 0});
  Module.Relocs.push_back({offsetof(fatlink_module, fatbin), FatbinSec, 0});
  if (!Sorted.empty())
    Module.Relocs.push_back({offsetof(fatlink_module, kernels), KernelsSec, 0});

  ElfSymbol WrapperSym;
  WrapperSym.Name = wrapperSymbol(Fatbin);
  WrapperSym.Section = WrapperSec;
  WrapperSym.Size = sizeof(fatlink_fatbin_wrapper);
  WrapperSym.Weak = true;
  WrapperSym.Hidden = true;
  return writeRelocatableElf(Sections, Arch, {WrapperSym});
}

std::string fatlink::packager::wrapperSymbol(StringRef Fatbin) {
  BLAKE3Result<8> Hash = BLAKE3::hash<8>(arrayRefFromStringRef(Fatbin));
  return FATLINK_WRAPPER_SYMBOL_PREFIX +
         toHex(ArrayRef<uint8_t>(Hash), /*LowerCase=*/true);
}

Expected<HostArch> fatlink::packager::parseHostArch(StringRef TripleStr) {
  Triple T(TripleStr);
  switch (T.getArch()) {
  case Triple::x86_64:
    return HostArch::X86_64;
  case Triple::aarch64:
    return HostArch::AArch64;
  default:
    return createStringError("unsupported host arch '%s': fatlink writes "
                             "host objects for x86_64 and aarch64 "
                             "(--host-arch=x86_64 or --host-arch=aarch64)",
                             T.getArchName().str().c_str());
  }
}

StringRef fatlink::packager::paramKindName(uint8_t Kind) {
  switch (Kind) {
  case FATLINK_PARAM_SINT:
    return "sint";
  case FATLINK_PARAM_UINT:
    return "uint";
  case FATLINK_PARAM_INT:
    return "int";
  case FATLINK_PARAM_FLOAT:
    return "float";
  case FATLINK_PARAM_BF16:
    return "bf16";
  case FATLINK_PARAM_POINTER:
    return "pointer";
  case FATLINK_PARAM_AGGREGATE:
    return "aggregate";
  default:
    return "unknown";
  }
}

StringRef fatlink::packager::languageName(uint8_t Language) {
  switch (Language) {
  case FATLINK_LANGUAGE_RUST:
    return "Rust";
  case FATLINK_LANGUAGE_CUDA:
    return "CUDA C++";
  case FATLINK_LANGUAGE_C:
    return "C";
  default:
    return "unknown";
  }
}
