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
//   // or on a stream: auto St = fatlink::rt::Stream::create();
//   //   K->launchOn({N / 256}, {256}, 0, St->get(), 2.0f, *X, *Y);
//   //   St->synchronize();
//
// Launch arguments are passed by value and checked against the kernel's
// manifest, which fatlink recorded at link time (docs/abi.md): an integer,
// a floating-point number, a pointer or a struct where the kernel takes
// one, its size, and a pointer's element where both sides know it. Pass a
// DeviceBuffer<T> itself (checked as a T *) or its .get() (a
// fatlink_rt_devptr, which passes for any pointer). Kernel::find and
// check<Args...>() do the same without a driver.
//===----------------------------------------------------------------------===//

#ifndef FATLINK_RUNTIME_HPP
#define FATLINK_RUNTIME_HPP

#include "fatlink/runtime.h"

#include <cstddef>
#include <string>
#include <tuple>
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

// A stream on the current device (fatlink_rt_stream_create): launches
// queued on it (Kernel::launchOn(Grid, Block, Shmem, S.get(), Args...))
// run in order. Destroying it waits for its work first. Move-only.
class Stream {
public:
  Stream() = default;
  Stream(const Stream &) = delete;
  Stream &operator=(const Stream &) = delete;
  Stream(Stream &&O) noexcept : Handle(O.Handle) { O.Handle = nullptr; }
  Stream &operator=(Stream &&O) noexcept {
    std::swap(Handle, O.Handle);
    return *this;
  }
  ~Stream() {
    if (Handle) {
      (void)fatlink_rt_stream_synchronize(Handle);
      (void)fatlink_rt_stream_destroy(Handle);
    }
  }

  static Expected<Stream> create() {
    Stream S;
    fatlink_rt_status St = fatlink_rt_stream_create(&S.Handle);
    if (St != FATLINK_RT_SUCCESS)
      return Status::fromLast(St);
    return S;
  }
  // Waits for the work queued on the stream; kernel faults surface here.
  Status synchronize() const {
    return Status::fromLast(fatlink_rt_stream_synchronize(Handle));
  }
  fatlink_rt_stream get() const { return Handle; }

private:
  fatlink_rt_stream Handle = nullptr;
};

// An event (fatlink_rt_event_create): a point in a stream's work, for
// waiting (Stream work or the host) and timing. Move-only.
class Event {
public:
  Event() = default;
  Event(const Event &) = delete;
  Event &operator=(const Event &) = delete;
  Event(Event &&O) noexcept : Handle(O.Handle) { O.Handle = nullptr; }
  Event &operator=(Event &&O) noexcept {
    std::swap(Handle, O.Handle);
    return *this;
  }
  ~Event() {
    if (Handle)
      (void)fatlink_rt_event_destroy(Handle);
  }

  static Expected<Event> create() {
    Event E;
    fatlink_rt_status St = fatlink_rt_event_create(&E.Handle);
    if (St != FATLINK_RT_SUCCESS)
      return Status::fromLast(St);
    return E;
  }
  Status record(const Stream &S) const {
    return Status::fromLast(fatlink_rt_event_record(Handle, S.get()));
  }
  Status synchronize() const {
    return Status::fromLast(fatlink_rt_event_synchronize(Handle));
  }
  // Work queued on S from now on waits for this event.
  Status waitOn(const Stream &S) const {
    return Status::fromLast(fatlink_rt_stream_wait_event(S.get(), Handle));
  }
  // Milliseconds from this event to End (both recorded and complete).
  Status elapsedMs(const Event &End, float &Ms) const {
    return Status::fromLast(
        fatlink_rt_event_elapsed_ms(Handle, End.Handle, &Ms));
  }
  fatlink_rt_event get() const { return Handle; }

private:
  fatlink_rt_event Handle = nullptr;
};

// How an argument of type T is passed and described to the checks
// (fatlink_rt_kernel_check_args); defined after DeviceBuffer.
template <typename T> struct LaunchArg;

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

  // Finds the kernel without loading its module (no driver needed), for
  // check(); a launch loads the module.
  static Expected<Kernel> find(const char *Name) {
    fatlink_rt_kernel K = nullptr;
    fatlink_rt_status S = fatlink_rt_find_kernel(Name, &K);
    if (S != FATLINK_RT_SUCCESS)
      return Status::fromLast(S);
    return Kernel(K);
  }

  fatlink_rt_kernel handle() const { return Handle; }

  // Whether arguments of types Args fit the kernel's parameters, by the
  // manifest fatlink recorded at link time: integer, floating-point,
  // pointer (and its element) or struct, and size. No driver needed.
  template <typename... Args> Status check() const {
    fatlink_rt_arg Descs[sizeof...(Args) + 1] = {
        LaunchArg<std::decay_t<Args>>::describe()...};
    return Status::fromLast(
        fatlink_rt_kernel_check_args(Handle, Descs, sizeof...(Args)));
  }

  // Launches with Args (trivially copyable values, or DeviceBuffer<T>,
  // passed as its device pointer) after check<Args...>().
  template <typename... Args>
  Status launch(Dim3 Grid, Dim3 Block, const Args &...A) const {
    return launchOn(Grid, Block, 0, nullptr, A...);
  }

  template <typename... Args>
  Status launchOn(Dim3 Grid, Dim3 Block, uint32_t SharedMemBytes,
                  fatlink_rt_stream Stream, const Args &...A) const {
    return launchWith(fatlink_rt_launch, Grid, Block, SharedMemBytes, Stream,
                      A...);
  }

  // As launchOn, for a kernel that synchronizes its whole grid
  // (cooperative groups' grid.sync()): fatlink_rt_launch_cooperative, which
  // refuses a grid whose blocks cannot all be resident at once.
  template <typename... Args>
  Status launchCooperative(Dim3 Grid, Dim3 Block, uint32_t SharedMemBytes,
                           fatlink_rt_stream Stream, const Args &...A) const {
    return launchWith(fatlink_rt_launch_cooperative, Grid, Block,
                      SharedMemBytes, Stream, A...);
  }

