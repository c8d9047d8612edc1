//===- unittests/linker/TargetsTest.cpp - Target planning and ptxas probing ===//
//
// The rules of linker/Targets.h (presets, lists, PTX versions, refusals with
// their reasons) on hand-built ToolFacts, and codegen/Codegen.h's reading of
// `ptxas --version` and `ptxas --help`, on text captured from CUDA 13.0's
// ptxas. No tool runs here.
//
//===----------------------------------------------------------------------===//

#include "linker/Targets.h"
#include "codegen/Codegen.h"
#include "unittests/TestSupport.h"

using namespace llvm;
using namespace fatlink;
using namespace fatlink::codegen;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Optional;

namespace {

/// A CUDA-13-like machine: LLVM knows sm_70 (which CUDA 13 dropped) and
/// sm_75 to sm_120; ptxas accepts PTX ISA up to 9.0.
ToolFacts cuda13Facts() {
  ToolFacts F;
  F.LLVMMajor = 22;
  F.LLVMMaxPtx = 90;
  // Oldest first, as lto::getLLVMArches returns them; the minimum PTX ISA
  // versions are LLVM 22's.
  F.LLVMArches = {
      {"sm_70", 70, 60},    {"sm_75", 75, 63},   {"sm_80", 80, 70},
      {"sm_86", 86, 71},    {"sm_89", 89, 78},   {"sm_90", 90, 78},
      {"sm_90a", 90, 80},   {"sm_100", 100, 86}, {"sm_100a", 100, 86},
      {"sm_100f", 100, 88}, {"sm_120", 120, 87},
  };
  F.PtxasRelease = "13.0";
  F.PtxasMaxPtx = 90;
  for (const char *A :
       {"75", "80", "86", "89", "90", "90a", "100", "100a", "100f", "120"}) {
    F.PtxasArches.push_back(std::string("sm_") + A);
    F.PtxasArches.push_back(std::string("compute_") + A);
  }
  return F;
}

std::vector<std::string> names(ArrayRef<lto::Target> Targets) {
  std::vector<std::string> Names;
  for (const lto::Target &T : Targets)
    Names.push_back(T.Name);
  return Names;
}

/// The names planTargets gives for Lists, or the error text.
std::vector<std::string> plan(std::vector<std::string> Lists,
                              const ToolFacts &F = cuda13Facts()) {
  Expected<std::vector<lto::Target>> T = planTargets(Lists, F, std::nullopt);
  if (!T)
    return {"error: " + toString(T.takeError())};
  return names(*T);
}

} // namespace

//===----------------------------------------------------------------------===//
// parsePtxVersion
//===----------------------------------------------------------------------===//

TEST(ParsePtxVersion, AcceptsMajorDotMinor) {
  EXPECT_EQ(parsePtxVersion("7.8"), 78u);
  EXPECT_EQ(parsePtxVersion("9.0"), 90u);
  EXPECT_EQ(parsePtxVersion("6.3"), 63u);
  EXPECT_EQ(parsePtxVersion("10.1"), 101u);
}

TEST(ParsePtxVersion, RejectsOtherForms) {
  for (const char *S : {"", "7", "78", "7.", ".8", "7.8.1", "7.10", "7.8x",
                        "v7.8", " 7.8", "-7.8", "7,8"})
    EXPECT_EQ(parsePtxVersion(S), std::nullopt) << "'" << S << "'";
}

TEST(ParsePtxVersion, RejectsValuesThatOverflow) {
  // 429496729 fits in 32 bits, but 429496729 * 10 + 6 is 2^32 and wraps to
  // 0, which would then be reported as "--ptx-version=0.0 is too old".
  EXPECT_EQ(parsePtxVersion("429496729.6"), std::nullopt);
  EXPECT_EQ(parsePtxVersion("4294967295.0"), std::nullopt);
}

//===----------------------------------------------------------------------===//
// allTargets and the presets
//===----------------------------------------------------------------------===//

TEST(AllTargets, EveryArchBothToolsSupportCubinsFirst) {
  // sm_70 is missing: LLVM knows it, ptxas does not.
  EXPECT_THAT(names(allTargets(cuda13Facts())),
              ElementsAre("sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a",
                          "sm_100", "sm_100a", "sm_100f", "sm_120",
                          "compute_75", "compute_80", "compute_86",
                          "compute_89", "compute_90", "compute_90a",
                          "compute_100", "compute_100a", "compute_100f",
                          "compute_120"));
}

TEST(AllTargets, LeavesOutArchesNeedingNewerPtxThanPtxasAccepts) {
  ToolFacts F = cuda13Facts();
  F.PtxasRelease = "12.8";
  F.PtxasMaxPtx = 87; // sm_100f needs 8.8
  std::vector<std::string> Names = names(allTargets(F));
  EXPECT_THAT(Names, ::testing::Not(::testing::Contains("sm_100f")));
  EXPECT_THAT(Names, ::testing::Not(::testing::Contains("compute_100f")));
  EXPECT_THAT(Names, ::testing::Contains("sm_120"));
}

