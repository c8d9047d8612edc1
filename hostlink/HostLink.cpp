//===- hostlink/HostLink.cpp - `fatlink cc`: the host link wrapper -------===//
//
// `fatlink cc` (installed as `fatlink-cc`, for cargo's `linker = ...`) takes
// a cc/clang link command line exactly as rustc or a build system writes it
// and:
//
//   1. separates fatlink's own `--fatlink-*` arguments from the rest, which
//      reach the host linker byte for byte and in order (inside response
//      files too: a response file that holds none of ours is passed as is);
//   2. finds the files the host link opens, as GNU ld and the compiler
//      driver find them: files on the command line, `-l` (and `-Wl,-l`,
//      `--library=`) libraries searched in the `-L` (`--library-path=`)
//      directories, `=` and `$SYSROOT` prefixes read against `--sysroot`,
//      then in LIBRARY_PATH's directories (a driver's), `-Wl,@file`
//      response files read as the linker reads them, and GNU ld scripts
//      (any file that is no object, archive or shared library, found either
//      way or given with -T) followed through INPUT, GROUP, AS_NEEDED,
//      SEARCH_DIR and INCLUDE; a library in none of those directories is
//      looked for in the driver's own (`-print-search-dirs`, asked once,
//      and not for the C and C++ runtimes). What it cannot follow (a
//      library found nowhere, an unreadable script or `@file`, an MRI
//      script, a specs file) is a warning naming it (docs/cargo.md);
//   3. reads their device code (objects and archives with `.llvm.offloading`
//      images: fatlink embed, clang --offload-new-driver);
//   4. if there is any, runs the device link to a host object (the fatbin,
//      its registration wrapper and the kernel table) and adds it to the
//      link; if there is none, only forwards;
//   5. if nvcc -rdc host code is in the link (objects that call
//      __cudaRegisterLinkedBinary_<module id>), adds an archive that
//      defines those functions, registering the device object's fatbin
//      (NvccRegistration.h);
//   6. runs the host linker and returns its exit code, its output unchanged.
//
// Archives contribute every device image they hold, like --whole-archive:
// kernels are roots that nothing in the host code references by symbol, so
// a lazy rule would drop them; the device link's dead-code removal drops
// what no kernel reaches.
//
//===----------------------------------------------------------------------===//

#include "codegen/Codegen.h"
#include "hostlink/HostLink.h"
#include "hostlink/NvccRegistration.h"
#include "hostlink/Settings.h"
#include "linker/Cache.h"
#include "linker/Context.h"
#include "linker/DeviceBuild.h"
#include "linker/Options.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/BinaryFormat/Magic.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/StringSaver.h"
#include "llvm/Support/TimeProfiler.h"
#include "llvm/TargetParser/Host.h"

#include <map>

using namespace llvm;

namespace fatlink {

namespace {

/// Where an argument stands: in the command line itself (List -1) or in
/// the response file ResponseFiles[List], at Index; Split: `-l NAME`, two
/// arguments.
struct ArgRef {
  int List = -1;
  size_t Index = 0;
  bool Split = false;
};

/// A response file on the command line: forwarded as it is, or, when
/// fatlink takes arguments out of it or changes one, written anew.
struct ResponseFile {
  std::string Spelling; ///< "@file"
  std::vector<std::string> Args;
  bool Rewrite = false;
};

/// What fatlink learned from a cc command line.
struct HostLinkLine {
  /// Arguments for the host linker, in order, fatlink's removed.
  std::vector<std::string> Forward;
  /// fatlink's own arguments.
  std::vector<std::string> Own;
  /// Files whose device code goes into the device link, in link order.
  std::vector<std::string> Inputs;
  /// For each input, the argument that names it, when the command line
  /// names it by its path or as -lNAME (not through -Wl, or a script).
  std::vector<std::optional<ArgRef>> InputArgs;
  std::string Output;
  std::string TargetTriple; ///< from --target= / -target, if given
  /// The response files, in order, fatlink's arguments taken out; each
  /// stands as one ResponseFileMarker in Forward (or in another's Args).
  std::vector<ResponseFile> ResponseFiles;
  /// What fatlink could not follow, each naming the argument or file: the
  /// host linker may take device code from it that the device link lacks.
  std::vector<std::string> Warnings;
};

/// Stands in Forward for a response file.
// Two literals: "\x01fatlink" would be one hex escape, \x01fa (out of range).
constexpr const char *ResponseFileMarker = "\x01" "fatlink-response-file";
/// Stands where an argument was taken out of the line.
constexpr const char *DroppedMarker = "\x01" "fatlink-dropped";

/// cc options whose value is the next argument.
bool takesSeparateValue(StringRef Arg) {
  static constexpr const char *Separate[] = {
      "-o",       "-L",         "-l",       "-x",         "-T",
      "-u",       "-e",         "-z",       "-Xlinker",   "-include",
      "-I",       "-isystem",   "-MF",      "-MT",        "-MQ",
      "-target",  "-arch",      "-isysroot", "--sysroot", "-Xassembler",
      "-Xpreprocessor", "-dumpdir", "-specs", "--param",
  };
  return is_contained(Separate, Arg);
}

/// GNU ld options (as -Wl, or -Xlinker parts) whose value is the next
/// argument: their value is no input file. -L, -l, --library-path,
/// --library, -T and --script are handled before this list is consulted.
bool linkerTakesSeparateValue(StringRef Arg) {
  static constexpr const char *Separate[] = {
      "-o", "--output", "-e", "--entry", "-u", "--undefined", "-m", "-z",
      "-R", "-rpath", "-rpath-link", "-soname", "-h", "-y", "--trace-symbol",
      "-Map", "--version-script", "--dynamic-list", "-a", "-A",
      "--architecture", "-b", "--format", "-F", "--filter", "-f",
      "--auxiliary", "-G", "--gpsize", "-I", "--dynamic-linker", "-O",
      "--plugin", "--plugin-opt", "--defsym", "--wrap", "--exclude-libs",
      "-Ttext", "-Tdata", "-Tbss", "--section-start", "--hash-style",
      "--sort-section", "--spare-dynamic-tags",
      "--dependency-file", "--retain-symbols-file", "--just-symbols",
      "--image-base", "-Y", "--fini", "--init", "-assert",
  };
  return is_contained(Separate, Arg);
}

/// One thing on the link line that can name files: a path, a -l library,
/// or a -T script.
struct LinkItem {
  enum KindTy { File, Library, Script } Kind;
  std::string Name;
  bool StaticOnly = false; ///< Library: -Bstatic was in effect
  /// File: the driver compiles it (a source file by its extension or after
  /// `-x LANG`), so the linker never sees it as a script.
  bool Source = false;
  /// The argument that names it, for a file or library the command line
  /// names itself (not through -Wl, or -Xlinker).
  std::optional<ArgRef> Arg = std::nullopt;
};

/// Whether the compiler driver compiles a file of this name rather than
/// passing it to the linker (gcc's and clang's default languages).
bool isSourceFile(StringRef Path) {
  static constexpr const char *Exts[] = {
      ".c",   ".i",   ".h",   ".cc",  ".cp",  ".cxx", ".cpp", ".c++",
      ".C",   ".CPP", ".ii",  ".hh",  ".hpp", ".hxx", ".H",   ".m",
      ".mi",  ".mm",  ".M",   ".mii", ".s",   ".S",   ".sx",  ".asm",
      ".cu",  ".cui", ".hip", ".f",   ".for", ".ftn", ".F",   ".FOR",
      ".fpp", ".FPP", ".FTN", ".f90", ".f95", ".f03", ".f08", ".F90",
      ".F95", ".F03", ".F08", ".d",   ".go",  ".ads", ".adb", ".cl",
      ".ll",  ".bc",  ".pcm", ".gch", ".pch"};
  return is_contained(Exts, sys::path::extension(Path));
}

class LineParser {
public:
  LineParser(StringSaver &Saver) : Saver(Saver) {}

