//! Typed kernel handles: `Kernel<P>`, where `P` is a tuple of parameter
//! markers, checked once against the kernel manifest fatlink recorded at
//! link time (docs/abi.md, "Typed launches"), after which rustc checks
//! every launch.
//!
//! Markers and what a launch passes for them (`KernelParam::Arg<'a>`):
//!
//! | marker | kernel parameter | launch argument |
//! |---|---|---|
//! | `i8` ... `u64`, `isize`, `usize`, `f32`, `f64` | that scalar | the value |
//! | `DeviceSlice<T>` | `const T *` / `*const T` | `&'a DeviceBuffer<T>` |
//! | `DeviceSliceMut<T>` | `T *` / `*mut T` | `&'a mut DeviceBuffer<T>` |
//! | `DevicePtr` | any pointer | a `DevicePtr` (borrows nothing) |
//!
//! `Kernel::launch` takes the arguments as one tuple and returns a
//! `PendingLaunch<'a>` that keeps every borrow alive until it is waited for
//! or dropped (both synchronize the stream), so host code cannot read,
//! write, free or launch again on a buffer a pending launch writes.
//!
//! The check at `Kernel::get` is strict where the manifest knows and lenient
//! where it does not: see [`Kernel::get`].

use crate::{c_name, check, kernel_info, string, sys, DeviceBuffer, DevicePtr, Dim3};
use crate::{Error, ErrorKind, Result, Stream};
use std::any::{type_name, TypeId};
use std::ffi::c_void;
use std::fmt;
use std::marker::PhantomData;
use std::mem::size_of;

// fatlink_rt_param_kind
const UNKNOWN: i32 = 0;
const SINT: i32 = 1;
const UINT: i32 = 2;
const INT: i32 = 3;
const FLOAT: i32 = 4;
const BF16: i32 = 5;
const POINTER: i32 = 6;
const AGGREGATE: i32 = 7;
const PARAM_CONST: u32 = 1;

// fatlink_rt_language
const RUST: i32 = 1;
const CUDA: i32 = 2;
const C: i32 = 3;

/// The most parameters a `Kernel` handle has (tuples up to 12 elements).
const MAX_PARAMS: usize = 12;

mod sealed {
    pub trait Sealed {}
}

/// What a handle says one parameter is (for the check at `get`).
#[doc(hidden)]
#[derive(Clone, Debug)]
pub struct ParamDesc {
    kind: i32,
    size: u32,
    /// Pointers: the element's kind and size; `None` for `DevicePtr`.
    elem: Option<(i32, u32)>,
    /// Pointers: `DeviceSliceMut` or `DevicePtr`.
    mutable: bool,
    /// The marker's Rust type, for messages.
    rust: String,
}

/// A parameter marker: a type that names what one kernel parameter is
/// (sealed: the scalars, [`DeviceSlice`], [`DeviceSliceMut`] and
/// [`DevicePtr`]).
pub trait KernelParam: sealed::Sealed + 'static {
    /// What a launch passes for the parameter: the value for scalars and
    /// `DevicePtr`, a borrow of a [`DeviceBuffer`] for the slices.
    type Arg<'a>;
    #[doc(hidden)]
    fn describe() -> ParamDesc;
    #[doc(hidden)]
    fn arg_ptr(arg: &Self::Arg<'_>) -> *mut c_void;
}

/// A kernel's parameter list: a tuple of up to 12 [`KernelParam`]
/// markers, `()` for none.
pub trait KernelParams: sealed::Sealed + 'static {
    /// The launch arguments: a tuple of each marker's [`KernelParam::Arg`].
    type Args<'a>;
    #[doc(hidden)]
    fn describe() -> Vec<ParamDesc>;
    #[doc(hidden)]
    fn arg_ptrs(args: &Self::Args<'_>, out: &mut [*mut c_void; MAX_PARAMS]) -> usize;
}

