//===- unittests/codegen/PtxLinkTest.cpp - linkPTX on small modules -------===//
//
// codegen::linkPTX on hand-written PTX modules shaped like those LLVM and
// nvcc write: the header, .extern resolution, renaming of colliding
// internal symbols, weak and duplicate definitions, debug directives and
// malformed input. (That ptxas assembles the result is checked end to end
// by test/device-link/nvcc-ptx-target.test, with the real ptxas.)
//
//===----------------------------------------------------------------------===//

#include "codegen/Codegen.h"
#include "unittests/TestSupport.h"

#include "llvm/ADT/StringRef.h"

using namespace llvm;
using namespace fatlink;
using namespace fatlink::codegen;

namespace {

std::string header(StringRef Version, StringRef Target) {
  return (".version " + Version + "\n.target " + Target +
          "\n.address_size 64\n\n")
      .str();
}

// Calls nv_scale, defined by the next module, and reads its variable.
const std::string Caller = header("8.8", "sm_120") + R"(
.extern .func  (.param .b32 func_retval0) nv_scale
(
	.param .b32 nv_scale_param_0
)
;
.extern .global .align 4 .u32 nv_calls;
.global .align 1 .b8 $str[3] = {104, 105, 0};

.func helper()
{
	ret;
}

.visible .entry rust_k(.param .u64 p)
{
	.reg .b64 %rd<3>;
	.reg .f32 %f<3>;
	mov.u64 %rd1, nv_calls;
	mov.u64 %rd2, $str;
	{ // callseq 0
	.param .b32 param0;
	.param .b32 retval0;
	call.uni (retval0), nv_scale, (param0);
	}
	call.uni helper, ();
	ret;
}
)";

const std::string Callee = header("9.0", "sm_90") + R"(
	// .globl	nv_scale
.visible .global .align 4 .u32 nv_calls;
.global .align 1 .b8 $str[4] = {110, 118, 33, 0};
.global .align 8 .u64 nv_table[1] = {generic($str)};

.func helper()
{
	ret;
}

.visible .func  (.param .b32 func_retval0) nv_scale(
	.param .b32 nv_scale_param_0
)
{
	.reg .b64 %rd<2>;
	mov.u64 %rd1, $str;
	call.uni helper, ();
	ret;
}
)";

Expected<PtxLinkResult> link2(StringRef A, StringRef B) {
  PtxModule Mods[] = {{"a.ptx", A}, {"b.ptx", B}};
  return linkPTX(Mods, "sm_120");
}

TEST(PtxLinkTest, HeaderIsNewestVersionAndTheTarget) {
  Expected<PtxLinkResult> R = link2(Caller, Callee);
  ASSERT_THAT_EXPECTED(R, Succeeded());
  EXPECT_NE(R->PTX.find("\n.version 9.0\n.target sm_120\n.address_size 64\n"),
            std::string::npos);
  EXPECT_EQ(StringRef(R->PTX).count(".version"), 1u);
  EXPECT_EQ(StringRef(R->PTX).count(".target"), 1u);
}

TEST(PtxLinkTest, ExternResolvedToTheDefinition) {
  Expected<PtxLinkResult> R = link2(Caller, Callee);
  ASSERT_THAT_EXPECTED(R, Succeeded());
  StringRef P = R->PTX;
  // No .extern is left: both are defined by b.ptx.
  EXPECT_EQ(P.find(".extern"), StringRef::npos) << P.str();
  // A prototype precedes the first use, and the definition follows.
  size_t Proto = P.find(".visible .func  (.param .b32 func_retval0) nv_scale(");
  size_t Use = P.find("call.uni (retval0), nv_scale");
  ASSERT_NE(Proto, StringRef::npos);
  EXPECT_LT(Proto, Use);
  EXPECT_EQ(P.count(".visible .global .align 4 .u32 nv_calls;"), 1u);
  EXPECT_LT(P.find(".visible .global .align 4 .u32 nv_calls;"),
            P.find("mov.u64 %rd1, nv_calls"));
}

