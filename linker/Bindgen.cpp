//===- linker/Bindgen.cpp - The `fatlink bindgen` command -----------------===//
//
// Typed host bindings from the kernel manifests fatlink recorded in a
// program (docs/abi.md, "Generated bindings"): a C++ header over
// fatlink/runtime.hpp with one launch function per kernel, or a Rust module
// over fatlink-rt with one fatlink_rt::Kernel<P> per kernel. The passes:
//
//   read      -> the module descriptors of one object, executable or shared
//                library (packager::readModuleManifests)
//   collect   -> every kernel once, by mangled name; the first module that
//                has it wins, as the runtime's lookup does
//   type      -> each parameter in the target language, or the reason the
//                kernel cannot be bound (a comment in the output)
//   name      -> identifiers: the demangled base name, made a legal,
//                non-keyword identifier, unique in mangled-name order
//   emit      -> the text, written to a temporary and renamed into place
//
// The output depends only on the manifests and the input's file name (not
// its directory), so it is byte-identical wherever the program was built.
//
//===----------------------------------------------------------------------===//

#include "linker/Context.h"
#include "linker/Linker.h"
#include "linker/Options.h"
#include "packager/Packager.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Demangle/Demangle.h"
#include "llvm/Option/ArgList.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/TimeProfiler.h"

#include <map>

using namespace llvm;