macro_rules! scalar_param {
    ($($t:ty => $kind:expr),* $(,)?) => {$(
        impl sealed::Sealed for $t {}
        impl KernelParam for $t {
            type Arg<'a> = $t;
            fn describe() -> ParamDesc {
                ParamDesc {
                    kind: $kind,
                    size: size_of::<$t>() as u32,
                    elem: None,
                    mutable: false,
                    rust: stringify!($t).to_string(),
                }
            }
            fn arg_ptr(arg: &Self::Arg<'_>) -> *mut c_void {
                arg as *const $t as *mut c_void
            }
        }
    )*};
}
scalar_param!(
    i8 => SINT, i16 => SINT, i32 => SINT, i64 => SINT,
    u8 => UINT, u16 => UINT, u32 => UINT, u64 => UINT,
    isize => SINT, usize => UINT,
    f32 => FLOAT, f64 => FLOAT,
);

/// Marker of a `const T *` (CUDA C++) / `*const T` (Rust) parameter: the
/// kernel reads the buffer. A launch passes `&DeviceBuffer<T>`, a shared
/// borrow that lasts until the launch is waited for.
pub struct DeviceSlice<T>(PhantomData<fn() -> T>);

/// Marker of a `T *` / `*mut T` parameter: the kernel may write the buffer.
/// A launch passes `&mut DeviceBuffer<T>`, an exclusive borrow that lasts
/// until the launch is waited for.
pub struct DeviceSliceMut<T>(PhantomData<fn() -> T>);

/// The kind and size of an element type: Rust's integers and floats by
/// name, anything else a struct of its size.
fn elem_of<T: 'static>() -> (i32, u32) {
    let id = TypeId::of::<T>();
    let signed = [
        TypeId::of::<i8>(),
        TypeId::of::<i16>(),
        TypeId::of::<i32>(),
        TypeId::of::<i64>(),
        TypeId::of::<isize>(),
    ];
    let unsigned = [
        TypeId::of::<u8>(),
        TypeId::of::<u16>(),
        TypeId::of::<u32>(),
        TypeId::of::<u64>(),
        TypeId::of::<usize>(),
    ];
    let kind = if signed.contains(&id) {
        SINT
    } else if unsigned.contains(&id) {
        UINT
    } else if id == TypeId::of::<f32>() || id == TypeId::of::<f64>() {
        FLOAT
    } else {
        AGGREGATE
    };
    (kind, size_of::<T>() as u32)
}

fn pointer_desc(elem: Option<(i32, u32)>, mutable: bool, rust: String) -> ParamDesc {
    ParamDesc {
        kind: POINTER,
        size: 8,
        elem,
        mutable,
        rust,
    }
}

impl<T: Copy + 'static> sealed::Sealed for DeviceSlice<T> {}
impl<T: Copy + 'static> KernelParam for DeviceSlice<T> {
    type Arg<'a> = &'a DeviceBuffer<T>;
    fn describe() -> ParamDesc {
        pointer_desc(
            Some(elem_of::<T>()),
            false,
            format!("DeviceSlice<{}>", type_name::<T>()),
        )
    }
    fn arg_ptr(arg: &Self::Arg<'_>) -> *mut c_void {
        &arg.ptr as *const u64 as *mut c_void
    }
}

impl<T: Copy + 'static> sealed::Sealed for DeviceSliceMut<T> {}
impl<T: Copy + 'static> KernelParam for DeviceSliceMut<T> {
    type Arg<'a> = &'a mut DeviceBuffer<T>;
    fn describe() -> ParamDesc {
        pointer_desc(
            Some(elem_of::<T>()),
            true,
            format!("DeviceSliceMut<{}>", type_name::<T>()),
        )
    }
    fn arg_ptr(arg: &Self::Arg<'_>) -> *mut c_void {
        &arg.ptr as *const u64 as *mut c_void
    }
}

impl sealed::Sealed for DevicePtr {}
impl KernelParam for DevicePtr {
    type Arg<'a> = DevicePtr;
    fn describe() -> ParamDesc {
        pointer_desc(None, true, "DevicePtr".to_string())
    }
    fn arg_ptr(arg: &Self::Arg<'_>) -> *mut c_void {
        &arg.0 as *const u64 as *mut c_void
    }
}

