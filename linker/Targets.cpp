//===- linker/Targets.cpp - From --arch to code generation targets -------===//
//
// See Targets.h for the rules. Messages name the target and the tool that
// cannot serve it, and say what would. --min-driver reads the runtime's
// table of which driver first loads each PTX ISA
// (runtime/lib/PtxReleases.def), included here as it is, not copied.
//
//===----------------------------------------------------------------------===//

#include "linker/Targets.h"
#include "linker/Options.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

#include <algorithm>
#include <cassert>

using namespace llvm;

namespace fatlink {

std::optional<unsigned> parsePtxVersion(StringRef S) {
  unsigned Major, Minor;
  if (S.consumeInteger(10, Major) || !S.consume_front(".") ||
      S.consumeInteger(10, Minor) || !S.empty() || Major > 99 || Minor > 9)
    return std::nullopt;
  return Major * 10 + Minor;
}

namespace {

struct Spec {
  std::string Name; // as written
  std::string Cpu;  // sm_XX[a|f]
  bool IsPTX;
};

} // namespace

/// "compute_90a" -> {compute_90a, sm_90a, PTX}; "sm_80" -> {sm_80, sm_80}.
static std::optional<Spec> parseSpec(StringRef Name) {
  StringRef Rest = Name;
  bool IsPTX = Rest.consume_front("compute_");
  if (!IsPTX && !Rest.consume_front("sm_"))
    return std::nullopt;
  return Spec{Name.str(), ("sm_" + Rest).str(), IsPTX};
}

/// The names in comma-separated lists, trimmed.
static SmallVector<StringRef, 8> targetNames(ArrayRef<std::string> Lists) {
  SmallVector<StringRef, 8> Names;
  for (const std::string &List : Lists) {
    SmallVector<StringRef, 8> Parts;
    StringRef(List).split(Parts, ',', -1, /*KeepEmpty=*/false);
    for (StringRef P : Parts)
      Names.push_back(P.trim());
  }
  return Names;
}

static const lto::ArchInfo *findLLVMArch(const ToolFacts &Facts,
                                         StringRef Cpu) {
  for (const lto::ArchInfo &A : Facts.LLVMArches)
    if (A.Cpu == Cpu)
      return &A;
  return nullptr;
}

static bool ptxasSupports(const ToolFacts &Facts, StringRef Name) {
  return is_contained(Facts.PtxasArches, Name);
}

std::optional<std::vector<std::string>> namedCpus(ArrayRef<std::string> Lists,
                                                  const ToolFacts &Facts) {
  std::vector<std::string> Cpus;
  for (StringRef Name : targetNames(Lists)) {
    // A preset, or a name whose message lists the supported targets.
    std::optional<Spec> S = parseSpec(Name);
    if (!S || !findLLVMArch(Facts, S->Cpu) || !ptxasSupports(Facts, Name))
      return std::nullopt;
    if (!is_contained(Cpus, S->Cpu))
      Cpus.push_back(S->Cpu);
  }
  return Cpus;
}

/// The closest known target name, for "did you mean".
static std::string nearestTarget(const ToolFacts &Facts, StringRef Name) {
  std::vector<lto::Target> All = allTargets(Facts);
  SmallVector<StringRef, 64> Names;
  for (const lto::Target &T : All)
    Names.push_back(T.Name);
  return nearestName(Name, Names);
}

static std::string supportedRange(const ToolFacts &Facts) {
  std::vector<lto::Target> All = allTargets(Facts);
  std::string First, Last;
  for (const lto::Target &T : All)
    if (!T.IsPTX) {
      if (First.empty())
        First = T.Name;
      Last = T.Name;
    }
  return First.empty() ? "none" : First + " to " + Last;
}

/// " in FATLINK_ARCH" for a wrapper's target list; device-link's --arch
/// goes unnamed.
static std::string inArch(const TargetSettingNames &N) {
  return N.Arch.empty() ? "" : " in " + N.Arch;
}

/// The PTX ISA version asked for, as the user gave it: "--ptx-version=9.9",
/// or "PTX ISA 9.9 (FATLINK_PTX_VERSION)".
static std::string askedPtx(const TargetSettingNames &N, unsigned V) {
  if (N.PtxVersion.empty())
    return "--ptx-version=" + lto::ptxVersionString(V);
  return "PTX ISA " + lto::ptxVersionString(V) + " (" + N.PtxVersion + ")";
}

/// What picks the CUDA toolkit, for "use a newer one".
static std::string cudaPathName(const TargetSettingNames &N) {
  return N.CudaPath.empty() ? "--cuda-path" : N.CudaPath;
}

/// Checks one spec against both tools and picks its PTX version.
static Expected<lto::Target> makeTarget(const Spec &S, const ToolFacts &Facts,
                                        std::optional<unsigned> PtxVersion,
                                        const TargetSettingNames &Names) {
  const lto::ArchInfo *A = findLLVMArch(Facts, S.Cpu);
  if (!A) {
    std::string Msg = "unknown GPU target '" + S.Name + "'" + inArch(Names);
    std::string Near = nearestTarget(Facts, S.Name);
    if (!Near.empty())
      Msg += ": did you mean '" + Near + "'?";
    else
      Msg += ": LLVM " + std::to_string(Facts.LLVMMajor) +
             " knows sm_XX targets from " + supportedRange(Facts) +
             " (fatlink device-link --list-targets lists them)";
    return createStringError(Msg);
  }
  std::string PtxasName = S.Name;
  if (!ptxasSupports(Facts, PtxasName))
    return createStringError(
        "target " + S.Name + " is not supported by ptxas from CUDA " +
        Facts.PtxasRelease + " (it supports " + supportedRange(Facts) +
        "): use a CUDA toolkit that supports it (" + cudaPathName(Names) +
        "), or drop " + S.Name + inArch(Names) +
        " (fatlink device-link --list-targets lists what this machine can "
        "build)");

  lto::Target T;
  T.Name = S.Name;
  T.Cpu = S.Cpu;
  T.Sm = A->Sm;
  T.IsPTX = S.IsPTX;
  unsigned Min = A->MinPtxVersion;
  assert(Min && "probeTools works out the PTX ISA of namedCpus");
  if (Min > Facts.PtxasMaxPtx)
    return createStringError(
        "target " + S.Name + " needs PTX ISA " + lto::ptxVersionString(Min) +
        ", but ptxas from CUDA " + Facts.PtxasRelease + " accepts at most " +
        lto::ptxVersionString(Facts.PtxasMaxPtx) +
        ": use a newer CUDA toolkit (" + cudaPathName(Names) + ") or drop " +
        S.Name + inArch(Names));
  T.PtxVersion = Min;
  if (PtxVersion) {
    if (*PtxVersion < Min)
      return createStringError(
          askedPtx(Names, *PtxVersion) + " is too old for " + S.Name +
          ", which needs PTX ISA " + lto::ptxVersionString(Min) + " or newer");
    T.PtxVersion = *PtxVersion;
  }
  return T;
}

std::vector<lto::Target> allTargets(const ToolFacts &Facts) {
  std::vector<lto::Target> Result;
  for (bool IsPTX : {false, true})
    for (const lto::ArchInfo &A : Facts.LLVMArches) {
      Spec S{(IsPTX ? "compute_" : "") + (IsPTX ? A.Cpu.substr(3) : A.Cpu),
             A.Cpu, IsPTX};
      if (!A.MinPtxVersion || !ptxasSupports(Facts, S.Name) ||
          A.MinPtxVersion > Facts.PtxasMaxPtx)
        continue; // not supported, or its PTX ISA not worked out
      if (Expected<lto::Target> T = makeTarget(S, Facts, std::nullopt, {}))
        Result.push_back(std::move(*T));
      else
        consumeError(T.takeError());
    }
  return Result;
}

std::optional<std::vector<std::string>>
expandPreset(StringRef Name, const ToolFacts &Facts) {
  if (Name != "all" && Name != "all-major")
    return std::nullopt;
  std::vector<std::string> Names;
  unsigned LastMajor = 0, NewestSm = 0;
  std::string Newest;
  for (const lto::Target &T : allTargets(Facts)) {
    if (T.IsPTX || T.Cpu.find_first_of("af", 3) != std::string::npos)
      continue; // plain sm_XX only
    unsigned Major = T.Sm / 10;
    if (Name == "all" || Major != LastMajor)
      Names.push_back(T.Name);
    LastMajor = Major;
    if (T.Sm > NewestSm) {
      NewestSm = T.Sm;
      Newest = "compute_" + std::to_string(T.Sm);
    }
  }
  if (!Newest.empty())
    Names.push_back(Newest);
  return Names;
}

Expected<std::vector<lto::Target>>
planTargets(ArrayRef<std::string> Lists, const ToolFacts &Facts,
            std::optional<unsigned> PtxVersion,
            const TargetSettingNames &From) {
  // The tighter limit is the one to name: LLVM's where ptxas accepts as
  // much (a newer CUDA toolkit would not help), as in a PTX-only link,
  // which runs no ptxas and sets its limit to LLVM's.
  if (PtxVersion &&
      *PtxVersion > std::min(Facts.LLVMMaxPtx, Facts.PtxasMaxPtx)) {
    std::string Asked = askedPtx(From, *PtxVersion);
    if (Facts.LLVMMaxPtx <= Facts.PtxasMaxPtx) {
      std::string Max = lto::ptxVersionString(Facts.LLVMMaxPtx);
      return createStringError(Asked + " is newer than LLVM " +
                               std::to_string(Facts.LLVMMajor) + " can emit (" +
                               Max + "): use " + Max + " or older");
    }
    std::string Max = lto::ptxVersionString(Facts.PtxasMaxPtx);
    return createStringError(
        Asked + " is newer than ptxas from CUDA " + Facts.PtxasRelease +
        " accepts (" + Max + "): use " + Max +
        " or older, or a newer CUDA toolkit (" + cudaPathName(From) + ")");
  }

  std::vector<std::string> Names;
  for (StringRef P : targetNames(Lists))
    if (std::optional<std::vector<std::string>> Preset = expandPreset(P, Facts))
      append_range(Names, *Preset);
    else
      Names.push_back(P.str());
  if (Names.empty()) {
    if (From.Arch.empty())
      return createStringError(
          "no targets: pass --arch, for example "
          "--arch=sm_80,sm_90,compute_90 or --arch=all-major");
    return createStringError(
        "no targets in " + From.Arch +
        ": set it to targets, for example sm_80,sm_90,compute_90 or "
        "all-major (the default when it is not set)");
  }

  std::vector<lto::Target> Targets;
  StringSet<> Seen;
  Error Errors = Error::success();
  for (const std::string &Name : Names) {
    if (!Seen.insert(Name).second)
      continue;
    std::optional<Spec> S = parseSpec(Name);
    if (!S) {
      std::string Msg = "unknown GPU target '" + Name + "'" + inArch(From);
      std::string Near = nearestTarget(Facts, Name);
      Msg += Near.empty() ? ": targets are sm_XX, compute_XX, all-major or all"
                          : ": did you mean '" + Near + "'?";
      Errors = joinErrors(std::move(Errors), createStringError(Msg));
      continue;
    }
    Expected<lto::Target> T = makeTarget(*S, Facts, PtxVersion, From);
    if (!T) {
      Errors = joinErrors(std::move(Errors), T.takeError());
      continue;
    }
    Targets.push_back(std::move(*T));
  }
  if (Errors)
    return std::move(Errors);
  return Targets;
}

//===----------------------------------------------------------------------===//
// --min-driver
//===----------------------------------------------------------------------===//

namespace {

/// One row of runtime/lib/PtxReleases.def.
struct PtxRelease {
  unsigned PtxVersion; ///< times ten: 82 for 8.2
  unsigned Cuda;       ///< 1000 * major + 10 * minor: 12020 for 12.2
  const char *Linux;   ///< the release's minimum Linux driver
};

} // namespace

/// Oldest first, as the runtime reads it.
static constexpr PtxRelease PtxReleases[] = {
#define FATLINK_PTX_RELEASE(Major, Minor, Cuda, Linux)                         \
  {(Major)*10 + (Minor), (Cuda), (Linux)},
#include "runtime/lib/PtxReleases.def"
};

std::optional<DriverVersion> parseDriverVersion(StringRef V) {
  DriverVersion D;
  D.Given = V.str();
  V.consume_front("R") || V.consume_front("r");
  SmallVector<StringRef, 4> Fields;
  V.split(Fields, '.');
  for (StringRef F : Fields) {
    unsigned N = 0;
    if (F.empty() || F.find_first_not_of("0123456789") != StringRef::npos ||
        F.getAsInteger(10, N))
      return std::nullopt;
    D.Fields.push_back(N);
  }
  if (D.Fields[0] < 100 || D.Fields[0] > 9999)
    return std::nullopt;
  return D;
}

/// Whether a driver as old as \p D loads what \p Release ("580.65.06")
/// does, comparing the fields D gives: a branch ("580") stands for each of
/// its releases, as NVIDIA's tables name a release's branch.
static bool atLeast(const DriverVersion &D, StringRef Release) {
  std::optional<DriverVersion> R = parseDriverVersion(Release);
  assert(R && "the table's drivers are driver versions");
  for (auto [Have, Need] : zip(D.Fields, R->Fields))
    if (Have != Need)
      return Have > Need;
  return true;
}

static const PtxRelease *findRelease(unsigned PtxVersion) {
  for (const PtxRelease &R : PtxReleases)
    if (R.PtxVersion == PtxVersion)
      return &R;
  return nullptr;
}

/// The newest PTX ISA a driver as old as \p D loads; none if it is older
/// than the first release of the table.
static const PtxRelease *newestLoaded(const DriverVersion &D) {
  const PtxRelease *Best = nullptr;
  for (const PtxRelease &R : PtxReleases)
    if (atLeast(D, R.Linux))
      Best = &R;
  return Best;
}

static std::string cudaString(unsigned Cuda) {
  return std::to_string(Cuda / 1000) + "." + std::to_string(Cuda % 1000 / 10);
}

/// A value of --ptx-version or --min-driver as the user would give it:
/// "--min-driver=535 or newer" for device-link, "driver 535 or newer
/// (FATLINK_MIN_DRIVER)" for a wrapper's setting.
static std::string asSetting(StringRef Option, StringRef Noun,
                             StringRef Setting, StringRef Value,
                             StringRef Qualifier = "") {
  if (Setting.empty())
    return (Option + "=" + Value + Qualifier).str();
  return (Noun + " " + Value + Qualifier + " (" + Setting + ")").str();
}

/// "A", "A or B", "A, B, or C".
static std::string joinChoices(ArrayRef<std::string> Choices) {
  std::string Out;
  for (auto [I, C] : enumerate(Choices)) {
    if (I)
      Out += I + 1 < Choices.size() ? ", "
             : Choices.size() > 2   ? ", or "
                                    : " or ";
    Out += C;
  }
  return Out;
}

/// Why the driver named cannot JIT-compile PTX target \p T, and what to
/// do; none if it can.
static std::optional<std::string>
minDriverProblem(const lto::Target &T, const DriverVersion &D,
                 ArrayRef<StringRef> Named, const TargetSettingNames &From,
                 const ToolFacts *Facts, PtxIsaSource Source,
                 StringRef Origin) {
  const PtxRelease *R = findRelease(T.PtxVersion);
  if (R && atLeast(D, R->Linux))
    return std::nullopt;
  // PTX for compute_XX runs on GPUs of arch XX and newer, and a driver
  // drives none of them if it does not load the oldest PTX ISA arch XX
  // allows (R535 and all-major's compute_121): that driver never sees the
  // target, which serves the newer drivers of those GPUs.
  if (const lto::ArchInfo *A = Facts ? findLLVMArch(*Facts, T.Cpu) : nullptr)
    if (const PtxRelease *First = findRelease(A->MinPtxVersion))
      if (!atLeast(D, First->Linux))
        return std::nullopt;
  std::string Isa = lto::ptxVersionString(T.PtxVersion);
  std::string Driver =
      asSetting("--min-driver", "driver", From.MinDriver, D.Given);
  const PtxRelease *Newest = newestLoaded(D);

  std::string Msg = "target " + T.Name + inArch(From) + ": PTX ISA " + Isa;
  if (Source == PtxIsaSource::Inputs)
    Msg += ", the newest its inputs were compiled for,";
  else if (Source == PtxIsaSource::Nvcc && !Origin.empty())
    Msg += ", the .version of nvcc's PTX in " + Origin.str() + ",";
  else if (Source == PtxIsaSource::Nvcc)
    Msg += ", the .version of the nvcc code linked into it,";
  if (R) {
    Msg += " needs CUDA " + cudaString(R->Cuda) + " (Linux driver " + R->Linux +
           " or newer) to be JIT-compiled, but " + Driver + " is older";
    Msg += Newest ? " and loads PTX ISA " +
                        lto::ptxVersionString(Newest->PtxVersion) + " at most"
                  : " than every driver that loads PTX";
  } else {
    // Not in the table: newer than this fatlink knows (or no such
    // version). Which driver loads it is unknown, so no driver is
    // promised.
    const PtxRelease &First = PtxReleases[0];
    const PtxRelease &Last = std::end(PtxReleases)[-1];
    Msg += " is not in fatlink's table of the drivers that JIT-compile each "
           "PTX ISA (" +
           lto::ptxVersionString(First.PtxVersion) + " to " +
           lto::ptxVersionString(Last.PtxVersion) + ", CUDA " +
           cudaString(First.Cuda) + " to " + cudaString(Last.Cuda) +
           "), so whether " + Driver + " loads it is unknown";
  }

  // What to use instead (a lower PTX ISA, a newer driver), then the target
  // to drop.
  std::vector<std::string> Choices;
  if (Newest && Newest->PtxVersion < T.PtxVersion) {
    std::string Lower = lto::ptxVersionString(Newest->PtxVersion);
    const lto::ArchInfo *A = Facts ? findLLVMArch(*Facts, T.Cpu) : nullptr;
    bool ArchAllows =
        !A || !A->MinPtxVersion || A->MinPtxVersion <= Newest->PtxVersion;
    // nvcc's PTX is linked in as nvcc wrote it; the PTX of nvcc's LTO-IR
    // (no single input: Origin is empty) as the toolkit's nvJitLink does.
    std::string Cuda = "CUDA " + cudaString(Newest->Cuda) + " or older";
    if (Source == PtxIsaSource::Nvcc && !Origin.empty())
      Choices.push_back(Cuda + " for nvcc (its PTX is linked in as nvcc "
                               "wrote it)");
    else if (Source == PtxIsaSource::Nvcc)
      Choices.push_back(Cuda + " for nvcc and " + cudaPathName(From) +
                        " (nvJitLink writes the PTX of nvcc's LTO-IR)");
    else if (ArchAllows)
      Choices.push_back(asSetting("--ptx-version", "PTX ISA", From.PtxVersion,
                                  Lower, " or older"));
  }
  if (R)
    Choices.push_back(asSetting("--min-driver", "driver", From.MinDriver,
                                R->Linux, " or newer"));
  bool Use = !Choices.empty();
  auto Preset = find_if(
      Named, [&](StringRef N) { return N == "all" || N == "all-major"; });
  if (is_contained(Named, T.Name) || Preset == Named.end())
    Choices.push_back("drop " + T.Name + inArch(From));
  else
    Choices.push_back("list the targets without " + T.Name + " in place of " +
                      Preset->str() + inArch(From));
  return Msg + ": " + (Use ? "use " : "") + joinChoices(Choices);
}

Error checkMinDriver(ArrayRef<lto::Target> Targets, const DriverVersion &D,
                     ArrayRef<std::string> Lists,
                     const TargetSettingNames &From, const ToolFacts *Facts,
                     PtxIsaSource Source, ArrayRef<std::string> Origins) {
  assert((Origins.empty() || Origins.size() == Targets.size()) &&
         "one origin per target, or none");
  SmallVector<StringRef, 8> Named = targetNames(Lists);
  Error Errors = Error::success();
  for (auto [I, T] : enumerate(Targets)) {
    if (!T.IsPTX)
      continue; // a cubin loads on any driver that knows its arch
    if (std::optional<std::string> Msg =
            minDriverProblem(T, D, Named, From, Facts, Source,
                             Origins.empty() ? "" : Origins[I]))
      Errors = joinErrors(std::move(Errors), createStringError(*Msg));
  }
  return Errors;
}

} // namespace fatlink
