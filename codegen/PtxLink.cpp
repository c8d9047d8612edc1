//===- codegen/PtxLink.cpp - Several PTX modules linked into one ----------===//
//
// A PTX target (compute_XX) is one module of PTX that the CUDA driver
// compiles on the user's GPU, with no linker after it: whatever nvcc's
// relocatable code contributes must be in that one text. linkPTX merges
// PTX modules at the level of PTX itself (the PTX ISA, "Module Directives"
// and "Linking Directives": .extern, .visible, .weak, .common).
//
// The idea: tokenize each module (comments, strings, identifiers
// [A-Za-z_$%][A-Za-z0-9_$]*, directives, numbers, punctuation), split it
// into module-scope statements (line directives such as .version and .file;
// declarations ending in `;`; function definitions ending with their body's
// closing brace; .section blocks), and classify each declaration: function
// or variable, its name, its linkage, definition or declaration. Then:
//
//   - one header: the newest .version of the inputs, the target asked for,
//     .address_size 64;
//   - external names resolve across modules: two strong definitions are an
//     error naming both; .weak and .common ones give way to a strong one,
//     else the first wins (.common copies must agree: ptxas would take the
//     largest); .extern declarations and prototypes of what some
//     module defines are dropped (ptxas refuses a definition after an
//     .extern declaration of it: "Function definition conflicts with
//     '.extern' declaration"); those nobody defines are kept once;
//   - internal (no linkage directive) names that another module also uses
//     are renamed in their module, every use with them: NAME becomes
//     NAME$M (M the module's index), made unique;
//   - the output is ordered so that every use follows a declaration: the
//     unresolved .extern declarations, then a prototype of every function
//     defined (ptxas accepts `.visible .func f(...);`, `.weak .func`,
//     `.func` and `.entry` prototypes before the definition: measured with
//     CUDA 13.0), then the variables (each after the variables its
//     initializer names: ptxas refuses `generic(g)` before g), then the
//     functions, each in input order;
//   - .file directives are renumbered, the .loc in function bodies with
//     them (line information survives); DWARF .section blocks cannot be
//     merged by concatenation (their offsets are per section) and are
//     dropped with the `debug` .target option, .loc keeping file, line and
//     column only; each drop is reported in the result's notes.
//
// What it does not understand (.alias, module-scope .pragma, preprocessor
// lines, several variables in one declaration) is an error naming the
// input and line, never passed through half-handled.
//
//===----------------------------------------------------------------------===//

#include "codegen/Codegen.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/TimeProfiler.h"

#include <map>

using namespace llvm;