TEST(PtxLinkTest, CollidingInternalsRenamedInTheirModule) {
  Expected<PtxLinkResult> R = link2(Caller, Callee);
  ASSERT_THAT_EXPECTED(R, Succeeded());
  StringRef P = R->PTX;
  // The first module keeps its names; the second's $str and helper are
  // renamed, every use with them.
  EXPECT_NE(P.find(".global .align 1 .b8 $str[3]"), StringRef::npos);
  EXPECT_NE(P.find(".global .align 1 .b8 $str$1[4]"), StringRef::npos);
  EXPECT_NE(P.find("{generic($str$1)}"), StringRef::npos);
  EXPECT_NE(P.find("mov.u64 %rd1, $str$1;"), StringRef::npos);
  EXPECT_NE(P.find("mov.u64 %rd2, $str;"), StringRef::npos);
  EXPECT_NE(P.find(".func helper$1()\n{"), StringRef::npos);
  EXPECT_NE(P.find("call.uni helper$1, ();"), StringRef::npos);
  EXPECT_EQ(P.count(".func helper()\n{"), 1u);
  // $str$1 is defined before nv_table's initializer names it.
  EXPECT_LT(P.find(".b8 $str$1[4]"), P.find("nv_table"));
  EXPECT_THAT(R->Notes,
              testing::Contains("b.ptx: internal helper renamed helper$1"));
}

TEST(PtxLinkTest, DuplicateStrongDefinitionNamesBothInputs) {
  std::string Dup = header("9.0", "sm_90") +
                    ".visible .func  (.param .b32 func_retval0) nv_scale(\n"
                    "\t.param .b32 nv_scale_param_0\n)\n{\n\tret;\n}\n";
  EXPECT_THAT_EXPECTED(
      link2(Callee, Dup),
      FailedWithMessage("duplicate symbol nv_scale: defined in a.ptx (line "
                        "16) and in b.ptx (line 5)"));
}

TEST(PtxLinkTest, WeakGivesWayToStrong) {
  std::string Weak = header("9.0", "sm_90") +
                     ".weak .global .align 4 .u32 nv_calls = 7;\n"
                     ".weak .func w()\n{\n\tret;\n}\n";
  std::string Weak2 =
      header("9.0", "sm_90") + ".weak .func w()\n{\n\texit;\n}\n";
  PtxModule Mods[] = {{"w.ptx", Weak}, {"b.ptx", Callee}, {"w2.ptx", Weak2}};
  Expected<PtxLinkResult> R = linkPTX(Mods, "sm_120");
  ASSERT_THAT_EXPECTED(R, Succeeded());
  StringRef P = R->PTX;
  EXPECT_EQ(P.find("nv_calls = 7"), StringRef::npos);
  EXPECT_EQ(P.count(".visible .global .align 4 .u32 nv_calls;"), 1u);
  // The first weak function wins; the second's body is gone.
  EXPECT_EQ(P.count(".weak .func w()\n{"), 1u);
  EXPECT_EQ(P.find("exit;"), StringRef::npos);
}

TEST(PtxLinkTest, CommonCopiesMustAgree) {
  std::string A =
      header("9.0", "sm_90") + ".common .global .align 4 .b8 c[4];\n";
  std::string B =
      header("9.0", "sm_90") + ".common .global .align 4 .b8 c[8];\n";
  PtxModule Same[] = {{"a.ptx", A}, {"a2.ptx", A}};
  Expected<PtxLinkResult> R = linkPTX(Same, "sm_90");
  ASSERT_THAT_EXPECTED(R, Succeeded());
  EXPECT_EQ(StringRef(R->PTX).count(".common .global .align 4 .b8 c[4];"), 1u);
  PtxModule Differ[] = {{"a.ptx", A}, {"b.ptx", B}};
  EXPECT_THAT_EXPECTED(
      linkPTX(Differ, "sm_90"),
      FailedWithMessage("common symbol c is declared differently in a.ptx "
                        "(line 5) and in b.ptx (line 5): fatlink links "
                        ".common copies only when they agree"));
}