namespace fatlink {

namespace {

#define FATLINK_OPTIONS_INC "linker/BindgenOptions.inc"
#include "linker/CommandOptTable.inc"

enum class Lang { Cxx, Rust };

struct Config {
  std::string Input;
  std::string Output = "-";
  Lang Language = Lang::Cxx;
  std::string Namespace = "fatlink_kernels";
};

/// The most parameters a fatlink_rt::Kernel<P> tuple may have.
constexpr size_t MaxRustParams = 12;

/// One parameter in the target language.
struct BoundParam {
  std::string Type;      ///< C++: the function's parameter type; Rust: marker
  std::string CheckType; ///< C++: the type given to Kernel::check<...>
  std::string Pass;      ///< C++: how the argument is passed on ("x.get()")
  std::string Name;      ///< C++: the parameter's name
  std::string Assert;    ///< C++: a static_assert for a struct parameter
  bool Template = false; ///< C++: a struct, as a template parameter
};

/// One kernel to bind, or to leave out with a reason.
struct BoundKernel {
  const packager::ManifestKernel *K = nullptr;
  std::string Demangled; ///< "typed(float const*, ...)"; the name if plain
  std::string Skip;      ///< why it is left out; empty when bound
  std::vector<BoundParam> Params;
  std::string Ident; ///< the function or field name
};

} // namespace

static bool isKeyword(Lang L, StringRef S);

static Expected<Config> parseConfig(const opt::InputArgList &Args) {
  Config C;
  std::vector<std::string> Inputs;
  for (const opt::Arg *A : Args.filtered(OPT_INPUT))
    Inputs.push_back(A->getValue());
  if (Inputs.size() != 1)
    return createStringError(
        Inputs.empty() ? "no input file: name one object, executable or "
                         "shared library that fatlink linked"
                       : "bindgen reads one file, got " + Twine(Inputs.size()) +
                             ": generate bindings for each separately "
                             "(--namespace keeps C++ headers apart)");
  C.Input = Inputs[0];
  if (const opt::Arg *A = Args.getLastArg(OPT_output))
    C.Output = A->getValue();
  const opt::Arg *L = Args.getLastArg(OPT_lang_EQ);
  if (!L)
    return createStringError("no language: pass --lang=c++ or --lang=rust");
  StringRef Value = L->getValue();
  if (Value == "c++" || Value == "cxx" || Value == "cpp")
    C.Language = Lang::Cxx;
  else if (Value == "rust")
    C.Language = Lang::Rust;
  else
    return createStringError("--lang=" + Value +
                             ": bindgen writes --lang=c++ or --lang=rust");
  if (const opt::Arg *A = Args.getLastArg(OPT_namespace_EQ)) {
    if (C.Language != Lang::Cxx)
      return createStringError("--namespace is for --lang=c++");
    C.Namespace = A->getValue();
    auto IsIdent = [](StringRef S) {
      return !S.empty() && !isDigit(S[0]) &&
             all_of(S, [](char Ch) { return isAlnum(Ch) || Ch == '_'; });
    };
    SmallVector<StringRef, 4> Parts;
    StringRef(C.Namespace).split(Parts, "::");
    if (!all_of(Parts, IsIdent))
      return createStringError(
          "--namespace=" + C.Namespace +
          ": not a C++ namespace name (letters, digits, _ and ::)");
    // `fatlink` is fatlink's own namespace, and the header's names stay
    // apart from fatlink::rt in it; every other reserved name breaks it.
    for (StringRef Part : Parts)
      if (Part != "fatlink" && Part != "check_all" &&
          isKeyword(Lang::Cxx, Part))
        return createStringError("--namespace=" + C.Namespace + ": '" + Part +
                                 "' is a C++ keyword or a name the header "
                                 "cannot use (a macro, a type): pick "
                                 "another");
  }
  return C;
}

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

/// A scalar's type: Rust's name, or C++'s fixed-width one; "" when the
/// language has none for it. A sign no input stated is taken as signed,
/// but for a Rust byte (u8).
static std::string scalarType(Lang L, uint8_t Kind, uint32_t Size) {
  bool Int = Kind == FATLINK_PARAM_SINT || Kind == FATLINK_PARAM_UINT ||
             Kind == FATLINK_PARAM_INT;
  if (Int && (Size == 1 || Size == 2 || Size == 4 || Size == 8)) {
    // Rust's bytes are u8.
    bool Unsigned = Kind == FATLINK_PARAM_UINT ||
                    (L == Lang::Rust && Kind == FATLINK_PARAM_INT && Size == 1);
    std::string Bits = std::to_string(Size * 8);
    if (L == Lang::Rust)
      return (Unsigned ? "u" : "i") + Bits;
    return (Unsigned ? "uint" : "int") + Bits + "_t";
  }
  if (Kind == FATLINK_PARAM_FLOAT && (Size == 4 || Size == 8)) {
    if (L == Lang::Rust)
      return Size == 4 ? "f32" : "f64";
    return Size == 4 ? "float" : "double";
  }
  return "";
}

/// The manifest's words for a kind the language cannot pass.
static std::string kindWords(uint8_t Kind, uint32_t Size) {
  switch (Kind) {
  case FATLINK_PARAM_FLOAT:
    return Size == 2 ? "a 16-bit float (f16)"
                     : "a " + std::to_string(uint64_t(Size) * 8) + "-bit float";
  case FATLINK_PARAM_BF16:
    return "a bfloat16";
  case FATLINK_PARAM_AGGREGATE:
    return "a " + std::to_string(Size) + "-byte struct passed by value";
  case FATLINK_PARAM_UNKNOWN:
    return "of unknown kind";
  default:
    return "a " + std::to_string(Size) + "-byte " +
           packager::paramKindName(Kind).str();
  }
}

/// Whether a kernel can be bound at all, whatever the language: the reason
/// when not.
static std::string skipReason(const packager::ManifestKernel &MK) {
  const packager::KernelInfo &K = MK.Info;
  auto Sizes = [&] {
    return join(
        map_range(K.ParamSizes, [](uint32_t N) { return std::to_string(N); }),
        ", ");
  };
  if (MK.ManifestVersion == 0)
    return "no manifest (nvcc's kernels and modules from a fatlink before "
           "manifests have none)";
  if (MK.ManifestVersion != FATLINK_MANIFEST_VERSION)
    return "its manifest is version " + std::to_string(MK.ManifestVersion) +
           ", which this fatlink does not read: use the fatlink that linked "
           "it";
  if (!K.ParamSizes.empty() && K.Manifest.Params.empty())
    return "the manifest does not describe its parameters (sizes " + Sizes() +
           ")";
  return "";
}

/// Types every parameter of \p B for C++, or sets B.Skip.
static void typeCxx(BoundKernel &B) {
  const packager::KernelManifest &M = B.K->Info.Manifest;
  StringSet<> Names = {"config", "fatlink", "fatlink_bindgen", "std"};
  for (auto [I, P] : enumerate(M.Params)) {
    BoundParam BP;
    std::string Index = std::to_string(I);
    if (P.Kind == FATLINK_PARAM_POINTER) {
      if (P.AddrSpace != FATLINK_ADDRSPACE_GENERIC &&
          P.AddrSpace != FATLINK_ADDRSPACE_GLOBAL) {
        B.Skip = "parameter " + Index + " points into address space " +
                 std::to_string(P.AddrSpace) + ", which the host cannot pass";
        return;
      }
      std::string Elem = scalarType(Lang::Cxx, P.ElemKind, P.ElemSize);
      if (P.ElemKind == FATLINK_PARAM_INT && P.ElemSize == 1)
        Elem = "char"; // C++ char, neither signed nor unsigned char
      if (Elem.empty()) {
        BP.Type = "fatlink_bindgen::AnyPtr";
        BP.CheckType = "fatlink_rt_devptr";
      } else {
        if (P.Flags & FATLINK_PARAM_CONST)
          Elem = "const " + Elem;
        BP.Type = "fatlink_bindgen::Ptr<" + Elem + ">";
        BP.CheckType = Elem + " *";
      }
    } else if (P.Kind == FATLINK_PARAM_AGGREGATE) {
      if (!P.Size || !isPowerOf2_32(P.Align)) {
        B.Skip = "parameter " + Index + " is a struct of " +
                 std::to_string(P.Size) + " bytes aligned to " +
                 std::to_string(P.Align) + ", which no C++ type has";
        return;
      }
      BP.Template = true;
      BP.Type = "T" + Index;
      std::string Size = std::to_string(P.Size),
                  Align = std::to_string(P.Align);
      BP.CheckType = "fatlink_bindgen::Bytes<" + Size + ", " + Align + ">";
      std::string What = P.Type.empty() ? "a struct" : "'" + P.Type + "'";
      BP.Assert = "fatlink_bindgen::is_struct_of<T" + Index + ", " + Size +
                  ", " + Align + ">, \"parameter " + Index + " is " + What +
                  ", " + Size + " bytes aligned to " + Align +
                  ": pass a trivially copyable struct of that size and "
                  "alignment\"";
    } else {
      BP.Type = scalarType(Lang::Cxx, P.Kind, P.Size);
      if (BP.Type.empty()) {
        B.Skip = "parameter " + Index + " is " + kindWords(P.Kind, P.Size) +
                 ", which fatlink/runtime.hpp cannot pass";
        return;
      }
      BP.CheckType = BP.Type;
    }
    // The manifest's name where it is a usable identifier, else pN.
    std::string Name = P.Name;
    bool Usable = !Name.empty() && !isDigit(Name[0]) &&
                  all_of(Name, [](char C) { return isAlnum(C) || C == '_'; }) &&
                  !StringRef(Name).starts_with("__") &&
                  !StringRef(Name).starts_with("T") &&
                  !isKeyword(Lang::Cxx, Name);
    if (!Usable)
      Name = "p" + Index;
    while (!Names.insert(Name).second)
      Name += "_";
    BP.Name = Name;
    BP.Pass = P.Kind == FATLINK_PARAM_POINTER ? Name + ".get()" : Name;
    B.Params.push_back(std::move(BP));
  }
}

/// Types every parameter of \p B for Rust (the fatlink-rt markers of
/// rust-typed-api: scalars, DeviceSlice<T>, DeviceSliceMut<T>, DevicePtr),
/// or sets B.Skip.
static void typeRust(BoundKernel &B) {
  const packager::KernelManifest &M = B.K->Info.Manifest;
  if (!json::isUTF8(B.K->Info.Name)) {
    B.Skip = "its name is not UTF-8, which a Rust &str cannot hold";
    return;
  }
  if (M.Params.size() > MaxRustParams) {
    B.Skip = "it takes " + std::to_string(M.Params.size()) +
             " parameters; fatlink_rt::Kernel<P> takes at most " +
             std::to_string(MaxRustParams);
    return;
  }
  for (auto [I, P] : enumerate(M.Params)) {
    BoundParam BP;
    std::string Index = std::to_string(I);
    if (P.Kind == FATLINK_PARAM_POINTER) {
      if (P.AddrSpace != FATLINK_ADDRSPACE_GENERIC &&
          P.AddrSpace != FATLINK_ADDRSPACE_GLOBAL) {
        B.Skip = "parameter " + Index + " points into address space " +
                 std::to_string(P.AddrSpace) + ", which the host cannot pass";
        return;
      }
      std::string Elem = scalarType(Lang::Rust, P.ElemKind, P.ElemSize);
      if (Elem.empty())
        BP.Type = "fatlink_rt::DevicePtr";
      else if (P.Flags & FATLINK_PARAM_CONST)
        BP.Type = "fatlink_rt::DeviceSlice<" + Elem + ">";
      else
        BP.Type = "fatlink_rt::DeviceSliceMut<" + Elem + ">";
    } else {
      BP.Type = scalarType(Lang::Rust, P.Kind, P.Size);
      if (BP.Type.empty()) {
        B.Skip = "parameter " + Index + " is " + kindWords(P.Kind, P.Size) +
                 ", for which fatlink-rt has no marker type";
        return;
      }
    }
    B.Params.push_back(std::move(BP));
  }
}

//===----------------------------------------------------------------------===//
// Names
//===----------------------------------------------------------------------===//

/// Names that are not keywords but still cannot name a function or a
/// namespace in the header: GNU keywords and predefined macros (the default
/// gnu++ mode defines `linux` and `unix`), macros of the headers the header
/// includes (<cstdint>, <cstddef>, and through fatlink/runtime.hpp's
/// <string>, <cstdio> and <cerrno>), and the typedef names its
/// declarations use: a kernel named uint64_t would hide the type from
/// every declaration after it, and any `_t` name may be one (POSIX
/// reserves them).
static bool isCxxReserved(StringRef S) {
  static const char *const Names[] = {
      // GNU keywords and predefined macros.
      "typeof", "asm", "linux", "unix", "i386",
      // Macros of the C library headers.
      "EOF", "NULL", "errno", "assert", "offsetof", "stdin", "stdout", "stderr",
      "BUFSIZ", "FILENAME_MAX", "FOPEN_MAX", "L_tmpnam", "TMP_MAX", "SEEK_SET",
      "SEEK_CUR", "SEEK_END", "EXIT_SUCCESS", "EXIT_FAILURE", "RAND_MAX",
      "MB_CUR_MAX", "CHAR_BIT", "WCHAR_MIN", "WCHAR_MAX", "WINT_MIN",
      "WINT_MAX", "SIZE_MAX", "PTRDIFF_MIN", "PTRDIFF_MAX", "SIG_ATOMIC_MIN",
      "SIG_ATOMIC_MAX", "INTMAX_C", "UINTMAX_C", "INTMAX_MIN", "INTMAX_MAX",
      "UINTMAX_MAX", "INTPTR_MIN", "INTPTR_MAX", "UINTPTR_MAX", "EDOM",
      "ERANGE", "EILSEQ"};
  if (is_contained(Names, S) || S.ends_with("_t"))
    return true;
  // <cstdint>'s INTn_MIN, UINTn_MAX, INTn_C, INT_LEASTn_MAX, ...
  StringRef R = S;
  R.consume_front("U");
  if (!R.consume_front("INT"))
    return false;
  R.consume_front("_LEAST") || R.consume_front("_FAST");
  R = R.drop_while(isDigit);
  return R == "_MIN" || R == "_MAX" || R == "_C";
}

static bool isKeyword(Lang L, StringRef S) {
  static const char *const Cxx[] = {
      "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor",
      "bool", "break", "case", "catch", "char", "char8_t", "char16_t",
      "char32_t", "class", "compl", "concept", "const", "consteval",
      "constexpr", "constinit", "const_cast", "continue", "co_await",
      "co_return", "co_yield", "decltype", "default", "delete", "do", "double",
      "dynamic_cast", "else", "enum", "explicit", "export", "extern", "false",
      "float", "for", "friend", "goto", "if", "inline", "int", "long",
      "mutable", "namespace", "new", "noexcept", "not", "not_eq", "nullptr",
      "operator", "or", "or_eq", "private", "protected", "public", "register",
      "reinterpret_cast", "requires", "return", "short", "signed", "sizeof",
      "static", "static_assert", "static_cast", "struct", "switch", "template",
      "this", "thread_local", "throw", "true", "try", "typedef", "typeid",
      "typename", "union", "unsigned", "using", "virtual", "void", "volatile",
      "wchar_t", "while", "xor", "xor_eq",
      // Names the header itself uses in the namespace.
      "check_all", "fatlink", "fatlink_bindgen", "std"};
  static const char *const Rust[] = {
      "as",     "async",   "await",   "break", "const",    "continue",
      "crate",  "dyn",     "else",    "enum",  "extern",   "false",
      "fn",     "for",     "gen",     "if",    "impl",     "in",
      "let",    "loop",    "match",   "mod",   "move",     "mut",
      "pub",    "ref",     "return",  "self",  "Self",     "static",
      "struct", "super",   "trait",   "true",  "try",      "type",
      "unsafe", "use",     "where",   "while", "abstract", "become",
      "box",    "do",      "final",   "macro", "override", "priv",
      "typeof", "unsized", "virtual", "yield", "union"};
  if (L == Lang::Cxx)
    return is_contained(Cxx, S) || isCxxReserved(S);
  return is_contained(Rust, S);
}

/// The base name of a kernel: "typed" for _Z5typedPKfjPi4Pair, "k" for
/// ns::k<float>(float*), the name itself when it is not a C++ name.
static std::string baseName(StringRef Mangled) {
  ItaniumPartialDemangler D;
  std::string Name = Mangled.str(); // D points into it
  if (Mangled.starts_with("_Z") && !D.partialDemangle(Name.c_str()) &&
      D.isFunction()) {
    size_t N = 0;
    if (char *Base = D.getFunctionBaseName(nullptr, &N)) {
      std::string S(Base);
      std::free(Base);
      if (!S.empty())
        return S;
    }
  }
  return Mangled.str();
}

/// \p Base as an identifier of \p L: other characters become '_', a digit
/// first gets a '_' before it, a keyword a '_' after it.
static std::string identifier(Lang L, StringRef Base) {
  std::string S;
  for (char C : Base)
    S += isAlnum(C) || C == '_' ? C : '_';
  if (S.empty() || isDigit(S[0]))
    S = "_" + S;
  if (S == "_")
    S = "kernel";
  if (isKeyword(L, S))
    S += "_";
  return S;
}

//===----------------------------------------------------------------------===//
// Emitting
//===----------------------------------------------------------------------===//

/// "_Z5typedPKfjPi4Pair: typed(float const*, ...) (CUDA C++, defined in
/// kinds.bc)": what a comment says about a kernel. \p Quote: the name
/// between backquotes (Rust doc comments).
static std::string describeKernel(const BoundKernel &B, bool Quote = false) {
  const packager::KernelInfo &K = B.K->Info;
  std::string S = Quote ? "`" + K.Name + "`" : K.Name;
  if (B.Demangled != K.Name)
    S += ": " + B.Demangled;
  if (B.K->ManifestVersion == FATLINK_MANIFEST_VERSION) {
    S += " (" + packager::languageName(K.Manifest.Language).str();
    if (!K.Origin.empty())
      S += ", defined in " + K.Origin;
    S += ")";
  }
  return S;
}

/// A C++ string literal of \p S (kernel names are NUL-free bytes).
static std::string cxxString(StringRef S) {
  std::string Out = "\"";
  for (unsigned char C : S) {
    if (C == '"' || C == '\\')
      Out += '\\';
    if (C < 0x20 || C >= 0x7f) {
      Out += "\\x" + utohexstr(C, true) + "\"\"";
      continue;
    }
    Out += char(C);
  }
  return Out + "\"";
}

/// A Rust string literal of \p S, which is UTF-8 (typeRust checks).
static std::string rustString(StringRef S) {
  std::string Out = "\"";
  for (unsigned char C : S) {
    if (C == '"' || C == '\\')
      Out += '\\';
    if (C < 0x20 || C == 0x7f) {
      Out += "\\x" + utohexstr(C, true).insert(0, C < 0x10 ? "0" : "");
      continue;
    }
    Out += char(C);
  }
  return Out + "\"";
}

/// A comment's text on one line, in valid UTF-8 (source files are), not
/// ending in a backslash.
static std::string commentText(StringRef S) {
  std::string Out = json::isUTF8(S) ? S.str() : json::fixUTF8(S);
  for (char &C : Out)
    if (C == '\n' || C == '\r')
      C = ' ';
  // A C++ line comment that ends in a backslash continues on the next line.
  while (!Out.empty() && (Out.back() == ' ' || Out.back() == '\t'))
    Out.pop_back();
  if (!Out.empty() && Out.back() == '\\')
    Out += '.';
  return Out;
}

static const char CxxSupport[] = R"(#ifndef FATLINK_BINDGEN_SUPPORT_V1
#define FATLINK_BINDGEN_SUPPORT_V1
// What every header fatlink bindgen writes shares (once per program).
namespace fatlink_bindgen {

// A launch's grid, block, dynamic shared memory and stream:
// {Grid, Block} or {Grid, Block, SharedMemBytes, Stream}, the stream a
// fatlink_rt_stream or a class whose get() returns one (fatlink::rt::Stream).
struct Launch {
  Launch(fatlink::rt::Dim3 Grid, fatlink::rt::Dim3 Block,
         uint32_t SharedMemBytes = 0, fatlink_rt_stream Stream = nullptr)
      : Grid(Grid), Block(Block), SharedMemBytes(SharedMemBytes),
        Stream(Stream) {}
  template <typename S,
            typename = std::enable_if_t<std::is_same<
                decltype(std::declval<const S &>().get()),
                fatlink_rt_stream>::value>>
  Launch(fatlink::rt::Dim3 Grid, fatlink::rt::Dim3 Block,
         uint32_t SharedMemBytes, const S &Stream)
      : Launch(Grid, Block, SharedMemBytes, Stream.get()) {}
  fatlink::rt::Dim3 Grid, Block;
  uint32_t SharedMemBytes;
  fatlink_rt_stream Stream;
};

// A pointer parameter to T: a T * or a DeviceBuffer<T> (its device
// pointer). Nothing else converts, so a wrong element does not compile.
template <typename T> class Ptr {
public:
  Ptr(T *P) : P(P) {}
  Ptr(std::nullptr_t) : P(nullptr) {}
  Ptr(const fatlink::rt::DeviceBuffer<std::remove_const_t<T>> &B)
      : P(reinterpret_cast<T *>(static_cast<uintptr_t>(B.get()))) {}
  T *get() const { return P; }

private:
  T *P;
};

// A pointer parameter whose element no input recorded: any device pointer.
class AnyPtr {
public:
  AnyPtr(fatlink_rt_devptr P) : P(P) {}
  AnyPtr(const volatile void *P) : P(reinterpret_cast<uintptr_t>(P)) {}
  template <typename T>
  AnyPtr(const fatlink::rt::DeviceBuffer<T> &B) : P(B.get()) {}
  fatlink_rt_devptr get() const { return P; }

private:
  fatlink_rt_devptr P;
};

// Stands for a by-value struct parameter in check_all().
template <size_t Size, size_t Align> struct alignas(Align) Bytes {
  unsigned char B[Size];
};

// What a by-value struct parameter of Size bytes aligned to Align takes.
template <typename T, size_t Size, size_t Align>
constexpr bool is_struct_of = std::is_trivially_copyable<T>::value &&
                              std::is_class<T>::value && sizeof(T) == Size &&
                              alignof(T) == Align;

template <typename... Args>
inline fatlink::rt::Status launch(const char *Name, const Launch &L,
                                  const Args &...A) {
  fatlink::rt::Expected<fatlink::rt::Kernel> K =
      fatlink::rt::Kernel::get(Name);
  if (!K)
    return K.status();
  return K->launchOn(L.Grid, L.Block, L.SharedMemBytes, L.Stream, A...);
}

template <typename... Args> inline fatlink::rt::Status check(const char *Name) {
  fatlink::rt::Expected<fatlink::rt::Kernel> K =
      fatlink::rt::Kernel::find(Name);
  if (!K)
    return K.status();
  return K->template check<Args...>();
}

} // namespace fatlink_bindgen
#endif // FATLINK_BINDGEN_SUPPORT_V1
)";

