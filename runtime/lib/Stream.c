/*===- runtime/lib/Stream.c - Streams and events --------------------------===*\
 *
 * Thin wrappers over the driver's streams (cuStream*) and events
 * (cuEvent*), so that hosts that do not use the CUDA runtime (Rust, C) can
 * queue launches, wait for them and time them. Handles are the driver's own
 * CUstream / CUevent values: nothing is allocated here, and handles from
 * the CUDA runtime work too. Each call enters the calling thread's current
 * device first (the driver is loaded on first use, as for every device
 * call), and every failure names the call, the device and the CUresult.
 *
 * Policy: streams are created with CU_STREAM_DEFAULT, so they synchronize
 * with the legacy default stream that fatlink_rt_memcpy_* use: a copy
 * never overlaps a launch queued before it on any stream. Events are
 * created with CU_EVENT_DEFAULT (timing enabled).
\*===----------------------------------------------------------------------===*/

#include "Internal.h"

#include <stddef.h>

enum { CU_STREAM_DEFAULT = 0, CU_EVENT_DEFAULT = 0 };

/* Enters the current device and returns its driver table, or NULL with the
 * failure set in *S. */
static const flrt_driver_api *enter(int *Device, fatlink_rt_status *S) {
  *Device = flrt_current_device();
  *S = flrt_driver_enter(*Device, NULL, NULL);
  if (*S != FATLINK_RT_SUCCESS)
    return NULL;
  const flrt_driver_api *Api;
  flrt_driver(&Api);
  return Api;
}

fatlink_rt_status fatlink_rt_stream_create(fatlink_rt_stream *Out) {
  if (!Out)
    return flrt_fail(FATLINK_RT_ERROR_INVALID_VALUE,
                     "fatlink_rt_stream_create: Out is NULL");
  *Out = NULL;
  int Device;
  fatlink_rt_status S;
  const flrt_driver_api *Api = enter(&Device, &S);
  if (!Api)
    return S;
  CUstream Stream = NULL;
  CUresult R = Api->cuStreamCreate(&Stream, CU_STREAM_DEFAULT);
  if (R != CUDA_SUCCESS)
    return flrt_cuda_fail(R, "cannot create a stream on device %d", Device);
  *Out = Stream;
  return flrt_ok();
}

fatlink_rt_status fatlink_rt_stream_destroy(fatlink_rt_stream Stream) {
  if (!Stream)
    return flrt_fail(FATLINK_RT_ERROR_INVALID_VALUE,
                     "fatlink_rt_stream_destroy: the default stream (NULL) "
                     "cannot be destroyed");
  int Device;
  fatlink_rt_status S;
  const flrt_driver_api *Api = enter(&Device, &S);
  if (!Api)
    return S;
  CUresult R = Api->cuStreamDestroy(Stream);
  if (R != CUDA_SUCCESS)
    return flrt_cuda_fail(R, "cannot destroy stream %p (device %d)", Stream,
                          Device);
  return flrt_ok();
}

fatlink_rt_status fatlink_rt_stream_synchronize(fatlink_rt_stream Stream) {
  int Device;
  fatlink_rt_status S;
  const flrt_driver_api *Api = enter(&Device, &S);
  if (!Api)
    return S;
  CUresult R = Api->cuStreamSynchronize(Stream);
  if (R != CUDA_SUCCESS)
    return flrt_cuda_fail(R,
                          "work on stream %p (device %d) failed (a kernel "
                          "launched on it faulted or timed out)",
                          Stream, Device);
  return flrt_ok();
}

fatlink_rt_status fatlink_rt_event_create(fatlink_rt_event *Out) {
  if (!Out)
    return flrt_fail(FATLINK_RT_ERROR_INVALID_VALUE,
                     "fatlink_rt_event_create: Out is NULL");
  *Out = NULL;
  int Device;
  fatlink_rt_status S;
  const flrt_driver_api *Api = enter(&Device, &S);
  if (!Api)
    return S;
  CUevent Event = NULL;
  CUresult R = Api->cuEventCreate(&Event, CU_EVENT_DEFAULT);
  if (R != CUDA_SUCCESS)
    return flrt_cuda_fail(R, "cannot create an event on device %d", Device);
  *Out = Event;
  return flrt_ok();
}