macro_rules! tuple_params {
    ($($p:ident $i:tt),*) => {
        impl<$($p: KernelParam),*> sealed::Sealed for ($($p,)*) {}
        impl<$($p: KernelParam),*> KernelParams for ($($p,)*) {
            type Args<'a> = ($($p::Arg<'a>,)*);
            fn describe() -> Vec<ParamDesc> {
                vec![$($p::describe()),*]
            }
            #[allow(unused_mut, unused_variables)]
            fn arg_ptrs(args: &Self::Args<'_>, out: &mut [*mut c_void; MAX_PARAMS]) -> usize {
                let mut n = 0;
                $(out[n] = $p::arg_ptr(&args.$i); n += 1;)*
                n
            }
        }
    };
}
tuple_params!();
tuple_params!(A 0);
tuple_params!(A 0, B 1);
tuple_params!(A 0, B 1, C2 2);
tuple_params!(A 0, B 1, C2 2, D 3);
tuple_params!(A 0, B 1, C2 2, D 3, E 4);
tuple_params!(A 0, B 1, C2 2, D 3, E 4, F 5);
tuple_params!(A 0, B 1, C2 2, D 3, E 4, F 5, G 6);
tuple_params!(A 0, B 1, C2 2, D 3, E 4, F 5, G 6, H 7);
tuple_params!(A 0, B 1, C2 2, D 3, E 4, F 5, G 6, H 7, I 8);
tuple_params!(A 0, B 1, C2 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9);
tuple_params!(A 0, B 1, C2 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10);
tuple_params!(A 0, B 1, C2 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11);

/// A kernel whose parameters are `P`, a tuple of markers, e.g.
/// `Kernel<(f32, DeviceSlice<f32>, DeviceSliceMut<f32>, u32)>`. Made by
/// [`get`](Kernel::get), which checks `P` against the kernel's manifest
/// without a driver; cheap to clone, usable from any thread.
pub struct Kernel<P: KernelParams> {
    raw: sys::Kernel,
    name: String,
    sizes: Vec<usize>,
    _params: PhantomData<fn() -> P>,
}

// Safety: kernel handles are immutable and the C API is thread-safe.
unsafe impl<P: KernelParams> Send for Kernel<P> {}
unsafe impl<P: KernelParams> Sync for Kernel<P> {}

impl<P: KernelParams> Clone for Kernel<P> {
    fn clone(&self) -> Self {
        Kernel {
            raw: self.raw,
            name: self.name.clone(),
            sizes: self.sizes.clone(),
            _params: PhantomData,
        }
    }
}

impl<P: KernelParams> fmt::Debug for Kernel<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} for kernel {}",
            handle_type(&P::describe()),
            self.name
        )
    }
}

impl<P: KernelParams> Kernel<P> {
    /// Finds kernel `name` (its symbol name: mangled for C++) and checks
    /// `P` against its manifest. Needs no driver and loads no module (the
    /// first launch does). A mismatch is an [`ErrorKind::Arguments`] error
    /// that prints both signatures.
    ///
    /// Checked where the manifest knows: the parameter count; each
    /// parameter's kind (integer, floating-point, pointer) and size; an
    /// integer's sign where the kernel's source states it (a C++ mangled
    /// name, debug info); a pointer's element kind and size, and that a
    /// pointer to non-const memory is a `DeviceSliceMut` (a `DeviceSlice`
    /// would let the kernel write a buffer the host only lent), where the
    /// source states the pointee. Accepted where it does not: integers of
    /// unknown sign take either sign (an `extern "C"` kernel without debug
    /// info); pointers of unknown element take any slice (Rust kernels,
    /// until they carry their Rust signature); `DevicePtr` passes for any
    /// pointer; a `DeviceSliceMut` passes for a `const` pointer; a kernel
    /// without a manifest (nvcc's, or linked by an older fatlink) has its
    /// count and sizes checked only. By-value structs, `f16` and `bf16`
    /// have no marker: use [`RawKernel`](crate::RawKernel) for such kernels.
    pub fn get(name: &str) -> Result<Kernel<P>> {
        let cname = c_name(name)?;
        let mut raw: sys::Kernel = std::ptr::null_mut();
        // Safety: valid C string and out-pointers; plain data filled by C.
        let sig = unsafe {
            check(sys::fatlink_rt_find_kernel(cname.as_ptr(), &mut raw))?;
            KernelSig::read(raw)?
        };
        let descs = P::describe();
        debug_assert!(descs.len() <= MAX_PARAMS);
        sig.check(&descs)?;
        Ok(Kernel {
            raw,
            name: sig.name,
            sizes: descs.iter().map(|d| d.size as usize).collect(),
            _params: PhantomData,
        })
    }

