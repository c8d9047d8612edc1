// Options of `fatlink bindgen`. Every option has help text; `--help` prints
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

defm lang : JS<"lang", "<c++|rust>",
  "The language of the bindings: c++ (a header over fatlink/runtime.hpp, "
  "one typed launch function per kernel) or rust (a module over fatlink-rt: "
  "struct Kernels with one typed fatlink_rt::Kernel<P> per kernel)">,
  Group<grp_output>;
def output : Separate<["-"], "o">, MetaVarName<"<file>">, Group<grp_output>,
  HelpText<"Write the bindings to <file> (default: standard output)">;
defm namespace : JS<"namespace", "<name>",
  "--lang=c++: the namespace of the launch functions (default "
  "fatlink_kernels)">, Group<grp_output>;

def verbose : Flag<["-"], "v">,
  HelpText<"Print what became of each kernel: the name it is bound as, or "
  "why it is left out">;
def verbose_long : Flag<["--"], "verbose">, Alias<verbose>;
def help : F<"help", "Print this help">;
def help_short : Flag<["-"], "h">, Alias<help>;
def version : F<"version", "Print the version">;
