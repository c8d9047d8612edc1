// Options of `fatlink package`: cubins and PTX in, a fatbin or a host object
// out (the packaging step of a device link that a build system split into
// actions).
include "llvm/Option/OptParser.td"

multiclass JS<string name, string meta, string help> {
  def NAME # _EQ : Joined<["--"], name # "=">, MetaVarName<meta>, HelpText<help>;
  def : Separate<["--"], name>, Alias<!cast<Joined>(NAME # "_EQ")>;
}

def output : Separate<["-"], "o">, MetaVarName<"<path>">,
  HelpText<"A .fatbin, or a .o host object that carries the fatbin">;
defm compress : JS<"compress", "<none|zstd|zstd-N>",
  "Compression of fatbin entries (default zstd at level 19)">;
defm host_arch : JS<"host-arch", "<x86_64|aarch64>",
  "Host architecture of a .o output (default: this machine's)">;
defm kernels_from : JS<"kernels-from", "<file.bc>",
  "The optimized module (device-link -o prog.bc) whose kernels the host "
  "object's kernel table lists, with parameter sizes for launch checks">;
def verbose : Flag<["-"], "v">, HelpText<"Print each image packaged">;
def help : Flag<["--"], "help">, HelpText<"Print this help">;
def version : Flag<["--"], "version">, HelpText<"Print the version">;
