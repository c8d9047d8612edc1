//! Streams and events over the C API (`fatlink_rt_stream_*`,
//! `fatlink_rt_event_*`): a [`Stream`] runs its launches in order, an
//! [`Event`] marks a point in a stream's work for waiting and timing.
//! Both belong to the device that was current when they were made.

use crate::{check, sys, Result};
use std::fmt;

/// A CUDA stream on one device: launches queued on it run in order, and
/// may overlap those of other streams. Dropping it waits for its work, then
/// destroys it. Usable from any thread whose current device is its device.
pub struct Stream {
    pub(crate) raw: sys::Stream,
    device: i32,
}

// Safety: a CUstream may be used from any thread; the C API is thread-safe.
unsafe impl Send for Stream {}
unsafe impl Sync for Stream {}

fn current_device() -> Result<i32> {
    let mut d = 0;
    check(unsafe { sys::fatlink_rt_get_device(&mut d) })?;
    Ok(d)
}

impl Stream {
    /// A new stream on the calling thread's current device (loads the
    /// driver on first use).
    pub fn new() -> Result<Stream> {
        let device = current_device()?;
        let mut raw: sys::Stream = std::ptr::null_mut();
        check(unsafe { sys::fatlink_rt_stream_create(&mut raw) })?;
        Ok(Stream { raw, device })
    }

    /// The device the stream belongs to.
    pub fn device(&self) -> usize {
        self.device as usize
    }

    /// Waits until every launch queued on the stream has finished; faults
    /// of its kernels are reported here. The borrows of a typed launch end
    /// with its [`PendingLaunch`](crate::PendingLaunch) guard, not here:
    /// call [`wait`](crate::PendingLaunch::wait) on the guard (or drop it)
    /// to use its buffers again.
    pub fn synchronize(&self) -> Result<()> {
        check(unsafe { sys::fatlink_rt_stream_synchronize(self.raw) })
    }

    /// Work queued on this stream from now on waits (on the device) for
    /// `event`.
    pub fn wait_event(&self, event: &Event) -> Result<()> {
        check(unsafe { sys::fatlink_rt_stream_wait_event(self.raw, event.raw) })
    }

    /// Launches need the stream's device to be the thread's current one
    /// (the kernel's module is loaded there).
    pub(crate) fn check_device(&self) -> Result<()> {
        let current = current_device()?;
        if current == self.device {
            return Ok(());
        }
        Err(crate::invalid(format!(
            "the stream belongs to device {} but this thread's current device is {current}: \
             call fatlink_rt::set_device({}) before launching on it",
            self.device, self.device
        )))
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // Nothing useful to do with an error while dropping.
        unsafe {
            sys::fatlink_rt_stream_synchronize(self.raw);
            sys::fatlink_rt_stream_destroy(self.raw);
        }
    }
}

impl fmt::Debug for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Stream({:p} on device {})", self.raw, self.device)
    }
}

/// A CUDA event: a point in a stream's work. Record it on a stream, then
/// wait for it or time the work between two events.
///
/// ```no_run
/// # fn main() -> fatlink_rt::Result<()> {
/// # let stream = fatlink_rt::Stream::new()?;
/// let (start, end) = (fatlink_rt::Event::new()?, fatlink_rt::Event::new()?);
/// start.record(&stream)?;
/// // ... launches on `stream` ...
/// end.record(&stream)?;
/// end.synchronize()?;
/// println!("{} ms", start.elapsed_ms(&end)?);
/// # Ok(()) }
/// ```
pub struct Event {
    raw: sys::Event,
}

// Safety: a CUevent may be used from any thread; the C API is thread-safe.
unsafe impl Send for Event {}
unsafe impl Sync for Event {}

impl Event {
    /// A new event on the calling thread's current device.
    pub fn new() -> Result<Event> {
        let mut raw: sys::Event = std::ptr::null_mut();
        check(unsafe { sys::fatlink_rt_event_create(&mut raw) })?;
        Ok(Event { raw })
    }

    /// Marks the current end of `stream`'s work: the event completes when
    /// everything queued on `stream` before it has.
    pub fn record(&self, stream: &Stream) -> Result<()> {
        check(unsafe { sys::fatlink_rt_event_record(self.raw, stream.raw) })
    }

    /// Waits for the work before the event.
    pub fn synchronize(&self) -> Result<()> {
        check(unsafe { sys::fatlink_rt_event_synchronize(self.raw) })
    }

    /// Milliseconds from this event to `end`; both must have been recorded
    /// and completed (synchronize `end` first).
    pub fn elapsed_ms(&self, end: &Event) -> Result<f32> {
        let mut ms = 0f32;
        check(unsafe { sys::fatlink_rt_event_elapsed_ms(self.raw, end.raw, &mut ms) })?;
        Ok(ms)
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        unsafe {
            sys::fatlink_rt_event_destroy(self.raw);
        }
    }
}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Event({:p})", self.raw)
    }
}
