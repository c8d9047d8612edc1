//===- unittests/lto/LTOTest.cpp - The device LTO engine, through LTO.h ---===//
//
// lto/LTO.h's stages on small inputs built here: the arch table of the
// linked LLVM, input intake (bitcode, archives, and malformed files built
// byte by byte), symbol resolution, internalization, `__nvvm_reflect`
// folding, lazy libdevice, and PTX generation from what they give
// (codegen/Codegen.h's generatePTX and retargetPTX). Device code is written
// as nvptx64 LLVM IR text, so each test shows the program it links.
//
// libdevice comes from $CUDA_PATH, else /usr/local/cuda.
//
//===----------------------------------------------------------------------===//

#include "lto/LTO.h"
#include "codegen/Codegen.h"
#include "unittests/TestSupport.h"

#include "llvm/AsmParser/Parser.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/Bitcode/LLVMBitCodes.h"
#include "llvm/Bitstream/BitstreamReader.h"
#include "llvm/Bitstream/BitstreamWriter.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>

using namespace llvm;
using namespace fatlink;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;
using ::testing::UnorderedElementsAre;

namespace {

constexpr const char *NVPTXHeader =
    "target datalayout = "
    "\"e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64\"\n"
    "target triple = \"nvptx64-nvidia-cuda\"\n";

/// Bitcode of an LLVM IR module, or an empty string (and a test failure)
/// if the IR does not parse.
std::string bitcodeOf(StringRef IR) {
  LLVMContext Ctx;
  SMDiagnostic Diag;
  std::unique_ptr<Module> M = parseAssemblyString(IR, Diag, Ctx);
  if (!M) {
    std::string Msg;
    raw_string_ostream OS(Msg);
    Diag.print("test IR", OS);
    ADD_FAILURE() << Msg;
    return "";
  }
  std::string BC;
  raw_string_ostream OS(BC);
  WriteBitcodeToFile(*M, OS);
  return BC;
}

/// A GNU ar member: a 60-byte header (name, mtime, uid, gid, mode, size,
/// "`\n"), the data, and a newline pad to an even offset.
std::string arMember(StringRef Name, StringRef Data) {
  char Header[61];
  std::snprintf(Header, sizeof(Header), "%-16s%-12s%-6s%-6s%-8s%-10zu`\n",
                (Name + "/").str().c_str(), "0", "0", "0", "644", Data.size());
  std::string M = std::string(Header, 60) + Data.str();
  if (M.size() % 2)
    M += '\n';
  return M;
}

std::string libdevicePath() {
  const char *Cuda = std::getenv("CUDA_PATH");
  return std::string(Cuda && *Cuda ? Cuda : "/usr/local/cuda") +
         "/nvvm/libdevice/libdevice.10.bc";
}

lto::Target smTarget(unsigned Sm, unsigned PtxVersion) {
  lto::Target T;
  T.Name = T.Cpu = "sm_" + std::to_string(Sm);
  T.Sm = Sm;
  T.IsPTX = false;
  T.PtxVersion = PtxVersion;
  return T;
}

/// The constant a kernel's first store writes, read from an optimized
/// module; none if there is no such store.
std::optional<int64_t> storedConstant(const lto::OptimizedModule &OM,
                                      StringRef Kernel) {
  LLVMContext Ctx;
  Expected<std::unique_ptr<Module>> M =
      parseBitcodeFile(MemoryBufferRef(OM.Bitcode, "optimized"), Ctx);
  if (!M) {
    ADD_FAILURE() << toString(M.takeError());
    return std::nullopt;
  }
  const Function *F = (*M)->getFunction(Kernel);
  if (!F) {
    ADD_FAILURE() << "no function " << Kernel.str();
    return std::nullopt;
  }
  for (const BasicBlock &BB : *F)
    for (const Instruction &I : BB)
      if (const auto *S = dyn_cast<StoreInst>(&I)) {
        if (const auto *C = dyn_cast<ConstantInt>(S->getValueOperand()))
          return C->getSExtValue();
        return std::nullopt;
      }
  return std::nullopt;
}

class LTOTest : public ::testing::Test {
protected:
  /// Writes nvptx64 IR (without its header) as bitcode file Name.
  std::string writeIR(StringRef Name, StringRef Body) {
    return Dir.write(Name, bitcodeOf((Twine(NVPTXHeader) + Body).str()));
  }

  Expected<lto::LinkedProgram> link(ArrayRef<std::string> Paths,
                                    ArrayRef<lto::Target> Targets,
                                    const lto::LinkOptions &Opts) {
    Expected<lto::InputSet> In = lto::readInputs(Paths);
    if (!In)
      return In.takeError();
    return lto::linkAndOptimize(*In, Targets, Opts);
  }

  lto::LinkOptions options() {
    lto::LinkOptions Opts;
    Opts.LibdevicePath = libdevicePath();
#ifdef FATLINK_TEST_PARTITION_FIRST
    Opts.PartitionFirst = lto::PartitionFirstMode::Always;
    Opts.Partitions = 4;
#endif
    return Opts;
  }

  test::TempDir Dir;
  std::vector<lto::Target> Sm80 = {smTarget(80, 70)};
};

} // namespace

//===----------------------------------------------------------------------===//
// The arch table of the linked LLVM
//===----------------------------------------------------------------------===//

TEST(LLVMArches, KnownArchesOldestFirst) {
  Expected<std::vector<lto::ArchInfo>> Arches = lto::getLLVMArches();
  ASSERT_THAT_EXPECTED(Arches, Succeeded());
  std::vector<std::string> Cpus;
  for (const lto::ArchInfo &A : *Arches) {
    Cpus.push_back(A.Cpu);
    EXPECT_EQ(A.MinPtxVersion, 0u) << A.Cpu;
    EXPECT_EQ(A.Cpu.rfind("sm_", 0), 0u) << A.Cpu;
  }
  for (const char *Cpu : {"sm_75", "sm_80", "sm_90a", "sm_100", "sm_120"})
    EXPECT_THAT(Cpus, Contains(Cpu));
  for (size_t I = 1; I < Arches->size(); ++I) {
    const lto::ArchInfo &A = (*Arches)[I - 1], &B = (*Arches)[I];
    EXPECT_TRUE(std::tie(A.Sm, A.Cpu) < std::tie(B.Sm, B.Cpu))
        << A.Cpu << " before " << B.Cpu;
  }
  auto Sm90a = llvm::find_if(
      *Arches, [](const lto::ArchInfo &A) { return A.Cpu == "sm_90a"; });
  ASSERT_NE(Sm90a, Arches->end());
  EXPECT_EQ(Sm90a->Sm, 90u);
}

TEST(LLVMArches, MinPtxVersions) {
  // What LLVM 22's NVPTX backend requires (fatlink device-link
  // --list-targets shows the same).
  const struct {
    const char *Cpu;
    unsigned Sm, Ptx;
  } Cases[] = {{"sm_75", 75, 63},
               {"sm_80", 80, 70},
               {"sm_90", 90, 78},
               {"sm_90a", 90, 80},
               {"sm_100", 100, 86}};
  for (const auto &E : Cases) {
    lto::ArchInfo A{E.Cpu, E.Sm, 0};
    ASSERT_THAT_ERROR(lto::fillMinPtxVersion(A), Succeeded());
    EXPECT_EQ(A.MinPtxVersion, E.Ptx) << E.Cpu;
  }
}

TEST(LLVMArches, MaxPtxVersion) {
  Expected<unsigned> Max = lto::getLLVMMaxPtxVersion();
  ASSERT_THAT_EXPECTED(Max, Succeeded());
  EXPECT_GE(*Max, 90u); // sm_88 needs PTX ISA 9.0
}

//===----------------------------------------------------------------------===//
// readInputs
//===----------------------------------------------------------------------===//

TEST_F(LTOTest, ReadsBitcode) {
  std::string A = writeIR("a.bc", "define ptx_kernel void @k() { ret void }\n");
  Expected<lto::InputSet> In = lto::readInputs({A});
  ASSERT_THAT_EXPECTED(In, Succeeded());
  ASSERT_EQ(In->Images.size(), 1u);
  EXPECT_EQ(In->Images[0].Origin, A);
  EXPECT_EQ(In->Images[0].Arch, "");
  EXPECT_THAT(In->Files, ElementsAre(A));
  EXPECT_TRUE(In->Skipped.empty());
}

// Bitcode fatlink wrote and LLVM cannot read back (here cut short) is
// reported as such, with what it was and LLVM's reason.
TEST(ReadOwnBitcode, SaysWhatDoesNotReadBack) {
  std::string Bitcode = bitcodeOf(
      (Twine(NVPTXHeader) + "define ptx_kernel void @k() { ret void }\n")
          .str());
  LLVMContext Ctx;
  ASSERT_THAT_EXPECTED(
      lto::readOwnBitcode(MemoryBufferRef(Bitcode, "m"), Ctx, "the module"),
      Succeeded());
  Bitcode.resize(Bitcode.size() / 2);
  Expected<std::unique_ptr<Module>> M = lto::readOwnBitcode(
      MemoryBufferRef(Bitcode, "m"), Ctx, "the optimized module for sm_80");
  ASSERT_FALSE(bool(M));
  std::string Message = toString(M.takeError());
  EXPECT_THAT(Message, StartsWith("LLVM cannot read back the optimized "
                                  "module for sm_80, which it wrote: "));
  EXPECT_THAT(Message, HasSubstr("link the inputs in halves"));
}

/// A kernel calling a helper, for \p Cpu, with the code's constant \p C.
std::string archImage(StringRef Cpu, int C = 1) {
  return bitcodeOf((Twine(NVPTXHeader) +
                    "define internal i32 @h(i32 %x) #0 { %y = add i32 %x, " +
                    Twine(C) +
                    " ret i32 %y }\n"
                    "define ptx_kernel void @k(ptr %p) #0 {\n"
                    "  %v = load i32, ptr %p\n"
                    "  %w = call i32 @h(i32 %v)\n"
                    "  store i32 %w, ptr %p\n"
                    "  ret void\n}\n"
                    "attributes #0 = { nounwind \"target-cpu\"=\"" +
                    Cpu + "\" \"target-features\"=\"+ptx88," + Cpu + "\" }\n")
                       .str());
}

// clang's per-arch images of one unit differ in target-cpu and
// target-features only, whose lengths move everything after them: equal
// digests. Other code, or another attribute, is another digest.
TEST(ArchNeutralDigest, SameProgramForEveryArch) {
  std::string Sm75 = archImage("sm_75"), Sm100 = archImage("sm_100");
  ASSERT_NE(Sm75, Sm100);
  auto D75 = lto::archNeutralDigest(MemoryBufferRef(Sm75, "a"));
  auto D100 = lto::archNeutralDigest(MemoryBufferRef(Sm100, "b"));
  ASSERT_TRUE(D75.has_value());
  ASSERT_TRUE(D100.has_value());
  EXPECT_EQ(*D75, *D100);

  std::string Other = archImage("sm_75", 2);
  auto DOther = lto::archNeutralDigest(MemoryBufferRef(Other, "c"));
  ASSERT_TRUE(DOther.has_value());
  EXPECT_NE(*D75, *DOther);

  // Another attribute beside the two: not the same program.
  std::string Cold =
      bitcodeOf((Twine(NVPTXHeader) +
                 "define ptx_kernel void @k() #0 { ret void }\n"
                 "attributes #0 = { cold \"target-cpu\"=\"sm_75\" }\n")
                    .str());
  std::string Warm = bitcodeOf(
      (Twine(NVPTXHeader) + "define ptx_kernel void @k() #0 { ret void }\n"
                            "attributes #0 = { \"target-cpu\"=\"sm_90\" }\n")
          .str());
  auto DCold = lto::archNeutralDigest(MemoryBufferRef(Cold, "d"));
  auto DWarm = lto::archNeutralDigest(MemoryBufferRef(Warm, "e"));
  ASSERT_TRUE(DCold && DWarm);
  EXPECT_NE(*DCold, *DWarm);
}

// What the walk cannot vouch for gets no digest, and never a crash:
// bitcode cut short, bytes that are not bitcode, blocks nested deeper than
// LLVM ever writes them.
TEST(ArchNeutralDigest, NoneForWhatItCannotRead) {
  std::string Image = archImage("sm_80");
  for (size_t Keep : {Image.size() / 2, Image.size() - 4, size_t(8)}) {
    std::string Cut = Image.substr(0, Keep);
    EXPECT_FALSE(lto::archNeutralDigest(MemoryBufferRef(Cut, "cut")))
        << Keep << " bytes";
  }
  std::string NotBitcode = "not bitcode at all";
  EXPECT_FALSE(lto::archNeutralDigest(MemoryBufferRef(NotBitcode, "x")));

  SmallVector<char, 0> Deep;
  {
    BitstreamWriter W(Deep);
    for (char C : StringRef("BC\xC0\xDE"))
      W.Emit(uint8_t(C), 8);
    for (int I = 0; I < 100000; ++I)
      W.EnterSubblock(bitc::MODULE_BLOCK_ID, 3);
    for (int I = 0; I < 100000; ++I)
      W.ExitBlock();
  }
  EXPECT_FALSE(lto::archNeutralDigest(
      MemoryBufferRef(StringRef(Deep.data(), Deep.size()), "deep")));
}

