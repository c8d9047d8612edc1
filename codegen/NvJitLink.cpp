//===- codegen/NvJitLink.cpp - Linking nvcc LTO-IR with nvJitLink ---------===//
//
// nvcc's LTO-IR (`-gencode arch=compute_XX,code=lto_XX`, `-dlto`) is NVVM
// IR that only NVIDIA's nvJitLink can read (cuobjdump cannot even decode
// the fatbin entry: it is obfuscated). libnvJitLink.so ships with the
// toolkit; fatlink loads it at run time, on the first link that needs it,
// so fatlink builds and runs without it. Its plain C API: create a handle
// with options (-arch=sm_NN, -lto), add inputs (cubins, PTX, host objects
// carrying fatbins, static libraries), complete, read back the cubin or
// PTX, or the error log.
//
//===----------------------------------------------------------------------===//

#include "codegen/Codegen.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/DynamicLibrary.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/TimeProfiler.h"

#include <cstring>
#include <map>
#include <mutex>

using namespace llvm;

// LeakSanitizer's switches, present only in a sanitized build
// (--config=asan). libnvJitLink keeps memory for the life of the process:
// the libstdc++ linked into it allocates its exception-handling pool
// (72704 bytes) when it is loaded, and nvJitLinkComplete keeps about 6 KB
// that nvJitLinkDestroy does not free (measured with CUDA 13.0). LSan
// reports both as leaks, in code fatlink cannot change, so the load and
// every call into the library run with leak checking off (on this thread:
// the calls run on the caller's).
extern "C" void __lsan_disable() __attribute__((weak));
extern "C" void __lsan_enable() __attribute__((weak));

