//! Find and launch the GPU kernels that `fatlink device-link` embedded in
//! this program, through the CUDA driver API (loaded at run time).
//!
//! ```no_run
//! use fatlink_rt::{DeviceBuffer, DeviceSlice, DeviceSliceMut, Kernel, Stream};
//! # fn main() -> fatlink_rt::Result<()> {
//! // Checked against the kernel's manifest here, without a driver.
//! let saxpy = Kernel::<(f32, DeviceSlice<f32>, DeviceSliceMut<f32>, u32)>::get("saxpy")?;
//! let x = DeviceBuffer::from_slice(&[1.0f32; 256])?;
//! let mut y = DeviceBuffer::from_slice(&[2.0f32; 256])?;
//! let stream = Stream::new()?;
//! // Safety: saxpy touches n = 256 elements of x and y, which both hold.
//! let pending = unsafe { saxpy.launch(&stream, 1, 256, 0, (3.0, &x, &mut y, 256))? };
//! // `y` stays borrowed until the launch is waited for: reading it here
//! // would not compile.
//! pending.wait()?;
//! let host = y.to_vec()?;
//! # Ok(()) }
//! ```
//!
//! [`RawKernel`] is the untyped handle: any [`KernelArg`]s, sizes checked.
//!
//! Every error carries the runtime's message, which says what failed and
//! what to do (no driver, a driver too old for the embedded PTX, no image
//! for this GPU, an unknown kernel name with the closest names, arguments
//! that do not match the kernel's parameters).
//!
//! Linking: this crate has no build script. The binary that uses it links
//! `libfatlink_rt.a` and the `kernels.o` from `fatlink device-link`; a
//! build.rs of the binary's package does it with
//! `cargo:rustc-link-search=native=<dir of libfatlink_rt.a>` and
//! `cargo:rustc-link-arg=<path of kernels.o>` (docs/runtime.md).
#![deny(missing_docs)]

use std::ffi::{c_char, c_void, CStr, CString};
use std::fmt;
use std::marker::PhantomData;

mod stream;
mod typed;

pub use stream::{Event, Stream};
pub use typed::{DeviceSlice, DeviceSliceMut, Kernel, KernelParam, KernelParams, PendingLaunch};

mod sys {
    use std::ffi::{c_char, c_int, c_void};

    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    pub struct Image {
        pub kind: c_int,
        pub sm: u32,
        pub variant: c_char,
        pub ptx_major: u16,
        pub ptx_minor: u16,
        pub compression: c_int,
        pub size: u64,
    }

    #[repr(C)]
    pub struct ModuleInfo {
        pub origin: *const c_char,
        pub fatbin_size: u64,
        pub num_kernels: u32,
        pub num_images: u32,
    }

    #[repr(C)]
    pub struct KernelInfo {
        pub name: *const c_char,
        pub module: u32,
        pub num_params: u32,
        pub param_sizes: *const u32,
    }

    #[repr(C)]
    #[derive(Clone, Copy)]
    pub struct Dim3 {
        pub x: u32,
        pub y: u32,
        pub z: u32,
    }

    #[repr(C)]
    pub struct DeviceInfo {
        pub name: [c_char; 256],
        pub cc_major: c_int,
        pub cc_minor: c_int,
        pub driver_version: c_int,
        pub total_memory: u64,
    }

    #[repr(C)]
    pub struct Param {
        pub kind: c_int,
        pub flags: u32,
        pub addrspace: u32,
        pub elem_kind: c_int,
        pub size: u32,
        pub align: u32,
        pub elem_size: u32,
        pub type_: *const c_char,
        pub name: *const c_char,
    }

    #[repr(C)]
    pub struct Manifest {
        pub language: c_int,
        pub num_params: u32,
        pub origin: *const c_char,
        pub max_threads: [u32; 3],
        pub req_threads: [u32; 3],
        pub min_blocks: u32,
        pub cluster: [u32; 3],
    }

    pub type Kernel = *mut c_void;
    pub type Stream = *mut c_void;
    pub type Event = *mut c_void;

    /// `fatlink_rt_launch` or `fatlink_rt_launch_cooperative`, which take
    /// the same arguments: the launch paths share their marshalling and
    /// differ only in which one they call.
    pub type LaunchFn = unsafe extern "C" fn(
        Kernel,
        Dim3,
        Dim3,
        u32,
        Stream,
        *mut *mut c_void,
        *const usize,
        u32,
    ) -> c_int;

