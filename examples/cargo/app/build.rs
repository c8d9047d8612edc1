// Compiles the device crates and the CUDA C++ code and embeds them, so that
// fatlink-cc finds them when it links this executable.
fn main() {
    fatlink_build::Device::new("../device/gpu_kernels")
        .cuda("../device/cuda/activation.cu")
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
}
