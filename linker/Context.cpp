//===- linker/Context.cpp - Diagnostics and temporary files --------------===//
//
// The one error sink of every fatlink command, and the temporary-file
// registry with its cleanup on exit and on signals.
//
//===----------------------------------------------------------------------===//

#include "linker/Context.h"

#include "intake/Intake.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/WithColor.h"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <iterator>
#include <thread>

#include <signal.h>
#include <sys/wait.h>
#include <time.h>

using namespace llvm;

namespace fatlink {

TempFiles::~TempFiles() {
  if (saving())
    return;
  for (const std::string &F : Files) {
    sys::fs::remove(F);
    sys::DontRemoveFileOnSignal(F);
  }
}

Error TempFiles::saveFor(StringRef Output, bool OutputIsDirectory,
                         StringRef Dir) {
  std::string D = Dir.str();
  if (D.empty())
    D = OutputIsDirectory ? Output.str() : sys::path::parent_path(Output).str();
  if (D.empty())
    D = ".";
  // Names derived from the output are fatlink's; no fixed name (sm_80.cubin,
  // ptxas.log) that a user's file or another link's temporaries could have.
  StringRef Stem =
      OutputIsDirectory
          ? sys::path::filename(sys::path::remove_leading_dotslash(Output))
          : sys::path::stem(Output);
  if (Stem.empty() || Stem == "." || Stem == "..")
    Stem = "fatlink";
  if (std::error_code EC = sys::fs::create_directories(D))
    return createStringError(EC, "cannot create --save-temps directory %s: %s",
                             D.c_str(), EC.message().c_str());
  SaveDir = std::move(D);
  SavePrefix = Stem.str();
  return Error::success();
}

std::string TempFiles::savePrefix() const {
  if (!saving())
    return "";
  SmallString<256> Path(SaveDir);
  sys::path::append(Path, SavePrefix);
  return std::string(Path);
}

Expected<std::string> TempFiles::create(StringRef Name) {
  // A file made after LLVM's handler has removed the others would be left.
  if (RunningChild::stopping())
    return createStringError(inconvertibleErrorCode(),
                             "interrupted by a signal");
  std::lock_guard<std::mutex> Lock(Mu);
  if (saving()) {
    SmallString<256> Path(SaveDir);
    sys::path::append(Path, SavePrefix.empty() ? Name.str()
                                               : SavePrefix + "." + Name.str());
    return std::string(Path);
  }
  // Directly in the temp directory (no private directory, which a signal
  // handler could not remove): "fatlink-sm_80-a1b2c3.ptx".
  SmallString<256> Path;
  StringRef Ext = sys::path::extension(Name);
  if (std::error_code EC = sys::fs::createTemporaryFile(
          "fatlink-" + sys::path::stem(Name), Ext.drop_front(), Path))
    return createStringError(EC, "cannot create a temporary file: %s",
                             EC.message().c_str());
  Files.push_back(std::string(Path));
  sys::RemoveFileOnSignal(Files.back());
  return Files.back();
}

Expected<std::string> TempFiles::write(StringRef Name, StringRef Data) {
  Expected<std::string> Path = create(Name);
  if (!Path)
    return Path.takeError();
  std::error_code EC;
  raw_fd_ostream OS(*Path, EC);
  if (!EC) {
    OS << Data;
    OS.close();
    EC = OS.error();
    OS.clear_error();
  }
  if (EC)
    return createStringError(EC, "cannot write %s: %s", Path->c_str(),
                             EC.message().c_str());
  return Path;
}

//===----------------------------------------------------------------------===//
// Children and signals
//===----------------------------------------------------------------------===//

namespace {

constexpr size_t MaxChildren = 1024;
std::atomic<pid_t> Children[MaxChildren];
std::atomic<bool> Stopping{false};
constexpr int StopSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
struct sigaction Previous[std::size(StopSignals)];

void sleepMs(long Ms) {
  struct timespec Pause = {0, Ms * 1000 * 1000};
  ::nanosleep(&Pause, nullptr);
}

/// One pass: SIGTERM to every child's process group (each child leads
/// one: codegen's runProgram starts it so, and a wrapper script's own
/// children are in it), then each child reaped (SIGKILL to the group after
/// 2 s). Returns whether there was any. Async-signal-safe.
bool stopChildrenOnce() {
  bool Any = false;
  for (std::atomic<pid_t> &C : Children)
    if (pid_t P = C.load()) {
      ::kill(-P, SIGTERM);
      Any = true;
    }
  for (std::atomic<pid_t> &C : Children) {
    pid_t P = C.exchange(0);
    if (!P)
      continue;
    for (int I = 0; ::waitpid(P, nullptr, WNOHANG) == 0; ++I) {
      // (Nonzero: reaped here, or already by its own waiting thread.)
      if (I == 200) {
        ::kill(-P, SIGKILL);
        ::waitpid(P, nullptr, 0);
        break;
      }
      sleepMs(10);
    }
  }
  return Any;
}

void onStopSignal(int Sig, siginfo_t *Info, void *UContext) {
  int SavedErrno = errno;
  Stopping = true;
  // Other threads may have started a child just before they saw Stopping:
  // passes until two in a row, 10 ms apart, find none (at most ~3 s).
  for (int Quiet = 0, Pass = 0; Quiet < 2 && Pass < 300; ++Pass) {
    Quiet = stopChildrenOnce() ? 0 : Quiet + 1;
    sleepMs(10);
  }
  errno = SavedErrno;
  // On to the previous handler: LLVM's, which removes the temporaries and
  // re-raises the signal. LLVM 22 registers it for SIGTERM but not for
  // SIGPIPE; its one handler serves every signal (and calls the one-shot
  // pipe function for SIGPIPE), so SIGPIPE goes to the SIGTERM one.
  auto Find = [](int S) -> const struct sigaction * {
    for (size_t I = 0; I < std::size(StopSignals); ++I)
      if (StopSignals[I] == S)
        return &Previous[I];
    return nullptr;
  };
  const struct sigaction *P = Find(Sig);
  if (P && !(P->sa_flags & SA_SIGINFO) && P->sa_handler == SIG_DFL)
    P = Find(SIGTERM);
  if (P && (P->sa_flags & SA_SIGINFO) && P->sa_sigaction)
    return P->sa_sigaction(Sig, Info, UContext);
  if (P && !(P->sa_flags & SA_SIGINFO) && P->sa_handler != SIG_DFL &&
      P->sa_handler != SIG_IGN)
    return P->sa_handler(Sig);
  ::signal(Sig, SIG_DFL);
  ::raise(Sig);
}

/// Steady-clock nanoseconds fatlink has spent stopped (SIGTSTP) so far,
/// and when the stop under way began (0: none). Once continued, another
/// thread may look before the handler has added the stop to SuspendedNs:
/// SuspendedSince still counts it then.
std::atomic<int64_t> SuspendedNs{0};
std::atomic<int64_t> SuspendedSince{0};

int64_t steadyNs() {
  struct timespec T;
  ::clock_gettime(CLOCK_MONOTONIC, &T);
  return int64_t(T.tv_sec) * 1000000000 + T.tv_nsec;
}

void signalChildren(int Sig) {
  for (std::atomic<pid_t> &C : Children)
    if (pid_t P = C.load())
      ::kill(-P, Sig);
}

void onSuspend(int Sig, siginfo_t *, void *);

void catchSuspend() {
  struct sigaction New = {};
  New.sa_sigaction = onSuspend;
  New.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&New.sa_mask);
  ::sigaction(SIGTSTP, &New, nullptr);
}

/// Ctrl-Z: the terminal stops fatlink's process group, and the children,
/// each in a group of its own, would run on. Stop them (SIGSTOP to each
/// group), stop fatlink as the default action would (the shell sees a
/// job stopped by SIGTSTP), and once continued, continue them and count
/// the time stopped, which a --ptxas-timeout does not charge to ptxas.
/// (Where the kernel discards the stop, in an orphaned process group, this
/// returns at once.) Async-signal-safe.
void onSuspend(int Sig, siginfo_t *, void *) {
  int SavedErrno = errno;
  signalChildren(SIGSTOP);
  int64_t Start = steadyNs();
  SuspendedSince = Start;
  ::signal(Sig, SIG_DFL);
  ::raise(Sig); // pending: blocked while this handler runs
  sigset_t Unblock;
  sigemptyset(&Unblock);
  sigaddset(&Unblock, Sig);
  ::pthread_sigmask(SIG_UNBLOCK, &Unblock, nullptr); // stops here
  // Continued (SIGCONT).
  catchSuspend();
  SuspendedNs += steadyNs() - Start; // then the stop is no longer under way
  SuspendedSince = 0;
  signalChildren(SIGCONT);
  errno = SavedErrno;
}

/// LLVM's SIGPIPE handler removes the temporaries and then calls this.
void dieOfSigpipe() {
  ::signal(SIGPIPE, SIG_DFL);
  ::raise(SIGPIPE);
}

} // namespace

