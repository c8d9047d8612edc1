//! rust_host.rs: a Rust host over the fatlink-rt crate, for
//! test/runtime/rust-host.test and cargo-host.test. Lists the embedded kernels, then runs saxpy
//! (from testdata/rust/saxpy.rs) through typed arguments and device
//! buffers, or reports the runtime's error and exits 1.
use fatlink_rt::{DeviceBuffer, RawKernel};

fn main() {
    let modules = fatlink_rt::modules().expect("listing needs no driver");
    for m in &modules {
        let images: Vec<String> = m.images.iter().map(|i| i.to_string()).collect();
        println!("module: {}", images.join(", "));
        for k in &m.kernels {
            println!("kernel {}{:?}", k.name, k.param_sizes);
        }
    }
    if let Err(e) = RawKernel::get("saxpi") {
        println!("{}: {}", e.status_name(), e);
    }
    let saxpy = match RawKernel::get("saxpy") {
        Ok(k) => k,
        Err(e) => {
            println!("{}: {}", e.status_name(), e);
            std::process::exit(1);
        }
    };
    let run = || -> fatlink_rt::Result<Vec<f32>> {
        let x: Vec<f32> = (0..256).map(|i| i as f32).collect();
        let dx = DeviceBuffer::from_slice(&x)?;
        let mut dy = DeviceBuffer::from_slice(&vec![1.0f32; 256])?;
        if let Err(e) = unsafe { saxpy.launch(1u32, 256u32, 0, &[&0.5f64, &dx, &dy]) } {
            println!("{}: {}", e.status_name(), e);
        }
        // Safety: saxpy(a, x, y) touches 256 elements of each buffer.
        unsafe { saxpy.launch(2u32, 128u32, 0, &[&0.5f32, &dx, &mut dy])? };
        fatlink_rt::synchronize()?;
        dy.to_vec()
    };
    match run() {
        Ok(y) => {
            // saxpy computes y = twice(a) * x + y.
            let ok = y.iter().enumerate().all(|(i, v)| *v == i as f32 + 1.0);
            println!("saxpy {}", if ok { "ok" } else { "WRONG" });
            std::process::exit(if ok { 0 } else { 1 });
        }
        Err(e) => {
            println!("{}: {}", e.status_name(), e);
            std::process::exit(1);
        }
    }
}
