//===- linker/HostLink.cpp - `fatlink cc`: the host link wrapper ---------===//
//
// `fatlink cc` (installed as `fatlink-cc`, for cargo's `linker = ...`) takes
// a cc/clang link command line exactly as rustc or a build system writes it
// and:
//
//   1. separates fatlink's own `--fatlink-*` arguments from the rest, which
//      reach the host linker byte for byte and in order (inside response
//      files too: a response file that holds none of ours is passed as is);
//   2. finds the link's inputs: files on the command line, `-l` libraries
//      searched in `-L` directories as the linker would (static archives
//      only: shared libraries carry their own fatbins), and `-Wl,`/-Xlinker
//      file arguments;
//   3. reads their device code (objects and archives with `.llvm.offloading`
//      images: fatlink embed, clang --offload-new-driver);
//   4. if there is any, runs the device link to a host object (the fatbin,
//      its registration wrapper and the kernel table) and adds it to the
//      link; if there is none, only forwards;
//   5. runs the host linker and returns its exit code, its output unchanged.
//
// Archives contribute every device image they hold, like --whole-archive:
// kernels are roots that nothing in the host code references by symbol, so
// a lazy rule would drop them; the device link's dead-code removal drops
// what no kernel reaches.
//
//===----------------------------------------------------------------------===//

#include "linker/Cache.h"
#include "linker/Context.h"
#include "linker/DeviceBuild.h"
#include "linker/Linker.h"
#include "linker/Options.h"
#include "linker/Settings.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/StringSaver.h"
#include "llvm/Support/TimeProfiler.h"
#include "llvm/TargetParser/Host.h"

using namespace llvm;

namespace fatlink {

namespace {

/// What fatlink learned from a cc command line.
struct HostLinkLine {
  /// Arguments for the host linker, in order, fatlink's removed.
  std::vector<std::string> Forward;
  /// fatlink's own arguments.
  std::vector<std::string> Own;
  /// Files whose device code goes into the device link, in link order.
  std::vector<std::string> Inputs;
  std::string Output;
  std::string TargetTriple; ///< from --target= / -target, if given
  /// Contents of response files that held fatlink arguments, without them;
  /// each replaces one RewrittenMarker in Forward.
  std::vector<std::vector<std::string>> Rewritten;
};

/// Stands in Forward for a response file that must be rewritten.
// Two literals: "\x01fatlink" would be one hex escape, \x01fa (out of range).
constexpr const char *RewrittenMarker = "\x01" "fatlink-rewritten-rsp";

/// cc options whose value is the next argument.
bool takesSeparateValue(StringRef Arg) {
  static constexpr const char *Separate[] = {
      "-o",       "-L",         "-l",       "-x",         "-T",
      "-u",       "-e",         "-z",       "-Xlinker",   "-include",
      "-I",       "-isystem",   "-MF",      "-MT",        "-MQ",
      "-target",  "-arch",      "-isysroot", "--sysroot", "-Xassembler",
      "-Xpreprocessor", "-dumpdir", "-specs", "--param",
  };
  return is_contained(Separate, Arg);
}

class LineParser {
public:
  LineParser(StringSaver &Saver) : Saver(Saver) {}

  Expected<HostLinkLine> parse(ArrayRef<const char *> Args);

private:
  Error walk(ArrayRef<const char *> Args, std::vector<std::string> &Forward);
  void linkerArg(StringRef Arg);
  void library(StringRef Name);
  void input(StringRef Path);
  void resolveLibraries();

