//! The host program of the cargo example. It lists the device code that
//! fatlink embedded (no driver needed), then runs both kernels on the GPU
//! and checks them against the same computation on the host. Without a GPU
//! it says so and exits 0: the listing is what it can show.
use fatlink_rt::{DeviceBuffer, ErrorKind, RawKernel};

const N: usize = 1 << 12;

fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + (0.797_884_6 * (x + 0.044715 * x * x * x)).tanh())
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
    let y0: Vec<f32> = (0..N).map(|i| (i % 7) as f32).collect();
    let (a, b) = (1.5f32, -0.25f32);

    let dx = DeviceBuffer::from_slice(&x)?;
    let dy = DeviceBuffer::from_slice(&y0)?;
    let block = 256u32;
    let grid = (N as u32) / block;

    // y = gelu(a * x + b): Rust kernel -> Rust crate -> CUDA C++ -> tanhf.
    let gelu_affine = RawKernel::get("gelu_affine")?;
    let out = DeviceBuffer::<f32>::zeroed(N)?;
    unsafe { gelu_affine.launch(grid, block, 0, &[&a, &b, &dx, &out, &N])? };
    // y0 = a * x + y0
    let axpy = RawKernel::get("axpy")?;
    unsafe { axpy.launch(grid, block, 0, &[&a, &dx, &dy, &N])? };
    fatlink_rt::synchronize()?;

    let got_gelu = out.to_vec()?;
    let got_axpy = dy.to_vec()?;
    let mut worst = 0f32;
    for i in 0..N {
        worst = worst.max((got_gelu[i] - gelu(a * x[i] + b)).abs());
        worst = worst.max((got_axpy[i] - (a * x[i] + y0[i])).abs());
    }
    println!("ran gelu_affine and axpy on {} values: max error {:e}", N, worst);
    if worst > 1e-4 {
        eprintln!("error: results differ from the host computation");
        std::process::exit(1);
    }
    Ok(())
}