TEST(AllTargets, Fields) {
  std::vector<lto::Target> All = allTargets(cuda13Facts());
  ASSERT_EQ(All.size(), 20u);
  const lto::Target &Sm90a = All[5];
  EXPECT_EQ(Sm90a.Name, "sm_90a");
  EXPECT_EQ(Sm90a.Cpu, "sm_90a");
  EXPECT_EQ(Sm90a.Sm, 90u);
  EXPECT_FALSE(Sm90a.IsPTX);
  EXPECT_EQ(Sm90a.PtxVersion, 80u);
  const lto::Target &Compute120 = All.back();
  EXPECT_EQ(Compute120.Name, "compute_120");
  EXPECT_EQ(Compute120.Cpu, "sm_120");
  EXPECT_TRUE(Compute120.IsPTX);
  EXPECT_EQ(Compute120.PtxVersion, 87u);
}

TEST(PlanTargets, AllMajorIsFirstPlainSmOfEachGenerationPlusNewestPTX) {
  EXPECT_THAT(plan({"all-major"}),
              ElementsAre("sm_75", "sm_80", "sm_90", "sm_100", "sm_120",
                          "compute_120"));
}

TEST(PlanTargets, AllIsEveryPlainSmPlusNewestPTX) {
  EXPECT_THAT(plan({"all"}),
              ElementsAre("sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100",
                          "sm_120", "compute_120"));
}

//===----------------------------------------------------------------------===//
// Lists
//===----------------------------------------------------------------------===//

TEST(PlanTargets, CommaListsInOrder) {
  EXPECT_THAT(plan({"sm_90,sm_80,compute_90"}),
              ElementsAre("sm_90", "sm_80", "compute_90"));
}

TEST(PlanTargets, RepeatedListsAppendAndDropDuplicates) {
  EXPECT_THAT(plan({"sm_90,sm_80", "sm_80,sm_90,compute_90", "sm_90"}),
              ElementsAre("sm_90", "sm_80", "compute_90"));
}

TEST(PlanTargets, EmptyItemsAndSpacesIgnored) {
  EXPECT_THAT(plan({",sm_80,, sm_90 ,"}), ElementsAre("sm_80", "sm_90"));
}

TEST(PlanTargets, PresetMixedWithExplicitTargetsKeepsFirstOccurrence) {
  EXPECT_THAT(plan({"sm_90,compute_120", "all-major"}),
              ElementsAre("sm_90", "compute_120", "sm_75", "sm_80", "sm_100",
                          "sm_120"));
}

TEST(PlanTargets, NoTargets) {
  for (std::vector<std::string> Lists :
       {std::vector<std::string>{}, std::vector<std::string>{",,"}})
    EXPECT_THAT_EXPECTED(
        planTargets(Lists, cuda13Facts(), std::nullopt),
        FailedWithMessage(HasSubstr("no targets: pass --arch")));
}

TEST(PlanTargets, ComputeIsPTXWithSmCpu) {
  Expected<std::vector<lto::Target>> T =
      planTargets({"compute_90a,sm_80"}, cuda13Facts(), std::nullopt);
  ASSERT_THAT_EXPECTED(T, Succeeded());
  ASSERT_EQ(T->size(), 2u);
  EXPECT_EQ((*T)[0].Name, "compute_90a");
  EXPECT_EQ((*T)[0].Cpu, "sm_90a");
  EXPECT_EQ((*T)[0].Sm, 90u);
  EXPECT_TRUE((*T)[0].IsPTX);
  EXPECT_EQ((*T)[0].PtxVersion, 80u);
  EXPECT_EQ((*T)[1].Name, "sm_80");
  EXPECT_EQ((*T)[1].Cpu, "sm_80");
  EXPECT_EQ((*T)[1].Sm, 80u);
  EXPECT_FALSE((*T)[1].IsPTX);
  EXPECT_EQ((*T)[1].PtxVersion, 70u);
  EXPECT_EQ((*T)[1].ptxVersionString(), "7.0");
}

//===----------------------------------------------------------------------===//
// PTX versions
//===----------------------------------------------------------------------===//

TEST(PlanTargets, PtxVersionIsTheArchMinimum) {
  Expected<std::vector<lto::Target>> T = planTargets(
      {"sm_75,sm_89,sm_100f,compute_120"}, cuda13Facts(), std::nullopt);
  ASSERT_THAT_EXPECTED(T, Succeeded());
  std::vector<unsigned> Versions;
  for (const lto::Target &X : *T)
    Versions.push_back(X.PtxVersion);
  EXPECT_THAT(Versions, ElementsAre(63u, 78u, 88u, 87u));
}