    // `-bundle`: the archive is not copied into this rlib; the final link
    // finds it through the binary's own -L (see the crate docs).
    #[link(name = "fatlink_rt", kind = "static", modifiers = "-bundle")]
    extern "C" {
        pub fn fatlink_rt_last_error() -> *const c_char;
        pub fn fatlink_rt_last_cuda_error() -> c_int;
        pub fn fatlink_rt_module_count() -> u32;
        pub fn fatlink_rt_get_module_info(m: u32, info: *mut ModuleInfo) -> c_int;
        pub fn fatlink_rt_module_image(m: u32, i: u32, out: *mut Image) -> c_int;
        pub fn fatlink_rt_module_kernel(m: u32, k: u32, info: *mut KernelInfo) -> c_int;
        pub fn fatlink_rt_init() -> c_int;
        pub fn fatlink_rt_device_count(n: *mut c_int) -> c_int;
        pub fn fatlink_rt_get_device_info(d: c_int, info: *mut DeviceInfo) -> c_int;
        pub fn fatlink_rt_set_device(d: c_int) -> c_int;
        pub fn fatlink_rt_get_kernel(name: *const c_char, out: *mut Kernel) -> c_int;
        pub fn fatlink_rt_kernel_get_info(k: Kernel, info: *mut KernelInfo) -> c_int;
        pub fn fatlink_rt_find_kernel(name: *const c_char, out: *mut Kernel) -> c_int;
        pub fn fatlink_rt_kernel_get_manifest(k: Kernel, out: *mut Manifest) -> c_int;
        pub fn fatlink_rt_kernel_get_param(k: Kernel, i: u32, out: *mut Param) -> c_int;
        pub fn fatlink_rt_get_device(d: *mut c_int) -> c_int;
        pub fn fatlink_rt_stream_create(out: *mut Stream) -> c_int;
        pub fn fatlink_rt_stream_destroy(s: Stream) -> c_int;
        pub fn fatlink_rt_stream_synchronize(s: Stream) -> c_int;
        pub fn fatlink_rt_stream_wait_event(s: Stream, e: Event) -> c_int;
        pub fn fatlink_rt_event_create(out: *mut Event) -> c_int;
        pub fn fatlink_rt_event_destroy(e: Event) -> c_int;
        pub fn fatlink_rt_event_record(e: Event, s: Stream) -> c_int;
        pub fn fatlink_rt_event_synchronize(e: Event) -> c_int;
        pub fn fatlink_rt_event_elapsed_ms(start: Event, end: Event, ms: *mut f32) -> c_int;
        pub fn fatlink_rt_launch(
            k: Kernel,
            grid: Dim3,
            block: Dim3,
            shared: u32,
            stream: *mut c_void,
            args: *mut *mut c_void,
            sizes: *const usize,
            n: u32,
        ) -> c_int;
        pub fn fatlink_rt_launch_cooperative(
            k: Kernel,
            grid: Dim3,
            block: Dim3,
            shared: u32,
            stream: *mut c_void,
            args: *mut *mut c_void,
            sizes: *const usize,
            n: u32,
        ) -> c_int;
        pub fn fatlink_rt_synchronize() -> c_int;
        pub fn fatlink_rt_malloc(p: *mut u64, bytes: usize) -> c_int;
        pub fn fatlink_rt_free(p: u64) -> c_int;
        pub fn fatlink_rt_memset(p: u64, v: u8, bytes: usize) -> c_int;
        pub fn fatlink_rt_memcpy_htod(dst: u64, src: *const c_void, bytes: usize) -> c_int;
        pub fn fatlink_rt_memcpy_dtoh(dst: *mut c_void, src: u64, bytes: usize) -> c_int;
    }
}

