// Options of `fatlink inspect`. Every option has help text; `--help` prints
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

def json : F<"json",
  "Print the entries as a JSON array instead of a table">, Group<grp_output>;
def kernels : F<"kernels",
  "Print the kernels of every cubin and PTX entry, with their parameter "
  "sizes, instead of the entries (--json always has them)">,
  Group<grp_output>;
def resources : F<"resources",
  "Print every cubin kernel's resources (registers per thread, stack, "
  "static shared as the driver counts it and sm_90+'s reserved shared, "
  "local and constant bank 0 bytes, declared block size), instead of the "
  "entries">,
  Group<grp_output>;
def manifest : F<"manifest",
  "Print the kernel manifest fatlink recorded in each module descriptor "
  "(host objects, executables, shared libraries): every kernel's parameters "
  "with their kinds, sizes, address spaces and element types, its launch "
  "bounds, language and defining input, instead of the entries; with "
  "--json, as JSON">,
  Group<grp_output>;
defm extract : JS<"extract", "<dir>",
  "Write every entry to <dir> (created if needed) under the name the table "
  "shows: <file>.<index>.<arch>.<cubin|ptx|bc|...>">, Group<grp_output>;

def verbose : Flag<["-"], "v">, Group<grp_diag>,
  HelpText<"Print each file scanned and each file --extract writes">;
def verbose_long : Flag<["--"], "verbose">, Alias<verbose>;
def help : F<"help", "Print this help">;
def help_short : Flag<["-"], "h">, Alias<help>;
def version : F<"version", "Print the version">;