    /// The kernel's symbol name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Queues the kernel on `stream` with `args`, one per parameter marker
    /// (`(2.0, &x, &mut y, n)` for `(f32, DeviceSlice<f32>,
    /// DeviceSliceMut<f32>, u32)`), loading its module on the stream's
    /// device on first use. The returned guard keeps the buffers borrowed
    /// until [`PendingLaunch::wait`] or its drop, which wait for the
    /// stream; so a buffer the kernel writes can be neither read, written,
    /// freed nor passed to another launch before then (a compile error).
    ///
    /// # Safety
    /// The types are checked; what the kernel does with them is not: it
    /// must stay within the buffers for this grid (e.g. a kernel that
    /// writes `y[i]` for every thread needs `grid * block` elements), as
    /// with any FFI call. The guard must not be leaked (`mem::forget`):
    /// that would end the borrows while the kernel may still run.
    pub unsafe fn launch<'a>(
        &self,
        stream: &'a Stream,
        grid: impl Into<Dim3>,
        block: impl Into<Dim3>,
        shared_mem_bytes: u32,
        args: P::Args<'a>,
    ) -> Result<PendingLaunch<'a>> {
        self.launch_with(
            sys::fatlink_rt_launch,
            stream,
            grid.into(),
            block.into(),
            shared_mem_bytes,
            args,
        )
    }

    /// [`launch`](Kernel::launch) for a kernel that synchronizes its whole
    /// grid (cooperative groups' `grid.sync()`), which needs every block of
    /// the grid resident at once: checks that the device supports
    /// cooperative launches and that the grid has at most as many blocks
    /// as can be resident (the kernel's occupancy per SM at this block size
    /// and dynamic shared memory, times the device's SMs), then launches
    /// with `cuLaunchCooperativeKernel` and returns the same guard. A
    /// device without cooperative launches, or a larger grid, is refused
    /// with [`ErrorKind::InvalidValue`] naming the figures, and nothing
    /// runs (see [`RawKernel::launch_cooperative`](crate::RawKernel::launch_cooperative)).
    ///
    /// # Safety
    /// As for [`launch`](Kernel::launch).
    pub unsafe fn launch_cooperative<'a>(
        &self,
        stream: &'a Stream,
        grid: impl Into<Dim3>,
        block: impl Into<Dim3>,
        shared_mem_bytes: u32,
        args: P::Args<'a>,
    ) -> Result<PendingLaunch<'a>> {
        self.launch_with(
            sys::fatlink_rt_launch_cooperative,
            stream,
            grid.into(),
            block.into(),
            shared_mem_bytes,
            args,
        )
    }

    unsafe fn launch_with<'a>(
        &self,
        launch: sys::LaunchFn,
        stream: &'a Stream,
        grid: Dim3,
        block: Dim3,
        shared_mem_bytes: u32,
        args: P::Args<'a>,
    ) -> Result<PendingLaunch<'a>> {
        stream.check_device()?;
        let mut ptrs = [std::ptr::null_mut(); MAX_PARAMS];
        let n = P::arg_ptrs(&args, &mut ptrs);
        check(launch(
            self.raw,
            grid.c(),
            block.c(),
            shared_mem_bytes,
            stream.raw,
            ptrs.as_mut_ptr(),
            self.sizes.as_ptr(),
            n as u32,
        ))?;
        Ok(PendingLaunch {
            stream,
            _borrows: PhantomData,
        })
    }
}