/// What kind of failure an [`Error`] is (the C API's `fatlink_rt_status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// A NULL or out-of-range argument.
    InvalidValue,
    /// No NVIDIA driver (libcuda.so.1 missing, or the toolkit's stub).
    NoDriver,
    /// The driver found no such GPU.
    NoDevice,
    /// The driver is older than the embedded PTX ISA or compression needs.
    DriverTooOld,
    /// No cubin for this GPU and no PTX that can be JIT-compiled for it.
    NoImage,
    /// No kernel of that name (the message suggests the closest names).
    KernelNotFound,
    /// Argument count or sizes differ from the kernel's parameters.
    Arguments,
    /// A malformed module, or one of a shared library that was unloaded.
    BadModule,
    /// The device is out of memory.
    OutOfMemory,
    /// Another CUDA driver error; see [`Error::cuda_error`].
    Cuda,
    /// A status this crate does not know.
    Other(i32),
}

impl ErrorKind {
    fn from_status(s: i32) -> ErrorKind {
        match s {
            1 => ErrorKind::InvalidValue,
            2 => ErrorKind::NoDriver,
            3 => ErrorKind::NoDevice,
            4 => ErrorKind::DriverTooOld,
            5 => ErrorKind::NoImage,
            6 => ErrorKind::KernelNotFound,
            7 => ErrorKind::Arguments,
            8 => ErrorKind::BadModule,
            9 => ErrorKind::OutOfMemory,
            10 => ErrorKind::Cuda,
            n => ErrorKind::Other(n),
        }
    }
}

/// A failure of the runtime, with its message.
#[derive(Clone, Debug)]
pub struct Error {
    kind: ErrorKind,
    message: String,
    cuda: i32,
}

impl Error {
    /// The kind of failure.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }
    /// The C status name, e.g. `FATLINK_RT_ERROR_NO_DRIVER`.
    pub fn status_name(&self) -> &'static str {
        match self.kind {
            ErrorKind::InvalidValue => "FATLINK_RT_ERROR_INVALID_VALUE",
            ErrorKind::NoDriver => "FATLINK_RT_ERROR_NO_DRIVER",
            ErrorKind::NoDevice => "FATLINK_RT_ERROR_NO_DEVICE",
            ErrorKind::DriverTooOld => "FATLINK_RT_ERROR_DRIVER_TOO_OLD",
            ErrorKind::NoImage => "FATLINK_RT_ERROR_NO_IMAGE",
            ErrorKind::KernelNotFound => "FATLINK_RT_ERROR_KERNEL_NOT_FOUND",
            ErrorKind::Arguments => "FATLINK_RT_ERROR_ARGUMENTS",
            ErrorKind::BadModule => "FATLINK_RT_ERROR_BAD_MODULE",
            ErrorKind::OutOfMemory => "FATLINK_RT_ERROR_OUT_OF_MEMORY",
            ErrorKind::Cuda => "FATLINK_RT_ERROR_CUDA",
            ErrorKind::Other(_) => "FATLINK_RT_ERROR_UNKNOWN",
        }
    }
    /// The message: what failed and what to do.
    pub fn message(&self) -> &str {
        &self.message
    }
    /// The CUresult of the failed driver call, or 0.
    pub fn cuda_error(&self) -> i32 {
        self.cuda
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

/// The result of every fallible call.
pub type Result<T> = std::result::Result<T, Error>;

fn check(status: i32) -> Result<()> {
    if status == 0 {
        return Ok(());
    }
    // Safety: the message is a valid NUL-terminated string that lives until
    // the next call on this thread; it is copied at once.
    unsafe {
        Err(Error {
            kind: ErrorKind::from_status(status),
            message: CStr::from_ptr(sys::fatlink_rt_last_error())
                .to_string_lossy()
                .into_owned(),
            cuda: sys::fatlink_rt_last_cuda_error(),
        })
    }
}

fn invalid(message: String) -> Error {
    Error {
        kind: ErrorKind::InvalidValue,
        message,
        cuda: 0,
    }
}

unsafe fn string(p: *const c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

/// What an embedded image is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageKind {
    /// PTX, JIT-compiled by the driver.
    Ptx,
    /// A cubin (machine code) for one GPU architecture family.
    Cubin,
    /// NVVM IR (not written by fatlink).
    Nvvm,
}

/// One image of a module's fatbin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Image {
    /// PTX, cubin or NVVM IR.
    pub kind: ImageKind,
    /// The SM number: 80 for `sm_80` / `compute_80`.
    pub sm: u32,
    /// `Some('a')` for `sm_90a`, `Some('f')` for `sm_100f`.
    pub variant: Option<char>,
    /// The PTX ISA version of a PTX image.
    pub ptx_version: Option<(u16, u16)>,
    /// Whether the entry is compressed (zstd or LZ4).
    pub compressed: bool,
}