/// Where operand Operand of the first record Code in a block BlockID of
/// the module block starts (its bit), and its value, found by reading
/// Image, LLVM's own output, as LLVM does: the record's abbreviation gives
/// each operand's encoding.
struct FoundOperand {
  uint64_t Bit = 0, Value = 0;
};
static std::optional<FoundOperand> findOperand(StringRef Image,
                                               unsigned BlockID, unsigned Code,
                                               unsigned Operand) {
  BitstreamCursor C(arrayRefFromStringRef(Image));
  BitstreamBlockInfo Info;
  cantFail(C.JumpToBit(32));
  SmallVector<uint64_t, 16> Vals;
  unsigned In = ~0u; // the block the cursor is in
  while (!C.AtEndOfStream()) {
    BitstreamEntry Entry = cantFail(C.advance());
    if (Entry.Kind == BitstreamEntry::EndBlock)
      return std::nullopt; // the block to look in, or the module, ended
    if (Entry.Kind == BitstreamEntry::SubBlock) {
      if (Entry.ID == bitc::BLOCKINFO_BLOCK_ID) {
        Info = *cantFail(C.ReadBlockInfoBlock());
        C.setBlockInfo(&Info);
      } else if (Entry.ID == bitc::MODULE_BLOCK_ID ||
                 (In == bitc::MODULE_BLOCK_ID && Entry.ID == BlockID)) {
        cantFail(C.EnterSubBlock(Entry.ID));
        In = Entry.ID;
      } else {
        cantFail(C.SkipBlock());
      }
      continue;
    }
    uint64_t At = C.GetCurrentBitNo();
    Vals.clear();
    if (cantFail(C.readRecord(Entry.ID, Vals)) != Code || In != BlockID)
      continue;
    // Back to the record's start (past its abbreviation's number), then
    // over the code, a literal, and the operands before this one.
    if (Entry.ID < bitc::FIRST_APPLICATION_ABBREV)
      return std::nullopt; // unabbreviated: LLVM abbreviates these records
    const BitCodeAbbrev *A = cantFail(C.getAbbrev(Entry.ID));
    if (Vals.size() <= Operand || A->getNumOperandInfos() <= Operand + 1 ||
        !A->getOperandInfo(0).isLiteral())
      return std::nullopt;
    cantFail(C.JumpToBit(At));
    for (unsigned I = 1; I <= Operand; ++I) {
      const BitCodeAbbrevOp &Op = A->getOperandInfo(I);
      if (Op.isLiteral())
        continue;
      if (Op.getEncoding() == BitCodeAbbrevOp::Fixed)
        cantFail(C.Read(Op.getEncodingData()));
      else if (Op.getEncoding() == BitCodeAbbrevOp::VBR)
        cantFail(C.ReadVBR64(Op.getEncodingData()));
      else
        return std::nullopt;
    }
    return FoundOperand{C.GetCurrentBitNo(), Vals[Operand]};
  }
  return std::nullopt;
}

// The two positions the digest checks rather than hashes: the module's
// VST offset must point at the VST, and each function's entry in the
// module's symbol table at a function block. One word off (the lowest bit
// of the operand flipped, in a fixed or a VBR field alike) is no digest.
TEST(ArchNeutralDigest, NoneWhenAPositionPointsElsewhere) {
  std::string Image = archImage("sm_80");
  ASSERT_TRUE(lto::archNeutralDigest(MemoryBufferRef(Image, "whole")));
  auto OneWordOff = [&](unsigned BlockID, unsigned Code, unsigned Operand) {
    std::optional<FoundOperand> At = findOperand(Image, BlockID, Code, Operand);
    EXPECT_TRUE(At.has_value());
    if (!At)
      return std::string();
    std::string Patched = Image;
    Patched[At->Bit / 8] ^= char(1 << (At->Bit % 8));
    std::optional<FoundOperand> Now =
        findOperand(Patched, BlockID, Code, Operand);
    EXPECT_TRUE(Now && Now->Value == (At->Value ^ 1));
    return Patched;
  };
  // MODULE_CODE_VSTOFFSET: [offset]
  std::string VST =
      OneWordOff(bitc::MODULE_BLOCK_ID, bitc::MODULE_CODE_VSTOFFSET, 0);
  ASSERT_FALSE(VST.empty());
  EXPECT_FALSE(lto::archNeutralDigest(MemoryBufferRef(VST, "vst")));
  // VST_CODE_FNENTRY: [value id, offset]
  std::string Fn =
      OneWordOff(bitc::VALUE_SYMTAB_BLOCK_ID, bitc::VST_CODE_FNENTRY, 1);
  ASSERT_FALSE(Fn.empty());
  EXPECT_FALSE(lto::archNeutralDigest(MemoryBufferRef(Fn, "fnentry")));
}

// What LLVM gives up on or crashes in becomes an Error (as in the fatlink
// executable, which arms the recovery); after the inputs were read and
// verified, it says what the user can do.
TEST(Recovery, SaysWhatToDoWhenLLVMFailsOnTheProgram) {
  lto::enableCrashRecovery();
  // A reason short enough for std::string's inline buffer: the recovery
  // unwinds past LLVM's copy of it, which LeakSanitizer would report.
  auto Fatal = []() -> Error { report_fatal_error("no registers"); };
  EXPECT_EQ(toString(lto::runRecoverably(Fatal, "reading it")),
            "LLVM failed reading it: no registers");
  std::string Message = toString(lto::runRecoverably(
      Fatal, "optimizing a partition for sm_80", /*OnProgram=*/true));
  EXPECT_THAT(Message, StartsWith("LLVM failed optimizing a partition for "
                                  "sm_80: no registers: every input "
                                  "read and verified, so this is an LLVM "
                                  "bug or an input LLVM's verifier does "
                                  "not catch; link the inputs in halves"));
  auto Crash = []() -> Error {
    raise(SIGABRT);
    return Error::success();
  };
  EXPECT_EQ(toString(lto::runRecoverably(Crash, "reading it")),
            "LLVM crashed reading it (Aborted)");
  EXPECT_THAT(toString(lto::runRecoverably(Crash, "generating PTX for sm_80",
                                           /*OnProgram=*/true)),
              StartsWith("LLVM crashed generating PTX for sm_80 (Aborted): "
                         "every input read and verified"));
  // Fn's own errors are its own.
  EXPECT_EQ(toString(lto::runRecoverably(
                [] { return createStringError("no kernels"); }, "linking",
                /*OnProgram=*/true)),
            "no kernels");
}

TEST_F(LTOTest, ReadsArchiveMembers) {
  // An rlib: one bitcode member and rustc's metadata.
  std::string BC =
      bitcodeOf((Twine(NVPTXHeader) + "define void @f() { ret void }\n").str());
  std::string Lib =
      Dir.write("libfoo.rlib", "!<arch>\n" + arMember("foo.rcgu.o", BC) +
                                   arMember("lib.rmeta", "rust metadata"));
  Expected<lto::InputSet> In = lto::readInputs({Lib});
  ASSERT_THAT_EXPECTED(In, Succeeded());
  ASSERT_EQ(In->Images.size(), 1u);
  EXPECT_EQ(In->Images[0].Origin, Lib + "(foo.rcgu.o)");
  EXPECT_THAT(In->Skipped, ElementsAre(Lib + "(lib.rmeta): not device code"));
}

TEST_F(LTOTest, InputsReadBackAfterTheirPagesAreReleased) {
  // A file large enough to be mapped rather than read (a table of 262,144
  // varied words, about 1.3 MB of bitcode): its pages leave the process's
  // resident memory when they are handed back (which LLVM's
  // MemoryBuffer::dontNeedIfMmap does not do on Linux), and read again they
  // are the same bytes, which link as before.
  constexpr unsigned Words = 262144, Probe = 140503;
  std::string Table;
  raw_string_ostream OS(Table);
  uint32_t X = 1, AtProbe = 0;
  for (unsigned I = 0; I < Words; ++I) {
    X = X * 1664525u + 1013904223u;
    OS << (I ? ", " : "") << "i32 " << int32_t(X >> 1);
    if (I == Probe)
      AtProbe = X >> 1;
  }
  std::string A =
      writeIR("table.bc", (Twine("@table = internal constant [") +
                           Twine(Words) + " x i32] [" + Table +
                           "]\n"
                           "define ptx_kernel void @k(ptr %out) {\n"
                           "  %p = getelementptr [" +
                           Twine(Words) + " x i32], ptr @table, i64 0, i64 " +
                           Twine(Probe) +
                           "\n"
                           "  %v = load i32, ptr %p\n"
                           "  store i32 %v, ptr %out\n"
                           "  ret void\n"
                           "}\n")
                              .str());
  Expected<lto::InputSet> In = lto::readInputs({A});
  ASSERT_THAT_EXPECTED(In, Succeeded());
  ASSERT_EQ(In->Images.size(), 1u);
  std::string Bytes = In->Images[0].Bitcode.getBuffer().str(); // all read
  ASSERT_GT(Bytes.size(), 1024u * 1024);
  uint64_t Before = test::residentKB();
  ASSERT_GT(Before, 0u) << "no VmRSS in /proc/self/status";
  In->releaseMappedPages();
  uint64_t After = test::residentKB();
  EXPECT_LT(After + Bytes.size() / 2048, Before)
      << "VmRSS " << Before << " -> " << After << " kB";
  EXPECT_TRUE(In->Images[0].Bitcode.getBuffer() == Bytes);
  In->releaseMappedPages(); // twice: still nothing lost
  Expected<lto::LinkedProgram> P = lto::linkAndOptimize(*In, Sm80, options());
  ASSERT_THAT_EXPECTED(P, Succeeded());
  EXPECT_EQ(storedConstant(P->Modules[0], "k"), int64_t(AtProbe));

  // The file one image lies in, as a partition-first link hands it back
  // once the image is summarized (here the image is the file): the same
  // pages go, the same bytes read back.
  ASSERT_TRUE(In->Images[0].Bitcode.getBuffer() == Bytes); // resident again
  Before = test::residentKB();
  In->releaseMappedPages(In->Images[0].Bitcode.getBuffer());
  After = test::residentKB();
  EXPECT_LT(After + Bytes.size() / 2048, Before)
      << "VmRSS " << Before << " -> " << After << " kB";
  EXPECT_TRUE(In->Images[0].Bitcode.getBuffer() == Bytes);
  // A range the set does not map (here a heap string: its pages hold the
  // only copy) is left alone.
  std::string Heap = Bytes;
  In->releaseMappedPages(Heap);
  EXPECT_TRUE(Heap == Bytes);
  P = lto::linkAndOptimize(*In, Sm80, options());
  ASSERT_THAT_EXPECTED(P, Succeeded());
  EXPECT_EQ(storedConstant(P->Modules[0], "k"), int64_t(AtProbe));
}

TEST_F(LTOTest, BitcodeFromNewerLLVM) {
  // Bitcode that says it comes from LLVM 99. The identification block names
  // the producer "LLVM99.0.0" (epoch 0, so that part is readable), and the
  // module block has a MODULE_CODE_VERSION of 99, which no LLVM knows (0 to
  // 2 exist): LLVM's own reader would fail with an obscure message, so
  // fatlink must refuse it by the producer first and name both versions.
  SmallVector<char, 256> Buf;
  {
    BitstreamWriter W(Buf);
    for (unsigned C : {'B', 'C'})
      W.Emit(C, 8);
    for (unsigned Nibble : {0x0, 0xC, 0xE, 0xD})
      W.Emit(Nibble, 4);

    W.EnterSubblock(bitc::IDENTIFICATION_BLOCK_ID, 5);
    StringRef Producer = "LLVM99.0.0";
    SmallVector<unsigned, 16> Chars(Producer.begin(), Producer.end());
    W.EmitRecord(bitc::IDENTIFICATION_CODE_STRING, Chars);
    W.EmitRecord(bitc::IDENTIFICATION_CODE_EPOCH,
                 SmallVector<unsigned, 1>{bitc::BITCODE_CURRENT_EPOCH});
    W.ExitBlock();

    W.EnterSubblock(bitc::MODULE_BLOCK_ID, 3);
    W.EmitRecord(bitc::MODULE_CODE_VERSION, SmallVector<unsigned, 1>{99});
    StringRef Triple = "nvptx64-nvidia-cuda";
    SmallVector<unsigned, 32> TripleChars(Triple.begin(), Triple.end());
    W.EmitRecord(bitc::MODULE_CODE_TRIPLE, TripleChars);
    W.ExitBlock();
  }
  std::string Path = Dir.write("new.bc", StringRef(Buf.data(), Buf.size()));
  EXPECT_THAT_EXPECTED(
      lto::readInputs({Path}),
      FailedWithMessage(
          AllOf(HasSubstr(Path + ": bitcode was produced by LLVM99.0.0"),
                HasSubstr("this fatlink reads LLVM <= " +
                          std::to_string(LLVM_VERSION_MAJOR)),
                HasSubstr("rebuild fatlink against LLVM 99"))));
}

TEST_F(LTOTest, CorruptBitcode) {
  // The bitcode magic, then bytes that are no bitstream.
  std::string Path =
      Dir.write("bad.bc", StringRef("BC\xC0\xDE\xFF\x01\x02", 7));
  EXPECT_THAT_EXPECTED(
      lto::readInputs({Path}),
      FailedWithMessage(HasSubstr(Path + ": corrupt bitcode")));
}

TEST_F(LTOTest, BitcodeForAnotherTarget) {
  std::string Path =
      Dir.write("host.bc", bitcodeOf("target triple = \"x86_64-pc-linux-gnu\"\n"
                                     "define void @f() { ret void }\n"));
  EXPECT_THAT_EXPECTED(lto::readInputs({Path}),
                       FailedWithMessage(AllOf(
                           HasSubstr(Path + ": bitcode is for target "
                                            "'x86_64-pc-linux-gnu', not "
                                            "nvptx64-nvidia-cuda"),
                           HasSubstr("rustc --target nvptx64-nvidia-cuda"))));
}

TEST_F(LTOTest, BitcodeWithoutTriple) {
  std::string Path = Dir.write("none.bc", bitcodeOf("define void @f() { "
                                                    "ret void }\n"));
  EXPECT_THAT_EXPECTED(
      lto::readInputs({Path}),
      FailedWithMessage(HasSubstr(Path + ": bitcode is for target '(none)'")));
}

TEST_F(LTOTest, UnknownFileType) {
  std::string Path = Dir.write("notes.txt", "not device code\n");
  EXPECT_THAT_EXPECTED(
      lto::readInputs({Path}),
      FailedWithMessage(Path + ": unknown file type: expected LLVM bitcode, "
                               "an archive or an ELF object with device "
                               "code"));
}

TEST_F(LTOTest, NoInputFiles) {
  EXPECT_THAT_EXPECTED(lto::readInputs({}),
                       FailedWithMessage("no input files"));
}

TEST_F(LTOTest, MissingFile) {
  std::string Path = Dir.file("missing.bc");
  EXPECT_THAT_EXPECTED(
      lto::readInputs({Path}),
      FailedWithMessage(HasSubstr("cannot open " + Path + ": ")));
}

