"""What a GPU library and a device link give the targets that depend on them."""

GpuLibraryInfo = provider(
    doc = "Device code of a GPU library and of everything it depends on.",
    fields = {
        "crate_name": "the Rust crate name (None for CUDA C++ libraries)",
        "rlib": "the crate's rlib for `--extern` (None for CUDA C++ libraries)",
        "transitive_rlibs": "depset of the rlibs of this crate and its Rust dependencies (for `-L dependency=`)",
        "device_inputs": "depset of files carrying device bitcode: rlibs and CUDA C++ objects (`.llvm.offloading`), this library's and its dependencies'",
        "cc_info": "CcInfo of the host code to link with the program: CUDA C++ host stubs, the CUDA runtime",
        "offload_archs": "depset of (label, offload_arch) of every CUDA C++ library among this one and its dependencies: gpu_device_link checks each against its oldest target",
    },
)

GpuDeviceLinkInfo = provider(
    doc = "What a gpu_device_link made (gpu_bindings reads the host object's kernel manifests).",
    fields = {
        "host_object": "K.o: the fatbin, its registration and the kernel table, for the host link",
        "fatbin": "K.fatbin: the plain fatbin",
        "bitcode": "K.bc: the linked, optimized program",
        "targets": "list of the GPU targets it was compiled for (archs, or --//rules:archs)",
    },
)