// nvcc writes every __managed__ variable with an attribute list before its
// name; an .extern of it in another module resolves to it.
TEST(PtxLinkTest, ManagedVariableAttributeBeforeTheName) {
  std::string Def = header("9.0", "sm_80") +
                    ".visible .global .attribute(.managed) .align 4 .u32 mv "
                    "= 3;\n";
  std::string Use = header("9.0", "sm_80") +
                    ".extern .global .attribute(.managed) .align 4 .u32 mv;\n"
                    ".visible .entry km(.param .u64 p)\n{\n"
                    "\t.reg .b64 %rd<2>;\n\tmov.u64 %rd1, mv;\n\tret;\n}\n";
  Expected<PtxLinkResult> R = link2(Use, Def);
  ASSERT_THAT_EXPECTED(R, Succeeded());
  StringRef P = R->PTX;
  EXPECT_EQ(P.find(".extern"), StringRef::npos) << P.str();
  EXPECT_EQ(
      P.count(".visible .global .attribute(.managed) .align 4 .u32 mv = 3;"),
      1u)
      << P.str();
}

TEST(PtxLinkTest, UnresolvedExternKeptOnce) {
  std::string A = header("8.0", "sm_80") +
                  ".extern .func (.param .b32 r) vprintf(.param .b64 f, "
                  ".param .b64 a);\n";
  PtxModule Mods[] = {{"a.ptx", A}, {"b.ptx", A}};
  Expected<PtxLinkResult> R = linkPTX(Mods, "sm_90");
  ASSERT_THAT_EXPECTED(R, Succeeded());
  EXPECT_EQ(StringRef(R->PTX).count(".extern .func (.param .b32 r) vprintf"),
            1u);
}

// nvJitLink's whole-program PTX: nv_scale internal, kept by a kernel that
// takes its address. Exported, it resolves the caller's .extern; the
// keeping kernel is left out.
TEST(PtxLinkTest, ExportAndDrop) {
  std::string Whole = header("9.0", "sm_120") + R"(
.func  (.param .b32 func_retval0) nv_scale(
	.param .b32 nv_scale_param_0
)
;
.visible .entry __keep(.param .u64 p)
{
	.reg .b64 %rd<2>;
	mov.u64 %rd1, nv_scale;
	ret;
}

.func  (.param .b32 func_retval0) nv_scale(
	.param .b32 nv_scale_param_0
)
{
	ret;
}

.func helper()
{
	ret;
}
)";
  const std::string Use = header("8.8", "sm_120") + R"(
.extern .func  (.param .b32 func_retval0) nv_scale
(
	.param .b32 nv_scale_param_0
)
;
.visible .entry k()
{
	call.uni (retval0), nv_scale, (param0);
	ret;
}
)";
  PtxModule Mods[] = {{"use.ptx", Use},
                      {"whole.ptx", Whole, {"nv_scale", "helper_unused"}, {"__keep"}}};
  Expected<PtxLinkResult> R = linkPTX(Mods, "sm_120");
  ASSERT_THAT_EXPECTED(R, Succeeded());
  StringRef P = R->PTX;
  EXPECT_TRUE(R->Unresolved.empty());
  EXPECT_EQ(P.find(".extern"), StringRef::npos) << P.str();
  EXPECT_EQ(P.find("__keep"), StringRef::npos) << P.str();
  EXPECT_EQ(P.count(".visible .func  (.param .b32 func_retval0) nv_scale("), 2u)
      << P.str(); // the prototype and the definition
  // Internal functions not named stay internal.
  EXPECT_NE(P.find("\n.func helper()"), StringRef::npos) << P.str();
}