TEST(PlanTargets, PtxVersionOverride) {
  Expected<std::vector<lto::Target>> T =
      planTargets({"sm_75,sm_90"}, cuda13Facts(), 85u);
  ASSERT_THAT_EXPECTED(T, Succeeded());
  EXPECT_EQ((*T)[0].PtxVersion, 85u);
  EXPECT_EQ((*T)[1].PtxVersion, 85u);
  EXPECT_EQ((*T)[1].ptxVersionString(), "8.5");
}

TEST(PlanTargets, PtxVersionOverrideTooOldForArch) {
  EXPECT_THAT_EXPECTED(
      planTargets({"sm_80,sm_90"}, cuda13Facts(), 70u),
      FailedWithMessage("--ptx-version=7.0 is too old for sm_90, which needs "
                        "PTX ISA 7.8 or newer"));
}

TEST(PlanTargets, PtxVersionOverrideNewerThanPtxas) {
  ToolFacts F = cuda13Facts();
  F.LLVMMaxPtx = 92;
  EXPECT_THAT_EXPECTED(
      planTargets({"sm_80"}, F, 91u),
      FailedWithMessage("--ptx-version=9.1 is newer than ptxas from CUDA 13.0 "
                        "accepts (9.0): use 9.0 or older, or a newer CUDA "
                        "toolkit (--cuda-path)"));
}

TEST(PlanTargets, PtxVersionOverrideNewerThanLLVM) {
  ToolFacts F = cuda13Facts();
  F.LLVMMaxPtx = 88;
  EXPECT_THAT_EXPECTED(
      planTargets({"sm_80"}, F, 89u),
      FailedWithMessage("--ptx-version=8.9 is newer than LLVM 22 can emit "
                        "(8.8): use 8.8 or older"));
}

// Where both accept the same (a PTX-only link sets ptxas's limit to LLVM's,
// and LLVM 22 and CUDA 13.0 both stop at 9.0), the limit is LLVM's: a
// newer CUDA toolkit would not lift it.
TEST(PlanTargets, PtxVersionOverrideNewerThanBoth) {
  EXPECT_THAT_EXPECTED(
      planTargets({"sm_80"}, cuda13Facts(), 99u),
      FailedWithMessage("--ptx-version=9.9 is newer than LLVM 22 can emit "
                        "(9.0): use 9.0 or older"));
}

// fatlink cc and llbc name the setting the user set.
TEST(PlanTargets, MessagesNameTheSetting) {
  TargetSettingNames From{"FATLINK_ARCH", "FATLINK_PTX_VERSION",
                          "FATLINK_CUDA_PATH"};
  ToolFacts F = cuda13Facts();
  F.LLVMMaxPtx = 92;
  EXPECT_THAT_EXPECTED(
      planTargets({"sm_80"}, F, 91u, From),
      FailedWithMessage("PTX ISA 9.1 (FATLINK_PTX_VERSION) is newer than "
                        "ptxas from CUDA 13.0 accepts (9.0): use 9.0 or "
                        "older, or a newer CUDA toolkit (FATLINK_CUDA_PATH)"));
  EXPECT_THAT_EXPECTED(
      planTargets({"sm_90"}, F, 70u, From),
      FailedWithMessage("PTX ISA 7.0 (FATLINK_PTX_VERSION) is too old for "
                        "sm_90, which needs PTX ISA 7.8 or newer"));
  EXPECT_THAT_EXPECTED(
      planTargets({"sm_81"}, F, std::nullopt, From),
      FailedWithMessage("unknown GPU target 'sm_81' in FATLINK_ARCH: did you "
                        "mean 'sm_80'?"));
  EXPECT_THAT_EXPECTED(
      planTargets({"sm90a"}, F, std::nullopt, From),
      FailedWithMessage("unknown GPU target 'sm90a' in FATLINK_ARCH: did you "
                        "mean 'sm_90a'?"));
  EXPECT_THAT_EXPECTED(
      planTargets({""}, F, std::nullopt, From),
      FailedWithMessage("no targets in FATLINK_ARCH: set it to targets, for "
                        "example sm_80,sm_90,compute_90 or all-major (the "
                        "default when it is not set)"));
}

//===----------------------------------------------------------------------===//
// Refusals
//===----------------------------------------------------------------------===//

TEST(PlanTargets, UnknownTargetSuggestsNearest) {
  // LLVM does not know sm_81; sm_80 is the first at distance 1.
  EXPECT_THAT_EXPECTED(
      planTargets({"sm_81"}, cuda13Facts(), std::nullopt),
      FailedWithMessage("unknown GPU target 'sm_81': did you mean 'sm_80'?"));
  // Not even of the form sm_XX.
  EXPECT_THAT_EXPECTED(
      planTargets({"sm90a"}, cuda13Facts(), std::nullopt),
      FailedWithMessage("unknown GPU target 'sm90a': did you mean 'sm_90a'?"));
  EXPECT_THAT_EXPECTED(
      planTargets({"compute_9O"}, cuda13Facts(), std::nullopt),
      FailedWithMessage(
          "unknown GPU target 'compute_9O': did you mean 'compute_90'?"));
}

