//===- lto/Signature.h - What a symbol's type is, in each input's words ---===//
//
// Internal to lto/. The signature model: for a function or a variable as
// one input module declares or defines it, its return and parameter types
// as kinds (integer of N bits with its sign where a source says it, f16,
// bf16, f32, f64, pointer with its address space and, where a source says
// it, its pointee, by-value aggregate with its size, void), whether it is
// variadic and whether it is a kernel, each type also spelled in the words
// of the input's source language (`f32` in a Rust crate, `float` in a .cu
// file).
//
// The kinds come from the IR, which is what the ABI is made of. The words
// and what the IR does not say (the sign of an integer, the pointee of a
// pointer) come, best first, from debug info (rustc -g, clang -g: the
// DISubroutineType of the function's DISubprogram), from the Itanium
// mangled name of a C++ function (its parameter types), and last from the
// IR types themselves, spelled as the language would ("i32/u32" in Rust,
// "int/unsigned" in C++, where the IR does not keep the sign).
//
// The link checks every declaration against the definition it resolves to
// (checkSignatures in Link.cpp; docs/abi.md); the kernel manifest
// (issue #17, part 2) records kernels' signatures in the same model. A
// Rust kernel marked `#[fatlink_device::kernel]` also carries its Rust
// signature as a record in its bitcode (KernelRecord), which describes its
// parameters better than any of the above.
//
//===----------------------------------------------------------------------===//

#ifndef FATLINK_LTO_SIGNATURE_H
#define FATLINK_LTO_SIGNATURE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace llvm {
class GlobalValue;
class Module;
class Type;
} // namespace llvm

namespace fatlink::lto {

/// The source language an input's code was written in, as its producer
/// (`!llvm.ident`) or its debug info says.
enum class SourceLanguage { Unknown, Rust, CudaCxx, C };

/// "Rust", "CUDA C++", "C"; empty for Unknown.
llvm::StringRef languageName(SourceLanguage L);

/// The language of a module's code: its compile units' if it has debug
/// info, else its producer's (rustc: Rust; clang: CUDA C++). A module with
/// several producers (an earlier link's output) is Unknown.
SourceLanguage moduleLanguage(const llvm::Module &M);

/// One type in a signature.
struct TypeSig {
  enum Kind : uint8_t { Void, Int, Float, Pointer, Aggregate, Other };
  enum class Sign : uint8_t { Unknown, Signed, Unsigned };
  Kind K = Other;
  /// Int: from a source type (debug info, a demangled name) or the IR's
  /// signext/zeroext, which only spelling uses.
  Sign S = Sign::Unknown;
  bool SignFromSource = false;
  bool BFloat = false;     ///< Float of 16 bits: bf16 rather than f16
  unsigned Bits = 0;       ///< Int, Float
  unsigned AddrSpace = 0;  ///< Pointer
  uint64_t Size = 0;       ///< Aggregate: bytes
  /// Pointer, when a source type says: its pointee's kind and width (Int,
  /// Float), else Other.
  Kind PointeeK = Other;
  unsigned PointeeBits = 0;
  /// Pointer to Int: its sign, where a source says (a Rust record only).
  Sign PointeeS = Sign::Unknown;
  llvm::Type *IR = nullptr; ///< Other: the IR type, compared as it is
  std::string Spelling;     ///< in the source language
  std::string Name;         ///< a parameter's name, where a source says it
};

/// A function's or a variable's signature as one module has it.
struct Signature {
  bool IsFunction = false;
  bool IsKernel = false;
  bool IsVariadic = false;
  /// A source gave more than the IR (debug info or a mangled name).
  bool FromSource = false;
  SourceLanguage Language = SourceLanguage::Unknown;
  std::string Name; ///< demangled where it is a C++ name
  /// A function's return type; a variable's type.
  TypeSig Return;
  std::vector<TypeSig> Params;

  /// As the language writes it: `fn f(f32) -> f32`, `float f(double)`,
  /// `static X: f32`, `__global__ void k(float *)`.
  std::string str() const;
};

/// The signature of \p GV as its module declares or defines it; \p L is the
/// module's language (moduleLanguage), which debug info may override.
Signature signatureOf(const llvm::GlobalValue &GV, SourceLanguage L);

/// Why a use of a symbol as \p Use says cannot reach its definition \p Def,
/// as "parameter 2 is f32 in the declaration and double in the
/// definition"; empty when they agree. Equal IR types always agree, but for
/// the sign of an integer or the pointee of a pointer that a source type on
/// each side states. An aggregate passed by value matches any type of its
/// size (the ABI may pass it as one).
std::string findMismatch(const Signature &Use, const Signature &Def);

/// A kernel's Rust signature as `#[fatlink_device::kernel]` recorded it in
/// its crate's bitcode: one line of module asm, a PTX comment,
///   // fatlink-kernel-signature 1 NAME(a: f32, x: *const f32, n: u32)
/// (cargo/fatlink-macros; docs/abi.md "The kernel signature record").
struct KernelRecord {
  std::string Kernel;
  /// Each parameter's name ("_" where the pattern was no plain name) and
  /// Rust type, as written: "*const f32", "u32", "Pair".
  std::vector<std::pair<std::string, std::string>> Params;
  std::string Text; ///< the whole line, for messages
};

/// The kernel signature records in \p M's module asm, which it removes
/// from \p M, so that they never reach codegen. A line that starts like a
/// record but is not one this fatlink reads (another version, no
/// parameter list) is an error naming the line.
llvm::Expected<std::vector<KernelRecord>> takeKernelRecords(llvm::Module &M);

/// Refines \p Sig, a kernel's signature as its IR has it, with its record
/// \p R: the language becomes Rust, each parameter's name and Rust type
/// (an integer's sign, a raw pointer's pointee and `*const`). Where the
/// record disagrees with the IR (parameter count; an integer, float or
/// pointer whose kind or width differs), \p Sig is left as it is and the
/// returned string says why ("parameter 2 (x: f64) is float in the IR");
/// empty on success.
std::string applyKernelRecord(Signature &Sig, const KernelRecord &R);

} // namespace fatlink::lto

#endif // FATLINK_LTO_SIGNATURE_H