/// A launch queued on a stream, holding the borrows of its arguments.
/// [`wait`](PendingLaunch::wait) waits for the stream and reports faults;
/// dropping it waits too (ignoring errors), so the buffers are never used
/// while the kernel may still run.
#[must_use = "dropping a PendingLaunch waits for the kernel at once; keep it while other work runs, then call wait()"]
pub struct PendingLaunch<'a> {
    stream: &'a Stream,
    _borrows: PhantomData<&'a mut ()>,
}

impl PendingLaunch<'_> {
    /// Waits for the stream (this launch and everything queued on it
    /// before and after), then releases the borrows.
    pub fn wait(self) -> Result<()> {
        let result = self.stream.synchronize();
        std::mem::forget(self);
        result
    }

    /// The stream the launch was queued on.
    pub fn stream(&self) -> &Stream {
        self.stream
    }
}

impl Drop for PendingLaunch<'_> {
    fn drop(&mut self) {
        // Nothing useful to do with an error while dropping: wait() has it.
        let _ = self.stream.synchronize();
    }
}

impl fmt::Debug for PendingLaunch<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PendingLaunch on {:?}", self.stream)
    }
}

/// One parameter as the manifest records it.
struct ManParam {
    kind: i32,
    flags: u32,
    addrspace: u32,
    elem_kind: i32,
    size: u32,
    elem_size: u32,
    ty: String,
}

/// What the program knows of a kernel's signature.
struct KernelSig {
    name: String,
    language: i32,
    origin: String,
    /// The manifest's parameters, or `None` when it has none (sizes only).
    params: Option<Vec<ManParam>>,
    sizes: Vec<u32>,
}

impl KernelSig {
    unsafe fn read(raw: sys::Kernel) -> Result<KernelSig> {
        let mut ki = std::mem::zeroed::<sys::KernelInfo>();
        check(sys::fatlink_rt_kernel_get_info(raw, &mut ki))?;
        let info = kernel_info(&ki);
        let mut man = std::mem::zeroed::<sys::Manifest>();
        check(sys::fatlink_rt_kernel_get_manifest(raw, &mut man))?;
        let n = info.param_sizes.len();
        // A kernel with a manifest lists every parameter; none (nvcc's, an
        // older fatlink's) lists 0.
        let params = if man.num_params as usize == n && (n > 0 || man.language != 0) {
            let mut v = Vec::with_capacity(n);
            for i in 0..n as u32 {
                let mut p = std::mem::zeroed::<sys::Param>();
                check(sys::fatlink_rt_kernel_get_param(raw, i, &mut p))?;
                v.push(ManParam {
                    kind: p.kind,
                    flags: p.flags,
                    addrspace: p.addrspace,
                    elem_kind: p.elem_kind,
                    size: p.size,
                    elem_size: p.elem_size,
                    ty: string(p.type_),
                });
            }
            Some(v)
        } else {
            None
        };
        Ok(KernelSig {
            name: info.name,
            language: man.language,
            origin: string(man.origin),
            params,
            sizes: info.param_sizes,
        })
    }

    /// Ok, or the error naming every parameter that does not fit.
    fn check(&self, descs: &[ParamDesc]) -> Result<()> {
        let count = self.sizes.len();
        let what = if descs.len() != count {
            format!(
                "it takes {count} parameter{} in the kernel and {} in the handle",
                if count == 1 { "" } else { "s" },
                descs.len()
            )
        } else {
            let mut reasons = Vec::new();
            for (i, d) in descs.iter().enumerate() {
                let why = match &self.params {
                    Some(ps) => mismatch(&ps[i], d),
                    None if d.size != self.sizes[i] => Some(format!(
                        "the handle passes {} bytes and the kernel takes {}",
                        d.size, self.sizes[i]
                    )),
                    None => None,
                };
                if let Some(why) = why {
                    reasons.push(format!(
                        "parameter {i} is {} in the handle and {} in the kernel ({why})",
                        d.rust,
                        self.param_words(i)
                    ));
                }
            }
            if reasons.is_empty() {
                return Ok(());
            }
            reasons.join("; ")
        };
        let display = match demangled_base(&self.name) {
            Some(base) => format!("{base} ({})", self.name),
            None => self.name.clone(),
        };
        Err(Error {
            kind: ErrorKind::Arguments,
            message: format!(
                "kernel {display} does not fit its handle: {what}\n\
                 >>> kernel: {}\n\
                 >>> handle: {}\n\
                 >>> make the handle's types the kernel's (fatlink bindgen --lang=rust writes them from the manifest)",
                self.signature(),
                handle_type(descs)
            ),
            cuda: 0,
        })
    }