TEST(PlanTargets, UnknownTargetFarFromAnyName) {
  EXPECT_THAT_EXPECTED(
      planTargets({"foobarbaz"}, cuda13Facts(), std::nullopt),
      FailedWithMessage("unknown GPU target 'foobarbaz': targets are sm_XX, "
                        "compute_XX, all-major or all"));
  EXPECT_THAT_EXPECTED(
      planTargets({"sm_1234567"}, cuda13Facts(), std::nullopt),
      FailedWithMessage("unknown GPU target 'sm_1234567': LLVM 22 knows sm_XX "
                        "targets from sm_75 to sm_120 (fatlink device-link "
                        "--list-targets lists them)"));
}

TEST(PlanTargets, TargetLLVMKnowsButPtxasDoesNot) {
  EXPECT_THAT_EXPECTED(
      planTargets({"sm_70"}, cuda13Facts(), std::nullopt),
      FailedWithMessage(
          "target sm_70 is not supported by ptxas from CUDA 13.0 (it supports "
          "sm_75 to sm_120): use a CUDA toolkit that supports it "
          "(--cuda-path), or drop sm_70 (fatlink device-link --list-targets "
          "lists what this machine can build)"));
}

TEST(PlanTargets, ArchNeedsNewerPtxThanPtxasAccepts) {
  ToolFacts F = cuda13Facts();
  F.PtxasRelease = "12.8";
  F.PtxasMaxPtx = 87;
  EXPECT_THAT_EXPECTED(
      planTargets({"sm_100f"}, F, std::nullopt),
      FailedWithMessage("target sm_100f needs PTX ISA 8.8, but ptxas from "
                        "CUDA 12.8 accepts at most 8.7: use a newer CUDA "
                        "toolkit (--cuda-path) or drop sm_100f"));
}

TEST(PlanTargets, EveryBadTargetReported) {
  EXPECT_THAT_EXPECTED(
      planTargets({"sm_70,sm_81,sm_80", "foobarbaz,sm_70"}, cuda13Facts(),
                  std::nullopt),
      FailedWithMessageArray(ElementsAre(
          HasSubstr("target sm_70 is not supported by ptxas from CUDA 13.0"),
          HasSubstr("unknown GPU target 'sm_81'"),
          HasSubstr("unknown GPU target 'foobarbaz'"))));
}

//===----------------------------------------------------------------------===//
// --min-driver: the driver must JIT-compile every PTX target
//===----------------------------------------------------------------------===//

TEST(ParseDriverVersion, BranchOrRelease) {
  auto Fields = [](StringRef V) -> std::optional<SmallVector<unsigned, 3>> {
    if (std::optional<DriverVersion> D = parseDriverVersion(V))
      return D->Fields;
    return std::nullopt;
  };
  EXPECT_THAT(Fields("535"), Optional(ElementsAre(535u)));
  EXPECT_THAT(Fields("R535"), Optional(ElementsAre(535u)));
  EXPECT_THAT(Fields("r470"), Optional(ElementsAre(470u)));
  EXPECT_THAT(Fields("550.54.15"), Optional(ElementsAre(550u, 54u, 15u)));
  EXPECT_THAT(Fields("450.36.06"), Optional(ElementsAre(450u, 36u, 6u)));
  EXPECT_EQ(parseDriverVersion("R550")->Given, "R550");
}

TEST(ParseDriverVersion, RejectsOtherForms) {
  // CUDA versions, empty fields, anything but digits and dots.
  for (StringRef V : {"12.2", "13", "", "R", "550.", "550..1", ".550",
                      "550.54a", "99999", "5e2", "-535", "+535", "R 535"})
    EXPECT_EQ(parseDriverVersion(V), std::nullopt) << V.str();
}

/// A PTX target as planTargets makes one.
lto::Target ptxTarget(unsigned Sm, unsigned PtxVersion) {
  lto::Target T;
  T.Name = "compute_" + std::to_string(Sm);
  T.Cpu = "sm_" + std::to_string(Sm);
  T.Sm = Sm;
  T.IsPTX = true;
  T.PtxVersion = PtxVersion;
  return T;
}

DriverVersion driver(StringRef V) {
  std::optional<DriverVersion> D = parseDriverVersion(V);
  EXPECT_TRUE(D) << V.str();
  return D.value_or(DriverVersion{});
}

TEST(CheckMinDriver, PtxIsaNewerThanTheDriverLoads) {
  // PTX ISA 9.0 came with CUDA 13.0, Linux driver 580.65.06; R535 loads
  // up to 8.2 (CUDA 12.2).
  EXPECT_THAT_ERROR(
      checkMinDriver({ptxTarget(75, 90)}, driver("535"), {"compute_75"}, {},
                     nullptr),
      FailedWithMessage("target compute_75: PTX ISA 9.0 needs CUDA 13.0 "
                        "(Linux driver 580.65.06 or newer) to be "
                        "JIT-compiled, but --min-driver=535 is older and "
                        "loads PTX ISA 8.2 at most: use --ptx-version=8.2 or "
                        "older, --min-driver=580.65.06 or newer, or drop "
                        "compute_75"));
}

