//===- linker/Context.h - State of one fatlink run -----------------------===//
//
// Internal to the drivers (linker/, hostlink/, and codegen/ for its
// temporaries and -v lines). One Context per command run, passed by
// reference: the output streams, the verbosity, the temporary files, and
// the error sink. There are no globals: two runs in one process (as in the
// tests) do not see each other.
//
// The error model is lld's: a driver reports an error with error(), which
// prints it and counts it, and goes on to the end of its phase, so one run
// shows every problem; between phases it checks `if (Ctx.errorCount())
// return;`. Libraries (lto/, packager/, codegen/) return llvm::Error
// instead, and the driver reports what they return. The exit code follows
// from the count (linker/Options.h, runCommand).
//
// Temporary files live in the system temp directory and are removed on
// success, error and signal; `--save-temps` puts them in a directory of the
// user's choice under stable names derived from the output, and keeps them.
//
//===----------------------------------------------------------------------===//

#ifndef FATLINK_LINKER_CONTEXT_H
#define FATLINK_LINKER_CONTEXT_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace fatlink {

/// Temporary files of one run.
class TempFiles {
public:
  ~TempFiles();

  /// Keep every file of the link that writes \p Output instead of removing
  /// it: in \p Dir (created if needed), or when empty beside the output (in
  /// it, for a directory output). Files get stable names there, each
  /// "<prefix>.<name>", the prefix the output's stem as clang's -save-temps
  /// (out.o -> out.linked.bc, out.sm_80.ptx; a directory output kdir:
  /// kdir/kdir.sm_80.ptx), so that the names are the output's and no other
  /// link's or user's file: files named after the output are fatlink's to
  /// replace. Every way of asking (--save-temps, the setting) goes here.
  llvm::Error saveFor(llvm::StringRef Output, bool OutputIsDirectory,
                      llvm::StringRef Dir = "");
  bool saving() const { return !SaveDir.empty(); }
  llvm::StringRef saveDir() const { return SaveDir; }
  /// "<save-dir>/<prefix>", what a kept file's name starts with; empty when
  /// not saving.
  std::string savePrefix() const;

  /// A new file: "<save-dir>/<prefix>.<Name>" when saving, else a new
  /// unique file "<tmp>/fatlink-<stem>-XXXXXX.<ext>", removed on exit and
  /// on signals.
  /// Thread-safe.
  llvm::Expected<std::string> create(llvm::StringRef Name);
  /// create(Name), then Data written to it.
  llvm::Expected<std::string> write(llvm::StringRef Name, llvm::StringRef Data);

private:
  std::mutex Mu;
  std::string SaveDir;
  std::string SavePrefix;
  std::vector<std::string> Files;
};

/// A file's bytes, mapped read-only: a large result (nvlink's cubin of a
/// 22,400-kernel program is 103 MB) read where it lies instead of copied
/// into memory. Its pages come from the page cache when touched, and
/// release() hands back those of a range once it has been read, so that
/// compressing, hashing or copying the whole file keeps little of it
/// resident. The file must not change while it is mapped (fatlink's own
/// temporaries).
class MappedFile {
public:
  static llvm::Expected<std::shared_ptr<const MappedFile>>
  open(llvm::StringRef Path);
  llvm::StringRef bytes() const {
    return Region ? llvm::StringRef(Region.const_data(), Region.size())
                  : llvm::StringRef();
  }
  /// Hands back the whole pages of Range that lie in bytes() (parts
  /// outside are ignored); read again, they come back from the file.
  void release(llvm::StringRef Range) const;

private:
  llvm::sys::fs::mapped_file_region Region;
};


/// An output file, written but not yet in place: its bytes went with
/// write(2) to a temporary beside the destination (removed on error, on
/// destruction and on signals), and commit() renames it over the
/// destination. A mapped llvm::FileOutputBuffer would die of SIGBUS on a
/// full disk; here that is an error naming the file.
class StagedFile {
public:
  static llvm::Expected<StagedFile> create(llvm::StringRef Path,
                                           llvm::StringRef Data);
  StagedFile(StagedFile &&Other)
      : Path(std::move(Other.Path)), Temp(std::move(Other.Temp)) {
    Other.Temp.reset();
  }
  StagedFile &operator=(StagedFile &&) = delete;
  ~StagedFile();
  llvm::StringRef path() const { return Path; }
  llvm::Error commit();

private:
  StagedFile() = default;
  std::string Path;
  std::optional<llvm::sys::fs::TempFile> Temp;
};

/// Reads the input file \p Path whole (inspect, package, bindgen). Only a
/// regular file is read: a FIFO would block, a device such as /dev/zero
/// would be read until memory ran out, a directory holds nothing. The
/// check is made on the opened descriptor, so a file swapped after it
/// cannot slip through. Errors name the path.
llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
readInputFile(llvm::StringRef Path);

