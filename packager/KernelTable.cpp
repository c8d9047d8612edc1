//===- packager/KernelTable.cpp - The kernel table as bytes --------------===//
//
// Each kernel's name, parameter sizes, defining input and manifest as a
// ByteWriter record: what a device-link cache entry keeps (linker/Cache.cpp)
// and what an optimized module written with `-o prog.bc` carries (named
// metadata fatlink.kernels, lto::attachKernelTable), so that `fatlink
// package --kernels-from=prog.bc` writes the kernel table and manifests of
// the one-step link, byte for byte, though the inputs are gone.
//
//===----------------------------------------------------------------------===//

#include "packager/Bytes.h"
#include "packager/Packager.h"

#include "llvm/Support/JSON.h"

#include <climits>

using namespace llvm;

namespace fatlink::packager {

static void writeManifest(ByteWriter &W, const KernelManifest &M) {
  W.u64(M.Language);
  W.u64(M.Params.size());
  for (const ParamInfo &P : M.Params) {
    W.u64(P.Kind);
    W.u64(P.Flags);
    W.u64(P.AddrSpace);
    W.u64(P.ElemKind);
    W.u64(P.Size);
    W.u64(P.Align);
    W.u64(P.ElemSize);
    W.str(P.Type);
    W.str(P.Name);
  }
  for (const uint32_t *Dims : {M.MaxThreads, M.ReqThreads, M.Cluster})
    for (unsigned D = 0; D < 3; ++D)
      W.u64(Dims[D]);
  W.u64(M.MinBlocks);
}

static bool readManifest(ByteReader &R, size_t Limit, KernelManifest &M) {
  uint64_t V, N;
  auto U8 = [&](uint8_t &Out) {
    if (!R.u64(V) || V > UINT8_MAX)
      return false;
    Out = uint8_t(V);
    return true;
  };
  auto U32 = [&](uint32_t &Out) {
    if (!R.u64(V) || V > UINT32_MAX)
      return false;
    Out = uint32_t(V);
    return true;
  };
  if (!U8(M.Language) || !R.u64(N) || N > Limit)
    return false;
  M.Params.resize(N);
  for (ParamInfo &P : M.Params)
    if (!U8(P.Kind) || !U8(P.Flags) || !U8(P.AddrSpace) || !U8(P.ElemKind) ||
        !U32(P.Size) || !U32(P.Align) || !U32(P.ElemSize) || !R.str(P.Type) ||
        !R.str(P.Name))
      return false;
  for (uint32_t *Dims : {M.MaxThreads, M.ReqThreads, M.Cluster})
    for (unsigned D = 0; D < 3; ++D)
      if (!U32(Dims[D]))
        return false;
  return U32(M.MinBlocks);
}

void writeKernels(ByteWriter &W, ArrayRef<KernelInfo> Kernels) {
  W.u64(Kernels.size());
  for (const KernelInfo &K : Kernels) {
    W.str(K.Name);
    W.str(K.Origin);
    W.u64(K.ParamSizes.size());
    for (uint32_t S : K.ParamSizes)
      W.u64(S);
    writeManifest(W, K.Manifest);
  }
}

bool readKernels(ByteReader &R, size_t Limit, std::vector<KernelInfo> &Out) {
  uint64_t N;
  if (!R.u64(N) || N > Limit)
    return false;
  for (uint64_t I = 0; I < N; ++I) {
    KernelInfo K;
    uint64_t NP;
    if (!R.str(K.Name) || !R.str(K.Origin) || !R.u64(NP) || NP > Limit)
      return false;
    for (uint64_t P = 0; P < NP; ++P) {
      uint64_t S;
      if (!R.u64(S) || S > UINT32_MAX)
        return false;
      K.ParamSizes.push_back(uint32_t(S));
    }
    if (!readManifest(R, Limit, K.Manifest))
      return false;
    Out.push_back(std::move(K));
  }
  return true;
}

void writeManifestJson(json::OStream &J, const KernelManifest &M,
                       bool ParamsKnown) {
  if (!ParamsKnown)
    J.attribute("params", nullptr);
  else
    J.attributeArray("params", [&] {
      for (const ParamInfo &P : M.Params)
        J.object([&] {
          J.attribute("kind", paramKindName(P.Kind));
          J.attribute("size", int64_t(P.Size));
          J.attribute("align", int64_t(P.Align));
          if (P.Kind == FATLINK_PARAM_POINTER) {
            J.attribute("addrspace", int64_t(P.AddrSpace));
            J.attribute("const", bool(P.Flags & FATLINK_PARAM_CONST));
            J.attribute("elem_kind", paramKindName(P.ElemKind));
            J.attribute("elem_size", int64_t(P.ElemSize));
          }
          J.attribute("type", P.Type);
          J.attribute("name", P.Name);
        });
    });
  auto Dims = [&](StringRef Key, const uint32_t D[3]) {
    J.attributeArray(Key, [&] {
      for (unsigned I = 0; I < 3; ++I)
        J.value(int64_t(D[I]));
    });
  };
  Dims("max_threads", M.MaxThreads);
  Dims("req_threads", M.ReqThreads);
  J.attribute("min_blocks", int64_t(M.MinBlocks));
  Dims("cluster", M.Cluster);
}

} // namespace fatlink::packager
