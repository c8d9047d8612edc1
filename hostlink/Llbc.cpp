//===- hostlink/Llbc.cpp - `fatlink llbc`: rustc's device linker ---------===//
//
// rustc links `nvptx64-nvidia-cuda` crates (cdylib, bin) through a linker of
// flavor `llbc`, by default its llvm-bitcode-linker; `-C linker=fatlink-llbc`
// puts fatlink in its place. rustc passes
//
//   --export-symbol NAME... INPUTS... -L DIR --target nvptx64-nvidia-cuda
//   --target-cpu sm_XX -o out.ptx -O3 --debug
//
// and expects one PTX file for that CPU, which fatlink writes the way
// llvm-bitcode-linker does (no ptxas needed), but with fatlink's link:
// libdevice, reflection, undefined-symbol checks with origins. With
// `--fatlink-arch=...` (`-C link-arg=`, FATLINK_ARCH or a config file)
// the output is whatever its extension names: a multi-target fatbin, a host
// object, a cubin, or a directory.
//
//===----------------------------------------------------------------------===//

#include "hostlink/HostLink.h"
#include "hostlink/Settings.h"
#include "linker/Context.h"
#include "linker/DeviceBuild.h"
#include "linker/Options.h"

#include "llvm/Option/Arg.h"
#include "llvm/Option/ArgList.h"
#include "llvm/Option/OptTable.h"
#include "llvm/Option/Option.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/StringSaver.h"

using namespace llvm;