  StringSaver &Saver;
  HostLinkLine Line;
  std::vector<std::string> LibDirs;
  /// -l names in order, each with the -Bstatic state it was seen in.
  std::vector<std::pair<std::string, bool>> Libraries;
  bool Static = false;
};

} // namespace

void LineParser::input(StringRef Path) {
  if (Path != "-")
    Line.Inputs.push_back(Path.str());
}

/// -lNAME: the archive the linker would take (in -Bstatic mode, only an
/// archive; otherwise a shared library wins and carries no device code).
void LineParser::library(StringRef Name) {
  Libraries.push_back({Name.str(), Static});
}

/// An argument the compiler driver passes to the linker (-Wl, -Xlinker).
void LineParser::linkerArg(StringRef Arg) {
  if (Arg == "-Bstatic" || Arg == "-static" || Arg == "-dn" || Arg == "-non_shared")
    Static = true;
  else if (Arg == "-Bdynamic" || Arg == "-dy" || Arg == "-call_shared")
    Static = false;
  else if (Arg.consume_front("-l"))
    library(Arg);
  else if (Arg.consume_front("-L"))
    LibDirs.push_back(Arg.str());
  else if (!Arg.starts_with("-") && sys::fs::is_regular_file(Arg))
    input(Arg);
}

/// Walks the arguments, appending those for the host linker to Forward.
Error LineParser::walk(ArrayRef<const char *> Args,
                       std::vector<std::string> &Forward) {
  for (size_t I = 0; I < Args.size(); ++I) {
    StringRef Arg = Args[I];
    if (isFatlinkArg(Arg)) {
      Line.Own.push_back(Arg.str());
      continue;
    }
    if (Arg.starts_with("@") && Arg.size() > 1) {
      // Read the response file (and those it names); forward the file
      // itself unless it holds fatlink arguments, which must not reach the
      // host linker: then its other arguments go into a rewritten one.
      SmallVector<const char *, 64> Expanded = {Arg.data()};
      if (Error E = expandResponseFiles(Expanded, Saver))
        return E;
      size_t OwnBefore = Line.Own.size();
      std::vector<std::string> Inner;
      if (Error E = walk(Expanded, Inner))
        return E;
      if (Line.Own.size() == OwnBefore) {
        Forward.push_back(Arg.str());
      } else {
        Line.Rewritten.push_back(std::move(Inner));
        Forward.push_back(RewrittenMarker);
      }
      continue;
    }
    Forward.push_back(Arg.str());

    auto Next = [&]() -> StringRef {
      if (I + 1 >= Args.size())
        return "";
      ++I;
      Forward.push_back(Args[I]);
      return Args[I];
    };
    if (Arg == "-o")
      Line.Output = Next().str();
    else if (Arg.starts_with("-o"))
      Line.Output = Arg.drop_front(2).str();
    else if (Arg == "-L")
      LibDirs.push_back(Next().str());
    else if (Arg.starts_with("-L"))
      LibDirs.push_back(Arg.drop_front(2).str());
    else if (Arg == "-l")
      library(Next());
    else if (Arg.starts_with("-l"))
      library(Arg.drop_front(2));
    else if (Arg == "-Xlinker")
      linkerArg(Next());
    else if (Arg.consume_front("-Wl,")) {
      SmallVector<StringRef, 8> Parts;
      Arg.split(Parts, ',');
      for (StringRef P : Parts)
        linkerArg(P);
    } else if (Arg == "-static")
      Static = true;
    else if (Arg == "-target")
      Line.TargetTriple = Next().str();
    else if (Arg.consume_front("--target="))
      Line.TargetTriple = Arg.str();
    else if (takesSeparateValue(Arg))
      Next();
    else if (!Arg.starts_with("-"))
      input(Arg);
  }
  return Error::success();
}

/// Finds the archive each -l names, as the linker searches: the -L
/// directories in order; libNAME.so first unless -Bstatic was in effect
/// (then a shared library is used and carries no device code).
void LineParser::resolveLibraries() {
  for (const auto &[Name, StaticOnly] : Libraries) {
    std::vector<std::string> Candidates;
    StringRef N = Name;
    if (N.consume_front(":")) {
      Candidates.push_back(N.str());
    } else {
      if (!StaticOnly)
        Candidates.push_back(("lib" + N + ".so").str());
      Candidates.push_back(("lib" + N + ".a").str());
    }
    [&] {
      for (const std::string &Dir : LibDirs)
        for (const std::string &C : Candidates) {
          SmallString<256> Path(Dir);
          sys::path::append(Path, C);
          if (!sys::fs::is_regular_file(Path))
            continue;
          if (!StringRef(C).ends_with(".so"))
            input(Path);
          return;
        }
    }();
  }
}

Expected<HostLinkLine> LineParser::parse(ArrayRef<const char *> Args) {
  if (Error E = walk(Args, Line.Forward))
    return std::move(E);
  resolveLibraries();
  return std::move(Line);
}

//===----------------------------------------------------------------------===//
// The command
//===----------------------------------------------------------------------===//

/// Quotes an argument for a GNU response file.
static std::string quoteForResponseFile(StringRef Arg) {
  std::string Q = "'";
  for (char C : Arg) {
    if (C == '\\' || C == '\'')
      Q += '\\';
    Q += C;
  }
  return Q + "'";
}

/// The host linker's arguments: the forwarded ones, each rewritten response
/// file written anew, and the device object last.
static Expected<std::vector<std::string>>
hostLinkerArgs(Context &Ctx, const HostLinkLine &Line, StringRef DeviceObject) {
  std::vector<std::string> Args;
  size_t NextRewritten = 0;
  for (const std::string &A : Line.Forward) {
    if (A != RewrittenMarker) {
      Args.push_back(A);
      continue;
    }
    Expected<std::string> Path =
        Ctx.Temps.create("link-" + std::to_string(NextRewritten) + ".rsp");
    if (!Path)
      return Path.takeError();
    std::error_code EC;
    raw_fd_ostream OS(*Path, EC);
    if (EC)
      return createStringError(EC, "cannot write %s: %s", Path->c_str(),
                               EC.message().c_str());
    for (const std::string &Inner : Line.Rewritten[NextRewritten++])
      OS << quoteForResponseFile(Inner) << "\n";
    OS.close();
    if (std::error_code EC = OS.error()) {
      OS.clear_error();
      return createStringError(EC, "cannot write %s: %s", Path->c_str(),
                               EC.message().c_str());
    }
    Args.push_back("@" + *Path);
  }
  if (!DeviceObject.empty())
    Args.push_back(DeviceObject.str());
  return Args;
}

static Expected<std::string> findLinker(StringRef Name) {
  if (Name.contains('/')) {
    if (!sys::fs::can_execute(Name))
      return createStringError(inconvertibleErrorCode(),
                               "host linker %s not found or not executable",
                               Name.str().c_str());
    return Name.str();
  }
  ErrorOr<std::string> Path = sys::findProgramByName(Name);
  if (!Path)
    return createStringError(inconvertibleErrorCode(),
                             "host linker '%s' not found in PATH: set "
                             "--fatlink-linker= or FATLINK_LINKER",
                             Name.str().c_str());
  return *Path;
}

static int runHostLinker(Context &Ctx, StringRef Linker,
                         ArrayRef<std::string> Args) {
  std::vector<StringRef> Argv = {Linker};
  for (const std::string &A : Args)
    Argv.push_back(A);
  Ctx.verboseCommand(Argv);
  std::string ErrMsg;
  bool Failed = false;
  // Inherit stdio: the linker's messages reach the user unchanged.
  int RC = sys::ExecuteAndWait(Argv[0], Argv, std::nullopt, {}, 0, 0, &ErrMsg,
                               &Failed);
  if (Failed) {
    Ctx.error("cannot run the host linker " + Linker + ": " + ErrMsg);
    return 1;
  }
  if (RC < 0) {
    Ctx.error("the host linker " + Linker + " crashed: " + ErrMsg);
    return 1;
  }
  return RC;
}

/// --fatlink-dry-run: what a link would do, without doing it.
static Expected<std::string> printPlan(Context &Ctx, const DeviceLinkConfig &C,
                                       const lto::InputSet &Inputs) {
  Expected<ToolFacts> Facts = probeTools(Ctx, C);
  if (!Facts)
    return Facts.takeError();
  Expected<std::vector<lto::Target>> Targets =
      planTargets(C.ArchLists, *Facts, C.PtxVersion);
  if (!Targets)
    return Targets.takeError();

  raw_ostream &OS = Ctx.Out;
  OS << "fatlink: device inputs:\n";
  for (const lto::DeviceImage &Image : Inputs.Images)
    OS << "  " << Image.Origin
       << (Image.Arch.empty() ? "" : " [" + Image.Arch + "]") << "\n";
  for (const lto::DeviceObject &O : Inputs.Objects)
    OS << "  " << O.Origin << " [" << O.Arch << ", relocatable cubin]\n";
  OS << "fatlink: targets:";
  for (const lto::Target &T : *Targets)
    OS << " " << T.Name << " (" << (T.IsPTX ? "ptx" : "cubin") << ", PTX ISA "
       << T.ptxVersionString() << ")";
  OS << "\nfatlink: would run:\n  link and optimize (O" << C.Link.OptLevel
     << ")\n";
  for (const lto::Target &T : *Targets) {
    OS << "  " << C.Paths.Ptxas << " -arch=" << (T.IsPTX ? T.Name : T.Cpu);
    if (!T.IsPTX)
      OS << " -O" << C.Link.OptLevel;
    OS << " <" << T.Name << ".ptx>";
    if (!T.IsPTX)
      OS << " -o <" << T.Name << ".cubin>";
    OS << "\n";
  }
  OS << "  package: fatbin ("
     << (C.Fatbin.Compress == packager::Compression::None
             ? std::string("uncompressed")
             : "zstd-" + std::to_string(C.Fatbin.ZstdLevel))
     << ") in a host object\n";
  if (!C.CacheDir.empty())
    OS << "  cache: " << C.CacheDir << "/" << deviceLinkKey(C, Inputs) << "\n";
  return std::string("<fatlink-device.o>");
}

/// The device half of the link: device images in, host object path out
/// (empty when the inputs carry no device code).
static Expected<std::string> deviceLinkForHost(Context &Ctx,
                                               const HostLinkLine &Line,
                                               const Settings &S,
                                               bool DryRun) {
  TimeTraceScope Scope("Device link");
  Expected<lto::InputSet> Inputs =
      lto::readInputs(Line.Inputs, lto::InputMode::HostLink);
  if (!Inputs)
    return Inputs.takeError();
  if (Inputs->Images.empty()) {
    Ctx.verbose("fatlink: no device code in the inputs; forwarding only");
    return std::string();
  }

  Expected<DeviceLinkConfig> C = deviceConfigFromSettings(S, "all-major");
  if (!C)
    return C.takeError();
  std::string Triple =
      Line.TargetTriple.empty() ? sys::getDefaultTargetTriple() : Line.TargetTriple;
  Expected<packager::HostArch> Host = parseHostArch(Triple);
  if (!Host)
    return Host.takeError();
  C->HostArch = *Host;

  if (DryRun)
    return printPlan(Ctx, *C, *Inputs);

  Expected<DeviceBuild> B =
      buildDeviceCached(Ctx, *C, *Inputs, [&] { return probeTools(Ctx, *C); });
  if (!B)
    return B.takeError();
  Expected<std::string> Path = Ctx.Temps.create("device.o");
  if (!Path)
    return Path.takeError();
  std::error_code EC;
  raw_fd_ostream OS(*Path, EC);
  if (EC)
    return createStringError(EC, "cannot write %s: %s", Path->c_str(),
                             EC.message().c_str());
  OS << B->Object;
  OS.close();
  if (std::error_code EC = OS.error()) {
    OS.clear_error();
    return createStringError(EC, "cannot write %s: %s", Path->c_str(),
                             EC.message().c_str());
  }
  return *Path;
}

int hostLinkMain(ArrayRef<const char *> Args, raw_ostream &Out,
                 raw_ostream &Err) {
  Context Ctx(Out, Err);
  BumpPtrAllocator Alloc;
  StringSaver Saver(Alloc);
  LineParser Parser(Saver);
  Expected<HostLinkLine> Line = Parser.parse(Args);
  if (!Line) {
    Ctx.error(Line.takeError());
    return 1;
  }
  Expected<Settings> S = collectSettings(
      Line->Own, [](StringRef Name) { return sys::Process::GetEnv(Name); });
  if (!S) {
    Ctx.error(S.takeError());
    return 1;
  }
  Ctx.Verbose = S->flag("verbose");
  bool DryRun = S->flag("dry-run");
  if (std::optional<StringRef> Dir = S->get("save-temps")) {
    std::string D = (*Dir == "1" || Dir->empty())
                        ? sys::path::parent_path(Line->Output).str()
                        : Dir->str();
    // Named after the executable (app -> app.device.o, app.sm_80.ptx).
    StringRef Stem = sys::path::stem(Line->Output);
    if (Error E = Ctx.Temps.saveIn(D.empty() ? "." : D,
                                   Stem.empty() ? "a" : Stem)) {
      Ctx.error(std::move(E));
      return 1;
    }
  }
  std::string TimeTrace = S->get("time-trace").value_or("").str();
  if (!TimeTrace.empty())
    timeTraceProfilerInitialize(500, "fatlink-cc");

  int RC = [&] {
    Expected<std::string> Linker = findLinker(S->get("linker").value_or("cc"));
    if (!Linker) {
      Ctx.error(Linker.takeError());
      return 1;
    }
    Expected<std::string> DeviceObject =
        deviceLinkForHost(Ctx, *Line, *S, DryRun);
    if (!DeviceObject) {
      Ctx.error(DeviceObject.takeError());
      return 1;
    }
    Expected<std::vector<std::string>> HostArgs =
        DryRun ? std::vector<std::string>(Line->Forward)
               : hostLinkerArgs(Ctx, *Line, *DeviceObject);
    if (DryRun && !DeviceObject->empty() && HostArgs)
      HostArgs->push_back(*DeviceObject);
    if (!HostArgs) {
      Ctx.error(HostArgs.takeError());
      return 1;
    }
    if (DryRun) {
      Ctx.Out << "fatlink: host link:\n  " << *Linker;
      for (const std::string &A : *HostArgs)
        Ctx.Out << " " << A;
      Ctx.Out << "\n";
      return 0;
    }
    TimeTraceScope Scope("Host link");
    return runHostLinker(Ctx, *Linker, *HostArgs);
  }();

  if (timeTraceProfilerEnabled()) {
    if (Error E = timeTraceProfilerWrite(TimeTrace, Line->Output)) {
      Ctx.error(std::move(E));
      RC = RC ? RC : 1;
    }
    timeTraceProfilerCleanup();
  }
  return RC;
}

} // namespace fatlink