static std::string emitCxx(const Config &C, StringRef InputName,
                           ArrayRef<BoundKernel> Kernels) {
  std::string S;
  raw_string_ostream OS(S);
  OS << "// generated by fatlink bindgen from " << InputName
     << "; do not edit\n"
        "//\n"
        "// One typed launch function per kernel, over fatlink/runtime.hpp\n"
        "// (docs/abi.md, \"Generated bindings\"):\n"
        "//   fatlink::rt::Status S = "
     << C.Namespace
     << "::KERNEL({Grid, Block}, args...);\n"
        "// checks the arguments against the kernel's manifest and launches "
        "it;\n"
        "// "
     << C.Namespace
     << "::check_all() checks every kernel below against the program\n"
        "// without a driver.\n"
        "#pragma once\n\n"
        "#include \"fatlink/runtime.hpp\"\n\n"
        "#include <cstddef>\n#include <cstdint>\n#include <type_traits>\n"
        "#include <utility>\n\n"
     << CxxSupport << "\nnamespace " << C.Namespace << " {\n";
  for (const BoundKernel &B : Kernels) {
    OS << "\n";
    if (!B.Skip.empty()) {
      OS << "// kernel " << commentText(describeKernel(B)) << "\n"
         << "// is left out: " << commentText(B.Skip) << "\n";
      continue;
    }
    OS << "// kernel " << commentText(describeKernel(B)) << "\n";
    std::vector<std::string> Templates;
    for (const BoundParam &P : B.Params)
      if (P.Template)
        Templates.push_back("typename " + P.Type);
    if (!Templates.empty())
      OS << "template <" << join(Templates, ", ") << ">\n";
    OS << "inline fatlink::rt::Status " << B.Ident
       << "(const fatlink_bindgen::Launch &config";
    for (const BoundParam &P : B.Params)
      OS << ", " << (P.Template ? "const " + P.Type + " &" : P.Type + " ")
         << P.Name;
    OS << ") {\n";
    for (const BoundParam &P : B.Params)
      if (!P.Assert.empty())
        OS << "  static_assert(" << P.Assert << ");\n";
    OS << "  return fatlink_bindgen::launch(" << cxxString(B.K->Info.Name)
       << ", config";
    for (const BoundParam &P : B.Params)
      OS << ", " << P.Pass;
    OS << ");\n}\n";
  }
  OS << "\n// Checks every kernel above against the program's manifests, "
        "without a driver:\n"
        "// a header generated from another build of the program fails "
        "here.\n"
        "inline fatlink::rt::Status check_all() {\n";
  for (const BoundKernel &B : Kernels) {
    if (!B.Skip.empty())
      continue;
    OS << "  if (fatlink::rt::Status S = fatlink_bindgen::check<"
       << join(map_range(B.Params,
                         [](const BoundParam &P) { return P.CheckType; }),
               ", ")
       << ">(" << cxxString(B.K->Info.Name) << "); !S)\n    return S;\n";
  }
  OS << "  return fatlink::rt::Status();\n}\n\n} // namespace " << C.Namespace
     << "\n";
  return S;
}

