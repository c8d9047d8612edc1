//===- codegen/Toolkit.cpp - The CUDA toolkit and external programs ------===//
//
// ptxas is the one external program of a device link. Its supported arches
// come from its own `--help` ("Allowed values for this option: 'compute_100',
// ...") and its PTX ISA limit from its release (`--version`), so a newer or
// older toolkit is described correctly without a change here.
//
//===----------------------------------------------------------------------===//

#include "codegen/Codegen.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TimeProfiler.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <thread>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

using namespace llvm;

namespace fatlink::codegen {

ToolkitPaths resolveToolkitPaths(StringRef CudaPath, StringRef Ptxas,
                                 StringRef Libdevice) {
  ToolkitPaths P;
  if (!CudaPath.empty())
    P.CudaPath = CudaPath.str();
  else if (std::optional<std::string> Env = sys::Process::GetEnv("CUDA_PATH"))
    P.CudaPath = *Env;
  else
    P.CudaPath = "/usr/local/cuda";

  SmallString<256> Path(P.CudaPath);
  sys::path::append(Path, "bin", "ptxas");
  P.Ptxas = Ptxas.empty() ? std::string(Path) : Ptxas.str();

  Path = P.CudaPath;
  sys::path::append(Path, "nvvm", "libdevice", "libdevice.10.bc");
  P.Libdevice = Libdevice.empty() ? std::string(Path) : Libdevice.str();

  Path = P.CudaPath;
  sys::path::append(Path, "bin", "nvlink");
  P.Nvlink = std::string(Path);

  Path = P.CudaPath;
  sys::path::append(Path, "lib64", "libcudadevrt.a");
  P.DeviceRuntime = std::string(Path);
  return P;
}

unsigned maxPtxVersionForCudaRelease(unsigned Major, unsigned Minor) {
  // CUDA release -> newest PTX ISA (PTX ISA documentation, "Release Notes").
  static constexpr struct {
    unsigned Major, Minor, Ptx;
  } Table[] = {
      {11, 0, 70}, {11, 1, 71}, {11, 2, 72}, {11, 3, 73}, {11, 4, 74},
      {11, 5, 75}, {11, 6, 76}, {11, 7, 77}, {11, 8, 78}, {12, 0, 80},
      {12, 1, 81}, {12, 2, 82}, {12, 3, 83}, {12, 4, 84}, {12, 5, 85},
      {12, 6, 85}, {12, 7, 86}, {12, 8, 87}, {12, 9, 88}, {13, 0, 90},
  };
  unsigned Ptx = 0;
  for (const auto &Row : Table)
    if (std::tie(Row.Major, Row.Minor) <= std::tie(Major, Minor))
      Ptx = Row.Ptx;
  return Ptx;
}

Expected<PtxasInfo> parsePtxasInfo(StringRef Path, StringRef VersionOutput,
                                   StringRef HelpOutput) {
  PtxasInfo Info;
  Info.Path = Path.str();

  // "Cuda compilation tools, release 13.0, V13.0.88"
  size_t Pos = VersionOutput.find("release ");
  unsigned Major = 0, Minor = 0;
  if (Pos != StringRef::npos) {
    StringRef Rest = VersionOutput.drop_front(Pos + strlen("release "));
    if (!Rest.consumeInteger(10, Major) && Rest.consume_front("."))
      (void)Rest.consumeInteger(10, Minor);
  }
  if (Major == 0)
    return createStringError(inconvertibleErrorCode(),
                             "%s: cannot read the CUDA release from "
                             "`ptxas --version`: is this NVIDIA's ptxas?",
                             Path.str().c_str());
  Info.Release = (Twine(Major) + "." + Twine(Minor)).str();
  Info.MaxPtxVersion = maxPtxVersionForCudaRelease(Major, Minor);

  // "Allowed values for this option:  'compute_100','compute_100a',..."
  // directly after --gpu-name.
  size_t Gpu = HelpOutput.find("--gpu-name");
  size_t Allowed = HelpOutput.find("Allowed values for this option:", Gpu);
  if (Gpu == StringRef::npos || Allowed == StringRef::npos)
    return createStringError(inconvertibleErrorCode(),
                             "%s: cannot read the supported arches from "
                             "`ptxas --help`",
                             Path.str().c_str());
  StringRef List = HelpOutput.drop_front(Allowed);
  List = List.drop_front(List.find(':') + 1);
  // The list ends at the first line that does not continue it.
  while (!List.empty()) {
    List = List.ltrim(" \t\r\n,");
    if (!List.consume_front("'"))
      break;
    size_t End = List.find('\'');
    if (End == StringRef::npos)
      break;
    Info.Arches.push_back(List.take_front(End).str());
    List = List.drop_front(End + 1);
  }
  if (Info.Arches.empty())
    return createStringError(inconvertibleErrorCode(),
                             "%s: `ptxas --help` lists no GPU arches",
                             Path.str().c_str());
  return Info;
}

Expected<PtxasInfo> probePtxas(Context &Ctx, StringRef Ptxas, StringRef Hint) {
  TimeTraceScope Scope("Probe ptxas");
  Expected<std::string> Version =
      runProgram(Ctx, Ptxas, {"ptxas", "--version"}, 60, "ptxas", Hint);
  if (!Version)
    return Version.takeError();
  Expected<std::string> Help =
      runProgram(Ctx, Ptxas, {"ptxas", "--help"}, 60, "ptxas", Hint);
  if (!Help)
    return Help.takeError();
  // ptxas's output reaches us through a temporary file; on a full or
  // read-only file system it is lost while ptxas still exits 0.
  if (Version->empty() && Help->empty()) {
    SmallString<128> Dir(Ctx.Temps.saveDir());
    if (Dir.empty())
      sys::path::system_temp_directory(/*ErasedOnReboot=*/true, Dir);
    return createStringError(inconvertibleErrorCode(),
                             "%s printed nothing for --version and --help; "
                             "its output is captured in a temporary file in "
                             "%s: is that file system full or read-only?",
                             Ptxas.str().c_str(), Dir.c_str());
  }
  return parsePtxasInfo(Ptxas, *Version, *Help);
}

/// Output without the spill warnings PtxasSpillFlag asks for, for error
/// messages: what went wrong stands out.
static std::string withoutSpillWarnings(StringRef Output) {
  std::string Out;
  SmallVector<StringRef, 16> Lines;
  Output.rtrim().split(Lines, '\n');
  for (StringRef L : Lines) {
    if (L.starts_with("ptxas warning") &&
        L.contains("Registers are spilled to local memory"))
      continue;
    Out += L;
    Out += '\n';
  }
  return StringRef(Out).rtrim().str();
}

// Polling notices an exit up to 20 ms late, and code generation runs
// ptxas once per partition and target: hence the pidfd.
bool waitForExit(int Pid, std::chrono::steady_clock::time_point Deadline,
                 bool UsePidfd) {
  using namespace std::chrono;
#ifdef SYS_pidfd_open
  int Fd = UsePidfd ? int(::syscall(SYS_pidfd_open, Pid, 0)) : -1;
  if (Fd >= 0) {
    scope_exit Close([&] { ::close(Fd); });
    for (;;) {
      // Past the deadline, one look without waiting: a poll interrupted
      // by a signal may have slept through the child's exit.
      auto Left = duration_cast<milliseconds>(Deadline - steady_clock::now());
      int Wait = int(std::clamp<int64_t>(Left.count() + 1, 0, INT_MAX));
      pollfd P{Fd, POLLIN, 0};
      int R = ::poll(&P, 1, Left.count() > 0 ? Wait : 0);
      if (R > 0 && (P.revents & POLLIN))
        return true;
      if (R > 0 || (R < 0 && errno != EINTR))
        break; // not a readable pidfd: poll the child instead
      if (R == 0 && Left.count() <= 0)
        return false;
    }
  }
#endif
  auto Pause = microseconds(200);
  for (;;) {
    siginfo_t Info{};
    int R = ::waitid(P_PID, id_t(Pid), &Info, WEXITED | WNOHANG | WNOWAIT);
    if ((R == 0 && Info.si_pid == Pid) || (R < 0 && errno != EINTR))
      return true; // exited, or not ours to wait for: sys::Wait says which
    if (steady_clock::now() >= Deadline)
      return false;
    std::this_thread::sleep_for(Pause);
    Pause = std::min(Pause * 2, decltype(Pause)(20000));
  }
}

/// Starts Program with Argv, stdin from /dev/null and stdout and stderr to
/// Log, as sys::ExecuteNoWait would (posix_spawn, the environment
/// inherited), but as the leader of a process group of its own: a timeout
/// or a signal that ends fatlink then stops the whole group, the children
/// of a `--ptxas=` wrapper script too, which a kill of the one pid left
/// running. (LLVM's Program API cannot set a process group.) A SIGINT from
/// the terminal no longer reaches the tool directly, only fatlink, whose
/// handler stops the group (linker/Context.cpp).
static sys::ProcessInfo spawnInOwnGroup(StringRef Program,
                                        ArrayRef<StringRef> Argv, StringRef Log,
                                        std::string &ErrMsg, bool &Failed) {
  sys::ProcessInfo PI;
  std::vector<std::string> Strings(Argv.begin(), Argv.end());
  std::vector<char *> Args;
  for (std::string &S : Strings)
    Args.push_back(S.data());
  Args.push_back(nullptr);
  std::string Path = Program.str(), LogPath = Log.str();

  posix_spawn_file_actions_t Actions;
  posix_spawnattr_t Attr;
  posix_spawn_file_actions_init(&Actions);
  posix_spawnattr_init(&Attr);
  scope_exit Destroy([&] {
    posix_spawn_file_actions_destroy(&Actions);
    posix_spawnattr_destroy(&Attr);
  });
  posix_spawn_file_actions_addopen(&Actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&Actions, 1, LogPath.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0666);
  posix_spawn_file_actions_adddup2(&Actions, 1, 2);
  posix_spawnattr_setflags(&Attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&Attr, 0); // a group of its own, its pid
  pid_t Pid;
  if (int Err = ::posix_spawn(&Pid, Path.c_str(), &Actions, &Attr, Args.data(),
                              environ)) {
    ErrMsg = "posix_spawn failed: " + std::string(::strerror(Err));
    Failed = true;
    return PI;
  }
  PI.Pid = Pid;
  PI.Process = Pid;
  return PI;
}

Expected<std::string> runProgram(Context &Ctx, StringRef Program,
                                 ArrayRef<StringRef> Args,
                                 unsigned TimeoutSeconds, StringRef What,
                                 StringRef Hint) {
  if (RunningChild::stopping())
    return createStringError(inconvertibleErrorCode(),
                             "interrupted by a signal");
  if (!sys::fs::exists(Program))
    return createStringError(
        inconvertibleErrorCode(),
        "%s not found at %s: install the CUDA toolkit, or %s",
        What.str().c_str(), Program.str().c_str(), Hint.str().c_str());
  if (!sys::fs::can_execute(Program))
    return createStringError(inconvertibleErrorCode(),
                             "%s at %s is not executable: check its "
                             "permissions (chmod +x)",
                             What.str().c_str(), Program.str().c_str());

  // "ptxas for sm_80" -> "ptxas-for-sm_80.log": stable under --save-temps.
  // At most 80 characters of it: What may name an input by its path, and a
  // file name has at most 255 bytes.
  std::string LogName;
  for (char C : What.take_front(80))
    LogName += isAlnum(C) || C == '_' || C == '.' ? C : '-';
  Expected<std::string> LogOrErr = Ctx.Temps.create(LogName + ".log");
  if (!LogOrErr)
    return LogOrErr.takeError();
  // The child's argv[0] is the program's path, not its bare name: nvcc
  // finds its installation (cicc, nvvm/) from argv[0], and with a bare
  // "nvcc" and no CUDA bin directory on PATH it fails ("cicc: not found")
  // or crashes.
  std::vector<StringRef> Argv(Args.begin(), Args.end());
  Argv[0] = Program;
  Ctx.verboseCommand(Argv);

  std::string ErrMsg;
  bool ExecutionFailed = false;
  sys::ProcessInfo PI =
      spawnInOwnGroup(Program, Argv, *LogOrErr, ErrMsg, ExecutionFailed);
  bool TimedOut = false;
  int RC = -1;
  if (!ExecutionFailed) {
    RunningChild Running(PI.Pid); // stopped by a signal that ends fatlink
    if (TimeoutSeconds) {
      // The time fatlink spends stopped (Ctrl-Z), its children stopped
      // with it, does not count.
      auto Deadline = std::chrono::steady_clock::now() +
                      std::chrono::seconds(TimeoutSeconds);
      auto Suspended = RunningChild::suspendedTime();
      while (!waitForExit(PI.Pid, Deadline)) {
        auto Now = RunningChild::suspendedTime();
        if (Now == Suspended) {
          ::kill(-PI.Pid, SIGKILL); // its group: a wrapper's children too
          TimedOut = true;
          break;
        }
        Deadline += Now - Suspended;
        Suspended = Now;
      }
    }
    PI = sys::Wait(PI, std::nullopt, &ErrMsg);
    RC = PI.ReturnCode;
  }
  std::string Output;
  if (ErrorOr<std::unique_ptr<MemoryBuffer>> MB =
          MemoryBuffer::getFile(*LogOrErr))
    Output = (*MB)->getBuffer().str();
  if (!Ctx.Temps.saving())
    sys::fs::remove(*LogOrErr);

  if (ExecutionFailed)
    return createStringError(inconvertibleErrorCode(), "cannot run %s (%s): %s",
                             What.str().c_str(), Program.str().c_str(),
                             ErrMsg.c_str());
  if (TimedOut)
    return createStringError(
          inconvertibleErrorCode(),
          "%s timed out after %u s and was stopped: raise --ptxas-timeout, "
          "or lower -O for this target",
          What.str().c_str(), TimeoutSeconds);
  if (RC == -2)
    return createStringError(inconvertibleErrorCode(), "%s crashed: %s%s%s",
                             What.str().c_str(), ErrMsg.c_str(),
                             Output.empty() ? "" : "\n",
                             withoutSpillWarnings(Output).c_str());
  if (RC != 0)
    return createStringError(
        inconvertibleErrorCode(), "%s failed with exit code %d:\n%s",
        What.str().c_str(), RC, withoutSpillWarnings(Output).c_str());
  return Output;
}

Error checkPTXFile(Context &Ctx, const ToolkitPaths &Paths,
                   unsigned TimeoutSeconds, StringRef PTXPath, StringRef Arch,
                   StringRef Stem, ArrayRef<StringRef> Flags, StringRef What) {
  Expected<std::string> CubinPath =
      Ctx.Temps.create((Stem + ".check.cubin").str());
  if (!CubinPath)
    return CubinPath.takeError();
  std::string ArchFlag = ("-arch=" + Arch).str();
  std::vector<StringRef> Argv = {"ptxas", ArchFlag};
  append_range(Argv, Flags);
  append_range(Argv, ArrayRef<StringRef>{PTXPath, "-o", *CubinPath});
  return runProgram(Ctx, Paths.Ptxas, Argv, TimeoutSeconds, What, Paths.Hint)
      .takeError();
}

} // namespace fatlink::codegen
