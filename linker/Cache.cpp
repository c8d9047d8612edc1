//===- linker/Cache.cpp - Content-addressed cache of device links --------===//
//
// See Cache.h for the key and the entry format. The payload is a sequence
// of little-endian u64 counts and length-prefixed byte strings.
//
//===----------------------------------------------------------------------===//

#include "linker/Cache.h"
#include "linker/Linker.h"
#include "packager/Bytes.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/BLAKE3.h"
#include "llvm/Support/CachePruning.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/TimeProfiler.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <deque>
#include <optional>
#include <vector>

using namespace llvm;

namespace fatlink {

// 3: host objects define their wrapper symbol (packager::wrapperSymbol).
// 4: each target's spills (ptxas -v) and each kernel's defining input.
// 5: each kernel's manifest (packager::KernelManifest).
static constexpr StringLiteral Magic = "FLCACHE5";
/// Entry names: the prefix llvm::pruneCache removes, and only it.
static constexpr StringLiteral EntryPrefix = "llvmcache-";

using Writer = packager::ByteWriter;
using Reader = packager::ByteReader;

/// A list of strings: its count, then each, length-prefixed.
static void writeStrings(Writer &W, ArrayRef<std::string> List) {
  W.u64(List.size());
  for (const std::string &S : List)
    W.str(S);
}

/// A counted list, each element read by ReadOne; a count past Limit (the
/// payload's size) is refused before anything is allocated.
template <typename T, typename ReadFn>
static bool readList(Reader &R, size_t Limit, std::vector<T> &List,
                     ReadFn ReadOne) {
  uint64_t N;
  if (!R.u64(N) || N > Limit)
    return false;
  List.resize(N);
  return all_of(List, ReadOne);
}

/// The list writeStrings wrote.
static bool readStrings(Reader &R, size_t Limit,
                        std::vector<std::string> &List) {
  return readList(R, Limit, List, [&](std::string &S) { return R.str(S); });
}

static void writeSpills(Writer &W, ArrayRef<codegen::FunctionSpills> Spills) {
  W.u64(Spills.size());
  for (const codegen::FunctionSpills &F : Spills) {
    W.str(F.Name);
    W.u64(F.Stores);
    W.u64(F.Loads);
  }
}

static bool readSpills(Reader &R, size_t Limit,
                       std::vector<codegen::FunctionSpills> &Spills) {
  return readList(R, Limit, Spills, [&](codegen::FunctionSpills &F) {
    return R.str(F.Name) && R.u64(F.Stores) && R.u64(F.Loads);
  });
}

/// What identifies an installed tool without running it.
static std::string toolIdentity(StringRef Path) {
  sys::fs::file_status St;
  if (sys::fs::status(Path, St))
    return (Path + ":missing").str();
  return (Path + ":" + Twine(St.getSize()) + ":" +
          Twine(St.getLastModificationTime().time_since_epoch().count()))
      .str();
}

std::string deviceLinkKey(const DeviceLinkConfig &C,
                          const lto::InputSet &Inputs) {
  std::string Data;
  Writer W(Data);
  W.str(Magic);
  W.str(versionString());
  W.str(LLVM_VERSION_STRING);
  W.str(toolIdentity(C.Paths.Ptxas));
  W.str(codegen::PtxasSpillFlag); // the cubins' notes record ptxas's options
  W.str(toolIdentity(C.Paths.Nvlink));
  W.str(toolIdentity(C.Link.LibdevicePath));
  W.str(toolIdentity(C.Link.DeviceRuntimePath));
  writeStrings(W, C.ArchLists);
  W.u64(C.PtxVersion.value_or(0));
  W.u64(C.Link.OptLevel);
  W.u64(C.Link.CodegenOnly);
  W.u64(C.Link.FlushDenormals);
  W.u64(C.Link.PreciseSqrt);
  W.u64(C.Link.PreciseDiv);
  writeStrings(W, C.Link.ExportSymbols);
  // A link that passed only by an allowance must not answer one without.
  writeStrings(W, C.Link.AllowAbiMismatch);
  W.u64(unsigned(C.OutKind));
  W.u64(unsigned(C.Fatbin.Compress));
  W.u64(C.Fatbin.ZstdLevel);
  W.u64(C.Fatbin.MinifyPtx);
  W.u64(C.Fatbin.ZstdThreadsAbove);
  W.u64(unsigned(C.HostArch));
  W.u64(C.RunPtxas);
  // A PTX-only link's PTX is checked by ptxas where one is installed
  // (checkPtxOnly): entries stored before the check existed must miss.
  W.str(C.RunPtxas ? "" : "ptx-checked-1");
  W.u64(C.Partitions);
  W.u64(unsigned(C.Link.PartitionFirst));
  W.u64(C.SharePTX);
  W.u64(C.BatchPtxas);

  // Images are hashed one by one, so the key costs one pass over the bytes.
  // Their origins, as written, too: the entry holds them (each input's and
  // each kernel's, in the host object's manifests, in --json and in the
  // warnings it replays), and a hit must give what a link of this command
  // line gives. Filling them in from this link's inputs on a hit instead is
  // not exact: a kernel's origin may come from the bytes (a --codegen-only
  // .bc carries its link's kernel table), two images may share one, and
  // the warnings are text.
  W.u64(Inputs.Images.size());
  for (const lto::DeviceImage &I : Inputs.Images) {
    W.str(I.Origin);
    W.str(I.Arch);
    W.u64(I.Source);
    BLAKE3Result<32> H = BLAKE3::hash(arrayRefFromStringRef(I.Bitcode.getBuffer()));
    W.str(toStringRef(ArrayRef<uint8_t>(H)));
  }
  W.u64(Inputs.Objects.size());
  for (const lto::DeviceObject &O : Inputs.Objects) {
    W.str(O.Origin);
    W.str(O.Container);
    W.str(O.Arch);
    W.u64(O.Source);
    BLAKE3Result<32> H = BLAKE3::hash(arrayRefFromStringRef(O.Data.getBuffer()));
    W.str(toStringRef(ArrayRef<uint8_t>(H)));
  }
  // LTO-IR is read by the toolkit's nvJitLink; nvcc compiles the unit that
  // keeps functions in its PTX (codegen's linkNvccPTX).
  if (any_of(Inputs.Objects,
             [](const lto::DeviceObject &O) { return O.IsLTOIR; }))
    for (const char *Tool :
         {"lib64/libnvJitLink.so.13", "lib64/libnvJitLink.so", "bin/nvcc"}) {
      SmallString<256> Path(C.Paths.CudaPath);
      sys::path::append(Path, Tool);
      W.str(toolIdentity(Path));
    }
  // Device libraries are linked by nvlink from their path, like a tool.
  W.u64(Inputs.Libraries.size());
  for (const lto::DeviceLibrary &L : Inputs.Libraries)
    W.str(toolIdentity(L.Path));
  BLAKE3Result<32> Key = BLAKE3::hash(arrayRefFromStringRef(Data));
  return toHex(ArrayRef<uint8_t>(Key), /*LowerCase=*/true);
}

namespace {

/// A payload written as pieces: records in buffers of its own, long byte
/// strings (cubins, PTX, the fatbin, the host object) by reference, so that
/// storing an entry copies none of them. The bytes are ByteWriter's.
class PieceWriter {
public:
  void u64(uint64_t V) { bytes().u64(V); }
  void str(StringRef S) {
    if (S.size() < ByReference) {
      bytes().str(S);
      return;
    }
    u64(S.size());
    Pieces.push_back({{}, S, true});
  }
  /// A writer for records, valid until the next str of a long string.
  Writer &bytes() {
    if (Pieces.empty() || Pieces.back().IsRef) {
      Pieces.push_back({});
      Pieces.back().W.emplace(Pieces.back().Own);
    }
    return *Pieces.back().W;
  }
  /// The pieces, in order; they refer to this writer and the strings given.
  std::vector<StringRef> finish() const {
    std::vector<StringRef> Out;
    for (const Piece &P : Pieces)
      Out.push_back(P.IsRef ? P.Ref : StringRef(P.Own));
    return Out;
  }

private:
  static constexpr size_t ByReference = 64 << 10;
  struct Piece {
    std::string Own;
    StringRef Ref;
    bool IsRef = false;
    std::optional<Writer> W; // over Own
  };
  std::deque<Piece> Pieces; // a deque: Own stays where it is
};

} // namespace

static void serialize(const DeviceBuild &B, PieceWriter &W) {
  W.u64(B.Targets.size());
  for (auto [T, O] : zip(B.Targets, B.Outputs)) {
    W.str(T.Name);
    W.str(T.Cpu);
    W.u64(T.Sm);
    W.u64(T.IsPTX);
    W.u64(T.PtxVersion);
    W.str(O.PTX);
    W.str(O.cubin());
    writeSpills(W.bytes(), O.Spills);
  }
  packager::writeKernels(W.bytes(), B.Program.Kernels);
  for (const std::vector<std::string> *List :
       {&B.Program.Globals, &B.Program.LibdeviceFunctions, &B.Program.Warnings})
    writeStrings(W.bytes(), *List);
  W.u64(B.Program.Inputs.size());
  for (const lto::InputUse &U : B.Program.Inputs) {
    W.str(U.Origin);
    W.str(U.CompiledFor);
    writeStrings(W.bytes(), U.Targets);
  }
  W.str(B.Fatbin);
  W.str(B.Object);
}

static std::optional<DeviceBuild> deserialize(StringRef Payload) {
  Reader R(Payload);
  DeviceBuild B;
  uint64_t N;
  if (!R.u64(N) || N > Payload.size())
    return std::nullopt;
  for (uint64_t I = 0; I < N; ++I) {
    lto::Target T;
    TargetOutput O;
    uint64_t Sm, IsPTX, Ptx;
    if (!R.str(T.Name) || !R.str(T.Cpu) || !R.u64(Sm) || !R.u64(IsPTX) ||
        !R.u64(Ptx) || !R.str(O.PTX) || !R.str(O.Cubin) ||
        !readSpills(R, Payload.size(), O.Spills))
      return std::nullopt;
    T.Sm = unsigned(Sm);
    T.IsPTX = IsPTX != 0;
    T.PtxVersion = unsigned(Ptx);
    B.Targets.push_back(std::move(T));
    B.Outputs.push_back(std::move(O));
  }
  if (!packager::readKernels(R, Payload.size(), B.Program.Kernels))
    return std::nullopt;
  for (std::vector<std::string> *List :
       {&B.Program.Globals, &B.Program.LibdeviceFunctions,
        &B.Program.Warnings})
    if (!readStrings(R, Payload.size(), *List))
      return std::nullopt;
  if (!R.u64(N) || N > Payload.size())
    return std::nullopt;
  B.Program.Inputs.resize(N);
  for (lto::InputUse &U : B.Program.Inputs)
    if (!R.str(U.Origin) || !R.str(U.CompiledFor) ||
        !readStrings(R, Payload.size(), U.Targets))
      return std::nullopt;
  if (!R.str(B.Fatbin) || !R.str(B.Object) || !R.atEnd())
    return std::nullopt;
  return B;
}

std::string codegenKey(const DeviceLinkConfig &C, const lto::Target &T,
                       ArrayRef<uint8_t> BitcodeHash, StringRef PTXSource) {
  std::string Data;
  Writer W(Data);
  // 3: the entry holds the cubin and its spills (encodePartitionCode);
  // 4: ptxas runs with PtxasSpillFlag, not -v (the cubin's notes differ);
  // 5: a batching target's cubins have canonical string tables
  // (codegen::canonicalCubin).
  W.str("fatlink-codegen-5");
  W.str(PTXSource);
  W.str(versionString());
  W.str(LLVM_VERSION_STRING);
  W.str(toolIdentity(C.Paths.Ptxas));
  W.str(T.Name);
  W.str(T.Cpu);
  W.u64(T.PtxVersion);
  W.u64(C.Link.OptLevel);
  W.str(toStringRef(BitcodeHash));
  BLAKE3Result<32> Key = BLAKE3::hash(arrayRefFromStringRef(Data));
  return toHex(ArrayRef<uint8_t>(Key), /*LowerCase=*/true);
}

std::string toolFactsKey(const DeviceLinkConfig &C) {
  std::string Data;
  Writer W(Data);
  // 2: an arch's PTX ISA may be 0, not worked out yet (probeTools): a
  // build that read every entry as complete must not read these.
  W.str("fatlink-tools-2");
  W.str(versionString());
  W.str(LLVM_VERSION_STRING);
  W.u64(C.RunPtxas);
  if (C.RunPtxas)
    W.str(toolIdentity(C.Paths.Ptxas));
  BLAKE3Result<32> Key = BLAKE3::hash(arrayRefFromStringRef(Data));
  return toHex(ArrayRef<uint8_t>(Key), /*LowerCase=*/true);
}

std::string encodeToolFacts(const ToolFacts &F) {
  std::string Out;
  Writer W(Out);
  W.u64(F.LLVMMajor);
  W.u64(F.LLVMArches.size());
  for (const lto::ArchInfo &A : F.LLVMArches) {
    W.str(A.Cpu);
    W.u64(A.Sm);
    W.u64(A.MinPtxVersion);
  }
  W.u64(F.LLVMMaxPtx);
  W.str(F.PtxasRelease);
  writeStrings(W, F.PtxasArches);
  W.u64(F.PtxasMaxPtx);
  return Out;
}

std::optional<ToolFacts> decodeToolFacts(StringRef Payload) {
  Reader R(Payload);
  ToolFacts F;
  uint64_t Major, MaxPtx, PtxasMaxPtx;
  auto ReadArch = [&](lto::ArchInfo &A) {
    uint64_t Sm, MinPtx;
    if (!R.str(A.Cpu) || !R.u64(Sm) || !R.u64(MinPtx))
      return false;
    A.Sm = Sm;
    A.MinPtxVersion = MinPtx;
    return true;
  };
  if (!R.u64(Major) || !readList(R, Payload.size(), F.LLVMArches, ReadArch) ||
      !R.u64(MaxPtx) || !R.str(F.PtxasRelease) ||
      !readStrings(R, Payload.size(), F.PtxasArches) || !R.u64(PtxasMaxPtx) ||
      !R.atEnd())
    return std::nullopt;
  F.LLVMMajor = Major;
  F.LLVMMaxPtx = MaxPtx;
  F.PtxasMaxPtx = PtxasMaxPtx;
  return F;
}

std::string encodePartitionCode(const codegen::PartitionCode &Code) {
  std::string Out;
  Writer W(Out);
  W.str(Code.Cubin);
  writeSpills(W, Code.Spills);
  return Out;
}

std::optional<codegen::PartitionCode> decodePartitionCode(StringRef Payload) {
  Reader R(Payload);
  codegen::PartitionCode Code;
  if (!R.str(Code.Cubin) || !readSpills(R, Payload.size(), Code.Spills) ||
      !R.atEnd())
    return std::nullopt;
  return Code;
}

std::optional<std::string> cacheLookupBlob(Context &Ctx, StringRef Dir,
                                           StringRef Key, bool Report) {
  auto Verbose = [&](const Twine &Msg) {
    if (Report)
      Ctx.verbose(Msg);
  };
  SmallString<256> Path(Dir);
  sys::path::append(Path, EntryPrefix + Key);
  // Nothing is read before the entry is known to be a regular file whose
  // size is what its header states, and nothing is kept before its hash
  // matches: a FIFO in an entry's place would block the link, a symlink to
  // /dev/zero would be read until memory ran out, and a huge damaged entry
  // would be held whole (3 GB of memory for a 3 GB file).
  sys::fs::file_status St;
  if (sys::fs::status(Path, St)) {
    Verbose("cache: miss " + Key);
    return std::nullopt;
  }
  auto Corrupt = [&](const Twine &Why) -> std::optional<std::string> {
    Verbose("cache: corrupt entry " + Path + " (" + Why +
            "): ignored, rebuilding");
    return std::nullopt;
  };
  if (St.type() != sys::fs::file_type::regular_file)
    return Corrupt("not a regular file");
  Expected<sys::fs::file_t> FD = sys::fs::openNativeFileForRead(Path);
  if (!FD) {
    consumeError(FD.takeError());
    Verbose("cache: miss " + Key);
    return std::nullopt;
  }
  scope_exit Close([&] { sys::fs::closeFile(*FD); });
  // The file opened may not be the one examined (replaced in between).
  if (sys::fs::status(*FD, St) ||
      St.type() != sys::fs::file_type::regular_file)
    return Corrupt("not a regular file");
  constexpr size_t HeaderSize = 8 + 8 + 32;
  char Header[HeaderSize];
  Expected<size_t> Got =
      sys::fs::readNativeFile(*FD, MutableArrayRef<char>(Header));
  if (!Got) {
    consumeError(Got.takeError());
    return Corrupt("unreadable");
  }
  StringRef Head(Header, *Got);
  uint64_t Size = St.getSize();
  if (Head.size() < HeaderSize || !Head.starts_with(Magic))
    return Corrupt("no entry header");
  uint64_t Len = support::endian::read64le(Header + 8);
  if (Size < HeaderSize || Len != Size - HeaderSize)
    return Corrupt("header states " + Twine(Len) + " bytes, the file has " +
                   Twine(Size - std::min<uint64_t>(Size, HeaderSize)));
  // The hash first, through a small buffer; the payload is kept only then.
  BLAKE3 Hasher;
  std::vector<char> Buf(std::min<uint64_t>(Len, 1 << 20));
  for (uint64_t Done = 0; Done < Len;) {
    Expected<size_t> N = sys::fs::readNativeFile(
        *FD, MutableArrayRef<char>(Buf.data(),
                                   std::min<uint64_t>(Buf.size(), Len - Done)));
    if (!N) {
      consumeError(N.takeError());
      return Corrupt("unreadable");
    }
    if (*N == 0)
      return Corrupt("shorter than its header states");
    Hasher.update(StringRef(Buf.data(), *N));
    Done += *N;
  }
  BLAKE3Result<32> H = Hasher.final();
  if (Head.substr(16, 32) != toStringRef(ArrayRef<uint8_t>(H)))
    return Corrupt("hash mismatch");
  std::string Payload(Len, '\0');
  for (uint64_t Done = 0; Done < Len;) {
    Expected<size_t> N = sys::fs::readNativeFileSlice(
        *FD, MutableArrayRef<char>(Payload.data() + Done, Len - Done),
        HeaderSize + Done);
    if (!N || *N == 0) {
      if (!N)
        consumeError(N.takeError());
      return Corrupt("unreadable");
    }
    Done += *N;
  }
  Verbose("cache: hit " + Key);
  return Payload;
}

bool cacheStoreBlob(Context &Ctx, StringRef Dir, StringRef Key,
                    StringRef Payload, bool Report) {
  return cacheStoreBlob(Ctx, Dir, Key, ArrayRef<StringRef>(Payload), Report);
}

bool cacheStoreBlob(Context &Ctx, StringRef Dir, StringRef Key,
                    ArrayRef<StringRef> Payload, bool Report,
                    function_ref<void(StringRef)> Read) {
  // The header is built and the pieces written after it, never joined: a
  // whole link's payload holds its cubins (103 MB of a 22,400-kernel
  // program's), and a copy of them would be the link's peak. A mapped
  // cubin is read a few MB at a time, its pages handed back behind.
  constexpr size_t Chunk = 4 << 20;
  auto EachPart = [&](function_ref<void(StringRef)> F) {
    for (StringRef Piece : Payload)
      for (size_t Off = 0; Off < Piece.size(); Off += Chunk) {
        StringRef Part = Piece.substr(Off, Chunk);
        F(Part);
        if (Read)
          Read(Part);
      }
  };
  BLAKE3 Hasher;
  uint64_t Size = 0;
  for (StringRef Piece : Payload)
    Size += Piece.size();
  EachPart([&](StringRef Part) { Hasher.update(Part); });
  BLAKE3Result<32> H = Hasher.final();
  std::string Header;
  Writer W(Header);
  Header += Magic;
  W.u64(Size);
  Header += toStringRef(ArrayRef<uint8_t>(H));

  // The directories this store creates (Dir and any missing parent,
  // deepest first) are removed again if it fails: a cache on a full disk
  // is left as it was, with no empty tools/ or codegen/ in it.
  SmallVector<std::string, 2> Created;
  for (StringRef D = Dir; !D.empty() && !sys::fs::exists(D);
       D = sys::path::parent_path(D))
    Created.push_back(D.str());
  auto Fail = [&](const Twine &Why) {
    for (const std::string &D : Created)
      sys::fs::remove(D); // only if empty: another link may be storing
    if (Report)
      Ctx.verbose("cache: cannot store " + Key + " in " + Dir + ": " + Why);
    // A cache that cannot store (a typo naming a file, a read-only or full
    // file system) would go on missing, silently: a warning, once a run.
    if (!Ctx.CacheStoreWarned.exchange(true)) {
      StringRef Top = Dir, Sub = sys::path::filename(Dir);
      if (Sub == "memo" || Sub == "codegen" || Sub == "tools")
        Top = sys::path::parent_path(Dir);
      Ctx.warn("cannot store in the cache directory " + Top + " (" + Why +
               "): links are not cached; fix it or name another "
               "(--cache-dir, FATLINK_CACHE_DIR, the cache-dir setting; "
               "off disables the cache)");
    }
    return false;
  };
  if (std::error_code EC = sys::fs::create_directories(Dir))
    return Fail(EC.message());
  SmallString<256> Path(Dir), Temp;
  sys::path::append(Path, EntryPrefix + Key);
  int FD;
  if (std::error_code EC =
          sys::fs::createUniqueFile(Path + ".tmp%%%%%%", FD, Temp))
    return Fail(EC.message());
  sys::RemoveFileOnSignal(Temp);
  scope_exit Done([&] { sys::DontRemoveFileOnSignal(Temp); });
  {
    raw_fd_ostream OS(FD, /*shouldClose=*/true);
    OS << Header;
    EachPart([&](StringRef Part) {
      OS << Part;
      OS.flush(); // written before its pages go back
    });
    OS.close();
    if (OS.has_error()) {
      std::string Why = OS.error().message();
      OS.clear_error();
      sys::fs::remove(Temp);
      return Fail(Why);
    }
  }
  if (std::error_code EC = sys::fs::rename(Temp, Path)) {
    sys::fs::remove(Temp);
    return Fail(EC.message());
  }
  if (Report)
    Ctx.verbose("cache: stored " + Key);
  return true;
}

std::optional<DeviceBuild> cacheLookup(Context &Ctx, StringRef Dir,
                                       StringRef Key) {
  TimeTraceScope Scope("Cache lookup");
  std::optional<std::string> Payload = cacheLookupBlob(Ctx, Dir, Key);
  if (!Payload)
    return std::nullopt;
  std::optional<DeviceBuild> B = deserialize(*Payload);
  if (!B)
    Ctx.verbose("cache: corrupt entry " + Dir + "/" + Key +
                ": ignored, rebuilding");
  return B;
}

bool cacheStore(Context &Ctx, StringRef Dir, StringRef Key,
                const DeviceBuild &B) {
  TimeTraceScope Scope("Cache store");
  PieceWriter W;
  serialize(B, W);
  return cacheStoreBlob(Ctx, Dir, Key, W.finish(), /*Report=*/true,
                        [&](StringRef Part) {
                          for (const TargetOutput &O : B.Outputs)
                            O.releaseCubin(Part);
                        });
}

Error checkCachePolicy(StringRef Name, StringRef Policy) {
  Expected<CachePruningPolicy> P = parseCachePruningPolicy(Policy);
  if (!P)
    return createStringError(
        inconvertibleErrorCode(),
        "invalid value for %s: '%s': %s (expected a cache pruning policy "
        "such as %s)",
        Name.str().c_str(), Policy.str().c_str(),
        toString(P.takeError()).c_str(), DefaultCachePolicy);
  return Error::success();
}

void cachePrune(Context &Ctx, StringRef Dir, StringRef Policy) {
  TimeTraceScope Scope("Cache prune");
  Expected<CachePruningPolicy> P = parseCachePruningPolicy(Policy);
  if (!P) { // checked when the options were read
    consumeError(P.takeError());
    return;
  }
  for (StringRef Sub : {"", "memo", "codegen", "tools"}) {
    SmallString<256> Path(Dir);
    if (!Sub.empty())
      sys::path::append(Path, Sub);
    if (sys::fs::is_directory(Path) && pruneCache(Path, *P))
      Ctx.verbose("cache: pruned " + Path);
  }
}

std::string defaultCacheDir() {
  if (std::optional<std::string> Dir = sys::Process::GetEnv("FATLINK_CACHE_DIR"))
    return *Dir;
  SmallString<256> Path;
  if (std::optional<std::string> Xdg = sys::Process::GetEnv("XDG_CACHE_HOME"))
    Path = *Xdg;
  else if (!sys::path::home_directory(Path))
    return "";
  else
    sys::path::append(Path, ".cache");
  // Not fatlink/ itself: scripts/setup.sh unpacks build dependencies in
  // fatlink/deps.
  sys::path::append(Path, "fatlink", "device-links");
  return std::string(Path);
}

} // namespace fatlink