TEST_F(LTOTest, ArchiveWithoutBitcode) {
  std::string Path = Dir.write(
      "libmeta.rlib", "!<arch>\n" + arMember("lib.rmeta", "rust metadata"));
  EXPECT_THAT_EXPECTED(
      lto::readInputs({Path}),
      FailedWithMessage(HasSubstr(Path + ": archive contains no device "
                                         "bitcode")));
}

TEST_F(LTOTest, EveryBadInputReported) {
  // Each kind of bad input once, with a good one among them: one run
  // reports all four, the archive included although earlier files failed.
  std::string Text = Dir.write("notes.txt", "not device code\n");
  std::string Missing = Dir.file("missing.bc");
  std::string Meta = Dir.write(
      "libmeta.rlib", "!<arch>\n" + arMember("lib.rmeta", "rust metadata"));
  std::string Host = Dir.write(
      "host.bc", bitcodeOf("target triple = \"x86_64-pc-linux-gnu\"\n"));
  std::string Good =
      writeIR("good.bc", "define ptx_kernel void @k() { ret void }\n");
  EXPECT_THAT_EXPECTED(
      lto::readInputs({Text, Missing, Good, Meta, Host}),
      FailedWithMessageArray(
          ElementsAre(HasSubstr(Text + ": unknown file type"),
                      HasSubstr("cannot open " + Missing),
                      HasSubstr(Meta + ": archive contains no device bitcode"),
                      HasSubstr(Host + ": bitcode is for target 'x86_64"))));
}

TEST_F(LTOTest, ErrorCountIsCapped) {
  std::vector<std::string> Paths;
  for (int I = 0; I < 25; ++I)
    Paths.push_back(Dir.file("missing" + std::to_string(I) + ".bc"));
  // The first 20 errors, then a note on how many there were.
  EXPECT_THAT_EXPECTED(
      lto::readInputs(Paths),
      FailedWithMessageArray(AllOf(
          ::testing::SizeIs(21), ::testing::Contains(HasSubstr("missing19.bc")),
          Not(::testing::Contains(HasSubstr("missing20.bc"))),
          Contains("too many errors (25), the first 20 shown: "
                   "--error-limit=0 shows all"))));
}

//===----------------------------------------------------------------------===//
// Symbol resolution
//===----------------------------------------------------------------------===//

TEST_F(LTOTest, DuplicateStrongDefinitions) {
  std::string A = writeIR("a.bc", "define void @helper() { ret void }\n"
                                  "define ptx_kernel void @k() {\n"
                                  "  call void @helper()\n"
                                  "  ret void\n"
                                  "}\n");
  std::string B = writeIR("b.bc", "define void @helper() { ret void }\n");
  EXPECT_THAT_EXPECTED(link({A, B}, Sm80, options()),
                       FailedWithMessage("duplicate device symbol: helper\n"
                                         ">>> defined in " +
                                         A + "\n>>> defined in " + B));
}

TEST_F(LTOTest, DuplicateSymbolDemangled) {
  std::string A = writeIR("a.bc", "define void @_ZN3foo3barEv() { ret void }\n"
                                  "define ptx_kernel void @k() { ret void }\n");
  std::string B =
      writeIR("b.bc", "define void @_ZN3foo3barEv() { ret void }\n");
  EXPECT_THAT_EXPECTED(
      link({A, B}, Sm80, options()),
      FailedWithMessage(
          HasSubstr("duplicate device symbol: _ZN3foo3barEv (foo::bar())")));
}

TEST_F(LTOTest, WeakDefinitionYieldsToStrong) {
  std::string A = writeIR("a.bc", "define weak i32 @value() { ret i32 1 }\n"
                                  "define ptx_kernel void @k(ptr %out) {\n"
                                  "  %v = call i32 @value()\n"
                                  "  store i32 %v, ptr %out\n"
                                  "  ret void\n"
                                  "}\n");
  std::string B = writeIR("b.bc", "define i32 @value() { ret i32 2 }\n");
  Expected<lto::LinkedProgram> P = link({A, B}, Sm80, options());
  ASSERT_THAT_EXPECTED(P, Succeeded());
  ASSERT_EQ(P->Modules.size(), 1u);
  EXPECT_EQ(storedConstant(P->Modules[0], "k"), 2);
}

TEST_F(LTOTest, LinkonceOdrInSeveralInputs) {
  const char *Tmpl = "define linkonce_odr i32 @tmpl() { ret i32 7 }\n";
  std::string A =
      writeIR("a.bc", (Twine(Tmpl) + "define ptx_kernel void @k(ptr %out) {\n"
                                     "  %v = call i32 @tmpl()\n"
                                     "  store i32 %v, ptr %out\n"
                                     "  ret void\n"
                                     "}\n")
                          .str());
  std::string B =
      writeIR("b.bc", (Twine(Tmpl) + "define ptx_kernel void @k2(ptr %out) {\n"
                                     "  %v = call i32 @tmpl()\n"
                                     "  store i32 %v, ptr %out\n"
                                     "  ret void\n"
                                     "}\n")
                          .str());
  Expected<lto::LinkedProgram> P = link({A, B}, Sm80, options());
  ASSERT_THAT_EXPECTED(P, Succeeded());
  EXPECT_EQ(storedConstant(P->Modules[0], "k"), 7);
  EXPECT_EQ(storedConstant(P->Modules[0], "k2"), 7);
}

TEST_F(LTOTest, ComdatAnyInSeveralInputs) {
  // Each input has the same comdat group; as in an ELF link, the first
  // group is kept and the others are dropped, so this is no duplicate.
  const char *Group = "$grouped = comdat any\n"
                      "define i32 @grouped() comdat { ret i32 5 }\n";
  std::string A =
      writeIR("a.bc", (Twine(Group) + "define ptx_kernel void @k(ptr %out) {\n"
                                      "  %v = call i32 @grouped()\n"
                                      "  store i32 %v, ptr %out\n"
                                      "  ret void\n"
                                      "}\n")
                          .str());
  std::string B = writeIR("b.bc", Group);
  Expected<lto::LinkedProgram> P = link({A, B}, Sm80, options());
  ASSERT_THAT_EXPECTED(P, Succeeded());
  EXPECT_EQ(storedConstant(P->Modules[0], "k"), 5);
}

TEST_F(LTOTest, AvailableExternallyWithoutDefinition) {
  // An available_externally body is only a copy for the optimizer: the
  // symbol must be defined by some input, so with none it is undefined, as
  // in lld. Left alone, -O0 keeps the call and emits `.weak .func ae` with
  // no body, which ptxas rejects ("Unresolved extern function 'ae'").
  std::string A = writeIR("a.bc", "define available_externally i32 @ae() "
                                  "{ ret i32 3 }\n"
                                  "define ptx_kernel void @k(ptr %out) {\n"
                                  "  %v = call i32 @ae()\n"
                                  "  store i32 %v, ptr %out\n"
                                  "  ret void\n"
                                  "}\n");
  lto::LinkOptions Opts = options();
  Opts.OptLevel = 0;
  EXPECT_THAT_EXPECTED(link({A}, Sm80, Opts),
                       FailedWithMessage("undefined device symbol: ae\n"
                                         ">>> referenced by " +
                                         A));
}

TEST_F(LTOTest, UndefinedSymbol) {
  std::string A = writeIR("a.bc", "declare void @missing_fn()\n"
                                  "define ptx_kernel void @k() {\n"
                                  "  call void @missing_fn()\n"
                                  "  ret void\n"
                                  "}\n");
  EXPECT_THAT_EXPECTED(link({A}, Sm80, options()),
                       FailedWithMessage("undefined device symbol: missing_fn\n"
                                         ">>> referenced by " +
                                         A));
}

TEST_F(LTOTest, UndefinedSymbolEveryReferenceNamed) {
  auto CallsMissing = [](StringRef Kernel) {
    return ("declare void @missing_fn()\n"
            "define ptx_kernel void @" +
            Kernel +
            "() {\n"
            "  call void @missing_fn()\n"
            "  ret void\n"
            "}\n")
        .str();
  };
  std::string A = writeIR("a.bc", CallsMissing("ka"));
  std::string B = writeIR("b.bc", CallsMissing("kb"));
  EXPECT_THAT_EXPECTED(link({A, B}, Sm80, options()),
                       FailedWithMessage("undefined device symbol: missing_fn\n"
                                         ">>> referenced by " +
                                         A + "\n>>> referenced by " + B));
}

TEST_F(LTOTest, UndefinedGlobalVariable) {
  std::string A = writeIR("a.bc", "@ext = external addrspace(1) global i32\n"
                                  "define ptx_kernel void @k(ptr %out) {\n"
                                  "  %v = load i32, ptr addrspace(1) @ext\n"
                                  "  store i32 %v, ptr %out\n"
                                  "  ret void\n"
                                  "}\n");
  EXPECT_THAT_EXPECTED(
      link({A}, Sm80, options()),
      FailedWithMessage(HasSubstr("undefined device symbol: ext\n"
                                  ">>> referenced by " +
                                  A)));
}

TEST_F(LTOTest, WeakReferenceMayStayUndefined) {
  // clang declares its builtin variables extern_weak; at -O0 (or wherever
  // their address survives, as in cooperative groups' dim3(threadIdx)) they
  // reach the link. Unresolved weak references are not errors, as in any
  // linker: not for clang's names alone, and not for functions either.
  std::string A = writeIR(
      "a.bc",
      "%struct.__cuda_builtin_threadIdx_t = type { i8 }\n"
      "@threadIdx = extern_weak addrspace(1) global "
      "%struct.__cuda_builtin_threadIdx_t, align 1\n"
      "@some_weak_var = extern_weak addrspace(1) global i32\n"
      "declare extern_weak void @some_weak_fn()\n"
      "define ptx_kernel void @k(ptr %out) {\n"
      "  store ptr addrspacecast (ptr addrspace(1) @threadIdx to ptr), "
      "ptr %out\n"
      "  %p = getelementptr ptr, ptr %out, i64 1\n"
      "  store ptr addrspacecast (ptr addrspace(1) @some_weak_var to ptr), "
      "ptr %p\n"
      "  %q = getelementptr ptr, ptr %out, i64 2\n"
      "  store ptr @some_weak_fn, ptr %q\n"
      "  ret void\n"
      "}\n");
  for (unsigned OptLevel : {0u, 3u}) {
    lto::LinkOptions Opts = options();
    Opts.OptLevel = OptLevel;
    Expected<lto::LinkedProgram> P = link({A}, Sm80, Opts);
    ASSERT_THAT_EXPECTED(P, Succeeded());
    Expected<std::string> PTX = codegen::generatePTX(*P, Sm80, 0, OptLevel);
    ASSERT_THAT_EXPECTED(PTX, Succeeded());
    // They resolve to null, as in an ELF linker: PTX has no weak undefined
    // symbols, and ptxas rejects an unresolved .extern .func.
    EXPECT_THAT(*PTX, Not(HasSubstr("threadIdx")));
    EXPECT_THAT(*PTX, Not(HasSubstr("some_weak")));
  }
}

TEST_F(LTOTest, WeakReferenceResolvesToADefinition) {
  std::string A = writeIR("a.bc", "@v = extern_weak addrspace(1) global i32\n"
                                  "define ptx_kernel void @k(ptr %out) {\n"
                                  "  %x = load i32, ptr addrspace(1) @v\n"
                                  "  store i32 %x, ptr %out\n"
                                  "  ret void\n"
                                  "}\n");
  std::string B = writeIR("b.bc", "@v = addrspace(1) global i32 7\n");
  Expected<lto::LinkedProgram> P = link({A, B}, Sm80, options());
  ASSERT_THAT_EXPECTED(P, Succeeded());
  EXPECT_EQ(storedConstant(P->Modules[0], "k"), 7);
}

TEST_F(LTOTest, DynamicSharedMemoryIsNotUndefined) {
  // `extern __shared__ float smem[];` in two translation units, with
  // different types and alignments: one .extern .shared symbol with the
  // largest alignment, whichever input comes first.
  auto Kernel = [](StringRef Name, StringRef Ty, unsigned Align) {
    return ("@smem = external addrspace(3) global [0 x " + Ty +
            "], align " + Twine(Align) +
            "\n"
            "define ptx_kernel void @" +
            Name +
            "(ptr %out) {\n"
            "  %v = load " +
            Ty +
            ", ptr addrspace(3) @smem\n"
            "  store " +
            Ty +
            " %v, ptr %out\n"
            "  ret void\n"
            "}\n")
        .str();
  };
  std::string A = writeIR("a.bc", Kernel("ka", "float", 4));
  std::string B = writeIR("b.bc", Kernel("kb", "<4 x float>", 16));
  for (const std::vector<std::string> &Order :
       {std::vector<std::string>{A, B}, std::vector<std::string>{B, A}}) {
    Expected<lto::LinkedProgram> P = link(Order, Sm80, options());
    ASSERT_THAT_EXPECTED(P, Succeeded());
    Expected<std::string> PTX = codegen::generatePTX(*P, Sm80, 0, 3);
    ASSERT_THAT_EXPECTED(PTX, Succeeded());
    EXPECT_THAT(*PTX, HasSubstr(".extern .shared .align 16 .b8 smem[];"));
  }
}

TEST_F(LTOTest, UndefinedNonSharedDeclarationIsStillAnError) {
  // Only the shared address space may stay undefined: the same
  // declaration in global memory is an undefined symbol.
  std::string A = writeIR("a.bc",
                          "@gmem = external addrspace(1) global [0 x float]\n"
                          "define ptx_kernel void @k(ptr %out) {\n"
                          "  %v = load float, ptr addrspace(1) @gmem\n"
                          "  store float %v, ptr %out\n"
                          "  ret void\n"
                          "}\n");
  EXPECT_THAT_EXPECTED(link({A}, Sm80, options()),
                       FailedWithMessage(HasSubstr("undefined device symbol: gmem")));
}