namespace fatlink {

namespace {

#define FATLINK_OPTIONS_INC "hostlink/LlbcOptions.inc"
#include "linker/CommandOptTable.inc"

} // namespace

/// An input as rustc names it: a path, else a name in a -L directory.
static std::string findInput(StringRef Name, ArrayRef<std::string> Dirs) {
  if (sys::fs::exists(Name) || sys::path::is_absolute(Name))
    return Name.str();
  for (const std::string &Dir : Dirs) {
    SmallString<256> Path(Dir);
    sys::path::append(Path, Name);
    if (sys::fs::exists(Path))
      return std::string(Path);
  }
  return Name.str(); // readInputs reports it
}

/// The device-link configuration for rustc's arguments and the settings.
static Expected<DeviceLinkConfig> llbcConfig(const opt::InputArgList &Args,
                                             const Settings &S) {
  StringRef Triple = Args.getLastArgValue(OPT_target, "nvptx64-nvidia-cuda");
  if (!Triple.starts_with("nvptx64-"))
    return createStringError(inconvertibleErrorCode(),
                             "--target %s: fatlink llbc links "
                             "nvptx64-nvidia-cuda code only",
                             Triple.str().c_str());
  std::string Output = Args.getLastArgValue(OPT_output).str();
  if (Output.empty())
    return createStringError(inconvertibleErrorCode(), "no output: pass -o");

  std::string Cpu = Args.getLastArgValue(OPT_target_cpu, "sm_30").str();
  Expected<DeviceLinkConfig> C = deviceConfigFromSettings(S, "all-major");
  if (!C)
    return C.takeError();
  C->Output = Output;
  C->OutputChosenBy = "rustc's -o";
  StringRef Ext = sys::path::extension(Output);
  if (Ext == ".ptx" || Ext == ".cubin")
    C->OutKind = OutputKind::File;
  else if (Ext == ".fatbin")
    C->OutKind = OutputKind::Fatbin;
  else if (Ext == ".o")
    C->OutKind = OutputKind::HostObject;
  else
    C->OutKind = OutputKind::Directory;

  // rustc's own request: one PTX file for --target-cpu, no ptxas.
  if (!S.get("arch") && Ext == ".ptx") {
    C->ArchLists = {Cpu};
    C->Names.Arch = "rustc's -C target-cpu";
    C->RunPtxas = false;
  }

  // As for the arch and the PTX ISA, a setting outranks what rustc passes.
  if (const opt::Arg *A = Args.getLastArg(OPT_opt_level); A && !S.get("opt")) {
    StringRef L = A->getValue();
    if (L == "s" || L == "z")
      C->Link.OptLevel = 2;
    else if (Expected<unsigned> N = parseUnsigned("-O", L, 3))
      C->Link.OptLevel = *N;
    else
      return N.takeError();
  }
  // A +ptxNN feature from rustc's -C target-feature picks the PTX ISA,
  // unless the setting does. rustc passes every version the one asked for
  // implies (+ptx80 arrives as +ptx32,+ptx40,...,+ptx80): the newest is
  // the one asked for.
  if (!S.get("ptx-version"))
    for (StringRef Features : Args.getAllArgValues(OPT_target_feature)) {
      SmallVector<StringRef, 16> Parts;
      Features.split(Parts, ',');
      for (StringRef F : Parts) {
        unsigned V;
        if (F.consume_front("+ptx") && !F.getAsInteger(10, V) &&
            V > C->PtxVersion) {
          C->PtxVersion = V;
          C->Names.PtxVersion = "rustc's -C target-feature=+ptx" + F.str();
        }
      }
    }
  C->Link.ExportSymbols = Args.getAllArgValues(OPT_export_symbol);
  std::vector<std::string> Dirs = Args.getAllArgValues(OPT_lib_dir);
  for (const opt::Arg *A : Args.filtered(OPT_INPUT))
    C->Inputs.push_back(findInput(A->getValue(), Dirs));
  return C;
}

static void llbc(Context &Ctx, ArrayRef<const char *> Args,
                 StringSaver &Saver) {
  if (is_contained(Args, StringRef("--fatlink-help")))
    return printSettingsHelp(Ctx.Out, SettingsTool::Llbc);
  // fatlink's own settings travel among rustc's arguments.
  SmallVector<const char *, 64> Argv(Args.begin(), Args.end());
  if (Error E = expandResponseFiles(Argv, Saver))
    return Ctx.error(std::move(E));
  std::vector<std::string> Own;
  SmallVector<const char *, 64> Rest;
  for (const char *A : Argv)
    (isFatlinkArg(A) ? (Own.push_back(A), void()) : Rest.push_back(A));

  CommandOptTable Table; // the parsed arguments refer to it
  std::optional<opt::InputArgList> List =
      parseCommandLine(Ctx, Table, Rest, Saver,
                       {"fatlink llbc [options] <inputs...>",
                        "fatlink llbc: rustc's nvptx64 device linker (-C "
                        "linker=fatlink-llbc); fatlink's --fatlink-* "
                        "settings: see --fatlink-help",
                        OPT_UNKNOWN, OPT_help, OPT_version});
  if (!List)
    return;
  Expected<Settings> S = collectSettings(
      Own, [](StringRef Name) { return sys::Process::GetEnv(Name); });
  if (!S)
    return Ctx.error(S.takeError());
  Ctx.Verbose = S->flag("verbose");
  for (const std::string &W : unknownSettingVariables(environmentNames()))
    Ctx.warn(W);
  Expected<DeviceLinkConfig> C = llbcConfig(*List, *S);
  if (!C)
    return Ctx.error(C.takeError());
  // A dry run writes nothing, not even the directory for intermediates.
  if (!S->flag("dry-run"))
    if (Error E = saveTempsFromSettings(Ctx, *S, C->Output))
      return Ctx.error(std::move(E));
  if (progressWanted(Ctx.Err, S->flag("quiet")))
    Ctx.startProgress(progressDelay());
  if (S->flag("dry-run")) {
    // The plan, and no output: rustc shows it only when the link fails,
    // as it does under cargo.
    Expected<lto::InputSet> Inputs =
        lto::readInputs(C->Inputs, lto::InputMode::Device, C->Link.ErrorLimit);
    if (!Inputs)
      Ctx.error(Inputs.takeError());
    else if (Error E = printDevicePlan(Ctx, *C, *Inputs))
      Ctx.error(std::move(E));
    else if (std::optional<std::string> Msg = dryRunUnderCargo(*S, C->Output))
      Ctx.error(*Msg);
  } else {
    runTracedAndCommit(Ctx, *C, [&](std::vector<StagedFile> &Pending) {
      return runDeviceLink(
          Ctx, *C, [&] { return probeTools(Ctx, *C); }, &Pending);
    });
  }
  Ctx.stopProgress();
}

bool isLlbcCommandLine(ArrayRef<const char *> Args) {
  for (size_t I = 0; I < Args.size(); ++I) {
    StringRef A = Args[I];
    if (A == "--target-cpu" || A.starts_with("--target-cpu="))
      return true;
    StringRef Triple = A;
    if (A == "--target" && I + 1 < Args.size())
      Triple = Args[I + 1];
    else if (!Triple.consume_front("--target="))
      continue;
    if (Triple.starts_with("nvptx64-"))
      return true;
  }
  return false;
}

int llbcMain(ArrayRef<const char *> Args, raw_ostream &Out, raw_ostream &Err) {
  return runCommand(Args, Out, Err, llbc);
}

} // namespace fatlink