TEST(CheckMinDriver, ReleaseOrBranchThatLoadsIt) {
  std::vector<lto::Target> T = {ptxTarget(75, 90)};
  EXPECT_THAT_ERROR(checkMinDriver(T, driver("580.65.06"), {}, {}),
                    Succeeded());
  EXPECT_THAT_ERROR(checkMinDriver(T, driver("580.95.05"), {}, {}),
                    Succeeded());
  EXPECT_THAT_ERROR(checkMinDriver(T, driver("590"), {}, {}), Succeeded());
  // A branch stands for each of its releases, as NVIDIA's tables say
  // "R580".
  EXPECT_THAT_ERROR(checkMinDriver(T, driver("R580"), {}, {}), Succeeded());
  // An earlier release of the branch is older.
  EXPECT_THAT_ERROR(
      checkMinDriver(T, driver("580.60"), {}, {}),
      FailedWithMessage(HasSubstr("but --min-driver=580.60 is older and "
                                  "loads PTX ISA 8.8 at most: use "
                                  "--ptx-version=8.8 or older")));
  // The oldest PTX ISA of each arch loads on drivers of its day: sm_75's
  // 6.3 on R410, sm_90's 7.8 on R520.
  EXPECT_THAT_ERROR(checkMinDriver({ptxTarget(75, 63), ptxTarget(90, 78)},
                                   driver("520.61.05"), {}, {}),
                    Succeeded());
}

TEST(CheckMinDriver, CubinTargetsAreNotChecked) {
  lto::Target Cubin = ptxTarget(80, 90);
  Cubin.Name = "sm_80";
  Cubin.IsPTX = false;
  EXPECT_THAT_ERROR(checkMinDriver({Cubin}, driver("R384"), {}, {}),
                    Succeeded());
}

TEST(CheckMinDriver, EveryTargetReported) {
  ToolFacts F = cuda13Facts();
  EXPECT_THAT_ERROR(
      checkMinDriver({ptxTarget(75, 90), ptxTarget(80, 70), ptxTarget(90, 90)},
                     driver("R535"), {"compute_75,compute_80,compute_90"}, {},
                     &F),
      FailedWithMessageArray(ElementsAre(
          HasSubstr("target compute_75: PTX ISA 9.0 needs CUDA 13.0"),
          "target compute_90: PTX ISA 9.0 needs CUDA 13.0 (Linux driver "
          "580.65.06 or newer) to be JIT-compiled, but --min-driver=R535 is "
          "older and loads PTX ISA 8.2 at most: use --ptx-version=8.2 or "
          "older, --min-driver=580.65.06 or newer, or drop compute_90")));
}

TEST(CheckMinDriver, ArchTheDriverDoesNotDrive) {
  // sm_120 needs PTX ISA 8.7 (CUDA 12.8, R570): R535 drives no GPU that
  // compute_120's PTX runs on, so the target is none of its concern; R570
  // does, and must load the target's PTX ISA.
  ToolFacts F = cuda13Facts();
  EXPECT_THAT_ERROR(checkMinDriver({ptxTarget(120, 90)}, driver("R535"),
                                   {"compute_120"}, {}, &F),
                    Succeeded());
  EXPECT_THAT_ERROR(
      checkMinDriver({ptxTarget(120, 90)}, driver("570.26"), {"compute_120"},
                     {}, &F),
      FailedWithMessage(HasSubstr("loads PTX ISA 8.7 at most: use "
                                  "--ptx-version=8.7 or older")));
  // Without facts about the arch, the PTX ISA alone decides.
  EXPECT_THAT_ERROR(
      checkMinDriver({ptxTarget(120, 90)}, driver("R535"), {"compute_120"}, {}),
      Failed());
}

TEST(CheckMinDriver, PtxIsaTheTableDoesNotKnow) {
  // Newer than the runtime's table: refused whatever the driver, since
  // which one loads it is unknown.
  for (StringRef D : {"535", "9999"})
    EXPECT_THAT_ERROR(
        checkMinDriver({ptxTarget(75, 99)}, driver(D), {}, {}),
        FailedWithMessage(HasSubstr(
            "target compute_75: PTX ISA 9.9 is not in fatlink's table of the "
            "drivers that JIT-compile each PTX ISA (6.0 to 9.1, CUDA 9.0 to "
            "13.1), so whether --min-driver=" +
            D.str() + " loads it is unknown: use --ptx-version=")));
}