TEST_F(LTOTest, PtxVersionRaisedToWhatInputsNeed) {
  // An input compiled with +ptx76 (inline PTX that needs 7.6, say) raises
  // sm_75's PTX ISA from its minimum 6.3; a target already above keeps its
  // own; --ptx-version (KeepPtxVersion) keeps the user's choice.
  std::string A = writeIR("a.bc", "define ptx_kernel void @k(ptr %p) #0 {\n"
                                  "  store i32 1, ptr %p\n"
                                  "  ret void\n"
                                  "}\n"
                                  "attributes #0 = { \"target-cpu\"=\"sm_75\" "
                                  "\"target-features\"=\"+ptx76,+sm_75\" }\n");
  std::vector<lto::Target> Targets = {smTarget(75, 63), smTarget(90, 78)};
  Expected<lto::LinkedProgram> P = link({A}, Targets, options());
  ASSERT_THAT_EXPECTED(P, Succeeded());
  EXPECT_THAT(P->PtxVersions, ElementsAre(76u, 78u));
  Expected<std::string> PTX = codegen::generatePTX(*P, Targets, 0, 3);
  ASSERT_THAT_EXPECTED(PTX, Succeeded());
  EXPECT_THAT(*PTX, HasSubstr(".version 7.6\n"));

  lto::LinkOptions Keep = options();
  Keep.KeepPtxVersion = true;
  P = link({A}, Targets, Keep);
  ASSERT_THAT_EXPECTED(P, Succeeded());
  EXPECT_THAT(P->PtxVersions, ElementsAre(63u, 78u));
}

TEST_F(LTOTest, PtxVersionAboveWhatPtxasTakes) {
  std::string A = writeIR("a.bc", "define ptx_kernel void @k(ptr %p) #0 {\n"
                                  "  store i32 1, ptr %p\n"
                                  "  ret void\n"
                                  "}\n"
                                  "attributes #0 = { \"target-cpu\"=\"sm_80\" "
                                  "\"target-features\"=\"+ptx88\" }\n");
  lto::LinkOptions Opts = options();
  Opts.MaxPtxVersion = 85;
  Opts.MaxPtxVersionBy = "ptxas from CUDA 12.5";
  EXPECT_THAT_EXPECTED(
      link({A}, Sm80, Opts),
      FailedWithMessage(A + ": compiled for PTX ISA 8.8 (+ptx88), but ptxas "
                            "from CUDA 12.5 accepts at most 8.5: use a newer "
                            "CUDA toolkit (--cuda-path), compile it for an "
                            "older PTX ISA, or choose one with --ptx-version"));
}

TEST_F(LTOTest, UndefinedSymbolsUpToTheErrorLimit) {
  std::string IR;
  for (int I = 0; I < 25; ++I)
    IR += "declare void @missing" + std::to_string(I) + "()\n";
  IR += "define ptx_kernel void @k() {\n";
  for (int I = 0; I < 25; ++I)
    IR += "  call void @missing" + std::to_string(I) + "()\n";
  IR += "  ret void\n}\n";
  std::string A = writeIR("a.bc", IR);
  EXPECT_THAT_EXPECTED(link({A}, Sm80, options()),
                       FailedWithMessageArray(::testing::SizeIs(21)));
  lto::LinkOptions All = options();
  All.ErrorLimit = 0;
  EXPECT_THAT_EXPECTED(link({A}, Sm80, All),
                       FailedWithMessageArray(::testing::SizeIs(25)));
}

TEST_F(LTOTest, CallToAVariable) {
  // a.bc calls what b.bc defines as a variable.
  std::string A = writeIR("a.bc", "declare float @scale(float)\n"
                                  "define ptx_kernel void @k(ptr %p) {\n"
                                  "  %v = call float @scale(float 1.0)\n"
                                  "  store float %v, ptr %p\n"
                                  "  ret void\n"
                                  "}\n");
  std::string B = writeIR("b.bc", "@scale = addrspace(1) global float 2.0\n");
  EXPECT_THAT_EXPECTED(
      link({A, B}, Sm80, options()),
      FailedWithMessage("device symbol scale is a variable, used as a device "
                        "function\n>>> defined as a variable in " +
                        B + "\n>>> used as a device function by " + A));
}

TEST_F(LTOTest, VariableThatIsAFunction) {
  std::string A = writeIR("a.bc", "@table = external addrspace(1) global i32\n"
                                  "define ptx_kernel void @k(ptr %p) {\n"
                                  "  %v = load i32, ptr addrspace(1) @table\n"
                                  "  store i32 %v, ptr %p\n"
                                  "  ret void\n"
                                  "}\n");
  std::string B = writeIR("b.bc", "define i32 @table() {\n"
                                  "  ret i32 0\n"
                                  "}\n");
  EXPECT_THAT_EXPECTED(
      link({A, B}, Sm80, options()),
      FailedWithMessage(HasSubstr("device symbol table is a device function, "
                                  "used as a variable\n>>> defined as a "
                                  "device function in " +
                                  B)));
}

TEST_F(LTOTest, KernelCalledAsADeviceFunction) {
  // The caller would compile to a bare `exit;`.
  std::string A = writeIR("a.bc", "declare void @child(ptr)\n"
                                  "define ptx_kernel void @parent(ptr %p) {\n"
                                  "  call void @child(ptr %p)\n"
                                  "  ret void\n"
                                  "}\n");
  std::string B = writeIR("b.bc", "define ptx_kernel void @child(ptr %p) {\n"
                                  "  store i32 1, ptr %p\n"
                                  "  ret void\n"
                                  "}\n");
  EXPECT_THAT_EXPECTED(
      link({A, B}, Sm80, options()),
      FailedWithMessage(AllOf(
          HasSubstr("device symbol child is a kernel, used as a device "
                    "function\n>>> defined as a kernel in " +
                    B + "\n>>> used as a device function by " + A),
          HasSubstr("a kernel can only be launched"))));
}

TEST_F(LTOTest, KernelDeclaredAsAKernelLinks) {
  std::string A = writeIR("a.bc", "declare ptx_kernel void @child(ptr)\n"
                                  "@keep = addrspace(1) externally_initialized "
                                  "global ptr @child\n");
  std::string B = writeIR("b.bc", "define ptx_kernel void @child(ptr %p) {\n"
                                  "  store i32 1, ptr %p\n"
                                  "  ret void\n"
                                  "}\n");
  EXPECT_THAT_EXPECTED(link({A, B}, Sm80, options()), Succeeded());
}

TEST_F(LTOTest, KernelDeclaredAsAFunctionButNotCalledLinks) {
  // A host file's device image: clang declares the kernel its host code
  // launches as a plain function, only for __clang_gpu_used_external.
  std::string A = writeIR(
      "a.bc", "declare void @child(ptr)\n"
              "@__clang_gpu_used_external = internal global [1 x ptr] "
              "[ptr @child]\n"
              "@llvm.compiler.used = appending global [1 x ptr] "
              "[ptr @__clang_gpu_used_external], section \"llvm.metadata\"\n");
  std::string B = writeIR("b.bc", "define ptx_kernel void @child(ptr %p) {\n"
                                  "  store i32 1, ptr %p\n"
                                  "  ret void\n"
                                  "}\n");
  EXPECT_THAT_EXPECTED(link({A, B}, Sm80, options()), Succeeded());
}

//===----------------------------------------------------------------------===//
// Signature checks (docs/abi.md)
//===----------------------------------------------------------------------===//

namespace {
const char *RustIdent =
    "!llvm.ident = !{!0}\n!0 = !{!\"rustc version 1.95.0 (59807616e 2026-04-14)\"}\n";
const char *ClangIdent =
    "!llvm.ident = !{!0}\n!0 = !{!\"Debian clang version 22.1.8\"}\n";

/// a.bc calls `float f(<Param>)`, which b.bc defines with \p DefParam.
std::string callerOf(StringRef Decl, StringRef Call) {
  return (Decl + "\ndefine ptx_kernel void @k(ptr %p) {\n" + Call +
          "  ret void\n}\n")
      .str();
}
} // namespace

TEST_F(LTOTest, AbiMismatchNamesBothSignatures) {
  // Without a producer, LLVM's words.
  std::string A = writeIR(
      "a.bc", callerOf("declare float @f(float)",
                       "  %v = call float @f(float 1.0)\n  store float %v, ptr %p\n"));
  std::string B = writeIR("b.bc", "define float @f(double %x) {\n"
                                  "  %r = fptrunc double %x to float\n"
                                  "  ret float %r\n}\n");
  EXPECT_THAT_EXPECTED(
      link({A, B}, Sm80, options()),
      FailedWithMessage(
          "ABI mismatch for f: parameter 1 is float in the declaration and "
          "double in the definition\n>>> declared as float f(float) by " +
          A + "\n>>> defined as float f(double) in " + B +
          "\n>>> to link anyway: --allow-abi-mismatch=f (fatlink cc, llbc: "
          "--fatlink-allow-abi-mismatch=f)"));
}

TEST_F(LTOTest, AbiMismatchInEachLanguagesWords) {
  std::string A = writeIR(
      "a.bc", callerOf("declare float @f(float)",
                       "  %v = call float @f(float 1.0)\n  store float %v, ptr %p\n") +
                  RustIdent);
  std::string B = writeIR("b.bc", std::string("define float @f(double %x) {\n"
                                              "  %r = fptrunc double %x to float\n"
                                              "  ret float %r\n}\n") +
                                      ClangIdent);
  EXPECT_THAT_EXPECTED(
      link({A, B}, Sm80, options()),
      FailedWithMessage(HasSubstr(
          "parameter 1 is f32 in the declaration and double in the "
          "definition\n>>> declared as fn f(f32) -> f32 by " +
          A + " (Rust)\n>>> defined as float f(double) in " + B +
          " (CUDA C++)")));
}

TEST_F(LTOTest, AbiMismatchEveryKind) {
  // Count, return type, variadic, pointer or value, integer width, a
  // variable's type: one error each, all in one run.
  std::string A = writeIR(
      "a.bc",
      "declare float @count(float, float)\n"
      "declare double @ret(float)\n"
      "declare i32 @var(i32, ...)\n"
      "declare float @ptr(ptr)\n"
      "declare i32 @wide(i64)\n"
      "@g = external addrspace(1) global double\n"
      "define ptx_kernel void @k(ptr %p) {\n"
      "  %a = call float @count(float 1.0, float 2.0)\n"
      "  %b = call double @ret(float 1.0)\n"
      "  %c = call i32 (i32, ...) @var(i32 1, i32 2)\n"
      "  %d = call float @ptr(ptr %p)\n"
      "  %e = call i32 @wide(i64 1)\n"
      "  %f = load double, ptr addrspace(1) @g\n"
      "  store float %a, ptr %p\n  store double %b, ptr %p\n"
      "  store i32 %c, ptr %p\n  store float %d, ptr %p\n"
      "  store i32 %e, ptr %p\n  store double %f, ptr %p\n"
      "  ret void\n}\n");
  std::string B = writeIR("b.bc", "define float @count(float %x) { ret float %x }\n"
                                  "define float @ret(float %x) { ret float %x }\n"
                                  "define i32 @var(i32 %x) { ret i32 %x }\n"
                                  "define float @ptr(float %x) { ret float %x }\n"
                                  "define i32 @wide(i32 %x) { ret i32 %x }\n"
                                  "@g = addrspace(1) global float 1.0\n");
  Expected<lto::LinkedProgram> P = link({A, B}, Sm80, options());
  ASSERT_FALSE(bool(P));
  std::string Msg = toString(P.takeError());
  EXPECT_THAT(Msg, HasSubstr("ABI mismatch for count: it takes 2 parameters "
                             "in the declaration and 1 in the definition"));
  EXPECT_THAT(Msg, HasSubstr("ABI mismatch for ret: the return type is double "
                             "in the declaration and float in the definition"));
  EXPECT_THAT(Msg, HasSubstr("ABI mismatch for var: it is variadic in the "
                             "declaration, not in the definition"));
  EXPECT_THAT(Msg, HasSubstr("ABI mismatch for ptr: parameter 1 is ptr in the "
                             "declaration and float in the definition"));
  EXPECT_THAT(Msg, HasSubstr("ABI mismatch for wide: parameter 1 is i64 in "
                             "the declaration and i32 in the definition"));
  EXPECT_THAT(Msg, HasSubstr("ABI mismatch for g: the type is double in the "
                             "declaration and float in the definition"));
}

TEST_F(LTOTest, AbiMismatchAllowed) {
  std::string A = writeIR(
      "a.bc", callerOf("declare float @f(float)",
                       "  %v = call float @f(float 1.0)\n  store float %v, ptr %p\n"));
  std::string B = writeIR("b.bc", "define float @f(double %x) {\n"
                                  "  %r = fptrunc double %x to float\n"
                                  "  ret float %r\n}\n");
  lto::LinkOptions Opts = options();
  Opts.AllowAbiMismatch = {"f"};
  EXPECT_THAT_EXPECTED(link({A, B}, Sm80, Opts), Succeeded());
}

TEST_F(LTOTest, AggregateByValueMatchesAnyTypeOfItsSize) {
  // clang passes a 12-byte struct as a byval pointer, rustc may pass it as
  // [3 x i32]: one ABI. A 16-byte array is not it.
  std::string A = writeIR(
      "a.bc", "%s = type { float, float, i32 }\n" +
                  callerOf("declare void @f(ptr byval(%s) align 4)\n"
                           "declare void @g(ptr byval(%s) align 4)",
                           "  call void @f(ptr byval(%s) align 4 %p)\n"
                           "  call void @g(ptr byval(%s) align 4 %p)\n"));
  std::string B = writeIR("b.bc", "define void @f([3 x i32] %x) { ret void }\n"
                                  "define void @g([4 x i32] %x) { ret void }\n");
  EXPECT_THAT_EXPECTED(
      link({A, B}, Sm80, options()),
      FailedWithMessage(HasSubstr(
          "ABI mismatch for g: parameter 1 is 12-byte struct in the "
          "declaration and 16-byte struct in the definition\n")));
}

TEST_F(LTOTest, SameIRTypesLinkWhateverTheLanguages) {
  // `u32` in Rust against `int` in CUDA C++: the IR keeps no sign, and
  // neither side has source types, so nothing is said.
  std::string A = writeIR(
      "a.bc", callerOf("declare i32 @f(i32)",
                       "  %v = call i32 @f(i32 1)\n  store i32 %v, ptr %p\n") +
                  RustIdent);
  std::string B = writeIR("b.bc", std::string("define i32 @f(i32 %x) {\n"
                                              "  ret i32 %x\n}\n") +
                                      ClangIdent);
  EXPECT_THAT_EXPECTED(link({A, B}, Sm80, options()), Succeeded());
}

