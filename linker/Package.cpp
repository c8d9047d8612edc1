//===- linker/Package.cpp - `fatlink package` ----------------------------===//
//
// The last step of a device link, on its own: cubins and PTX files (from
// `fatlink device-link --codegen-only`, or any ptxas) become one fatbin, or
// a host object carrying it with the kernel table the runtime reads. Build
// systems run it as the packaging action after one code generation action
// per target (rules/defs.bzl).
//
// Each image's kind, arch and PTX version are read from the image itself,
// and the fatbin's entry order is fixed by the packager, so the output does
// not depend on the order of the inputs.
//
//===----------------------------------------------------------------------===//

#include "linker/Context.h"
#include "linker/DeviceBuild.h"
#include "linker/Linker.h"
#include "linker/Options.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/BinaryFormat/ELF.h"
#include "llvm/Option/Arg.h"
#include "llvm/Option/ArgList.h"
#include "llvm/Option/OptTable.h"
#include "llvm/Option/Option.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <map>

using namespace llvm;

namespace fatlink {

namespace {

#define FATLINK_OPTIONS_INC "linker/PackageOptions.inc"
#include "linker/CommandOptTable.inc"

} // namespace

/// The kernel table \p Kernels, read from \p TableFile, must list exactly
/// the kernels of every image, with the same parameter sizes where both
/// say them: the runtime checks launches against the table and loads the
/// kernels from the images, so a table from another module would name
/// kernels no image holds and leave out those it does. The first kernel
/// that differs is an error naming both files.
static Error checkKernelTable(ArrayRef<packager::KernelInfo> Kernels,
                              StringRef TableFile,
                              ArrayRef<packager::FatbinImage> Images,
                              ArrayRef<std::string> Files) {
  std::map<std::string, const packager::KernelInfo *> Table;
  for (const packager::KernelInfo &K : Kernels)
    Table[K.Name] = &K;
  auto Fail = [&](StringRef File, const Twine &What) {
    return createStringError(inconvertibleErrorCode(),
                             "--kernels-from=" + TableFile +
                                 " does not match " + File + ": " + What +
                                 ": pass the module these images were "
                                 "compiled from");
  };
  for (auto [I, Img] : enumerate(Images)) {
    std::vector<packager::KernelInfo> Own;
    if (Img.Kind == packager::ImageKind::PTX) {
      Own = packager::readPtxSymbols(Img.Data).Kernels;
    } else {
      Expected<packager::ModuleSymbols> S =
          packager::readCubinSymbols(Img.Data);
      if (!S)
        return createFileError(Files[I], S.takeError());
      Own = std::move(S->Kernels);
    }
    std::map<std::string, const packager::KernelInfo *> Defined;
    for (const packager::KernelInfo &K : Own)
      Defined[K.Name] = &K;
    for (auto &[Name, K] : Table) {
      auto It = Defined.find(Name);
      if (It == Defined.end())
        return Fail(Files[I], "kernel " + Name + " is in the table, not in " +
                                  "the image");
      const std::vector<uint32_t> &A = K->ParamSizes,
                                  &B = It->second->ParamSizes;
      if (!B.empty() && A != B)
        return Fail(
            Files[I],
            "kernel " + Name + " has parameters of " +
                join(map_range(A, [](uint32_t N) { return std::to_string(N); }),
                     ",") +
                " bytes in the table, " +
                join(map_range(B, [](uint32_t N) { return std::to_string(N); }),
                     ",") +
                " in the image");
    }
    for (auto &[Name, K] : Defined)
      if (!Table.count(Name))
        return Fail(Files[I],
                    "kernel " + Name + " is in the image, not in the table");
  }
  return Error::success();
}

static Error package(Context &Ctx, const opt::InputArgList &Args) {
  std::string Output = Args.getLastArgValue(OPT_output).str();
  StringRef Ext = sys::path::extension(Output);
  if (Ext != ".fatbin" && Ext != ".o")
    return createStringError(inconvertibleErrorCode(),
                             "-o %s: name a .fatbin or a .o output",
                             Output.empty() ? "(none)" : Output.c_str());
  packager::FatbinOptions Fatbin;
  if (const opt::Arg *A = Args.getLastArg(OPT_compress_EQ)) {
    Expected<packager::FatbinOptions> F =
        parseCompression("--compress", A->getValue());
    if (!F)
      return F.takeError();
    Fatbin = *F;
  }

  const opt::Arg *KernelsFrom = Args.getLastArg(OPT_kernels_from_EQ);
  if (KernelsFrom && Ext != ".o")
    return createStringError(
        inconvertibleErrorCode(),
        "--kernels-from=%s: only a .o output carries a kernel table, and "
        "-o %s is a fatbin: leave the option out or name a .o output",
        KernelsFrom->getValue(), Output.c_str());

  std::vector<packager::FatbinImage> Images;
  std::vector<std::string> Files; // the input each image came from
  for (const opt::Arg *A : Args.filtered(OPT_INPUT)) {
    Expected<std::unique_ptr<MemoryBuffer>> MB = readInputFile(A->getValue());
    if (!MB) {
      Ctx.error(MB.takeError());
      continue;
    }
    Expected<packager::FatbinImage> Image =
        packager::describeImage((*MB)->getBuffer());
    if (!Image) {
      Ctx.error(Twine(A->getValue()) + ": " + toString(Image.takeError()));
      continue;
    }
    // nvcc -dc / -rdc=true cubins are ET_REL: the driver loads only linked
    // code, and a host object registers its fatbin as complete.
    if (Image->Kind == packager::ImageKind::Cubin &&
        packager::isRelocatableCubin(Image->Data)) {
      Ctx.error(Twine(A->getValue()) +
                ": a relocatable cubin (ET_REL: nvcc -dc or -rdc=true), "
                "which the driver cannot load: device-link it first "
                "(fatlink device-link, or nvlink) and package the result");
      continue;
    }
    Ctx.verbose(Twine(A->getValue()) + ": " +
                (Image->Kind == packager::ImageKind::PTX ? "PTX" : "cubin") +
                " for " + Image->Arch);
    // One image of a kind per arch (writeFatbin refuses two, unnamed).
    for (auto [I, Other] : enumerate(Images))
      if (Other.Kind == Image->Kind && Other.Arch == Image->Arch)
        Ctx.error(Twine("two ") +
                  (Image->Kind == packager::ImageKind::PTX ? "PTX" : "cubin") +
                  " images for " + Image->Arch + ": " + Files[I] + " and " +
                  A->getValue() + ": pass one per arch");
    Images.push_back(std::move(*Image));
    Files.push_back(A->getValue());
  }
  // Every unreadable image was reported.
  if (Ctx.errorCount())
    return Error::success();
  if (Images.empty())
    return createStringError(inconvertibleErrorCode(),
                             "no images: pass .cubin and .ptx files");

  std::vector<packager::KernelInfo> Kernels;
  if (KernelsFrom) {
    Expected<std::unique_ptr<MemoryBuffer>> MB =
        readInputFile(KernelsFrom->getValue());
    if (!MB)
      return MB.takeError();
    Expected<std::vector<lto::KernelInfo>> K =
        lto::readKernels((*MB)->getMemBufferRef());
    if (!K)
      return K.takeError();
    Kernels = std::move(*K);
    if (Error E =
            checkKernelTable(Kernels, KernelsFrom->getValue(), Images, Files))
      return E;
  }

  Expected<std::string> Bytes = packager::writeFatbin(Images, Fatbin);
  if (!Bytes)
    return Bytes.takeError();
  if (Ext == ".o") {
    Expected<packager::HostArch> Host = packager::parseHostArch(
        hostTriple(Args.getLastArgValue(OPT_host_arch_EQ)));
    if (!Host)
      return Host.takeError();
    Expected<std::string> Object =
        packager::writeHostObject(*Bytes, Kernels, *Host);
    if (!Object)
      return Object.takeError();
    *Bytes = std::move(*Object);
  }

  Expected<StagedFile> S = StagedFile::create(Output, *Bytes);
  if (!S)
    return S.takeError();
  return S->commit();
}

int packageMain(ArrayRef<const char *> Args, raw_ostream &Out,
                raw_ostream &Err) {
  return runCommand(
      Args, Out, Err, CommandOptTable(),
      {"fatlink package [options] <images...> -o <out>",
       "fatlink package: cubins and PTX into a fatbin or a host object",
       OPT_UNKNOWN, OPT_help, OPT_version},
      [](Context &Ctx, opt::InputArgList &Args) {
        Ctx.Verbose = Args.hasArg(OPT_verbose);
        if (Error E = package(Ctx, Args))
          Ctx.error(std::move(E));
      });
}

} // namespace fatlink