static std::string emitRust(StringRef InputName,
                            ArrayRef<BoundKernel> Kernels) {
  std::string S;
  raw_string_ostream OS(S);
  OS << "// generated by fatlink bindgen from " << InputName
     << "; do not edit\n";
  bool SnakeCase = all_of(Kernels, [](const BoundKernel &B) {
    return !B.Skip.empty() ||
           none_of(B.Ident, [](char C) { return isUpper(C); });
  });
  if (!SnakeCase)
    OS << "#[allow(non_snake_case)]\n";
  OS << "pub struct Kernels {\n";
  for (const BoundKernel &B : Kernels) {
    if (!B.Skip.empty()) {
      OS << "    // kernel " << commentText(describeKernel(B))
         << " is left out: " << commentText(B.Skip) << "\n";
      continue;
    }
    OS << "    /// kernel " << commentText(describeKernel(B, true)) << "\n";
    std::string Tuple = join(
        map_range(B.Params, [](const BoundParam &P) { return P.Type; }), ", ");
    if (B.Params.size() == 1)
      Tuple += ",";
    OS << "    pub " << B.Ident << ": fatlink_rt::Kernel<(" << Tuple << ")>,\n";
  }
  OS << "}\n"
        "impl Kernels {\n"
        "    pub fn load() -> fatlink_rt::Result<Kernels> {\n"
        "        Ok(Kernels {\n";
  for (const BoundKernel &B : Kernels)
    if (B.Skip.empty())
      OS << "            " << B.Ident << ": fatlink_rt::Kernel::get("
         << rustString(B.K->Info.Name) << ")?,\n";
  OS << "        })\n"
        "    }\n"
        "}\n";
  return S;
}

