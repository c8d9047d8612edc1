//===- linker/Options.h - The command runner and command-line parsing ----===//
//
// Internal to the drivers (linker/, hostlink/). runCommand is every
// command's prologue and epilogue: a Context, the command line parsed,
// --help and --version answered, the body run, its error count turned into
// the exit code. Parsing expands response files (GNU quoting; a file that
// includes itself is an error, not a hang) and parses with an OptTable,
// turning unknown options and missing values into errors with a
// "did you mean" suggestion.
//
//===----------------------------------------------------------------------===//

#ifndef FATLINK_LINKER_OPTIONS_H
#define FATLINK_LINKER_OPTIONS_H

#include "lto/LTO.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Option/ArgList.h"
#include "llvm/Option/OptTable.h"
#include "llvm/Support/Allocator.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/StringSaver.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>

namespace fatlink {

class Context;

/// The largest response file read (a link line of a million long paths
/// fits many times over).
constexpr uint64_t MaxResponseFileSize = uint64_t(64) << 20;

/// Expands `@file` arguments in place. A response file must be a regular
/// file of at most MaxResponseFileSize bytes.
llvm::Error expandResponseFiles(llvm::SmallVectorImpl<const char *> &Argv,
                                llvm::StringSaver &Saver);

/// Expands response files and parses Args with Table. UnknownID is the
/// table's OPT_UNKNOWN. Every bad option is reported.
llvm::Expected<llvm::opt::InputArgList>
parseArgs(const llvm::opt::OptTable &Table, llvm::ArrayRef<const char *> Args,
          llvm::StringSaver &Saver, unsigned UnknownID);

/// What parseCommandLine needs to know of a command.
struct CommandSpec {
  const char *Usage; ///< "fatlink package [options] <images...> -o <out>"
  const char *Title; ///< one line: what the command does
  unsigned UnknownID, HelpID, VersionID;
};

/// Parses Args with Table and answers --help and --version. Returns the
/// arguments when the command should go on; otherwise the command is over
/// (its errors, if any, were reported to Ctx).
std::optional<llvm::opt::InputArgList>
parseCommandLine(Context &Ctx, const llvm::opt::OptTable &Table,
                 llvm::ArrayRef<const char *> Args, llvm::StringSaver &Saver,
                 const CommandSpec &Spec);

/// A command's work once its arguments are parsed. It reports errors to
/// Ctx and stops at the next checkpoint (`if (Ctx.errorCount()) return;`).
using CommandBody =
    llvm::function_ref<void(Context &Ctx, llvm::opt::InputArgList &Args)>;

/// Runs one command: a Context on Out and Err, Args parsed with Table
/// (parseCommandLine), then Body. Returns the exit code: 1 when an error
/// was reported, else 0.
int runCommand(llvm::ArrayRef<const char *> Args, llvm::raw_ostream &Out,
               llvm::raw_ostream &Err, const llvm::opt::OptTable &Table,
               const CommandSpec &Spec, CommandBody Body);

/// A command that reads a command line written for another tool (`fatlink
/// cc`, `fatlink llbc`): Body gets the arguments as given and a saver for
/// the strings it makes.
using RawCommandBody = llvm::function_ref<void(
    Context &Ctx, llvm::ArrayRef<const char *> Args, llvm::StringSaver &Saver)>;

/// Runs one such command; the exit code is Ctx.exitCode().
int runCommand(llvm::ArrayRef<const char *> Args, llvm::raw_ostream &Out,
               llvm::raw_ostream &Err, RawCommandBody Body);

/// The most edits a "did you mean" suggestion may be from what was typed:
/// "sm_8O" -> "sm_80" (1), "sm90a" -> "sm_90a" (1), "ach" -> "arch" (1);
/// three edits turn most short names into unrelated ones ("sm_80" into
/// "sm_100").
constexpr unsigned MaxSuggestEdits = 2;

/// The candidate nearest to \p Name by edit distance, for "did you mean
/// '...'?": the first of those with the fewest edits, or "" when that is
/// more than MaxSuggestEdits. The one rule for suggesting fatlink's own
/// names (GPU targets and arches, settings); options are suggested by
/// OptTable::findNearest.
std::string nearestName(llvm::StringRef Name,
                        llvm::ArrayRef<llvm::StringRef> Candidates);

/// Reads a --partition-first value (auto, always, never); Name is used in
/// the message.
llvm::Expected<lto::PartitionFirstMode>
parsePartitionFirst(llvm::StringRef Name, llvm::StringRef Value);

/// Reads an unsigned option value; Name is used in the message.
llvm::Expected<unsigned> parseUnsigned(llvm::StringRef Name,
                                       llvm::StringRef Value, unsigned Max);

} // namespace fatlink

#endif // FATLINK_LINKER_OPTIONS_H