void installSignalHandlers() {
  static std::once_flag Once;
  std::call_once(Once, [] {
    // LLVM's handlers first (InitLLVM has usually registered them), so that
    // ours, installed over them, runs first and hands the signal on.
    sys::SetOneShotPipeSignalFunction(dieOfSigpipe);
    for (size_t I = 0; I < std::size(StopSignals); ++I) {
      ::sigaction(StopSignals[I], nullptr, &Previous[I]);
      // A signal ignored (SIGINT in a background job) stays ignored.
      if (!(Previous[I].sa_flags & SA_SIGINFO) &&
          Previous[I].sa_handler == SIG_IGN)
        continue;
      struct sigaction New = {};
      New.sa_sigaction = onStopSignal;
      New.sa_flags = SA_SIGINFO;
      sigemptyset(&New.sa_mask);
      ::sigaction(StopSignals[I], &New, nullptr);
    }
    struct sigaction Tstp;
    ::sigaction(SIGTSTP, nullptr, &Tstp);
    if ((Tstp.sa_flags & SA_SIGINFO) || Tstp.sa_handler == SIG_DFL)
      catchSuspend(); // not when ignored, or someone else's
  });
}

RunningChild::RunningChild(int Pid) {
  for (std::atomic<pid_t> &C : Children) {
    pid_t Free = 0;
    if (C.compare_exchange_strong(Free, Pid)) {
      Slot = &C;
      break;
    }
  }
  // Started as a signal arrived: the handler may have missed it.
  if (Stopping)
    ::kill(-Pid, SIGTERM);
}