//===----------------------------------------------------------------------===//
// The command
//===----------------------------------------------------------------------===//

static Error bindgen(Context &Ctx, const Config &C) {
  TimeTraceScope Scope("Bindgen");
  Expected<std::unique_ptr<MemoryBuffer>> MBOrErr = readInputFile(C.Input);
  if (!MBOrErr)
    return MBOrErr.takeError();
  Expected<std::vector<packager::ModuleManifest>> ModulesOrErr =
      packager::readModuleManifests((*MBOrErr)->getBuffer(), C.Input);
  if (!ModulesOrErr)
    return ModulesOrErr.takeError();
  const std::vector<packager::ModuleManifest> &Modules = *ModulesOrErr;
  if (Modules.empty())
    return createStringError(
        C.Input + ": no fatlink module descriptor (no " +
        FATLINK_MODULES_SECTION + " section): bindgen reads the " +
        "objects, executables and shared libraries that fatlink " +
        "device-link and fatlink cc link");
  if (none_of(Modules, [](const packager::ModuleManifest &M) {
        return M.Known && M.hasManifest();
      }))
    return createStringError(
        C.Input + ": none of its " + Twine(Modules.size()) +
        " fatlink module descriptor" + (Modules.size() == 1 ? "" : "s") +
        " holds a kernel manifest (written by a fatlink before " +
        "manifests, or kernels from nvcc only): relink with this " + "fatlink");

  // Every kernel once; the first module that has it wins, as in the
  // runtime's lookup. std::map: in mangled-name order.
  std::map<std::string, const packager::ManifestKernel *> ByName;
  for (const packager::ModuleManifest &M : Modules)
    for (const packager::ManifestKernel &K : M.Kernels)
      ByName.try_emplace(K.Info.Name, &K);

  std::vector<BoundKernel> Kernels;
  StringSet<> Used;
  for (const auto &[Name, K] : ByName) {
    BoundKernel B;
    B.K = K;
    B.Demangled = demangle(Name);
    B.Skip = skipReason(*K);
    if (B.Skip.empty())
      C.Language == Lang::Cxx ? typeCxx(B) : typeRust(B);
    if (B.Skip.empty()) {
      std::string Ident = identifier(C.Language, baseName(Name));
      std::string Unique = Ident;
      for (unsigned N = 2; !Used.insert(Unique).second; ++N)
        Unique = Ident + "_" + std::to_string(N);
      B.Ident = Unique;
    }
    Ctx.verbose(
        Name + ": " +
        (B.Skip.empty() ? "bound as " + B.Ident : "left out: " + B.Skip));
    Kernels.push_back(std::move(B));
  }

  StringRef InputName = sys::path::filename(C.Input);
  std::string Text = C.Language == Lang::Cxx ? emitCxx(C, InputName, Kernels)
                                             : emitRust(InputName, Kernels);
  if (C.Output == "-") {
    Ctx.Out << Text;
    return Error::success();
  }
  if (Error E = checkOutputsAreNotInputs({C.Output}, {C.Input}))
    return E;
  Expected<StagedFile> Staged = StagedFile::create(C.Output, Text);
  if (!Staged)
    return Staged.takeError();
  return Staged->commit();
}

int bindgenMain(ArrayRef<const char *> Args, raw_ostream &Out,
                raw_ostream &Err) {
  return runCommand(
      Args, Out, Err, CommandOptTable(),
      {"fatlink bindgen --lang=c++|rust [-o <file>] <object|executable|"
       "shared library>",
       "fatlink bindgen: typed host bindings (a C++ header over "
       "fatlink/runtime.hpp, a Rust module over fatlink-rt) from the kernel "
       "manifests fatlink recorded in a program",
       OPT_UNKNOWN, OPT_help, OPT_version},
      [](Context &Ctx, opt::InputArgList &Args) {
        Ctx.Verbose = Args.hasArg(OPT_verbose);
        Expected<Config> C = parseConfig(Args);
        if (!C)
          return Ctx.error(C.takeError());
        if (Error E = bindgen(Ctx, *C))
          Ctx.error(std::move(E));
      });
}

} // namespace fatlink
