//===- linker/Embed.cpp - The `fatlink embed` command ---------------------===//
//
// Wraps device bitcode in a host ELF object the way clang's new offload
// driver does, so that Rust device crates travel inside ordinary host static
// libraries: every bitcode member of every input becomes one LLVM
// OffloadBinary (IMG_Bitcode, OFK_Cuda) in a `.llvm.offloading` section
// (SHT_LLVM_OFFLOADING, SHF_EXCLUDE: a host link drops it). `fatlink
// device-link`, clang-linker-wrapper and `llvm-objdump --offloading` read
// the result. The passes:
//
//   parse options   -> Config
//   read inputs     -> every device image with its origin, checked to be
//                      nvptx64 bitcode fatlink can read (lto::readInputs)
//   choose the arch -> --arch, else the newest "target-cpu" in the bitcode
//   regular LTO     -> ThinLTO modules (rustc's) rewritten without their
//                      summary
//   write object    -> one OffloadBinary per image, in input order
//
// The arch an OffloadBinary records is the GPU its code may run on from:
// clang-linker-wrapper compiles each arch's images together for that arch.
// So one embed records one arch for all its plain bitcode: the newest
// `target-cpu` any function was compiled for, never below sm_75, the oldest
// arch CUDA 13's ptxas builds (rustc's nvptx default, sm_30, cannot be
// built by any current toolkit). Images that already come with an arch (from
// an OffloadBinary in an input object) keep it.
//
// rustc writes ThinLTO summaries into its bitcode. clang-linker-wrapper's
// device link (clang-nvlink-wrapper) gives every ThinLTO module a backend
// task of its own, on a thread pool whose output callback is not
// thread-safe: under load two tasks were handed the same assembly file, and
// nvlink then failed with "Multiple definition of 'vec_add'" (seen in CI,
// 1 run in 4). clang embeds regular-LTO modules for -foffload-lto, so embed
// does too: a module with a ThinLTO summary is read and written back without
// it (use-list order kept, so fatlink's own link of it is unchanged). One
// LTO task then compiles everything, as for clang's own objects.
//
//===----------------------------------------------------------------------===//

#include "linker/Context.h"
#include "linker/Linker.h"
#include "linker/Options.h"
#include "lto/LTO.h"
#include "packager/Packager.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Option/Arg.h"
#include "llvm/Option/ArgList.h"
#include "llvm/Option/OptTable.h"
#include "llvm/Option/Option.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/TimeProfiler.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

#include <optional>
#include <tuple>

using namespace llvm;