impl fmt::Display for Image {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.variant.map(String::from).unwrap_or_default();
        match (self.kind, self.ptx_version) {
            (ImageKind::Cubin, _) => write!(f, "cubin sm_{}{}", self.sm, v),
            (ImageKind::Ptx, Some((ma, mi))) => {
                write!(f, "PTX compute_{}{} (ISA {}.{})", self.sm, v, ma, mi)
            }
            _ => write!(f, "NVVM IR compute_{}{}", self.sm, v),
        }
    }
}

/// A kernel's name and parameter sizes, as fatlink recorded them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelInfo {
    /// The symbol name (mangled for C++ kernels).
    pub name: String,
    /// The index of its module.
    pub module: u32,
    /// The size in bytes of each parameter.
    pub param_sizes: Vec<u32>,
}

unsafe fn kernel_info(i: &sys::KernelInfo) -> KernelInfo {
    let sizes = if i.num_params == 0 || i.param_sizes.is_null() {
        Vec::new()
    } else {
        std::slice::from_raw_parts(i.param_sizes, i.num_params as usize).to_vec()
    };
    KernelInfo {
        name: string(i.name),
        module: i.module,
        param_sizes: sizes,
    }
}

/// One device module (fatbin) embedded in the executable or a shared library.
#[derive(Clone, Debug)]
pub struct ModuleInfo {
    /// The file it came from.
    pub origin: String,
    /// Bytes of its fatbin.
    pub fatbin_size: u64,
    /// Its images.
    pub images: Vec<Image>,
    /// Its kernels, sorted by name.
    pub kernels: Vec<KernelInfo>,
}

/// Every module of the program. Needs no driver.
pub fn modules() -> Result<Vec<ModuleInfo>> {
    let mut out = Vec::new();
    // Safety: the out-structs are plain data the C API fills.
    unsafe {
        for m in 0..sys::fatlink_rt_module_count() {
            let mut info = std::mem::zeroed::<sys::ModuleInfo>();
            check(sys::fatlink_rt_get_module_info(m, &mut info))?;
            let mut images = Vec::new();
            for i in 0..info.num_images {
                let mut img = sys::Image::default();
                check(sys::fatlink_rt_module_image(m, i, &mut img))?;
                images.push(Image {
                    kind: match img.kind {
                        1 => ImageKind::Ptx,
                        2 => ImageKind::Cubin,
                        _ => ImageKind::Nvvm,
                    },
                    sm: img.sm,
                    variant: if img.variant == 0 {
                        None
                    } else {
                        Some(img.variant as u8 as char)
                    },
                    ptx_version: if img.kind == 2 {
                        None
                    } else {
                        Some((img.ptx_major, img.ptx_minor))
                    },
                    compressed: img.compression != 0,
                });
            }
            let mut kernels = Vec::new();
            for k in 0..info.num_kernels {
                let mut ki = std::mem::zeroed::<sys::KernelInfo>();
                check(sys::fatlink_rt_module_kernel(m, k, &mut ki))?;
                kernels.push(kernel_info(&ki));
            }
            out.push(ModuleInfo {
                origin: string(info.origin),
                fatbin_size: info.fatbin_size,
                images,
                kernels,
            });
        }
    }
    Ok(out)
}

/// Loads the driver now (every device call does it on first use).
pub fn init() -> Result<()> {
    check(unsafe { sys::fatlink_rt_init() })
}

/// The number of GPUs.
pub fn device_count() -> Result<usize> {
    let mut n = 0;
    check(unsafe { sys::fatlink_rt_device_count(&mut n) })?;
    Ok(n as usize)
}

/// A GPU's name, compute capability and driver version.
#[derive(Clone, Debug)]
pub struct DeviceInfo {
    /// The product name.
    pub name: String,
    /// Compute capability, e.g. (8, 6) for sm_86.
    pub compute_capability: (i32, i32),
    /// cuDriverGetVersion: 12080 for CUDA 12.8.
    pub driver_version: i32,
    /// Bytes of device memory.
    pub total_memory: u64,
}