    /// Parameter i in the kernel's language's words.
    fn param_words(&self, i: usize) -> String {
        let p = match &self.params {
            Some(ps) => &ps[i],
            None => return format!("{} bytes", self.sizes[i]),
        };
        if !p.ty.is_empty() {
            return p.ty.clone();
        }
        let bits = p.size * 8;
        let rust = self.language == RUST;
        let cxx = self.language == CUDA || self.language == C;
        match p.kind {
            SINT if rust => format!("i{bits}"),
            UINT if rust => format!("u{bits}"),
            INT if rust => format!("i{bits}/u{bits}"),
            FLOAT if rust => format!("f{bits}"),
            BF16 if rust => "bf16".into(),
            POINTER if rust && p.addrspace <= 1 => "*mut _".into(),
            POINTER if rust => format!("*mut _ (address space {})", p.addrspace),
            SINT if cxx => c_int_name(p.size, "signed char", "short", "int", "long long"),
            UINT if cxx => c_int_name(
                p.size,
                "unsigned char",
                "unsigned short",
                "unsigned int",
                "unsigned long long",
            ),
            INT if cxx => c_int_name(
                p.size,
                "char",
                "short/unsigned short",
                "int/unsigned",
                "long/unsigned long",
            ),
            FLOAT if cxx => match p.size {
                2 => "__half".into(),
                4 => "float".into(),
                8 => "double".into(),
                n => format!("{n}-byte float"),
            },
            BF16 if cxx => "__bf16".into(),
            POINTER if cxx && p.addrspace <= 1 => "pointer".into(),
            POINTER if cxx => format!("pointer (address space {})", p.addrspace),
            AGGREGATE => format!("{}-byte struct", p.size),
            SINT => format!("i{bits}"),
            UINT => format!("u{bits}"),
            INT => format!("i{bits} (sign unknown)"),
            FLOAT => format!("f{bits}"),
            BF16 => "bf16".into(),
            POINTER => "ptr".into(),
            _ => format!("{} bytes", p.size),
        }
    }

    /// The kernel's signature as its language writes it.
    fn signature(&self) -> String {
        let params: Vec<String> = (0..self.sizes.len()).map(|i| self.param_words(i)).collect();
        let params = params.join(", ");
        let base = demangled_base(&self.name).unwrap_or_else(|| self.name.clone());
        let mut s = match (&self.params, self.language) {
            (None, _) => format!(
                "{}({params}) (no manifest: only sizes are known)",
                self.name
            ),
            (Some(_), RUST) => format!("extern \"ptx-kernel\" fn {base}({params})"),
            (Some(_), CUDA) | (Some(_), C) => format!("__global__ void {base}({params})"),
            (Some(_), _) => format!("{base}({params})"),
        };
        if self.params.is_some() {
            if !self.origin.is_empty() {
                s += &format!(" in {}", self.origin);
            }
            match self.language {
                RUST => s += " (Rust)",
                CUDA => s += " (CUDA C++)",
                C => s += " (C)",
                _ => {}
            }
        }
        s
    }
}

fn c_int_name(size: u32, b1: &str, b2: &str, b4: &str, b8: &str) -> String {
    match size {
        1 => b1.into(),
        2 => b2.into(),
        4 => b4.into(),
        8 => b8.into(),
        n => format!("{n}-byte integer"),
    }
}

fn is_int(kind: i32) -> bool {
    kind == SINT || kind == UINT || kind == INT
}

fn kind_word(kind: i32) -> &'static str {
    match kind {
        SINT | UINT | INT => "an integer",
        FLOAT => "a floating-point number",
        BF16 => "a bf16",
        POINTER => "a pointer",
        AGGREGATE => "a struct",
        _ => "a value",
    }
}

