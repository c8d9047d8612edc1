// unit_variant.cu: compiled twice (-DVARIANT=1, -DVARIANT=2) for the same
// arches by test/device-link/offload-units-ld-r.test: two translation
// units with one source file name, each defining its own kernel.
#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)

extern "C" __global__ void CAT(variant_kernel_, VARIANT)(float *v) {
  v[threadIdx.x] += VARIANT;
}