TEST(CheckMinDriver, MessagesNameTheSetting) {
  TargetSettingNames From{"FATLINK_ARCH", "FATLINK_PTX_VERSION",
                          "FATLINK_CUDA_PATH", "FATLINK_MIN_DRIVER"};
  EXPECT_THAT_ERROR(
      checkMinDriver({ptxTarget(75, 90)}, driver("535"), {"compute_75"}, From),
      FailedWithMessage("target compute_75 in FATLINK_ARCH: PTX ISA 9.0 needs "
                        "CUDA 13.0 (Linux driver 580.65.06 or newer) to be "
                        "JIT-compiled, but driver 535 (FATLINK_MIN_DRIVER) is "
                        "older and loads PTX ISA 8.2 at most: use PTX ISA 8.2 "
                        "or older (FATLINK_PTX_VERSION), driver 580.65.06 or "
                        "newer (FATLINK_MIN_DRIVER), or drop compute_75 in "
                        "FATLINK_ARCH"));
  // A target a preset brought in: the preset is named.
  EXPECT_THAT_ERROR(
      checkMinDriver({ptxTarget(120, 87)}, driver("535"), {"all-major"}, From),
      FailedWithMessage(HasSubstr(
          "or list the targets without compute_120 in place of all-major in "
          "FATLINK_ARCH")));
}

TEST(CheckMinDriver, RaisedPtxIsaSaysWhatRaisedIt) {
  EXPECT_THAT_ERROR(
      checkMinDriver({ptxTarget(90, 88)}, driver("535"), {"compute_90"}, {},
                     nullptr, PtxIsaSource::Inputs),
      FailedWithMessage(HasSubstr("target compute_90: PTX ISA 8.8, the newest "
                                  "its inputs were compiled for, needs CUDA "
                                  "12.9 (Linux driver 575.51.03 or newer)")));
  // nvcc's PTX: --ptx-version would not lower it.
  EXPECT_THAT_ERROR(
      checkMinDriver({ptxTarget(90, 90)}, driver("535"), {"compute_90"}, {},
                     nullptr, PtxIsaSource::Nvcc, {"a.o(__nv_relfatbin[0])"}),
      FailedWithMessage(
          "target compute_90: PTX ISA 9.0, the .version of nvcc's PTX in "
          "a.o(__nv_relfatbin[0]), needs CUDA 13.0 (Linux driver 580.65.06 "
          "or newer) to be JIT-compiled, but --min-driver=535 is older and "
          "loads PTX ISA 8.2 at most: use CUDA 12.2 or older for nvcc (its "
          "PTX is linked in as nvcc wrote it), --min-driver=580.65.06 or "
          "newer, or drop compute_90"));
  EXPECT_THAT_ERROR(
      checkMinDriver({ptxTarget(90, 90)}, driver("535"), {"compute_90"}, {},
                     nullptr, PtxIsaSource::Nvcc),
      FailedWithMessage(HasSubstr(
          "the .version of the nvcc code linked into it, needs CUDA 13.0 "
          "(Linux driver 580.65.06 or newer) to be JIT-compiled, but "
          "--min-driver=535 is older and loads PTX ISA 8.2 at most: use CUDA "
          "12.2 or older for nvcc and --cuda-path (nvJitLink writes the PTX "
          "of nvcc's LTO-IR)")));
}

//===----------------------------------------------------------------------===//
// namedCpus: whose PTX ISA a link needs (probeTools fills only those)
//===----------------------------------------------------------------------===//

std::optional<std::vector<std::string>> named(std::vector<std::string> Lists) {
  return namedCpus(Lists, cuda13Facts());
}

TEST(NamedCpus, EachProcessorOnceInOrder) {
  EXPECT_THAT(named({"sm_90,compute_90, sm_80", "sm_100a,sm_90"}),
              Optional(ElementsAre("sm_90", "sm_80", "sm_100a")));
  EXPECT_THAT(named({"sm_80,,"}), Optional(ElementsAre("sm_80")));
  EXPECT_THAT(named({}), Optional(ElementsAre()));
}

TEST(NamedCpus, PresetOrBadNameNeedsEveryArch) {
  // Presets expand to every arch; a bad name's message names the nearest
  // target and the supported range: all read every arch's facts.
  EXPECT_EQ(named({"sm_80,all-major"}), std::nullopt);
  EXPECT_EQ(named({"sm_80", "all"}), std::nullopt);
  EXPECT_EQ(named({"sm_80,foobarbaz"}), std::nullopt);
  EXPECT_EQ(named({"sm_"}), std::nullopt);
  EXPECT_EQ(named({"sm_80, ,sm_90"}), std::nullopt);
  EXPECT_EQ(named({"sm_80,sm_81"}), std::nullopt); // LLVM knows no sm_81
  EXPECT_EQ(named({"sm_70,sm_80"}), std::nullopt); // CUDA 13 dropped sm_70
}