TEST_F(LTOTest, KernelNameThatIsNotAPTXIdentifier) {
  // rustc's #[export_name = "scale-by-two"]: LLVM's NVPTX printer aborts on
  // it; fatlink names it and its input.
  std::string A = writeIR("a.bc", "define ptx_kernel void @\"scale-by-two\"(ptr %p) {\n"
                                  "  store i32 2, ptr %p\n"
                                  "  ret void\n"
                                  "}\n"
                                  "define ptx_kernel void @\"has space\"(ptr %p) {\n"
                                  "  store i32 3, ptr %p\n"
                                  "  ret void\n"
                                  "}\n"
                                  "define internal void @\"local.name-ok\"() {\n"
                                  "  ret void\n"
                                  "}\n");
  EXPECT_THAT_EXPECTED(
      link({A}, Sm80, options()),
      // In a partition-first link each partition reports its own, in partition
      // order.
      FailedWithMessageArray(UnorderedElementsAre(
          AllOf(HasSubstr("kernel 'scale-by-two' is not a valid PTX name"),
                HasSubstr(">>> defined in " + A)),
          HasSubstr("kernel 'has space' is not a valid PTX name"))));
}

TEST_F(LTOTest, UndefinedSymbolOnlyInDeadCode) {
  // @unused is not reachable from a kernel: it is removed before undefined
  // symbols are checked.
  std::string A = writeIR("a.bc", "declare void @missing_fn()\n"
                                  "define void @unused() {\n"
                                  "  call void @missing_fn()\n"
                                  "  ret void\n"
                                  "}\n"
                                  "define ptx_kernel void @k() { ret void }\n");
  EXPECT_THAT_EXPECTED(link({A}, Sm80, options()), Succeeded());
}

TEST_F(LTOTest, CompiledForNewerArchThanTarget) {
  std::string A =
      writeIR("a.bc", "define ptx_kernel void @k() #0 { ret void }\n"
                      "attributes #0 = { \"target-cpu\"=\"sm_90\" "
                      "}\n");
  EXPECT_THAT_EXPECTED(
      link({A}, Sm80, options()),
      FailedWithMessage(
          A + ": compiled for sm_90, which is newer than target sm_80: "
              "compile it for the oldest target (rustc -C target-cpu=sm_80, "
              "clang --offload-arch=sm_80) or drop sm_80 from the targets"));
  EXPECT_THAT_EXPECTED(link({A}, {smTarget(90, 78)}, options()), Succeeded());
}

TEST_F(LTOTest, NothingToLink) {
  lto::InputSet Empty;
  EXPECT_THAT_EXPECTED(lto::linkAndOptimize(Empty, Sm80, options()),
                       FailedWithMessage("no device code in the inputs"));
  std::string A = writeIR("a.bc", "define ptx_kernel void @k() { ret void }\n");
  Expected<lto::InputSet> In = lto::readInputs({A});
  ASSERT_THAT_EXPECTED(In, Succeeded());
  EXPECT_THAT_EXPECTED(lto::linkAndOptimize(*In, {}, options()),
                       FailedWithMessage("no targets: pass --arch"));
}

//===----------------------------------------------------------------------===//
// The program's interface and internalization
//===----------------------------------------------------------------------===//

TEST_F(LTOTest, InternalizesAllButTheInterface) {
  std::string A = writeIR(
      "a.bc", "@dev_var = addrspace(1) externally_initialized global i32 0, "
              "align 4\n"
              "@plain_var = addrspace(1) global i32 0, align 4\n"
              "define void @unused_helper() { ret void }\n"
              "define void @exported_fn() { ret void }\n"
              "define ptx_kernel void @k() { ret void }\n");
  lto::LinkOptions Opts = options();
  Opts.ExportSymbols = {"exported_fn"};
  Expected<lto::LinkedProgram> P = link({A}, Sm80, Opts);
  ASSERT_THAT_EXPECTED(P, Succeeded());
  EXPECT_THAT(P->Globals, ElementsAre("dev_var"));

  Expected<std::string> PTX = codegen::generatePTX(*P, Sm80, 0, 3);
  ASSERT_THAT_EXPECTED(PTX, Succeeded());
  EXPECT_THAT(*PTX, HasSubstr(".entry k("));
  EXPECT_THAT(*PTX, HasSubstr("exported_fn"));
  EXPECT_THAT(*PTX, HasSubstr("dev_var"));
  EXPECT_THAT(*PTX, Not(HasSubstr("unused_helper")));
  EXPECT_THAT(*PTX, Not(HasSubstr("plain_var")));
}

TEST_F(LTOTest, KernelsSortedWithParameterSizes) {
  std::string A = writeIR(
      "a.bc", "%struct.S = type { i32, i32, i32 }\n"
              "define ptx_kernel void @zeta(ptr %p, i32 %n, float %f, i64 %x) "
              "{ ret void }\n"
              "define ptx_kernel void @alpha(ptr byval(%struct.S) align 4 %s) "
              "{ ret void }\n");
  std::string B = writeIR("b.bc", "define ptx_kernel void @mid() { ret void }\n"
                                  "define void @not_a_kernel() { ret void }\n");
  Expected<lto::LinkedProgram> P = link({A, B}, Sm80, options());
  ASSERT_THAT_EXPECTED(P, Succeeded());
  ASSERT_EQ(P->Kernels.size(), 3u);
  EXPECT_EQ(P->Kernels[0].Name, "alpha");
  EXPECT_THAT(P->Kernels[0].ParamSizes, ElementsAre(12u));
  EXPECT_EQ(P->Kernels[1].Name, "mid");
  EXPECT_TRUE(P->Kernels[1].ParamSizes.empty());
  EXPECT_EQ(P->Kernels[2].Name, "zeta");
  EXPECT_THAT(P->Kernels[2].ParamSizes, ElementsAre(8u, 4u, 4u, 8u));
  EXPECT_TRUE(P->Globals.empty());
  EXPECT_TRUE(P->LibdeviceFunctions.empty());
}

// A Rust kernel's signature record (docs/abi.md "The kernel signature
// record"): types with commas and arrows of their own, pointers to
// pointers, bool and isize; the record leaves the module, other module asm
// stays.
TEST_F(LTOTest, KernelRecordRefinesManifest) {
  std::string A = writeIR(
      "a.bc",
      "module asm \"// keep me\"\n"
      "module asm \"// fatlink-kernel-signature 1 k(p: Pair<u32, f32>, f: "
      "fn(u32) -> u32, x: *mut *const u8, b: bool, _: isize)\"\n"
      "define ptx_kernel void @k({ i32, float } %p, ptr %f, ptr %x, "
      "i1 zeroext %b, i64 %i) { ret void }\n");
  Expected<lto::LinkedProgram> P = link({A}, Sm80, options());
  ASSERT_THAT_EXPECTED(P, Succeeded());
  ASSERT_EQ(P->Kernels.size(), 1u);
  const packager::KernelManifest &M = P->Kernels[0].Manifest;
  EXPECT_EQ(M.Language, FATLINK_LANGUAGE_RUST);
  ASSERT_EQ(M.Params.size(), 5u);
  EXPECT_EQ(M.Params[0].Kind, FATLINK_PARAM_AGGREGATE);
  EXPECT_EQ(M.Params[0].Type, "Pair<u32, f32>");
  EXPECT_EQ(M.Params[0].Name, "p");
  EXPECT_EQ(M.Params[1].Kind, FATLINK_PARAM_POINTER);
  EXPECT_EQ(M.Params[1].Type, "fn(u32) -> u32");
  EXPECT_EQ(M.Params[1].Flags & FATLINK_PARAM_CONST, 0);
  EXPECT_EQ(M.Params[2].Type, "*mut *const u8");
  EXPECT_EQ(M.Params[2].ElemKind, FATLINK_PARAM_UNKNOWN);
  EXPECT_EQ(M.Params[2].Flags & FATLINK_PARAM_CONST, 0);
  EXPECT_EQ(M.Params[3].Kind, FATLINK_PARAM_INT);
  EXPECT_EQ(M.Params[3].Type, "bool");
  EXPECT_EQ(M.Params[4].Kind, FATLINK_PARAM_SINT);
  EXPECT_EQ(M.Params[4].Type, "isize");
  EXPECT_EQ(M.Params[4].Name, "_");

  ASSERT_EQ(P->Modules.size(), 1u);
  LLVMContext Ctx;
  Expected<std::unique_ptr<Module>> Out =
      parseBitcodeFile(MemoryBufferRef(P->Modules[0].Bitcode, "out"), Ctx);
  ASSERT_THAT_EXPECTED(Out, Succeeded());
  EXPECT_EQ((*Out)->getModuleInlineAsm(), "// keep me\n");
}

TEST_F(LTOTest, KernelRecordMalformed) {
  std::string A =
      writeIR("a.bc", "module asm \"// fatlink-kernel-signature 1 k\"\n"
                      "define ptx_kernel void @k() { ret void }\n");
  EXPECT_THAT_EXPECTED(
      link({A}, Sm80, options()),
      FailedWithMessage(A + ": no 'name(parameters)' in kernel signature "
                            "record '// fatlink-kernel-signature 1 k'"));
}

//===----------------------------------------------------------------------===//
// __nvvm_reflect
//===----------------------------------------------------------------------===//

namespace {

/// A kernel that stores `__nvvm_reflect("__CUDA_ARCH") >= Threshold`, the
/// key in the constant address space as clang emits it.
std::string archCheck(unsigned Threshold) {
  return (Twine("@arch = private unnamed_addr addrspace(4) constant "
                "[12 x i8] c\"__CUDA_ARCH\\00\"\n"
                "declare i32 @__nvvm_reflect(ptr)\n"
                "define ptx_kernel void @k(ptr %out) {\n"
                "  %r = call i32 @__nvvm_reflect(ptr addrspacecast "
                "(ptr addrspace(4) @arch to ptr))\n"
                "  %c = icmp sge i32 %r, ") +
          Twine(Threshold) +
          "\n"
          "  %v = zext i1 %c to i32\n"
          "  store i32 %v, ptr %out\n"
          "  ret void\n"
          "}\n")
      .str();
}

/// A kernel that stores `__nvvm_reflect(Key)`.
std::string reflectValue(StringRef Key) {
  return (Twine("@key = private unnamed_addr constant [") +
          Twine(Key.size() + 1) + " x i8] c\"" + Key +
          "\\00\"\n"
          "declare i32 @__nvvm_reflect(ptr)\n"
          "define ptx_kernel void @k(ptr %out) {\n"
          "  %r = call i32 @__nvvm_reflect(ptr @key)\n"
          "  store i32 %r, ptr %out\n"
          "  ret void\n"
          "}\n")
      .str();
}

} // namespace

TEST_F(LTOTest, CudaArchSplitsTargetsThatSeeDifferentAnswers) {
  std::string A = writeIR("a.bc", archCheck(800));
  std::vector<lto::Target> Targets = {smTarget(75, 63), smTarget(90, 78)};
  Expected<lto::LinkedProgram> P = link({A}, Targets, options());
  ASSERT_THAT_EXPECTED(P, Succeeded());
  ASSERT_EQ(P->Modules.size(), 2u);
  EXPECT_THAT(P->Modules[0].TargetIndices, ElementsAre(0u));
  EXPECT_THAT(P->Modules[1].TargetIndices, ElementsAre(1u));
  EXPECT_EQ(storedConstant(P->Modules[0], "k"), 0); // 750 >= 800
  EXPECT_EQ(storedConstant(P->Modules[1], "k"), 1); // 900 >= 800
}

TEST_F(LTOTest, CudaArchSharesModulesBetweenTargetsWithSameAnswers) {
  std::string A = writeIR("a.bc", archCheck(800));
  std::vector<lto::Target> Targets = {smTarget(75, 63), smTarget(80, 70),
                                      smTarget(90, 78)};
  Expected<lto::LinkedProgram> P = link({A}, Targets, options());
  ASSERT_THAT_EXPECTED(P, Succeeded());
  ASSERT_EQ(P->Modules.size(), 2u);
  EXPECT_THAT(P->Modules[0].TargetIndices, ElementsAre(0u));
  EXPECT_THAT(P->Modules[1].TargetIndices, ElementsAre(1u, 2u));
  EXPECT_EQ(storedConstant(P->Modules[1], "k"), 1);

  // The shared module is still compiled for each of its targets.
  Expected<std::string> PTX = codegen::generatePTX(*P, Targets, 2, 3);
  ASSERT_THAT_EXPECTED(PTX, Succeeded());
  EXPECT_THAT(*PTX, HasSubstr(".version 7.8"));
  EXPECT_THAT(*PTX, HasSubstr(".target sm_90"));
}

TEST_F(LTOTest, CudaArchOneModuleWhenEveryTargetAgrees) {
  std::string A = writeIR("a.bc", archCheck(300));
  std::vector<lto::Target> Targets = {smTarget(75, 63), smTarget(90, 78)};
  Expected<lto::LinkedProgram> P = link({A}, Targets, options());
  ASSERT_THAT_EXPECTED(P, Succeeded());
  ASSERT_EQ(P->Modules.size(), 1u);
  EXPECT_THAT(P->Modules[0].TargetIndices, ElementsAre(0u, 1u));
  EXPECT_EQ(storedConstant(P->Modules[0], "k"), 1);
}

TEST_F(LTOTest, FlushDenormalsFoldedFromOptions) {
  std::string A = writeIR("a.bc", reflectValue("__CUDA_FTZ"));
  lto::LinkOptions Opts = options();
  for (bool Ftz : {false, true}) {
    Opts.FlushDenormals = Ftz;
    Expected<lto::LinkedProgram> P = link({A}, Sm80, Opts);
    ASSERT_THAT_EXPECTED(P, Succeeded());
    EXPECT_EQ(storedConstant(P->Modules[0], "k"), Ftz ? 1 : 0);
  }
}