// A dropped definition that another module still uses leaves that use
// unresolved, so the caller reports it (linkNvccPTX: "used but defined by
// no PTX module") instead of handing ptxas a module that cannot link.
TEST(PtxLinkTest, DroppedDefinitionStillUsedIsUnresolved) {
  std::string Def = header("9.0", "sm_90") +
                    ".visible .func g()\n{\n\tret;\n}\n"
                    ".visible .func h()\n{\n\tret;\n}\n";
  std::string Use = header("9.0", "sm_90") +
                    ".extern .func g();\n"
                    ".visible .entry k()\n{\n\tcall.uni g, ();\n\tret;\n}\n";
  PtxModule Mods[] = {{"use.ptx", Use}, {"def.ptx", Def, {}, {"g"}}};
  Expected<PtxLinkResult> R = linkPTX(Mods, "sm_90");
  ASSERT_THAT_EXPECTED(R, Succeeded());
  EXPECT_EQ(R->Unresolved, std::vector<std::string>{"g"});
  EXPECT_EQ(R->UnresolvedFunctions, std::vector<std::string>{"g"});
  StringRef P = R->PTX;
  EXPECT_EQ(P.find(".visible .func g()\n{"), StringRef::npos) << P.str();
  EXPECT_NE(P.find(".visible .func h()"), StringRef::npos) << P.str();
}

TEST(PtxLinkTest, UnresolvedFunctionsListed) {
  std::string A = header("8.0", "sm_80") +
                  ".extern .func g();\n.extern .global .u32 v;\n";
  PtxModule Mods[] = {{"a.ptx", A}};
  Expected<PtxLinkResult> R = linkPTX(Mods, "sm_90");
  ASSERT_THAT_EXPECTED(R, Succeeded());
  EXPECT_EQ(R->Unresolved, (std::vector<std::string>{"g", "v"}));
  EXPECT_EQ(R->UnresolvedFunctions, std::vector<std::string>{"g"});
}

TEST(PtxLinkTest, FileAndLocRenumbered) {
  std::string A = header("9.0", "sm_90") +
                  ".file\t1 \"a.cu\"\n"
                  ".visible .func f()\n{\n\t.loc\t1 3 1\n\tret;\n}\n";
  std::string B =
      header("9.0", "sm_90, debug") +
      ".file\t1 \"b.cu\"\n.file\t2 \"a.cu\"\n"
      ".visible .func g()\n{\n\t.loc\t1 7 2, function_name $L__info_string0, "
      "inlined_at 2 3 1\n\tret;\n}\n"
      ".section .debug_str\n{\n$L__info_string0:\n.b8 103,0\n}\n";
  PtxModule Mods[] = {{"a.ptx", A}, {"b.ptx", B}};
  Expected<PtxLinkResult> R = linkPTX(Mods, "sm_90");
  ASSERT_THAT_EXPECTED(R, Succeeded());
  StringRef P = R->PTX;
  EXPECT_NE(P.find(".file\t1 \"a.cu\"\n.file\t2 \"b.cu\"\n"), StringRef::npos);
  EXPECT_NE(P.find(".loc\t1 3 1\n"), StringRef::npos);
  // b.cu is file 2 now; the DWARF references are gone with the section.
  EXPECT_NE(P.find(".loc\t2 7 2\n"), StringRef::npos) << P.str();
  EXPECT_EQ(P.find(".section"), StringRef::npos);
  EXPECT_EQ(P.find("$L__info_string0"), StringRef::npos);
  EXPECT_EQ(P.find("debug"), StringRef::npos);
  EXPECT_EQ(R->Notes.size(), 2u);
}

