// Compiles the CUDA C++ with nvcc through the cc crate, as relocatable
// device code (-rdc=true) for every target of FATLINK_ARCH
// (.cargo/config.toml), and the Rust device crate with fatlink-build, so
// that fatlink-cc links both when it links this executable.
fn main() {
    cc::Build::new()
        .cuda(true)
        .cudart("static")
        .flag("-rdc=true")
        .flag("-gencode").flag("arch=compute_75,code=sm_75")
        .flag("-gencode").flag("arch=compute_80,code=sm_80")
        .flag("-gencode").flag("arch=compute_90,code=sm_90")
        .flag("-gencode").flag("arch=compute_100,code=sm_100")
        .flag("-gencode").flag("arch=compute_120,code=sm_120")
        // PTX, which fatlink links with its own for the compute_120 target.
        .flag("-gencode").flag("arch=compute_120,code=compute_120")
        .file("../device/cuda/nv_ops.cu")
        .compile("nv_ops");
    println!("cargo:rerun-if-changed=../device/cuda/nv_ops.cu");

    fatlink_build::Device::new("../device/kernels")
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
}
