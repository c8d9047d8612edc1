//===- lto/Recovery.cpp - LLVM's crashes and fatal errors as Errors ------===//
//
// Input that gets past every check can still make LLVM crash or give up:
// a few corrupted bytes of bitcode have ended in a SIGSEGV inside the
// metadata loader, an abort in the NVPTX printer and "LLVM ERROR: out of
// memory". fatlink runs LLVM's work on untrusted input under a
// CrashRecoveryContext, so that what escapes becomes an Error naming the
// input or the stage ("x.rlib(x.rcgu.o): corrupt bitcode: LLVM crashed
// reading it (Segmentation fault)"): the driver then reports it, removes
// its temporaries and writes no output.
//
// Recovery is armed only by enableCrashRecovery(), which the fatlink
// executable calls. Fuzzers and tests do not, so that they see the crash
// itself; there runRecoverably only calls its function. A crash on a thread
// that is not inside runRecoverably still ends the process, as before.
//
//===----------------------------------------------------------------------===//

#include "lto/LTO.h"
#include "lto/Support.h"

#include "llvm/Support/CrashRecoveryContext.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/WithColor.h"

#include <cstring>
#include <string>

using namespace llvm;

namespace fatlink::lto {

/// Where the fatal-error handler leaves LLVM's reason for the
/// runRecoverably call on this thread; null outside one.
static thread_local std::string *FatalReason = nullptr;

/// LLVM's fatal errors (report_fatal_error) and failed allocations must not
/// return to LLVM. Inside runRecoverably they unwind to it; elsewhere they
/// end the process, in fatlink's words, after LLVM's interrupt handlers
/// (which remove the files registered with RemoveFileOnSignal).
static void onFatalError(void *, const char *Reason, bool) {
  if (FatalReason)
    *FatalReason = Reason;
  if (CrashRecoveryContext *CRC = CrashRecoveryContext::GetCurrent())
    CRC->HandleExit(1);
  WithColor::error(errs(), "fatlink") << "LLVM: " << Reason << "\n";
  sys::RunInterruptHandlers();
  sys::Process::Exit(1);
}

void enableCrashRecovery() {
  CrashRecoveryContext::Enable();
  install_fatal_error_handler(onFatalError, nullptr);
  install_bad_alloc_error_handler(onFatalError, nullptr);
}

Error runRecoverably(function_ref<Error()> Fn, const Twine &What,
                     bool OnProgram) {
  std::string Reason;
  std::string *Outer = FatalReason;
  FatalReason = &Reason;
  Error Result = Error::success();
  CrashRecoveryContext CRC;
  bool Finished = CRC.RunSafely([&] { Result = Fn(); });
  FatalReason = Outer;
  if (Finished)
    return Result;
  consumeError(std::move(Result)); // unset, or half-made by a crashed Fn
  // Every input was read and verified before: what crashed LLVM is its
  // bug, or an input its verifier lets through.
  const char *Next =
      OnProgram ? ": every input read and verified, so this is an LLVM bug or "
                  "an input LLVM's verifier does not catch; link the inputs in "
                  "halves to find which, and report it with that input"
                : "";
  if (!Reason.empty())
    return createStringError("LLVM failed " + What + ": " + Reason + Next);
  std::string Signal = "exit code " + std::to_string(CRC.RetCode);
  if (CRC.RetCode > 128)
    Signal = strsignal(CRC.RetCode - 128);
  return createStringError("LLVM crashed " + What + " (" + Signal + ")" + Next);
}

} // namespace fatlink::lto