RunningChild::~RunningChild() {
  if (Slot)
    static_cast<std::atomic<pid_t> *>(Slot)->store(0);
}

bool RunningChild::stopping() { return Stopping; }

std::chrono::nanoseconds RunningChild::suspendedTime() {
  int64_t Since = SuspendedSince.load();
  int64_t Total = SuspendedNs.load();
  return std::chrono::nanoseconds(Total + (Since ? steadyNs() - Since : 0));
}

void Context::error(Error E) {
  handleAllErrors(std::move(E), [&](const ErrorInfoBase &EI) {
    error(EI.message());
  });
}

void Context::error(const Twine &Msg) {
  std::lock_guard<std::mutex> Lock(Mu);
  ++ErrorCount;
  clearProgressLocked();
  WithColor::error(Err, "fatlink") << Msg << "\n";
  if (Log)
    *Log << "fatlink: error: " << Msg << "\n";
}

void Context::warn(const Twine &Msg) {
  std::lock_guard<std::mutex> Lock(Mu);
  clearProgressLocked();
  WithColor::warning(Err, "fatlink") << Msg << "\n";
  if (Log)
    *Log << "fatlink: warning: " << Msg << "\n";
}

void Context::verbose(const Twine &Msg) {
  if (!Verbose && !Log)
    return;
  // One write a line: stderr is unbuffered, and links run side by side
  // into one file (a build's log) must not split each other's lines.
  std::string Line = (Msg + "\n").str();
  std::lock_guard<std::mutex> Lock(Mu);
  if (Verbose) {
    clearProgressLocked();
    Err << Line;
  }
  if (Log)
    *Log << Line;
}

void Context::verboseCommand(ArrayRef<StringRef> Argv) {
  if (!Verbose && !Log)
    return;
  auto IsSafe = [](char C) {
    return isAlnum(C) || StringRef("_./=,:+@%-").contains(C);
  };
  std::string Line;
  for (StringRef Arg : Argv) {
    if (!Line.empty())
      Line += ' ';
    if (!Arg.empty() && all_of(Arg, IsSafe)) {
      Line += Arg;
      continue;
    }
    Line += '\'';
    for (char C : Arg)
      Line += C == '\'' ? std::string("'\\''") : std::string(1, C);
    Line += '\'';
  }
  verbose(Line);
}

//===----------------------------------------------------------------------===//
// The progress line
//===----------------------------------------------------------------------===//

