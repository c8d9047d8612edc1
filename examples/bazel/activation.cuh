// activation.cuh: a header-only device helper, shared through a cc_library
// to show that cuda_gpu_library takes header dependencies like cc_library.
#pragma once

__device__ inline float relu(float x) { return x > 0.0f ? x : 0.0f; }