/// Describes device `device`.
pub fn device_info(device: usize) -> Result<DeviceInfo> {
    // Safety: plain data filled by the C API; `name` is NUL-terminated.
    unsafe {
        let mut info = std::mem::zeroed::<sys::DeviceInfo>();
        check(sys::fatlink_rt_get_device_info(device as i32, &mut info))?;
        Ok(DeviceInfo {
            name: string(info.name.as_ptr()),
            compute_capability: (info.cc_major, info.cc_minor),
            driver_version: info.driver_version,
            total_memory: info.total_memory,
        })
    }
}

/// Makes `device` the calling thread's current device.
pub fn set_device(device: usize) -> Result<()> {
    check(unsafe { sys::fatlink_rt_set_device(device as i32) })
}

/// Waits for all work on the current device; reports faults of kernels.
pub fn synchronize() -> Result<()> {
    check(unsafe { sys::fatlink_rt_synchronize() })
}

/// Grid or block dimensions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dim3 {
    /// x
    pub x: u32,
    /// y
    pub y: u32,
    /// z
    pub z: u32,
}

impl Dim3 {
    fn c(self) -> sys::Dim3 {
        sys::Dim3 {
            x: self.x,
            y: self.y,
            z: self.z,
        }
    }
}

impl From<u32> for Dim3 {
    fn from(x: u32) -> Dim3 {
        Dim3 { x, y: 1, z: 1 }
    }
}
impl From<(u32, u32)> for Dim3 {
    fn from((x, y): (u32, u32)) -> Dim3 {
        Dim3 { x, y, z: 1 }
    }
}
impl From<(u32, u32, u32)> for Dim3 {
    fn from((x, y, z): (u32, u32, u32)) -> Dim3 {
        Dim3 { x, y, z }
    }
}

/// A value that can be passed to a kernel parameter: its bytes are copied
/// into the launch. Implemented for numbers and device buffers (passed as
/// the device pointer).
///
/// # Safety
/// `arg_ptr` must point to `arg_size` readable bytes that stay valid for
/// the duration of the launch call.
pub unsafe trait KernelArg {
    /// Pointer to the argument's bytes.
    fn arg_ptr(&self) -> *const c_void;
    /// Size of the argument in bytes.
    fn arg_size(&self) -> usize;
}

macro_rules! plain_arg {
    ($($t:ty),*) => {$(
        unsafe impl KernelArg for $t {
            fn arg_ptr(&self) -> *const c_void { self as *const $t as *const c_void }
            fn arg_size(&self) -> usize { std::mem::size_of::<$t>() }
        }
    )*};
}
plain_arg!(i8, u8, i16, u16, i32, u32, i64, u64, isize, usize, f32, f64);

/// A device address, for kernels that take raw pointers computed on the
/// host. As a [`Kernel`] parameter marker it is a pointer whose element
/// type nothing records (it passes for any pointer parameter); the launch
/// passes a `DevicePtr` value, which borrows nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(transparent)]
pub struct DevicePtr(pub u64);
plain_arg!(DevicePtr);

/// A kernel found by name, without parameter types: a launch passes any
/// [`KernelArg`]s and the runtime checks their count and sizes only. Cheap
/// to copy, usable from any thread. [`Kernel<P>`](Kernel) is the typed
/// handle.
#[derive(Clone, Debug)]
pub struct RawKernel {
    raw: sys::Kernel,
    info: KernelInfo,
}

// Safety: kernel handles are immutable and the C API is thread-safe.
unsafe impl Send for RawKernel {}
unsafe impl Sync for RawKernel {}

impl RawKernel {
    /// Finds `name` in every module and loads its module on the current
    /// device (the driver picks the best cubin or JIT-compiles the PTX).
    pub fn get(name: &str) -> Result<RawKernel> {
        let cname = c_name(name)?;
        let mut raw: sys::Kernel = std::ptr::null_mut();
        // Safety: valid C string and out-pointer.
        unsafe {
            check(sys::fatlink_rt_get_kernel(cname.as_ptr(), &mut raw))?;
            let mut ki = std::mem::zeroed::<sys::KernelInfo>();
            check(sys::fatlink_rt_kernel_get_info(raw, &mut ki))?;
            Ok(RawKernel {
                raw,
                info: kernel_info(&ki),
            })
        }
    }

    /// The kernel's symbol name.
    pub fn name(&self) -> &str {
        &self.info.name
    }

    /// The size in bytes of each parameter.
    pub fn param_sizes(&self) -> &[u32] {
        &self.info.param_sizes
    }

