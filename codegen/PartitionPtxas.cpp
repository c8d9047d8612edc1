//===- codegen/PartitionPtxas.cpp - ptxas for partitions ------------------===//
//
// A partition's relocatable cubin for one target, alone or cut from a
// ptxas run it shared with up to 7 other partitions (PartitionPtxas.h;
// docs/codegen.md, "Shared ptxas runs").
//
//===----------------------------------------------------------------------===//

#include "codegen/PartitionPtxas.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/TimeProfiler.h"

using namespace llvm;

namespace fatlink::codegen {

std::string partitionFileName(const lto::Target &T, size_t PartIndex,
                              StringRef Ext) {
  return T.Name + ".part" + std::to_string(PartIndex) + Ext.str();
}

/// `ptxas -c` of PTX files for target T into the file at CubinPath (What
/// names the run in errors): ptxas's output, and the cubin, mapped.
static Expected<std::pair<std::string, std::shared_ptr<const MappedFile>>>
runPtxas(Context &Ctx, const CodegenOptions &Opts, const lto::Target &T,
         ArrayRef<StringRef> PTXPaths, StringRef CubinPath, unsigned Timeout,
         const std::string &What) {
  std::string Arch = "-arch=" + T.Cpu;
  std::string OptFlag = "-O" + std::to_string(Opts.OptLevel);
  std::vector<StringRef> Argv = {"ptxas", Arch, OptFlag, "-c"};
  append_range(Argv, PTXPaths);
  append_range(Argv, ArrayRef<StringRef>{"-o", CubinPath, PtxasSpillFlag});
  Expected<std::string> R =
      runProgram(Ctx, Opts.Paths.Ptxas, Argv, Timeout, What, Opts.Paths.Hint);
  if (!R)
    return R.takeError();
  Expected<std::shared_ptr<const MappedFile>> File =
      toolOutput(CubinPath, What);
  if (!File)
    return File.takeError();
  return std::make_pair(std::move(*R), std::move(*File));
}

Expected<PartitionCode>
assemblePartition(Context &Ctx, const CodegenOptions &Opts,
                  const lto::Target &T, StringRef PTXPath, size_t PartIndex,
                  ArrayRef<std::string> Kernels, StringRef Key) {
  TimeTraceScope Scope("ptxas", partitionFileName(T, PartIndex, ""));
  Expected<std::string> CubinPath =
      Ctx.Temps.create(partitionFileName(T, PartIndex, ".cubin"));
  if (!CubinPath)
    return CubinPath.takeError();
  std::string What =
      "ptxas for " + T.Name + " (partition " + std::to_string(PartIndex) + ")";
  auto R =
      runPtxas(Ctx, Opts, T, {PTXPath}, *CubinPath, Opts.PtxasTimeout, What);
  if (!R)
    return R.takeError();
  // A partition's cubin is small (a share of the program) and goes into
  // the cache entry and to nvlink's file: copied out of the mapping.
  PartitionCode Code{R->second->bytes().str(),
                     spillsOfKernels(R->first, Kernels)};
  // A batching target's cubins are the same bytes whether or not their
  // partition shared a ptxas run. One the cut cannot read never shares one
  // (a batch of it fails the same way), so it stays as ptxas wrote it.
  if (canonicalCubins(Opts, T)) {
    if (Expected<std::string> C = canonicalCubin(Code.Cubin))
      Code.Cubin = std::move(*C);
    else
      consumeError(C.takeError());
  }
  if (!Key.empty())
    Opts.Cache.Store(Key, Code);
  return Code;
}

/// A partition with more PTX runs ptxas alone: its start-up is a small
/// share of its run, and a batch of large ones would hold the link's tail.
constexpr size_t PtxasBatchMaxPTX = 512 << 10;

bool canonicalCubins(const CodegenOptions &Opts, const lto::Target &T) {
  return Opts.RunPtxas && !T.IsPTX && T.Sm < 90;
}

bool batchesPtxas(const CodegenOptions &Opts, const lto::Target &T) {
  return Opts.BatchPtxas && canonicalCubins(Opts, T);
}

std::optional<std::vector<std::string>> sharedRunFunctions(StringRef PTX) {
  if (PTX.size() > PtxasBatchMaxPTX)
    return std::nullopt;
  static constexpr StringLiteral Allowed[] = {
      ".version", ".target",         ".address_size",  ".entry",
      ".func",    ".visible .entry", ".visible .func", ".alias",
      ".maxntid", ".reqntid",        ".minnctapersm",  ".maxnctapersm",
      ".maxnreg", ".noreturn",       ".pragma"};
  std::vector<std::string> Functions;
  bool Kernel = false;
  for (StringRef Rest = PTX; !Rest.empty();) {
    StringRef Line;
    std::tie(Line, Rest) = Rest.split('\n');
    if (!Line.starts_with("."))
      continue; // indented (in a body or a parameter list), or punctuation
    if (none_of(Allowed, [&](StringRef D) {
          return Line.starts_with(D) &&
                 (Line.size() == D.size() || isSpace(Line[D.size()]) ||
                  Line[D.size()] == '(');
        }))
      return std::nullopt;
    if (std::optional<StringRef> Name = ptxFunctionName(Line)) {
      Kernel |= Line.contains(".entry ");
      Functions.push_back(Name->str());
    }
  }
  if (!Kernel)
    return std::nullopt;
  return Functions;
}

Expected<std::vector<PartitionCode>>
assembleBatch(Context &Ctx, const CodegenOptions &Opts, const lto::Target &T,
              ArrayRef<BatchMember> Members) {
  std::string Parts = std::to_string(Members.front().Part) + "-" +
                      std::to_string(Members.back().Part);
  TimeTraceScope Scope("ptxas batch", T.Name + ".part" + Parts);
  Expected<std::string> CubinPath = Ctx.Temps.create(
      partitionFileName(T, Members.front().Part,
                        "-" + std::to_string(Members.back().Part) + ".cubin"));
  if (!CubinPath)
    return CubinPath.takeError();
  std::vector<StringRef> Paths;
  for (const BatchMember &M : Members)
    Paths.push_back(M.PTXPath);
  std::string What = "ptxas for " + T.Name + " (partitions " + Parts + ")";
  // The time limit is per partition's worth of work.
  unsigned Timeout = Opts.PtxasTimeout * unsigned(Members.size());
  auto R = runPtxas(Ctx, Opts, T, Paths, *CubinPath, Timeout, What);
  if (!R)
    return R.takeError();
  std::vector<std::vector<std::string>> Functions;
  for (const BatchMember &M : Members)
    Functions.push_back(M.Functions);
  Expected<std::vector<std::string>> Pieces =
      splitBatchCubin(R->second->bytes(), Functions);
  if (!Pieces)
    return createStringError("cannot cut " + What +
                             "'s cubin apart: " + toString(Pieces.takeError()));
  std::vector<FunctionSpills> Spills = parsePtxasSpills(R->first);
  std::vector<PartitionCode> Codes;
  for (auto [M, Cubin] : zip(Members, *Pieces)) {
    StringSet<> Own;
    for (const std::string &F : M.Functions)
      Own.insert(F);
    PartitionCode Code{std::move(Cubin), {}};
    for (const FunctionSpills &F : Spills)
      if (Own.contains(F.Name))
        Code.Spills.push_back(F);
    for (const std::string &K : *M.Kernels)
      if (none_of(Code.Spills,
                  [&](const FunctionSpills &F) { return F.Name == K; }))
        Code.Spills.push_back({K, 0, 0});
    if (!M.Key.empty())
      Opts.Cache.Store(M.Key, Code);
    Codes.push_back(std::move(Code));
  }
  return Codes;
}

} // namespace fatlink::codegen
