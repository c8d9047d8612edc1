//===- runtime/tests/cudart_test.cc - Registration with the CUDA runtime --===//
//
// runtime/lib/CudaRuntime.c registers a component's fatlink modules and
// clang's offload entries with the CUDA runtime. This test is its own
// program because it plays both parts the real registration needs: it
// defines the CUDA runtime's __cudaRegister* functions (CudaRuntime.c
// references them weakly), recording each call, and it carries offload
// entries in its own `llvm_offload_entries` section (so the constructor of
// this program also sees them, with no module, and warns once at start).
//
//===----------------------------------------------------------------------===//

#include "packager/Descriptor.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace {

struct OffloadEntry {
  uint64_t Reserved;
  uint16_t Version;
  uint16_t Kind;
  uint32_t Flags;
  void *Address;
  const char *Name;
  uint64_t Size;
  uint64_t Data;
  void *Aux;
};
static_assert(sizeof(OffloadEntry) == 56, "llvm offload entry layout");

// More modules than the 64 the runtime once had room for.
constexpr int NumModules = 70;

std::vector<std::string> &kernelNames() {
  static std::vector<std::string> Names = [] {
    std::vector<std::string> N;
    for (int I = 0; I < NumModules; ++I)
      N.push_back("k" + std::to_string(I));
    return N;
  }();
  return Names;
}

char Stubs[NumModules]; // the host stubs' addresses
void *FatbinHandles[NumModules + 8];
int NumFatbins;
std::map<std::string, void **> RegisteredWith; // kernel -> handle

} // namespace

#define E(I)                                                                   \
  {0, 1, 2, 0, &Stubs[I], "k" #I, 0, 0, nullptr}
__attribute__((used, section("llvm_offload_entries")))
const OffloadEntry Entries[NumModules] = {
    E(0),  E(1),  E(2),  E(3),  E(4),  E(5),  E(6),  E(7),  E(8),  E(9),
    E(10), E(11), E(12), E(13), E(14), E(15), E(16), E(17), E(18), E(19),
    E(20), E(21), E(22), E(23), E(24), E(25), E(26), E(27), E(28), E(29),
    E(30), E(31), E(32), E(33), E(34), E(35), E(36), E(37), E(38), E(39),
    E(40), E(41), E(42), E(43), E(44), E(45), E(46), E(47), E(48), E(49),
    E(50), E(51), E(52), E(53), E(54), E(55), E(56), E(57), E(58), E(59),
    E(60), E(61), E(62), E(63), E(64), E(65), E(66), E(67), E(68), E(69)};
#undef E

extern "C" {
struct flrt_uint3 {
  unsigned x, y, z;
};

void **__cudaRegisterFatBinary(void *) {
  if (NumFatbins >= NumModules + 8)
    return nullptr;
  return &FatbinHandles[NumFatbins++];
}
void __cudaRegisterFatBinaryEnd(void **) {}
void __cudaUnregisterFatBinary(void **) {}
void __cudaRegisterFunction(void **Handle, const char *, char *Name,
                            const char *, int, flrt_uint3 *, flrt_uint3 *,
                            flrt_uint3 *, flrt_uint3 *, int *) {
  RegisteredWith[Name] = Handle;
}
void __cudaRegisterVar(void **, char *, char *, const char *, int, size_t, int,
                       int) {}

// runtime/lib/Internal.h
void flrt_cudart_register(const struct fatlink_module *Begin,
                          const struct fatlink_module *End);
}

namespace {

TEST(CudaRuntime, RegistersEveryModulePastTheSixtyFourth) {
  static const char FatbinBytes[16] = {};
  static fatlink_fatbin_wrapper Wrapper[NumModules];
  static fatlink_kernel Kernels[NumModules];
  static fatlink_module Mods[NumModules];
  for (int I = 0; I < NumModules; ++I) {
    Wrapper[I] = {FATLINK_FATBINC_MAGIC, FATLINK_FATBINC_VERSION, FatbinBytes,
                  nullptr};
    Kernels[I] = {kernelNames()[I].c_str(), nullptr, 0, 0};
    Mods[I] = {FATLINK_MODULE_MAGIC, FATLINK_MODULE_VERSION,
               sizeof(fatlink_module), &Wrapper[I], FatbinBytes,
               sizeof(FatbinBytes), &Kernels[I], 1, 0};
  }
  int Before = NumFatbins;
  flrt_cudart_register(&Mods[0], &Mods[NumModules]);
  ASSERT_EQ(NumFatbins - Before, NumModules);
  ASSERT_EQ(RegisteredWith.size(), size_t(NumModules));
  for (int I = 0; I < NumModules; ++I)
    EXPECT_EQ(RegisteredWith[kernelNames()[I]], &FatbinHandles[Before + I])
        << kernelNames()[I];
}

} // namespace