    /// Launches the kernel on the current device's default stream. The
    /// count and sizes of `args` are checked against the kernel's
    /// parameters; the launch is asynchronous (see [`synchronize`]).
    ///
    /// # Safety
    /// The kernel runs arbitrary device code with these arguments: they
    /// must be what it expects (types, and buffers large enough for what it
    /// reads and writes), as with any FFI call.
    pub unsafe fn launch(
        &self,
        grid: impl Into<Dim3>,
        block: impl Into<Dim3>,
        shared_mem_bytes: u32,
        args: &[&dyn KernelArg],
    ) -> Result<()> {
        self.launch_raw(
            sys::fatlink_rt_launch,
            grid.into(),
            block.into(),
            shared_mem_bytes,
            std::ptr::null_mut(),
            args,
        )
    }

    /// [`launch`](RawKernel::launch) on `stream`. Nothing keeps the
    /// arguments' buffers borrowed: wait for the stream before touching
    /// them ([`Kernel::launch`] does that for you).
    ///
    /// # Safety
    /// As for [`launch`](RawKernel::launch); and the buffers must outlive
    /// the kernel's run, not only this call.
    pub unsafe fn launch_on(
        &self,
        stream: &Stream,
        grid: impl Into<Dim3>,
        block: impl Into<Dim3>,
        shared_mem_bytes: u32,
        args: &[&dyn KernelArg],
    ) -> Result<()> {
        stream.check_device()?;
        self.launch_raw(
            sys::fatlink_rt_launch,
            grid.into(),
            block.into(),
            shared_mem_bytes,
            stream.raw,
            args,
        )
    }

    /// [`launch`](RawKernel::launch) for a kernel that synchronizes its
    /// whole grid (cooperative groups' `grid.sync()`), which needs every
    /// block of the grid resident at once: `fatlink_rt_launch_cooperative`
    /// checks the arguments as `launch` does, then that the device supports
    /// cooperative launches and that the grid has at most as many blocks
    /// as can be resident (the kernel's occupancy per SM at this block size
    /// and dynamic shared memory, times the device's SMs), and launches
    /// with `cuLaunchCooperativeKernel`. A device without cooperative
    /// launches, or a larger grid, is refused with
    /// [`ErrorKind::InvalidValue`] before anything runs; the message names
    /// the figures ("a grid of 217 blocks exceeds the 216 that can be
    /// resident at once (2 per SM x 108 SMs, at 32 threads and 0 bytes of
    /// dynamic shared memory a block)"). A failed occupancy query is the
    /// driver's error. On the default stream.
    ///
    /// # Safety
    /// As for [`launch`](RawKernel::launch).
    pub unsafe fn launch_cooperative(
        &self,
        grid: impl Into<Dim3>,
        block: impl Into<Dim3>,
        shared_mem_bytes: u32,
        args: &[&dyn KernelArg],
    ) -> Result<()> {
        self.launch_raw(
            sys::fatlink_rt_launch_cooperative,
            grid.into(),
            block.into(),
            shared_mem_bytes,
            std::ptr::null_mut(),
            args,
        )
    }

    /// [`launch_cooperative`](RawKernel::launch_cooperative) on `stream`:
    /// the same checks, refused in the same cases. As with
    /// [`launch_on`](RawKernel::launch_on), nothing keeps the arguments'
    /// buffers borrowed ([`Kernel::launch_cooperative`] does).
    ///
    /// # Safety
    /// As for [`launch_on`](RawKernel::launch_on).
    pub unsafe fn launch_cooperative_on(
        &self,
        stream: &Stream,
        grid: impl Into<Dim3>,
        block: impl Into<Dim3>,
        shared_mem_bytes: u32,
        args: &[&dyn KernelArg],
    ) -> Result<()> {
        stream.check_device()?;
        self.launch_raw(
            sys::fatlink_rt_launch_cooperative,
            grid.into(),
            block.into(),
            shared_mem_bytes,
            stream.raw,
            args,
        )
    }

