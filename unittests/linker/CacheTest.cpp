//===- unittests/linker/CacheTest.cpp - The device link's cache key -------===//
//
// deviceLinkKey: what goes into it. The end-to-end tests check hits and
// misses through the command line; these check the inputs a command line
// cannot vary alone, such as the toolkit's nvJitLink and nvcc, which only
// links with nvcc LTO-IR use.
//
//===----------------------------------------------------------------------===//

#include "linker/Cache.h"
#include "unittests/TestSupport.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;
using namespace fatlink;
using fatlink::test::TempDir;

namespace {

TEST(CacheKey, ToolkitToolsOfLtoIR) {
  TempDir Toolkit;
  ASSERT_FALSE(sys::fs::create_directories(Toolkit.file("lib64")));
  ASSERT_FALSE(sys::fs::create_directories(Toolkit.file("bin")));
  Toolkit.write("lib64/libnvJitLink.so.13", "nvJitLink 13.0");
  Toolkit.write("bin/nvcc", "nvcc 13.0");
  DeviceLinkConfig C;
  C.Paths.CudaPath = Toolkit.path();
  std::string Bytes = "an nvcc object";
  auto One = [&](bool LtoIR) {
    lto::DeviceObject O;
    O.Data = MemoryBufferRef(Bytes, "nv.o");
    O.Arch = LtoIR ? "lto_80" : "sm_80";
    O.IsLTOIR = LtoIR;
    lto::InputSet Set;
    Set.Objects.push_back(std::move(O));
    return Set;
  };
  lto::InputSet Inputs = One(true), Cubins = One(false);

  std::string Lto = deviceLinkKey(C, Inputs);
  std::string Cubin = deviceLinkKey(C, Cubins);
  EXPECT_EQ(Lto.size(), 64u);
  EXPECT_NE(Lto, Cubin);
  // Another nvJitLink (its size, here) or nvcc: another key for LTO-IR...
  Toolkit.write("lib64/libnvJitLink.so.13", "nvJitLink 13.1 build");
  std::string NewJitLink = deviceLinkKey(C, Inputs);
  EXPECT_NE(NewJitLink, Lto);
  Toolkit.write("bin/nvcc", "nvcc 13.1 build");
  EXPECT_NE(deviceLinkKey(C, Inputs), NewJitLink);
  // ... and the same for a link without it.
  EXPECT_EQ(deviceLinkKey(C, Cubins), Cubin);
}

} // namespace

namespace {

// A partition's codegen entry keeps its spills with its cubin; a payload
// cut short or with bytes after it is not an entry.
TEST(CacheEntry, PartitionCodeRoundTrip) {
  codegen::PartitionCode Code;
  Code.Cubin = std::string("\x7f" "ELF\0cubin", 10);
  Code.Spills = {{"a_kernel", 16, 24}, {"b_kernel", 0, 0}};
  std::string Payload = encodePartitionCode(Code);
  std::optional<codegen::PartitionCode> Back = decodePartitionCode(Payload);
  ASSERT_TRUE(Back.has_value());
  EXPECT_EQ(Back->Cubin, Code.Cubin);
  ASSERT_EQ(Back->Spills.size(), 2u);
  EXPECT_EQ(Back->Spills[0].Name, "a_kernel");
  EXPECT_EQ(Back->Spills[0].Stores, 16u);
  EXPECT_EQ(Back->Spills[0].Loads, 24u);
  EXPECT_EQ(Back->Spills[1].Name, "b_kernel");
  EXPECT_FALSE(decodePartitionCode(StringRef(Payload).drop_back(1)));
  EXPECT_FALSE(decodePartitionCode(Payload + "x"));
  // A spill count larger than the payload is refused before any
  // allocation.
  std::string Huge = Payload.substr(0, 8 + Code.Cubin.size());
  Huge += std::string("\xff\xff\xff\xff\xff\xff\xff\x7f", 8);
  EXPECT_FALSE(decodePartitionCode(Huge));
}

} // namespace

