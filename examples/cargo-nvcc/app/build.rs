// Compiles the Rust device crate (nvptx64 bitcode) and the CUDA C++ with
// nvcc (relocatable device code, one -gencode per FATLINK_ARCH target), so
// that fatlink-cc links both when it links this executable.
fn main() {
    fatlink_build::Device::new("../device/kernels")
        .cuda("../device/cuda/nv_ops.cu")
        .nvcc()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
}
