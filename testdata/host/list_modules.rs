//! list_modules: a Rust host program linked by `fatlink-cc`. It counts the
//! device modules fatlink embedded (the `fatlink_modules` section records,
//! 48 bytes each) and prints the kernel names of each, which proves that the
//! device code of the static library it links reached the executable.
use std::ffi::CStr;
use std::os::raw::c_char;

#[repr(C)]
struct Kernel {
    name: *const c_char,
    param_sizes: *const u32,
    num_params: u32,
    reserved: u32,
}

#[repr(C)]
struct Module {
    magic: u32,
    version: u16,
    size: u16,
    wrapper: *const u8,
    fatbin: *const u8,
    fatbin_size: u64,
    kernels: *const Kernel,
    num_kernels: u32,
    flags: u32,
}

extern "C" {
    static __start_fatlink_modules: Module;
    static __stop_fatlink_modules: Module;
}

fn main() {
    unsafe {
        let start = &__start_fatlink_modules as *const Module;
        let stop = &__stop_fatlink_modules as *const Module;
        let count = (stop as usize - start as usize) / std::mem::size_of::<Module>();
        println!("modules: {}", count);
        for i in 0..count {
            let m = &*start.add(i);
            println!("module {}: {} bytes of fatbin", i, m.fatbin_size);
            for k in 0..m.num_kernels as usize {
                let kernel = &*m.kernels.add(k);
                println!("kernel {}", CStr::from_ptr(kernel.name).to_str().unwrap());
            }
        }
    }
}

// Pulls in the static library with the embedded device code.
#[link(name = "dev", kind = "static")]
extern "C" {}