/// Why the handle's parameter `d` cannot be the kernel's `p`, or None.
fn mismatch(p: &ManParam, d: &ParamDesc) -> Option<String> {
    if p.kind == UNKNOWN {
        return (p.size != d.size).then(|| {
            format!(
                "the handle passes {} bytes and the kernel takes {}",
                d.size, p.size
            )
        });
    }
    if p.kind == AGGREGATE || p.kind == BF16 || (p.kind == FLOAT && p.size == 2) {
        let what = if p.kind == AGGREGATE {
            format!("a struct of {} bytes by value", p.size)
        } else if p.kind == BF16 {
            "a bf16".to_string()
        } else {
            "an f16".to_string()
        };
        return Some(format!(
            "the kernel takes {what}, for which Kernel has no marker: use RawKernel"
        ));
    }
    let same_kind = (is_int(p.kind) && is_int(d.kind)) || p.kind == d.kind;
    if !same_kind {
        return Some(format!(
            "the handle passes {} and the kernel takes {}",
            kind_word(d.kind),
            kind_word(p.kind)
        ));
    }
    if p.kind != POINTER {
        if p.size != d.size {
            return Some(format!(
                "the handle passes {} bytes and the kernel takes {}",
                d.size, p.size
            ));
        }
        if (p.kind == SINT && d.kind == UINT) || (p.kind == UINT && d.kind == SINT) {
            return Some("the sign differs".into());
        }
        return None;
    }
    if p.addrspace > 1 {
        let space = match p.addrspace {
            3 => "shared",
            4 => "constant",
            5 => "local",
            _ => "other",
        };
        return Some(format!(
            "the kernel takes a pointer to {space} memory (address space {}), which no DeviceBuffer is",
            p.addrspace
        ));
    }
    if let Some((ek, es)) = d.elem {
        if p.elem_kind != UNKNOWN {
            let kinds_fit = (is_int(p.elem_kind) && is_int(ek)) || p.elem_kind == ek;
            let sign_differs =
                (p.elem_kind == SINT && ek == UINT) || (p.elem_kind == UINT && ek == SINT);
            if !kinds_fit || sign_differs || (p.elem_size != 0 && p.elem_size != es) {
                return Some("they point to different types".into());
            }
        }
    }
    // The source spelled the pointer: its const-ness is known.
    let const_known = p.elem_kind != UNKNOWN || !p.ty.is_empty();
    if const_known && p.flags & PARAM_CONST == 0 && !d.mutable {
        return Some(format!(
            "the kernel may write through it: use {}",
            d.rust.replacen("DeviceSlice<", "DeviceSliceMut<", 1)
        ));
    }
    None
}

/// `Kernel<(f32, DeviceSlice<f32>)>`, `Kernel<(u32,)>`, `Kernel<()>`.
fn handle_type(descs: &[ParamDesc]) -> String {
    let names: Vec<&str> = descs.iter().map(|d| d.rust.as_str()).collect();
    let comma = if names.len() == 1 { "," } else { "" };
    format!("Kernel<({}{comma})>", names.join(", "))
}

/// The qualified name of an Itanium-mangled function (`_Z5typedPKfj` is
/// `typed`, `_ZN2ns4axpyEf` is `ns::axpy`), or None for other names.
fn demangled_base(name: &str) -> Option<String> {
    let rest = name.strip_prefix("_Z")?;
    fn ident(s: &str) -> Option<(&str, &str)> {
        let digits = s.bytes().take_while(|b| b.is_ascii_digit()).count();
        let len: usize = s[..digits].parse().ok()?;
        let body = s.get(digits..digits + len)?;
        Some((body, &s[digits + len..]))
    }
    if let Some(mut rest) = rest.strip_prefix('N') {
        let mut parts = Vec::new();
        while !rest.starts_with('E') {
            let (part, tail) = ident(rest)?;
            parts.push(part);
            rest = tail;
        }
        return (!parts.is_empty()).then(|| parts.join("::"));
    }
    ident(rest).map(|(base, _)| base.to_string())
}
