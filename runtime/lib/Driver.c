/*===- runtime/lib/Driver.c - The CUDA driver, loaded at run time ---------===*\
 *
 * libcuda.so.1 comes with the NVIDIA driver, not with the toolkit, so a
 * program must not need it to start: the runtime dlopen()s it on the first
 * call that needs a GPU and resolves the functions it uses with dlsym. The
 * outcome of that first attempt (success or the message) is kept for the
 * life of the process, so every later call fails the same way.
 *
 * $FATLINK_RT_LIBCUDA names another library to load (tests use a fake
 * driver; it also helps with unusual installs). The toolkit's stub
 * (lib64/stubs/libcuda.so) is detected by cuInit's CUDA_ERROR_STUB_LIBRARY.
 *
 * Each device is used through its primary context, the one the CUDA
 * runtime uses too, retained on first use and made current on the calling
 * thread before each driver call.
\*===----------------------------------------------------------------------===*/

#define _GNU_SOURCE /* dladdr, dl_iterate_phdr */
#include "Internal.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_once_t Once = PTHREAD_ONCE_INIT;
static fatlink_rt_status InitStatus;
static char InitError[2048];
static int InitCuda;
static flrt_driver_api Api;
static int DeviceCount, DriverVersion;

typedef struct DeviceState {
  CUcontext Context;
  fatlink_rt_device_desc Desc;
  char Name[256];
} DeviceState;
static DeviceState *Devices;
static pthread_mutex_t DeviceLock = PTHREAD_MUTEX_INITIALIZER;

static __thread int CurrentDevice;

int flrt_current_device(void) { return CurrentDevice; }

