// res_check: `fatlink inspect --resources` against the CUDA driver.
//
//   res_check TABLE DIR
//
// TABLE is the output of `fatlink inspect --resources` on some inputs, DIR
// the cubins `fatlink inspect --extract=DIR` wrote from the same inputs
// (the table's first column names them). For every cubin of the device's
// own arch, res_check loads it with the driver API, checks that the
// driver's kernels are the table's kernels, one for one, and compares each
// kernel's row with cuFuncGetAttribute:
//   regs          == CU_FUNC_ATTRIBUTE_NUM_REGS
//   shared        == CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES (the reserved
//                    column, sm_90+'s system reserve, is not counted)
//   stack + local == CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, where the stack
//                    is known
//   maxntid       >= CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, where declared
//   the arch      == CU_FUNC_ATTRIBUTE_BINARY_VERSION
// and prints the driver's user-constant bytes beside const0 (bank 0, the
// parameters: another thing). Exit 0 when every check holds. Built on the
// build machine against the toolkit's libcuda stub; needs only the driver.
#include <cuda.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Row {
  std::string Cubin, Arch, Kernel, Stack, Local, Const0, MaxNtid;
  long Regs = 0, Shared = 0, Reserved = 0;
};

int Failures = 0;

void fail(const std::string &Msg) {
  ++Failures;
  std::printf("FAIL: %s\n", Msg.c_str());
}

bool check(CUresult R, const char *What) {
  if (R == CUDA_SUCCESS)
    return true;
  const char *Name = nullptr;
  cuGetErrorName(R, &Name);
  fail(std::string(What) + ": " + (Name ? Name : "unknown error"));
  return false;
}

int attr(CUfunction F, CUfunction_attribute A) {
  int V = -1;
  cuFuncGetAttribute(&V, A, F);
  return V;
}

long product(const std::string &Dims) { // "256x1x1"
  long P = 1;
  std::stringstream S(Dims);
  std::string D;
  while (std::getline(S, D, 'x'))
    P *= std::atol(D.c_str());
  return P;
}

} // namespace