private:
  template <typename Launch, typename... Args>
  Status launchWith(Launch L, Dim3 Grid, Dim3 Block, uint32_t SharedMemBytes,
                    fatlink_rt_stream Stream, const Args &...A) const {
    static_assert(
        (std::is_trivially_copyable<typename LaunchArg<Args>::Value>::value &&
         ...),
        "kernel arguments must be trivially copyable");
    if (Status S = check<Args...>(); !S)
      return S;
    std::tuple<typename LaunchArg<Args>::Value...> Values{
        LaunchArg<Args>::value(A)...};
    return std::apply(
        [&](auto &...V) {
          void *Ptrs[sizeof...(Args) + 1] = {static_cast<void *>(&V)...};
          size_t Sizes[sizeof...(Args) + 1] = {sizeof(V)...};
          return Status::fromLast(L(Handle, Grid.c(), Block.c(), SharedMemBytes,
                                    Stream, Ptrs, Sizes, sizeof...(Args)));
        },
        Values);
  }

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

namespace detail {
template <typename T> constexpr fatlink_rt_param_kind kindOf() {
  if constexpr (std::is_integral<T>::value)
    return std::is_signed<T>::value ? FATLINK_RT_PARAM_SINT
                                    : FATLINK_RT_PARAM_UINT;
  else if constexpr (std::is_floating_point<T>::value)
    return FATLINK_RT_PARAM_FLOAT;
  else if constexpr (std::is_pointer<T>::value)
    return FATLINK_RT_PARAM_POINTER;
  else
    return FATLINK_RT_PARAM_AGGREGATE;
}

// The C++ name of an arithmetic type, for messages; "" otherwise.
template <typename T> constexpr const char *nameOf() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same<U, bool>::value) return "bool";
  else if constexpr (std::is_same<U, char>::value) return "char";
  else if constexpr (std::is_same<U, signed char>::value) return "signed char";
  else if constexpr (std::is_same<U, unsigned char>::value) return "unsigned char";
  else if constexpr (std::is_same<U, short>::value) return "short";
  else if constexpr (std::is_same<U, unsigned short>::value) return "unsigned short";
  else if constexpr (std::is_same<U, int>::value) return "int";
  else if constexpr (std::is_same<U, unsigned>::value) return "unsigned int";
  else if constexpr (std::is_same<U, long>::value) return "long";
  else if constexpr (std::is_same<U, unsigned long>::value) return "unsigned long";
  else if constexpr (std::is_same<U, long long>::value) return "long long";
  else if constexpr (std::is_same<U, unsigned long long>::value)
    return "unsigned long long";
  else if constexpr (std::is_same<U, float>::value) return "float";
  else if constexpr (std::is_same<U, double>::value) return "double";
  else return "";
}

// An argument whose element is E: a pointer E *, or DeviceBuffer<E>.
template <typename E> fatlink_rt_arg pointerTo(const char *Type) {
  fatlink_rt_arg A{};
  A.kind = FATLINK_RT_PARAM_POINTER;
  A.size = 8;
  if constexpr (std::is_arithmetic<E>::value) {
    A.elem_kind = kindOf<E>();
    A.elem_size = sizeof(E);
  }
  A.type = Type;
  return A;
}
} // namespace detail

template <typename T> struct LaunchArg {
  using Value = T;
  static const T &value(const T &V) { return V; }
  static fatlink_rt_arg describe() {
    if constexpr (std::is_pointer<T>::value) {
      using E = std::remove_pointer_t<T>;
      static const std::string Name =
          std::string(std::is_const<E>::value ? "const " : "") +
          (*detail::nameOf<E>() ? detail::nameOf<E>() : "void") + " *";
      return detail::pointerTo<std::remove_cv_t<E>>(Name.c_str());
    } else {
      fatlink_rt_arg A{};
      A.kind = detail::kindOf<T>();
      A.size = sizeof(T);
      // A fatlink_rt_devptr (DeviceBuffer::get()) is a 64-bit unsigned.
      A.devptr = A.kind == FATLINK_RT_PARAM_UINT && sizeof(T) == 8;
      A.type = *detail::nameOf<T>() ? detail::nameOf<T>() : "a struct";
      return A;
    }
  }
};

// A DeviceBuffer<T> is passed as its device pointer, a T *.
template <typename T> struct LaunchArg<DeviceBuffer<T>> {
  using Value = fatlink_rt_devptr;
  static Value value(const DeviceBuffer<T> &B) { return B.get(); }
  static fatlink_rt_arg describe() {
    static const std::string Name =
        std::string("DeviceBuffer<") +
        (*detail::nameOf<T>() ? detail::nameOf<T>() : "struct") + ">";
    return detail::pointerTo<T>(Name.c_str());
  }
};

} // namespace rt
} // namespace fatlink

#endif // FATLINK_RUNTIME_HPP
