//===- linker/Inspect.cpp - The `fatlink inspect` command -----------------===//
//
// What `cuobjdump --list-elf --list-ptx --extract-*` does, for every
// container of GPU code fatlink knows: bare fatbins, host objects, static
// archives, executables and shared libraries from nvcc, clang (old and new
// offload driver), fatbinary and fatlink itself; and, as cuobjdump does, a
// bare cubin or PTX file, one image. The passes:
//
//   parse options -> Config
//   scan files    -> every fatbin entry and OffloadBinary, in file order
//                    (packager::scanFile), headers only: compressed
//                    entries stay compressed; a broken file is reported
//                    with its name and offset, and the next file is still
//                    read
//   name entries  -> <file>.<index>.<arch>.<ext>, index counted over the
//                    whole command line, so names are unique and stable
//   read images   -> only for --kernels, --resources, --json, --extract:
//                    one entry at a time, decompressed, its kernels read,
//                    its file staged, its bytes dropped before the next
//   extract       -> all files or none, each renamed into place
//   report        -> an aligned table, or JSON for scripts
//
// Sizes: "stored" is what the entry takes in the file (a fatbin payload
// with its padding, compressed or not); "size" is the image as extracted:
// decompressed, a PTX text without its terminating NUL, a cubin without
// the container's padding; an obfuscated LTO-IR entry, which nobody but
// NVIDIA's tools can decompress, is extracted as a fatbin of its own. A
// plain listing decompresses nothing (a few KB of zstd may declare
// gigabytes): a compressed entry's size is what its header declares, less
// a PTX text's NUL.
//
// --manifest lists something else: the module descriptors fatlink wrote
// and the kernel manifests in them (packager::readModuleManifests), as
// text or --json (docs/abi.md, "Listing the manifest").
//
// nvcc's kinds of device code are told apart: a "cubin" is linked, a
// "relocatable-cubin" (nvcc -dc) still needs nvlink, "lto-ir" needs
// nvJitLink; the module column names the nvcc module (__nv_module_id) of
// an entry in __nv_relfatbin, or says "whole-program" for an object's
// .nv_fatbin (nvcc -c, fatlink host objects), which registers itself.
//
//===----------------------------------------------------------------------===//

#include "linker/Context.h"
#include "linker/Linker.h"
#include "linker/Options.h"
#include "packager/Packager.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/BinaryFormat/ELF.h"
#include "llvm/BinaryFormat/Magic.h"
#include "llvm/Demangle/Demangle.h"
#include "llvm/Option/Arg.h"
#include "llvm/Option/ArgList.h"
#include "llvm/Option/OptTable.h"
#include "llvm/Option/Option.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/TimeProfiler.h"

#include <tuple>

using namespace llvm;