TEST_F(LTOTest, PrecisionKeysFoldedFromOptions) {
  std::string Sqrt = writeIR("sqrt.bc", reflectValue("__CUDA_PREC_SQRT"));
  std::string Div = writeIR("div.bc", reflectValue("__CUDA_PREC_DIV"));
  lto::LinkOptions Opts = options();
  for (bool Precise : {true, false}) {
    Opts.PreciseSqrt = Opts.PreciseDiv = Precise;
    for (const std::string &Path : {Sqrt, Div}) {
      Expected<lto::LinkedProgram> P = link({Path}, Sm80, Opts);
      ASSERT_THAT_EXPECTED(P, Succeeded());
      EXPECT_EQ(storedConstant(P->Modules[0], "k"), Precise ? 1 : 0) << Path;
    }
  }
}

TEST_F(LTOTest, UnknownReflectKeyIsZero) {
  std::string A = writeIR("a.bc", reflectValue("__FATLINK_NO_SUCH_KEY"));
  Expected<lto::LinkedProgram> P = link({A}, Sm80, options());
  ASSERT_THAT_EXPECTED(P, Succeeded());
  EXPECT_EQ(storedConstant(P->Modules[0], "k"), 0);
}

//===----------------------------------------------------------------------===//
// libdevice
//===----------------------------------------------------------------------===//

namespace {

constexpr const char *SqrtKernel = "declare float @__nv_sqrtf(float)\n"
                                   "define ptx_kernel void @k(ptr %p) {\n"
                                   "  %x = load float, ptr %p\n"
                                   "  %y = call float @__nv_sqrtf(float %x)\n"
                                   "  store float %y, ptr %p\n"
                                   "  ret void\n"
                                   "}\n";

} // namespace

TEST_F(LTOTest, LibdeviceLinkedLazily) {
  std::string A = writeIR("a.bc", SqrtKernel);
  Expected<lto::LinkedProgram> P = link({A}, Sm80, options());
  ASSERT_THAT_EXPECTED(P, Succeeded());
  EXPECT_THAT(P->LibdeviceFunctions, ElementsAre("__nv_sqrtf"));
  Expected<std::string> PTX = codegen::generatePTX(*P, Sm80, 0, 3);
  ASSERT_THAT_EXPECTED(PTX, Succeeded());
  EXPECT_THAT(*PTX, Not(HasSubstr("__nv_")));
  EXPECT_THAT(*PTX, HasSubstr("sqrt.rn.f32"));
}

TEST_F(LTOTest, LibdeviceSeesPrecisionOptions) {
  std::string A = writeIR("a.bc", SqrtKernel);
  lto::LinkOptions Opts = options();
  Opts.PreciseSqrt = false;
  Expected<lto::LinkedProgram> P = link({A}, Sm80, Opts);
  ASSERT_THAT_EXPECTED(P, Succeeded());
  Expected<std::string> PTX = codegen::generatePTX(*P, Sm80, 0, 3);
  ASSERT_THAT_EXPECTED(PTX, Succeeded());
  EXPECT_THAT(*PTX, HasSubstr("sqrt.approx"));
  EXPECT_THAT(*PTX, Not(HasSubstr("sqrt.rn.f32")));
}

TEST_F(LTOTest, LibdeviceMissing) {
  std::string A = writeIR("a.bc", SqrtKernel);
  lto::LinkOptions Opts = options();
  Opts.LibdevicePath = "";
  EXPECT_THAT_EXPECTED(
      link({A}, Sm80, Opts),
      FailedWithMessage(HasSubstr("the program calls __nv_sqrtf, a libdevice "
                                  "function, but no libdevice was given")));
  Opts.LibdevicePath = Dir.file("no-libdevice.bc");
  EXPECT_THAT_EXPECTED(link({A}, Sm80, Opts),
                       FailedWithMessage(HasSubstr("cannot open libdevice " +
                                                   Opts.LibdevicePath + ": ")));
}

//===----------------------------------------------------------------------===//
// The device runtime (dynamic parallelism)
//===----------------------------------------------------------------------===//

std::string deviceRuntimePath() {
  const char *Cuda = std::getenv("CUDA_PATH");
  return std::string(Cuda && *Cuda ? Cuda : "/usr/local/cuda") +
         "/lib64/libcudadevrt.a";
}

// What clang emits for cudaGetLastError() in device code.
constexpr const char *CallsRuntime =
    "declare i32 @__cudaCDP2GetLastError()\n"
    "define ptx_kernel void @k(ptr %p) {\n"
    "  %e = call i32 @__cudaCDP2GetLastError()\n"
    "  store i32 %e, ptr %p\n"
    "  ret void\n"
    "}\n";

TEST_F(LTOTest, DeviceRuntimeTakenFromToolkit) {
  std::string A = writeIR("a.bc", CallsRuntime);
  lto::LinkOptions Opts = options();
  Opts.DeviceRuntimePath = deviceRuntimePath();
  Expected<lto::LinkedProgram> P = link({A}, Sm80, Opts);
  ASSERT_THAT_EXPECTED(P, Succeeded());
  EXPECT_THAT(P->LibrarySymbols, ElementsAre("__cudaCDP2GetLastError"));
  ASSERT_EQ(P->Libraries.size(), 1u);
  EXPECT_EQ(P->Libraries[0].Path, Opts.DeviceRuntimePath);
  EXPECT_THAT(P->Libraries[0].Arches, Contains("sm_80"));
  EXPECT_THAT(P->Libraries[0].Defined, Contains("__cudaCDP2LaunchDevice"));
}

TEST_F(LTOTest, DeviceRuntimeReadOnlyWhenReferenced) {
  // Not an archive: reading it would fail the link.
  lto::LinkOptions Opts = options();
  Opts.DeviceRuntimePath = Dir.write("libcudadevrt.a", "not an archive");
  std::string Plain = writeIR("plain.bc", "define ptx_kernel void @k() {\n"
                                          "  ret void\n"
                                          "}\n");
  Expected<lto::LinkedProgram> P = link({Plain}, Sm80, Opts);
  ASSERT_THAT_EXPECTED(P, Succeeded());
  EXPECT_TRUE(P->Libraries.empty());
  std::string A = writeIR("a.bc", CallsRuntime);
  EXPECT_THAT_EXPECTED(
      link({A}, Sm80, Opts),
      FailedWithMessage(HasSubstr(Opts.DeviceRuntimePath + ": ")));
}

TEST_F(LTOTest, DeviceRuntimeMissing) {
  std::string A = writeIR("a.bc", CallsRuntime);
  lto::LinkOptions Opts = options();
  Opts.DeviceRuntimePath = Dir.file("no-cuda/lib64/libcudadevrt.a");
  EXPECT_THAT_EXPECTED(
      link({A}, Sm80, Opts),
      FailedWithMessage(
          "undefined device symbol: __cudaCDP2GetLastError\n"
          ">>> referenced by " +
          A +
          "\n>>> (a symbol of CUDA's device runtime, which kernels that "
          "launch kernels need: " +
          Opts.DeviceRuntimePath +
          " does not exist; pass --cuda-path=<a CUDA toolkit with "
          "lib64/libcudadevrt.a> or name libcudadevrt.a as an input)"));
}

TEST_F(LTOTest, NotInLibdevice) {
  std::string A = writeIR("a.bc", "declare float @__nv_bogus(float)\n"
                                  "define ptx_kernel void @k(ptr %p) {\n"
                                  "  %x = load float, ptr %p\n"
                                  "  %y = call float @__nv_bogus(float %x)\n"
                                  "  store float %y, ptr %p\n"
                                  "  ret void\n"
                                  "}\n");
  EXPECT_THAT_EXPECTED(
      link({A}, Sm80, options()),
      FailedWithMessage("undefined device symbol: __nv_bogus\n"
                        ">>> referenced by " +
                        A +
                        "\n>>> (not in libdevice either: check the function "
                        "name)"));
}

//===----------------------------------------------------------------------===//
// Code generation
//===----------------------------------------------------------------------===//

TEST_F(LTOTest, GeneratePTX) {
  std::string A = writeIR("a.bc", "define ptx_kernel void @k(ptr %p) {\n"
                                  "  store i32 42, ptr %p\n"
                                  "  ret void\n"
                                  "}\n");
  for (unsigned OptLevel : {0u, 3u}) {
    lto::LinkOptions Opts = options();
    Opts.OptLevel = OptLevel;
    Expected<lto::LinkedProgram> P = link({A}, Sm80, Opts);
    ASSERT_THAT_EXPECTED(P, Succeeded());
    Expected<std::string> PTX = codegen::generatePTX(*P, Sm80, 0, OptLevel);
    ASSERT_THAT_EXPECTED(PTX, Succeeded());
    EXPECT_THAT(*PTX, HasSubstr(".version 7.0\n"));
    EXPECT_THAT(*PTX, HasSubstr(".target sm_80\n"));
    EXPECT_THAT(*PTX, HasSubstr(".address_size 64"));
    EXPECT_THAT(*PTX, HasSubstr(".visible .entry k("));
    EXPECT_THAT(*PTX, HasSubstr("42"));
  }
}

TEST_F(LTOTest, SameInputsSameBytes) {
  std::string A = writeIR("a.bc", archCheck(800));
  std::vector<lto::Target> Targets = {smTarget(75, 63), smTarget(90, 78)};
  Expected<lto::LinkedProgram> P1 = link({A}, Targets, options());
  Expected<lto::LinkedProgram> P2 = link({A}, Targets, options());
  ASSERT_THAT_EXPECTED(P1, Succeeded());
  ASSERT_THAT_EXPECTED(P2, Succeeded());
  ASSERT_EQ(P1->Modules.size(), P2->Modules.size());
  for (size_t I = 0; I < P1->Modules.size(); ++I) {
    EXPECT_EQ(P1->Modules[I].Bitcode, P2->Modules[I].Bitcode);
    Expected<std::string> X = codegen::generatePTX(*P1, Targets, I, 3);
    Expected<std::string> Y = codegen::generatePTX(*P2, Targets, I, 3);
    ASSERT_THAT_EXPECTED(X, Succeeded());
    ASSERT_THAT_EXPECTED(Y, Succeeded());
    EXPECT_EQ(*X, *Y);
  }
}

//===----------------------------------------------------------------------===//
// Splitting an optimized module for code generation
//===----------------------------------------------------------------------===//

namespace {

/// A program of five kernels: k1 and k2 share the device global @g, k3 and
/// k4 call the same (not inlined) helper @h, k5 stands alone. \p K5Body
/// varies k5's code.
std::string splitProgram(StringRef K5Body = "store i32 5, ptr %p") {
  return (Twine(NVPTXHeader) +
          "@g = internal addrspace(1) global i32 0\n"
          "define ptx_kernel void @k1() {\n"
          "  store i32 1, ptr addrspace(1) @g\n  ret void\n}\n"
          "define ptx_kernel void @k2(ptr %p) {\n"
          "  %v = load i32, ptr addrspace(1) @g\n"
          "  store i32 %v, ptr %p\n  ret void\n}\n"
          "define internal void @h(ptr %p) noinline {\n"
          "  store i32 3, ptr %p\n  ret void\n}\n"
          "define ptx_kernel void @k3(ptr %p) {\n"
          "  call void @h(ptr %p)\n  ret void\n}\n"
          "define ptx_kernel void @k4(ptr %p) {\n"
          "  call void @h(ptr %p)\n  ret void\n}\n"
          "define ptx_kernel void @k5(ptr %p) {\n  " +
          K5Body + "\n  ret void\n}\n")
      .str();
}

/// The names of the functions and variables \p Bitcode defines.
std::vector<std::string> definitions(StringRef Bitcode) {
  LLVMContext Ctx;
  Expected<std::unique_ptr<Module>> M =
      parseBitcodeFile(MemoryBufferRef(Bitcode, "partition"), Ctx);
  EXPECT_THAT_EXPECTED(M, Succeeded());
  std::vector<std::string> Names;
  if (!M)
    return Names;
  for (const GlobalValue &GV : (*M)->global_values())
    if (!GV.isDeclaration())
      Names.push_back(GV.getName().str());
  llvm::sort(Names);
  return Names;
}

} // namespace

TEST(SplitForCodegen, NeverCutsAReference) {
  // Components: {k1, k2, @g}, {k3, k4, @h}, {k5}. A component goes to the
  // partition its name hashes to, so some partition counts put two in one.
  for (unsigned N : {2u, 3u, 4u, 8u, 16u}) {
    SCOPED_TRACE("partitions " + std::to_string(N));
    Expected<std::vector<lto::CodegenPartition>> Parts =
        lto::splitForCodegen(bitcodeOf(splitProgram()), N);
    ASSERT_THAT_EXPECTED(Parts, Succeeded());
    EXPECT_LE(Parts->size(), 3u);
    std::vector<std::string> All;
    for (const lto::CodegenPartition &P : *Parts) {
      std::vector<std::string> Defs = definitions(P.Bitcode);
      EXPECT_FALSE(Defs.empty());
      for (const char *Group : {"g k1 k2", "h k3 k4"}) {
        SmallVector<StringRef> Names;
        StringRef(Group).split(Names, ' ');
        size_t Here = count_if(
            Names, [&](StringRef N) { return is_contained(Defs, N.str()); });
        EXPECT_TRUE(Here == 0 || Here == Names.size()) << Group;
      }
      append_range(All, Defs);
    }
    // Every definition exactly once.
    llvm::sort(All);
    EXPECT_THAT(All, ElementsAre("g", "h", "k1", "k2", "k3", "k4", "k5"));
  }
}

TEST(SplitForCodegen, EachPartitionCompilesAlone) {
  size_t MostParts = 0;
  for (unsigned N : {2u, 3u, 4u, 8u}) {
    SCOPED_TRACE("partitions " + std::to_string(N));
    Expected<std::vector<lto::CodegenPartition>> Parts =
        lto::splitForCodegen(bitcodeOf(splitProgram()), N);
    ASSERT_THAT_EXPECTED(Parts, Succeeded());
    MostParts = std::max(MostParts, Parts->size());
    size_t Kernels = 0;
    for (const lto::CodegenPartition &P : *Parts) {
      Kernels += P.Kernels.size();
      Expected<std::string> PTX =
          codegen::generatePTX(P.Bitcode, smTarget(80, 70), 3);
      ASSERT_THAT_EXPECTED(PTX, Succeeded());
      for (const std::string &K : P.Kernels)
        EXPECT_THAT(*PTX, HasSubstr(".entry " + K + "("));
    }
    EXPECT_EQ(Kernels, 5u);
  }
  EXPECT_GE(MostParts, 2u);
}

