// util.cu: shares its stem with util.cc and its base name with a/util.cu
// (tests/bazel/names/BUILD.bazel); each must get an object of its own.
extern "C" __global__ void util_cu(float *Out) { *Out = 3.0f; }