namespace fatlink {

//===----------------------------------------------------------------------===//
// Options
//===----------------------------------------------------------------------===//

namespace {

#define FATLINK_OPTIONS_INC "linker/InspectOptions.inc"
#include "linker/CommandOptTable.inc"

struct Config {
  std::vector<std::string> Inputs;
  std::string ExtractDir; // empty: no extraction
  bool Json = false;
  bool Kernels = false; // --kernels: the kernel table instead of the entries
  bool Resources = false; // --resources: the resource table instead
  bool Manifest = false;  // --manifest: the module descriptors instead
};

/// One image found, with what the report shows about it.
struct Entry {
  std::string File; ///< the input path it was found in
  packager::EmbeddedImage Image;
  bool Bare = false; ///< the file is the image: a cubin or PTX (bareImage)
  std::string Kind;        ///< "cubin", "ptx", "bitcode", ...
  std::string Version;     ///< "8.0" for PTX ISA 8.0; "" when none
  std::string Compression; ///< "none", "zstd", "lz4", "zstd,obfuscated"
  std::string Module;      ///< nvcc module id, "whole-program", or ""
  std::string Arch;        ///< "sm_90" for code, "compute_90" for PTX
  /// The size of the image as extracted; while a compressed entry has not
  /// been decompressed (a listing), what its header declares.
  uint64_t Size = 0;
  std::string Name;        ///< the file name --extract writes
  /// The kernels of a cubin or PTX entry, sorted by name; none for other
  /// kinds and for cubins LLVM cannot read as ELF.
  std::optional<std::vector<packager::KernelInfo>> Kernels;
};

} // namespace

static Expected<Config> parseConfig(Context &Ctx,
                                    const opt::InputArgList &Args) {
  Config C;
  for (const opt::Arg *A : Args.filtered(OPT_INPUT))
    C.Inputs.push_back(A->getValue());
  C.ExtractDir = Args.getLastArgValue(OPT_extract_EQ).str();
  C.Json = Args.hasArg(OPT_json);
  C.Kernels = Args.hasArg(OPT_kernels);
  C.Resources = Args.hasArg(OPT_resources);
  C.Manifest = Args.hasArg(OPT_manifest);
  Ctx.Verbose = Args.hasArg(OPT_verbose);
  if (C.Inputs.empty())
    return createStringError(inconvertibleErrorCode(), "no input files");
  if (Args.hasArg(OPT_extract_EQ) && C.ExtractDir.empty())
    return createStringError(inconvertibleErrorCode(),
                             "--extract needs a directory");
  if (C.Manifest && (C.Kernels || C.Resources || !C.ExtractDir.empty()))
    return createStringError(inconvertibleErrorCode(),
                             "--manifest lists the module descriptors alone: "
                             "leave out --kernels, --resources and --extract");
  return C;
}

//===----------------------------------------------------------------------===//
// Describing entries
//===----------------------------------------------------------------------===//

/// A cubin's ELF extent, when its header is readable: a fatbin pads the
/// payload to 8 bytes, and the extracted cubin should not carry that.
static StringRef trimCubin(StringRef Data) {
  using namespace support::endian;
  if (Data.size() < 64 || !Data.starts_with("\x7f"
                                            "ELF\x02\x01"))
    return Data;
  uint64_t End = 64;
  // (table offset field, entry size field, count field) of the section
  // and program header tables.
  for (auto [OffAt, SizeAt, CountAt] :
       {std::tuple(0x28, 0x3a, 0x3c), std::tuple(0x20, 0x36, 0x38)}) {
    uint64_t Off = read64le(Data.data() + OffAt);
    uint64_t Len = uint64_t(read16le(Data.data() + SizeAt)) *
                   read16le(Data.data() + CountAt);
    if (Off > Data.size() || Len > Data.size() - Off)
      return Data;
    if (Len)
      End = std::max(End, Off + Len);
  }
  StringRef Tail = Data.drop_front(End);
  if (Tail.find_first_not_of('\0') != StringRef::npos)
    return Data; // something past the tables: keep every byte
  return Data.take_front(End);
}

static StringRef bytesOf(const Entry &E);

/// Fills in what the report shows about E from its headers alone: a
/// compressed entry is not decompressed here (readBytes does it), and its
/// size is what its header declares, less the NUL that ends a PTX text.
static void describe(Entry &E) {
  using packager::EmbeddedImage;
  const EmbeddedImage &I = E.Image;
  if (I.Container == EmbeddedImage::ContainerKind::Fatbin) {
    E.Kind = I.Relocatable ? "relocatable-cubin" : I.Kind;
    E.Version = (Twine(I.Major) + "." + Twine(I.Minor)).str();
    E.Compression = I.Flags & packager::FlagZstd  ? "zstd"
                    : I.Flags & packager::FlagLZ4 ? "lz4"
                                                  : "none";
    if (I.Flags & packager::FlagObfuscated)
      E.Compression += ",obfuscated";
    E.Module = I.WholeProgram ? "whole-program" : I.ModuleId;
  } else {
    // OffloadBinary image kinds, by their LLVM names.
    E.Kind = StringSwitch<std::string>(I.Kind)
                 .Case("o", "object")
                 .Case("bc", "bitcode")
                 .Case("s", "ptx")
                 .Case("spv", "spirv")
                 .Default(I.Kind);
    E.Compression = "none";
  }
  // PTX is for a virtual arch: compute_90 (cuobjdump says sm_90, and its
  // file names, which --extract keeps, do too).
  E.Arch = I.Arch;
  if (E.Kind == "ptx" && StringRef(E.Arch).starts_with("sm_"))
    E.Arch = "compute_" + E.Arch.substr(3);
  if (I.Compressed)
    E.Size = I.UncompressedSize - (E.Kind == "ptx" && I.UncompressedSize);
  else
    E.Size = bytesOf(E).size();
}

/// The image as extracted: a PTX text without its NUL, a cubin without
/// the container's padding. Image.Data must be decompressed.
static StringRef bytesOf(const Entry &E) {
  StringRef Bytes = E.Image.Data;
  if (E.Kind == "ptx")
    return Bytes.rtrim('\0');
  if (E.Kind == "cubin" || E.Kind == "relocatable-cubin")
    return trimCubin(Bytes);
  return Bytes;
}

/// The kernels of E's image (cubin, PTX), its bytes given.
static void readKernels(Entry &E, StringRef Bytes) {
  if (E.Kind == "ptx") {
    E.Kernels = packager::readPtxSymbols(Bytes).Kernels;
  } else if (E.Kind == "cubin" || E.Kind == "relocatable-cubin") {
    if (Expected<packager::ModuleSymbols> S = packager::readCubinSymbols(Bytes))
      E.Kernels = std::move(S->Kernels);
    else
      consumeError(S.takeError()); // listed all the same, without kernels
  }
}

/// The extension an extracted image gets.
static StringRef extensionOf(const Entry &E) {
  if (E.Image.Flags & packager::FlagObfuscated)
    return "ltoir.fatbin"; // the entry in a container of its own
  return StringSwitch<StringRef>(E.Kind)
      .Case("bitcode", "bc")
      .Case("object", "o")
      .Case("relocatable-cubin", "cubin")
      .Case("lto-ir", "ltoir")
      .Case("spirv", "spv")
      .Default(E.Kind);
}

//===----------------------------------------------------------------------===//
// Passes
//===----------------------------------------------------------------------===//

/// An image's arch goes into the name --extract writes (and onto the
/// terminal): an OffloadBinary's is any string its file holds, so
/// `x/../../escaped` would write outside the directory. Only a name of
/// letters, digits, `_`, `.` and `-`, without `..`, is taken; the first
/// other one is an error naming the file, the image and the arch
/// (escaped).
static Error checkArchNames(ArrayRef<packager::EmbeddedImage> Images) {
  for (const packager::EmbeddedImage &I : Images) {
    StringRef Arch = I.Arch;
    if (all_of(Arch,
               [](char C) {
                 return isAlnum(C) || C == '_' || C == '.' || C == '-';
               }) &&
        !Arch.contains(".."))
      continue;
    std::string Escaped;
    raw_string_ostream OS(Escaped);
    printEscapedString(Arch, OS);
    return createStringError(
        inconvertibleErrorCode(),
        "%s%s%s offset %llu: image arch '%s' is not a GPU arch name (only "
        "letters, digits, '_', '.' and '-', no '..'): the file is corrupt or "
        "was not written for CUDA",
        I.Origin.c_str(), I.Section.empty() ? "" : " section ",
        I.Section.c_str(), (unsigned long long)I.Offset, Escaped.c_str());
  }
  return Error::success();
}

/// Files reported broken before inspect stops reading (as lld caps errors).
static constexpr unsigned MaxBrokenFiles = 20;

/// Scans every file; a file that cannot be read is reported and the next
/// one is still scanned, so one run shows every broken input (up to
/// MaxBrokenFiles).
/// A bare device image, as cuobjdump takes one: a cubin (an ELF file for
/// EM_CUDA: `ptxas -o`, `nvcc -cubin`, a file --extract wrote) or PTX text
/// (`.version` and `.target` before any other directive). std::nullopt
/// for any other file, which packager::scanFile reads (or refuses); an
/// error for a cubin whose ELF is broken.
static Expected<std::optional<packager::EmbeddedImage>>
bareImage(StringRef Data, StringRef Path) {
  bool Elf = Data.starts_with("\x7f"
                              "ELF");
  if (Elf) {
    if (Data.size() < 20 ||
        support::endian::read16le(Data.data() + 18) != ELF::EM_CUDA)
      return std::nullopt;
  } else if (identify_magic(Data) != file_magic::unknown ||
             !Data.contains(".target")) {
    // (A fatbin is unknown to LLVM too; PTX has no NUL, and
    // identifyImage refuses it.)
    return std::nullopt;
  }
  Expected<packager::FatbinImage> Img = packager::identifyImage(Data);
  if (!Img) {
    if (Elf)
      return createFileError(Path, Img.takeError());
    consumeError(Img.takeError()); // not PTX after all
    return std::nullopt;
  }
  packager::EmbeddedImage I;
  I.Origin = Path.str();
  I.Kind = Img->Kind == packager::ImageKind::PTX ? "ptx" : "cubin";
  I.Arch = Img->Arch;
  I.Major = Img->Major;
  I.Minor = Img->Minor;
  I.StoredSize = Data.size();
  I.Data = Data.str();
  I.Relocatable = Elf && packager::isRelocatableCubin(Data);
  return I;
}

static std::vector<Entry> scanFiles(Context &Ctx, const Config &C) {
  TimeTraceScope Scope("Scan files");
  std::vector<Entry> Entries;
  unsigned Broken = 0;
  for (const std::string &Path : C.Inputs) {
    if (Broken == MaxBrokenFiles) {
      Ctx.error("too many broken files, the first " + Twine(MaxBrokenFiles) +
                " shown");
      break;
    }
    Expected<std::unique_ptr<MemoryBuffer>> MBOrErr = readInputFile(Path);
    if (!MBOrErr) {
      Ctx.error(MBOrErr.takeError());
      ++Broken;
      continue;
    }
    Expected<std::optional<packager::EmbeddedImage>> Bare =
        bareImage((*MBOrErr)->getBuffer(), Path);
    if (!Bare) {
      Ctx.error(Bare.takeError());
      ++Broken;
      continue;
    }
    if (*Bare) {
      Entries.push_back({Path, std::move(**Bare), /*Bare=*/true});
      continue;
    }
    // The headers only: compressed entries stay compressed until an
    // image is needed (readImages), one at a time.
    Expected<std::vector<packager::EmbeddedImage>> Images =
        packager::scanFile((*MBOrErr)->getBuffer(), Path,
                           /*Decompress=*/false);
    if (!Images) {
      Ctx.error(Images.takeError());
      ++Broken;
      continue;
    }
    Ctx.verbose(Path + ": " + Twine(Images->size()) + " image" +
                (Images->size() == 1 ? "" : "s"));
    if (Error E = checkArchNames(*Images)) {
      Ctx.error(std::move(E));
      ++Broken;
      continue;
    }
    for (packager::EmbeddedImage &I : *Images)
      Entries.push_back({Path, std::move(I)});
  }
  // From here on, the list of entries is fixed.
  for (auto [Index, E] : enumerate(Entries)) {
    describe(E);
    E.Name = (sys::path::filename(E.File) + "." + Twine(Index) + "." +
              (E.Image.Arch.empty() ? "noarch" : E.Image.Arch) + "." +
              extensionOf(E))
                 .str();
  }
  return Entries;
}

/// What --kernels, --resources, --json and --extract need of the images,
/// read one entry at a time: a compressed entry is decompressed, its
/// kernels read and its file staged (\p Staged, when extracting), and its
/// decompressed bytes are dropped before the next, so that inspect holds
/// one image at a time, whatever the headers declare. An entry that does
/// not decompress is reported, and the next one still read.
static void readImages(Context &Ctx, const Config &C,
                       MutableArrayRef<Entry> Entries,
                       std::vector<StagedFile> &Staged) {
  TimeTraceScope Scope("Read images");
  for (Entry &E : Entries) {
    if (Ctx.errorCount() == MaxBrokenFiles)
      return;
    bool Decompressed = E.Image.Compressed;
    if (Error Err = packager::decompressImage(E.Image)) {
      Ctx.error(std::move(Err));
      continue;
    }
    StringRef Bytes = bytesOf(E);
    E.Size = Bytes.size();
    if (C.Kernels || C.Resources || C.Json)
      readKernels(E, Bytes);
    if (!C.ExtractDir.empty() && !Ctx.errorCount()) {
      SmallString<256> Path(C.ExtractDir);
      sys::path::append(Path, E.Name);
      Expected<StagedFile> S = StagedFile::create(Path, Bytes);
      if (!S)
        Ctx.error(S.takeError());
      else
        Staged.push_back(std::move(*S));
    }
    if (Decompressed)
      std::string().swap(E.Image.Data);
  }
}

/// Makes the --extract directory, before anything is staged in it.
static Error makeExtractDir(const Config &C) {
  if (sys::fs::exists(C.ExtractDir) && !sys::fs::is_directory(C.ExtractDir))
    return createStringError(inconvertibleErrorCode(),
                             "--extract=%s: exists and is not a directory",
                             C.ExtractDir.c_str());
  // Modes as mkdir -p gives them (0777 less the umask), like the files'.
  if (std::error_code EC = sys::fs::create_directories(
          C.ExtractDir, /*IgnoreExisting=*/true, sys::fs::all_all))
    return createStringError(EC, "cannot create directory %s: %s",
                             C.ExtractDir.c_str(), EC.message().c_str());
  return Error::success();
}

/// Renames every staged entry into place: all files or none, since each
/// was written to a temporary beside its destination first.
static Error extract(Context &Ctx, MutableArrayRef<StagedFile> Staged) {
  TimeTraceScope Scope("Extract");
  for (StagedFile &S : Staged) {
    std::string Path = S.path().str();
    if (Error Err = S.commit())
      return Err;
    Ctx.verbose("wrote " + Path);
  }
  return Error::success();
}

/// Prints \p Rows (the first is the header) as aligned columns; the columns
/// in \p Numbers are right-aligned, the last is not padded.
static void printRows(Context &Ctx, ArrayRef<std::vector<std::string>> Rows,
                      ArrayRef<size_t> Numbers) {
  std::vector<size_t> Width(Rows[0].size());
  for (const auto &Row : Rows)
    for (size_t Col = 0; Col != Row.size(); ++Col)
      Width[Col] = std::max(Width[Col], Row[Col].size());
  for (const auto &Row : Rows) {
    std::string Line;
    for (size_t Col = 0; Col != Row.size(); ++Col) {
      bool Number = is_contained(Numbers, Col);
      size_t Pad = Width[Col] - Row[Col].size();
      if (Number)
        Line.append(Pad, ' ');
      Line += Row[Col];
      if (Col + 1 != Row.size())
        Line.append(Number ? 2 : Pad + 2, ' ');
    }
    Ctx.Out << Line << "\n";
  }
}

static void printTable(Context &Ctx, ArrayRef<Entry> Entries) {
  // The module column only when some entry has one (nvcc objects, host
  // objects), so listings of fatbins and executables stay as narrow.
  bool ShowModule =
      any_of(Entries, [](const Entry &E) { return !E.Module.empty(); });
  std::vector<std::vector<std::string>> Rows;
  Rows.push_back({"origin", "section", "kind", "arch", "version", "stored",
                  "size", "compression"});
  if (ShowModule)
    Rows.back().push_back("module");
  Rows.back().push_back("name");
  for (const Entry &E : Entries) {
    const packager::EmbeddedImage &I = E.Image;
    auto OrDash = [](StringRef S) { return S.empty() ? "-" : S.str(); };
    Rows.push_back({I.Origin, OrDash(I.Section), E.Kind, OrDash(E.Arch),
                    OrDash(E.Version), std::to_string(I.StoredSize),
                    std::to_string(E.Size), E.Compression});
    if (ShowModule)
      Rows.back().push_back(OrDash(E.Module));
    Rows.back().push_back(E.Name);
  }
  printRows(Ctx, Rows, {5, 6});
}

/// --kernels: one row per kernel of every cubin and PTX entry, with its
/// parameter sizes in bytes ("-" where the entry does not say them).
static void printKernelTable(Context &Ctx, ArrayRef<Entry> Entries) {
  std::vector<std::vector<std::string>> Rows;
  Rows.push_back({"name", "arch", "kernel", "params"});
  for (const Entry &E : Entries) {
    if (!E.Kernels)
      continue;
    for (const packager::KernelInfo &K : *E.Kernels) {
      std::string Params = "-";
      if (!K.ParamSizes.empty())
        Params = join(map_range(K.ParamSizes,
                                [](uint32_t N) { return std::to_string(N); }),
                      ",");
      Rows.push_back({E.Name, E.Arch, K.Name, Params});
    }
  }
  if (Rows.size() == 1) {
    Ctx.Out << "no kernels found\n";
    return;
  }
  printRows(Ctx, Rows, {});
}

/// "256x1x1" for declared block dimensions; "-" for none.
static std::string dims(const uint32_t (&D)[3]) {
  if (!D[0] && !D[1] && !D[2])
    return "-";
  return std::to_string(D[0]) + "x" + std::to_string(D[1]) + "x" +
         std::to_string(D[2]);
}

/// --resources: one row per kernel of every cubin, with what the cubin says
/// it uses (packager::KernelResources). Spills are not in a cubin (ptxas
/// prints them, `device-link --json` reports them): "-", unknown.
static void printResourceTable(Context &Ctx, ArrayRef<Entry> Entries) {
  std::vector<std::vector<std::string>> Rows;
  Rows.push_back({"name", "arch", "kernel", "regs", "stack", "spill-st",
                  "spill-ld", "shared", "reserved", "local", "const0", "code",
                  "maxntid", "reqntid"});
  for (const Entry &E : Entries) {
    if (!E.Kernels)
      continue;
    for (const packager::KernelInfo &K : *E.Kernels) {
      if (!K.Resources)
        continue;
      const packager::KernelResources &R = *K.Resources;
      Rows.push_back({E.Name, E.Arch, K.Name, std::to_string(R.Registers),
                      R.Stack ? std::to_string(*R.Stack) : "-", "-", "-",
                      std::to_string(R.Shared),
                      std::to_string(R.SharedReserved), std::to_string(R.Local),
                      std::to_string(R.Constant0), std::to_string(R.CodeSize),
                      dims(R.MaxThreads), dims(R.ReqThreads)});
    }
  }
  if (Rows.size() == 1) {
    Ctx.Out << "no cubin kernels found\n";
    return;
  }
  printRows(Ctx, Rows, {3, 4, 5, 6, 7, 8, 9, 10, 11});
}

static void printJson(Context &Ctx, const Config &C, ArrayRef<Entry> Entries) {
  json::OStream J(Ctx.Out, 2);
  J.array([&] {
    for (const Entry &E : Entries) {
      const packager::EmbeddedImage &I = E.Image;
      bool IsFatbin =
          I.Container == packager::EmbeddedImage::ContainerKind::Fatbin;
      J.object([&] {
        J.attribute("file", E.File);
        J.attribute("origin", I.Origin);
        J.attribute("section", I.Section);
        J.attribute("container", E.Bare     ? "none"
                                 : IsFatbin ? "fatbin"
                                            : "offload-binary");
        J.attribute("offset", int64_t(I.Offset));
        J.attribute("kind", E.Kind);
        J.attribute("arch", E.Arch);
        if (!IsFatbin)
          J.attribute("triple", I.Triple);
        J.attribute("version", E.Version.empty() ? json::Value(nullptr)
                                                 : json::Value(E.Version));
        J.attribute("flags", int64_t(I.Flags));
        J.attribute("stored_size", int64_t(I.StoredSize));
        J.attribute("size", int64_t(E.Size));
        J.attribute("compression", E.Compression);
        if (IsFatbin) {
          J.attribute("obfuscated", bool(I.Flags & packager::FlagObfuscated));
          J.attribute("options", I.Options);
          J.attribute("module", I.ModuleId.empty() ? json::Value(nullptr)
                                                   : json::Value(I.ModuleId));
          J.attribute("whole_program", I.WholeProgram);
        }
        J.attribute("name", E.Name);
        if (E.Kernels)
          J.attributeArray("kernels", [&] {
            for (const packager::KernelInfo &K : *E.Kernels)
              J.object([&] {
                J.attribute("name", K.Name);
                J.attributeArray("param_sizes", [&] {
                  for (uint32_t Size : K.ParamSizes)
                    J.value(int64_t(Size));
                });
                if (!K.Resources)
                  return;
                const packager::KernelResources &R = *K.Resources;
                auto Dims = [&](const char *Key, const uint32_t(&D)[3]) {
                  if (!D[0] && !D[1] && !D[2])
                    return J.attribute(Key, nullptr);
                  J.attributeArray(Key, [&] {
                    for (uint32_t X : D)
                      J.value(int64_t(X));
                  });
                };
                J.attributeObject("resources", [&] {
                  J.attribute("registers", int64_t(R.Registers));
                  J.attribute("stack", R.Stack ? json::Value(int64_t(*R.Stack))
                                               : json::Value(nullptr));
                  // Not in a cubin: device-link --json reports them.
                  J.attribute("spill_stores", nullptr);
                  J.attribute("spill_loads", nullptr);
                  J.attribute("shared", int64_t(R.Shared));
                  J.attribute("shared_reserved", int64_t(R.SharedReserved));
                  J.attribute("local", int64_t(R.Local));
                  J.attribute("constant0", int64_t(R.Constant0));
                  J.attribute("code_size", int64_t(R.CodeSize));
                  Dims("max_threads", R.MaxThreads);
                  Dims("required_threads", R.ReqThreads);
                });
              });
          });
        else
          J.attribute("kernels", nullptr);
        if (!C.ExtractDir.empty()) {
          SmallString<256> Path(C.ExtractDir);
          sys::path::append(Path, E.Name);
          J.attribute("extracted", Path.str());
        }
      });
    }
  });
  Ctx.Out << "\n";
}

//===----------------------------------------------------------------------===//
// --manifest: the module descriptors and kernel manifests
//===----------------------------------------------------------------------===//

/// "256x4x1", "256" when y and z are not declared (0).
static std::string dims3(const uint32_t (&D)[3]) {
  std::string S = std::to_string(D[0]);
  if (D[1] || D[2])
    S += "x" + std::to_string(D[1]);
  if (D[2])
    S += "x" + std::to_string(D[2]);
  return S;
}

static StringRef addrSpaceName(uint8_t AS) {
  switch (AS) {
  case FATLINK_ADDRSPACE_GENERIC:
    return "generic";
  case FATLINK_ADDRSPACE_GLOBAL:
    return "global";
  case FATLINK_ADDRSPACE_SHARED:
    return "shared";
  case FATLINK_ADDRSPACE_CONSTANT:
    return "constant";
  case FATLINK_ADDRSPACE_LOCAL:
    return "local";
  default:
    return "";
  }
}

/// A pointer parameter's element: "const float, 4 bytes", "unknown".
static std::string elementOf(const packager::ParamInfo &P) {
  std::string S = P.Flags & FATLINK_PARAM_CONST ? "const " : "";
  if (P.ElemKind == FATLINK_PARAM_UNKNOWN && !P.ElemSize)
    return S + "unknown";
  S += packager::paramKindName(P.ElemKind).str();
  if (P.ElemSize)
    S += ", " + std::to_string(P.ElemSize) + " bytes";
  return S;
}

static void printManifestText(Context &Ctx, StringRef File,
                              ArrayRef<packager::ModuleManifest> Modules) {
  raw_ostream &OS = Ctx.Out;
  if (Modules.empty()) {
    OS << File << ": no fatlink module descriptor\n";
    return;
  }
  for (const packager::ModuleManifest &M : Modules) {
    OS << "module " << M.Origin << ", " << FATLINK_MODULES_SECTION << "+0x"
       << utohexstr(M.Offset, true) << ": ";
    if (!M.Known) {
      OS << "descriptor version " << M.Version << " (" << M.Size
         << " bytes), which this fatlink does not read\n";
      continue;
    }
    OS << M.Kernels.size() << (M.Kernels.size() == 1 ? " kernel" : " kernels")
       << (M.hasManifest() ? ", manifest\n"
                           : ", no manifest (written before manifests, or "
                             "kernels from nvcc only)\n");
    for (const packager::ManifestKernel &MK : M.Kernels) {
      const packager::KernelInfo &K = MK.Info;
      OS << "kernel " << K.Name;
      std::string Demangled = demangle(K.Name);
      if (Demangled != K.Name)
        OS << ": " << Demangled;
      OS << "\n";
      auto Sizes = [&] {
        return K.ParamSizes.empty()
                   ? std::string("none")
                   : join(map_range(K.ParamSizes,
                                    [](uint32_t N) {
                                      return std::to_string(N);
                                    }),
                          ", ");
      };
      if (MK.ManifestVersion == 0) {
        OS << "  no manifest; parameter sizes: " << Sizes() << "\n";
        continue;
      }
      if (MK.ManifestVersion != FATLINK_MANIFEST_VERSION) {
        OS << "  manifest version " << MK.ManifestVersion
           << ", which this fatlink does not read; parameter sizes: "
           << Sizes() << "\n";
        continue;
      }
      const packager::KernelManifest &Man = K.Manifest;
      OS << "  language: " << packager::languageName(Man.Language) << "\n";
      OS << "  defined in: " << (K.Origin.empty() ? "unknown" : K.Origin)
         << "\n";
      if (Man.MaxThreads[0] || Man.MaxThreads[1] || Man.MaxThreads[2])
        OS << "  max threads: " << dims3(Man.MaxThreads) << "\n";
      if (Man.ReqThreads[0] || Man.ReqThreads[1] || Man.ReqThreads[2])
        OS << "  required threads: " << dims3(Man.ReqThreads) << "\n";
      if (Man.MinBlocks)
        OS << "  min blocks per SM: " << Man.MinBlocks << "\n";
      if (Man.Cluster[0] || Man.Cluster[1] || Man.Cluster[2])
        OS << "  cluster: " << dims3(Man.Cluster) << "\n";
      if (K.ParamSizes.empty()) {
        OS << "  parameters: none\n";
        continue;
      }
      if (Man.Params.empty()) {
        OS << "  parameters not described; sizes: " << Sizes() << "\n";
        continue;
      }
      std::vector<std::vector<std::string>> Rows;
      Rows.push_back({"  #", "name", "kind", "size", "align", "addrspace",
                      "element", "type"});
      for (auto [I, P] : enumerate(Man.Params)) {
        bool Ptr = P.Kind == FATLINK_PARAM_POINTER;
        std::string AS = addrSpaceName(P.AddrSpace).str();
        if (AS.empty())
          AS = std::to_string(P.AddrSpace);
        Rows.push_back({"  " + std::to_string(I),
                        P.Name.empty() ? "-" : P.Name,
                        packager::paramKindName(P.Kind).str(),
                        std::to_string(P.Size), std::to_string(P.Align),
                        Ptr ? AS : "-", Ptr ? elementOf(P) : "-",
                        P.Type.empty() ? "-" : P.Type});
      }
      printRows(Ctx, Rows, {0, 3, 4});
    }
  }
}

/// One kernel's manifest as `device-link --json` writes it
/// (kernel_manifest), with what the descriptor adds.
static void manifestJson(json::OStream &J, const packager::ManifestKernel &MK) {
  const packager::KernelInfo &K = MK.Info;
  const packager::KernelManifest &M = K.Manifest;
  J.attribute("kernel", K.Name);
  std::string Demangled = demangle(K.Name);
  J.attribute("demangled", Demangled == K.Name ? json::Value(nullptr)
                                               : json::Value(Demangled));
  J.attributeArray("param_sizes", [&] {
    for (uint32_t Size : K.ParamSizes)
      J.value(int64_t(Size));
  });
  J.attribute("manifest_version", MK.ManifestVersion
                                      ? json::Value(int64_t(MK.ManifestVersion))
                                      : json::Value(nullptr));
  if (MK.ManifestVersion != FATLINK_MANIFEST_VERSION)
    return;
  J.attribute("language", packager::languageName(M.Language));
  J.attribute("origin", K.Origin);
  // params null: the link did not describe the parameters (only their sizes).
  packager::writeManifestJson(J, M, !(M.Params.empty() && !K.ParamSizes.empty()));
}

/// --manifest: every input's module descriptors. A broken file is
/// reported and the next one still read.
static Error listManifests(Context &Ctx, const Config &C) {
  TimeTraceScope Scope("List manifests");
  std::vector<std::pair<std::string, std::vector<packager::ModuleManifest>>>
      Files;
  for (const std::string &Path : C.Inputs) {
    if (Ctx.errorCount() == MaxBrokenFiles)
      break;
    Expected<std::unique_ptr<MemoryBuffer>> MBOrErr = readInputFile(Path);
    if (!MBOrErr) {
      Ctx.error(MBOrErr.takeError());
      continue;
    }
    Expected<std::vector<packager::ModuleManifest>> Modules =
        packager::readModuleManifests((*MBOrErr)->getBuffer(), Path);
    if (!Modules) {
      Ctx.error(Modules.takeError());
      continue;
    }
    Files.emplace_back(Path, std::move(*Modules));
  }
  if (Ctx.errorCount())
    return Error::success();
  if (!C.Json) {
    for (const auto &[File, Modules] : Files)
      printManifestText(Ctx, File, Modules);
    return Error::success();
  }
  json::OStream J(Ctx.Out, 2);
  J.array([&] {
    for (const auto &[File, Modules] : Files)
      for (const packager::ModuleManifest &M : Modules)
        J.object([&] {
          J.attribute("file", File);
          J.attribute("origin", M.Origin);
          J.attribute("section", FATLINK_MODULES_SECTION);
          J.attribute("offset", int64_t(M.Offset));
          J.attribute("version", int64_t(M.Version));
          J.attribute("size", int64_t(M.Size));
          J.attribute("known", M.Known);
          if (!M.Known)
            return;
          J.attribute("manifest", M.hasManifest());
          J.attribute("fatbin_size", int64_t(M.FatbinSize));
          J.attributeArray("kernels", [&] {
            for (const packager::ManifestKernel &K : M.Kernels)
              J.object([&] { manifestJson(J, K); });
          });
        });
  });
  Ctx.Out << "\n";
  return Error::success();
}

//===----------------------------------------------------------------------===//
// The command
//===----------------------------------------------------------------------===//

static Error inspect(Context &Ctx, const Config &C) {
  if (C.Manifest)
    return listManifests(Ctx, C);
  std::vector<Entry> Entries = scanFiles(Ctx, C);
  // A broken input was reported; extracting or listing the rest would
  // hide it in the output of a script.
  if (Ctx.errorCount())
    return Error::success();
  if (!C.ExtractDir.empty())
    if (Error E = makeExtractDir(C))
      return E;
  std::vector<StagedFile> Staged;
  if (C.Kernels || C.Resources || C.Json || !C.ExtractDir.empty())
    readImages(Ctx, C, Entries, Staged);
  // An image that did not decompress was reported: nothing is extracted.
  if (Ctx.errorCount())
    return Error::success();
  if (Error E = extract(Ctx, Staged))
    return E;
  if (C.Json)
    printJson(Ctx, C, Entries);
  else if (Entries.empty())
    Ctx.Out << "no fatbin or OffloadBinary found\n";
  else if (C.Resources)
    printResourceTable(Ctx, Entries);
  else if (C.Kernels)
    printKernelTable(Ctx, Entries);
  else
    printTable(Ctx, Entries);
  return Error::success();
}

int inspectMain(ArrayRef<const char *> Args, raw_ostream &Out,
                raw_ostream &Err) {
  return runCommand(
      Args, Out, Err, CommandOptTable(),
      {"fatlink inspect [options] <files...>",
       "fatlink inspect: list (and extract) the GPU code in fatbins, host "
       "objects, archives, executables and shared libraries",
       OPT_UNKNOWN, OPT_help, OPT_version},
      [](Context &Ctx, opt::InputArgList &Args) {
        Expected<Config> C = parseConfig(Ctx, Args);
        if (!C)
          return Ctx.error(C.takeError());
        if (Error E = inspect(Ctx, *C))
          Ctx.error(std::move(E));
      });
}

} // namespace fatlink
