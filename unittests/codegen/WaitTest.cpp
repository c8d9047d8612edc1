//===- unittests/codegen/WaitTest.cpp - runProgram's wait for a child -----===//
//
// codegen::waitForExit on real children (/bin/sh), both ways it waits: on
// a pidfd, and polling (what a kernel without pidfds gets): a child that
// exits is seen at once and reaped with its status, one that outlives the
// deadline is not, and a pid already reaped is not waited for.
//
//===----------------------------------------------------------------------===//

#include "codegen/Codegen.h"
#include "unittests/TestSupport.h"

#include "llvm/Support/Program.h"

#include <signal.h>

using namespace llvm;
using namespace fatlink;
using namespace std::chrono;

namespace {

sys::ProcessInfo start(StringRef Script) {
  std::string ErrMsg;
  bool Failed = false;
  StringRef Argv[] = {"/bin/sh", "-c", Script};
  sys::ProcessInfo PI = sys::ExecuteNoWait("/bin/sh", Argv, std::nullopt, {}, 0,
                                           &ErrMsg, &Failed);
  EXPECT_FALSE(Failed) << ErrMsg;
  return PI;
}

class WaitForExit : public ::testing::TestWithParam<bool> {};

TEST_P(WaitForExit, ExitSeenAndLeftToReap) {
  sys::ProcessInfo PI = start("exit 3");
  auto T0 = steady_clock::now();
  EXPECT_TRUE(codegen::waitForExit(PI.Pid, T0 + seconds(30), GetParam()));
  EXPECT_LT(steady_clock::now() - T0, seconds(10));
  PI = sys::Wait(PI, std::nullopt);
  EXPECT_EQ(PI.ReturnCode, 3);
}

TEST_P(WaitForExit, DeadlinePassesWhileChildRuns) {
  sys::ProcessInfo PI = start("sleep 30");
  auto T0 = steady_clock::now();
  EXPECT_FALSE(
      codegen::waitForExit(PI.Pid, T0 + milliseconds(100), GetParam()));
  auto Waited = steady_clock::now() - T0;
  EXPECT_GE(Waited, milliseconds(100));
  EXPECT_LT(Waited, seconds(10));
  ::kill(PI.Pid, SIGKILL);
  PI = sys::Wait(PI, std::nullopt);
  EXPECT_EQ(PI.ReturnCode, -2); // killed by a signal
}

TEST_P(WaitForExit, AlreadyReapedIsNotWaitedFor) {
  sys::ProcessInfo PI = start("exit 0");
  sys::Wait(PI, std::nullopt);
  auto T0 = steady_clock::now();
  EXPECT_TRUE(codegen::waitForExit(PI.Pid, T0 + seconds(30), GetParam()));
  EXPECT_LT(steady_clock::now() - T0, seconds(10));
}

INSTANTIATE_TEST_SUITE_P(PidfdAndPolling, WaitForExit, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool> &I) {
                           return I.param ? "Pidfd" : "Polling";
                         });

} // namespace
