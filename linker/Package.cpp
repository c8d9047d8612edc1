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

#include "llvm/Option/Arg.h"
#include "llvm/Option/ArgList.h"
#include "llvm/Option/OptTable.h"
#include "llvm/Option/Option.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

using namespace llvm;

namespace fatlink {

namespace {

#define FATLINK_OPTIONS_INC "linker/PackageOptions.inc"
#include "linker/CommandOptTable.inc"

} // namespace

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

  std::vector<packager::FatbinImage> Images;
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
    Ctx.verbose(Twine(A->getValue()) + ": " +
                (Image->Kind == packager::ImageKind::PTX ? "PTX" : "cubin") +
                " for " + Image->Arch);
    Images.push_back(std::move(*Image));
  }
  // Every unreadable image was reported.
  if (Ctx.errorCount())
    return Error::success();
  if (Images.empty())
    return createStringError(inconvertibleErrorCode(),
                             "no images: pass .cubin and .ptx files");

  Expected<std::string> Bytes = packager::writeFatbin(Images, Fatbin);
  if (!Bytes)
    return Bytes.takeError();
  if (Ext == ".o") {
    std::vector<packager::KernelInfo> Kernels;
    if (const opt::Arg *A = Args.getLastArg(OPT_kernels_from_EQ)) {
      Expected<std::unique_ptr<MemoryBuffer>> MB = readInputFile(A->getValue());
      if (!MB)
        return MB.takeError();
      Expected<std::vector<lto::KernelInfo>> K =
          lto::readKernels((*MB)->getMemBufferRef());
      if (!K)
        return K.takeError();
      Kernels = std::move(*K);
    }
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