namespace fatlink::codegen {

namespace {

struct Token {
  enum KindType { Ident, Directive, Number, String, Punct } Kind;
  StringRef Text;
  unsigned Line;
  size_t Offset; ///< in the module's text
  size_t end() const { return Offset + Text.size(); }
  bool is(StringRef S) const { return Text == S; }
};

/// One module-scope statement: tokens [Begin, End).
struct Statement {
  enum KindType { Header, File, Loc, Section, Decl } Kind;
  size_t Begin, End;
  // Declarations only:
  enum LinkageType { Internal, Visible, Weak, Extern } Linkage = Internal;
  bool IsFunc = false;
  bool IsDef = false;
  bool IsCommon = false; ///< .common: weak, and every copy must agree
  StringRef Name;
  size_t NameTok = 0;
  size_t SigEnd = 0; ///< functions: one past the parameter list
  bool Exported = false; ///< internal, linked as .visible (PtxModule::Export)
};

struct Module {
  const PtxModule *In;
  unsigned Index;
  std::vector<Token> Toks;
  std::vector<Statement> Stmts;
  unsigned VersionMajor = 0, VersionMinor = 0;
  StringMap<std::string> Rename; ///< internal names renamed
  std::map<unsigned, unsigned> FileMap;
  bool HasDebugSections = false;
  bool HasDebugTarget = false;
};

} // namespace

static Error error(const Module &M, unsigned Line, const Twine &Msg) {
  return createStringError(inconvertibleErrorCode(),
                           M.In->Name + ":" + Twine(Line) + ": " + Msg);
}

static bool isIdentStart(char C) {
  return isAlpha(C) || C == '_' || C == '$' || C == '%';
}
static bool isIdentChar(char C) { return isAlnum(C) || C == '_' || C == '$'; }

static Error tokenize(Module &M) {
  StringRef S = M.In->Text;
  unsigned Line = 1;
  size_t I = 0;
  while (I < S.size()) {
    char C = S[I];
    if (C == '\n') {
      ++Line;
      ++I;
      continue;
    }
    if (C == ' ' || C == '\t' || C == '\r' || C == '\f' || C == '\v') {
      ++I;
      continue;
    }
    if (S.substr(I).starts_with("//")) {
      I = std::min(S.find('\n', I), S.size());
      continue;
    }
    if (S.substr(I).starts_with("/*")) {
      size_t E = S.find("*/", I + 2);
      if (E == StringRef::npos)
        return error(M, Line, "unterminated /* comment");
      Line += S.slice(I, E).count('\n');
      I = E + 2;
      continue;
    }
    size_t B = I;
    Token::KindType K;
    if (C == '"') {
      ++I;
      while (I < S.size() && S[I] != '"' && S[I] != '\n')
        I += S[I] == '\\' ? 2 : 1;
      if (I >= S.size() || S[I] != '"')
        return error(M, Line, "unterminated string");
      ++I;
      K = Token::String;
    } else if (C == '.' && I + 1 < S.size() && isIdentStart(S[I + 1])) {
      ++I;
      while (I < S.size() && isIdentChar(S[I]))
        ++I;
      K = Token::Directive;
    } else if (isIdentStart(C)) {
      ++I;
      while (I < S.size() && isIdentChar(S[I]))
        ++I;
      K = Token::Ident;
    } else if (isDigit(C)) {
      // 64, 9.0, 0x1F, 0f3F800000, 0d..., 1.5e3
      while (I < S.size() && (isAlnum(S[I]) || S[I] == '.' || S[I] == '_'))
        ++I;
      K = Token::Number;
    } else if (StringRef("{}()[];,:=+-*/<>@!|&^~?.").contains(C)) {
      ++I;
      K = Token::Punct;
    } else if (C == '#') {
      return error(M, Line,
                   "preprocessor line: fatlink links PTX as a compiler wrote "
                   "it, without # directives");
    } else {
      return error(
          M, Line,
          formatv("unexpected character 0x{0:x-2}", unsigned(uint8_t(C)))
              .str());
    }
    M.Toks.push_back({K, S.slice(B, I), Line, B});
  }
  return Error::success();
}

/// Index one past the bracket that closes the one at Toks[I].
static Expected<size_t> skipBalanced(const Module &M, size_t I) {
  unsigned Depth = 0;
  for (size_t J = I; J < M.Toks.size(); ++J) {
    StringRef T = M.Toks[J].Text;
    if (M.Toks[J].Kind != Token::Punct)
      continue;
    if (T == "(" || T == "[" || T == "{")
      ++Depth;
    else if ((T == ")" || T == "]" || T == "}") && --Depth == 0)
      return J + 1;
  }
  return error(M, M.Toks[I].Line, "unbalanced '" + M.Toks[I].Text + "'");
}

static bool isOpen(const Token &T) {
  return T.Kind == Token::Punct && (T.is("(") || T.is("[") || T.is("{"));
}

/// Classifies the declaration Toks[St.Begin, St.End).
static Error classify(const Module &M, Statement &St) {
  static const StringSet<> Spaces = {".global",  ".const",     ".shared",
                                     ".local",   ".tex",       ".texref",
                                     ".surfref", ".samplerref"};
  size_t I = St.Begin;
  unsigned Line = M.Toks[I].Line;
  for (; I < St.End && M.Toks[I].Kind == Token::Directive; ++I) {
    StringRef T = M.Toks[I].Text;
    if (T == ".extern")
      St.Linkage = Statement::Extern;
    else if (T == ".visible")
      St.Linkage = Statement::Visible;
    else if (T == ".weak" || T == ".common")
      St.Linkage = Statement::Weak, St.IsCommon = T == ".common";
    else
      break;
  }
  if (I == St.End || M.Toks[I].Kind != Token::Directive)
    return error(M, Line,
                 "expected a module-scope declaration, found '" +
                     M.Toks[std::min(I, St.End - 1)].Text + "'");
  StringRef What = M.Toks[I].Text;
  if (What == ".func" || What == ".entry") {
    St.IsFunc = true;
    size_t J = I + 1;
    if (J < St.End && M.Toks[J].is("(")) { // return parameter
      Expected<size_t> After = skipBalanced(M, J);
      if (!After)
        return After.takeError();
      J = *After;
    }
    if (J >= St.End || M.Toks[J].Kind != Token::Ident)
      return error(M, Line, "expected a function name after " + What);
    St.NameTok = J;
    St.Name = M.Toks[J].Text;
    ++J;
    if (J < St.End && M.Toks[J].is("(")) {
      Expected<size_t> After = skipBalanced(M, J);
      if (!After)
        return After.takeError();
      J = *After;
    }
    St.SigEnd = J;
    St.IsDef = M.Toks[St.End - 1].is("}");
    if (St.IsDef && St.Linkage == Statement::Extern)
      return error(M, Line,
                   "function " + St.Name + " is .extern and has a body");
    return Error::success();
  }
  if (!Spaces.contains(What))
    return error(M, Line,
                 "unsupported module-scope directive " + What +
                     ": fatlink's PTX linker knows .func, .entry and "
                     "variables (.global, .const, .shared, ...)");
  // A variable: its name is the first identifier outside parentheses (an
  // `.attribute(.managed)` may come before it, as nvcc writes every
  // `__managed__` variable); an initializer or array bounds may follow, and
  // nothing else at depth 0 but ';'.
  size_t J = I;
  while (J < St.End && M.Toks[J].Kind != Token::Ident) {
    if (M.Toks[J].is("(")) {
      Expected<size_t> After = skipBalanced(M, J);
      if (!After)
        return After.takeError();
      J = *After;
      continue;
    }
    if (isOpen(M.Toks[J]) || M.Toks[J].is("="))
      break;
    ++J;
  }
  if (J >= St.End || M.Toks[J].Kind != Token::Ident)
    return error(M, Line, "expected a variable name");
  St.NameTok = J;
  St.Name = M.Toks[J].Text;
  for (size_t K = J + 1; K < St.End; ++K) {
    if (isOpen(M.Toks[K])) {
      Expected<size_t> After = skipBalanced(M, K);
      if (!After)
        return After.takeError();
      K = *After - 1;
    } else if (M.Toks[K].is("=")) {
      break;
    } else if (M.Toks[K].is(",")) {
      return error(M, M.Toks[K].Line,
                   "several variables in one declaration (" + St.Name +
                       ", ...): not supported by fatlink's PTX linker");
    }
  }
  St.IsDef = St.Linkage != Statement::Extern;
  return Error::success();
}

/// Splits the module into statements and reads its header.
static Error parse(Module &M) {
  bool SawVersion = false, SawTarget = false, SawAddressSize = false;
  size_t I = 0, N = M.Toks.size();
  while (I < N) {
    const Token &T = M.Toks[I];
    Statement St{Statement::Decl, I, I};
    if (T.is(".version") || T.is(".target") || T.is(".address_size") ||
        T.is(".file") || T.is(".loc")) {
      // Line directives: no ';', they end with the line.
      size_t J = I + 1;
      while (J < N && M.Toks[J].Line == T.Line)
        ++J;
      St.End = J;
      St.Kind = T.is(".file")  ? Statement::File
                : T.is(".loc") ? Statement::Loc
                               : Statement::Header;
      if (J == I + 1)
        return error(M, T.Line, T.Text + " without an operand");
      StringRef Op = M.Toks[I + 1].Text;
      if (T.is(".version")) {
        SawVersion = true;
        auto [Maj, Min] = Op.split('.');
        if (Maj.getAsInteger(10, M.VersionMajor) ||
            Min.getAsInteger(10, M.VersionMinor))
          return error(M, T.Line, "bad .version " + Op);
      } else if (T.is(".target")) {
        SawTarget = true;
        for (size_t K = I + 2; K < J; ++K)
          if (M.Toks[K].is("debug"))
            M.HasDebugTarget = true;
          else if (M.Toks[K].Kind == Token::Ident)
            return error(M, T.Line,
                         ".target option " + M.Toks[K].Text +
                             " is not supported by fatlink's PTX linker");
      } else if (T.is(".address_size")) {
        SawAddressSize = true;
        if (Op != "64")
          return error(M, T.Line,
                       ".address_size " + Op + ": only 64-bit PTX links");
      } else if (T.is(".file")) {
        unsigned Index = 0;
        if (M.Toks[I + 1].Kind != Token::Number || Op.getAsInteger(10, Index) ||
            J < I + 3 || M.Toks[I + 2].Kind != Token::String)
          return error(M, T.Line, "expected .file INDEX \"NAME\"");
        M.FileMap[Index] = 0; // numbered later
      }
      M.Stmts.push_back(St);
      I = J;
      continue;
    }
    if (T.is(".section")) {
      // .section .debug_NAME { ... }: DWARF, the only sections PTX has.
      size_t J = I + 2;
      if (J >= N || M.Toks[I + 1].Kind != Token::Directive ||
          !M.Toks[I + 1].Text.starts_with(".debug") || !M.Toks[J].is("{"))
        return error(M, T.Line, "expected .section .debug_NAME { ... }");
      Expected<size_t> After = skipBalanced(M, J);
      if (!After)
        return After.takeError();
      St.Kind = Statement::Section;
      St.End = *After;
      M.HasDebugSections = true;
      M.Stmts.push_back(St);
      I = St.End;
      continue;
    }
    // A declaration: up to ';' at depth 0, or a function's body.
    bool IsFunc = false;
    size_t J = I;
    for (; J < N; ++J) {
      const Token &U = M.Toks[J];
      if (U.is(".func") || U.is(".entry"))
        IsFunc = true;
      if (U.Kind == Token::Punct && U.is(";"))
        break;
      if (isOpen(U)) {
        Expected<size_t> After = skipBalanced(M, J);
        if (!After)
          return After.takeError();
        if (U.is("{") && IsFunc) {
          J = *After - 1;
          break;
        }
        J = *After - 1;
      }
    }
    if (J == N)
      return error(M, T.Line, "declaration not terminated by ';'");
    St.End = J + 1;
    if (Error E = classify(M, St))
      return E;
    I = St.End;
    if (is_contained(M.In->Drop, St.Name))
      continue;
    if (St.IsFunc && St.Linkage == Statement::Internal &&
        is_contained(M.In->Export, St.Name))
      St.Linkage = Statement::Visible, St.Exported = true;
    M.Stmts.push_back(St);
  }
  if (!SawVersion || !SawTarget || !SawAddressSize)
    return error(M, 1,
                 "not a PTX module: no .version, .target and .address_size");
  return Error::success();
}

namespace {

/// Writes statements of one module, renaming internal symbols, renumbering
/// .loc file indices and dropping .loc's DWARF references.
struct Writer {
  std::string &Out;