TEST(PtxLinkTest, MalformedInputNamesTheInputAndLine) {
  // No header at all.
  PtxModule NoHeader[] = {{"x.ptx", ".visible .func f()\n{\n\tret;\n}\n"}};
  EXPECT_THAT_EXPECTED(
      linkPTX(NoHeader, "sm_90"),
      FailedWithMessage(
          "x.ptx:1: not a PTX module: no .version, .target and .address_size"));
  // A body that never closes.
  std::string Open = header("9.0", "sm_90") + ".visible .func f()\n{\n\tret;\n";
  PtxModule Unbalanced[] = {{"y.ptx", Open}};
  EXPECT_THAT_EXPECTED(linkPTX(Unbalanced, "sm_90"),
                       FailedWithMessage("y.ptx:6: unbalanced '{'"));
  // Something the linker does not understand.
  std::string Alias = header("9.0", "sm_90") + ".alias a, b;\n";
  PtxModule WithAlias[] = {{"z.ptx", Alias}};
  EXPECT_THAT_EXPECTED(
      linkPTX(WithAlias, "sm_90"),
      FailedWithMessage("z.ptx:5: unsupported module-scope directive .alias: "
                        "fatlink's PTX linker knows .func, .entry and "
                        "variables (.global, .const, .shared, ...)"));
  // Found by the ptx_link fuzzer: a .section that is no DWARF block was
  // dropped with everything up to the next brace...
  std::string Section =
      header("9.0", "sm_90") + ".section.visible .func f()\n{\n\tret;\n}\n";
  PtxModule BadSection[] = {{"d.ptx", Section}};
  EXPECT_THAT_EXPECTED(
      linkPTX(BadSection, "sm_90"),
      FailedWithMessage("d.ptx:5: expected .section .debug_NAME { ... }"));
  // ... and a name both internal and external in one module was renamed
  // everywhere, its external declaration with it.
  std::string Mixed =
      header("9.0", "sm_90") + ".weak .func i();\n.func i()\n{\n\tret;\n}\n";
  PtxModule MixedLinkage[] = {{"e.ptx", Mixed}, {"f.ptx", Mixed}};
  EXPECT_THAT_EXPECTED(
      linkPTX(MixedLinkage, "sm_90"),
      FailedWithMessage("e.ptx:6: i is declared with a linkage directive and "
                        "without one (line 5)"));
  std::string Str = header("9.0", "sm_90") + ".file 1 \"a.cu\n";
  PtxModule Unterminated[] = {{"s.ptx", Str}};
  EXPECT_THAT_EXPECTED(linkPTX(Unterminated, "sm_90"),
                       FailedWithMessage("s.ptx:5: unterminated string"));
}

} // namespace

namespace {

// ptxas --warn-on-spills's warnings, as CUDA 13.0's ptxas prints them: a
// kernel and a device function that spill, among other warnings and info
// lines; a function not named spilled nothing.
TEST(PtxasSpills, Parse) {
  const char *Log =
      "ptxas warning : For profile sm_75 adjusting per thread register count "
      "of 16 to lower bound of 24\n"
      "ptxas warning : Registers are spilled to local memory in function "
      "'spill_more', 1000 bytes spill stores, 1104 bytes spill loads\n"
      "ptxas info    : 0 bytes gmem\n"
      "ptxas warning : Registers are spilled to local memory in function "
      "'_Z6helperPf', 4 bytes spill stores, 12 bytes spill loads\n"
      "ptxas warning : Registers are spilled to local memory in function "
      "'spill', 484 bytes spill stores, 488 bytes spill loads";
  std::vector<fatlink::codegen::FunctionSpills> S =
      fatlink::codegen::parsePtxasSpills(Log);
  ASSERT_EQ(S.size(), 3u);
  EXPECT_EQ(S[0].Name, "spill_more");
  EXPECT_EQ(S[0].Stores, 1000u);
  EXPECT_EQ(S[0].Loads, 1104u);
  EXPECT_EQ(S[1].Name, "_Z6helperPf");
  EXPECT_EQ(S[1].Stores, 4u);
  EXPECT_EQ(S[1].Loads, 12u);
  EXPECT_EQ(S[2].Name, "spill");
  EXPECT_EQ(S[2].Stores, 484u);
  EXPECT_EQ(S[2].Loads, 488u);
  // A warning without both figures, -v's properties (not what fatlink
  // runs), or nothing at all: none.
  EXPECT_TRUE(fatlink::codegen::parsePtxasSpills(
                  "ptxas warning : Registers are spilled to local memory in "
                  "function 'f', 8 bytes spill stores\n"
                  "ptxas info    : Function properties for g\n"
                  "    0 bytes stack frame, 4 bytes spill stores, 4 bytes "
                  "spill loads\n")
                  .empty());
  EXPECT_TRUE(fatlink::codegen::parsePtxasSpills("").empty());
}

} // namespace
