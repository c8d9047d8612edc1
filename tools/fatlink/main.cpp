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

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

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
     "list and extract the GPU code in fatbins, objects and executables"},
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
      << "unknown command '" << Name << "': see 'fatlink --help'\n";
  return 1;
}