// One line on the terminal, redrawn in place with "\r...\x1b[K" (carriage
// return, erase to the end of the line) as lld's and cargo's are. Its state
// is guarded by Context::Mu, the lock every message takes, so a warning
// from a codegen thread clears the line before it prints and never lands in
// the middle of it. A ticker thread redraws every 200 ms, so a long stage
// with nothing counted (link and optimize) still shows, once the delay has
// passed, which stage it is.
struct Context::ProgressLine {
  using Clock = std::chrono::steady_clock;
  Clock::time_point Start = Clock::now();
  double AfterSeconds = 2;
  std::string Stage, Target;
  size_t Done = 0, Total = 0;
  bool Shown = false;
  bool Stopping = false;
  std::condition_variable Wake;
  std::thread Ticker;
};

Context::Context(raw_ostream &Out, raw_ostream &Err) : Out(Out), Err(Err) {
  installSignalHandlers();
}

Context::~Context() { stopProgress(); }

void Context::clearProgressLocked() {
  if (!Progress || !Progress->Shown)
    return;
  Err << "\r\x1b[K";
  Err.flush();
  Progress->Shown = false;
}

void Context::drawProgressLocked() {
  ProgressLine &P = *Progress;
  std::chrono::duration<double> Ran = ProgressLine::Clock::now() - P.Start;
  if (Ran.count() < P.AfterSeconds || P.Stage.empty())
    return;
  std::string Line = "fatlink: " + P.Stage;
  if (!P.Target.empty())
    Line += " " + P.Target;
  if (P.Total)
    Line += ": " + std::to_string(P.Done) + "/" + std::to_string(P.Total) +
            " partitions done";
  Err << "\r" << Line << "\x1b[K";
  Err.flush();
  P.Shown = true;
}

void Context::startProgress(double AfterSeconds) {
  std::lock_guard<std::mutex> Lock(Mu);
  if (Progress)
    return;
  Progress = std::make_unique<ProgressLine>();
  Progress->AfterSeconds = AfterSeconds;
  Progress->Ticker = std::thread([this] {
    std::unique_lock<std::mutex> Lock(Mu);
    while (!Progress->Stopping) {
      drawProgressLocked();
      Progress->Wake.wait_for(Lock, std::chrono::milliseconds(200));
    }
  });
}

void Context::stopProgress() {
  std::thread Ticker;
  {
    std::lock_guard<std::mutex> Lock(Mu);
    if (!Progress)
      return;
    clearProgressLocked();
    Progress->Stopping = true;
    Progress->Wake.notify_all();
    Ticker = std::move(Progress->Ticker);
  }
  if (Ticker.joinable())
    Ticker.join();
  std::lock_guard<std::mutex> Lock(Mu);
  Progress.reset();
}

void Context::progressStage(const Twine &Stage, size_t Total) {
  std::lock_guard<std::mutex> Lock(Mu);
  if (!Progress)
    return;
  Progress->Stage = Stage.str();
  Progress->Target.clear();
  Progress->Done = 0;
  Progress->Total = Total;
  drawProgressLocked();
}

void Context::progressDone(StringRef Target) {
  std::lock_guard<std::mutex> Lock(Mu);
  if (!Progress)
    return;
  ++Progress->Done;
  Progress->Target = Target.str();
  drawProgressLocked();
}

bool progressWanted(const raw_ostream &Err, bool Quiet) {
  return !Quiet && &Err == &errs() && sys::Process::StandardErrIsDisplayed();
}

double progressDelay() {
  if (std::optional<std::string> V =
          sys::Process::GetEnv("FATLINK_PROGRESS_AFTER")) {
    double D;
    if (!StringRef(*V).getAsDouble(D) && D >= 0)
      return D;
  }
  return 2;
}

