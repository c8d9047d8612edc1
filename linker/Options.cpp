//===- linker/Options.cpp - Command-line parsing shared by the commands --===//
//
// See Options.h.
//
//===----------------------------------------------------------------------===//

#include "linker/Options.h"
#include "linker/Context.h"
#include "linker/Linker.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Errc.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/VirtualFileSystem.h"

using namespace llvm;

namespace fatlink {

namespace {
/// The real file system, but a response file must be a regular file of at
/// most MaxResponseFileSize bytes: LLVM reads one until its end, so
/// @/dev/zero would grow without bound and a FIFO would block forever.
class ResponseFileSystem : public vfs::ProxyFileSystem {
public:
  ResponseFileSystem() : ProxyFileSystem(vfs::getRealFileSystem()) {}

  ErrorOr<std::unique_ptr<vfs::File>>
  openFileForRead(const Twine &Path) override {
    ErrorOr<vfs::Status> S = status(Path);
    if (S && S->getType() != sys::fs::file_type::regular_file)
      return refuse(Path.str() + " is not a regular file: a response file "
                                 "must be one",
                    errc::invalid_argument);
    if (S && S->getSize() > MaxResponseFileSize)
      return refuse(Path.str() + " has " + std::to_string(S->getSize()) +
                        " bytes, more than the " +
                        std::to_string(MaxResponseFileSize >> 20) +
                        " MiB a response file may have",
                    errc::file_too_large);
    return ProxyFileSystem::openFileForRead(Path);
  }

  /// Why the last response file was refused, if one was.
  std::string Refused;

private:
  std::error_code refuse(std::string Why, errc Code) {
    Refused = std::move(Why);
    return make_error_code(Code);
  }
};
} // namespace

Error expandResponseFiles(SmallVectorImpl<const char *> &Argv,
                          StringSaver &Saver) {
  cl::ExpansionContext ECtx(Saver.getAllocator(), cl::TokenizeGNUCommandLine);
  ResponseFileSystem FS;
  ECtx.setVFS(&FS);
  if (Error E = ECtx.expandResponseFiles(Argv)) {
    if (!FS.Refused.empty()) {
      consumeError(std::move(E));
      return createStringError(inconvertibleErrorCode(),
                               "cannot expand response file: %s",
                               FS.Refused.c_str());
    }
    return createStringError(inconvertibleErrorCode(),
                             "cannot expand response file: %s",
                             toString(std::move(E)).c_str());
  }
  return Error::success();
}

Expected<opt::InputArgList> parseArgs(const opt::OptTable &Table,
                                      ArrayRef<const char *> Args,
                                      StringSaver &Saver, unsigned UnknownID) {
  SmallVector<const char *, 64> Argv(Args.begin(), Args.end());
  if (Error E = expandResponseFiles(Argv, Saver))
    return std::move(E);

  unsigned MissingIndex, MissingCount;
  opt::InputArgList List = Table.ParseArgs(Argv, MissingIndex, MissingCount);
  Error Errors = Error::success();
  if (MissingCount)
    Errors = createStringError(inconvertibleErrorCode(),
                               "option %s needs a value",
                               List.getArgString(MissingIndex));
  for (const opt::Arg *A : List.filtered(UnknownID)) {
    std::string Spelling = A->getAsString(List);
    std::string Nearest;
    std::string Msg = "unknown option '" + Spelling + "'";
    if (Table.findNearest(Spelling, Nearest) <= 2)
      Msg += ": did you mean '" + Nearest + "'?";
    else
      Msg += ": see --help";
    Errors = joinErrors(std::move(Errors),
                        createStringError(inconvertibleErrorCode(), Msg));
  }
  if (Errors)
    return std::move(Errors);
  return std::move(List);
}

std::optional<opt::InputArgList> parseCommandLine(Context &Ctx,
                                                  const opt::OptTable &Table,
                                                  ArrayRef<const char *> Args,
                                                  StringSaver &Saver,
                                                  const CommandSpec &Spec) {
  Expected<opt::InputArgList> List =
      parseArgs(Table, Args, Saver, Spec.UnknownID);
  if (!List) {
    Ctx.error(List.takeError());
    return std::nullopt;
  }
  if (List->hasArg(Spec.HelpID)) {
    Table.printHelp(Ctx.Out, Spec.Usage, Spec.Title);
    return std::nullopt;
  }
  if (List->hasArg(Spec.VersionID)) {
    Ctx.Out << versionString() << "\n";
    return std::nullopt;
  }
  return std::move(*List);
}

int runCommand(ArrayRef<const char *> Args, raw_ostream &Out, raw_ostream &Err,
               const opt::OptTable &Table, const CommandSpec &Spec,
               CommandBody Body) {
  return runCommand(
      Args, Out, Err,
      [&](Context &Ctx, ArrayRef<const char *> Args, StringSaver &Saver) {
        if (std::optional<opt::InputArgList> List =
                parseCommandLine(Ctx, Table, Args, Saver, Spec))
          Body(Ctx, *List);
      });
}

int runCommand(ArrayRef<const char *> Args, raw_ostream &Out, raw_ostream &Err,
               RawCommandBody Body) {
  Context Ctx(Out, Err);
  BumpPtrAllocator Alloc;
  StringSaver Saver(Alloc);
  Body(Ctx, Args, Saver);
  return Ctx.exitCode();
}

std::string nearestName(StringRef Name, ArrayRef<StringRef> Candidates) {
  StringRef Best;
  unsigned BestEdits = MaxSuggestEdits + 1;
  for (StringRef C : Candidates) {
    unsigned Edits = Name.edit_distance(C);
    if (Edits < BestEdits) {
      BestEdits = Edits;
      Best = C;
    }
  }
  return Best.str();
}

Expected<lto::PartitionFirstMode> parsePartitionFirst(StringRef Name,
                                                       StringRef Value) {
  if (Value == "auto")
    return lto::PartitionFirstMode::Auto;
  if (Value == "always")
    return lto::PartitionFirstMode::Always;
  if (Value == "never")
    return lto::PartitionFirstMode::Never;
  return createStringError(inconvertibleErrorCode(),
                           "invalid value for %s: '%s' (expected auto, always "
                           "or never)",
                           Name.str().c_str(), Value.str().c_str());
}

Expected<unsigned> parseUnsigned(StringRef Name, StringRef Value,
                                 unsigned Max) {
  unsigned N;
  if (Value.getAsInteger(10, N) || N > Max)
    return createStringError(inconvertibleErrorCode(),
                             "invalid value for %s: '%s' (expected 0 to %u)",
                             Name.str().c_str(), Value.str().c_str(), Max);
  return N;
}

} // namespace fatlink
