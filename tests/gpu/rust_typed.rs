//! rust_typed.rs: typed launches on a GPU (tests/gpu/run.sh). Handles of
//! CUDA C++ kernels (tests/gpu/typed_kernels.cu) and of the Rust saxpy
//! (testdata/rust/saxpy.rs) are checked against the kernel manifest, a
//! wrong one is refused, and launches on two streams, waited for by their
//! guards, are checked against the host; events time the first stream.
use fatlink_rt::{DeviceBuffer, DeviceSlice, DeviceSliceMut, ErrorKind, Event, Kernel, Stream};

const N: usize = 1 << 20;
const AXPY: &str = "_Z10typed_axpyfPKfPfj";
const IOTA: &str = "_Z10typed_iotaPxxij";

fn main() {
    if let Err(e) = run() {
        println!("error: {}: {e}", e.status_name());
        std::process::exit(1);
    }
}

fn fail(what: String) -> fatlink_rt::Result<()> {
    println!("WRONG: {what}");
    std::process::exit(1);
}

fn run() -> fatlink_rt::Result<()> {
    match Kernel::<(f32, DeviceSlice<f64>, DeviceSliceMut<f32>, u32)>::get(AXPY) {
        Err(e) if e.kind() == ErrorKind::Arguments => println!("wrong handle refused: {e}"),
        other => fail(format!(
            "a DeviceSlice<f64> handle for float const* gave {other:?}"
        ))?,
    }
    let axpy = Kernel::<(f32, DeviceSlice<f32>, DeviceSliceMut<f32>, u32)>::get(AXPY)?;
    let iota = Kernel::<(DeviceSliceMut<i64>, i64, i32, u32)>::get(IOTA)?;
    let saxpy = Kernel::<(f32, DeviceSlice<f32>, DeviceSliceMut<f32>)>::get("saxpy")?;

    let x: Vec<f32> = (0..N).map(|i| (i % 1000) as f32 * 0.25).collect();
    let dx = DeviceBuffer::from_slice(&x)?;
    let mut dy = DeviceBuffer::from_slice(&vec![1.0f32; N])?;
    let mut dz = DeviceBuffer::from_slice(&vec![2.0f32; N])?;
    let mut out = DeviceBuffer::<i64>::zeroed(N)?;
    let (s1, s2) = (Stream::new()?, Stream::new()?);
    let (start, end) = (Event::new()?, Event::new()?);
    let block = 256u32;
    let grid = (N as u32).div_ceil(block);
    let n = (N - 17) as u32; // the last 17 elements stay as they were

    start.record(&s1)?;
    // Two streams at once: both read dx; each writes its own buffer.
    let first = unsafe { axpy.launch(&s1, grid, block, 0, (0.5, &dx, &mut dy, n))? };
    let second = unsafe {
        iota.launch(
            &s2,
            grid,
            block,
            0,
            (&mut out, -5_000_000_000, -3, N as u32),
        )?
    };
    end.record(&s1)?;
    first.wait()?;
    second.wait()?;
    end.synchronize()?;
    let ms = start.elapsed_ms(&end)?;

    let y = dy.to_vec()?;
    for i in 0..N {
        let want = if i < n as usize {
            0.5 * x[i] + 1.0
        } else {
            1.0
        };
        if y[i] != want {
            fail(format!("typed_axpy: y[{i}] = {}, expected {want}", y[i]))?;
        }
    }
    let o = out.to_vec()?;
    for i in 0..N {
        let want = -5_000_000_000 - 3 * i as i64;
        if o[i] != want {
            fail(format!("typed_iota: out[{i}] = {}, expected {want}", o[i]))?;
        }
    }
    // The Rust kernel (y = twice(a) * x + y), the guard dropped at once.
    unsafe { saxpy.launch(&s2, grid, block, 0, (0.25, &dx, &mut dz))? }.wait()?;
    let z = dz.to_vec()?;
    for i in 0..N {
        let want = 0.5 * x[i] + 2.0;
        if (z[i] - want).abs() > 1e-5 * want.abs() {
            fail(format!("saxpy: z[{i}] = {}, expected {want}", z[i]))?;
        }
    }
    if !(ms > 0.0) {
        fail(format!("elapsed time between the events is {ms} ms"))?;
    }
    println!("typed launches ok: typed_axpy, typed_iota on two streams, saxpy; {ms:.3} ms for typed_axpy");
    Ok(())
}
