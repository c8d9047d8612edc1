//===- linker/SplitLink.cpp - A partitioned link as build actions --------===//
//
// `fatlink device-link --split=N`, `--codegen-only` of one piece, and
// `--join`: the partitioned code generation of `--partitions=N` run as
// separate steps, so that a build system (the Bazel rules with
// `partitions = N`) can key each partition's code generation by its own
// bitcode. The split is lto::splitForBuild; a piece compiles as a
// partition of a partitioned link does (codegen::compilePartition); the
// join checks each cubin against the program's split before nvlink
// (codegen::joinPartitions), so its bytes are the one-step link's.
// docs/lto.md, "Partitions as build actions".
//
//===----------------------------------------------------------------------===//

#include "codegen/Codegen.h"
#include "linker/DeviceBuild.h"
#include "lto/LTO.h"
#include "packager/Packager.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/TimeProfiler.h"

using namespace llvm;

namespace fatlink {

using Config = DeviceLinkConfig;

Expected<std::vector<std::pair<std::string, std::string>>>
splitModule(const Config &C) {
  if (C.Inputs.size() != 1 || C.OutKind != OutputKind::Directory ||
      !C.Join.empty())
    return createStringError(
        inconvertibleErrorCode(),
        "--split=%u takes one optimized module (from -o prog.bc) and writes "
        "a directory: fatlink device-link --split=%u prog.bc -o DIR",
        C.Split, C.Split);
  ErrorOr<std::unique_ptr<MemoryBuffer>> MB =
      MemoryBuffer::getFile(C.Inputs[0], /*IsText=*/false,
                            /*RequiresNullTerminator=*/false);
  if (!MB)
    return createStringError(MB.getError(), "cannot read %s: %s",
                             C.Inputs[0].c_str(),
                             MB.getError().message().c_str());
  Expected<std::vector<std::string>> Parts =
      lto::splitForBuild((*MB)->getBuffer(), C.Split);
  if (!Parts)
    return createStringError(inconvertibleErrorCode(), "--split %s: %s",
                             C.Inputs[0].c_str(),
                             toString(Parts.takeError()).c_str());
  std::vector<std::pair<std::string, std::string>> Files;
  for (auto [K, Data] : enumerate(*Parts)) {
    SmallString<256> Path(C.Output);
    sys::path::append(Path, "part-" + std::to_string(K) + ".bc");
    Files.emplace_back(std::string(Path), std::move(Data));
  }
  return Files;
}

std::optional<lto::PartitionTag> pieceTag(const Config &C) {
  if (C.Inputs.size() != 1 || sys::path::extension(C.Inputs[0]) != ".bc")
    return std::nullopt;
  ErrorOr<std::unique_ptr<MemoryBuffer>> MB = MemoryBuffer::getFile(
      C.Inputs[0], /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!MB)
    return std::nullopt; // readInputs says why
  return lto::readPartitionTag((*MB)->getMemBufferRef());
}

Error checkSplitTarget(const Config &C, ArrayRef<lto::Target> Targets,
                       StringRef What) {
  if (Targets.size() == 1 && !Targets[0].IsPTX &&
      C.OutKind == OutputKind::File &&
      sys::path::extension(C.Output) == ".cubin")
    return Error::success();
  return createStringError(
      inconvertibleErrorCode(),
      "%s is for one sm_XX target and writes its cubin (--arch=sm_XX -o "
      "FILE.cubin), not --arch=%s -o %s; PTX targets compile the whole "
      "program (--codegen-only without --split)",
      What.str().c_str(), join(C.ArchLists, ",").c_str(), C.Output.c_str());
}

/// The kernels cubin Path defines, sorted.
static Expected<std::vector<std::string>> cubinKernels(StringRef Path,
                                                       StringRef Data) {
  Expected<packager::ModuleSymbols> Syms = packager::readCubinSymbols(Data);
  if (!Syms)
    return createStringError(inconvertibleErrorCode(), "--join %s: %s",
                             Path.str().c_str(),
                             toString(Syms.takeError()).c_str());
  std::vector<std::string> Names;
  for (const packager::KernelInfo &K : Syms->Kernels)
    Names.push_back(K.Name);
  llvm::sort(Names);
  return Names;
}

/// --join: the partitions' cubins, checked against the split of the
/// program given (each must define the kernels of its partition, and a
/// partition without code must be the empty file), linked by nvlink.
static Error joinSplitLink(Context &Ctx, const Config &C,
                           const codegen::CodegenOptions &Opts, DeviceBuild &B,
                           const lto::InputSet &Inputs) {
  TimeTraceScope Scope("Join partitions");
  const lto::OptimizedModule &M = B.Program.Modules[0];
  unsigned N = C.Join.size();
  Expected<std::vector<lto::BucketContents>> Buckets =
      lto::bucketContents(M.Bitcode, N);
  if (!Buckets)
    return Buckets.takeError();
  std::string Hint = "give the " + std::to_string(N) +
                     " cubins compiled from --split=" + std::to_string(N) +
                     " of this program, in partition order";
  std::vector<std::unique_ptr<MemoryBuffer>> Files;
  std::vector<std::string> Paths;
  for (auto [K, Path] : enumerate(C.Join)) {
    ErrorOr<std::unique_ptr<MemoryBuffer>> MB =
        MemoryBuffer::getFile(Path, /*IsText=*/false,
                              /*RequiresNullTerminator=*/false);
    if (!MB)
      return createStringError(MB.getError(), "--join %s: cannot read it: %s",
                               Path.c_str(), MB.getError().message().c_str());
    const lto::BucketContents &Want = (*Buckets)[K];
    StringRef Data = (*MB)->getBuffer();
    std::string Where = "--join " + Path + ": partition " + std::to_string(K) +
                        " of " + std::to_string(N) + " of the program";
    if (Want.Empty != Data.empty())
      return createStringError(
          inconvertibleErrorCode(), "%s %s, but the file %s: %s", Where.c_str(),
          Want.Empty ? "has no code" : "has code",
          Data.empty() ? "is empty" : "is not empty", Hint.c_str());
    if (Data.empty())
      continue;
    if (Expected<packager::FatbinImage> Image = packager::describeImage(Data);
        Image && Image->Arch != B.Targets[0].Cpu)
      return createStringError(
          inconvertibleErrorCode(),
          "--join %s: a cubin for %s, but the target is %s: give the "
          "cubins compiled with --arch=%s",
          Path.c_str(), Image->Arch.c_str(), B.Targets[0].Name.c_str(),
          B.Targets[0].Name.c_str());
    else if (!Image)
      consumeError(Image.takeError()); // cubinKernels says what is wrong
    Expected<std::vector<std::string>> Have = cubinKernels(Path, Data);
    if (!Have)
      return Have.takeError();
    if (*Have != Want.Kernels)
      return createStringError(
          inconvertibleErrorCode(),
          "%s defines kernels {%s}, but the cubin defines {%s}: %s",
          Where.c_str(), join(Want.Kernels, ", ").c_str(),
          join(*Have, ", ").c_str(), Hint.c_str());
    Paths.push_back(Path);
    Files.push_back(std::move(*MB));
  }
  TargetOutput &Out = B.Outputs[0];
  if (Files.size() <= 1) {
    // One partition with code: it was compiled whole, as --partitions=N
    // compiles such a program, relocatable inputs and libraries included.
    if (!lto::objectsForTarget(Inputs, B.Targets[0]).empty())
      return createStringError(
          inconvertibleErrorCode(),
          "--join: the program has one partition, compiled whole, so it "
          "cannot link relocatable inputs: link with --codegen-only instead "
          "of --split");
    if (!Files.empty())
      Out.Cubin = Files[0]->getBuffer().str();
    return Error::success();
  }
  Expected<std::string> Cubin = codegen::joinPartitions(
      Ctx, Opts, B.Program, Inputs, B.Targets[0], Paths);
  if (!Cubin)
    return Cubin.takeError();
  Out.Cubin = std::move(*Cubin);
  return Error::success();
}

Error compileSplitLink(Context &Ctx, const Config &C,
                       const codegen::CodegenOptions &Opts, DeviceBuild &B,
                       const lto::InputSet &Inputs) {
  if (B.Program.Modules.size() != 1)
    return createStringError(inconvertibleErrorCode(),
                             "a split link needs one optimized module, as "
                             "-o prog.bc writes it");
  B.Outputs.resize(B.Targets.size());
  if (!C.Join.empty())
    return joinSplitLink(Ctx, C, Opts, B, Inputs);
  Expected<codegen::PartitionCode> Code = codegen::compilePartition(
      Ctx, Opts, B.Program, B.Targets, 0, C.Piece->Index);
  if (!Code)
    return Code.takeError();
  B.Outputs[0].Cubin = std::move(Code->Cubin);
  B.Outputs[0].Spills = std::move(Code->Spills);
  return Error::success();
}

} // namespace fatlink