namespace {

// The tools' facts read back field by field; a payload cut short, with
// bytes after it, or with a count past its end is not an entry. Their key
// follows ptxas's identity, and a PTX-only link (no ptxas) has its own.
TEST(CacheEntry, ToolFactsRoundTripAndKey) {
  ToolFacts F;
  F.LLVMMajor = 22;
  F.LLVMArches = {{"sm_75", 75, 63}, {"sm_90a", 90, 80}};
  F.LLVMMaxPtx = 88;
  F.PtxasRelease = "13.0";
  F.PtxasArches = {"sm_75", "compute_75", "sm_90a"};
  F.PtxasMaxPtx = 90;
  std::string Payload = encodeToolFacts(F);
  std::optional<ToolFacts> Back = decodeToolFacts(Payload);
  ASSERT_TRUE(Back.has_value());
  EXPECT_EQ(Back->LLVMMajor, 22u);
  ASSERT_EQ(Back->LLVMArches.size(), 2u);
  EXPECT_EQ(Back->LLVMArches[1].Cpu, "sm_90a");
  EXPECT_EQ(Back->LLVMArches[1].Sm, 90u);
  EXPECT_EQ(Back->LLVMArches[1].MinPtxVersion, 80u);
  EXPECT_EQ(Back->LLVMMaxPtx, 88u);
  EXPECT_EQ(Back->PtxasRelease, "13.0");
  EXPECT_EQ(Back->PtxasArches, F.PtxasArches);
  EXPECT_EQ(Back->PtxasMaxPtx, 90u);
  EXPECT_FALSE(decodeToolFacts(StringRef(Payload).drop_back(1)));
  EXPECT_FALSE(decodeToolFacts(Payload + "x"));
  std::string Huge = Payload.substr(0, 8);
  Huge += std::string("\xff\xff\xff\xff\xff\xff\xff\x7f", 8);
  EXPECT_FALSE(decodeToolFacts(Huge));

  TempDir Dir;
  Dir.write("ptxas", "ptxas 13.0");
  DeviceLinkConfig C;
  C.Paths.Ptxas = Dir.file("ptxas");
  std::string Key = toolFactsKey(C);
  EXPECT_EQ(Key.size(), 64u);
  EXPECT_EQ(toolFactsKey(C), Key);
  Dir.write("ptxas", "ptxas 13.1 build");
  std::string Newer = toolFactsKey(C);
  EXPECT_NE(Newer, Key);
  C.RunPtxas = false;
  std::string PtxOnly = toolFactsKey(C);
  EXPECT_NE(PtxOnly, Newer);
  // Without ptxas, its identity does not matter.
  Dir.write("ptxas", "ptxas 13.2 release build");
  EXPECT_EQ(toolFactsKey(C), PtxOnly);
}

} // namespace