fatlink_rt_status fatlink_rt_event_destroy(fatlink_rt_event Event) {
  if (!Event)
    return flrt_fail(FATLINK_RT_ERROR_INVALID_VALUE,
                     "fatlink_rt_event_destroy: the event is NULL");
  int Device;
  fatlink_rt_status S;
  const flrt_driver_api *Api = enter(&Device, &S);
  if (!Api)
    return S;
  CUresult R = Api->cuEventDestroy(Event);
  if (R != CUDA_SUCCESS)
    return flrt_cuda_fail(R, "cannot destroy event %p (device %d)", Event,
                          Device);
  return flrt_ok();
}

fatlink_rt_status fatlink_rt_event_record(fatlink_rt_event Event,
                                          fatlink_rt_stream Stream) {
  if (!Event)
    return flrt_fail(FATLINK_RT_ERROR_INVALID_VALUE,
                     "fatlink_rt_event_record: the event is NULL");
  int Device;
  fatlink_rt_status S;
  const flrt_driver_api *Api = enter(&Device, &S);
  if (!Api)
    return S;
  CUresult R = Api->cuEventRecord(Event, Stream);
  if (R != CUDA_SUCCESS)
    return flrt_cuda_fail(R,
                          "cannot record event %p on stream %p (device %d; "
                          "both must belong to the same device)",
                          Event, Stream, Device);
  return flrt_ok();
}

fatlink_rt_status fatlink_rt_event_synchronize(fatlink_rt_event Event) {
  if (!Event)
    return flrt_fail(FATLINK_RT_ERROR_INVALID_VALUE,
                     "fatlink_rt_event_synchronize: the event is NULL");
  int Device;
  fatlink_rt_status S;
  const flrt_driver_api *Api = enter(&Device, &S);
  if (!Api)
    return S;
  CUresult R = Api->cuEventSynchronize(Event);
  if (R != CUDA_SUCCESS)
    return flrt_cuda_fail(R,
                          "work before event %p (device %d) failed (a kernel "
                          "launched before it faulted or timed out)",
                          Event, Device);
  return flrt_ok();
}

fatlink_rt_status fatlink_rt_stream_wait_event(fatlink_rt_stream Stream,
                                               fatlink_rt_event Event) {
  if (!Event)
    return flrt_fail(FATLINK_RT_ERROR_INVALID_VALUE,
                     "fatlink_rt_stream_wait_event: the event is NULL");
  int Device;
  fatlink_rt_status S;
  const flrt_driver_api *Api = enter(&Device, &S);
  if (!Api)
    return S;
  CUresult R = Api->cuStreamWaitEvent(Stream, Event, 0);
  if (R != CUDA_SUCCESS)
    return flrt_cuda_fail(R, "stream %p cannot wait for event %p (device %d)",
                          Stream, Event, Device);
  return flrt_ok();
}

fatlink_rt_status fatlink_rt_event_elapsed_ms(fatlink_rt_event Start,
                                              fatlink_rt_event End,
                                              float *Milliseconds) {
  if (!Start || !End || !Milliseconds)
    return flrt_fail(FATLINK_RT_ERROR_INVALID_VALUE,
                     "fatlink_rt_event_elapsed_ms: NULL argument");
  *Milliseconds = 0;
  int Device;
  fatlink_rt_status S;
  const flrt_driver_api *Api = enter(&Device, &S);
  if (!Api)
    return S;
  CUresult R = Api->cuEventElapsedTime(Milliseconds, Start, End);
  if (R != CUDA_SUCCESS)
    return flrt_cuda_fail(R,
                          "cannot time events %p to %p (device %d): both must "
                          "have been recorded and completed (synchronize the "
                          "end event first)",
                          Start, End, Device);
  return flrt_ok();
}