Expected<std::unique_ptr<MemoryBuffer>> readInputFile(StringRef Path) {
  auto Fail = [&](std::error_code EC) {
    return createStringError(EC, "cannot open %s: %s", Path.str().c_str(),
                             EC.message().c_str());
  };
  // Checked before opening (opening a FIFO blocks until it has a writer)
  // and again on the descriptor (the path may have changed in between).
  auto NotRegular = [&] {
    return createStringError(
        std::make_error_code(std::errc::invalid_argument),
        "%s: not a regular file (a FIFO, a device or a directory): pass the "
        "file itself",
        Path.str().c_str());
  };
  sys::fs::file_status Status;
  if (!sys::fs::status(Path, Status) &&
      Status.type() != sys::fs::file_type::regular_file)
    return NotRegular();
  Expected<sys::fs::file_t> FD = sys::fs::openNativeFileForRead(Path);
  if (!FD)
    return Fail(errorToErrorCode(FD.takeError()));
  scope_exit Close([&] { sys::fs::closeFile(*FD); });
  if (std::error_code EC = sys::fs::status(*FD, Status))
    return Fail(EC);
  if (Status.type() != sys::fs::file_type::regular_file)
    return NotRegular();
  ErrorOr<std::unique_ptr<MemoryBuffer>> MB = MemoryBuffer::getOpenFile(
      *FD, Path, Status.getSize(), /*RequiresNullTerminator=*/false);
  if (!MB)
    return Fail(MB.getError());
  return std::move(*MB);
}

Error checkOutputsAreNotInputs(ArrayRef<std::string> Outputs,
                               ArrayRef<std::string> Inputs) {
  for (const std::string &Out : Outputs) {
    sys::fs::file_status OutStatus;
    if (Out.empty() || Out == "-" || sys::fs::status(Out, OutStatus))
      continue;
    for (const std::string &In : Inputs) {
      sys::fs::file_status InStatus;
      if (sys::fs::status(In, InStatus) ||
          !sys::fs::equivalent(InStatus, OutStatus))
        continue;
      return createStringError(inconvertibleErrorCode(),
                               "input file '%s' is the same as output file "
                               "'%s': writing it would destroy the input; "
                               "name another output",
                               In.c_str(), Out.c_str());
    }
  }
  return Error::success();
}

Expected<std::shared_ptr<const MappedFile>>
MappedFile::open(StringRef Path) {
  auto Fail = [&](std::error_code EC) {
    return createStringError(EC, "cannot read %s: %s", Path.str().c_str(),
                             EC.message().c_str());
  };
  Expected<sys::fs::file_t> FD = sys::fs::openNativeFileForRead(Path);
  if (!FD)
    return Fail(errorToErrorCode(FD.takeError()));
  // The mapping keeps the file's pages; the descriptor is not needed.
  scope_exit Close([&] { sys::fs::closeFile(*FD); });
  sys::fs::file_status St;
  if (std::error_code EC = sys::fs::status(*FD, St))
    return Fail(EC);
  auto M = std::make_shared<MappedFile>();
  if (St.getSize() == 0)
    return M; // nothing to map: bytes() is empty
  std::error_code EC;
  sys::fs::mapped_file_region R(*FD, sys::fs::mapped_file_region::readonly,
                                St.getSize(), 0, EC);
  if (EC)
    return Fail(EC);
  M->Region = std::move(R);
  return M;
}

void MappedFile::release(StringRef Range) const {
  intake::releasePages(Range, bytes());
}

Expected<StagedFile> StagedFile::create(StringRef Path, StringRef Data) {
  auto Fail = [&](const Twine &Why) {
    return createStringError(inconvertibleErrorCode(), "cannot write %s: %s",
                             Path.str().c_str(), Why.str().c_str());
  };
  // Renaming over a directory would fail only at commit, after other
  // outputs may have been renamed into place.
  if (sys::fs::is_directory(Path))
    return Fail("it is a directory");
  Expected<sys::fs::TempFile> T =
      sys::fs::TempFile::create(Path + ".tmp%%%%%%%");
  if (!T)
    return Fail(toString(T.takeError()));
  raw_fd_ostream OS(T->FD, /*shouldClose=*/false);
  OS << Data;
  OS.flush();
  if (std::error_code EC = OS.error()) {
    OS.clear_error();
    consumeError(T->discard());
    return Fail(EC.message());
  }
  StagedFile F;
  F.Path = Path.str();
  F.Temp.emplace(std::move(*T));
  return std::move(F);
}

Error StagedFile::commit() {
  Error E = Temp->keep(Path);
  Temp.reset();
  if (E)
    return createStringError(inconvertibleErrorCode(), "cannot write %s: %s",
                             Path.c_str(), toString(std::move(E)).c_str());
  return Error::success();
}

StagedFile::~StagedFile() {
  if (Temp)
    consumeError(Temp->discard());
}

} // namespace fatlink
