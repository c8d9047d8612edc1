//! The host program of the cargo example. It lists the device code that
//! fatlink embedded and makes typed handles of both kernels, checked
//! against the kernel manifest (no driver needed for either), then runs
//! them on the GPU and checks them against the same computation on the
//! host. Without a GPU it says so and exits 0: the listing and the checked
//! handles are what it can show.
use fatlink_rt::{DeviceBuffer, DeviceSlice, DeviceSliceMut, ErrorKind, Kernel, Stream};

/// gelu_affine(a: f32, b: f32, x: *const f32, y: *mut f32, n: usize)
type GeluAffine = Kernel<(f32, f32, DeviceSlice<f32>, DeviceSliceMut<f32>, usize)>;
/// axpy(a: f32, x: *const f32, y: *mut f32, n: usize)
type Axpy = Kernel<(f32, DeviceSlice<f32>, DeviceSliceMut<f32>, usize)>;

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

    // A handle whose types differ from the kernel's is an error here,
    // naming both signatures.
    let kernels = match (GeluAffine::get("gelu_affine"), Axpy::get("axpy")) {
        (Ok(g), Ok(a)) => (g, a),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("error: {}", e);
            std::process::exit(1);
        }
    };
    println!("typed handles checked: {}, {}", kernels.0.name(), kernels.1.name());

    if let Err(e) = fatlink_rt::init() {
        if matches!(e.kind(), ErrorKind::NoDriver | ErrorKind::NoDevice) {
            println!("no GPU: {}", e);
            return;
        }
        eprintln!("error: {}", e);
        std::process::exit(1);
    }
    if let Err(e) = run(&kernels.0, &kernels.1) {
        eprintln!("error: {}", e);
        std::process::exit(1);
    }
}

fn run(gelu_affine: &GeluAffine, axpy: &Axpy) -> fatlink_rt::Result<()> {
    let x: Vec<f32> = (0..N).map(|i| (i as f32 - N as f32 / 2.0) / 512.0).collect();
    let y0: Vec<f32> = (0..N).map(|i| (i % 7) as f32).collect();
    let (a, b) = (1.5f32, -0.25f32);

    let dx = DeviceBuffer::from_slice(&x)?;
    let mut dy = DeviceBuffer::from_slice(&y0)?;
    let mut out = DeviceBuffer::<f32>::zeroed(N)?;
    let block = 256u32;
    let grid = (N as u32) / block;
    let stream = Stream::new()?;

    // Both launches read dx and write their own buffer; each guard keeps
    // its buffers lent to the GPU until it is waited for.
    // y = gelu(a * x + b): Rust kernel -> Rust crate -> CUDA C++ -> tanhf.
    let gelu_done = unsafe { gelu_affine.launch(&stream, grid, block, 0, (a, b, &dx, &mut out, N))? };
    // y0 = a * x + y0
    let axpy_done = unsafe { axpy.launch(&stream, grid, block, 0, (a, &dx, &mut dy, N))? };
    gelu_done.wait()?;
    axpy_done.wait()?;

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
