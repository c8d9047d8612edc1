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