TEST(SplitForCodegen, EditingOneComponentLeavesTheOthers) {
  Expected<std::vector<lto::CodegenPartition>> Before =
      lto::splitForCodegen(bitcodeOf(splitProgram()), 3);
  Expected<std::vector<lto::CodegenPartition>> After = lto::splitForCodegen(
      bitcodeOf(splitProgram("store i32 55, ptr %p")), 3);
  ASSERT_THAT_EXPECTED(Before, Succeeded());
  ASSERT_THAT_EXPECTED(After, Succeeded());
  ASSERT_EQ(Before->size(), After->size());
  size_t Same = 0;
  for (size_t I = 0; I < Before->size(); ++I) {
    EXPECT_EQ((*Before)[I].Kernels, (*After)[I].Kernels);
    Same += (*Before)[I].Bitcode == (*After)[I].Bitcode;
  }
  // Only k5's partition changed (unless another component shares it).
  EXPECT_GE(Same, 1u);
  EXPECT_LT(Same, Before->size());
}

TEST(SplitForCodegen, OnePartitionIsTheModule) {
  std::string BC = bitcodeOf(splitProgram());
  Expected<std::vector<lto::CodegenPartition>> Parts =
      lto::splitForCodegen(BC, 1);
  ASSERT_THAT_EXPECTED(Parts, Succeeded());
  ASSERT_EQ(Parts->size(), 1u);
  EXPECT_EQ((*Parts)[0].Bitcode, BC);
  EXPECT_THAT((*Parts)[0].Kernels, ElementsAre("k1", "k2", "k3", "k4", "k5"));
}

/// The tag of a splitForBuild piece, parsed from its bitcode.
static std::optional<lto::PartitionTag> tagOf(StringRef Bitcode) {
  LLVMContext Ctx;
  Expected<std::unique_ptr<Module>> M =
      parseBitcodeFile(MemoryBufferRef(Bitcode, "piece"), Ctx);
  if (!M) {
    ADD_FAILURE() << toString(M.takeError());
    return std::nullopt;
  }
  return lto::readPartitionTag(**M);
}

TEST(SplitForBuild, OnePiecePerBucketAsSplitForCodegenCutsThem) {
  std::string BC = bitcodeOf(splitProgram());
  for (unsigned N : {2u, 3u, 4u, 8u}) {
    SCOPED_TRACE("partitions " + std::to_string(N));
    Expected<std::vector<std::string>> Pieces = lto::splitForBuild(BC, N);
    Expected<std::vector<lto::CodegenPartition>> Parts =
        lto::splitForCodegen(BC, N);
    Expected<std::vector<lto::BucketContents>> Buckets =
        lto::bucketContents(BC, N);
    ASSERT_THAT_EXPECTED(Pieces, Succeeded());
    ASSERT_THAT_EXPECTED(Parts, Succeeded());
    ASSERT_THAT_EXPECTED(Buckets, Succeeded());
    ASSERT_EQ(Pieces->size(), N);
    ASSERT_EQ(Buckets->size(), N);
    // The non-empty pieces define what splitForCodegen's partitions do, in
    // order; the empty ones define nothing.
    size_t Next = 0;
    for (unsigned K = 0; K < N; ++K) {
      std::optional<lto::PartitionTag> Tag = tagOf((*Pieces)[K]);
      ASSERT_TRUE(Tag.has_value());
      EXPECT_EQ(Tag->Index, K);
      EXPECT_EQ(Tag->Count, N);
      EXPECT_EQ(Tag->Empty, (*Buckets)[K].Empty);
      std::vector<std::string> Defs = definitions((*Pieces)[K]);
      if (Tag->Empty) {
        EXPECT_TRUE(Defs.empty());
        continue;
      }
      ASSERT_LT(Next, Parts->size());
      if (Parts->size() > 1) {
        EXPECT_FALSE(Tag->Whole);
        EXPECT_EQ(Defs, definitions((*Parts)[Next].Bitcode));
      } else {
        EXPECT_TRUE(Tag->Whole);
      }
      std::vector<std::string> Kernels = (*Parts)[Next].Kernels;
      llvm::sort(Kernels);
      EXPECT_EQ((*Buckets)[K].Kernels, Kernels);
      ++Next;
    }
    EXPECT_EQ(Next, Parts->size());
  }
}

TEST(SplitForBuild, OneBucketIsTheWholeModuleAndPiecesAreNotSplitAgain) {
  std::string BC = bitcodeOf(splitProgram());
  Expected<std::vector<std::string>> Pieces = lto::splitForBuild(BC, 1);
  ASSERT_THAT_EXPECTED(Pieces, Succeeded());
  ASSERT_EQ(Pieces->size(), 1u);
  std::optional<lto::PartitionTag> Tag = tagOf((*Pieces)[0]);
  ASSERT_TRUE(Tag.has_value());
  EXPECT_TRUE(Tag->Whole);
  EXPECT_FALSE(Tag->Empty);
  EXPECT_EQ(definitions((*Pieces)[0]), definitions(BC));
  EXPECT_FALSE(tagOf(BC).has_value());
  EXPECT_THAT_EXPECTED(lto::splitForBuild((*Pieces)[0], 2),
                       FailedWithMessage(HasSubstr("already one partition")));
}

TEST(SplitForBuild, EditingOneComponentLeavesTheOtherPieces) {
  Expected<std::vector<std::string>> Before =
      lto::splitForBuild(bitcodeOf(splitProgram()), 4);
  Expected<std::vector<std::string>> After =
      lto::splitForBuild(bitcodeOf(splitProgram("store i32 55, ptr %p")), 4);
  ASSERT_THAT_EXPECTED(Before, Succeeded());
  ASSERT_THAT_EXPECTED(After, Succeeded());
  size_t Changed = 0;
  for (size_t K = 0; K < 4; ++K)
    Changed += (*Before)[K] != (*After)[K];
  EXPECT_EQ(Changed, 1u);
}

TEST_F(LTOTest, OptimizesInPartitionsAndMemoizesThem) {
  std::string A = Dir.write("p.bc", bitcodeOf(splitProgram()));
  std::map<std::string, std::string> Memo;
  std::mutex MemoMu;
  size_t Hits = 0;
  lto::LinkOptions Opts = options();
  Opts.Partitions = 8;
  Opts.MemoLookup = [&](StringRef Key) -> std::optional<std::string> {
    std::lock_guard<std::mutex> Lock(MemoMu);
    auto It = Memo.find(Key.str());
    if (It == Memo.end())
      return std::nullopt;
    ++Hits;
    return It->second;
  };
  Opts.MemoStore = [&](StringRef Key, StringRef Value) {
    std::lock_guard<std::mutex> Lock(MemoMu);
    Memo[Key.str()] = Value.str();
  };

  Expected<lto::LinkedProgram> P = link({A}, Sm80, Opts);
  ASSERT_THAT_EXPECTED(P, Succeeded());
  ASSERT_EQ(P->Modules.size(), 1u);
  const lto::OptimizedModule &OM = P->Modules[0];
  ASSERT_GE(OM.Parts.size(), 2u);
  std::vector<std::string> Kernels, Globals;
  for (const lto::CodegenPartition &Part : OM.Parts) {
    std::vector<std::string> Defs = definitions(Part.Bitcode);
    // @g lives with both its users; @h is copied wherever it is called.
    if (is_contained(Defs, "k1") || is_contained(Defs, "k2")) {
      EXPECT_THAT(Defs, AllOf(Contains("g"), Contains("k1"), Contains("k2")));
    }
    for (const char *Caller : {"k3", "k4"}) {
      if (is_contained(Defs, Caller)) {
        EXPECT_THAT(Defs, Contains("h"));
      }
    }
    append_range(Kernels, Part.Kernels);
    Globals.push_back(is_contained(Defs, "g") ? "g" : "");
    Expected<std::string> PTX = codegen::generatePTX(Part.Bitcode, Sm80[0], 3);
    ASSERT_THAT_EXPECTED(PTX, Succeeded());
  }
  llvm::sort(Kernels);
  EXPECT_THAT(Kernels, ElementsAre("k1", "k2", "k3", "k4", "k5"));
  EXPECT_EQ(count(Globals, "g"), 1);
  // The partitions joined again: every kernel, one module (for PTX targets).
  std::vector<std::string> Whole = definitions(OM.Bitcode);
  for (const char *K : {"k1", "k2", "k3", "k4", "k5", "g"})
    EXPECT_THAT(Whole, Contains(K));

  // The same link again: every partition's O3 result comes from the memo,
  // and it is the same bytes.
  EXPECT_EQ(Hits, 0u);
  Expected<lto::LinkedProgram> Again = link({A}, Sm80, Opts);
  ASSERT_THAT_EXPECTED(Again, Succeeded());
  EXPECT_EQ(Hits, OM.Parts.size());
  ASSERT_EQ(Again->Modules[0].Parts.size(), OM.Parts.size());
  for (size_t I = 0; I < OM.Parts.size(); ++I)
    EXPECT_EQ(Again->Modules[0].Parts[I].Bitcode, OM.Parts[I].Bitcode);
}

//===----------------------------------------------------------------------===//
// Shared PTX: one arch's code, rewritten for another
//===----------------------------------------------------------------------===//

TEST_F(LTOTest, RetargetPTXRewritesOnlyTheHeader) {
  std::string A = writeIR("a.bc", "define ptx_kernel void @k(ptr %p) {\n"
                                  "  store i32 1, ptr %p\n  ret void\n}\n");
  Expected<lto::LinkedProgram> P = link({A}, Sm80, options());
  ASSERT_THAT_EXPECTED(P, Succeeded());
  lto::Target Sm75 = smTarget(75, 63), Sm90 = smTarget(90, 78);
  lto::Target Sm100 = smTarget(100, 86);
  StringRef Bitcode = P->Modules[0].Bitcode;
  Expected<std::string> Lo = codegen::generatePTX(Bitcode, Sm75, 3);
  Expected<std::string> Mid = codegen::generatePTX(Bitcode, Sm90, 3);
  Expected<std::string> Hi = codegen::generatePTX(Bitcode, Sm100, 3);
  ASSERT_THAT_EXPECTED(Lo, Succeeded());
  ASSERT_THAT_EXPECTED(Mid, Succeeded());
  ASSERT_THAT_EXPECTED(Hi, Succeeded());
  // This code does not depend on the arch: each arch's PTX is the other's
  // with its own .version and .target, byte for byte.
  EXPECT_EQ(codegen::retargetPTX(*Hi, Sm100, Sm75), *Lo);
  EXPECT_EQ(codegen::retargetPTX(*Lo, Sm75, Sm90), *Mid);
  EXPECT_THAT(*Mid, HasSubstr("\n.version 7.8\n.target sm_90\n"));

  // The header must be the one generatePTX writes for From.
  EXPECT_EQ(codegen::retargetPTX(*Lo, Sm90, Sm100), std::nullopt);
  EXPECT_EQ(codegen::retargetPTX(".version 6.3\n.target sm_75\n", Sm75, Sm90),
            std::optional<std::string>(".version 7.8\n.target sm_90\n"));
  EXPECT_EQ(
      codegen::retargetPTX(".version 6.3\n.target sm_75, debug\nx\n", Sm75,
                           Sm90),
      std::optional<std::string>(".version 7.8\n.target sm_90, debug\nx\n"));
  // Code before the header, or a .target naming another processor: refused.
  EXPECT_EQ(codegen::retargetPTX(".entry k()\n.version 6.3\n.target sm_75\n",
                                 Sm75, Sm90),
            std::nullopt);
  EXPECT_EQ(codegen::retargetPTX(".version 6.3\n.target sm_750\n", Sm75, Sm90),
            std::nullopt);
  EXPECT_EQ(codegen::retargetPTX("", Sm75, Sm90), std::nullopt);
}

//===----------------------------------------------------------------------===//
// Links in partitions from the inputs' summaries
//===----------------------------------------------------------------------===//

namespace {

/// A kernel in its own input storing what Callee returns.
std::string kernelCalling(StringRef Kernel, StringRef Callee) {
  return ("define ptx_kernel void @" + Kernel + "(ptr %out) {\n"
          "  %v = call i32 @" + Callee + "()\n"
          "  store i32 %v, ptr %out\n"
          "  ret void\n"
          "}\n")
      .str();
}

lto::LinkOptions partitioned(lto::LinkOptions Opts, std::vector<std::string> *Said) {
  Opts.PartitionFirst = lto::PartitionFirstMode::Always;
  Opts.Partitions = 4;
  Opts.Verbose = [Said](const std::string &Msg) { Said->push_back(Msg); };
  return Opts;
}

} // namespace