TEST(NamedCpus, BadTargetMessageFromNamedArchesAloneWouldBeWrong) {
  // Why a target LLVM does not know needs every arch's facts: with only
  // the named ones, the range its message names stops short.
  ToolFacts F = cuda13Facts();
  for (lto::ArchInfo &A : F.LLVMArches)
    if (A.Cpu != "sm_75")
      A.MinPtxVersion = 0;
  std::vector<std::string> Lists = {"sm_75,sm_1234567"};
  EXPECT_THAT_EXPECTED(planTargets(Lists, F, std::nullopt),
                       FailedWithMessage(HasSubstr("from sm_75 to sm_75")));
  EXPECT_THAT_EXPECTED(planTargets(Lists, cuda13Facts(), std::nullopt),
                       FailedWithMessage(HasSubstr("from sm_75 to sm_120")));
}

TEST(NamedCpus, PlanNeedsOnlyTheNamedArchesFacts) {
  // Facts with the PTX ISA of only the named arches (0: unknown) plan the
  // same targets as complete facts.
  ToolFacts F = cuda13Facts();
  for (lto::ArchInfo &A : F.LLVMArches)
    if (A.Cpu != "sm_80" && A.Cpu != "sm_90a")
      A.MinPtxVersion = 0;
  std::vector<std::string> Lists = {"sm_80,compute_90a"};
  Expected<std::vector<lto::Target>> Partial =
      planTargets(Lists, F, std::nullopt);
  Expected<std::vector<lto::Target>> Whole =
      planTargets(Lists, cuda13Facts(), std::nullopt);
  ASSERT_THAT_EXPECTED(Partial, Succeeded());
  ASSERT_THAT_EXPECTED(Whole, Succeeded());
  ASSERT_EQ(Partial->size(), 2u);
  for (size_t I = 0; I < 2; ++I) {
    EXPECT_EQ((*Partial)[I].Name, (*Whole)[I].Name);
    EXPECT_EQ((*Partial)[I].PtxVersion, (*Whole)[I].PtxVersion);
  }
  EXPECT_EQ((*Partial)[1].PtxVersion, 80u);
}

//===----------------------------------------------------------------------===//
// ptxas
//===----------------------------------------------------------------------===//

namespace {

// `ptxas --version` of CUDA 13.0.
constexpr const char *PtxasVersion =
    "ptxas: NVIDIA (R) Ptx optimizing assembler\n"
    "Copyright (c) 2005-2025 NVIDIA Corporation\n"
    "Built on Wed_Aug_20_01:55:12_PM_PDT_2025\n"
    "Cuda compilation tools, release 13.0, V13.0.88\n"
    "Build cuda_13.0.r13.0/compiler.36424714_0\n";

// An excerpt of `ptxas --help` of CUDA 13.0: the option before --gpu-name,
// --gpu-name with its list, and the option after it.
constexpr const char *PtxasHelp =
    "--generate-line-info                                (-lineinfo)\n"
    "        Generate line-number information for device code.\n"
    "\n"
    "--gpu-name <gpu name>                               (-arch)\n"
    "        Specify name of NVIDIA GPU to generate code for. This option also "
    "takes virtual\n"
    "        compute architectures, in which case code generation is "
    "suppressed. This\n"
    "        can be used for parsing only.\n"
    "        Allowed values for this option:  "
    "'compute_100','compute_100a','compute_100f',\n"
    "        'compute_103','compute_103a','compute_103f','compute_110',"
    "'compute_110a',\n"
    "        'compute_110f','compute_120','compute_120a','compute_120f',"
    "'compute_121',\n"
    "        'compute_121a','compute_121f','compute_75','compute_80',"
    "'compute_86','compute_87',\n"
    "        'compute_88','compute_89','compute_90','compute_90a','lto_100',"
    "'lto_100a',\n"
    "        'lto_100f','lto_103','lto_103a','lto_103f','lto_110','lto_110a',"
    "'lto_110f',\n"
    "        'lto_120','lto_120a','lto_120f','lto_121','lto_121a','lto_121f',"
    "'lto_75',\n"
    "        'lto_80','lto_86','lto_87','lto_88','lto_89','lto_90','lto_90a',"
    "'sm_100',\n"
    "        'sm_100a','sm_100f','sm_103','sm_103a','sm_103f','sm_110',"
    "'sm_110a','sm_110f',\n"
    "        'sm_120','sm_120a','sm_120f','sm_121','sm_121a','sm_121f','sm_75',"
    "'sm_80',\n"
    "        'sm_86','sm_87','sm_88','sm_89','sm_90','sm_90a'.\n"
    "        Default value:  'sm_75'.\n"
    "\n"
    "--help                                              (-h)\n"
    "        Print this help information on this tool.\n";

} // namespace