namespace fatlink::codegen {

namespace {

// nvJitLink.h, CUDA 13.0: the handful of declarations fatlink calls.
using Handle = void *;
using Result = int; // nvJitLinkResult; 0 is NVJITLINK_SUCCESS
enum InputType : int {
  InputCubin = 1,
  InputPtx = 2,
  InputLtoIR = 3,
  InputObject = 5,
  InputLibrary = 6
};

struct Api {
  Result (*Create)(Handle *, uint32_t, const char **);
  Result (*Destroy)(Handle *);
  Result (*AddData)(Handle, int, const void *, size_t, const char *);
  Result (*AddFile)(Handle, int, const char *);
  Result (*Complete)(Handle);
  Result (*GetLinkedCubinSize)(Handle, size_t *);
  Result (*GetLinkedCubin)(Handle, void *);
  Result (*GetLinkedPtxSize)(Handle, size_t *);
  Result (*GetLinkedPtx)(Handle, char *);
  Result (*GetErrorLogSize)(Handle, size_t *);
  Result (*GetErrorLog)(Handle, char *);
  Result (*Version)(unsigned *, unsigned *);
  std::string Path;
  unsigned Major = 0, Minor = 0;
};

/// Leak checking off while it lives (see __lsan_disable above).
struct LeakCheckOff {
  LeakCheckOff() {
    if (__lsan_disable)
      __lsan_disable();
  }
  ~LeakCheckOff() {
    if (__lsan_enable)
      __lsan_enable();
  }
};

/// What NVJITLINK_ERROR_* values mean (nvJitLink.h), for messages.
const char *resultName(Result R) {
  static const char *const Names[] = {"success",
                                      "unrecognized option",
                                      "missing arch",
                                      "invalid input",
                                      "ptx compilation error",
                                      "nvvm compilation error",
                                      "internal error",
                                      "threadpool error",
                                      "unrecognized input",
                                      "finalize error",
                                      "null input",
                                      "incompatible options",
                                      "incorrect input type",
                                      "arch mismatch",
                                      "outdated library",
                                      "missing fatbin"};
  if (R >= 0 && size_t(R) < std::size(Names))
    return Names[R];
  return "unknown error";
}

/// Loads <cuda>/lib64/libnvJitLink.so.N once per process and path.
Expected<const Api *> loadApi(StringRef CudaPath) {
  static std::mutex Mutex;
  static std::map<std::string, std::unique_ptr<Api>> Loaded;
  std::lock_guard<std::mutex> Lock(Mutex);
  auto &Slot = Loaded[CudaPath.str()];
  if (Slot)
    return Slot.get();
  SmallString<256> Dir(CudaPath);
  sys::path::append(Dir, "lib64");
  std::string Tried;
  for (const char *Name : {"libnvJitLink.so.13", "libnvJitLink.so"}) {
    SmallString<256> Path(Dir);
    sys::path::append(Path, Name);
    if (!sys::fs::exists(Path)) {
      Tried += (Tried.empty() ? "" : ", ") + std::string(Path);
      continue;
    }
    std::string Err;
    LeakCheckOff Off;
    sys::DynamicLibrary Lib =
        sys::DynamicLibrary::getPermanentLibrary(Path.c_str(), &Err);
    if (!Lib.isValid())
      return createStringError("cannot load %s: %s", Path.c_str(), Err.c_str());
    auto A = std::make_unique<Api>();
    A->Path = std::string(Path);
    bool Missing = false;
    auto Get = [&](auto &Fn, const char *Sym) {
      Fn = reinterpret_cast<std::remove_reference_t<decltype(Fn)>>(
          Lib.getAddressOfSymbol(Sym));
      Missing |= !Fn;
    };
    Get(A->Create, "nvJitLinkCreate");
    Get(A->Destroy, "nvJitLinkDestroy");
    Get(A->AddData, "nvJitLinkAddData");
    Get(A->AddFile, "nvJitLinkAddFile");
    Get(A->Complete, "nvJitLinkComplete");
    Get(A->GetLinkedCubinSize, "nvJitLinkGetLinkedCubinSize");
    Get(A->GetLinkedCubin, "nvJitLinkGetLinkedCubin");
    Get(A->GetLinkedPtxSize, "nvJitLinkGetLinkedPtxSize");
    Get(A->GetLinkedPtx, "nvJitLinkGetLinkedPtx");
    Get(A->GetErrorLogSize, "nvJitLinkGetErrorLogSize");
    Get(A->GetErrorLog, "nvJitLinkGetErrorLog");
    Get(A->Version, "nvJitLinkVersion");
    if (Missing)
      return createStringError(
          "%s lacks the nvJitLink functions fatlink calls (nvJitLinkCreate, "
          "...): use the libnvJitLink of a CUDA 12 or 13 toolkit",
          Path.c_str());
    A->Version(&A->Major, &A->Minor);
    Slot = std::move(A);
    return Slot.get();
  }
  return createStringError(
      "nvcc LTO-IR needs nvJitLink, and there is none at %s: install the "
      "toolkit's libnvjitlink (or pass --cuda-path=<a CUDA toolkit with "
      "lib64/libnvJitLink.so>), or compile the nvcc code to relocatable "
      "cubins (-gencode arch=compute_NN,code=sm_NN) instead",
      Tried.c_str());
}

} // namespace

Expected<std::string> nvJitLinkVersion(StringRef CudaPath) {
  Expected<const Api *> A = loadApi(CudaPath);
  if (!A)
    return A.takeError();
  return (Twine((*A)->Major) + "." + Twine((*A)->Minor) + " (" + (*A)->Path +
          ")")
      .str();
}

namespace {
/// The LTO-IR code version (fatbin entry header major.minor, cuobjdump's
/// "code version = [1,65]") each toolkit's nvcc writes, which is also the
/// newest its nvJitLink reads. Measured on nv_math.cu, probing nvJitLink
/// with the container's version bytes patched (a newer one is refused as
/// "may need newer version of nvJitLink library"): nvcc 13.0 writes 1.65
/// and nvJitLink 13.0 reads up to 1.65; nvcc 13.5 writes 1.67 and
/// nvJitLink 13.5 reads up to 1.67; nvJitLink 12.9 refuses 13.0's 1.65.
/// Sorted by toolkit and by code version.
struct LtoIrVersion {
  unsigned ToolkitMajor, ToolkitMinor;
  unsigned CodeMajor, CodeMinor;
  std::pair<unsigned, unsigned> toolkit() const {
    return {ToolkitMajor, ToolkitMinor};
  }
  std::pair<unsigned, unsigned> code() const { return {CodeMajor, CodeMinor}; }
};
constexpr LtoIrVersion LtoIrVersions[] = {{13, 0, 1, 65}, {13, 5, 1, 67}};
} // namespace

Error checkLtoIrVersion(StringRef CudaPath, unsigned Major, unsigned Minor,
                        StringRef Origin) {
  Expected<const Api *> ApiOrErr = loadApi(CudaPath);
  if (!ApiOrErr)
    return ApiOrErr.takeError();
  const Api &A = **ApiOrErr;
  std::pair<unsigned, unsigned> Code{Major, Minor}, Linker{A.Major, A.Minor};
  // What this nvJitLink reads: up to its own toolkit's code version when
  // the table has it, else less than that of the next newer toolkit the
  // table has. An nvJitLink newer than the table is not checked.
  std::string Reads;
  bool Refused = false;
  for (const LtoIrVersion &V : LtoIrVersions) {
    if (V.toolkit() == Linker) {
      Refused = Code > V.code();
      Reads = formatv("reads up to {0}.{1}", V.CodeMajor, V.CodeMinor);
      break;
    }
    if (V.toolkit() > Linker) {
      Refused = Code >= V.code();
      Reads = formatv("reads only LTO-IR older than CUDA {0}.{1}'s ({2}.{3})",
                      V.ToolkitMajor, V.ToolkitMinor, V.CodeMajor, V.CodeMinor);
      break;
    }
  }
  if (!Refused)
    return Error::success();
  // Which nvcc wrote it: a toolkit of the table, or one newer than the
  // newest there that writes older LTO-IR.
  std::string From, Fix;
  for (const LtoIrVersion &V : LtoIrVersions) {
    if (V.code() == Code) {
      From =
          formatv("from CUDA {0}.{1}'s nvcc", V.ToolkitMajor, V.ToolkitMinor);
      Fix = formatv("a CUDA {0}.{1} toolkit or newer", V.ToolkitMajor,
                    V.ToolkitMinor);
    } else if (V.code() < Code && Fix.empty()) {
      From = formatv("from an nvcc newer than CUDA {0}.{1} (which writes "
                     "{2}.{3})",
                     V.ToolkitMajor, V.ToolkitMinor, V.CodeMajor, V.CodeMinor);
    }
  }
  if (Fix.empty())
    Fix = "a toolkit at least as new as the nvcc that compiled it";
  return createStringError(
      "%s: nvcc LTO-IR of code version %u.%u, %s; this nvJitLink is %u.%u "
      "(%s) and %s: pass --cuda-path (or set CUDA_PATH) to %s",
      Origin.str().c_str(), Major, Minor, From.c_str(), A.Major, A.Minor,
      A.Path.c_str(), Reads.c_str(), Fix.c_str());
}

Expected<std::string> runNvJitLink(StringRef CudaPath, StringRef Arch,
                                   bool EmitPtx,
                                   ArrayRef<NvJitLinkInput> Inputs,
                                   StringRef What) {
  TimeTraceScope Scope("nvJitLink", Arch);
  LeakCheckOff Off;
  Expected<const Api *> ApiOrErr = loadApi(CudaPath);
  if (!ApiOrErr)
    return ApiOrErr.takeError();
  const Api &A = **ApiOrErr;
  std::string ArchOpt = ("-arch=" + Arch).str();
  std::vector<const char *> Opts = {ArchOpt.c_str(), "-lto"};
  if (EmitPtx)
    Opts.push_back("-ptx");
  Handle H = nullptr;
  if (Result R = A.Create(&H, Opts.size(), Opts.data()))
    return createStringError("%s: nvJitLink (%s) refused its options "
                             "(%s, -lto): %s",
                             What.str().c_str(), A.Path.c_str(),
                             ArchOpt.c_str(), resultName(R));
  scope_exit Destroy([&] { A.Destroy(&H); });
  auto Fail = [&](Result R, const Twine &Step) -> Error {
    size_t Size = 0;
    std::string Log;
    if (!A.GetErrorLogSize(H, &Size) && Size > 1) {
      Log.resize(Size);
      A.GetErrorLog(H, Log.data());
      Log.resize(strnlen(Log.data(), Size));
    }
    std::string Hint;
    if (R == 14 /*outdated library*/ || StringRef(Log).contains("newer"))
      Hint = formatv("\nnote: this nvJitLink is {0}.{1} ({2}); LTO-IR from a "
                     "newer nvcc needs a nvJitLink at least as new (pass "
                     "--cuda-path=<that toolkit>)",
                     A.Major, A.Minor, A.Path)
                 .str();
    return createStringError(
        "%s: nvJitLink %s failed: %s%s%s%s", What.str().c_str(),
        Step.str().c_str(), resultName(R), Log.empty() ? "" : "\n",
        StringRef(Log).rtrim().str().c_str(), Hint.c_str());
  };
  for (const NvJitLinkInput &In : Inputs) {
    int Type = In.Kind == NvJitLinkInput::Cubin    ? InputCubin
               : In.Kind == NvJitLinkInput::Ptx    ? InputPtx
               : In.Kind == NvJitLinkInput::LtoIR  ? InputLtoIR
               : In.Kind == NvJitLinkInput::Object ? InputObject
                                                   : InputLibrary;
    std::string Name = In.Name;
    Result R = In.Path.empty() ? A.AddData(H, Type, In.Data.data(),
                                           In.Data.size(), Name.c_str())
                               : A.AddFile(H, Type, In.Path.c_str());
    if (R)
      return Fail(R, "reading " + In.Name);
  }
  if (Result R = A.Complete(H))
    return Fail(R, "linking");
  size_t Size = 0;
  std::string Out;
  if (EmitPtx) {
    if (Result R = A.GetLinkedPtxSize(H, &Size))
      return Fail(R, "returning PTX");
    Out.resize(Size);
    if (Result R = A.GetLinkedPtx(H, Out.data()))
      return Fail(R, "returning PTX");
    Out.resize(strnlen(Out.data(), Size));
  } else {
    if (Result R = A.GetLinkedCubinSize(H, &Size))
      return Fail(R, "returning the cubin");
    Out.resize(Size);
    if (Result R = A.GetLinkedCubin(H, Out.data()))
      return Fail(R, "returning the cubin");
  }
  return Out;
}

} // namespace fatlink::codegen