static const struct {
  int Code;
  const char *Name;
} ErrorNames[] = {
    {0, "CUDA_SUCCESS"},
    {1, "CUDA_ERROR_INVALID_VALUE"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY"},
    {3, "CUDA_ERROR_NOT_INITIALIZED"},
    {4, "CUDA_ERROR_DEINITIALIZED"},
    {34, "CUDA_ERROR_STUB_LIBRARY"},
    {35, "CUDA_ERROR_INSUFFICIENT_DRIVER"},
    {46, "CUDA_ERROR_DEVICE_UNAVAILABLE"},
    {100, "CUDA_ERROR_NO_DEVICE"},
    {101, "CUDA_ERROR_INVALID_DEVICE"},
    {200, "CUDA_ERROR_INVALID_IMAGE"},
    {201, "CUDA_ERROR_INVALID_CONTEXT"},
    {209, "CUDA_ERROR_NO_BINARY_FOR_GPU"},
    {218, "CUDA_ERROR_INVALID_PTX"},
    {221, "CUDA_ERROR_JIT_COMPILER_NOT_FOUND"},
    {222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"},
    {223, "CUDA_ERROR_JIT_COMPILATION_DISABLED"},
    {400, "CUDA_ERROR_INVALID_HANDLE"},
    {500, "CUDA_ERROR_NOT_FOUND"},
    {600, "CUDA_ERROR_NOT_READY"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS"},
    {701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"},
    {702, "CUDA_ERROR_LAUNCH_TIMEOUT"},
    {719, "CUDA_ERROR_LAUNCH_FAILED"},
    {803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"},
    {804, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE"},
    {999, "CUDA_ERROR_UNKNOWN"},
};

const char *flrt_cuda_error_name(CUresult R) {
  for (size_t I = 0; I < sizeof(ErrorNames) / sizeof(ErrorNames[0]); ++I)
    if (ErrorNames[I].Code == R)
      return ErrorNames[I].Name;
  const char *Name = NULL;
  if (Api.cuGetErrorName && Api.cuGetErrorName(R, &Name) == CUDA_SUCCESS &&
      Name)
    return Name;
  return "CUDA_ERROR_UNKNOWN_CODE";
}

fatlink_rt_status flrt_cuda_fail(CUresult R, const char *Fmt, ...) {
  char What[2048];
  va_list Ap;
  va_start(Ap, Fmt);
  vsnprintf(What, sizeof(What), Fmt, Ap);
  va_end(Ap);
  const char *Text = NULL;
  if (!Api.cuGetErrorString || Api.cuGetErrorString(R, &Text) != CUDA_SUCCESS ||
      !Text)
    Text = "no description";
  fatlink_rt_status S = R == CUDA_ERROR_OUT_OF_MEMORY
                            ? FATLINK_RT_ERROR_OUT_OF_MEMORY
                            : FATLINK_RT_ERROR_CUDA;
  flrt_fail(S, "%s: %s (%d): %s", What, flrt_cuda_error_name(R), R, Text);
  flrt_set_cuda_error(R);
  return S;
}

static void initFail(fatlink_rt_status S, int Cuda, const char *Fmt, ...)
    FLRT_PRINTF(3, 4);
static void initFail(fatlink_rt_status S, int Cuda, const char *Fmt, ...) {
  va_list Ap;
  va_start(Ap, Fmt);
  vsnprintf(InitError, sizeof(InitError), Fmt, Ap);
  va_end(Ap);
  InitStatus = S;
  InitCuda = Cuda;
  flrt_log("%s", InitError);
}

static void initDriver(void) {
  const char *Path = getenv("FATLINK_RT_LIBCUDA");
  if (!Path || !*Path)
    Path = "libcuda.so.1";
  void *Handle = dlopen(Path, RTLD_NOW | RTLD_LOCAL);
  if (!Handle) {
    const char *Why = dlerror();
    initFail(FATLINK_RT_ERROR_NO_DRIVER, 0,
             "no NVIDIA driver: cannot load %s (%s); install the NVIDIA "
             "driver, or set FATLINK_RT_LIBCUDA to the path of its "
             "libcuda.so.1",
             Path, Why ? Why : "unknown reason");
    return;
  }
  struct {
    const char *Name;
    void **Slot;
    int Required;
  } Syms[] = {
#define SYM(Field, Name, Req) {Name, (void **)&Api.Field, Req}
      SYM(cuInit, "cuInit", 1),
      SYM(cuDriverGetVersion, "cuDriverGetVersion", 1),
      SYM(cuDeviceGetCount, "cuDeviceGetCount", 1),
      SYM(cuDeviceGet, "cuDeviceGet", 1),
      SYM(cuDeviceGetName, "cuDeviceGetName", 1),
      SYM(cuDeviceGetAttribute, "cuDeviceGetAttribute", 1),
      SYM(cuDeviceTotalMem, "cuDeviceTotalMem_v2", 1),
      SYM(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", 1),
      SYM(cuCtxSetCurrent, "cuCtxSetCurrent", 1),
      SYM(cuCtxSynchronize, "cuCtxSynchronize", 1),
      SYM(cuModuleLoadDataEx, "cuModuleLoadDataEx", 1),
      SYM(cuModuleGetFunction, "cuModuleGetFunction", 1),
      SYM(cuFuncGetAttribute, "cuFuncGetAttribute", 1),
      SYM(cuFuncSetAttribute, "cuFuncSetAttribute", 1),
      SYM(cuLaunchKernel, "cuLaunchKernel", 1),
      SYM(cuLaunchCooperativeKernel, "cuLaunchCooperativeKernel", 1),
      SYM(cuOccupancyMaxActiveBlocksPerMultiprocessor,
          "cuOccupancyMaxActiveBlocksPerMultiprocessor", 1),
      SYM(cuMemAlloc, "cuMemAlloc_v2", 1),
      SYM(cuMemFree, "cuMemFree_v2", 1),
      SYM(cuMemsetD8, "cuMemsetD8_v2", 1),
      SYM(cuMemcpyHtoD, "cuMemcpyHtoD_v2", 1),
      SYM(cuMemcpyDtoH, "cuMemcpyDtoH_v2", 1),
      SYM(cuMemGetInfo, "cuMemGetInfo_v2", 1),
      SYM(cuStreamCreate, "cuStreamCreate", 1),
      SYM(cuStreamDestroy, "cuStreamDestroy_v2", 1),
      SYM(cuStreamSynchronize, "cuStreamSynchronize", 1),
      SYM(cuStreamWaitEvent, "cuStreamWaitEvent", 1),
      SYM(cuEventCreate, "cuEventCreate", 1),
      SYM(cuEventDestroy, "cuEventDestroy_v2", 1),
      SYM(cuEventRecord, "cuEventRecord", 1),
      SYM(cuEventSynchronize, "cuEventSynchronize", 1),
      /* Drivers before CUDA 12.8 have only the first version. */
      SYM(cuEventElapsedTime, "cuEventElapsedTime_v2", 0),
      SYM(cuGetErrorName, "cuGetErrorName", 0),
      SYM(cuGetErrorString, "cuGetErrorString", 0),
#undef SYM
  };
  for (size_t I = 0; I < sizeof(Syms) / sizeof(Syms[0]); ++I) {
    *Syms[I].Slot = dlsym(Handle, Syms[I].Name);
    if (!*Syms[I].Slot && Syms[I].Required) {
      initFail(FATLINK_RT_ERROR_NO_DRIVER, 0,
               "%s lacks %s: it is not the NVIDIA driver's libcuda.so.1, or "
               "a driver too old for this runtime; install a current NVIDIA "
               "driver",
               Path, Syms[I].Name);
      memset(&Api, 0, sizeof(Api));
      return;
    }
  }
  if (!Api.cuEventElapsedTime)
    *(void **)&Api.cuEventElapsedTime = dlsym(Handle, "cuEventElapsedTime");
  if (!Api.cuEventElapsedTime) {
    initFail(FATLINK_RT_ERROR_NO_DRIVER, 0,
             "%s lacks cuEventElapsedTime: it is not the NVIDIA driver's "
             "libcuda.so.1; install a current NVIDIA driver",
             Path);
    memset(&Api, 0, sizeof(Api));
    return;
  }
  /* Where the library really came from, for the log. */
  Dl_info Info;
  const char *Real = Path;
  void *InitAddr;
  memcpy(&InitAddr, &Api.cuInit, sizeof(InitAddr));
  if (dladdr(InitAddr, &Info) && Info.dli_fname)
    Real = Info.dli_fname;

  CUresult R = Api.cuInit(0);
  if (R == CUDA_ERROR_STUB_LIBRARY) {
    initFail(FATLINK_RT_ERROR_NO_DRIVER, R,
             "no NVIDIA driver: %s is the CUDA toolkit's stub library, not a "
             "driver (cuInit returned CUDA_ERROR_STUB_LIBRARY); install the "
             "NVIDIA driver and make sure its libcuda.so.1 is found before "
             "the stub (check LD_LIBRARY_PATH)",
             Real);
    return;
  }
  if (R == CUDA_ERROR_NO_DEVICE) {
    initFail(FATLINK_RT_ERROR_NO_DEVICE, R,
             "no GPU: the NVIDIA driver (%s) found no CUDA device (cuInit "
             "returned CUDA_ERROR_NO_DEVICE); check `nvidia-smi` and "
             "CUDA_VISIBLE_DEVICES",
             Real);
    return;
  }
  if (R != CUDA_SUCCESS) {
    const char *Text = NULL;
    if (!Api.cuGetErrorString || Api.cuGetErrorString(R, &Text) != 0 || !Text)
      Text = "no description";
    initFail(R == 803 ? FATLINK_RT_ERROR_NO_DRIVER : FATLINK_RT_ERROR_CUDA, R,
             "cuInit failed in %s: %s (%d): %s%s", Real,
             flrt_cuda_error_name(R), R, Text,
             R == 803 ? "; the driver library and the loaded kernel module "
                        "differ in version: reboot or reinstall the driver"
                      : "");
    return;
  }
  if ((R = Api.cuDriverGetVersion(&DriverVersion)) != CUDA_SUCCESS ||
      (R = Api.cuDeviceGetCount(&DeviceCount)) != CUDA_SUCCESS) {
    initFail(FATLINK_RT_ERROR_CUDA, R, "cannot query the driver %s: %s (%d)",
             Real, flrt_cuda_error_name(R), R);
    return;
  }
  if (DeviceCount <= 0) {
    initFail(FATLINK_RT_ERROR_NO_DEVICE, CUDA_ERROR_NO_DEVICE,
             "no GPU: the NVIDIA driver (%s) reports 0 devices; check "
             "`nvidia-smi` and CUDA_VISIBLE_DEVICES",
             Real);
    return;
  }
  Devices = calloc((size_t)DeviceCount, sizeof(DeviceState));
  if (!Devices) {
    initFail(FATLINK_RT_ERROR_OUT_OF_MEMORY, 0, "out of host memory");
    return;
  }
  InitStatus = FATLINK_RT_SUCCESS;
  flrt_log("driver %s: CUDA %d.%d, %d device%s", Real, DriverVersion / 1000,
           (DriverVersion % 1000) / 10, DeviceCount,
           DeviceCount == 1 ? "" : "s");
}

fatlink_rt_status flrt_driver(const flrt_driver_api **Out) {
  pthread_once(&Once, initDriver);
  if (InitStatus != FATLINK_RT_SUCCESS) {
    flrt_fail(InitStatus, "%s", InitError);
    flrt_set_cuda_error(InitCuda);
    return InitStatus;
  }
  if (Out)
    *Out = &Api;
  return FATLINK_RT_SUCCESS;
}

int flrt_driver_device_count(void) { return DeviceCount; }
int flrt_driver_version(void) { return DriverVersion; }

fatlink_rt_status flrt_driver_enter(int Device, fatlink_rt_device_desc *Desc,
                                    const char **Name) {
  fatlink_rt_status S = flrt_driver(NULL);
  if (S != FATLINK_RT_SUCCESS)
    return S;
  if (Device < 0 || Device >= DeviceCount)
    return flrt_fail(FATLINK_RT_ERROR_NO_DEVICE,
                     "device %d does not exist: this machine has %d GPU%s "
                     "(devices 0..%d)",
                     Device, DeviceCount, DeviceCount == 1 ? "" : "s",
                     DeviceCount - 1);
  DeviceState *D = &Devices[Device];
  pthread_mutex_lock(&DeviceLock);
  if (!D->Context) {
    CUdevice Dev;
    CUresult R = Api.cuDeviceGet(&Dev, Device);
    if (R == CUDA_SUCCESS)
      R = Api.cuDeviceGetAttribute(&D->Desc.cc_major,
                                   CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                   Dev);
    if (R == CUDA_SUCCESS)
      R = Api.cuDeviceGetAttribute(&D->Desc.cc_minor,
                                   CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                   Dev);
    if (R == CUDA_SUCCESS)
      R = Api.cuDeviceGetName(D->Name, (int)sizeof(D->Name) - 1, Dev);
    CUcontext Ctx = NULL;
    if (R == CUDA_SUCCESS)
      R = Api.cuDevicePrimaryCtxRetain(&Ctx, Dev);
    if (R != CUDA_SUCCESS) {
      pthread_mutex_unlock(&DeviceLock);
      return flrt_cuda_fail(R, "cannot open device %d", Device);
    }
    D->Desc.driver_version = DriverVersion;
    D->Context = Ctx;
    flrt_log("device %d: %s, sm_%d%d", Device, D->Name, D->Desc.cc_major,
             D->Desc.cc_minor);
  }
  CUcontext Ctx = D->Context;
  pthread_mutex_unlock(&DeviceLock);
  CUresult R = Api.cuCtxSetCurrent(Ctx);
  if (R != CUDA_SUCCESS)
    return flrt_cuda_fail(R, "cannot make device %d current", Device);
  if (Desc)
    *Desc = D->Desc;
  if (Name)
    *Name = D->Name;
  return flrt_ok();
}

/*===---------------------- Public device functions ----------------------===*/

fatlink_rt_status fatlink_rt_init(void) {
  fatlink_rt_status S = flrt_driver(NULL);
  return S == FATLINK_RT_SUCCESS ? flrt_ok() : S;
}

fatlink_rt_status fatlink_rt_device_count(int *Count) {
  if (!Count)
    return flrt_fail(FATLINK_RT_ERROR_INVALID_VALUE,
                     "fatlink_rt_device_count: Count is NULL");
  fatlink_rt_status S = flrt_driver(NULL);
  if (S != FATLINK_RT_SUCCESS)
    return S;
  *Count = DeviceCount;
  return flrt_ok();
}

fatlink_rt_status fatlink_rt_get_device_info(int Device,
                                         fatlink_rt_device_info *Info) {
  if (!Info)
    return flrt_fail(FATLINK_RT_ERROR_INVALID_VALUE,
                     "fatlink_rt_get_device_info: Info is NULL");
  fatlink_rt_device_desc Desc;
  const char *Name;
  fatlink_rt_status S = flrt_driver_enter(Device, &Desc, &Name);
  if (S != FATLINK_RT_SUCCESS)
    return S;
  memset(Info, 0, sizeof(*Info));
  snprintf(Info->name, sizeof(Info->name), "%s", Name);
  Info->cc_major = Desc.cc_major;
  Info->cc_minor = Desc.cc_minor;
  Info->driver_version = Desc.driver_version;
  CUdevice Dev;
  size_t Total = 0;
  if (Api.cuDeviceGet(&Dev, Device) == CUDA_SUCCESS &&
      Api.cuDeviceTotalMem(&Total, Dev) == CUDA_SUCCESS)
    Info->total_memory = Total;
  return flrt_ok();
}

fatlink_rt_status fatlink_rt_set_device(int Device) {
  fatlink_rt_status S = flrt_driver_enter(Device, NULL, NULL);
  if (S != FATLINK_RT_SUCCESS)
    return S;
  CurrentDevice = Device;
  return flrt_ok();
}

fatlink_rt_status fatlink_rt_get_device(int *Device) {
  if (!Device)
    return flrt_fail(FATLINK_RT_ERROR_INVALID_VALUE,
                     "fatlink_rt_get_device: Device is NULL");
  *Device = CurrentDevice;
  return flrt_ok();
}