  Expected<HostLinkLine> parse(ArrayRef<const char *> Args);
  /// Finds the files behind the items as the host linker will: Driver says
  /// whether the host linker is a compiler driver (gcc, clang), which adds
  /// LIBRARY_PATH's directories to the search; LibraryPath is its value.
  /// AskDriver gives the driver's own library directories
  /// (`-print-search-dirs`); it runs at most once, for a library found
  /// nowhere else.
  void findInputs(HostLinkLine &Line, bool Driver,
                  std::optional<std::string> LibraryPath,
                  std::function<Expected<std::vector<std::string>>()> AskDriver);

private:
  Error walk(ArrayRef<const char *> Args, std::vector<std::string> &Forward,
             int List);
  void linkerArg(StringRef Arg);
  void linkerResponseFile(StringRef Arg);

  // Resolution (findInputs).
  std::string sysrooted(StringRef Path) const;
  std::optional<std::string> searchLibrary(StringRef Name, bool StaticOnly);
  std::optional<std::string> searchFile(StringRef Name);
  void addLibrary(StringRef Name, bool StaticOnly, unsigned Depth,
                  std::optional<ArgRef> Arg = std::nullopt);
  void addFile(StringRef Path, unsigned Depth, bool SkipShared = false,
               bool MayBeScript = true,
               std::optional<ArgRef> Arg = std::nullopt);
  void readScript(StringRef Path, unsigned Depth);
  void warn(const Twine &Msg) { Line->Warnings.push_back(Msg.str()); }

