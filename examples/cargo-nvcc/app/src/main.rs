//! The host program of the cargo + nvcc example. It lists the device code
//! fatlink embedded (no driver needed), then runs the Rust kernel (which
//! calls nvcc's device function) and nvcc's kernel (which calls Rust's)
//! through the fatlink runtime and checks them against the host. Without a
//! GPU it says so and exits 0: the listing is what it can show.
use fatlink_rt::{DeviceBuffer, ErrorKind, RawKernel};

const N: usize = 1 << 12;

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

    let dx = DeviceBuffer::from_slice(&x)?;
    let dcube = DeviceBuffer::from_slice(&x)?;
    let out = DeviceBuffer::<f32>::zeroed(N)?;
    let block = 256u32;
    let grid = n / block;

    // out = a * x + b: Rust kernel -> nvcc's nv_affine.
    let rust_affine = RawKernel::get("rust_affine")?;
    unsafe { rust_affine.launch(grid, block, 0, &[&a, &b, &dx, &out, &n])? };
    // cube = x * x * x: nvcc's kernel -> Rust's rust_cube.
    let nv_cube_all = RawKernel::get("nv_cube_all")?;
    unsafe { nv_cube_all.launch(grid, block, 0, &[&dcube, &n])? };
    fatlink_rt::synchronize()?;

    let got_affine = out.to_vec()?;
    let got_cube = dcube.to_vec()?;
    let mut worst = 0f32;
    for i in 0..N {
        worst = worst.max((got_affine[i] - (a * x[i] + b)).abs());
        worst = worst.max((got_cube[i] - x[i] * x[i] * x[i]).abs());
    }
    println!("ran rust_affine and nv_cube_all on {} values: max error {:e}", N, worst);
    if worst > 1e-4 {
        eprintln!("error: results differ from the host computation");
        std::process::exit(1);
    }
    Ok(())
}