    unsafe fn launch_raw(
        &self,
        launch: sys::LaunchFn,
        grid: Dim3,
        block: Dim3,
        shared_mem_bytes: u32,
        stream: sys::Stream,
        args: &[&dyn KernelArg],
    ) -> Result<()> {
        let mut ptrs: Vec<*mut c_void> = args.iter().map(|a| a.arg_ptr() as *mut c_void).collect();
        let sizes: Vec<usize> = args.iter().map(|a| a.arg_size()).collect();
        check(launch(
            self.raw,
            grid.c(),
            block.c(),
            shared_mem_bytes,
            stream,
            ptrs.as_mut_ptr(),
            sizes.as_ptr(),
            args.len() as u32,
        ))
    }
}

fn c_name(name: &str) -> Result<CString> {
    CString::new(name).map_err(|_| invalid(format!("kernel name {name:?} contains a NUL byte")))
}

/// Device memory holding `len` values of `T`, freed on drop.
pub struct DeviceBuffer<T: Copy> {
    ptr: u64,
    len: usize,
    _marker: PhantomData<T>,
}

impl<T: Copy> DeviceBuffer<T> {
    fn alloc(len: usize) -> Result<Self> {
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .ok_or_else(|| invalid(format!("a buffer of {len} elements overflows usize")))?;
        let mut ptr = 0u64;
        if bytes > 0 {
            check(unsafe { sys::fatlink_rt_malloc(&mut ptr, bytes) })?;
        }
        Ok(DeviceBuffer {
            ptr,
            len,
            _marker: PhantomData,
        })
    }

    /// A buffer of `len` zero bytes' values.
    pub fn zeroed(len: usize) -> Result<Self> {
        let b = Self::alloc(len)?;
        check(unsafe { sys::fatlink_rt_memset(b.ptr, 0, b.bytes()) })?;
        Ok(b)
    }

    /// A buffer holding a copy of `host`.
    pub fn from_slice(host: &[T]) -> Result<Self> {
        let mut b = Self::alloc(host.len())?;
        b.copy_from_slice(host)?;
        Ok(b)
    }

    fn bytes(&self) -> usize {
        self.len * std::mem::size_of::<T>()
    }

    fn check_len(&self, what: &str, n: usize) -> Result<()> {
        if n == self.len {
            Ok(())
        } else {
            Err(invalid(format!(
                "DeviceBuffer::{what}: the slice has {n} elements, the buffer {}",
                self.len
            )))
        }
    }

    /// Copies `host` (of the same length) to the device.
    pub fn copy_from_slice(&mut self, host: &[T]) -> Result<()> {
        self.check_len("copy_from_slice", host.len())?;
        check(unsafe {
            sys::fatlink_rt_memcpy_htod(self.ptr, host.as_ptr() as *const c_void, self.bytes())
        })
    }

    /// Copies the buffer into `host` (of the same length).
    pub fn copy_to_slice(&self, host: &mut [T]) -> Result<()> {
        self.check_len("copy_to_slice", host.len())?;
        check(unsafe {
            sys::fatlink_rt_memcpy_dtoh(host.as_mut_ptr() as *mut c_void, self.ptr, self.bytes())
        })
    }

    /// The buffer's contents.
    pub fn to_vec(&self) -> Result<Vec<T>> {
        let mut v = Vec::with_capacity(self.len);
        // Safety: the copy writes all `len` elements before set_len; on
        // error the vector is dropped empty.
        unsafe {
            check(sys::fatlink_rt_memcpy_dtoh(
                v.as_mut_ptr() as *mut c_void,
                self.ptr,
                self.bytes(),
            ))?;
            v.set_len(self.len);
        }
        Ok(v)
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The device address.
    pub fn device_ptr(&self) -> DevicePtr {
        DevicePtr(self.ptr)
    }
}

// A buffer is passed to a kernel as its device pointer (8 bytes).
unsafe impl<T: Copy> KernelArg for DeviceBuffer<T> {
    fn arg_ptr(&self) -> *const c_void {
        &self.ptr as *const u64 as *const c_void
    }
    fn arg_size(&self) -> usize {
        std::mem::size_of::<u64>()
    }
}

impl<T: Copy> Drop for DeviceBuffer<T> {
    fn drop(&mut self) {
        if self.ptr != 0 {
            // Nothing useful to do with an error while dropping.
            unsafe { sys::fatlink_rt_free(self.ptr) };
        }
    }
}

impl<T: Copy> fmt::Debug for DeviceBuffer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DeviceBuffer({:#x}, {} elements)", self.ptr, self.len)
    }
}
