//===- linker/Context.cpp - Diagnostics and temporary files --------------===//
//
// The one error sink of every fatlink command, and the temporary-file
// registry with its cleanup on exit and on signals.
//
//===----------------------------------------------------------------------===//

#include "linker/Context.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/WithColor.h"

using namespace llvm;

namespace fatlink {

TempFiles::~TempFiles() {
  if (saving())
    return;
  for (const std::string &F : Files) {
    sys::fs::remove(F);
    sys::DontRemoveFileOnSignal(F);
  }
}

Error TempFiles::saveIn(StringRef D, StringRef Prefix) {
  if (std::error_code EC = sys::fs::create_directories(D))
    return createStringError(EC, "cannot create --save-temps directory %s: %s",
                             D.str().c_str(), EC.message().c_str());
  SaveDir = D.str();
  SavePrefix = Prefix.str();
  return Error::success();
}

Expected<std::string> TempFiles::create(StringRef Name) {
  std::lock_guard<std::mutex> Lock(Mu);
  if (saving()) {
    SmallString<256> Path(SaveDir);
    sys::path::append(Path, SavePrefix.empty() ? Name.str()
                                               : SavePrefix + "." + Name.str());
    return std::string(Path);
  }
  // Directly in the temp directory (no private directory, which a signal
  // handler could not remove): "fatlink-sm_80-a1b2c3.ptx".
  SmallString<256> Path;
  StringRef Ext = sys::path::extension(Name);
  if (std::error_code EC = sys::fs::createTemporaryFile(
          "fatlink-" + sys::path::stem(Name), Ext.drop_front(), Path))
    return createStringError(EC, "cannot create a temporary file: %s",
                             EC.message().c_str());
  Files.push_back(std::string(Path));
  sys::RemoveFileOnSignal(Files.back());
  return Files.back();
}

Expected<std::string> TempFiles::write(StringRef Name, StringRef Data) {
  Expected<std::string> Path = create(Name);
  if (!Path)
    return Path.takeError();
  std::error_code EC;
  raw_fd_ostream OS(*Path, EC);
  if (!EC) {
    OS << Data;
    OS.close();
    EC = OS.error();
    OS.clear_error();
  }
  if (EC)
    return createStringError(EC, "cannot write %s: %s", Path->c_str(),
                             EC.message().c_str());
  return Path;
}

void Context::error(Error E) {
  handleAllErrors(std::move(E), [&](const ErrorInfoBase &EI) {
    error(EI.message());
  });
}

void Context::error(const Twine &Msg) {
  std::lock_guard<std::mutex> Lock(Mu);
  ++ErrorCount;
  WithColor::error(Err, "fatlink") << Msg << "\n";
}

void Context::warn(const Twine &Msg) {
  std::lock_guard<std::mutex> Lock(Mu);
  WithColor::warning(Err, "fatlink") << Msg << "\n";
}

void Context::verbose(const Twine &Msg) {
  if (!Verbose)
    return;
  std::lock_guard<std::mutex> Lock(Mu);
  Err << Msg << "\n";
}

void Context::verboseCommand(ArrayRef<StringRef> Argv) {
  if (!Verbose)
    return;
  auto IsSafe = [](char C) {
    return isAlnum(C) || StringRef("_./=,:+@%-").contains(C);
  };
  std::string Line;
  for (StringRef Arg : Argv) {
    if (!Line.empty())
      Line += ' ';
    if (!Arg.empty() && all_of(Arg, IsSafe)) {
      Line += Arg;
      continue;
    }
    Line += '\'';
    for (char C : Arg)
      Line += C == '\'' ? std::string("'\\''") : std::string(1, C);
    Line += '\'';
  }
  verbose(Line);
}

Error checkOutputsAreNotInputs(ArrayRef<std::string> Outputs,
                               ArrayRef<std::string> Inputs) {
  for (const std::string &Out : Outputs) {
    sys::fs::file_status OutStatus;
    if (Out.empty() || Out == "-" || sys::fs::status(Out, OutStatus))
      continue;
    for (const std::string &In : Inputs) {
      sys::fs::file_status InStatus;
      if (sys::fs::status(In, InStatus) ||
          !sys::fs::equivalent(InStatus, OutStatus))
        continue;
      return createStringError(inconvertibleErrorCode(),
                               "input file '%s' is the same as output file "
                               "'%s': writing it would destroy the input; "
                               "name another output",
                               In.c_str(), Out.c_str());
    }
  }
  return Error::success();
}

Expected<StagedFile> StagedFile::create(StringRef Path, StringRef Data) {
  auto Fail = [&](const Twine &Why) {
    return createStringError(inconvertibleErrorCode(), "cannot write %s: %s",
                             Path.str().c_str(), Why.str().c_str());
  };
  // Renaming over a directory would fail only at commit, after other
  // outputs may have been renamed into place.
  if (sys::fs::is_directory(Path))
    return Fail("it is a directory");
  Expected<sys::fs::TempFile> T =
      sys::fs::TempFile::create(Path + ".tmp%%%%%%%");
  if (!T)
    return Fail(toString(T.takeError()));
  raw_fd_ostream OS(T->FD, /*shouldClose=*/false);
  OS << Data;
  OS.flush();
  if (std::error_code EC = OS.error()) {
    OS.clear_error();
    consumeError(T->discard());
    return Fail(EC.message());
  }
  StagedFile F;
  F.Path = Path.str();
  F.Temp.emplace(std::move(*T));
  return std::move(F);
}

Error StagedFile::commit() {
  Error E = Temp->keep(Path);
  Temp.reset();
  if (E)
    return createStringError(inconvertibleErrorCode(), "cannot write %s: %s",
                             Path.c_str(), toString(std::move(E)).c_str());
  return Error::success();
}

StagedFile::~StagedFile() {
  if (Temp)
    consumeError(Temp->discard());
}

} // namespace fatlink