int main(int Argc, char **Argv) {
  if (Argc != 3) {
    std::fprintf(stderr, "usage: res_check TABLE DIR\n");
    return 2;
  }
  if (!check(cuInit(0), "cuInit"))
    return 1;
  CUdevice Dev;
  int Major = 0, Minor = 0;
  CUcontext Ctx;
  if (!check(cuDeviceGet(&Dev, 0), "cuDeviceGet") ||
      !check(cuDeviceGetAttribute(
                 &Major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, Dev),
             "compute capability") ||
      !check(cuDeviceGetAttribute(
                 &Minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, Dev),
             "compute capability") ||
      !check(cuDevicePrimaryCtxRetain(&Ctx, Dev), "cuDevicePrimaryCtxRetain") ||
      !check(cuCtxSetCurrent(Ctx), "cuCtxSetCurrent"))
    return 1;
  std::string Arch = "sm_" + std::to_string(Major * 10 + Minor);

  std::ifstream Table(Argv[1]);
  if (!Table) {
    std::fprintf(stderr, "res_check: cannot read %s\n", Argv[1]);
    return 2;
  }
  // Rows by cubin, in the table's order.
  std::map<std::string, std::vector<Row>> ByCubin;
  std::vector<std::string> Order;
  std::string Line;
  while (std::getline(Table, Line)) {
    std::stringstream S(Line);
    std::vector<std::string> F;
    for (std::string W; S >> W;)
      F.push_back(W);
    if (F.size() != 14 || F[0] == "name" || F[1] != Arch)
      continue;
    Row R;
    R.Cubin = F[0];
    R.Arch = F[1];
    R.Kernel = F[2];
    R.Regs = std::atol(F[3].c_str());
    R.Stack = F[4];
    R.Shared = std::atol(F[7].c_str());
    R.Reserved = std::atol(F[8].c_str());
    R.Local = F[9];
    R.Const0 = F[10];
    R.MaxNtid = F[12];
    if (!ByCubin.count(R.Cubin))
      Order.push_back(R.Cubin);
    ByCubin[R.Cubin].push_back(R);
  }
  if (Order.empty()) {
    fail("no " + Arch + " cubin in " + Argv[1]);
    return 1;
  }

  int Kernels = 0, LocalIsStack = 0, StackKnown = 0;
  for (const std::string &Cubin : Order) {
    std::string Path = std::string(Argv[2]) + "/" + Cubin;
    CUmodule Mod;
    if (!check(cuModuleLoad(&Mod, Path.c_str()), ("load " + Path).c_str()))
      continue;
    unsigned Count = 0;
    check(cuModuleGetFunctionCount(&Count, Mod), "cuModuleGetFunctionCount");
    std::vector<CUfunction> Fns(Count);
    check(cuModuleEnumerateFunctions(Fns.data(), Count, Mod),
          "cuModuleEnumerateFunctions");
    std::set<std::string> DriverNames, TableNames;
    for (CUfunction F : Fns) {
      const char *Name = nullptr;
      if (cuFuncGetName(&Name, F) == CUDA_SUCCESS && Name)
        DriverNames.insert(Name);
    }
    for (const Row &R : ByCubin[Cubin])
      TableNames.insert(R.Kernel);
    for (const std::string &N : DriverNames)
      if (!TableNames.count(N))
        fail(Cubin + ": the driver has kernel " + N + ", the table not");
    for (const std::string &N : TableNames)
      if (!DriverNames.count(N))
        fail(Cubin + ": the table has kernel " + N + ", the driver not");

    for (const Row &R : ByCubin[Cubin]) {
      CUfunction F;
      if (!check(cuModuleGetFunction(&F, Mod, R.Kernel.c_str()),
                 (Cubin + ": get " + R.Kernel).c_str()))
        continue;
      ++Kernels;
      int Regs = attr(F, CU_FUNC_ATTRIBUTE_NUM_REGS);
      int Shared = attr(F, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
      int Local = attr(F, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES);
      int Const = attr(F, CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES);
      int MaxThreads = attr(F, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
      int Binary = attr(F, CU_FUNC_ATTRIBUTE_BINARY_VERSION);
      std::printf("%s %s: regs %ld/%d shared %ld (reserved %ld)/%d stack %s "
                  "local %s / driver local %d; const0 %s / driver const %d; "
                  "max threads %d (maxntid %s); binary %d\n",
                  Cubin.c_str(), R.Kernel.c_str(), R.Regs, Regs, R.Shared,
                  R.Reserved, Shared, R.Stack.c_str(), R.Local.c_str(), Local,
                  R.Const0.c_str(), Const, MaxThreads, R.MaxNtid.c_str(),
                  Binary);
      if (R.Regs != Regs)
        fail(Cubin + " " + R.Kernel + ": registers " + std::to_string(R.Regs) +
             ", the driver says " + std::to_string(Regs));
      if (R.Shared != Shared)
        fail(Cubin + " " + R.Kernel + ": shared " + std::to_string(R.Shared) +
             ", the driver says " + std::to_string(Shared));
      if (R.MaxNtid != "-" && MaxThreads > product(R.MaxNtid))
        fail(Cubin + " " + R.Kernel + ": the driver allows " +
             std::to_string(MaxThreads) + " threads, over maxntid " +
             R.MaxNtid);
      if (Binary != Major * 10 + Minor)
        fail(Cubin + " " + R.Kernel + ": binary version " +
             std::to_string(Binary));
      if (R.Stack != "-") {
        ++StackKnown;
        if (std::atol(R.Stack.c_str()) + std::atol(R.Local.c_str()) == Local)
          ++LocalIsStack;
        else
          fail(Cubin + " " + R.Kernel + ": stack " + R.Stack + " + local " +
               R.Local + ", the driver's local size is " +
               std::to_string(Local));
      }
    }
    cuModuleUnload(Mod);
  }
  std::printf("res_check: %d kernels in %zu %s cubins; the driver's local "
              "bytes equal stack + local for %d of the %d with a known stack\n",
              Kernels, Order.size(), Arch.c_str(), LocalIsStack, StackKnown);
  if (Kernels == 0)
    fail("no kernel checked");
  return Failures ? 1 : 0;
}