  StringSaver &Saver;
  HostLinkLine Parsed;
  HostLinkLine *Line = nullptr;
  /// -L directories as written (`=dir` and `$SYSROOT/dir` resolved later,
  /// since --sysroot may come after them).
  std::vector<std::string> LibDirs;
  /// The search path: LibDirs resolved, then LIBRARY_PATH's, then the
  /// scripts' SEARCH_DIRs.
  std::vector<std::string> SearchDirs;
  std::vector<LinkItem> Items;
  std::string Sysroot;
  bool Driver = false;
  std::function<Expected<std::vector<std::string>>()> AskDriver;
  /// The driver's own library directories, searched last; asked for once.
  std::optional<std::vector<std::string>> DriverDirs;
  bool Static = false;
  std::string Language; ///< -x LANG: the files after it are compiled
  SmallVector<bool, 4> StaticStack; ///< -Wl,--push-state
  /// The linker option whose value the next linker argument is ("" for
  /// none): -Wl,-L,dir and -Xlinker -L -Xlinker dir.
  std::string PendingLinkerOpt;
  /// Scripts already read, against INPUT cycles.
  DenseSet<sys::fs::UniqueID> ScriptsSeen;
};

} // namespace

/// An argument the compiler driver passes to the linker (-Wl, -Xlinker),
/// in GNU ld's syntax.
void LineParser::linkerArg(StringRef Arg) {
  if (!PendingLinkerOpt.empty()) {
    std::string Opt = std::move(PendingLinkerOpt);
    PendingLinkerOpt.clear();
    if (Opt == "-L" || Opt == "--library-path")
      LibDirs.push_back(Arg.str());
    else if (Opt == "-l" || Opt == "--library")
      Items.push_back({LinkItem::Library, Arg.str(), Static});
    else if (Opt == "-T" || Opt == "--script" || Opt == "-dT" ||
             Opt == "--default-script")
      Items.push_back({LinkItem::Script, Arg.str()});
    else if (Opt == "-c" || Opt == "--mri-script")
      Parsed.Warnings.push_back(
          (Opt + " " + Arg + ": fatlink does not read MRI scripts; device code "
           "in the libraries it names is not linked")
              .str());
    return;
  }
  if (Arg == "-Bstatic" || Arg == "-static" || Arg == "-dn" || Arg == "-non_shared")
    Static = true;
  else if (Arg == "-Bdynamic" || Arg == "-dy" || Arg == "-call_shared")
    Static = false;
  else if (Arg == "--push-state")
    StaticStack.push_back(Static);
  else if (Arg == "--pop-state") {
    if (!StaticStack.empty())
      Static = StaticStack.pop_back_val();
  } else if (Arg == "-L" || Arg == "--library-path" || Arg == "-l" ||
           Arg == "--library" || Arg == "-T" || Arg == "--script" ||
           Arg == "-dT" || Arg == "--default-script" || Arg == "-c" ||
           Arg == "--mri-script" || linkerTakesSeparateValue(Arg))
    PendingLinkerOpt = Arg.str();
  else if (Arg.consume_front("--library-path=") || Arg.consume_front("-L"))
    LibDirs.push_back(Arg.str());
  else if (Arg.consume_front("--library=") || Arg.consume_front("-l"))
    Items.push_back({LinkItem::Library, Arg.str(), Static});
  else if (Arg.consume_front("--script=") || Arg.consume_front("--default-script="))
    Items.push_back({LinkItem::Script, Arg.str()});
  else if (Arg.consume_front("--sysroot="))
    Sysroot = Arg.str();
  else if (Arg.starts_with("@") && Arg.size() > 1)
    linkerResponseFile(Arg);
  else if (Arg.starts_with("-T") && !Arg.starts_with("-Ttext") &&
           !Arg.starts_with("-Tdata") && !Arg.starts_with("-Tbss") &&
           !Arg.starts_with("-Trodata") && !Arg.starts_with("-Tldata"))
    Items.push_back({LinkItem::Script, Arg.drop_front(2).str()});
  else if (!Arg.starts_with("-") && sys::fs::is_regular_file(Arg))
    Items.push_back({LinkItem::File, Arg.str()});
}

/// -Wl,@file: the linker reads the file's arguments (GNU quoting, nested
/// @files too) as if they stood there.
void LineParser::linkerResponseFile(StringRef Arg) {
  SmallVector<const char *, 64> Expanded = {Saver.save(Arg).data()};
  if (Error E = expandResponseFiles(Expanded, Saver)) {
    Parsed.Warnings.push_back("-Wl," + Arg.str() + ": " +
                              toString(std::move(E)) +
                              ": the libraries and files it names are not "
                              "searched for device code");
    return;
  }
  for (StringRef A : Expanded) {
    // Left as it was: a file that does not exist (ld takes the argument
    // for a file name and fails), or one already being read.
    if (A.starts_with("@")) {
      Parsed.Warnings.push_back("-Wl," + A.str() +
                                ": cannot expand response file: fatlink "
                                "cannot read it; the libraries and files it "
                                "names are not searched for device code");
      continue;
    }
    linkerArg(A);
  }
}

/// Walks the arguments, appending those for the host linker to Forward,
/// which is the command line (List -1) or ResponseFiles[List]'s.
Error LineParser::walk(ArrayRef<const char *> Args,
                       std::vector<std::string> &Forward, int List) {
  for (size_t I = 0; I < Args.size(); ++I) {
    StringRef Arg = Args[I];
    if (isFatlinkArg(Arg)) {
      Parsed.Own.push_back(Arg.str());
      continue;
    }
    if (Arg.starts_with("@") && Arg.size() > 1) {
      // Read the response file (and those it names); the file itself is
      // forwarded unless it holds fatlink arguments, which must not reach
      // the host linker: then its other arguments go into a rewritten one.
      SmallVector<const char *, 64> Expanded = {Arg.data()};
      if (Error E = expandResponseFiles(Expanded, Saver))
        return E;
      size_t OwnBefore = Parsed.Own.size();
      int Index = static_cast<int>(Parsed.ResponseFiles.size());
      Parsed.ResponseFiles.push_back({Arg.str(), {}, false});
      std::vector<std::string> Inner;
      if (Error E = walk(Expanded, Inner, Index))
        return E;
      Parsed.ResponseFiles[Index].Args = std::move(Inner);
      Parsed.ResponseFiles[Index].Rewrite = Parsed.Own.size() != OwnBefore;
      Forward.push_back(ResponseFileMarker + std::to_string(Index));
      continue;
    }
    Forward.push_back(Arg.str());

    auto Next = [&]() -> StringRef {
      if (I + 1 >= Args.size())
        return "";
      ++I;
      Forward.push_back(Args[I]);
      return Args[I];
    };
    if (Arg == "-o")
      Parsed.Output = Next().str();
    else if (Arg.starts_with("-o"))
      Parsed.Output = Arg.drop_front(2).str();
    else if (Arg == "-L")
      LibDirs.push_back(Next().str());
    else if (Arg.starts_with("-L"))
      LibDirs.push_back(Arg.drop_front(2).str());
    else if (Arg == "-l")
      Items.push_back({LinkItem::Library, Next().str(), Static, false,
                       ArgRef{List, Forward.size() - 2, true}});
    else if (Arg.starts_with("-l"))
      Items.push_back({LinkItem::Library, Arg.drop_front(2).str(), Static,
                       false, ArgRef{List, Forward.size() - 1, false}});
    else if (Arg == "-Xlinker")
      linkerArg(Next());
    else if (Arg.consume_front("-Wl,")) {
      SmallVector<StringRef, 8> Parts;
      Arg.split(Parts, ',');
      for (StringRef P : Parts)
        linkerArg(P);
    } else if (Arg == "-static")
      Static = true;
    else if (Arg == "-T")
      Items.push_back({LinkItem::Script, Next().str()});
    else if (Arg == "--sysroot")
      Sysroot = Next().str();
    else if (Arg.consume_front("--sysroot="))
      Sysroot = Arg.str();
    else if (Arg == "-target")
      Parsed.TargetTriple = Next().str();
    else if (Arg.consume_front("--target="))
      Parsed.TargetTriple = Arg.str();
    else if (Arg == "-specs" || Arg.starts_with("-specs=") ||
             Arg.starts_with("--specs=")) {
      StringRef File = Arg == "-specs" ? Next() : Arg.split('=').second;
      Parsed.Warnings.push_back(
          ("-specs " + File + ": fatlink does not read specs files; device "
           "code in libraries the specs file adds is not linked")
              .str());
    } else if (Arg == "-x")
      Language = Next().str();
    else if (Arg.starts_with("-x") && !Arg.starts_with("-x-"))
      Language = Arg.drop_front(2).str();
    else if (takesSeparateValue(Arg))
      Next();
    else if (!Arg.starts_with("-") && Arg != "-")
      Items.push_back({LinkItem::File, Arg.str(), false,
                       (!Language.empty() && Language != "none") ||
                           isSourceFile(Arg),
                       ArgRef{List, Forward.size() - 1, false}});
  }
  return Error::success();
}

Expected<HostLinkLine> LineParser::parse(ArrayRef<const char *> Args) {
  if (Error E = walk(Args, Parsed.Forward, /*List=*/-1))
    return std::move(E);
  if (!PendingLinkerOpt.empty())
    Parsed.Warnings.push_back("linker option " + PendingLinkerOpt +
                              " at the end of the line has no value");
  return std::move(Parsed);
}

//===----------------------------------------------------------------------===//
// Finding the files, as GNU ld does
//===----------------------------------------------------------------------===//

/// Libraries of the C and C++ runtimes and the sanitizers, which compiler
/// drivers and rustc name on every link.
static bool isRuntimeLibrary(StringRef Name) {
  static constexpr const char *Names[] = {
      "c",     "m",      "dl",     "rt",       "pthread", "util",
      "gcc",   "gcc_s",  "gcc_eh", "stdc++",   "c++",     "c++abi",
      "unwind", "atomic", "ssp",   "ssp_nonshared", "resolv", "crypt",
      "anl",   "nsl",    "mvec",   "supc++",   "asan",    "ubsan",
      "tsan",  "lsan",   "gomp",   "quadmath", "gfortran", "z"};
  return is_contained(Names, Name);
}

/// GNU ld's sysroot prefixes: `=dir` and `$SYSROOT/dir` name dir inside the
/// sysroot (--sysroot; without one, ld's built-in sysroot, "" on a native
/// Debian or Ubuntu ld).
std::string LineParser::sysrooted(StringRef Path) const {
  if (Path.consume_front("="))
    return Sysroot + Path.str();
  if (Path.consume_front("$SYSROOT"))
    return Sysroot + Path.str();
  return Path.str();
}

/// -lNAME: the file the linker takes, searching the directories in order;
/// in each, libNAME.so before libNAME.a unless -Bstatic was in effect.
/// -l:FILE names the file itself.
std::optional<std::string> LineParser::searchLibrary(StringRef Name,
                                                     bool StaticOnly) {
  SmallVector<std::string, 2> Candidates;
  StringRef LibName = Name;
  if (Name.consume_front(":")) {
    Candidates.push_back(Name.str());
  } else {
    if (!StaticOnly)
      Candidates.push_back(("lib" + Name + ".so").str());
    Candidates.push_back(("lib" + Name + ".a").str());
  }
  auto Search = [&](ArrayRef<std::string> Dirs) -> std::optional<std::string> {
    for (const std::string &Dir : Dirs)
      for (const std::string &C : Candidates) {
        SmallString<256> Path(Dir);
        sys::path::append(Path, C);
        if (sys::fs::is_regular_file(Path))
          return std::string(Path);
      }
    return std::nullopt;
  };
  if (std::optional<std::string> Path = Search(SearchDirs))
    return Path;
  // The C and C++ runtimes, which every link names, live in the driver's
  // directories and carry no device code: not worth asking the driver.
  if (isRuntimeLibrary(LibName))
    return std::nullopt;
  if (Driver && !DriverDirs) {
    Expected<std::vector<std::string>> Dirs = AskDriver();
    if (!Dirs) {
      warn("cannot ask the host linker for its library directories: " +
           toString(Dirs.takeError()));
      Dirs = std::vector<std::string>();
    }
    DriverDirs = std::move(*Dirs);
  }
  if (DriverDirs)
    if (std::optional<std::string> Path = Search(*DriverDirs))
      return Path;
  // ld fails with "cannot find -lNAME", or finds it in its own built-in
  // directories (/usr/local/lib), which fatlink cannot know.
  warn("-l" + LibName + ": not found in the -L directories" +
       (Driver ? ", LIBRARY_PATH or the compiler's library directories"
               : " (the host linker is no compiler driver, so fatlink does "
                 "not ask it for its directories)") +
       ": if the host linker finds it in its built-in directories, device "
       "code in it is not linked");
  return std::nullopt;
}

/// A file named in a script's INPUT or GROUP without -l: the current
/// directory first, then the search path (ld's ldfile_open_file).
std::optional<std::string> LineParser::searchFile(StringRef Name) {
  if (sys::fs::exists(Name) || sys::path::is_absolute(Name))
    return Name.str();
  for (const std::string &Dir : SearchDirs) {
    SmallString<256> Path(Dir);
    sys::path::append(Path, Name);
    if (sys::fs::exists(Path))
      return std::string(Path);
  }
  return std::nullopt;
}

void LineParser::addLibrary(StringRef Name, bool StaticOnly, unsigned Depth,
                            std::optional<ArgRef> Arg) {
  if (std::optional<std::string> Path = searchLibrary(Name, StaticOnly))
    addFile(*Path, Depth, /*SkipShared=*/true, /*MayBeScript=*/true, Arg);
}

/// A file the linker opens: an object or archive is an input (the reader
/// skips what carries no device code), so is a shared library named on the
/// command line (found via -l or a script, it carries its own device code
/// and is not read: SkipShared); any other file is a linker script to GNU
/// ld, whose inputs are followed.
void LineParser::addFile(StringRef Path, unsigned Depth, bool SkipShared,
                         bool MayBeScript, std::optional<ArgRef> Arg) {
  file_magic Magic;
  if (!MayBeScript || !sys::fs::is_regular_file(Path) ||
      identify_magic(Path, Magic) || Magic != file_magic::unknown) {
    if (!(SkipShared && Magic == file_magic::elf_shared_object)) {
      Line->Inputs.push_back(Path.str());
      Line->InputArgs.push_back(Arg);
    }
    return;
  }
  readScript(Path, Depth);
}

namespace {

/// The words of a linker script with its punctuation ( ) , ; { } as
/// one-character tokens and /* comments */ dropped. Enough of ld's lexer to
/// find the commands that name files; expressions come apart into words
/// that are ignored.
Expected<std::vector<StringRef>> tokenizeScript(StringRef S) {
  std::vector<StringRef> Tokens;
  while (true) {
    S = S.ltrim();
    if (S.empty())
      return Tokens;
    if (S.starts_with("/*")) {
      size_t End = S.find("*/", 2);
      if (End == StringRef::npos)
        return createStringError(inconvertibleErrorCode(),
                                 "unterminated comment");
      S = S.drop_front(End + 2);
      continue;
    }
    if (S.front() == '"') {
      size_t End = S.find('"', 1);
      if (End == StringRef::npos)
        return createStringError(inconvertibleErrorCode(),
                                 "unterminated quoted string");
      Tokens.push_back(S.slice(1, End));
      S = S.drop_front(End + 1);
      continue;
    }
    if (StringRef("(),;{}").contains(S.front())) {
      Tokens.push_back(S.take_front(1));
      S = S.drop_front(1);
      continue;
    }
    size_t End = S.find_first_of(" \t\r\n\v\f(),;{}\"");
    Tokens.push_back(S.take_front(End));
    S = S.drop_front(std::min(End, S.size()));
  }
}

} // namespace

/// GNU ld script: INPUT(...) and GROUP(...) name files (`-lNAME` searched
/// like -l, others in the current directory, then the search path), with
/// AS_NEEDED(...) inside them; SEARCH_DIR(dir) extends the search path;
/// INCLUDE file reads another script. A script inside the sysroot has its
/// absolute names looked up in the sysroot (ld manual, "File Commands").
void LineParser::readScript(StringRef Path, unsigned Depth) {
  constexpr unsigned MaxDepth = 16;
  constexpr uint64_t MaxScriptSize = 1 << 20;
  sys::fs::file_status Status;
  // Only regular files: a FIFO named by INCLUDE would block.
  if (sys::fs::status(Path, Status) || Depth > MaxDepth ||
      Status.type() != sys::fs::file_type::regular_file)
    return;
  if (!ScriptsSeen.insert(Status.getUniqueID()).second)
    return; // A script that includes itself: ld would not end either.
  if (Status.getSize() > MaxScriptSize) {
    warn(Path + ": not an object, archive or shared library, and too large "
                "(" + Twine(Status.getSize()) + " bytes) for a linker script: "
                "its inputs are not searched for device code");
    return;
  }
  ErrorOr<std::unique_ptr<MemoryBuffer>> MB = MemoryBuffer::getFile(Path);
  if (!MB)
    return; // The host linker reports it.
  Expected<std::vector<StringRef>> Tokens = tokenizeScript((*MB)->getBuffer());
  auto CannotRead = [&](const Twine &Why) {
    warn(Path + ": cannot read it as a GNU ld script (" + Why +
         "): the inputs it names are not searched for device code");
  };
  if (!Tokens) {
    CannotRead(toString(Tokens.takeError()));
    return;
  }
  bool InSysroot = !Sysroot.empty() && Path.starts_with(Sysroot);
  auto Resolve = [&](StringRef Name) -> std::optional<std::string> {
    if (Name.starts_with("=") || Name.starts_with("$SYSROOT"))
      return sysrooted(Name);
    if (InSysroot && sys::path::is_absolute(Name))
      return Sysroot + Name.str();
    return searchFile(Name);
  };

  ArrayRef<StringRef> T = *Tokens;
  for (size_t I = 0; I < T.size(); ++I) {
    StringRef Cmd = T[I];
    if (Cmd == "INCLUDE" && I + 1 < T.size()) {
      if (std::optional<std::string> P = Resolve(T[++I]))
        readScript(*P, Depth + 1);
      continue;
    }
    bool IsFiles = Cmd == "INPUT" || Cmd == "GROUP";
    if ((!IsFiles && Cmd != "SEARCH_DIR") || I + 1 >= T.size() ||
        T[I + 1] != "(")
      continue;
    // The names up to the matching ')', through AS_NEEDED( ).
    unsigned Open = 0;
    size_t J = I + 1;
    for (; J < T.size(); ++J) {
      StringRef W = T[J];
      if (W == "(") {
        ++Open;
      } else if (W == ")") {
        if (--Open == 0)
          break;
      } else if (W == "," || W == "AS_NEEDED") {
        continue;
      } else if (!IsFiles) {
        SearchDirs.push_back(sysrooted(W));
      } else if (W.starts_with("-l")) {
        addLibrary(W.drop_front(2), /*StaticOnly=*/false, Depth + 1);
      } else if (std::optional<std::string> P = Resolve(W)) {
        addFile(*P, Depth + 1, /*SkipShared=*/true);
      }
    }
    if (J == T.size()) {
      CannotRead(Cmd + " has no closing ')'");
      return;
    }
    I = J;
  }
}

void LineParser::findInputs(
    HostLinkLine &L, bool IsDriver, std::optional<std::string> LibraryPath,
    std::function<Expected<std::vector<std::string>>()> Ask) {
  Line = &L;
  Driver = IsDriver;
  AskDriver = std::move(Ask);
  // ld searches every -L directory for every -l, wherever each stands;
  // gcc and clang add LIBRARY_PATH's directories after them (an empty
  // entry is the current directory).
  for (const std::string &Dir : LibDirs)
    SearchDirs.push_back(sysrooted(Dir));
  if (Driver && LibraryPath) {
    SmallVector<StringRef, 8> Dirs;
    StringRef(*LibraryPath).split(Dirs, sys::EnvPathSeparator);
    for (StringRef Dir : Dirs)
      SearchDirs.push_back(Dir.empty() ? "." : Dir.str());
  }
  for (const LinkItem &Item : Items) {
    switch (Item.Kind) {
    case LinkItem::File:
      addFile(Item.Name, 0, /*SkipShared=*/false, !Item.Source, Item.Arg);
      break;
    case LinkItem::Library:
      addLibrary(Item.Name, Item.StaticOnly, 0, Item.Arg);
      break;
    case LinkItem::Script:
      // -T script: searched in the current directory, then the search path.
      if (std::optional<std::string> P = searchFile(Item.Name))
        readScript(*P, 0);
      break;
    }
  }
}

//===----------------------------------------------------------------------===//
// The command
//===----------------------------------------------------------------------===//

/// Quotes an argument for a GNU response file.
static std::string quoteForResponseFile(StringRef Arg) {
  std::string Q = "'";
  for (char C : Arg) {
    if (C == '\\' || C == '\'')
      Q += '\\';
    Q += C;
  }
  return Q + "'";
}

/// Resolves the markers in \p In into \p Out: taken-out arguments dropped,
/// each response file forwarded as it was or, when fatlink changed it,
/// written anew (in a dry run only named, `@<link-N.rsp>`).
static Error resolveArgs(Context &Ctx, const HostLinkLine &Line,
                         ArrayRef<std::string> In,
                         std::vector<std::string> &Out, bool DryRun) {
  for (const std::string &A : In) {
    if (A == DroppedMarker)
      continue;
    StringRef Rest = A;
    size_t Index;
    if (!Rest.consume_front(ResponseFileMarker) || Rest.getAsInteger(10, Index)) {
      Out.push_back(A);
      continue;
    }
    const ResponseFile &RF = Line.ResponseFiles[Index];
    if (!RF.Rewrite) {
      Out.push_back(RF.Spelling);
      continue;
    }
    std::string Name = "link-" + std::to_string(Index) + ".rsp";
    if (DryRun) {
      Out.push_back("@<" + Name + ">");
      continue;
    }
    std::vector<std::string> Inner;
    if (Error E = resolveArgs(Ctx, Line, RF.Args, Inner, DryRun))
      return E;
    Expected<std::string> Path = Ctx.Temps.create(Name);
    if (!Path)
      return Path.takeError();
    std::error_code EC;
    raw_fd_ostream OS(*Path, EC);
    if (EC)
      return createStringError(EC, "cannot write %s: %s", Path->c_str(),
                               EC.message().c_str());
    for (const std::string &Arg : Inner)
      OS << quoteForResponseFile(Arg) << "\n";
    OS.close();
    if (std::error_code EC = OS.error()) {
      OS.clear_error();
      return createStringError(EC, "cannot write %s: %s", Path->c_str(),
                               EC.message().c_str());
    }
    Out.push_back("@" + *Path);
  }
  return Error::success();
}

/// The host linker's arguments: the forwarded ones (resolveArgs), then
/// fatlink's files (the device object, the nvcc registration archive).
static Expected<std::vector<std::string>>
hostLinkerArgs(Context &Ctx, const HostLinkLine &Line,
               ArrayRef<std::string> Added, bool DryRun) {
  std::vector<std::string> Args;
  if (Error E = resolveArgs(Ctx, Line, Line.Forward, Args, DryRun))
    return std::move(E);
  Args.insert(Args.end(), Added.begin(), Added.end());
  return Args;
}

/// Whether the host linker is a compiler driver (cc, gcc, clang++-22, a
/// cross gcc) rather than a linker itself (ld, ld.lld, x86_64-linux-gnu-ld,
/// mold): only drivers add LIBRARY_PATH to the library search.
static bool isCompilerDriver(StringRef Linker) {
  StringRef Name = sys::path::filename(Linker);
  return !(Name == "ld" || Name.ends_with("-ld") || Name.starts_with("ld.") ||
           Name.contains("-ld.") || Name == "lld" || Name == "mold" ||
           Name.starts_with("ld64"));
}

/// The compiler driver's own library directories, which it passes to the
/// linker as -L after the user's: the `libraries: =a:b` line of
/// `-print-search-dirs` (gcc and clang).
static Expected<std::vector<std::string>>
driverLibraryDirs(Context &Ctx, StringRef Linker) {
  Expected<std::string> Out =
      codegen::runProgram(Ctx, Linker, {Linker, "-print-search-dirs"},
                          /*TimeoutSeconds=*/30,
                          "the host linker's -print-search-dirs");
  if (!Out)
    return Out.takeError();
  std::vector<std::string> Dirs;
  SmallVector<StringRef, 8> Lines;
  StringRef(*Out).split(Lines, '\n');
  for (StringRef L : Lines) {
    if (!L.consume_front("libraries: ="))
      continue;
    SmallVector<StringRef, 16> Parts;
    L.trim().split(Parts, sys::EnvPathSeparator, -1, /*KeepEmpty=*/false);
    for (StringRef P : Parts)
      Dirs.push_back(P.str());
  }
  return Dirs;
}

static Expected<std::string> findLinker(StringRef Name) {
  if (Name.contains('/')) {
    if (!sys::fs::can_execute(Name))
      return createStringError(inconvertibleErrorCode(),
                               "host linker %s not found or not executable",
                               Name.str().c_str());
    return Name.str();
  }
  ErrorOr<std::string> Path = sys::findProgramByName(Name);
  if (!Path)
    return createStringError(inconvertibleErrorCode(),
                             "host linker '%s' not found in PATH: set "
                             "--fatlink-linker= or FATLINK_LINKER",
                             Name.str().c_str());
  return *Path;
}

static int runHostLinker(Context &Ctx, StringRef Linker,
                         ArrayRef<std::string> Args) {
  std::vector<StringRef> Argv = {Linker};
  for (const std::string &A : Args)
    Argv.push_back(A);
  Ctx.verboseCommand(Argv);
  std::string ErrMsg;
  bool Failed = false;
  // Inherit stdio: the linker's messages reach the user unchanged.
  int RC = sys::ExecuteAndWait(Argv[0], Argv, std::nullopt, {}, 0, 0, &ErrMsg,
                               &Failed);
  if (Failed) {
    Ctx.error("cannot run the host linker " + Linker + ": " + ErrMsg);
    return 1;
  }
  if (RC < 0) {
    Ctx.error("the host linker " + Linker + " crashed: " + ErrMsg);
    return 1;
  }
  return RC;
}

namespace {

/// What the device half of the link adds to the host link.
struct DeviceResult {
  /// The host object (a placeholder in a dry run); empty when the inputs
  /// carry no device code.
  std::string Object;
  /// Its wrapper symbol (packager::wrapperSymbol), for nvcc registration.
  std::string WrapperSymbol;
};

} // namespace

static std::string hostTripleOf(const HostLinkLine &Line) {
  return Line.TargetTriple.empty() ? sys::getDefaultTargetTriple()
                                   : Line.TargetTriple;
}

/// The link log's summary of the device link, which -v prints only when
/// the link is not reused from the cache.
static void logProgram(Context &Ctx, StringRef Output,
                       const lto::InputSet &Inputs, const DeviceBuild &B) {
  if (!Ctx.Log)
    return;
  raw_ostream &OS = *Ctx.Log;
  OS << "fatlink cc: device link of " << Output << "\n  inputs:";
  for (const lto::DeviceImage &Image : Inputs.Images)
    OS << " " << Image.Origin;
  for (const lto::DeviceObject &O : Inputs.Objects)
    OS << " " << O.Origin;
  OS << "\n  targets:";
  for (const lto::Target &T : B.Targets)
    OS << " " << T.Name;
  OS << "\n  kernels (" << B.Program.Kernels.size() << "):";
  for (const lto::KernelInfo &K : B.Program.Kernels)
    OS << " " << K.Name;
  OS << "\n";
}

/// The linked device code defines no kernel: names its inputs and the usual
/// cause.
static Error noKernelsError(const lto::InputSet &Inputs) {
  std::string List;
  for (const lto::DeviceImage &Image : Inputs.Images)
    List += "\n>>> " + Image.Origin;
  for (const lto::DeviceObject &O : Inputs.Objects)
    List += "\n>>> " + O.Origin;
  return createStringError(
      "the linked program has device code but no kernels: nothing can be "
      "launched. A Rust kernel is `#[no_mangle] pub unsafe extern "
      "\"ptx-kernel\" fn` (not `extern \"C\"`), a CUDA C++ one "
      "`__global__`; a program that only carries device functions links "
      "with --fatlink-allow-no-kernels (FATLINK_ALLOW_NO_KERNELS=1). Device "
      "inputs:" +
      List);
}

/// The device half of the link: device images in, host object path out.
static Expected<DeviceResult> deviceLinkForHost(Context &Ctx,
                                                const HostLinkLine &Line,
                                                const Settings &S, bool DryRun,
                                                bool &HasDeviceCode) {
  TimeTraceScope Scope("Device link");
  Expected<lto::InputSet> Inputs =
      lto::readInputs(Line.Inputs, lto::InputMode::HostLink);
  if (!Inputs)
    return Inputs.takeError();
  // Bitcode, or relocatable device code alone (nvcc -dc objects, clang's
  // cubins without -foffload-lto): either needs the device link.
  if (Inputs->Images.empty() && Inputs->Objects.empty()) {
    Ctx.verbose("fatlink: no device code in the inputs; forwarding only");
    return DeviceResult();
  }
  HasDeviceCode = true;

  Expected<DeviceLinkConfig> C = deviceConfigFromSettings(S, "all-major");
  if (!C)
    return C.takeError();
  // The host object is for the line's --target, else for the host-arch
  // setting (a cross cc, aarch64-linux-gnu-gcc, takes no --target), else
  // for this machine. A setting the line contradicts would only make the
  // host linker refuse the object, naming neither.
  if (!S.get("host-arch") || !Line.TargetTriple.empty()) {
    Expected<packager::HostArch> Host =
        packager::parseHostArch(hostTripleOf(Line));
    if (!Host)
      return Host.takeError();
    if (S.get("host-arch") && *Host != C->HostArch)
      return createStringError(
          inconvertibleErrorCode(),
          "%s is %s, but the link line's --target is %s: the host object "
          "must be for the arch the host linker links; unset %s, or make it "
          "agree",
          S.nameOf("host-arch").c_str(), S.get("host-arch")->str().c_str(),
          Line.TargetTriple.c_str(), S.nameOf("host-arch").c_str());
    C->HostArch = *Host;
  }

  if (DryRun) {
    if (Error E = printDevicePlan(Ctx, *C, *Inputs))
      return std::move(E);
    return DeviceResult{"<fatlink-device.o>", ""};
  }

  C->RequireKernels = !S.flag("allow-no-kernels");
  Expected<DeviceBuild> B =
      buildDeviceCached(Ctx, *C, *Inputs, [&] { return probeTools(Ctx, *C); });
  if (!B)
    return B.takeError();
  // A program with device code and no kernel launches nothing; under cargo
  // a warning is never seen (rustc hides the linker's output), so this is
  // an error, found at link time rather than at the first launch.
  if (C->RequireKernels && B->Program.Kernels.empty())
    return noKernelsError(*Inputs);
  logProgram(Ctx, Line.Output, *Inputs, *B);
  Expected<std::string> Path = Ctx.Temps.write("device.o", B->Object);
  if (!Path)
    return Path.takeError();
  return DeviceResult{*Path, packager::wrapperSymbol(B->Fatbin)};
}

/// nvcc -rdc host code in the link: the archive that defines the
/// __cudaRegisterLinkedBinary_<id> functions it calls, registering the
/// device object's fatbin (empty when there is none). Every module must
/// have its device code in that fatbin, so a module without device code,
/// or a link without a device object, is an error.
static Expected<std::string> nvccRegistration(Context &Ctx,
                                              const HostLinkLine &Line,
                                              const NvccInputs &Nvcc,
                                              const DeviceResult &Device,
                                              bool DryRun) {
  TimeTraceScope Scope("nvcc registration");
  const std::vector<NvccModule> *Modules = &Nvcc.Modules;
  if (Modules->empty())
    return std::string();

  std::string Missing;
  for (const NvccModule &M : *Modules)
    if (!M.HasDeviceCode)
      Missing += "\n>>> " + M.Origin + " (module " + M.Id + ")";
  if (!Missing.empty())
    return createStringError(
        "nvcc host code without its device code (no section __nv_relfatbin): "
        "its kernels cannot be in fatlink's fatbin; link the object nvcc "
        "wrote (nvcc -dc or -rdc=true), not one stripped of device code" +
        Missing);
  if (Device.Object.empty()) {
    std::string List;
    for (const NvccModule &M : *Modules)
      List += "\n>>> " + M.Origin + " calls " + M.registerFunction();
    return createStringError(
        "nvcc -rdc host code registers its kernels with the device link's "
        "fatbin, but this link has no device code that fatlink links: give "
        "fatlink cc the objects or archives with the device code of every "
        "kernel it launches (nvcc -dc, clang, rustc), or link nvcc's host "
        "code without fatlink (nvcc -dlink)" +
        List);
  }
  for (const NvccModule &M : *Modules)
    Ctx.verbose("fatlink: nvcc module " + M.Id + " (" + M.Origin +
                "): defining " + M.registerFunction());
  if (DryRun) {
    raw_ostream &OS = Ctx.Out;
    OS << "fatlink: nvcc modules, registered with the device link's fatbin:\n";
    for (const NvccModule &M : *Modules)
      OS << "  " << M.Origin << " [" << M.Id << "]\n";
    return std::string("<fatlink-nvcc-register.a>");
  }
  TimeTraceScope CodeScope("Compile nvcc registration code");
  Expected<std::string> Archive =
      writeNvccRegistration(*Modules, Device.WrapperSymbol, hostTripleOf(Line));
  if (!Archive)
    return Archive.takeError();
  return Ctx.Temps.write("nvcc-register.a", *Archive);
}

/// nvcc -dlink outputs in a link whose nvcc modules fatlink registers (the
/// `cc` crate adds <lib>_dlink.o to every archive it builds with .cuda(true);
/// CMake links cmake_device_link.o): each defines the modules'
/// __cudaRegisterLinkedBinary_<id> globally, so the host linker would take
/// it, and register nvlink's copy of their device code, over fatlink's
/// hidden definitions. Such an object is left out of the host link: named
/// on the line, it is dropped; an archive member, the archive is replaced
/// by a copy without it. One that registers a module fatlink does not, or
/// that the line names through -Wl, or a script, stays, with a warning.
static Error leaveOutNvccDeviceLinks(Context &Ctx, HostLinkLine &Line,
                                     const NvccInputs &Nvcc, bool DryRun) {
  StringSet<> Registered;
  for (const NvccModule &M : Nvcc.Modules)
    if (M.HasDeviceCode)
      Registered.insert(M.Id);
  // By input, in link order.
  std::map<size_t, std::vector<const NvccDeviceLink *>> ByInput;
  for (const NvccDeviceLink &L : Nvcc.DeviceLinks) {
    std::string Others;
    for (const std::string &Id : L.Ids)
      if (!Registered.contains(Id))
        Others += (Others.empty() ? "" : ", ") + Id;
    if (!Others.empty()) {
      Ctx.warn(L.Origin + ": nvcc -dlink output for nvcc modules this link "
               "does not register with fatlink's fatbin (" + Others +
               "): it stays in the link and registers its own copy of their "
               "device code");
      continue;
    }
    ByInput[L.Input].push_back(&L);
  }
  for (const auto &[Input, Links] : ByInput) {
    std::string Replacement = DroppedMarker;
    if (Links.front()->Member) {
      std::vector<size_t> Members;
      for (const NvccDeviceLink *L : Links)
        Members.push_back(*L->Member);
      StringRef File = sys::path::filename(Line.Inputs[Input]);
      if (DryRun) {
        Replacement = ("<" + File + " without nvcc -dlink members>").str();
      } else {
        Expected<std::string> Archive =
            archiveWithout(Line.Inputs[Input], Members);
        if (!Archive)
          return Archive.takeError();
        Expected<std::string> Path = Ctx.Temps.write(
            ("nodlink-" + Twine(Input) + "-" + File).str(), *Archive);
        if (!Path)
          return Path.takeError();
        Replacement = *Path;
      }
    }
    std::optional<ArgRef> Ref = Line.InputArgs[Input];
    for (const NvccDeviceLink *L : Links) {
      if (!Ref) {
        Ctx.warn(L->Origin + ": nvcc -dlink output, named through -Wl, or a "
                 "linker script, where fatlink cannot leave it out: it "
                 "registers its own copy of its modules' device code over "
                 "fatlink's; name the file on the command line itself, or "
                 "link without the nvcc -dlink step");
        continue;
      }
      Ctx.verbose("fatlink: leaving out " + L->Origin +
                  ": nvcc -dlink's device link, which fatlink's replaces");
    }
    if (!Ref)
      continue;
    std::vector<std::string> &Args =
        Ref->List < 0 ? Line.Forward : Line.ResponseFiles[Ref->List].Args;
    Args[Ref->Index] = Replacement;
    if (Ref->Split)
      Args[Ref->Index + 1] = DroppedMarker;
    if (Ref->List >= 0)
      Line.ResponseFiles[Ref->List].Rewrite = true;
  }
  return Error::success();
}

/// The link, once fatlink's settings are known: the device link of the
/// inputs' device code, then the host link with its object added. The host
/// linker's exit status becomes fatlink's.
static void hostLink(Context &Ctx, LineParser &Parser, HostLinkLine &Line,
                     const Settings &S, bool &HasDeviceCode) {
  bool DryRun = S.flag("dry-run");
  StringRef LinkerName = S.get("linker").value_or("cc");
  Expected<std::string> Linker = findLinker(LinkerName);
  if (!Linker)
    return Ctx.error(Linker.takeError());
  // Find the files the host link will open, as it will; say what could
  // not be followed before the link, which may lack device code for it.
  Parser.findInputs(Line, isCompilerDriver(LinkerName),
                    sys::Process::GetEnv("LIBRARY_PATH"),
                    [&] { return driverLibraryDirs(Ctx, *Linker); });
  for (const std::string &W : Line.Warnings)
    Ctx.warn(W);
  Expected<DeviceResult> Device =
      deviceLinkForHost(Ctx, Line, S, DryRun, HasDeviceCode);
  if (!Device)
    return Ctx.error(Device.takeError());
  Expected<NvccInputs> Nvcc = [&] {
    TimeTraceScope Scope("Read nvcc module ids");
    return findNvccInputs(Line.Inputs);
  }();
  if (!Nvcc)
    return Ctx.error(Nvcc.takeError());
  Expected<std::string> Registration =
      nvccRegistration(Ctx, Line, *Nvcc, *Device, DryRun);
  if (!Registration)
    return Ctx.error(Registration.takeError());
  if (!Registration->empty())
    if (Error E = leaveOutNvccDeviceLinks(Ctx, Line, *Nvcc, DryRun))
      return Ctx.error(std::move(E));
  std::vector<std::string> Added;
  for (const std::string *F : {&Device->Object, &*Registration})
    if (!F->empty())
      Added.push_back(*F);
  Expected<std::vector<std::string>> HostArgs =
      hostLinkerArgs(Ctx, Line, Added, DryRun);
  if (!HostArgs)
    return Ctx.error(HostArgs.takeError());
  if (DryRun) {
    Ctx.Out << "fatlink: host link:\n  " << *Linker;
    for (const std::string &A : *HostArgs)
      Ctx.Out << " " << A;
    Ctx.Out << "\n";
    return;
  }
  // The host linker's messages are its own: the device link is done.
  Ctx.stopProgress();
  TimeTraceScope Scope("Host link");
  Ctx.PassThroughStatus = runHostLinker(Ctx, *Linker, *HostArgs);
}

/// The link log's path: the log-file setting, else "<output>.fatlink.log"
/// (the runtime looks for it there); empty: none.
static std::string linkLogPath(const Settings &S, StringRef Output) {
  std::optional<StringRef> V = S.get("log-file");
  if (V)
    return *V == "off" || *V == "0" || V->empty() ? "" : V->str();
  return Output.empty() ? "a.out.fatlink.log" : (Output + ".fatlink.log").str();
}

/// Writes the link log of a successful link with device code: what a cargo
/// user, who never sees the linker's messages, reads when the program says
/// a kernel is missing. A failed link writes nothing, as for its output
/// (rustc shows a failed link's messages), and a link without device code
/// neither; both remove the log an earlier link of the same output left,
/// which would describe another program. A log that cannot be written is
/// a warning: the link itself succeeded.
static void writeLinkLog(Context &Ctx, StringRef Path, StringRef Text,
                         bool HasDeviceCode) {
  if (!HasDeviceCode || Ctx.exitCode() != 0) {
    sys::fs::remove(Path);
    return;
  }
  Expected<StagedFile> F = StagedFile::create(Path, Text);
  Error E = F ? F->commit() : F.takeError();
  if (E)
    Ctx.warn("cannot write the link log (set --fatlink-log-file=off to "
             "skip it): " +
             toString(std::move(E)));
}

static void hostLinkCommand(Context &Ctx, ArrayRef<const char *> Args,
                            StringSaver &Saver) {
  // --help belongs to the host linker; fatlink's own is --fatlink-help.
  if (is_contained(Args, StringRef("--fatlink-help")))
    return printSettingsHelp(Ctx.Out, SettingsTool::Cc);
  // cargo's `linker = "fatlink-cc"` under [target.nvptx64-nvidia-cuda]:
  // the host compiler would take `--target` for `--target-help`, print
  // pages of help and exit 0 without writing the PTX.
  if (isLlbcCommandLine(Args))
    return Ctx.error("this is rustc's nvptx64 device-linker command line "
                     "(--target-cpu sm_XX), which fatlink-cc, a host "
                     "linker, does not take: name fatlink-llbc as that "
                     "target's linker ([target.nvptx64-nvidia-cuda] linker "
                     "= \"fatlink-llbc\" in .cargo/config.toml, or -C "
                     "linker=fatlink-llbc), or run 'fatlink llbc'");
  LineParser Parser(Saver);
  Expected<HostLinkLine> Line = Parser.parse(Args);
  if (!Line)
    return Ctx.error(Line.takeError());
  Expected<Settings> S = collectSettings(
      Line->Own, [](StringRef Name) { return sys::Process::GetEnv(Name); });
  if (!S)
    return Ctx.error(S.takeError());
  Ctx.Verbose = S->flag("verbose");
  // Every message of the link, -v or not, also goes to the link log.
  std::string LogPath = linkLogPath(*S, Line->Output);
  std::string LogText;
  raw_string_ostream Log(LogText);
  if (!LogPath.empty())
    Ctx.Log = &Log;
  // A misspelled FATLINK_ variable (cargo's [env]) would change nothing.
  for (const std::string &W : unknownSettingVariables(environmentNames()))
    Ctx.warn(W);
  if (progressWanted(Ctx.Err, S->flag("quiet")))
    Ctx.startProgress(progressDelay());
  // A dry run writes nothing, not even the directory for intermediates.
  if (!S->flag("dry-run"))
    if (Error E = saveTempsFromSettings(Ctx, *S, Line->Output))
      return Ctx.error(std::move(E));
  std::string TimeTrace = S->get("time-trace").value_or("").str();
  if (!TimeTrace.empty())
    timeTraceProfilerInitialize(500, "fatlink-cc");

  bool HasDeviceCode = false;
  hostLink(Ctx, Parser, *Line, *S, HasDeviceCode);
  Ctx.stopProgress();
  // A dry run writes no output. Under cargo (which sets CARGO_CRATE_NAME
  // for the rustc that runs the linker) it fails: exit 0 would make cargo
  // report a finished build and copy out, or run, the executable an
  // earlier build left; a failed link also shows the plan, which rustc
  // hides from a successful one (docs/cargo.md, "fatlink-cc settings").
  bool DryRun = S->flag("dry-run");
  if (Ctx.exitCode() == 0)
    if (std::optional<std::string> Msg =
            dryRunUnderCargo(*S, Line->Output.empty() ? "a.out" : Line->Output))
      Ctx.error(*Msg);
  Ctx.Log = nullptr;
  // A dry run's output is the plan: an earlier link's log describes an
  // output that this link did not write, so it goes.
  if (!LogPath.empty())
    writeLinkLog(Ctx, LogPath, LogText, HasDeviceCode && !DryRun);

  if (timeTraceProfilerEnabled()) {
    if (Error E = timeTraceProfilerWrite(TimeTrace, Line->Output))
      Ctx.error(std::move(E));
    timeTraceProfilerCleanup();
  }
}

int hostLinkMain(ArrayRef<const char *> Args, raw_ostream &Out,
                 raw_ostream &Err) {
  return runCommand(Args, Out, Err, hostLinkCommand);
}

} // namespace fatlink