// Weak, linkonce and comdat definitions resolve as the whole link resolves
// them, each partition gets the definitions its kernels reach (a local or
// linkonce helper copied where two partitions use it), and every kernel
// computes what it computes in the whole link.
TEST_F(LTOTest, PartitionFirstComputesWhatTheWholeLinkDoes) {
  std::string A = writeIR(
      "a.bc", "define weak i32 @value() { ret i32 1 }\n"
              "$grouped = comdat any\n"
              "define linkonce_odr i32 @grouped() comdat { ret i32 5 }\n"
              "define linkonce_odr i32 @tmpl() { ret i32 7 }\n"
              "define internal i32 @local() { ret i32 11 }\n"
              "define i32 @sum() {\n"
              "  %a = call i32 @tmpl()\n"
              "  %b = call i32 @local()\n"
              "  %c = add i32 %a, %b\n"
              "  ret i32 %c\n"
              "}\n" +
                  kernelCalling("ka", "value") + kernelCalling("kg", "grouped"));
  std::string B = writeIR(
      "b.bc", "define i32 @value() { ret i32 2 }\n"
              "$grouped = comdat any\n"
              "define linkonce_odr i32 @grouped() comdat { ret i32 5 }\n"
              "define linkonce_odr i32 @tmpl() { ret i32 7 }\n"
              "declare i32 @sum()\n"
              "declare void @missing_in_dead_code()\n"
              "define void @dead() {\n"
              "  call void @missing_in_dead_code()\n"
              "  ret void\n"
              "}\n"
              // A device variable in clang's used list, as clang writes
              // one; the partitions without it drop it from their list.
              "@bvar = addrspace(1) externally_initialized global i32 9\n"
              "@llvm.compiler.used = appending global [1 x ptr] [ptr "
              "addrspacecast (ptr addrspace(1) @bvar to ptr)], section "
              "\"llvm.metadata\"\n"
              "define i32 @readb() {\n"
              "  %v = load i32, ptr addrspace(1) @bvar\n"
              "  ret i32 %v\n"
              "}\n" +
                  kernelCalling("kb", "tmpl") + kernelCalling("ks", "sum") +
                  kernelCalling("kv", "readb"));
  std::vector<std::string> Said;
  Expected<lto::LinkedProgram> Whole = link({A, B}, Sm80, options());
  Expected<lto::LinkedProgram> Parts =
      link({A, B}, Sm80, partitioned(options(), &Said));
  ASSERT_THAT_EXPECTED(Whole, Succeeded());
  ASSERT_THAT_EXPECTED(Parts, Succeeded());
  EXPECT_THAT(Said, Contains(HasSubstr("each linked from its inputs alone")));
  ASSERT_EQ(Parts->Modules.size(), 1u);
  EXPECT_GE(Parts->Modules[0].Parts.size(), 2u);
  for (StringRef K : {"ka", "kg", "kb", "ks", "kv"})
    EXPECT_EQ(storedConstant(Parts->Modules[0], K),
              storedConstant(Whole->Modules[0], K))
        << K.str();
  EXPECT_EQ(storedConstant(Parts->Modules[0], "ka"), 2); // the strong one
  EXPECT_EQ(storedConstant(Parts->Modules[0], "ks"), 18);
  std::vector<std::string> Kernels, WholeKernels;
  for (const lto::KernelInfo &K : Parts->Kernels)
    Kernels.push_back(K.Name);
  for (const lto::KernelInfo &K : Whole->Kernels)
    WholeKernels.push_back(K.Name);
  EXPECT_EQ(Kernels, WholeKernels);
}

// A unit's components go to partitions in chunks (lto::UnitChunk = 4 in
// name order), not one by one: 8 units of 8 independent kernels over 4
// partitions (16 chunks) put each unit's kernels in at most 2 partitions,
// where placing each kernel by its own name spreads a unit over 3 or 4
// (all 8 units within 2 by chance: below 1e-12). Both planners place them
// alike: the whole link's (the tags the IR linker carries) and, in
// lto_partition_first_test, the summaries'.
TEST_F(LTOTest, PartitionsKeepAUnitsKernelsTogether) {
  std::vector<std::string> Paths;
  for (int U = 0; U < 8; ++U) {
    std::string Body;
    for (int K = 0; K < 8; ++K)
      Body += ("define ptx_kernel void @u" + Twine(U) + "_k" + Twine(K) +
               "(ptr %out) {\n  store i32 " + Twine(U * 8 + K) +
               ", ptr %out\n  ret void\n}\n")
                  .str();
    Paths.push_back(writeIR(("u" + Twine(U) + ".bc").str(), Body));
  }
  lto::LinkOptions Opts = options();
  Opts.Partitions = 4;
  Expected<lto::LinkedProgram> P = link(Paths, Sm80, Opts);
  ASSERT_THAT_EXPECTED(P, Succeeded());
  ASSERT_EQ(P->Modules.size(), 1u);
  std::map<std::string, std::set<size_t>> PartsOfUnit;
  size_t Placed = 0;
  for (auto [I, Part] : enumerate(P->Modules[0].Parts))
    for (const std::string &K : Part.Kernels) {
      PartsOfUnit[K.substr(0, K.find('_'))].insert(I);
      ++Placed;
    }
  EXPECT_EQ(Placed, 64u);
  ASSERT_EQ(PartsOfUnit.size(), 8u);
  for (const auto &[Unit, Parts] : PartsOfUnit)
    EXPECT_LE(Parts.size(), 2u) << Unit;
  EXPECT_GE(P->Modules[0].Parts.size(), 2u);
}

// __CUDA_ARCH is folded per target group in each partition: the targets
// that see different answers get modules of their own, in partitions.
TEST_F(LTOTest, PartitionFirstFoldsCudaArchPerTarget) {
  std::string Check = archCheck(800);
  std::string Check2 = Check;
  Check2.replace(Check2.find("@k("), 3, "@k2(");
  Check2.replace(Check2.find("@arch "), 6, "@arch2 ");
  Check2.replace(Check2.find("@arch to"), 8, "@arch2 to");
  std::string A = writeIR("a.bc", Check);
  std::string B = writeIR("b.bc", Check2);
  std::vector<lto::Target> Targets = {smTarget(75, 63), smTarget(90, 78)};
  std::vector<std::string> Said;
  Expected<lto::LinkedProgram> P =
      link({A, B}, Targets, partitioned(options(), &Said));
  ASSERT_THAT_EXPECTED(P, Succeeded());
  EXPECT_THAT(Said, Contains(HasSubstr("each linked from its inputs alone")));
  ASSERT_EQ(P->Modules.size(), 2u);
  EXPECT_EQ(P->Modules[0].Parts.size(), 2u);
  EXPECT_THAT(P->Modules[0].TargetIndices, ElementsAre(0u));
  EXPECT_THAT(P->Modules[1].TargetIndices, ElementsAre(1u));
  for (StringRef K : {"k", "k2"}) {
    EXPECT_EQ(storedConstant(P->Modules[0], K), 0) << K.str(); // 750 >= 800
    EXPECT_EQ(storedConstant(P->Modules[1], K), 1) << K.str(); // 900 >= 800
  }
}

// What the summaries do not model (an alias) gets the whole link, and -v
// says which input and why.
TEST_F(LTOTest, PartitionFirstFallsBackToTheWholeLink) {
  std::string A = writeIR("a.bc", "define i32 @impl() { ret i32 3 }\n"
                                  "@twice = alias i32 (), ptr @impl\n" +
                                      kernelCalling("ka", "twice"));
  std::string B = writeIR("b.bc", "define i32 @other() { ret i32 4 }\n" +
                                      kernelCalling("kb", "other"));
  std::vector<std::string> Said;
  Expected<lto::LinkedProgram> P =
      link({A, B}, Sm80, partitioned(options(), &Said));
  ASSERT_THAT_EXPECTED(P, Succeeded());
  EXPECT_THAT(Said, ElementsAre(A + ": an alias: linked whole, not in partitions"));
  EXPECT_EQ(storedConstant(P->Modules[0], "ka"), 3);
  EXPECT_EQ(storedConstant(P->Modules[0], "kb"), 4);
}

// With LinkOptions::Spill each partition's bitcode waits in a file of the
// driver's, before its O3 and after it: the optimized partitions are
// those of a link that keeps them in memory, byte for byte, and a file
// that cannot be written or read back is an error naming it.
TEST_F(LTOTest, PartitionsWaitInSpillFiles) {
  std::string A = writeIR("a.bc", "define i32 @one() { ret i32 1 }\n" +
                                      kernelCalling("ka", "one"));
  std::string B = writeIR("b.bc", "define i32 @two() { ret i32 2 }\n" +
                                      kernelCalling("kb", "two"));
  std::string C = writeIR("c.bc", "define i32 @six() { ret i32 6 }\n" +
                                      kernelCalling("kc", "six"));
  std::vector<std::string> Said, Names;
  lto::LinkOptions Opts = partitioned(options(), &Said);
  Opts.NeedWholeModule = false;
  Expected<lto::LinkedProgram> InMemory = link({A, B, C}, Sm80, Opts);
  ASSERT_THAT_EXPECTED(InMemory, Succeeded());
  std::mutex Mu;
  Opts.Spill = [&](StringRef Name, StringRef Bytes) -> Expected<std::string> {
    std::lock_guard<std::mutex> Lock(Mu);
    Names.push_back(Name.str());
    return Dir.write(("spill-" + Name).str(), Bytes);
  };
  Expected<lto::LinkedProgram> Spilled = link({A, B, C}, Sm80, Opts);
  ASSERT_THAT_EXPECTED(Spilled, Succeeded());
  ASSERT_EQ(Spilled->Modules.size(), 1u);
  const std::vector<lto::CodegenPartition> &Parts = Spilled->Modules[0].Parts;
  const std::vector<lto::CodegenPartition> &Kept = InMemory->Modules[0].Parts;
  ASSERT_GE(Parts.size(), 2u);
  ASSERT_EQ(Parts.size(), Kept.size());
  for (auto [P, K] : zip(Parts, Kept)) {
    EXPECT_TRUE(P.Bitcode.empty());
    EXPECT_THAT(P.File, HasSubstr(".sm_80.opt.bc"));
    Expected<std::unique_ptr<MemoryBuffer>> Bytes = lto::loadBitcode(P);
    ASSERT_THAT_EXPECTED(Bytes, Succeeded());
    EXPECT_TRUE((*Bytes)->getBuffer() == K.Bitcode);
    EXPECT_EQ(P.Kernels, K.Kernels);
  }
  // Each partition twice: linked, then optimized.
  EXPECT_EQ(Names.size(), 2 * Parts.size());
  EXPECT_EQ(count_if(Names,
                     [](const std::string &N) {
                       return StringRef(N).starts_with("part") &&
                              StringRef(N).ends_with(".sm_80.opt.bc");
                     }),
            std::ptrdiff_t(Parts.size()));
  EXPECT_THAT(Names, Contains("part0.sm_80.opt.bc"));

  lto::CodegenPartition Gone;
  Gone.File = Dir.file("gone.bc");
  Expected<std::unique_ptr<MemoryBuffer>> Missing = lto::loadBitcode(Gone);
  EXPECT_THAT_EXPECTED(
      Missing, FailedWithMessage(HasSubstr(
                   "cannot read back the partition's bitcode from " +
                   Dir.file("gone.bc"))));

  Opts.Spill = [](StringRef Name, StringRef) -> Expected<std::string> {
    return createStringError("cannot write " + Name + ": disk full");
  };
  EXPECT_THAT_EXPECTED(link({A, B, C}, Sm80, Opts),
                       FailedWithMessage(HasSubstr("part0.bc: disk full")));
  // The optimized partitions' spill fails, the linked ones' does not.
  Opts.Spill = [&](StringRef Name, StringRef Bytes) -> Expected<std::string> {
    if (Name.ends_with(".opt.bc"))
      return createStringError("cannot write " + Name + ": disk full");
    std::lock_guard<std::mutex> Lock(Mu);
    return Dir.write(("spill-" + Name).str(), Bytes);
  };
  EXPECT_THAT_EXPECTED(
      link({A, B, C}, Sm80, Opts),
      FailedWithMessage(HasSubstr(".sm_80.opt.bc: disk full")));
}

// Errors found in several partitions are each reported once, with every
// input that references the symbol.
TEST_F(LTOTest, PartitionFirstReportsEachUndefinedSymbolOnce) {
  std::string A = writeIR("a.bc", "declare i32 @missing()\n" +
                                      kernelCalling("ka", "missing"));
  std::string B = writeIR("b.bc", "declare i32 @missing()\n" +
                                      kernelCalling("kb", "missing"));
  std::vector<std::string> Said;
  EXPECT_THAT_EXPECTED(
      link({A, B}, Sm80, partitioned(options(), &Said)),
      FailedWithMessage("undefined device symbol: missing\n>>> referenced by " +
                        A + "\n>>> referenced by " + B));
}

// Past 32 partitions' worth of instructions, the partition count follows
// the program's size, not its kernels (which would give 24 / 8 = 3): both
// kinds of link count the same instructions, plan the same number of
// partitions and compute the same values.
TEST_F(LTOTest, PartitionCountFollowsTheProgramsSize) {
  std::vector<std::string> Files;
  for (int I = 0; I < 24; ++I) {
    std::string N = std::to_string(I);
    Files.push_back(writeIR("k" + N + ".bc",
                            "define i32 @value" + N + "() { ret i32 " + N +
                                " }\n" +
                                kernelCalling("k" + N, "value" + N)));
  }
  EXPECT_EQ(lto::defaultPartitions(24, 0), 3u);
  EXPECT_EQ(lto::defaultPartitions(24, 32 * lto::PartitionInstructions), 32u);
  EXPECT_EQ(lto::defaultPartitions(24, 32 * lto::PartitionInstructions + 1),
            33u);
  EXPECT_EQ(lto::defaultPartitions(4096, 100 * lto::PartitionInstructions),
            100u);
  std::vector<std::vector<std::string>> Said(2);
  std::vector<lto::LinkedProgram> Programs;
  const lto::PartitionFirstMode Modes[] = {lto::PartitionFirstMode::Never,
                                           lto::PartitionFirstMode::Always};
  for (size_t I = 0; I < 2; ++I) {
    lto::LinkOptions Opts = options();
    Opts.PartitionFirst = Modes[I];
    Opts.Partitions = 0;
    Opts.PartitionInstructions = 8;
    Opts.Verbose = [&Said, I](const std::string &Msg) {
      Said[I].push_back(Msg);
    };
    Expected<lto::LinkedProgram> P = link(Files, Sm80, Opts);
    ASSERT_THAT_EXPECTED(P, Succeeded());
    Programs.push_back(std::move(*P));
  }
  auto Planned = [](ArrayRef<std::string> Lines) {
    for (const std::string &L : Lines)
      if (StringRef(L).contains("instructions before O3"))
        return L;
    return std::string();
  };
  EXPECT_THAT(Planned(Said[0]), HasSubstr("link: 24 kernels, "));
  EXPECT_EQ(Planned(Said[0]), Planned(Said[1]));
  EXPECT_THAT(Said[1], Contains(HasSubstr("each linked from its inputs alone")));
  for (const lto::LinkedProgram &P : Programs) {
    ASSERT_EQ(P.Modules.size(), 1u);
    EXPECT_GT(P.Modules[0].Parts.size(), 3u);
    for (int I = 0; I < 24; ++I)
      EXPECT_EQ(storedConstant(P.Modules[0], "k" + std::to_string(I)), I);
  }
}
