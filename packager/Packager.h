//===- packager/Packager.h - Device image containers ------------*- C++ -*-===//
//
// The packager turns device images into the containers that carry them:
// CUDA fatbins (written and read here, with optional zstd compression), host
// ELF objects that embed a fatbin together with a module descriptor a
// runtime can find (see Descriptor.h), and host ELF objects that carry device
// bitcode as LLVM OffloadBinaries, the way clang's new offload driver does.
// It also scans arbitrary files for embedded device code, for `inspect`.
//
// Every function is pure: bytes in, bytes out. Nothing here opens, writes or
// deletes files, prints, or keeps state between calls; errors come back as
// llvm::Error with a message that names the offending offset or value.
// Formats and offsets are documented in docs/packager.md.
//
//===----------------------------------------------------------------------===//

#ifndef FATLINK_PACKAGER_PACKAGER_H
#define FATLINK_PACKAGER_PACKAGER_H

#include "packager/Descriptor.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fatlink {
namespace packager {

//===----------------------------------------------------------------------===//
// Fatbin containers
//===----------------------------------------------------------------------===//

/// Kind field of a fatbin entry header. LtoIR is NVIDIA's LTO-IR (nvcc
/// `code=lto_NN` or `-dlto`), which only nvJitLink and nvlink read.
enum class ImageKind : uint16_t { PTX = 1, Cubin = 2, LtoIR = 8 };

/// Bits of a fatbin entry's 64-bit flags field (as CUDA 13's fatbinary
/// writes them; see docs/packager.md).
enum FatbinFlag : uint64_t {
  FlagAddress64 = 0x1,
  FlagDebug = 0x2,
  FlagHostLinux = 0x10,
  FlagLZ4 = 0x2000,
  FlagZstd = 0x8000,
  /// The compressed payload is obfuscated with a key that only NVIDIA's
  /// tools hold (nvcc's compressed LTO-IR): it cannot be decompressed, and
  /// the u64 at header offset 48 is nonzero (FatbinEntry::KeyWord).
  FlagObfuscated = 0x10000,
  FlagArchSpecific = 0x100000,      // sm_NNa
  FlagFamilySpecific = 0x200000,    // sm_NNf
  FlagCompatAttributes = 0x1000000, // header carries .nv.compat (SM >= 100)
};

/// A device image to put into a fatbin.
struct FatbinImage {
  ImageKind Kind = ImageKind::Cubin;
  std::string Arch; ///< "sm_80", "sm_90a", "sm_100f"
  unsigned Major = 0; ///< PTX ISA major; for a cubin, 1
  unsigned Minor = 0; ///< PTX ISA minor; for a cubin, its ELF ABI version
  std::string Data;   ///< the cubin, or the PTX text
  /// A cubin's `.nv.compat` attributes. For SM >= 100 fatbinary copies them
  /// into the entry header (flag 0x1000000), and so does writeFatbin.
  std::string Compat;
  /// The encoded entry, when the caller has already made it with
  /// encodeFatbinEntry (with the options it then gives writeFatbin).
  std::string Entry;
};

/// Identifies \p Data as a cubin (NVIDIA ELF) or PTX text and reads its
/// target and version from the image itself: for PTX, the `.version X.Y` and
/// `.target sm_NN[a|f]` directives; for a cubin, the SM from e_flags, the
/// version from the ELF ABI version, the `a` suffix from .nv.compat and the
/// `f` suffix from the ptxas command line in .note.nv.tkinfo.
llvm::Expected<FatbinImage> describeImage(llvm::StringRef Data);

/// True for a cubin that is a relocatable ELF (e_type ET_REL): nvcc -dc
/// or ptxas -c code, which nvlink must link before a GPU can load it.
bool isRelocatableCubin(llvm::StringRef Data);

/// What describeImage says of \p Data, without a copy of it (Data empty):
/// for a caller that keeps the bytes and gives them to encodeFatbinEntry.
llvm::Expected<FatbinImage> identifyImage(llvm::StringRef Data);

/// What fatbinary does to PTX before storing it: drops `//` and `/* */`
/// comments (not inside string literals), drops blanks at the start of a
/// line and shrinks every other run of blanks to its first character. Line
/// breaks are kept. Exposed so that tests and tools can compare PTX.
std::string minifyPtx(llvm::StringRef Ptx);

enum class Compression { None, Zstd };

struct FatbinOptions {
  /// The default gives the smallest output the CUDA 13 driver loads: every
  /// entry zstd-compressed (flag 0x8000, as fatbinary --compress-mode=size).
  Compression Compress = Compression::Zstd;
  /// zstd level, 1..22. 19 is the smallest measured (22 gains nothing on
  /// the images in docs/packager.md and is slower).
  int ZstdLevel = 19;
  /// Store PTX as fatbinary does (see minifyPtx); false stores it verbatim.
  bool MinifyPtx = true;
  /// An image larger than this many bytes is compressed by zstd's threads,
  /// ZstdWorkers of them (at least one), fed 4 MB at a time; a smaller one
  /// in one call on the caller's. The entry is the same for any number of
  /// workers, so a caller gives what is idle; the threshold changes it
  /// (tests lower it: device-link's hidden --zstd-threads-above).
  size_t ZstdThreadsAbove = 32 << 20;
  unsigned ZstdWorkers = 1;
};

/// The entry writeFatbin writes for \p Img: its header, then its payload,
/// compressed as \p Opts say. This is the costly part of writeFatbin (zstd
/// level 19); a caller that produces images in parallel can do it as each
/// is ready and keep the result in Img.Entry.
llvm::Expected<std::string> encodeFatbinEntry(const FatbinImage &Img,
                                              const FatbinOptions &Opts = {});

/// The entry of \p Payload, an image identifyImage described as \p Img
/// (whose Data is not read): a 100 MB cubin is compressed where it lies.
/// Up to 32 MB the entry is the one one-shot ZSTD_compress gives; a larger
/// cubin (Opts.ZstdThreadsAbove) is compressed by zstd's threads
/// (Opts.ZstdWorkers), fed 4 MB at a time (a valid zstd frame, a little
/// different, the same for any number of threads), and \p Read is told of each
/// piece of Payload once the entry no longer needs it, so that a caller whose
/// Payload is a mapped file can hand its pages back as they are read. A piece
/// may be told again (a payload that does not compress is copied whole).
llvm::Expected<std::string>
encodeFatbinEntry(const FatbinImage &Img, llvm::StringRef Payload,
                  const FatbinOptions &Opts = {},
                  llvm::function_ref<void(llvm::StringRef)> Read = {});

/// Writes one fatbin container holding \p Images. Entries are sorted by
/// (SM, arch, cubin before PTX) whatever the input order; two images of the
/// same kind and arch are an error. An entry is stored compressed only when
/// that makes it smaller.
llvm::Expected<std::string> writeFatbin(llvm::ArrayRef<FatbinImage> Images,
                                        const FatbinOptions &Opts = {});

/// One entry of a fatbin as read back.
struct FatbinEntry {
  uint64_t Offset = 0; ///< of the entry header, from the start of the input
  ImageKind Kind = ImageKind::Cubin;
  std::string Arch; ///< "sm_" + SM + suffix from the a/f flags
  unsigned SM = 0;
  unsigned Major = 0, Minor = 0;
  uint64_t Flags = 0;
  uint64_t HeaderSize = 0;
  uint64_t StoredSize = 0;       ///< payload bytes in the file (padded to 8)
  uint64_t UncompressedSize = 0; ///< from the header; 0 if not compressed
  std::string Identifier;        ///< fatbinary --ident, usually empty
  std::string Options;           ///< ptxas (PTX) or NVVM (LTO-IR) options
  /// The u64 at header offset 48: 0, except in an obfuscated entry, where
  /// it repeats the 32-bit word at offset 0x28 of the plain LTO-IR.
  uint64_t KeyWord = 0;
  /// The image: the decompressed bytes (exactly UncompressedSize) of a
  /// compressed entry, else the stored payload including its padding. An
  /// obfuscated entry (FlagObfuscated) cannot be decompressed: its Payload
  /// is the stored compressed bytes, and Encoded holds the entry.
  std::string Payload;
  /// Only for an obfuscated entry: its header and payload as stored, byte
  /// for byte, which fatbinOfEntry wraps into a container that NVIDIA's
  /// tools (nvJitLink, cuobjdump) read.
  std::string Encoded;
};

/// Reads every entry of the fatbin container(s) in \p Data. Several
/// containers may follow each other, as in a linked .nv_fatbin section,
/// with 8-byte words of zeros between them (cuobjdump's rule: see
/// docs/packager.md). Every size and offset is checked before use;
/// compressed payloads (zstd, LZ4) are decompressed when \p Decompress,
/// else their Payload is the compressed bytes as stored (without the
/// padding), for decompressFatbinPayload to decode when they are needed:
/// a listing needs only the headers, and a few bytes of zstd may declare
/// 4 GiB. An error in a compressed payload itself (it does not decode to
/// the bytes its header declares) carries std::errc::illegal_byte_sequence;
/// memory that cannot be had for it, std::errc::not_enough_memory; every
/// other error is in the container or an entry header, which the runtime's
/// reader (fatlink_rt_parse_fatbin) checks as well.
llvm::Expected<std::vector<FatbinEntry>> readFatbin(llvm::StringRef Data,
                                                    bool Decompress = true);

/// The image of a fatbin entry whose flags are \p Flags, from \p Stored,
/// its compressed bytes (as readFatbin leaves them without Decompress):
/// decompressed to exactly \p UncompressedSize bytes (zstd, LZ4), or
/// Stored itself when the entry is not compressed or obfuscated. At most
/// the first \p Max bytes are decoded and returned (a cubin's ELF header
/// says whether it is relocatable). \p EntryOff names the entry in errors,
/// which carry the error codes readFatbin's payload errors do.
llvm::Expected<std::string> decompressFatbinPayload(llvm::StringRef Stored,
                                                    uint64_t Flags,
                                                    uint64_t UncompressedSize,
                                                    uint64_t EntryOff,
                                                    uint64_t Max = UINT64_MAX);

/// A fatbin container (16-byte header) that holds exactly \p Encoded, one
/// entry as readFatbin found it (FatbinEntry::Encoded).
std::string fatbinOfEntry(llvm::StringRef Encoded);

//===----------------------------------------------------------------------===//
// Host objects
//===----------------------------------------------------------------------===//

enum class HostArch { X86_64, AArch64 };

/// The host object format for \p Triple, a target triple or just its arch
/// ("x86_64-unknown-linux-gnu", "aarch64"). Any arch but x86_64 and
/// aarch64 is an error naming it and the two that are written.
llvm::Expected<HostArch> parseHostArch(llvm::StringRef Triple);

/// A kernel entry point, recorded in the module descriptor.
/// A cubin kernel's resources, as `cuobjdump -res-usage` shows them, read
/// from the cubin's ELF (readCubinSymbols).
struct KernelResources {
  unsigned Registers = 0; ///< per thread: EIATTR_REGCOUNT, or sh_info >> 24
  /// Bytes of stack a thread needs, the kernel's frame and its callees':
  /// EIATTR_MIN_STACK_SIZE in .nv.info, else (relocatable cubins, whose
  /// calls are not resolved) its own frame, EIATTR_FRAME_SIZE, as
  /// cuobjdump -res-usage shows it. None (cuobjdump: UNKNOWN) when ptxas
  /// could not bound it (0xffffffff: recursion, indirect calls).
  std::optional<uint64_t> Stack = 0;
  /// Static shared bytes the kernel declares, as the driver reports them
  /// (CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES): .nv.shared.<kernel> less
  /// SharedReserved.
  uint64_t Shared = 0;
  /// The block's system-reserved shared memory at the start of
  /// .nv.shared.<kernel>, which executable cubins for sm_90 and newer hold
  /// (those that refer to .nv.reservedSmem.offset0: the value of
  /// .nv.reservedSmem.cap, 1 KB where the cubin has none). cuobjdump
  /// -res-usage's SHARED counts it; the driver's shared size does not.
  uint64_t SharedReserved = 0;
  uint64_t Local = 0;     ///< bytes: .nv.local.<kernel>
  uint64_t Constant0 = 0; ///< bank 0 bytes (parameters): .nv.constant0.<kernel>
  uint64_t CodeSize = 0;  ///< the kernel's bytes of code: .text.<kernel>
  /// __launch_bounds__ / .maxntid (EIATTR_MAX_THREADS) and .reqntid
  /// (EIATTR_REQNTID), x, y, z; all 0 when the kernel declares none.
  uint32_t MaxThreads[3] = {0, 0, 0};
  uint32_t ReqThreads[3] = {0, 0, 0};
};

/// One kernel parameter in the manifest (Descriptor.h, docs/abi.md).
struct ParamInfo {
  uint8_t Kind = FATLINK_PARAM_UNKNOWN;     ///< enum fatlink_param_kind
  uint8_t Flags = 0;                        ///< FATLINK_PARAM_CONST
  uint8_t AddrSpace = 0;                    ///< pointers
  uint8_t ElemKind = FATLINK_PARAM_UNKNOWN; ///< pointers, where known
  uint32_t Size = 0, Align = 0;
  uint32_t ElemSize = 0; ///< pointers: the pointee's bytes, 0 if not known
  std::string Type;      ///< in the defining input's language; "" unknown
  std::string Name;      ///< "" when not known
};

/// What the link knew of a kernel beyond its parameter sizes and origin
/// (KernelInfo has those): the manifest fatlink stores beside the fatbin,
/// with the origin. A kernel with no origin, no parameters described and
/// no language known gets none.
struct KernelManifest {
  uint8_t Language = FATLINK_LANGUAGE_UNKNOWN; ///< enum fatlink_language
  std::vector<ParamInfo> Params; ///< empty, or one per parameter
  uint32_t MaxThreads[3] = {0, 0, 0};
  uint32_t ReqThreads[3] = {0, 0, 0};
  uint32_t MinBlocks = 0;
  uint32_t Cluster[3] = {0, 0, 0};
};

/// "sint", "uint", "int", "float", "bf16", "pointer", "aggregate",
/// "unknown": an enum fatlink_param_kind in JSON and listings.
llvm::StringRef paramKindName(uint8_t Kind);
/// "Rust", "CUDA C++", "C", "unknown": an enum fatlink_language.
llvm::StringRef languageName(uint8_t Language);

struct KernelInfo {
  std::string Name;
  std::vector<uint32_t> ParamSizes; ///< bytes per parameter, in order
  /// The input that defined it ("libk.rlib(k.rcgu.o)"), where a link
  /// knows (fatlink's device link); empty otherwise.
  std::string Origin = {};
  /// Cubins only (PTX says no register counts).
  std::optional<KernelResources> Resources = std::nullopt;
  KernelManifest Manifest = {};
  /// Whether a manifest is written for it (see KernelManifest).
  bool hasManifest() const {
    return !Origin.empty() || !Manifest.Params.empty() ||
           Manifest.Language != FATLINK_LANGUAGE_UNKNOWN;
  }
};

class ByteWriter;
class ByteReader;

/// The kernel table as a Bytes.h record (KernelTable.cpp): every field of
/// each kernel but its resources. readKernels appends to Out and returns
/// false on a short or malformed record (counts above Limit included).
void writeKernels(ByteWriter &W, llvm::ArrayRef<KernelInfo> Kernels);
bool readKernels(ByteReader &R, size_t Limit, std::vector<KernelInfo> &Out);

/// A manifest's JSON attributes (inside the kernel's object, after its
/// language and origin): params (null when !ParamsKnown: only their sizes
/// are), max_threads,
/// req_threads, min_blocks, cluster. `device-link --json` and `inspect
/// --manifest --json` write the same.
void writeManifestJson(llvm::json::OStream &J, const KernelManifest &M,
                       bool ParamsKnown);

//===----------------------------------------------------------------------===//
// Symbols of cubins and PTX (Symbols.cpp)
//===----------------------------------------------------------------------===//

/// The global symbols a device code module defines and references, and its
/// kernels, sorted by name, each with its parameter sizes where the module
/// says them (empty otherwise).
struct ModuleSymbols {
  std::vector<std::string> Defined;
  /// References that must be defined somewhere.
  std::vector<std::string> Undefined;
  /// The functions among Undefined (cubins only: their symbols say it).
  std::vector<std::string> UndefinedFunctions;
  /// References that may stay undefined (cubins only): weak ones, which
  /// resolve to null (nvcc's sm_90 and newer cubins all reference `__UDT`,
  /// `__UFT` and `.nv.reservedSmem.offset0` so), and `extern __shared__`
  /// arrays, which are the block's dynamic shared memory.
  std::vector<std::string> OptionalUndefined;
  std::vector<std::string> Weak; ///< defined weak (cubins only)
  /// Entry functions, global or local: nvcc keeps a `static` or
  /// anonymous-namespace kernel a local symbol (`__nv_static_...`), which
  /// its host code registers like any other.
  std::vector<KernelInfo> Kernels;
};

/// The symbols of a cubin (relocatable or not): ELF global symbols;
/// kernels are the functions with STO_CUDA_ENTRY, their parameter sizes
/// from `.nv.info.<kernel>` (EIATTR_KPARAM_INFO). A file LLVM cannot read
/// as ELF is an error.
llvm::Expected<ModuleSymbols> readCubinSymbols(llvm::StringRef Cubin);

/// The symbols of a PTX module, from its directives (comments dropped):
/// `.visible`/`.weak` `.entry NAME(`, `.func (...) NAME(` definitions (a
/// body follows; a prototype ending in `;`, as the PTX linker writes
/// before each definition, defines nothing) and `.global`/`.const ...
/// NAME` define; `.extern` ones reference. `.entry` definitions, bare ones
/// too (nvcc's static and anonymous-namespace kernels, which define no
/// visible symbol), are the kernels, their parameter sizes from the
/// `.param` declarations of the list up to its `)`, on one line or many
/// (`.u64` 8, `.b8 name[24]` 24).
ModuleSymbols readPtxSymbols(llvm::StringRef Ptx);

/// Returns a relocatable ELF object for \p Arch that carries \p Fatbin in
/// .nv_fatbin, a __fatBinC_Wrapper_t pointing to it in .nvFatBinSegment, and
/// one fatlink_module descriptor (Descriptor.h) with the kernel table. Its
/// one named symbol is the wrapper's, wrapperSymbol(Fatbin), weak and
/// hidden, so any number of these objects link together.
llvm::Expected<std::string> writeHostObject(llvm::StringRef Fatbin,
                                            llvm::ArrayRef<KernelInfo> Kernels,
                                            HostArch Arch);

/// The name of the wrapper symbol writeHostObject defines for \p Fatbin:
/// FATLINK_WRAPPER_SYMBOL_PREFIX and 16 hex digits of the fatbin's BLAKE3
/// hash, so that host code generated for one device link (fatlink cc's
/// nvcc registration) names exactly that link's fatbin.
std::string wrapperSymbol(llvm::StringRef Fatbin);

/// A device bitcode module to embed.
struct OffloadImage {
  std::string Arch;                             ///< "sm_80"
  std::string Triple = "nvptx64-nvidia-cuda";
  std::string Bitcode;
  /// Where the bitcode came from ("libgpu_math-0.1.0.rlib(x.rcgu.o)"),
  /// stored as the string OriginKey so that the device link's diagnostics
  /// name it; none if empty.
  std::string Origin;
};

/// The OffloadBinary string fatlink embed stores an image's origin under.
inline constexpr const char OriginKey[] = "fatlink.origin";

/// Returns a relocatable ELF object for \p Arch whose .llvm.offloading
/// section (SHT_LLVM_OFFLOADING, SHF_EXCLUDE) holds one OffloadBinary
/// (IMG_Bitcode, OFK_Cuda, strings triple and arch, and OriginKey when the
/// image has an origin) per image, as clang --offload-new-driver objects do.
llvm::Expected<std::string>
writeOffloadObject(llvm::ArrayRef<OffloadImage> Images, HostArch Arch);

//===----------------------------------------------------------------------===//
// Reading kernel manifests back (Manifest.cpp)
//===----------------------------------------------------------------------===//

/// A kernel of a module descriptor as read back from a file.
struct ManifestKernel {
  /// Name, parameter sizes and, where the kernel has a manifest of a
  /// version this fatlink reads, its origin and Manifest.
  KernelInfo Info;
  /// The manifest's version: 0 when the kernel has none (nvcc's kernels,
  /// modules written before manifests), FATLINK_MANIFEST_VERSION when read,
  /// anything else when it is newer than this fatlink (Info has no manifest).
  uint16_t ManifestVersion = 0;
};

/// One fatlink module descriptor (Descriptor.h) found in a file.
struct ModuleManifest {
  std::string Origin; ///< "libk.a(k.o)", or the file name
  uint64_t Offset = 0; ///< of the descriptor in its fatlink_modules section
  uint16_t Version = 0;
  uint16_t Size = 0;
  /// Whether this fatlink reads the descriptor (its version and size are
  /// FATLINK_MODULE_VERSION and 48); if not, nothing below is filled in.
  bool Known = false;
  uint32_t Flags = 0; ///< FATLINK_MODULE_FLAG_*
  uint64_t FatbinSize = 0;
  std::vector<ManifestKernel> Kernels; ///< in table order (by name)
  bool hasManifest() const { return Flags & FATLINK_MODULE_FLAG_MANIFEST; }
};

/// Reads every fatlink module descriptor, its kernel table and the
/// kernels' manifests from \p Data: a host object fatlink wrote (its
/// pointers are relocations), a relocatable object `ld -r` made of several,
/// a linked executable or shared library (pointers are addresses, or
/// R_*_RELATIVE dynamic relocations), or an ar archive of those. \p Name
/// names the file in origins and messages. Every offset, pointer and string
/// is checked against its section; a corrupt descriptor or table is an
/// error naming the file, the section and the offset. A file with no
/// fatlink_modules section gives an empty list; a file that is not a
/// 64-bit little-endian ELF file or an archive is an error.
llvm::Expected<std::vector<ModuleManifest>>
readModuleManifests(llvm::StringRef Data, llvm::StringRef Name);

//===----------------------------------------------------------------------===//
// Scanning
//===----------------------------------------------------------------------===//

/// A device image found inside some file.
struct EmbeddedImage {
  enum class ContainerKind { Fatbin, OffloadBinary };
  ContainerKind Container = ContainerKind::Fatbin;
  std::string Origin;  ///< "libfoo.a(bar.o)", or the file name
  std::string Section; ///< ".nv_fatbin", ".llvm.offloading"; "" for a bare file
  uint64_t Offset = 0; ///< of the fatbin entry / OffloadBinary in the section
  std::string Kind;    ///< "cubin", "ptx", "lto-ir"; OffloadBinary: "bc", ...
  std::string Arch;    ///< "sm_80"
  std::string Triple;  ///< OffloadBinary only
  /// OffloadBinary only: the origin fatlink embed recorded (OriginKey).
  std::string EmbeddedOrigin;
  uint64_t Flags = 0;  ///< fatbin entry flags
  unsigned Major = 0, Minor = 0; ///< fatbin entries only
  uint64_t StoredSize = 0; ///< bytes in the file (fatbin: padded payload)
  /// The (decompressed) image. For an obfuscated fatbin entry
  /// (FlagObfuscated), which cannot be decompressed, a fatbin container
  /// holding just that entry as stored (fatbinOfEntry). When Compressed,
  /// the entry's compressed bytes: decompressImage decodes them.
  std::string Data;
  /// Data is still compressed (scanFile without Decompress): it decodes to
  /// UncompressedSize bytes, which the entry header declares.
  bool Compressed = false;
  uint64_t UncompressedSize = 0; ///< fatbin entries: from the header
  /// A cubin that is a relocatable ELF (ET_REL: nvcc -dc, -rdc=true), to
  /// be linked by nvlink before it loads; false for a linked one.
  bool Relocatable = false;
  /// Where the entry comes from in an ELF relocatable object (a host .o):
  /// nvcc's module id (section __nv_module_id) for entries in
  /// __nv_relfatbin, which `nvcc -dlink` (or fatlink) must link and
  /// register through __cudaRegisterLinkedBinary_<module id>; empty
  /// otherwise.
  std::string ModuleId;
  /// An entry in the .nv_fatbin section of a relocatable object: complete
  /// device code that the object registers itself (nvcc -c without -rdc,
  /// or a fatlink host object).
  bool WholeProgram = false;
  std::string Options; ///< a fatbin entry's ptxas or NVVM options
};

/// Finds every fatbin entry (in .nv_fatbin or __nv_relfatbin sections, or a
/// bare fatbin) and every OffloadBinary (.llvm.offloading sections, or a bare
/// one) in \p Data, which may be a fatbin, an OffloadBinary, an ELF object,
/// executable or shared library, or an ar archive of those (not a thin
/// one: its members are paths, and nothing here opens files). \p Name
/// names the file in origins. The result is in file order. Archives,
/// sections and OffloadBinaries are read by intake/ (intake/Intake.h),
/// with its checks.
/// Compressed fatbin entries are decompressed when \p Decompress; else
/// they are left Compressed (only the first bytes of a cubin are decoded,
/// to tell a relocatable one), so that the images of a file take no more
/// memory than the file, whatever sizes its headers declare.
llvm::Expected<std::vector<EmbeddedImage>>
scanFile(llvm::StringRef Data, llvm::StringRef Name, bool Decompress = true);

/// Decompresses \p Img in place when it is Compressed. Errors name its
/// origin, section and entry offset.
llvm::Error decompressImage(EmbeddedImage &Img);

} // namespace packager
} // namespace fatlink

#endif // FATLINK_PACKAGER_PACKAGER_H