  /// A declaration up to token End, `.visible` first if it was exported.
  void decl(const Module &M, const Statement &St, size_t End) {
    if (St.Exported)
      Out += ".visible ";
    range(M, St.Begin, End);
  }

  void range(const Module &M, size_t Begin, size_t End) {
    StringRef S = M.In->Text;
    size_t Last = M.Toks[Begin].Offset;
    for (size_t I = Begin; I < End; ++I) {
      const Token &T = M.Toks[I];
      if (T.Kind == Token::Ident) {
        auto It = M.Rename.find(T.Text);
        if (It != M.Rename.end()) {
          Out += S.slice(Last, T.Offset);
          Out += It->second;
          Last = T.end();
        }
      } else if (T.is(".loc") && I + 3 < End) {
        // .loc FILE LINE COL [, function_name ..., inlined_at ...]
        const Token &File = M.Toks[I + 1];
        unsigned Index = 0;
        File.Text.getAsInteger(10, Index);
        Out += S.slice(Last, File.Offset);
        Out += std::to_string(M.FileMap.at(Index));
        Last = File.end();
        size_t J = I + 4;
        if (J < End && M.Toks[J].Line == T.Line) {
          Out += S.slice(Last, M.Toks[I + 3].end());
          while (J < End && M.Toks[J].Line == T.Line)
            ++J;
          Last = M.Toks[J - 1].end();
        }
        I = J - 1;
      }
    }
    Out += S.slice(Last, M.Toks[End - 1].end());
  }
};

} // namespace

Expected<PtxLinkResult> linkPTX(ArrayRef<PtxModule> Inputs,
                                StringRef TargetCpu) {
  TimeTraceScope Scope("Link PTX", TargetCpu);
  std::vector<Module> Mods(Inputs.size());
  for (auto [I, In] : enumerate(Inputs)) {
    Mods[I].In = &In;
    Mods[I].Index = unsigned(I);
    if (Error E = tokenize(Mods[I]))
      return std::move(E);
    if (Error E = parse(Mods[I]))
      return std::move(E);
  }
  PtxLinkResult R;

  // .loc indices in every statement must name a .file of their module.
  for (Module &M : Mods)
    for (size_t I = 0; I < M.Toks.size(); ++I)
      if (M.Toks[I].is(".loc")) {
        unsigned Index = 0;
        if (I + 3 >= M.Toks.size() ||
            M.Toks[I + 1].Text.getAsInteger(10, Index))
          return error(M, M.Toks[I].Line, "expected .loc FILE LINE COLUMN");
        if (!M.FileMap.count(Index))
          return error(M, M.Toks[I].Line,
                       ".loc names file " + Twine(Index) +
                           ", which no .file declares");
      }

  // In one module a name is internal or external, never both (ptxas
  // refuses the mix; renaming would split it).
  for (const Module &M : Mods) {
    StringMap<const Statement *> First;
    for (const Statement &St : M.Stmts) {
      if (St.Kind != Statement::Decl)
        continue;
      const Statement *&Prev = First[St.Name];
      if (!Prev) {
        Prev = &St;
      } else if ((Prev->Linkage == Statement::Internal) !=
                 (St.Linkage == Statement::Internal)) {
        return error(M, M.Toks[St.Begin].Line,
                     St.Name +
                         " is declared with a linkage directive and "
                         "without one (line " +
                         Twine(M.Toks[Prev->Begin].Line) + ")");
      }
    }
  }

  // External names: the definition each resolves to.
  struct Def {
    const Module *M;
    const Statement *St;
  };
  StringMap<Def> Chosen;
  StringSet<> External;
  for (const Module &M : Mods)
    for (const Statement &St : M.Stmts) {
      if (St.Kind != Statement::Decl || St.Linkage == Statement::Internal)
        continue;
      External.insert(St.Name);
      if (!St.IsDef)
        continue;
      auto [It, New] = Chosen.try_emplace(St.Name, Def{&M, &St});
      if (New)
        continue;
      Def &Old = It->second;
      if (Old.St->IsFunc != St.IsFunc)
        return createStringError(
            inconvertibleErrorCode(),
            "%s is a %s in %s (line %u) and a %s in %s (line %u)",
            St.Name.str().c_str(), Old.St->IsFunc ? "function" : "variable",
            Old.M->In->Name.c_str(), Old.M->Toks[Old.St->Begin].Line,
            St.IsFunc ? "function" : "variable", M.In->Name.c_str(),
            M.Toks[St.Begin].Line);
      bool OldStrong = Old.St->Linkage == Statement::Visible;
      bool NewStrong = St.Linkage == Statement::Visible;
      if (OldStrong && NewStrong)
        return createStringError(
            inconvertibleErrorCode(),
            "duplicate symbol %s: defined in %s (line %u) and in %s (line %u)",
            St.Name.str().c_str(), Old.M->In->Name.c_str(),
            Old.M->Toks[Old.St->Begin].Line, M.In->Name.c_str(),
            M.Toks[St.Begin].Line);
      // ptxas gives a .common variable the largest of its sizes; fatlink
      // keeps one declaration, so the copies must be the same.
      auto Text = [](const Module &X, const Statement &Y) {
        return X.In->Text.slice(X.Toks[Y.Begin].Offset,
                                X.Toks[Y.End - 1].end());
      };
      if ((St.IsCommon || Old.St->IsCommon) && !OldStrong && !NewStrong &&
          Text(*Old.M, *Old.St) != Text(M, St))
        return createStringError(
            inconvertibleErrorCode(),
            "common symbol %s is declared differently in %s (line %u) and in "
            "%s (line %u): fatlink links .common copies only when they agree",
            St.Name.str().c_str(), Old.M->In->Name.c_str(),
            Old.M->Toks[Old.St->Begin].Line, M.In->Name.c_str(),
            M.Toks[St.Begin].Line);
      if (NewStrong)
        Old = Def{&M, &St};
    }

  // Internal names another module also uses are renamed.
  StringSet<> Taken; // every module-scope name, as written
  for (const Module &M : Mods)
    for (const Statement &St : M.Stmts)
      if (St.Kind == Statement::Decl)
        Taken.insert(St.Name);
  StringMap<unsigned> Claimed; // internal name -> the module keeping it
  for (Module &M : Mods)
    for (const Statement &St : M.Stmts) {
      if (St.Kind != Statement::Decl || St.Linkage != Statement::Internal ||
          M.Rename.count(St.Name))
        continue;
      auto [It, New] = Claimed.try_emplace(St.Name, M.Index);
      if (!External.contains(St.Name) && It->second == M.Index)
        continue;
      std::string Fresh = (St.Name + "$" + Twine(M.Index)).str();
      while (Taken.contains(Fresh))
        Fresh += "$";
      Taken.insert(Fresh);
      M.Rename[St.Name] = Fresh;
    }

  // .file renumbered: a name given by several modules keeps one index.
  std::map<std::string, unsigned> FileIndex;
  std::string Files;
  for (Module &M : Mods)
    for (const Statement &St : M.Stmts) {
      if (St.Kind != Statement::File)
        continue;
      unsigned Old = 0;
      M.Toks[St.Begin + 1].Text.getAsInteger(10, Old);
      StringRef Rest = M.In->Text.slice(M.Toks[St.Begin + 2].Offset,
                                        M.Toks[St.End - 1].end());
      auto [It, New] =
          FileIndex.try_emplace(Rest.str(), unsigned(FileIndex.size() + 1));
      M.FileMap[Old] = It->second;
      if (New)
        Files +=
            ".file\t" + std::to_string(It->second) + " " + Rest.str() + "\n";
    }

  // The output, in the order that declares everything before its use.
  unsigned Major = 0, Minor = 0;
  for (const Module &M : Mods)
    if (std::tie(M.VersionMajor, M.VersionMinor) > std::tie(Major, Minor))
      std::tie(Major, Minor) = std::tie(M.VersionMajor, M.VersionMinor);
  std::string &Out = R.PTX;
  Out += "//\n// Linked by fatlink from " + std::to_string(Mods.size()) +
         " PTX modules:";
  for (const Module &M : Mods)
    Out += "\n//   " + M.In->Name;
  Out += "\n//\n\n.version " + std::to_string(Major) + "." +
         std::to_string(Minor) + "\n.target " + TargetCpu.str() +
         "\n.address_size 64\n\n";
  Out += Files;
  Writer W{Out};
  auto IsKept = [&](const Module &M, const Statement &St) {
    if (St.Kind != Statement::Decl || !St.IsDef)
      return false;
    if (St.Linkage == Statement::Internal)
      return true;
    const Def &D = Chosen.find(St.Name)->second;
    return D.St == &St;
  };

  // Declarations nobody defines, once each.
  StringSet<> Declared;
  for (const Module &M : Mods)
    for (const Statement &St : M.Stmts)
      if (St.Kind == Statement::Decl && !St.IsDef &&
          St.Linkage != Statement::Internal && !Chosen.count(St.Name) &&
          Declared.insert(St.Name).second) {
        W.range(M, St.Begin, St.End);
        Out += "\n";
        // Dynamic shared memory is declared, never defined.
        if (none_of(make_range(M.Toks.begin() + St.Begin,
                               M.Toks.begin() + St.NameTok),
                    [](const Token &T) { return T.is(".shared"); })) {
          R.Unresolved.push_back(St.Name.str());
          if (St.IsFunc)
            R.UnresolvedFunctions.push_back(St.Name.str());
        }
      }
  // A prototype of every function defined.
  for (const Module &M : Mods)
    for (const Statement &St : M.Stmts)
      if (St.IsFunc && IsKept(M, St)) {
        W.decl(M, St, St.SigEnd);
        Out += ";\n";
      }
  Out += "\n";
  // Variables, each after those its initializer names.
  StringMap<std::pair<const Module *, const Statement *>> Vars; // final name
  std::vector<std::pair<const Module *, const Statement *>> VarOrder;
  auto FinalName = [](const Module &M, StringRef Name) -> std::string {
    auto It = M.Rename.find(Name);
    return It == M.Rename.end() ? Name.str() : It->second;
  };
  for (const Module &M : Mods)
    for (const Statement &St : M.Stmts)
      if (!St.IsFunc && IsKept(M, St)) {
        Vars[FinalName(M, St.Name)] = {&M, &St};
        VarOrder.push_back({&M, &St});
      }
  StringSet<> Written, Visiting;
  std::function<Error(const Module &, const Statement &)> WriteVar =
      [&](const Module &M, const Statement &St) -> Error {
    std::string Name = FinalName(M, St.Name);
    if (Written.contains(Name))
      return Error::success();
    if (!Visiting.insert(Name).second)
      return error(M, M.Toks[St.Begin].Line,
                   "the initializer of " + St.Name + " refers back to it");
    for (size_t I = St.NameTok + 1; I < St.End; ++I)
      if (M.Toks[I].Kind == Token::Ident) {
        auto It = Vars.find(FinalName(M, M.Toks[I].Text));
        if (It != Vars.end())
          if (Error E = WriteVar(*It->second.first, *It->second.second))
            return E;
      }
    Written.insert(Name);
    W.range(M, St.Begin, St.End);
    Out += "\n";
    return Error::success();
  };
  for (auto [M, St] : VarOrder)
    if (Error E = WriteVar(*M, *St))
      return std::move(E);
  // Functions.
  for (const Module &M : Mods)
    for (const Statement &St : M.Stmts)
      if (St.IsFunc && IsKept(M, St)) {
        Out += "\n";
        W.decl(M, St, St.End);
        Out += "\n";
      }

  for (const Module &M : Mods) {
    if (M.HasDebugSections)
      R.Notes.push_back(M.In->Name +
                        ": DWARF .section blocks dropped (line information "
                        "is kept): PTX modules' DWARF cannot be merged");
    if (M.HasDebugTarget)
      R.Notes.push_back(M.In->Name + ": .target option debug dropped, with "
                                     "the DWARF it needs");
  }
  for (const Module &M : Mods) {
    std::vector<std::pair<StringRef, StringRef>> Renamed;
    for (const auto &E : M.Rename)
      Renamed.push_back({E.getKey(), E.getValue()});
    llvm::sort(Renamed);
    for (auto [Old, New] : Renamed)
      R.Notes.push_back(M.In->Name + ": internal " + Old.str() + " renamed " +
                        New.str());
  }
  return R;
}

} // namespace fatlink::codegen