TEST(ParsePtxasInfo, Cuda13) {
  Expected<PtxasInfo> Info =
      parsePtxasInfo("/cuda/bin/ptxas", PtxasVersion, PtxasHelp);
  ASSERT_THAT_EXPECTED(Info, Succeeded());
  EXPECT_EQ(Info->Path, "/cuda/bin/ptxas");
  EXPECT_EQ(Info->Release, "13.0");
  EXPECT_EQ(Info->MaxPtxVersion, 90u);
  // Every quoted value of the list, in order; not the default value.
  EXPECT_EQ(Info->Arches.size(), 69u);
  EXPECT_EQ(Info->Arches.front(), "compute_100");
  EXPECT_EQ(Info->Arches.back(), "sm_90a");
  for (const char *A : {"sm_75", "sm_80", "sm_90a", "sm_100f", "sm_121f",
                        "compute_75", "compute_120f"})
    EXPECT_THAT(Info->Arches, ::testing::Contains(A));
  EXPECT_THAT(Info->Arches, ::testing::Not(::testing::Contains("sm_70")));
}

TEST(ParsePtxasInfo, OlderReleaseWithoutMinor) {
  Expected<PtxasInfo> Info = parsePtxasInfo(
      "ptxas", "Cuda compilation tools, release 12.8, V12.8.93\n", PtxasHelp);
  ASSERT_THAT_EXPECTED(Info, Succeeded());
  EXPECT_EQ(Info->Release, "12.8");
  EXPECT_EQ(Info->MaxPtxVersion, 87u);

  Info = parsePtxasInfo("ptxas", "Cuda compilation tools, release 12\n",
                        PtxasHelp);
  ASSERT_THAT_EXPECTED(Info, Succeeded());
  EXPECT_EQ(Info->Release, "12.0");
  EXPECT_EQ(Info->MaxPtxVersion, 80u);
}

TEST(ParsePtxasInfo, VersionWithoutRelease) {
  for (const char *V : {"", "ptxas: NVIDIA (R) Ptx optimizing assembler\n",
                        "Cuda compilation tools, release x.y\n",
                        "Cuda compilation tools, release 0.9\n"})
    EXPECT_THAT_EXPECTED(
        parsePtxasInfo("/opt/ptxas", V, PtxasHelp),
        FailedWithMessage("/opt/ptxas: cannot read the CUDA release from "
                          "`ptxas --version`: is this NVIDIA's ptxas?"))
        << "'" << V << "'";
}

TEST(ParsePtxasInfo, HelpWithoutArchList) {
  // No --gpu-name at all.
  EXPECT_THAT_EXPECTED(
      parsePtxasInfo("/opt/ptxas", PtxasVersion,
                     "--help   (-h)\n  Print this help information.\n"),
      FailedWithMessage("/opt/ptxas: cannot read the supported arches from "
                        "`ptxas --help`"));
  // --gpu-name, but no list of values.
  EXPECT_THAT_EXPECTED(
      parsePtxasInfo("/opt/ptxas", PtxasVersion,
                     "--gpu-name <gpu name>   (-arch)\n  Specify the GPU.\n"),
      FailedWithMessage("/opt/ptxas: cannot read the supported arches from "
                        "`ptxas --help`"));
  // A list with nothing in quotes.
  EXPECT_THAT_EXPECTED(
      parsePtxasInfo("/opt/ptxas", PtxasVersion,
                     "--gpu-name <gpu name>\n"
                     "  Allowed values for this option:  sm_80, sm_90\n"),
      FailedWithMessage("/opt/ptxas: `ptxas --help` lists no GPU arches"));
  // An unterminated quote ends the list.
  EXPECT_THAT_EXPECTED(
      parsePtxasInfo("/opt/ptxas", PtxasVersion,
                     "--gpu-name <gpu name>\n"
                     "  Allowed values for this option:  'sm_80"),
      FailedWithMessage("/opt/ptxas: `ptxas --help` lists no GPU arches"));
}

TEST(MaxPtxVersionForCudaRelease, Table) {
  EXPECT_EQ(maxPtxVersionForCudaRelease(13, 0), 90u);
  EXPECT_EQ(maxPtxVersionForCudaRelease(12, 9), 88u);
  EXPECT_EQ(maxPtxVersionForCudaRelease(12, 8), 87u);
  EXPECT_EQ(maxPtxVersionForCudaRelease(12, 6), 85u);
  EXPECT_EQ(maxPtxVersionForCudaRelease(12, 5), 85u);
  EXPECT_EQ(maxPtxVersionForCudaRelease(12, 0), 80u);
  EXPECT_EQ(maxPtxVersionForCudaRelease(11, 8), 78u);
  EXPECT_EQ(maxPtxVersionForCudaRelease(11, 0), 70u);
}

TEST(MaxPtxVersionForCudaRelease, NewerThanTableIsNewestKnown) {
  EXPECT_EQ(maxPtxVersionForCudaRelease(99, 0), 90u);
  EXPECT_EQ(maxPtxVersionForCudaRelease(13, 5), 90u);
  // A minor release past the last of its major is still that major's last.
  EXPECT_EQ(maxPtxVersionForCudaRelease(12, 10), 88u);
}
