// Options of `fatlink device-link`. Every option has help text; `--help`
// prints them grouped as below.
include "llvm/Option/OptParser.td"

class F<string name, string help> : Flag<["--"], name>, HelpText<help>;
class J<string name, string meta, string help>
    : Joined<["--"], name # "=">, MetaVarName<meta>, HelpText<help>;
// `--name=value` and `--name value`.
multiclass JS<string name, string meta, string help> {
  def NAME # _EQ : J<name, meta, help>;
  def : Separate<["--"], name>, Alias<!cast<Joined>(NAME # "_EQ")>;
}

def grp_targets : OptionGroup<"targets">, HelpText<"TARGETS">;
def grp_output : OptionGroup<"output">, HelpText<"OUTPUT">;
def grp_tools : OptionGroup<"tools">, HelpText<"TOOLS">;
def grp_diag : OptionGroup<"diag">, HelpText<"DIAGNOSTICS">;

def output : Separate<["-"], "o">, MetaVarName<"<path>">, Group<grp_output>,
  HelpText<"Write output to <path>: a .fatbin (every target in one CUDA fat "
           "binary), a .o (a host object carrying it, ready to link), a "
           ".cubin or .ptx (one target), a .bc (the linked, optimized module, "
           "for --codegen-only runs), else a directory that receives "
           "<target>.cubin / <target>.ptx">;
def codegen_only : F<"codegen-only",
  "Inputs are a .bc from an earlier run: skip linking optimizations, only "
  "generate code (one build action per target)">, Group<grp_targets>;
def output_EQ : Joined<["--"], "output=">, Alias<output>;

defm arch : JS<"arch", "<list>",
  "Targets, comma-separated and repeatable: sm_XX[a|f] (cubin), "
  "compute_XX[a|f] (PTX for JIT), or a preset: all-major, all">,
  Group<grp_targets>;
def list_targets : F<"list-targets",
  "Print every target the installed LLVM and ptxas can serve, then exit">,
  Group<grp_targets>;
defm ptx_version : JS<"ptx-version", "<X.Y>",
  "PTX ISA version for every target (default: the oldest each arch allows, "
  "raised to the newest the inputs were compiled for)">, Group<grp_targets>;
def opt_level : Joined<["-"], "O">, MetaVarName<"<0-3>">, Group<grp_targets>,
  HelpText<"Optimization level (default 3)">;
defm export_symbol : JS<"export-symbol", "<name>",
  "Keep <name> visible (besides kernels and host-visible globals)">,
  Group<grp_targets>;
def ftz : F<"ftz", "Flush denormals to zero in libdevice (__CUDA_FTZ=1)">,
  Group<grp_targets>;
def no_ftz : F<"no-ftz", "Keep denormals (default)">, Group<grp_targets>;
def prec_sqrt : F<"prec-sqrt", "IEEE-rounded sqrtf (default, as nvcc)">,
  Group<grp_targets>;
def no_prec_sqrt : F<"no-prec-sqrt", "Approximate sqrtf (__CUDA_PREC_SQRT=0)">,
  Group<grp_targets>;
def prec_div : F<"prec-div", "IEEE-rounded division (default, as nvcc)">,
  Group<grp_targets>;
def no_prec_div : F<"no-prec-div", "Approximate division (__CUDA_PREC_DIV=0)">,
  Group<grp_targets>;

def emit_ptx : F<"emit-ptx",
  "Also write <target>.ptx for sm_XX targets in directory output">,
  Group<grp_output>;
defm compress : JS<"compress", "<none|zstd|zstd-N>",
  "Compression of fatbin entries (default zstd at level 19: the smallest "
  "output; zstd entries need an R550 or newer driver; see --min-driver)">,
  Group<grp_output>;
// For tests: where zstd's threads take over (docs/packager.md, "Cubins
// over 32 MB"); hidden, since the default is what users want.
def zstd_threads_above_EQ : J<"zstd-threads-above", "<bytes>",
  "Compress fatbin entries over <bytes> on zstd's threads, the link's idle "
  "ones (default 33554432)">, Group<grp_output>, Flags<[HelpHidden]>;
defm min_driver : JS<"min-driver", "<version>",
  "The oldest NVIDIA driver the output must load on (535, 550.54.15): "
  "picks the best compression it reads (R550 and newer: zstd, the "
  "default; older: none) and refuses PTX targets whose PTX ISA it cannot "
  "JIT-compile">, Group<grp_output>;
defm host_arch : JS<"host-arch", "<x86_64|aarch64>",
  "Host architecture of a .o output (default: this machine's)">,
  Group<grp_output>;
defm json : JS<"json", "<file>",
  "Write a JSON summary of each target's kernels and sizes ('-' for stdout)">,
  Group<grp_output>;

defm cache_dir : JS<"cache-dir", "<dir>",
  "Reuse the results of earlier identical device links kept in <dir> "
  "(keyed by a hash of every device input, option and tool)">,
  Group<grp_tools>;
defm cache_policy : JS<"cache-policy", "<policy>",
  "Size and age limits of --cache-dir, as lld's --thinlto-cache-policy "
  "(default prune_interval=20m:prune_after=168h:cache_size_bytes=2g)">,
  Group<grp_tools>;
defm cuda_path : JS<"cuda-path", "<dir>",
  "CUDA toolkit (ptxas, libdevice); default $CUDA_PATH, else /usr/local/cuda">,
  Group<grp_tools>;
defm ptxas : JS<"ptxas", "<path>", "The ptxas to run (default <cuda-path>/bin/ptxas)">,
  Group<grp_tools>;
defm ptxas_timeout : JS<"ptxas-timeout", "<seconds>",
  "Stop a ptxas that runs longer than this (default: no limit)">,
  Group<grp_tools>;
defm libdevice : JS<"libdevice", "<file>",
  "libdevice bitcode (default <cuda-path>/nvvm/libdevice/libdevice.10.bc)">,
  Group<grp_tools>;
def jobs : Separate<["-"], "j">, MetaVarName<"<N>">, Group<grp_tools>,
  HelpText<"Compile up to <N> targets at once (default: all cores); output "
           "does not depend on it">;
def jobs_joined : Joined<["-"], "j">, Alias<jobs>;
def jobs_EQ : Joined<["--"], "jobs=">, Alias<jobs>;

def partitions_EQ : Joined<["--"], "partitions=">, MetaVarName<"<N>">,
  Group<grp_tools>,
  HelpText<"Split code generation into up to <N> partitions, each compiled "
           "(and cached) on its own, then linked with nvlink (default 0: one "
           "per 8 kernels up to 32, then one per 131,072 instructions; 1: no "
           "split)">;

def partition_first_EQ : Joined<["--"], "partition-first=">,
  MetaVarName<"<when>">, Group<grp_tools>,
  HelpText<"With partitions: link each from only the inputs that define its "
           "code, never holding the whole program (memory bounded by the "
           "partition): auto (from 4 MiB of device bitcode), always, never "
           "(cut the partitions from the whole program's linked module)">;

def split_EQ : Joined<["--"], "split=">, MetaVarName<"<N>">, Group<grp_tools>,
  HelpText<"Split the optimized module given (from -o prog.bc) into exactly "
           "<N> files, <dir>/part-0.bc .. part-<N-1>.bc (-o <dir>), as "
           "--partitions=<N> splits it, for a build system to compile each "
           "with --codegen-only --arch=sm_XX -o part-K.cubin and link them "
           "with --join (a partition with no code is a module without "
           "definitions, and its cubin an empty file)">;
defm join : JS<"join", "<cubin>",
  "Link the partitions' cubins (repeatable, in partition order, all <N> of "
  "--split=<N>) into the target's cubin, as --partitions=<N> does: the input "
  "is the program's .bc (and its relocatable inputs), -o a .cubin; implies "
  "--codegen-only">, Group<grp_tools>;

def warn_spills : F<"warn-spills",
  "Warn about every kernel that spills registers to local memory, per "
  "target, with the bytes stored and loaded (from ptxas -v) and the input "
  "that defined it">, Group<grp_tools>;

def ptx_per_arch : F<"ptx-per-arch",
  "Generate every arch's PTX with its own code generation, even where the "
  "oldest and the newest arch of the set get the same code (by default the "
  "arches between them then reuse it)">, Group<grp_tools>;

def ptxas_per_partition : F<"ptxas-per-partition",
  "Run ptxas once per partition, even where several small partitions could "
  "share one run (by default partitions for sm_89 and older share runs of "
  "up to 8, whose cubin fatlink cuts apart; the output is the same)">,
  Group<grp_tools>;

def verbose : Flag<["-"], "v">, Group<grp_diag>,
  HelpText<"Print every subcommand run and what each input contributed">;
def verbose_long : Flag<["--"], "verbose">, Alias<verbose>;
def quiet : Flag<["-"], "q">, Group<grp_diag>,
  HelpText<"No progress line (shown on a terminal when a link runs longer "
           "than 2 seconds)">;
def quiet_long : Flag<["--"], "quiet">, Alias<quiet>;
def save_temps : F<"save-temps",
  "Keep intermediate files (bitcode, PTX) in the output's directory">,
  Group<grp_diag>;
def save_temps_EQ : J<"save-temps", "<dir>", "Keep intermediate files in <dir>">,
  Group<grp_diag>;
def error_limit_EQ : J<"error-limit", "<N>",
  "Report at most <N> errors of one kind (default 20; 0: all)">,
  Group<grp_diag>;
defm allow_abi_mismatch : JS<"allow-abi-mismatch", "<symbol>",
  "Link even though declarations of <symbol> (its link name, as the error "
  "writes it) disagree with its definition (comma-separated, repeatable; "
  "docs/abi.md)">,
  Group<grp_diag>;
defm time_trace : JS<"time-trace", "<file>",
  "Write a Chrome trace of where the time goes to <file>">, Group<grp_diag>;
defm time_trace_granularity : JS<"time-trace-granularity", "<us>",
  "Leave out of the trace what took less than <us> microseconds (default 500)">,
  Group<grp_diag>;
def help : F<"help", "Print this help">;
def help_short : Flag<["-"], "h">, Alias<help>;
def version : F<"version", "Print the version">;
