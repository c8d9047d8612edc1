// Options of `fatlink llbc`: the arguments rustc passes to its `llbc`
// device linker (llvm-bitcode-linker), plus fatlink's own `--fatlink-*`
// settings, which are read separately.
include "llvm/Option/OptParser.td"

multiclass JS<string name, string meta, string help> {
  def NAME : Separate<["--"], name>, MetaVarName<meta>, HelpText<help>;
  def : Joined<["--"], name # "=">, Alias<!cast<Separate>(NAME)>;
}

def output : Separate<["-"], "o">, MetaVarName<"<path>">,
  HelpText<"Output: a .ptx for --target-cpu (as llvm-bitcode-linker writes), "
           "or with --fatlink-arch a .fatbin, .o, .cubin or directory">;
defm export_symbol : JS<"export-symbol", "<name>", "Keep <name> visible">;
def lib_dir : Separate<["-"], "L">, MetaVarName<"<dir>">,
  HelpText<"Directory searched for inputs given by name">;
def lib_dir_joined : Joined<["-"], "L">, Alias<lib_dir>;
defm target : JS<"target", "<triple>", "Target triple (nvptx64-nvidia-cuda)">;
defm target_cpu : JS<"target-cpu", "<cpu>", "GPU the PTX is for (sm_XX)">;
defm target_feature : JS<"target-feature", "<features>",
  "LLVM target features (a +ptxNN feature sets the PTX ISA version)">;
def opt_level : Joined<["-"], "O">, MetaVarName<"<level>">,
  HelpText<"Optimization level: 0-3, s, z">;
def debug : Flag<["--"], "debug">,
  HelpText<"Accepted for rustc; device debug info is not emitted">;
def help : Flag<["--"], "help">, HelpText<"Print this help">;
def version : Flag<["--"], "version">, HelpText<"Print the version">;