namespace {

// A whole link's entry is written in pieces (its long strings by
// reference, never joined); it reads back whole, field by field, and a
// blob stored in pieces is the same file as one stored joined.
TEST(CacheEntry, DeviceBuildInPiecesRoundTrip) {
  TempDir Dir;
  std::string Out, Err;
  raw_string_ostream OutS(Out), ErrS(Err);
  Context Ctx(OutS, ErrS);

  DeviceBuild B;
  lto::Target T;
  T.Name = T.Cpu = "sm_75";
  T.Sm = 75;
  T.PtxVersion = 78;
  B.Targets = {T, T};
  B.Targets[1].Name = B.Targets[1].Cpu = "sm_90";
  B.Targets[1].Sm = 90;
  B.Outputs.resize(2);
  // Long strings (over the 64 KiB written by reference) and short ones,
  // next to each other and to the records.
  for (size_t I = 0; I < 2; ++I) {
    B.Outputs[I].PTX = std::string(100 << 10, char('p' + I));
    B.Outputs[I].Cubin = std::string(I ? 10 : (300 << 10), char('c' + I));
    B.Outputs[I].Spills = {{"k" + std::to_string(I), I, 2 * I}};
  }
  B.Program.Globals = {"g0", std::string(70 << 10, 'g')};
  B.Program.Warnings = {"w"};
  B.Fatbin = std::string(65 << 10, 'f');
  B.Object = "obj";

  ASSERT_TRUE(cacheStore(Ctx, Dir.path(), "k", B));
  std::optional<DeviceBuild> Back = cacheLookup(Ctx, Dir.path(), "k");
  ASSERT_TRUE(Back.has_value()) << Out;
  ASSERT_EQ(Back->Targets.size(), 2u);
  EXPECT_EQ(Back->Targets[1].Name, "sm_90");
  EXPECT_EQ(Back->Targets[1].Sm, 90u);
  for (size_t I = 0; I < 2; ++I) {
    EXPECT_EQ(Back->Outputs[I].PTX, B.Outputs[I].PTX);
    EXPECT_EQ(Back->Outputs[I].Cubin, B.Outputs[I].Cubin);
    ASSERT_EQ(Back->Outputs[I].Spills.size(), 1u);
    EXPECT_EQ(Back->Outputs[I].Spills[0].Name, "k" + std::to_string(I));
    EXPECT_EQ(Back->Outputs[I].Spills[0].Loads, 2 * I);
  }
  EXPECT_EQ(Back->Program.Globals, B.Program.Globals);
  EXPECT_EQ(Back->Program.Warnings, B.Program.Warnings);
  EXPECT_EQ(Back->Fatbin, B.Fatbin);
  EXPECT_EQ(Back->Object, B.Object);

  std::optional<std::string> Payload = cacheLookupBlob(Ctx, Dir.path(), "k");
  ASSERT_TRUE(Payload.has_value());
  ASSERT_TRUE(cacheStoreBlob(Ctx, Dir.path(), "joined", *Payload));
  auto Read = [&](StringRef Name) {
    ErrorOr<std::unique_ptr<MemoryBuffer>> MB =
        MemoryBuffer::getFile(Dir.file(("llvmcache-" + Name).str()));
    return MB ? (*MB)->getBuffer().str() : std::string("(unreadable)");
  };
  EXPECT_EQ(Read("k"), Read("joined"));
}

// A partitioned link's cubin stays in nvlink's file, mapped: the entry
// holds its bytes, and storing it (hashing, then writing 24 MB) hands the
// pages back as it goes instead of leaving them all resident.
TEST(CacheEntry, MappedCubinIsStoredAndHandedBack) {
  TempDir Dir;
  std::string Out, Err;
  raw_string_ostream OutS(Out), ErrS(Err);
  Context Ctx(OutS, ErrS);
  std::string Bytes(24 << 20, '\0');
  for (size_t I = 0; I < Bytes.size(); ++I)
    Bytes[I] = char((I * 2654435761u) >> 13);
  std::string Path = Dir.write("linked.cubin", Bytes);
  Expected<std::shared_ptr<const MappedFile>> File = MappedFile::open(Path);
  ASSERT_TRUE(bool(File)) << toString(File.takeError());
  ASSERT_EQ((*File)->bytes(), Bytes);
  (*File)->release((*File)->bytes());

  DeviceBuild B;
  lto::Target T;
  T.Name = T.Cpu = "sm_75";
  T.Sm = 75;
  B.Targets = {T};
  B.Outputs.resize(1);
  B.Outputs[0].CubinFile = *File;
  EXPECT_EQ(B.Outputs[0].cubin().size(), Bytes.size());
  uint64_t Before = test::residentKB();
  ASSERT_GT(Before, 0u) << "no VmRSS in /proc/self/status";
  ASSERT_TRUE(cacheStore(Ctx, Dir.path(), "m", B));
  uint64_t After = test::residentKB();
  EXPECT_LT(After, Before + (8 << 10)) << "VmRSS " << Before << " -> "
                                        << After << " kB";
  std::optional<DeviceBuild> Back = cacheLookup(Ctx, Dir.path(), "m");
  ASSERT_TRUE(Back.has_value()) << Out;
  EXPECT_TRUE(Back->Outputs[0].Cubin == Bytes); // read back into memory
  EXPECT_FALSE(Back->Outputs[0].CubinFile);
}

TEST(MappedFile, ErrorsAndEmptyFiles) {
  TempDir Dir;
  Expected<std::shared_ptr<const MappedFile>> Missing =
      MappedFile::open(Dir.file("none.cubin"));
  ASSERT_FALSE(bool(Missing));
  std::string Msg = toString(Missing.takeError());
  EXPECT_NE(Msg.find("cannot read " + Dir.file("none.cubin")),
            std::string::npos)
      << Msg;
  Expected<std::shared_ptr<const MappedFile>> Empty =
      MappedFile::open(Dir.write("empty.cubin", ""));
  ASSERT_TRUE(bool(Empty)) << toString(Empty.takeError());
  EXPECT_TRUE((*Empty)->bytes().empty());
  (*Empty)->release("elsewhere"); // outside the mapping: nothing
  // Pages handed back are read again from the file.
  std::string Text(3 << 16, 'x');
  Text[70000] = 'y';
  Expected<std::shared_ptr<const MappedFile>> F =
      MappedFile::open(Dir.write("some.cubin", Text));
  ASSERT_TRUE(bool(F)) << toString(F.takeError());
  (*F)->release((*F)->bytes().substr(1000, 100000));
  EXPECT_EQ((*F)->bytes(), Text);
}

} // namespace