namespace fatlink {

//===----------------------------------------------------------------------===//
// Options
//===----------------------------------------------------------------------===//

namespace {

#define FATLINK_OPTIONS_INC "linker/EmbedOptions.inc"
#include "linker/CommandOptTable.inc"

struct Config {
  std::vector<std::string> Inputs;
  std::string Output;
  std::string Arch; // empty: from the bitcode
  packager::HostArch Host = packager::HostArch::X86_64;
  /// --expect-kernels: warn when no input defines a kernel.
  bool ExpectKernels = false;
};

/// A GPU arch name, "sm_90a" -> {90, "a"}.
struct GpuArch {
  unsigned Sm = 0;
  std::string Suffix;
};

} // namespace

/// The oldest arch CUDA 13's ptxas builds; the floor of the default arch.
static constexpr unsigned MinDefaultSm = 75;

static std::optional<GpuArch> parseGpuArch(StringRef Name) {
  if (!Name.consume_front("sm_"))
    return std::nullopt;
  StringRef Digits = Name.take_while(isDigit);
  StringRef Suffix = Name.drop_front(Digits.size());
  GpuArch A;
  if (Digits.empty() || Digits.getAsInteger(10, A.Sm) ||
      !(Suffix.empty() || Suffix == "a" || Suffix == "f"))
    return std::nullopt;
  A.Suffix = Suffix.str();
  return A;
}

/// Checks --arch against the processors this LLVM's NVPTX backend knows.
static Error checkArch(StringRef Arch) {
  Expected<std::vector<lto::ArchInfo>> Known = lto::getLLVMArches();
  if (!Known)
    return Known.takeError();
  SmallVector<StringRef, 32> Cpus;
  for (const lto::ArchInfo &A : *Known) {
    if (A.Cpu == Arch)
      return Error::success();
    Cpus.push_back(A.Cpu);
  }
  std::string Msg = "unknown GPU arch '" + Arch.str() + "' for --arch";
  std::string Nearest = nearestName(Arch, Cpus);
  if (!Nearest.empty())
    Msg += ": did you mean '" + Nearest + "'?";
  else
    Msg += ": expected sm_XX[a|f], e.g. sm_80";
  return createStringError(inconvertibleErrorCode(), Msg);
}

/// The configuration Args describe; every bad option is reported to Ctx.
static Config parseConfig(Context &Ctx, const opt::InputArgList &Args) {
  Config C;
  auto Fail = [&](Error E) { Ctx.error(std::move(E)); };

  for (const opt::Arg *A : Args.filtered(OPT_INPUT))
    C.Inputs.push_back(A->getValue());
  C.Output = Args.getLastArgValue(OPT_output).str();
  C.Arch = Args.getLastArgValue(OPT_arch_EQ).str();
  C.ExpectKernels = Args.hasArg(OPT_expect_kernels);
  Ctx.Verbose = Args.hasArg(OPT_verbose);

  if (C.Output.empty())
    Fail(createStringError(inconvertibleErrorCode(),
                           "no output: pass -o <file.o>"));
  if (const opt::Arg *A = Args.getLastArg(OPT_arch_EQ))
    if (Error E = checkArch(A->getValue()))
      Fail(std::move(E));

  Expected<packager::HostArch> Host = packager::parseHostArch(
      Args.hasArg(OPT_host_arch_EQ) ? Args.getLastArgValue(OPT_host_arch_EQ)
                                    : StringRef(sys::getDefaultTargetTriple()));
  if (Host)
    C.Host = *Host;
  else
    Fail(Host.takeError());
  return C;
}

//===----------------------------------------------------------------------===//
// Passes
//===----------------------------------------------------------------------===//

/// The newest "target-cpu" of the functions defined in \p MB, if any. The
/// module is read lazily: function bodies stay unread.
/// \p MB's module in \p LLVMCtx, read lazily: function bodies stay unread.
static Expected<std::unique_ptr<Module>>
lazyModule(MemoryBufferRef MB, StringRef Origin, LLVMContext &LLVMCtx) {
  Expected<std::unique_ptr<Module>> MOrErr = getLazyBitcodeModule(MB, LLVMCtx);
  if (!MOrErr)
    return createStringError(inconvertibleErrorCode(),
                             "%s: corrupt bitcode: %s", Origin.str().c_str(),
                             toString(MOrErr.takeError()).c_str());
  return MOrErr;
}

static Expected<std::optional<std::string>> newestTargetCpu(MemoryBufferRef MB,
                                                            StringRef Origin) {
  LLVMContext LLVMCtx;
  Expected<std::unique_ptr<Module>> MOrErr = lazyModule(MB, Origin, LLVMCtx);
  if (!MOrErr)
    return MOrErr.takeError();
  std::optional<std::string> Newest;
  std::optional<GpuArch> NewestArch;
  for (const Function &F : **MOrErr) {
    if (F.isDeclaration())
      continue;
    StringRef Cpu = F.getFnAttribute("target-cpu").getValueAsString();
    std::optional<GpuArch> A = parseGpuArch(Cpu);
    // Newer SM first; at the same SM an `a`/`f` build needs that exact arch.
    if (A &&
        (!NewestArch || std::tie(A->Sm, A->Suffix) >
                            std::tie(NewestArch->Sm, NewestArch->Suffix))) {
      NewestArch = A;
      Newest = Cpu.str();
    }
  }
  return Newest;
}

/// The kernels \p MB defines: functions with the PTX kernel calling
/// convention (`extern "ptx-kernel"`, `__global__`). Read lazily: function
/// bodies stay unread.
static Expected<std::vector<std::string>> kernelsOf(MemoryBufferRef MB,
                                                    StringRef Origin) {
  LLVMContext LLVMCtx;
  Expected<std::unique_ptr<Module>> MOrErr = lazyModule(MB, Origin, LLVMCtx);
  if (!MOrErr)
    return MOrErr.takeError();
  std::vector<std::string> Names;
  for (const Function &F : **MOrErr)
    if (!F.isDeclaration() && F.getCallingConv() == CallingConv::PTX_Kernel)
      Names.push_back(F.getName().str());
  return Names;
}

/// -v: the kernels the inputs define. --expect-kernels (fatlink-build):
/// none is a warning naming every input, because such a program launches
/// nothing and the usual cause is a kernel declared `extern "C"`.
static Error reportKernels(Context &Ctx, const Config &C,
                           const lto::InputSet &Inputs) {
  if (!C.ExpectKernels && !Ctx.Verbose)
    return Error::success();
  TimeTraceScope Scope("Find kernels");
  std::vector<std::string> All;
  for (const lto::DeviceImage &Image : Inputs.Images) {
    Expected<std::vector<std::string>> Names =
        kernelsOf(Image.Bitcode, Image.Origin);
    if (!Names)
      return Names.takeError();
    All.insert(All.end(), Names->begin(), Names->end());
  }
  Ctx.verbose("kernels: " +
              (All.empty() ? std::string("none") : join(All, " ")));
  if (!All.empty() || !C.ExpectKernels)
    return Error::success();
  std::string List;
  for (const lto::DeviceImage &Image : Inputs.Images)
    List += "\n>>> " + Image.Origin;
  Ctx.warn("no kernels in the device code: a program linked with it "
           "launches nothing. A Rust kernel is `#[no_mangle] pub unsafe "
           "extern \"ptx-kernel\" fn` (not `extern \"C\"`), a CUDA C++ "
           "one `__global__`. Inputs:" +
           List);
  return Error::success();
}

/// The arch recorded for plain bitcode: see the file comment.
static Expected<std::string> chooseArch(Context &Ctx, const Config &C,
                                        const lto::InputSet &Inputs) {
  TimeTraceScope Scope("Choose arch");
  if (!C.Arch.empty())
    return C.Arch;
  std::string Newest;
  GpuArch NewestArch;
  for (const lto::DeviceImage &Image : Inputs.Images) {
    if (!Image.Arch.empty())
      continue;
    Expected<std::optional<std::string>> Cpu =
        newestTargetCpu(Image.Bitcode, Image.Origin);
    if (!Cpu)
      return Cpu.takeError();
    if (!*Cpu)
      continue;
    Ctx.verbose(Image.Origin + ": target-cpu " + **Cpu);
    std::optional<GpuArch> A = parseGpuArch(**Cpu);
    if (std::tie(A->Sm, A->Suffix) >
        std::tie(NewestArch.Sm, NewestArch.Suffix)) {
      Newest = **Cpu;
      NewestArch = *A;
    }
  }
  if (NewestArch.Sm < MinDefaultSm) {
    Ctx.verbose("arch: sm_" + Twine(MinDefaultSm) + " (" +
                (Newest.empty() ? "no target-cpu in the bitcode"
                                : "the bitcode asks for " + Newest) +
                "; pass --arch to choose)");
    return "sm_" + std::to_string(MinDefaultSm);
  }
  Ctx.verbose("arch: " + Newest + " (the newest target-cpu in the bitcode)");
  return Newest;
}

/// \p Bitcode as regular-LTO modules: none if no module in it has a
/// ThinLTO summary (the bytes are used as they are), else each module read
/// and written back without its summary (see the file comment).
static Expected<std::optional<std::string>>
asRegularLTO(MemoryBufferRef Bitcode, StringRef Origin) {
  auto Corrupt = [&](Error E) {
    return createStringError(inconvertibleErrorCode(),
                             "%s: corrupt bitcode: %s", Origin.str().c_str(),
                             toString(std::move(E)).c_str());
  };
  Expected<std::vector<BitcodeModule>> Mods = getBitcodeModuleList(Bitcode);
  if (!Mods)
    return Corrupt(Mods.takeError());
  bool AnyThin = false;
  for (BitcodeModule &BM : *Mods) {
    Expected<BitcodeLTOInfo> Info = BM.getLTOInfo();
    if (!Info)
      return Corrupt(Info.takeError());
    AnyThin |= Info->IsThinLTO;
  }
  if (!AnyThin)
    return std::nullopt;

  SmallVector<char, 0> Out;
  BitcodeWriter Writer(Out);
  LLVMContext LLVMCtx;
  std::vector<std::unique_ptr<Module>> Keep;
  for (BitcodeModule &BM : *Mods) {
    Expected<std::unique_ptr<Module>> M = BM.parseModule(LLVMCtx);
    if (!M)
      return Corrupt(M.takeError());
    Writer.writeModule(**M, /*ShouldPreserveUseListOrder=*/true);
    Keep.push_back(std::move(*M));
  }
  // The symbol table (irsymtab) is what LTO reads symbols from; the string
  // table refers to the modules' names, so both come before they go.
  Writer.writeSymtab();
  Writer.writeStrtab();
  return std::string(Out.begin(), Out.end());
}

/// The origin recorded for an image: its origin as read, with the input's
/// path cut to its file name ("/b/out/libgpu_math-0.1.0.rlib(m.rcgu.o)" ->
/// "libgpu_math-0.1.0.rlib(m.rcgu.o)"), so that the object does not
/// depend on where the build ran.
static std::string recordedOrigin(const Config &C, StringRef Origin) {
  StringRef Input;
  for (const std::string &In : C.Inputs)
    if (Origin.starts_with(In) && In.size() > Input.size())
      Input = In;
  return (sys::path::filename(Input) + Origin.drop_front(Input.size())).str();
}

static Error writeOutput(const Config &C, StringRef Data) {
  TimeTraceScope Scope("Write output");
  if (sys::fs::is_directory(C.Output))
    return createStringError(inconvertibleErrorCode(),
                             "-o %s is a directory, not a file",
                             C.Output.c_str());
  Expected<StagedFile> S = StagedFile::create(C.Output, Data);
  if (!S)
    return S.takeError();
  return S->commit();
}

//===----------------------------------------------------------------------===//
// The command
//===----------------------------------------------------------------------===//

static Error embed(Context &Ctx, const Config &C) {
  // One reader for all device inputs: the same checks (nvptx64, LLVM
  // version) and origins as device-link. An output that is an input would
  // destroy it.
  if (Error E = checkOutputsAreNotInputs({C.Output}, C.Inputs))
    return E;
  Expected<lto::InputSet> Inputs = lto::readInputs(C.Inputs);
  if (!Inputs)
    return Inputs.takeError();
  for (const std::string &Note : Inputs->Skipped)
    Ctx.verbose("skipped " + Note);
  // Relocatable cubins, PTX and LTO-IR (nvcc -dc, clang without
  // -foffload-lto) are not bitcode: they travel in their own objects, which
  // the device link reads as they are.
  if (!Inputs->Objects.empty()) {
    const lto::DeviceObject &O = Inputs->Objects.front();
    return createStringError(
        inconvertibleErrorCode(),
        "%s: %s is relocatable device code, not bitcode, and is not "
        "embedded: link the object itself (fatlink cc, fatlink device-link, "
        "or an archive beside the embedded object)",
        O.Container.c_str(),
        O.FromNvcc ? "nvcc -dc output" : "a relocatable cubin");
  }
  // Nothing to embed: say why, with what was skipped (nvcc -c's
  // whole-program code, host-only objects), which -v alone showed.
  if (Inputs->Images.empty()) {
    std::string Why;
    for (auto [I, Note] : enumerate(Inputs->Skipped)) {
      if (I == 3) {
        Why += "; and " + std::to_string(Inputs->Skipped.size() - 3) +
               " more (-v lists them)";
        break;
      }
      Why += (I ? "; skipped " : ": skipped ") + Note;
    }
    return createStringError(inconvertibleErrorCode(),
                             "no device bitcode to embed" + Why);
  }
  // From here on, the set of images is fixed.

  if (Error E = reportKernels(Ctx, C, *Inputs))
    return E;

  // The arch the images' code may run on from.
  Expected<std::string> Arch = chooseArch(Ctx, C, *Inputs);
  if (!Arch)
    return Arch.takeError();

  // One OffloadBinary per image, in input order.
  TimeTraceScope Scope("Write object");
  std::vector<packager::OffloadImage> Images;
  for (const lto::DeviceImage &Image : Inputs->Images) {
    packager::OffloadImage I;
    I.Arch = Image.Arch.empty() ? *Arch : Image.Arch;
    I.Origin = recordedOrigin(C, Image.Origin);
    Expected<std::optional<std::string>> Regular =
        asRegularLTO(Image.Bitcode, Image.Origin);
    if (!Regular)
      return Regular.takeError();
    I.Bitcode = *Regular ? std::move(**Regular) : Image.Bitcode.getBuffer().str();
    Ctx.verbose("embed " + Image.Origin + " [" + I.Arch + "]" +
                (*Regular ? " (ThinLTO summary dropped)" : ""));
    Images.push_back(std::move(I));
  }
  Expected<std::string> Object = packager::writeOffloadObject(Images, C.Host);
  if (!Object)
    return Object.takeError();
  return writeOutput(C, *Object);
}

int embedMain(ArrayRef<const char *> Args, raw_ostream &Out, raw_ostream &Err) {
  return runCommand(Args, Out, Err, CommandOptTable(),
                    {"fatlink embed [options] <inputs...> -o <file.o>",
                     "fatlink embed: wrap device bitcode (.bc, rustc .rcgu.o, "
                     "rlibs) as LLVM OffloadBinaries in a host object, as "
                     "clang --offload-new-driver does",
                     OPT_UNKNOWN, OPT_help, OPT_version},
                    [](Context &Ctx, opt::InputArgList &Args) {
                      Config C = parseConfig(Ctx, Args);
                      if (Ctx.errorCount())
                        return;
                      if (Error E = embed(Ctx, C))
                        Ctx.error(std::move(E));
                    });
}

} // namespace fatlink
