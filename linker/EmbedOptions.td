// Options of `fatlink embed`. Every option has help text; `--help` prints
// them grouped as below.
include "llvm/Option/OptParser.td"

class F<string name, string help> : Flag<["--"], name>, HelpText<help>;
class J<string name, string meta, string help>
    : Joined<["--"], name # "=">, MetaVarName<meta>, HelpText<help>;
// `--name=value` and `--name value`.
multiclass JS<string name, string meta, string help> {
  def NAME # _EQ : J<name, meta, help>;
  def : Separate<["--"], name>, Alias<!cast<Joined>(NAME # "_EQ")>;
}

def grp_output : OptionGroup<"output">, HelpText<"OUTPUT">;
def grp_diag : OptionGroup<"diag">, HelpText<"DIAGNOSTICS">;

def output : Separate<["-"], "o">, MetaVarName<"<file.o>">, Group<grp_output>,
  HelpText<"Write the host object to <file.o>">;
def output_EQ : Joined<["--"], "output=">, Alias<output>;
defm arch : JS<"arch", "<sm_XX>",
  "GPU arch recorded for plain bitcode inputs (default: the newest "
  "\"target-cpu\" in the bitcode, at least sm_75, the oldest CUDA 13's "
  "ptxas builds); images taken from OffloadBinaries keep their own">,
  Group<grp_output>;
defm host_arch : JS<"host-arch", "<x86_64|aarch64>",
  "Host architecture of the object (default: this machine's)">,
  Group<grp_output>;

def verbose : Flag<["-"], "v">, Group<grp_diag>,
  HelpText<"Print each image embedded, with its origin and arch">;
def verbose_long : Flag<["--"], "verbose">, Alias<verbose>;
def expect_kernels : F<"expect-kernels",
  "Warn when the inputs define no kernel (fatlink-build passes it: the "
  "inputs are all of a program's bitcode)">, Group<grp_diag>;
def help : F<"help", "Print this help">;
def help_short : Flag<["-"], "h">, Alias<help>;
def version : F<"version", "Print the version">;
