//===- codegen/PartitionPtxas.h - ptxas for partitions ---------*- C++ -*-===//
//
// Internal to codegen/. A partition's relocatable cubin for one target:
// `ptxas -c` of its PTX alone, or, for targets before sm_90, of up to
// PtxasBatchSize partitions in one shared run whose cubin splitBatchCubin
// cuts apart (docs/codegen.md, "Shared ptxas runs"). Codegen.cpp's
// partition jobs decide which partitions share a run; this file runs ptxas
// and stores each result in the cache. The helpers of Codegen.cpp both
// files use are declared here too.
//
//===----------------------------------------------------------------------===//

#ifndef FATLINK_CODEGEN_PARTITIONPTXAS_H
#define FATLINK_CODEGEN_PARTITIONPTXAS_H

#include "codegen/Codegen.h"

namespace fatlink::codegen {

// Codegen.cpp's.

/// The file a tool wrote at Path, mapped; an error naming the tool (What)
/// where it wrote none.
llvm::Expected<std::shared_ptr<const MappedFile>>
toolOutput(llvm::StringRef Path, llvm::StringRef What);

/// The name of the function a PTX line declares or defines (`.entry k(`,
/// `.func (.param .b32 r) f(`), or none.
std::optional<llvm::StringRef> ptxFunctionName(llvm::StringRef Line);

/// The spills of a ptxas run (its output Log) that compiled Kernels and
/// what they call: the functions it said spill, and every kernel it did
/// not name with none.
std::vector<FunctionSpills>
spillsOfKernels(llvm::StringRef Log, llvm::ArrayRef<std::string> Kernels);

// PartitionPtxas.cpp's.

/// Partitions that share one ptxas run at most: 7 start-ups saved of 8,
/// while a target still has several runs to spread over the cores. Runs
/// group partitions by number (0-7, 8-15, ...).
constexpr size_t PtxasBatchSize = 8;

/// The temporary file name of one partition's code for target T.
std::string partitionFileName(const lto::Target &T, size_t PartIndex,
                              llvm::StringRef Ext);

/// Whether target T's partition cubins are canonicalCubin's: those of the
/// targets whose partitions may share ptxas runs (before sm_90, whose
/// cubins have no .nv.compat), with --ptxas-per-partition too, so that the
/// cache holds the same bytes either way.
bool canonicalCubins(const CodegenOptions &Opts, const lto::Target &T);

/// Whether target T's small partitions share ptxas runs.
bool batchesPtxas(const CodegenOptions &Opts, const lto::Target &T);

/// Assembles one partition's PTX file for target T, which defines Kernels,
/// with ptxas -c into a relocatable cubin (canonicalCubin's where
/// canonicalCubins), and stores it and its spills in the cache under Key
/// (if not empty).
llvm::Expected<PartitionCode>
assemblePartition(Context &Ctx, const CodegenOptions &Opts,
                  const lto::Target &T, llvm::StringRef PTXPath,
                  size_t PartIndex, llvm::ArrayRef<std::string> Kernels,
                  llvm::StringRef Key);

/// A partition waiting for its target's shared ptxas run.
struct BatchMember {
  size_t Part = 0;
  std::string PTXPath, Key;
  const std::vector<std::string> *Kernels = nullptr;
  std::vector<std::string> Functions; ///< sharedRunFunctions' list
};

/// Assembles several partitions' PTX files for target T in one `ptxas -c`
/// run and cuts its cubin into each partition's (splitBatchCubin), with
/// each its spills, stored in the cache. An error where ptxas fails or the
/// cut refuses the cubin: the caller compiles them one by one, which says
/// which partition ptxas refused.
llvm::Expected<std::vector<PartitionCode>>
assembleBatch(Context &Ctx, const CodegenOptions &Opts, const lto::Target &T,
              llvm::ArrayRef<BatchMember> Members);

} // namespace fatlink::codegen

#endif // FATLINK_CODEGEN_PARTITIONPTXAS_H
