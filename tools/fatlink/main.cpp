//===- tools/fatlink/main.cpp - The fatlink executable -------------------===//
//
// Picks the subcommand, from the first argument or from the name the program
// was started under (fatlink-cc, fatlink-llbc), and hands the rest of the
// arguments to its entry point in linker/ or hostlink/.
//
//===----------------------------------------------------------------------===//

#include "hostlink/HostLink.h"
#include "linker/Linker.h"
#include "lto/LTO.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

using namespace llvm;

namespace {

struct Command {
  const char *Name;
  int (*Main)(ArrayRef<const char *>, raw_ostream &, raw_ostream &);
  const char *Help;
};

constexpr Command Commands[] = {
    {"device-link", fatlink::deviceLinkMain,
     "link GPU bitcode (Rust, CUDA C++) into cubins and PTX"},
    {"embed", fatlink::embedMain,
     "wrap device bitcode in a host object, as clang's offload driver does"},
    {"inspect", fatlink::inspectMain,
     "list and extract the GPU code in fatbins, objects and executables, "
     "and their kernel manifests"},
    {"bindgen", fatlink::bindgenMain,
     "typed C++ or Rust launch bindings from a program's kernel manifests"},
    {"cc", fatlink::hostLinkMain,
     "a cc link command line, with the device link of its device code"},
    {"package", fatlink::packageMain,
     "pack cubins and PTX into a fatbin or a host object"},
    {"llbc", fatlink::llbcMain,
     "rustc's nvptx64 device linker (-C linker=fatlink-llbc)"},
};

void printUsage(raw_ostream &OS) {
  OS << "OVERVIEW: fatlink: link-time optimization and fat binaries for GPU "
        "code in Rust and CUDA C++\n\n"
        "USAGE: fatlink <command> [options] <inputs...>\n\nCOMMANDS:\n";
  for (const Command &C : Commands)
    OS << "  " << left_justify(C.Name, 14) << C.Help << "\n";
  OS << "\nRun 'fatlink <command> --help' for the options of a command.\n";
}

/// When plain `fatlink` was named as a linker (cargo's `linker =`, rustc's
/// `-C linker=`), the name it should have been given. \p First is the
/// argument taken for a command.
std::string linkerHint(StringRef First, ArrayRef<const char *> Rest) {
  SmallVector<const char *, 16> All{First.data()};
  append_range(All, Rest);
  if (fatlink::isLlbcCommandLine(All))
    return " (this is rustc's nvptx64 linker command line: name "
           "fatlink-llbc as the linker, -C linker=fatlink-llbc, or run "
           "'fatlink llbc')";
  // A cc link line: options, objects and archives.
  if (First.starts_with("-") || First.ends_with(".o") ||
      First.ends_with(".a") || First.ends_with(".so") || First.contains('/'))
    return " (to use fatlink as the host linker, name fatlink-cc: "
           "linker = \"fatlink-cc\" in .cargo/config.toml, or run "
           "'fatlink cc')";
  return "";
}

} // namespace

int main(int Argc, char **Argv) {
  InitLLVM X(Argc, Argv);
  // A crash or fatal error inside LLVM, on input that got past every
  // check, becomes "fatlink: error: <input>: ..." and a clean exit.
  fatlink::lto::enableCrashRecovery();
  ArrayRef<const char *> Args(Argv, Argc);
  StringRef Prog = sys::path::filename(Args[0]);
  Args = Args.drop_front();

  // fatlink-<command> runs <command>.
  StringRef Name;
  if (Prog.consume_front("fatlink-")) {
    Name = Prog;
  } else {
    if (Args.empty()) {
      printUsage(errs());
      return 1;
    }
    Name = Args.front();
    Args = Args.drop_front();
  }
  if (Name == "--help" || Name == "-h" || Name == "help") {
    printUsage(outs());
    return 0;
  }
  if (Name == "--version") {
    outs() << fatlink::versionString() << "\n";
    return 0;
  }
  for (const Command &C : Commands)
    if (Name == C.Name)
      return C.Main(Args, outs(), errs());
  WithColor::error(errs(), "fatlink")
      << "unknown command '" << Name << "'" << linkerHint(Name, Args)
      << ": see 'fatlink --help'\n";
  return 1;
}
