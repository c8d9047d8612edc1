//===- lto/Signature.cpp - The signature model ----------------------------===//
//
// See Signature.h. Spellings used where only the IR speaks (docs/abi.md):
//   Rust:     iN / uN (from signext/zeroext) or "iN/uN", bool, f16, bf16,
//             f32, f64, `*mut _` (a raw pointer, pointee unknown), `()`;
//   C, C++:   char, short, int, long (64 bits on nvptx64) or their unsigned
//             forms where signext/zeroext say, else "int/unsigned"...,
//             bool, __half, __bf16, float, double, `pointer`, void;
//   unknown:  LLVM's own words (i32, float, ptr).
// An aggregate passed by value is "N-byte struct" in every language.
//
//===----------------------------------------------------------------------===//

#include "lto/Signature.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/BinaryFormat/Dwarf.h"
#include "llvm/Demangle/Demangle.h"
#include "llvm/IR/CallingConv.h"
#include "llvm/IR/DebugInfoMetadata.h"
#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <optional>

using namespace llvm;

namespace fatlink::lto {

StringRef languageName(SourceLanguage L) {
  switch (L) {
  case SourceLanguage::Rust:
    return "Rust";
  case SourceLanguage::CudaCxx:
    return "CUDA C++";
  case SourceLanguage::C:
    return "C";
  case SourceLanguage::Unknown:
    break;
  }
  return "";
}

static SourceLanguage fromDwarf(unsigned Lang) {
  switch (Lang) {
  case dwarf::DW_LANG_Rust:
    return SourceLanguage::Rust;
  case dwarf::DW_LANG_C:
  case dwarf::DW_LANG_C89:
  case dwarf::DW_LANG_C99:
  case dwarf::DW_LANG_C11:
  case dwarf::DW_LANG_C17:
    return SourceLanguage::C;
  case dwarf::DW_LANG_C_plus_plus:
  case dwarf::DW_LANG_C_plus_plus_03:
  case dwarf::DW_LANG_C_plus_plus_11:
  case dwarf::DW_LANG_C_plus_plus_14:
  case dwarf::DW_LANG_C_plus_plus_17:
  case dwarf::DW_LANG_C_plus_plus_20:
    return SourceLanguage::CudaCxx;
  default:
    return SourceLanguage::Unknown;
  }
}

SourceLanguage moduleLanguage(const Module &M) {
  std::optional<SourceLanguage> L;
  auto Add = [&](SourceLanguage New) {
    if (!L)
      L = New;
    else if (*L != New)
      L = SourceLanguage::Unknown;
  };
  for (const DICompileUnit *CU : M.debug_compile_units())
    Add(fromDwarf(CU->getSourceLanguage().getUnversionedName()));
  if (L)
    return *L;
  // clang's CUDA modules also name the clang that built libdevice.
  if (const NamedMDNode *Ident = M.getNamedMetadata("llvm.ident"))
    for (const MDNode *N : Ident->operands())
      if (N->getNumOperands() > 0)
        if (const auto *S = dyn_cast<MDString>(N->getOperand(0))) {
          if (S->getString().contains("rustc version"))
            Add(SourceLanguage::Rust);
          else if (S->getString().contains("clang version"))
            Add(SourceLanguage::CudaCxx);
        }
  return L.value_or(SourceLanguage::Unknown);
}

//===----------------------------------------------------------------------===//
// Types from the IR
//===----------------------------------------------------------------------===//

static bool isCLike(SourceLanguage L) {
  return L == SourceLanguage::CudaCxx || L == SourceLanguage::C;
}

static std::string spellInt(unsigned Bits, TypeSig::Sign S, SourceLanguage L) {
  bool Signed = S == TypeSig::Sign::Signed, Unsigned = S == TypeSig::Sign::Unsigned;
  if (Bits == 1)
    return L == SourceLanguage::Unknown ? "i1" : "bool";
  if (L == SourceLanguage::Rust) {
    std::string N = std::to_string(Bits);
    if (Signed)
      return "i" + N;
    if (Unsigned)
      return "u" + N;
    return "i" + N + "/u" + N;
  }
  if (isCLike(L)) {
    const char *Base = nullptr;
    switch (Bits) {
    case 8:
      return Signed ? "signed char" : Unsigned ? "unsigned char" : "char";
    default:
      break;
    case 16:
      Base = "short";
      break;
    case 32:
      Base = "int";
      break;
    case 64:
      Base = "long";
      break;
    case 128:
      Base = "__int128";
      break;
    }
    if (Base) {
      std::string B = Base;
      if (Signed)
        return B;
      if (Unsigned)
        return Bits == 32 ? "unsigned" : "unsigned " + B;
      return B + "/unsigned" + (Bits == 32 ? "" : " " + B);
    }
  }
  return "i" + std::to_string(Bits);
}

/// T as the IR has it; \p Attrs: the parameter's or return's attributes.
static TypeSig fromIR(Type *T, AttributeSet Attrs, const DataLayout &DL,
                      SourceLanguage L) {
  TypeSig S;
  S.IR = T;
  bool Rust = L == SourceLanguage::Rust, CLike = isCLike(L);
  if (Type *ByVal = Attrs.getByValType()) {
    S.K = TypeSig::Aggregate;
    S.Size = DL.getTypeAllocSize(ByVal);
  } else if (T->isVoidTy()) {
    S.K = TypeSig::Void;
    S.Spelling = Rust ? "()" : "void";
    return S;
  } else if (T->isIntegerTy()) {
    S.K = TypeSig::Int;
    S.Bits = T->getIntegerBitWidth();
    if (Attrs.hasAttribute(Attribute::SExt))
      S.S = TypeSig::Sign::Signed;
    else if (Attrs.hasAttribute(Attribute::ZExt))
      S.S = TypeSig::Sign::Unsigned;
    S.Spelling = spellInt(S.Bits, S.S, L);
    return S;
  } else if (T->isFloatingPointTy()) {
    S.K = TypeSig::Float;
    S.Bits = T->getPrimitiveSizeInBits();
    S.BFloat = T->isBFloatTy();
    if (Rust)
      S.Spelling = (S.BFloat ? "bf" : "f") + std::to_string(S.Bits);
    else if (CLike && T->isHalfTy())
      S.Spelling = "__half";
    else if (CLike && T->isBFloatTy())
      S.Spelling = "__bf16";
    else if (CLike && T->isFloatTy())
      S.Spelling = "float";
    else if (CLike && T->isDoubleTy())
      S.Spelling = "double";
    else {
      raw_string_ostream OS(S.Spelling);
      T->print(OS);
    }
    return S;
  } else if (T->isPointerTy()) {
    S.K = TypeSig::Pointer;
    S.AddrSpace = T->getPointerAddressSpace();
    S.Spelling = Rust ? "*mut _" : CLike ? "pointer" : "ptr";
    if (S.AddrSpace != 0)
      S.Spelling += " (address space " + std::to_string(S.AddrSpace) + ")";
    return S;
  } else if (T->isAggregateType() && T->isSized()) {
    S.K = TypeSig::Aggregate;
    S.Size = DL.getTypeAllocSize(T);
  } else {
    raw_string_ostream OS(S.Spelling);
    T->print(OS);
    return S;
  }
  S.Spelling = std::to_string(S.Size) + "-byte struct";
  return S;
}

//===----------------------------------------------------------------------===//
// Types from debug info and from mangled names
//===----------------------------------------------------------------------===//

/// What a source type says beyond the IR: its spelling, the sign of an
/// integer, the kind of a pointer's pointee.
struct SourceType {
  std::string Spelling;
  TypeSig::Kind K = TypeSig::Other; ///< Int, Float, Pointer or Other
  TypeSig::Sign S = TypeSig::Sign::Unknown;
  unsigned Bits = 0;
  TypeSig::Kind PointeeK = TypeSig::Other;
  unsigned PointeeBits = 0;
  TypeSig::Sign PointeeS = TypeSig::Sign::Unknown;
};

static const DIType *stripQualifiers(const DIType *T) {
  while (const auto *D = dyn_cast_or_null<DIDerivedType>(T)) {
    unsigned Tag = D->getTag();
    if (Tag != dwarf::DW_TAG_typedef && Tag != dwarf::DW_TAG_const_type &&
        Tag != dwarf::DW_TAG_volatile_type &&
        Tag != dwarf::DW_TAG_restrict_type && Tag != dwarf::DW_TAG_atomic_type)
      break;
    T = D->getBaseType();
  }
  return T;
}

static void scalarOf(const DIType *T, TypeSig::Kind &K, TypeSig::Sign &S,
                     unsigned &Bits) {
  const auto *B = dyn_cast_or_null<DIBasicType>(stripQualifiers(T));
  if (!B)
    return;
  Bits = unsigned(B->getSizeInBits());
  switch (B->getEncoding()) {
  case dwarf::DW_ATE_float:
    K = TypeSig::Float;
    break;
  case dwarf::DW_ATE_signed:
    K = TypeSig::Int;
    S = TypeSig::Sign::Signed;
    break;
  case dwarf::DW_ATE_unsigned:
    K = TypeSig::Int;
    S = TypeSig::Sign::Unsigned;
    break;
  case dwarf::DW_ATE_boolean: // a byte in memory, i1 as a value
    K = TypeSig::Int;
    Bits = 1;
    break;
  default: // characters: their sign is the platform's
    K = TypeSig::Int;
    break;
  }
}

/// A C spelling of a type debug info describes without a name (pointers,
/// qualifiers).
static std::string spellDI(const DIType *T) {
  if (!T)
    return "void";
  if (!T->getName().empty())
    return T->getName().str();
  if (const auto *D = dyn_cast<DIDerivedType>(T)) {
    switch (D->getTag()) {
    case dwarf::DW_TAG_pointer_type:
      return spellDI(D->getBaseType()) + " *";
    case dwarf::DW_TAG_reference_type:
    case dwarf::DW_TAG_rvalue_reference_type:
      return spellDI(D->getBaseType()) + " &";
    case dwarf::DW_TAG_const_type:
      return "const " + spellDI(D->getBaseType());
    case dwarf::DW_TAG_volatile_type:
      return "volatile " + spellDI(D->getBaseType());
    default:
      return spellDI(D->getBaseType());
    }
  }
  return "?";
}

static SourceType fromDI(const DIType *T) {
  SourceType S;
  S.Spelling = spellDI(T);
  const DIType *Bare = stripQualifiers(T);
  if (const auto *D = dyn_cast_or_null<DIDerivedType>(Bare);
      D && (D->getTag() == dwarf::DW_TAG_pointer_type ||
            D->getTag() == dwarf::DW_TAG_reference_type ||
            D->getTag() == dwarf::DW_TAG_rvalue_reference_type)) {
    S.K = TypeSig::Pointer;
    TypeSig::Sign Ignored;
    scalarOf(D->getBaseType(), S.PointeeK, Ignored, S.PointeeBits);
    return S;
  }
  scalarOf(T, S.K, S.S, S.Bits);
  return S;
}

/// C++ fundamental types as the Itanium demangler writes them.
static SourceType fromCxxName(StringRef Name) {
  SourceType S;
  S.Spelling = Name.str();
  struct Basic {
    const char *Name;
    TypeSig::Kind K;
    TypeSig::Sign S;
    unsigned Bits;
  };
  using TS = TypeSig;
  static const Basic Basics[] = {
      {"float", TS::Float, TS::Sign::Unknown, 32},
      {"double", TS::Float, TS::Sign::Unknown, 64},
      {"_Float16", TS::Float, TS::Sign::Unknown, 16},
      {"bool", TS::Int, TS::Sign::Unknown, 1},
      {"char", TS::Int, TS::Sign::Unknown, 8},
      {"signed char", TS::Int, TS::Sign::Signed, 8},
      {"unsigned char", TS::Int, TS::Sign::Unsigned, 8},
      {"short", TS::Int, TS::Sign::Signed, 16},
      {"unsigned short", TS::Int, TS::Sign::Unsigned, 16},
      {"int", TS::Int, TS::Sign::Signed, 32},
      {"unsigned int", TS::Int, TS::Sign::Unsigned, 32},
      {"long", TS::Int, TS::Sign::Signed, 64},
      {"unsigned long", TS::Int, TS::Sign::Unsigned, 64},
      {"long long", TS::Int, TS::Sign::Signed, 64},
      {"unsigned long long", TS::Int, TS::Sign::Unsigned, 64},
      {"__int128", TS::Int, TS::Sign::Signed, 128},
      {"unsigned __int128", TS::Int, TS::Sign::Unsigned, 128},
  };
  auto Lookup = [&](StringRef N) -> const Basic * {
    N = N.trim();
    N.consume_front("const ");
    N.consume_back(" const");
    N.consume_front("volatile ");
    N = N.trim();
    for (const Basic &B : Basics)
      if (N == B.Name)
        return &B;
    return nullptr;
  };
  StringRef T = Name.trim();
  if (T.ends_with("*") || T.ends_with("&")) {
    S.K = TypeSig::Pointer;
    if (const Basic *B = Lookup(T.drop_back().rtrim("&*").rtrim())) {
      S.PointeeK = B->K;
      S.PointeeBits = B->Bits;
    }
    return S;
  }
  if (const Basic *B = Lookup(T)) {
    S.K = B->K;
    S.S = B->S;
    S.Bits = B->Bits;
  }
  return S;
}

/// Splits a parameter list at its top-level commas: a demangled C++ one
/// without its parentheses ("float, foo<int, int>*") or a Rust one from a
/// signature record ("a: f32, p: Pair<u32, f32>, f: fn(u32) -> u32"; the
/// '>' of "->" closes nothing).
static SmallVector<StringRef, 8> splitTopLevel(StringRef List) {
  SmallVector<StringRef, 8> Out;
  if (List.trim().empty())
    return Out;
  int Depth = 0;
  size_t Start = 0;
  for (size_t I = 0; I < List.size(); ++I) {
    char C = List[I];
    if (C == '<' || C == '(' || C == '[')
      ++Depth;
    else if ((C == '>' && (I == 0 || List[I - 1] != '-')) || C == ')' ||
             C == ']')
      --Depth;
    else if (C == ',' && Depth == 0) {
      Out.push_back(List.slice(Start, I).trim());
      Start = I + 1;
    }
  }
  Out.push_back(List.drop_front(Start).trim());
  return Out;
}

/// The parameters of a demangled parameter list "(float, foo<int, int>*)".
static std::vector<std::string> splitParams(StringRef List) {
  std::vector<std::string> Out;
  if (!List.consume_front("(") || !List.consume_back(")"))
    return Out;
  for (StringRef P : splitTopLevel(List))
    Out.push_back(P.str());
  return Out;
}

/// Whether a source type can describe an IR type: the same kind and, for
/// scalars, the same width (an aggregate or anything else: any).
static bool describes(const SourceType &Src, const TypeSig &IR) {
  // A struct or union may travel as anything but nothing.
  if (Src.K == TypeSig::Other)
    return IR.K != TypeSig::Void;
  if (Src.K != IR.K)
    return false;
  return Src.K == TypeSig::Pointer || Src.Bits == IR.Bits;
}

static void apply(const SourceType &Src, TypeSig &T) {
  T.Spelling = Src.Spelling;
  if (T.K == TypeSig::Int && Src.K == TypeSig::Int &&
      Src.S != TypeSig::Sign::Unknown) {
    T.S = Src.S;
    T.SignFromSource = true;
  }
  if (T.K == TypeSig::Pointer) {
    T.PointeeK = Src.PointeeK;
    T.PointeeBits = Src.PointeeBits;
    T.PointeeS = Src.PointeeS;
  }
}

//===----------------------------------------------------------------------===//
// Signatures
//===----------------------------------------------------------------------===//

Signature signatureOf(const GlobalValue &GV, SourceLanguage L) {
  Signature Sig;
  const DataLayout &DL = GV.getParent()->getDataLayout();
  Sig.Name = demangle(GV.getName());
  const auto *F = dyn_cast<Function>(&GV);
  if (!F) {
    Sig.Language = L;
    Type *T = isa<GlobalVariable>(GV) ? cast<GlobalVariable>(GV).getValueType()
                                      : GV.getValueType();
    Sig.Return = fromIR(T, AttributeSet(), DL, L);
    if (const auto *V = dyn_cast<GlobalVariable>(&GV)) {
      SmallVector<DIGlobalVariableExpression *, 1> DIs;
      V->getDebugInfo(DIs);
      if (!DIs.empty() && DIs.front()->getVariable()) {
        SourceType Src = fromDI(DIs.front()->getVariable()->getType());
        if (describes(Src, Sig.Return)) {
          apply(Src, Sig.Return);
          Sig.FromSource = true;
        }
      }
    }
    return Sig;
  }

  Sig.IsFunction = true;
  Sig.IsKernel = F->getCallingConv() == CallingConv::PTX_Kernel;
  Sig.IsVariadic = F->isVarArg();
  const DISubprogram *SP = F->getSubprogram();
  if (SP && SP->getUnit())
    if (SourceLanguage DL2 = fromDwarf(
            SP->getUnit()->getSourceLanguage().getUnversionedName());
        DL2 != SourceLanguage::Unknown)
      L = DL2;
  Sig.Language = L;
  if (SP && L == SourceLanguage::Rust && !SP->getName().empty())
    Sig.Name = SP->getName().str();
  else if (L != SourceLanguage::Rust && GV.getName().starts_with("_Z")) {
    // The C++ name without its parameters, which the signature writes.
    // The demangler keeps pointers into the name: it must outlive D's use.
    std::string Mangled = GV.getName().str();
    ItaniumPartialDemangler D;
    size_t N = 0;
    if (!D.partialDemangle(Mangled.c_str()) && D.isFunction())
      if (char *B = D.getFunctionName(nullptr, &N)) {
        Sig.Name = B;
        std::free(B);
      }
  }

  AttributeList Attrs = F->getAttributes();
  unsigned First = 0;
  // A returned aggregate that the ABI passes as a hidden first pointer is
  // the return type.
  if (F->arg_size() > 0 && F->hasParamAttribute(0, Attribute::StructRet)) {
    Sig.Return.K = TypeSig::Aggregate;
    Sig.Return.Size = DL.getTypeAllocSize(F->getParamStructRetType(0));
    Sig.Return.Spelling = std::to_string(Sig.Return.Size) + "-byte struct";
    First = 1;
  } else {
    Sig.Return = fromIR(F->getReturnType(), Attrs.getRetAttrs(), DL, L);
  }
  for (unsigned I = First; I < F->arg_size(); ++I)
    Sig.Params.push_back(fromIR(F->getFunctionType()->getParamType(I),
                                Attrs.getParamAttrs(I), DL, L));

  // Debug info, when it has the types, names them best.
  const auto *ST = SP ? SP->getType() : nullptr;
  if (ST && ST->getTypeArray().size() > 0) {
    DITypeRefArray Types = ST->getTypeArray();
    std::vector<SourceType> Src;
    for (unsigned I = 1; I < Types.size(); ++I)
      if (Types[I]) // a null type at the end is C's `...`
        Src.push_back(fromDI(Types[I]));
    SourceType Ret = fromDI(Types[0]);
    bool Fits = Src.size() == Sig.Params.size() &&
                (Types[0] ? describes(Ret, Sig.Return)
                          : Sig.Return.K == TypeSig::Void);
    for (unsigned I = 0; Fits && I < Src.size(); ++I)
      Fits = describes(Src[I], Sig.Params[I]);
    if (Fits) {
      if (Types[0])
        apply(Ret, Sig.Return);
      for (unsigned I = 0; I < Src.size(); ++I)
        apply(Src[I], Sig.Params[I]);
      Sig.FromSource = true;
      return Sig;
    }
  }

  // Else a C++ name's parameters; its return type is not in the name.
  StringRef Name = GV.getName();
  if (Name.starts_with("_Z")) {
    std::string Mangled = Name.str(); // outlives D's use, as above
    ItaniumPartialDemangler D;
    size_t N = 0;
    if (!D.partialDemangle(Mangled.c_str()) && D.isFunction()) {
      if (char *P = D.getFunctionParameters(nullptr, &N)) {
        std::vector<std::string> Params = splitParams(P);
        std::free(P);
        if (!Params.empty() && Params.back() == "...")
          Params.pop_back();
        if (Params.size() == 1 && Params[0] == "void")
          Params.clear();
        std::vector<SourceType> Src;
        for (const std::string &S : Params)
          Src.push_back(fromCxxName(S));
        bool Fits = Src.size() == Sig.Params.size();
        for (unsigned I = 0; Fits && I < Src.size(); ++I)
          Fits = describes(Src[I], Sig.Params[I]);
        if (Fits) {
          for (unsigned I = 0; I < Src.size(); ++I)
            apply(Src[I], Sig.Params[I]);
          Sig.FromSource = true;
        }
      }

    }
  }
  return Sig;
}

std::string Signature::str() const {
  std::vector<std::string> Ps;
  for (const TypeSig &P : Params)
    Ps.push_back(P.Spelling);
  if (IsVariadic)
    Ps.push_back("...");
  std::string List = "(" + join(Ps, ", ") + ")";
  if (Language == SourceLanguage::Rust) {
    if (!IsFunction)
      return "static " + Name + ": " + Return.Spelling;
    std::string S = std::string(IsKernel ? "extern \"ptx-kernel\" " : "") +
                    "fn " + Name + List;
    if (Return.K != TypeSig::Void)
      S += " -> " + Return.Spelling;
    return S;
  }
  if (!IsFunction)
    return Return.Spelling + " " + Name;
  return std::string(IsKernel && isCLike(Language) ? "__global__ " : "") +
         Return.Spelling + " " + Name + List;
}

//===----------------------------------------------------------------------===//
// Comparison
//===----------------------------------------------------------------------===//

/// Why A (the use's) and B (the definition's) differ, for "X is A and B":
/// empty when they agree.
static bool sameType(const TypeSig &A, const TypeSig &B, std::string &Note) {
  auto SizeOf = [](const TypeSig &T) -> uint64_t {
    if (T.K == TypeSig::Int || T.K == TypeSig::Float)
      return (T.Bits + 7) / 8;
    return T.K == TypeSig::Aggregate ? T.Size : 0;
  };
  if (A.K != B.K) {
    // An aggregate may travel as an integer or a float of its size.
    if ((A.K == TypeSig::Aggregate || B.K == TypeSig::Aggregate) &&
        SizeOf(A) != 0 && SizeOf(A) == SizeOf(B))
      return true;
    return false;
  }
  switch (A.K) {
  case TypeSig::Void:
    return true;
  case TypeSig::Int:
    if (A.Bits != B.Bits)
      return false;
    if (A.SignFromSource && B.SignFromSource && A.S != B.S) {
      Note = " (the sign differs)";
      return false;
    }
    return true;
  case TypeSig::Float:
    return A.Bits == B.Bits && A.BFloat == B.BFloat;
  case TypeSig::Pointer:
    if (A.AddrSpace != B.AddrSpace)
      return false;
    if (A.PointeeK != TypeSig::Other && B.PointeeK != TypeSig::Other &&
        (A.PointeeK != B.PointeeK || A.PointeeBits != B.PointeeBits)) {
      Note = " (they point to different types)";
      return false;
    }
    return true;
  case TypeSig::Aggregate:
    return A.Size == B.Size;
  case TypeSig::Other:
    return A.IR == B.IR;
  }
  return true;
}

std::string findMismatch(const Signature &Use, const Signature &Def) {
  std::string Note;
  auto Differ = [&](const Twine &What, const TypeSig &A, const TypeSig &B) {
    return (What + " " + A.Spelling + " in the declaration and " + B.Spelling +
            " in the definition" + Note)
        .str();
  };
  if (!Use.IsFunction || !Def.IsFunction) {
    if (Use.IsFunction != Def.IsFunction)
      return ""; // the symbol-kind check reports it
    // Variables: scalars must agree; otherwise a declaration may be no
    // larger than what is defined (`extern float a[];` declares 0 bytes).
    const TypeSig &A = Use.Return, &B = Def.Return;
    auto Scalar = [](const TypeSig &T) {
      return T.K == TypeSig::Int || T.K == TypeSig::Float ||
             T.K == TypeSig::Pointer;
    };
    if (Scalar(A) && Scalar(B)) {
      if (!sameType(A, B, Note))
        return Differ("the type is", A, B);
      return "";
    }
    auto Bytes = [](const TypeSig &T) -> uint64_t {
      if (T.K == TypeSig::Aggregate)
        return T.Size;
      if (T.K == TypeSig::Int || T.K == TypeSig::Float)
        return (T.Bits + 7) / 8;
      return T.K == TypeSig::Pointer ? 8 : 0;
    };
    if (Bytes(A) && Bytes(B) && Bytes(A) > Bytes(B))
      return ("it is " + Twine(Bytes(A)) + " bytes in the declaration and " +
              Twine(Bytes(B)) + " in the definition")
          .str();
    return "";
  }
  if (Use.IsVariadic != Def.IsVariadic)
    return Use.IsVariadic ? "it is variadic in the declaration, not in the "
                            "definition"
                          : "it is variadic in the definition, not in the "
                            "declaration";
  if (Use.Params.size() != Def.Params.size())
    return ("it takes " + Twine(Use.Params.size()) +
            " parameters in the declaration and " + Twine(Def.Params.size()) +
            " in the definition")
        .str();
  if (!sameType(Use.Return, Def.Return, Note))
    return Differ("the return type is", Use.Return, Def.Return);
  for (size_t I = 0; I < Use.Params.size(); ++I)
    if (!sameType(Use.Params[I], Def.Params[I], Note))
      return Differ("parameter " + Twine(I + 1) + " is", Use.Params[I],
                    Def.Params[I]);
  return "";
}

//===----------------------------------------------------------------------===//
// Kernel signature records (#[fatlink_device::kernel])
//===----------------------------------------------------------------------===//

/// How every record line starts; "1 " follows for the version this reads.
static constexpr StringLiteral RecordPrefix = "// fatlink-kernel-signature ";

/// A Rust scalar type's kind, sign and width (usize: 64 bits on nvptx64).
static bool rustScalar(StringRef N, TypeSig::Kind &K, TypeSig::Sign &S,
                       unsigned &Bits) {
  N = N.trim();
  if (N == "bool") {
    K = TypeSig::Int;
    Bits = 1;
    return true;
  }
  if (N == "f16" || N == "f32" || N == "f64") {
    K = TypeSig::Float;
    Bits = N == "f16" ? 16 : N == "f32" ? 32 : 64;
    return true;
  }
  if (N.size() < 2 || (N[0] != 'i' && N[0] != 'u'))
    return false;
  unsigned W = 0;
  StringRef Width = N.drop_front();
  if (Width == "size")
    W = 64;
  else if (Width.getAsInteger(10, W) ||
           (W != 8 && W != 16 && W != 32 && W != 64 && W != 128))
    return false;
  K = TypeSig::Int;
  S = N[0] == 'i' ? TypeSig::Sign::Signed : TypeSig::Sign::Unsigned;
  Bits = W;
  return true;
}

/// A Rust type as the record writes it: a scalar, a raw pointer (to a
/// scalar or not), or anything else (a struct, an array: Other).
static SourceType fromRustName(StringRef Name) {
  SourceType S;
  S.Spelling = Name.str();
  StringRef Pointee = Name;
  if (Pointee.consume_front("*const ") || Pointee.consume_front("*mut ")) {
    S.K = TypeSig::Pointer;
    rustScalar(Pointee, S.PointeeK, S.PointeeS, S.PointeeBits);
    return S;
  }
  rustScalar(Name, S.K, S.S, S.Bits);
  return S;
}

static Expected<KernelRecord> parseRecord(StringRef Line) {
  auto Bad = [&](const char *Why) {
    return createStringError("%s in kernel signature record '%s'", Why,
                             Line.str().c_str());
  };
  KernelRecord R;
  R.Text = Line.str();
  StringRef Rest = Line.drop_front(RecordPrefix.size());
  if (!Rest.consume_front("1 "))
    return createStringError(
        "kernel signature record '%s' has a version this fatlink does not "
        "read (it reads version 1): build the crate with the fatlink-device "
        "and fatlink-macros of this fatlink",
        Line.str().c_str());
  size_t Open = Rest.find('(');
  if (Open == StringRef::npos || Open == 0 || !Rest.ends_with(")"))
    return Bad("no 'name(parameters)'");
  R.Kernel = Rest.take_front(Open).trim().str();
  for (StringRef P : splitTopLevel(Rest.slice(Open + 1, Rest.size() - 1))) {
    auto [Name, Type] = P.split(": ");
    if (Name.empty() || Type.trim().empty())
      return Bad("a parameter without 'name: type'");
    R.Params.emplace_back(Name.trim().str(), Type.trim().str());
  }
  return R;
}

Expected<std::vector<KernelRecord>> takeKernelRecords(Module &M) {
  std::vector<KernelRecord> Records;
  StringRef Asm = M.getModuleInlineAsm();
  if (!Asm.contains(RecordPrefix))
    return Records;
  SmallVector<StringRef, 16> Lines;
  Asm.split(Lines, '\n');
  if (Asm.ends_with("\n"))
    Lines.pop_back(); // each line of module asm ends with '\n'
  std::string Kept;
  for (StringRef Line : Lines) {
    if (!Line.trim().starts_with(RecordPrefix)) {
      Kept += Line;
      Kept += '\n';
      continue;
    }
    Expected<KernelRecord> R = parseRecord(Line.trim());
    if (!R)
      return R.takeError();
    Records.push_back(std::move(*R));
  }
  M.setModuleInlineAsm(Kept);
  return Records;
}

std::string applyKernelRecord(Signature &Sig, const KernelRecord &R) {
  if (R.Params.size() != Sig.Params.size())
    return ("it records " + Twine(R.Params.size()) +
            " parameters and the IR has " + Twine(Sig.Params.size()))
        .str();
  std::vector<SourceType> Src;
  for (auto [I, P] : enumerate(R.Params)) {
    Src.push_back(fromRustName(P.second));
    if (!describes(Src.back(), Sig.Params[I])) {
      std::string IR;
      raw_string_ostream OS(IR);
      if (Sig.Params[I].IR)
        Sig.Params[I].IR->print(OS);
      return ("parameter " + Twine(I + 1) + " (" + P.first + ": " + P.second +
              ") is " + IR + " in the IR")
          .str();
    }
  }
  for (auto [I, P] : enumerate(R.Params)) {
    apply(Src[I], Sig.Params[I]);
    Sig.Params[I].Name = P.first;
  }
  Sig.Language = SourceLanguage::Rust;
  if (Sig.Return.K == TypeSig::Void)
    Sig.Return.Spelling = "()";
  Sig.FromSource = true;
  return "";
}

} // namespace fatlink::lto
