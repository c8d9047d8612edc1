//===- fatlink/runtime.hpp - C++ front end of fatlink's host runtime ------===//
//
// For C++ hosts that launch fatlink-linked kernels without the CUDA runtime
// (Rust kernels have no host stubs, so even CUDA C++ hosts use this for
// them). Header-only over fatlink/runtime.h; C++17; no exceptions: every
// fallible call returns a Status (or Expected<T>) that carries the runtime's
// message, and [[nodiscard]] keeps callers from dropping it.
//
//   auto K = fatlink::rt::Kernel::get("saxpy");
//   if (!K) { std::cerr << K.status().message() << "\n"; return 1; }
//   auto X = fatlink::rt::DeviceBuffer<float>::from(HostX);
//   Status S = K->launch({N / 256}, {256}, 2.0f, X->get(), Y->get());
//
// Launch arguments are passed by value; their sizes are checked against the
// parameter sizes fatlink recorded at link time. Pass device buffers with
// .get() (a fatlink_rt_devptr, 8 bytes, like a device pointer parameter).
//===----------------------------------------------------------------------===//

#ifndef FATLINK_RUNTIME_HPP
#define FATLINK_RUNTIME_HPP

#include "fatlink/runtime.h"

#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace fatlink {
namespace rt {

class [[nodiscard]] Status {
public:
  Status() = default;
  Status(fatlink_rt_status Code, std::string Message)
      : Code(Code), Message(std::move(Message)) {}
  static Status fromLast(fatlink_rt_status Code) {
    Status S;
    S.Code = Code;
    if (Code != FATLINK_RT_SUCCESS)
      S.Message = fatlink_rt_last_error();
    return S;
  }
  bool ok() const { return Code == FATLINK_RT_SUCCESS; }
  explicit operator bool() const { return ok(); }
  fatlink_rt_status code() const { return Code; }
  const char *name() const { return fatlink_rt_status_name(Code); }
  const std::string &message() const { return Message; }

private:
  fatlink_rt_status Code = FATLINK_RT_SUCCESS;
  std::string Message;
};

// A value or the Status that prevented it.
template <typename T> class [[nodiscard]] Expected {
public:
  Expected(T V) : Value(std::move(V)), HasValue(true) {}
  Expected(Status S) : Err(std::move(S)) {}
  explicit operator bool() const { return HasValue; }
  const Status &status() const { return Err; }
  T &operator*() { return Value; }
  T *operator->() { return &Value; }

private:
  T Value{};
  Status Err;
  bool HasValue = false;
};

struct Dim3 {
  Dim3(uint32_t X = 1, uint32_t Y = 1, uint32_t Z = 1) : X(X), Y(Y), Z(Z) {}
  uint32_t X, Y, Z;
  fatlink_rt_dim3 c() const { return {X, Y, Z}; }
};

inline Status init() { return Status::fromLast(fatlink_rt_init()); }
inline Status synchronize() { return Status::fromLast(fatlink_rt_synchronize()); }
inline Status setDevice(int Device) {
  return Status::fromLast(fatlink_rt_set_device(Device));
}

class Kernel {
public:
  Kernel() = default;
  explicit Kernel(fatlink_rt_kernel K) : Handle(K) {}

  // Finds the kernel and loads its module on the current device.
  static Expected<Kernel> get(const char *Name) {
    fatlink_rt_kernel K = nullptr;
    fatlink_rt_status S = fatlink_rt_get_kernel(Name, &K);
    if (S != FATLINK_RT_SUCCESS)
      return Status::fromLast(S);
    return Kernel(K);
  }

  fatlink_rt_kernel handle() const { return Handle; }

  // Launches with Args by value (trivially copyable types only).
  template <typename... Args>
  Status launch(Dim3 Grid, Dim3 Block, Args... A) const {
    return launchOn(Grid, Block, 0, nullptr, A...);
  }

  template <typename... Args>
  Status launchOn(Dim3 Grid, Dim3 Block, uint32_t SharedMemBytes,
                  fatlink_rt_stream Stream, Args... A) const {
    static_assert((std::is_trivially_copyable<Args>::value && ...),
                  "kernel arguments must be trivially copyable");
    void *Ptrs[sizeof...(Args) + 1] = {static_cast<void *>(&A)...};
    size_t Sizes[sizeof...(Args) + 1] = {sizeof(Args)...};
    return Status::fromLast(fatlink_rt_launch(Handle, Grid.c(), Block.c(),
                                              SharedMemBytes, Stream, Ptrs,
                                              Sizes, sizeof...(Args)));
  }

private:
  fatlink_rt_kernel Handle = nullptr;
};

// Device memory for N elements of T, freed on destruction.
template <typename T> class DeviceBuffer {
  static_assert(std::is_trivially_copyable<T>::value,
                "device buffers hold trivially copyable types");

public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  DeviceBuffer(DeviceBuffer &&O) noexcept : Ptr(O.Ptr), Count(O.Count) {
    O.Ptr = 0;
    O.Count = 0;
  }
  DeviceBuffer &operator=(DeviceBuffer &&O) noexcept {
    std::swap(Ptr, O.Ptr);
    std::swap(Count, O.Count);
    return *this;
  }
  ~DeviceBuffer() {
    if (Ptr)
      (void)fatlink_rt_free(Ptr);
  }

  static Expected<DeviceBuffer> zeroed(size_t N) {
    DeviceBuffer B;
    fatlink_rt_status S = fatlink_rt_malloc(&B.Ptr, N * sizeof(T));
    if (S == FATLINK_RT_SUCCESS)
      S = fatlink_rt_memset(B.Ptr, 0, N * sizeof(T));
    if (S != FATLINK_RT_SUCCESS)
      return Status::fromLast(S);
    B.Count = N;
    return B;
  }
  static Expected<DeviceBuffer> from(const std::vector<T> &Host) {
    Expected<DeviceBuffer> B = zeroed(Host.size());
    if (!B)
      return B;
    Status S = B->copyFrom(Host);
    if (!S)
      return S;
    return B;
  }

  Status copyFrom(const std::vector<T> &Host) {
    if (Host.size() != Count)
      return Status(FATLINK_RT_ERROR_INVALID_VALUE,
                    "DeviceBuffer::copyFrom: the host vector has " +
                        std::to_string(Host.size()) +
                        " elements, the buffer " + std::to_string(Count));
    return Status::fromLast(
        fatlink_rt_memcpy_htod(Ptr, Host.data(), Count * sizeof(T)));
  }
  Status copyTo(std::vector<T> &Host) const {
    Host.resize(Count);
    return Status::fromLast(
        fatlink_rt_memcpy_dtoh(Host.data(), Ptr, Count * sizeof(T)));
  }

  fatlink_rt_devptr get() const { return Ptr; }
  size_t size() const { return Count; }

private:
  fatlink_rt_devptr Ptr = 0;
  size_t Count = 0;
};

} // namespace rt
} // namespace fatlink

#endif // FATLINK_RUNTIME_HPP
