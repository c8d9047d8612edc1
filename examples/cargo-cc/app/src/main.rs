//! The host program of the cargo + cc crate example. It lists the device
//! code fatlink embedded (no driver needed), then runs the Rust kernel
//! (which calls nvcc's device function) through the fatlink runtime and
//! nvcc's kernel through the launcher the cc crate compiled (`<<<>>>`, the
//! CUDA runtime), and checks both against the host. Without a GPU it says
//! so, with what each runtime reports, and exits 0.
use fatlink_rt::{DeviceBuffer, ErrorKind, RawKernel};
use std::ffi::CStr;
use std::os::raw::{c_char, c_int};

extern "C" {
    /// Squares x[0..n) with nvcc's kernel nv_square_all (nv_ops.cu).
    fn nv_square(x: *mut f32, n: u32) -> c_int;
    // The CUDA runtime (cudart_static, linked by the cc crate).
    fn cudaGetErrorName(err: c_int) -> *const c_char;
    fn cudaGetErrorString(err: c_int) -> *const c_char;
}

const N: usize = 1 << 12;

/// "CUDA error 35 (cudaErrorInsufficientDriver: ...)".
fn cuda_error(err: c_int) -> String {
    let text = |p: *const c_char| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
    let (name, what) = unsafe { (cudaGetErrorName(err), cudaGetErrorString(err)) };
    format!("CUDA error {} ({}: {})", err, text(name), text(what))
}

fn main() {
    let modules = fatlink_rt::modules().expect("reading the embedded modules");
    for m in &modules {
        println!("module {} ({} bytes of fatbin)", m.origin, m.fatbin_size);
        for image in &m.images {
            println!("  image {}", image);
        }
        for k in &m.kernels {
            println!("  kernel {}({:?})", k.name, k.param_sizes);
        }
    }

    if let Err(e) = fatlink_rt::init() {
        if matches!(e.kind(), ErrorKind::NoDriver | ErrorKind::NoDevice) {
            println!("no GPU: {}", e);
            // The CUDA runtime, which the cc-built launcher uses, says the same.
            let mut x = [2f32; 4];
            match unsafe { nv_square(x.as_mut_ptr(), x.len() as u32) } {
                0 => println!("nv_square: ran without a GPU?"),
                err => println!("no GPU: nv_square: {}", cuda_error(err)),
            }
            return;
        }
        eprintln!("error: {}", e);
        std::process::exit(1);
    }
    if let Err(e) = run() {
        eprintln!("error: {}", e);
        std::process::exit(1);
    }
}

fn run() -> fatlink_rt::Result<()> {
    let x: Vec<f32> = (0..N).map(|i| (i as f32 - N as f32 / 2.0) / 512.0).collect();
    let (a, b) = (1.5f32, -0.25f32);
    let n = N as u32;

    // out = a * x + b: the Rust kernel (fatlink runtime) -> nvcc's nv_affine.
    let dx = DeviceBuffer::from_slice(&x)?;
    let out = DeviceBuffer::<f32>::zeroed(N)?;
    let block = 256u32;
    let rust_affine = RawKernel::get("rust_affine")?;
    unsafe { rust_affine.launch(n / block, block, 0, &[&a, &b, &dx, &out, &n])? };
    fatlink_rt::synchronize()?;
    let got_affine = out.to_vec()?;

    // square = x * x: nvcc's kernel, launched with <<<>>> by nvcc's host code.
    let mut got_square = x.clone();
    let err = unsafe { nv_square(got_square.as_mut_ptr(), n) };
    if err != 0 {
        eprintln!("error: nv_square: {}", cuda_error(err));
        std::process::exit(1);
    }

    let mut worst = 0f32;
    for i in 0..N {
        worst = worst.max((got_affine[i] - (a * x[i] + b)).abs());
        worst = worst.max((got_square[i] - x[i] * x[i]).abs());
    }
    println!("ran rust_affine and nv_square_all on {} values: max error {:e}", N, worst);
    if worst > 1e-4 {
        eprintln!("error: results differ from the host computation");
        std::process::exit(1);
    }
    Ok(())
}
