"""What a GPU library gives the targets that depend on it."""

GpuLibraryInfo = provider(
    doc = "Device code of a GPU library and of everything it depends on.",
    fields = {
        "crate_name": "the Rust crate name (None for CUDA C++ libraries)",
        "rlib": "the crate's rlib for `--extern` (None for CUDA C++ libraries)",
        "transitive_rlibs": "depset of the rlibs of this crate and its Rust dependencies (for `-L dependency=`)",
        "device_inputs": "depset of files carrying device bitcode: rlibs and CUDA C++ objects (`.llvm.offloading`), this library's and its dependencies'",
        "cc_info": "CcInfo of the host code to link with the program: CUDA C++ host stubs, the CUDA runtime",
    },
)
