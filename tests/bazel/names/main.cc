// A host program over tests/bazel/names:kernels: its link takes both
// libkernels_device.a archives (the device link's and, in its _objs, the
// CUDA C++ library's of that name), which once were one path.
int main() { return 0; }
