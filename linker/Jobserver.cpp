//===- linker/Jobserver.cpp - Joining the build's jobserver --------------===//
//
// Under make, ninja or cargo, fatlink runs beside the build's other jobs;
// its default -j (every core) would oversubscribe the machine. When the
// build offers a GNU make jobserver, fatlink joins it: its thread pools
// (lto/ and codegen/) then run a task only while holding a job slot, the
// one every job gets for free or a token read from the jobserver, and as
// every ptxas and nvlink runs inside such a task, threads and processes
// together stay within the build's -j.
//
// The protocol (GNU make manual, "POSIX Jobserver"): MAKEFLAGS carries
// `--jobserver-auth=fifo:PATH` (make 4.4) or `--jobserver-auth=R,W`, two
// inherited pipe descriptors (older makes, cargo; `--jobserver-fds=R,W`
// before make 4.2); one byte read is one token, written back when done.
// LLVM's client (llvm/Support/Jobserver.h) speaks it, but reads MAKEFLAGS
// alone and warns on stderr when it finds none; cargo hands build scripts
// and linkers CARGO_MAKEFLAGS. So the driver looks first, in both, and
// hands the client CARGO_MAKEFLAGS' value for the one moment it reads the
// environment. A pipe make did not pass down (a recipe without `+`) is
// left alone: fatlink then uses -j as usual.
//
// An explicit -j (or the jobs setting) wins over the jobserver.
//
//===----------------------------------------------------------------------===//

#include "linker/DeviceBuild.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Jobserver.h"

#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <mutex>
#include <sys/stat.h>
#include <unistd.h>

using namespace llvm;

namespace fatlink {

/// The value of the last --jobserver-auth= (or --jobserver-fds=) in Flags;
/// empty if none. A leading word with 'n' (make -n) offers none.
static StringRef jobserverAuth(StringRef Flags) {
  SmallVector<StringRef, 8> Words;
  Flags.split(Words, ' ', -1, /*KeepEmpty=*/false);
  if (!Words.empty() && !Words[0].starts_with("-") && Words[0].contains('n'))
    return {};
  StringRef Auth;
  for (StringRef W : Words) {
    if (W.consume_front("--jobserver-auth=") ||
        W.consume_front("--jobserver-fds="))
      Auth = W;
  }
  return Auth;
}

/// Whether the jobserver Auth names is reachable from this process: a FIFO
/// at the path, or two open descriptors.
static bool reachable(StringRef Auth) {
  if (Auth.consume_front("fifo:")) {
    struct stat St;
    return ::stat(Auth.str().c_str(), &St) == 0 && S_ISFIFO(St.st_mode);
  }
  int R, W;
  if (std::sscanf(Auth.str().c_str(), "%d,%d", &R, &W) != 2 || R < 0 || W < 0)
    return false;
  return ::fcntl(R, F_GETFD) != -1 && ::fcntl(W, F_GETFD) != -1;
}

bool joinJobserver(Context &Ctx) {
  // Once per process: the client reads the environment once, and a second
  // device link in the same process (none today) joins the same one.
  static std::once_flag Once;
  static bool Joined = false;
  std::call_once(Once, [&Ctx] {
    std::string Note;
    scope_exit Report([&] {
      if (!Note.empty())
        Ctx.verbose(Note);
    });
    const char *Make = std::getenv("MAKEFLAGS");
    const char *Cargo = std::getenv("CARGO_MAKEFLAGS");
    StringRef Auth = jobserverAuth(Make ? Make : "");
    StringRef From = "MAKEFLAGS";
    if (Auth.empty()) {
      Auth = jobserverAuth(Cargo ? Cargo : "");
      From = "CARGO_MAKEFLAGS";
    }
    if (Auth.empty())
      return;
    if (!reachable(Auth)) {
      Note = ("jobserver: " + From + " names " + Auth +
              ", which is not open here (a make recipe without '+'?): "
              "-j as usual")
                 .str();
      return;
    }
    // LLVM's client reads MAKEFLAGS: hand it CARGO_MAKEFLAGS' for the
    // moment it does, then put the environment back as it was (ptxas and
    // the host linker inherit it).
    std::string Saved = Make ? Make : "";
    bool Handed = From == "CARGO_MAKEFLAGS";
    if (Handed)
      ::setenv("MAKEFLAGS", Cargo, 1);
    JobserverClient *Client = JobserverClient::getInstance();
    if (Handed) {
      if (Make)
        ::setenv("MAKEFLAGS", Saved.c_str(), 1);
      else
        ::unsetenv("MAKEFLAGS");
    }
    if (!Client) {
      Note = ("jobserver: cannot join the one " + From + " names (" + Auth +
              "): -j as usual")
                 .str();
      return;
    }
    Joined = true;
    Note = ("jobserver: joined " + Auth + " (from " + From + "), " +
            Twine(Client->getNumJobs()) +
            " tokens free at start, counting fatlink's own")
               .str();
  });
  return Joined;
}

} // namespace fatlink