/// Refuses an output that is one of the inputs, compared by file identity
/// (the same file under another name, a hard link, a symlink), as gcc does:
/// writing it would destroy the input. Paths that do not exist yet are no
/// input. Outputs named "-" (stdout) and empty ones are skipped.
llvm::Error checkOutputsAreNotInputs(llvm::ArrayRef<std::string> Outputs,
                                     llvm::ArrayRef<std::string> Inputs);

/// A child process (ptxas, nvlink) while it runs, the leader of a process
/// group of its own (codegen's runProgram starts it so). A SIGINT, SIGTERM,
/// SIGHUP or SIGPIPE that ends fatlink stops the running children's groups
/// (SIGTERM, then SIGKILL after 2 s: a wrapper script's children too) and
/// waits for them before LLVM's handler removes the
/// temporary files: otherwise they would run on, re-parented to init, and
/// write into files just removed. A SIGTSTP (Ctrl-Z) stops them with
/// fatlink, and continuing fatlink continues them. Signal-safe slots, the
/// one global state of a run (a signal handler has no context).
class RunningChild {
public:
  explicit RunningChild(int Pid);
  ~RunningChild();
  RunningChild(const RunningChild &) = delete;
  RunningChild &operator=(const RunningChild &) = delete;
  /// Whether a signal is ending fatlink: start nothing new.
  static bool stopping();
  /// How long fatlink has been stopped (Ctrl-Z, SIGTSTP) since it
  /// started: its running children were stopped with it, so a time limit
  /// on a child leaves this out.
  static std::chrono::nanoseconds suspendedTime();

private:
  void *Slot = nullptr;
};

/// Installs the handlers RunningChild relies on, over LLVM's (once; every
/// Context does it). SIGPIPE (`fatlink ... -v 2>&1 | head -1`) then removes
/// the temporaries too and ends fatlink by SIGPIPE, as other tools end,
/// rather than through exit() while other threads still run.
void installSignalHandlers();

class Context {
public:
  Context(llvm::raw_ostream &Out, llvm::raw_ostream &Err);
  ~Context();

  llvm::raw_ostream &Out;
  llvm::raw_ostream &Err;
  bool Verbose = false;
  TempFiles Temps;

  /// Prints every error in E as "fatlink: error: ..." and counts them.
  void error(llvm::Error E);
  void error(const llvm::Twine &Msg);
  void warn(const llvm::Twine &Msg);
  /// Prints Msg when -v is on. Thread-safe.
  void verbose(const llvm::Twine &Msg);
  /// Prints a command line when -v is on, quoted so that it can be pasted
  /// into a shell.
  void verboseCommand(llvm::ArrayRef<llvm::StringRef> Argv);

  /// Where every message of the run is also written, whether or not -v is
  /// on (fatlink cc's link log, docs/cargo.md "Diagnostics"); none: null.
  /// Set before the run's first message.
  llvm::raw_ostream *Log = nullptr;

  /// The progress line (docs/cargo.md "Diagnostics"): once the run has
  /// taken AfterSeconds, "fatlink: <stage> <target>: <done>/<total>
  /// partitions done" is drawn in place on Err whenever the stage changes
  /// or a unit is done, and by a thread every 200 ms (a long stage with
  /// nothing counted, link and optimize, still shows); any other message
  /// clears it first, and stopProgress() clears it for good. The caller starts
  /// it only when Err is a terminal and the user did not ask for quiet
  /// (progressWanted). It writes to Err only: outputs never depend on it.
  void startProgress(double AfterSeconds);
  void stopProgress();
  /// A new stage of Total units (0: not counted), none of them done.
  void progressStage(const llvm::Twine &Stage, size_t Total = 0);
  /// One unit of the stage is done; Target is what it was compiled for.
  /// Thread-safe.
  void progressDone(llvm::StringRef Target);

  /// The errors reported so far: a checkpoint between phases stops the
  /// run when there are any.
  unsigned errorCount() const { return ErrorCount; }
  /// Whether the run has warned that its cache directory cannot store
  /// (linker/Cache.cpp): once a run, not once an entry.
  std::atomic<bool> CacheStoreWarned{false};

  /// A child's exit status that becomes the run's (the host linker's, in
  /// `fatlink cc`); 0: none.
  int PassThroughStatus = 0;
  /// The exit code of a run that reached its end.
  int exitCode() const {
    return PassThroughStatus ? PassThroughStatus : ErrorCount ? 1 : 0;
  }

private:
  struct ProgressLine;
  /// Clears the progress line before another message. Mu must be held.
  void clearProgressLocked();
  /// Draws it, once the delay has passed. Mu must be held.
  void drawProgressLocked();

  std::mutex Mu;
  unsigned ErrorCount = 0;
  std::unique_ptr<ProgressLine> Progress;
};

/// Whether a run that writes its messages to Err shows a progress line:
/// Err is the process's stderr and that is a terminal, and not Quiet.
bool progressWanted(const llvm::raw_ostream &Err, bool Quiet);

/// The progress line's delay in seconds: 2, or FATLINK_PROGRESS_AFTER (a
/// number of seconds; tests set 0).
double progressDelay();

} // namespace fatlink

#endif // FATLINK_LINKER_CONTEXT_H
