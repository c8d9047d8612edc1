//===- lto/Link.cpp - Whole-program device link and optimization ---------===//
//
// The idea: a GPU program is closed. Nothing outside it calls a device
// function except the driver, which launches kernels and reads the globals
// the host registered. So after linking every module into one, everything
// but kernels, `--export-symbol` names and host-visible globals becomes
// internal, and one O3 pipeline inlines across crate and language
// boundaries and deletes the rest.
//
// Order of work, per group of targets that link the same images:
//   1. parse the images into one LLVMContext, taking out the signature
//      records of Rust kernels (#[fatlink_device::kernel]), which then
//      refine those kernels' signatures (docs/abi.md),
//   2. resolve symbols ourselves first, so duplicate definitions are
//      reported with both inputs (llvm::Linker only knows the symbol),
//   3. link (IRMover; ThinLTO summaries in rustc's bitcode are ignored, as
//      they should be for a full link),
//   4. link libdevice with LinkOnlyNeeded if anything calls `__nv_*`,
//   5. internalize and drop dead globals, then report undefined symbols that
//      are still referenced, each with every input that references it,
//   6. fold `__nvvm_reflect`: FTZ/precise-sqrt/precise-div answers are the
//      same for every target; `__CUDA_ARCH` is folded per target, and
//      targets whose comparisons all come out the same share one module,
//   7. give every function the same target-cpu/target-features (the inliner
//      refuses to inline across differing attributes, and rustc and clang
//      write different ones), then run the O3 pipeline once per module.
//
// A link with partitions and enough device bitcode (LinkOptions::
// PartitionFirst) never holds the whole program: step 1 frees each module
// once its facts and summary are taken (ImageGraph, lto/Summary.cpp), the
// checks of steps 1-2 run on those facts, the summaries are resolved,
// internalized and planned into partitions, and steps 3-6 run once per
// partition, on a module linked from only the inputs that define its
// members (linkPartitionFirst); step 7 folds each partition's __CUDA_ARCH.
//
// Before all that, a translation unit compiled for several arches (clang
// --offload-arch=sm_75,sm_80,...) whose per-arch images differ only in
// those two attributes is one program for all of them: such images are
// compared (a digest of each one's bitcode records without the attributes,
// lto/ArchDigest.cpp) and the targets that chose them share one group, one
// link and one O3 run.
//
//===----------------------------------------------------------------------===//

#include "lto/LTO.h"
#include "packager/Bytes.h"
#include "lto/Libraries.h"
#include "lto/Signature.h"
#include "lto/Support.h"
#include "lto/Target.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Analysis/ValueTracking.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Demangle/Demangle.h"
#include "llvm/IR/Comdat.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/DebugInfo.h"
#include "llvm/IR/DebugInfoMetadata.h"
#include "llvm/IR/DiagnosticInfo.h"
#include "llvm/IR/DiagnosticPrinter.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Linker/Linker.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/BLAKE3.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/NVPTXAddrSpace.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/Threading.h"
#include "llvm/Support/TimeProfiler.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Transforms/IPO/AlwaysInliner.h"
#include "llvm/Transforms/IPO/GlobalDCE.h"
#include "llvm/Transforms/IPO/Internalize.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "llvm/Transforms/Utils/ModuleUtils.h"

#include <atomic>
#include <cmath>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

using namespace llvm;

namespace fatlink::lto {

//===----------------------------------------------------------------------===//
// Diagnostics from LLVM
//===----------------------------------------------------------------------===//

void DiagnosticCollector::handle(const DiagnosticInfo &DI) {
  if (DI.getSeverity() != DS_Error)
    return;
  std::string Msg;
  raw_string_ostream OS(Msg);
  DiagnosticPrinterRawOStream DP(OS);
  DI.print(DP);
  Errors.push_back(std::move(Msg));
}

void DiagnosticCollector::install(LLVMContext &Ctx) {
  Ctx.setDiagnosticHandlerCallBack(
      [](const DiagnosticInfo *DI, void *Self) {
        static_cast<DiagnosticCollector *>(Self)->handle(*DI);
      },
      this);
}

Error DiagnosticCollector::takeError(const Twine &Context) {
  if (Errors.empty())
    return Error::success();
  std::string Msg = Context.str() + ": " + join(Errors, "; ");
  Errors.clear();
  return createStringError(Msg);
}

//===----------------------------------------------------------------------===//
// Symbol resolution
//===----------------------------------------------------------------------===//

namespace {

/// LLVM's own: intrinsics it knows, and its special variables (llvm.used,
/// llvm.global_ctors). A function named "llvm.*" that is no intrinsic (a
/// corrupted name, say) is an ordinary symbol, so it is checked as one.
static bool isLLVMReserved(const GlobalValue &GV) {
  if (const auto *F = dyn_cast<Function>(&GV))
    return F->getIntrinsicID() != Intrinsic::not_intrinsic;
  return GV.getName().starts_with("llvm.");
}

/// What a symbol is, as a definition or a declaration says.
enum class SymbolKind { Function, Kernel, Variable, Other };

static SymbolKind kindOf(const GlobalValue &GV) {
  if (const auto *F = dyn_cast<Function>(&GV))
    return F->getCallingConv() == CallingConv::PTX_Kernel ? SymbolKind::Kernel
                                                          : SymbolKind::Function;
  if (isa<GlobalVariable>(GV))
    return SymbolKind::Variable;
  return SymbolKind::Other; // aliases, ifuncs: the IR linker checks them
}

/// What a declaration claims its symbol is. A function declaration that is
/// never called claims nothing about kernels: clang declares a kernel that
/// host code launches, in that file's device image, as a plain function
/// (for `__clang_gpu_used_external`).
static SymbolKind refKindOf(const GlobalValue &GV) {
  SymbolKind K = kindOf(GV);
  if (K != SymbolKind::Function)
    return K;
  bool Called = any_of(GV.users(), [&](const User *U) {
    const auto *CB = dyn_cast<CallBase>(U);
    return CB && CB->getCalledOperand() == &GV;
  });
  return Called ? SymbolKind::Function : SymbolKind::Other;
}

static const char *kindName(SymbolKind K) {
  switch (K) {
  case SymbolKind::Function:
    return "device function";
  case SymbolKind::Kernel:
    return "kernel";
  case SymbolKind::Variable:
    return "variable";
  case SymbolKind::Other:
    break;
  }
  return "symbol";
}

/// Who defines and who uses each external symbol, by input.
struct SymbolTable {
  struct Entry {
    std::vector<StringRef> StrongDefs;
    std::vector<StringRef> WeakDefs;
    std::vector<StringRef> Refs;
    /// What the first definition is, and where; what each reference (in
    /// Refs' order) declares it to be.
    SymbolKind DefKind = SymbolKind::Other;
    StringRef DefOrigin;
    std::vector<SymbolKind> RefKinds;
    /// Defined (somewhere) by module-level PTX rather than by the IR.
    bool InAsm = false;
    /// A kernel's definition as its source states it, for the manifest.
    std::optional<Signature> KernelSig;
    /// Where the kernel's `#[fatlink_device::kernel]` record came from,
    /// once applied to KernelSig; empty without one.
    StringRef RecordOrigin;
  };
  std::map<std::string, Entry> Symbols; // ordered: deterministic reports

  void add(const Module &M, StringRef Origin) {
    for (const GlobalValue &GV : M.global_values()) {
      if (GV.hasLocalLinkage() || !GV.hasName() || isLLVMReserved(GV))
        continue;
      Entry &E = Symbols[GV.getName().str()];
      // A definition in a comdat that may be deduplicated is resolved by
      // the comdat rules, like a weak one.
      const Comdat *C = GV.getComdat();
      bool Deduplicated = C && C->getSelectionKind() != Comdat::NoDeduplicate;
      if (GV.isDeclarationForLinker()) {
        E.Refs.push_back(Origin);
        E.RefKinds.push_back(refKindOf(GV));
        continue;
      }
      if (E.DefOrigin.empty()) {
        E.DefKind = kindOf(GV);
        E.DefOrigin = Origin;
        if (const auto *F = dyn_cast<Function>(&GV);
            F && F->getCallingConv() == CallingConv::PTX_Kernel)
          E.KernelSig = signatureOf(*F, moduleLanguage(M));
      }
      if (GV.hasExternalLinkage() && !Deduplicated)
        E.StrongDefs.push_back(Origin);
      else
        E.WeakDefs.push_back(Origin);
    }
    // Module-level PTX's variables are the program's too: two inputs that
    // define one would otherwise reach ptxas ("Duplicate definition of
    // variable 'TILE'"), naming neither.
    for (AsmVariable &V : asmDefinedVariables(M.getModuleInlineAsm())) {
      Entry &E = Symbols[V.Name];
      if (E.DefOrigin.empty()) {
        E.DefKind = SymbolKind::Variable;
        E.DefOrigin = Origin;
      }
      (V.Weak ? E.WeakDefs : E.StrongDefs).push_back(Origin);
      E.InAsm = true;
    }
  }
};

} // namespace

/// "name" or "name (demangled)" for messages.
static std::string describeSymbol(StringRef Name) {
  std::string Demangled = demangle(Name);
  if (Demangled == Name)
    return Name.str();
  return (Name + " (" + Demangled + ")").str();
}

/// Adds relocatable code's definitions to \p Symtab (one object per unit:
/// every arch's defines the same), so that a symbol two units define, or
/// one unit and the bitcode, is reported by checkDuplicates, naming both,
/// rather than by nvlink naming its temporary files.
static void addObjectDefinitions(const InputSet &Inputs, SymbolTable &Symtab) {
  std::set<unsigned> Units;
  for (const DeviceObject &O : Inputs.Objects)
    if (Units.insert(O.Source).second)
      for (const std::string &Name : O.Defined) {
        SymbolTable::Entry &E = Symtab.Symbols[Name];
        (is_contained(O.Weak, Name) ? E.WeakDefs : E.StrongDefs)
            .push_back(O.Container);
      }
}

static Error checkDuplicates(const SymbolTable &Symtab, unsigned ErrorLimit) {
  ErrorList Errors(ErrorLimit);
  for (const auto &[Name, E] : Symtab.Symbols) {
    if (E.StrongDefs.size() < 2)
      continue;
    std::string Msg = "duplicate device symbol: " + describeSymbol(Name);
    for (StringRef Origin : E.StrongDefs)
      Msg += "\n>>> defined in " + Origin.str();
    if (E.InAsm)
      Msg += "\n>>> a variable of module-level PTX (fatlink-device's "
             "shared_array!, global_asm!) is one symbol of "
             "the whole program: give each a name no other input uses";
    Errors.add(createStringError(Msg));
  }
  return Errors.take();
}

/// A reference must use a symbol as what its definition is: an input that
/// calls what another defines as a variable, or reads a function as data,
/// would otherwise link into nonsense without a word; and a kernel called
/// as a device function compiles, in the caller, to nothing (`exit;`).
static Error checkKinds(const SymbolTable &Symtab, unsigned ErrorLimit) {
  ErrorList Errors(ErrorLimit);
  for (const auto &[Name, E] : Symtab.Symbols) {
    if (E.DefKind == SymbolKind::Other)
      continue;
    for (auto [Origin, Kind] : zip(E.Refs, E.RefKinds)) {
      if (Kind == E.DefKind || Kind == SymbolKind::Other)
        continue;
      std::string Msg = "device symbol " + describeSymbol(Name) +
                        " is a " + kindName(E.DefKind) + ", used as a " +
                        kindName(Kind) + "\n>>> defined as a " +
                        kindName(E.DefKind) + " in " + E.DefOrigin.str() +
                        "\n>>> used as a " + kindName(Kind) + " by " +
                        Origin.str();
      if (E.DefKind == SymbolKind::Kernel && Kind == SymbolKind::Function)
        Msg += "\n>>> a kernel can only be launched (<<<>>>, cudaLaunchKernel, "
               "fatlink-rt); a call to one compiles to nothing: call a "
               "__device__ function instead";
      Errors.add(createStringError(Msg));
    }
  }
  return Errors.take();
}

/// A Rust kernel marked `#[fatlink_device::kernel]` carries its Rust
/// signature in its crate's bitcode (a record, read and removed from each
/// module as it is parsed). Each record refines its kernel's signature,
/// which the manifest and checkSignatures then use; a record that
/// disagrees with the kernel's IR (the macro's crate and the kernel built
/// apart, or a record written by hand) or that names no kernel is an error
/// naming the kernel and both inputs, since a manifest built from it would
/// let a launch pass the wrong arguments.
static Error
applyKernelRecords(ArrayRef<std::pair<KernelRecord, StringRef>> Records,
                   SymbolTable &Symtab, unsigned ErrorLimit) {
  ErrorList Errors(ErrorLimit);
  for (const auto &[R, Origin] : Records) {
    auto It = Symtab.Symbols.find(R.Kernel);
    if (It == Symtab.Symbols.end() || !It->second.KernelSig) {
      Errors.add(createStringError(
          "%s records the signature of kernel %s, which no input defines as "
          "a kernel\n>>> record: %s\n>>> #[fatlink_device::kernel] writes "
          "the record beside its kernel: rebuild the crate, and link the "
          "kernel's crate too",
          Origin.str().c_str(), R.Kernel.c_str(), R.Text.c_str()));
      continue;
    }
    SymbolTable::Entry &E = It->second;
    if (!E.RecordOrigin.empty()) {
      Errors.add(createStringError(
          "two signature records for kernel %s\n>>> in %s\n>>> in %s",
          R.Kernel.c_str(), E.RecordOrigin.str().c_str(),
          Origin.str().c_str()));
      continue;
    }
    std::string IRSig = E.KernelSig->str();
    std::string Why = applyKernelRecord(*E.KernelSig, R);
    if (!Why.empty()) {
      Errors.add(createStringError(
          "the signature record of kernel %s does not match its code: %s"
          "\n>>> recorded in %s: %s\n>>> defined in %s as %s\n>>> rebuild "
          "the crate: #[fatlink_device::kernel] records the signature the "
          "kernel is compiled with",
          R.Kernel.c_str(), Why.c_str(), Origin.str().c_str(), R.Text.c_str(),
          E.DefOrigin.str().c_str(), IRSig.c_str()));
      continue;
    }
    E.RecordOrigin = Origin;
  }
  return Errors.take();
}

/// What the checks across inputs need of one module, kept where the module
/// itself is not (linkPartitionFirst reads each input alone, then lets it go).
/// Types point into the link's context, which outlives the facts.
struct ModuleFacts {
  struct Symbol {
    std::string Name;
    /// refKindOf for a declaration, kindOf for a definition.
    SymbolKind Kind = SymbolKind::Other;
    /// While the module lives (its context's uniqued type); else null.
    Type *ValueType = nullptr;
    bool Shared = false; ///< a variable in shared memory
    bool HasSourceTypes = false;
    /// While the module lives, the symbol; else its signature, computed
    /// when the facts were taken.
    const GlobalValue *GV = nullptr;
    std::optional<Signature> Sig;
  };
  SourceLanguage Language = SourceLanguage::Unknown;
  unsigned PtxVersion = 0; ///< requiredPtxVersion
  unsigned DwarfPtxVersion = 0; ///< dwarfPtxVersion
  /// External declarations and definitions (not LLVM's own), in order.
  std::vector<Symbol> Decls, Defs;
  /// `extern __shared__` declarations: name and alignment.
  std::vector<std::pair<std::string, Align>> SharedDecls;

  Signature signature(const Symbol &S) const {
    return S.Sig ? *S.Sig : signatureOf(*S.GV, Language);
  }
};

static unsigned requiredPtxVersion(const Module &M);

/// The PTX ISA version the DWARF sections the NVPTX backend writes for M's
/// debug info need, 0 if it writes none. It writes them (`.target sm_NN,
/// debug`) for a compile unit with full debug info or line tables (rustc
/// -g, clang -g; line directives alone, .loc and .file, need nothing): PTX
/// 7.0 for their labels, and 7.5 where a unit with full debug info has
/// its default name tables (or GNU's), which the backend, tuned for
/// cuda-gdb, writes as .debug_pubnames and .debug_pubtypes, whose lengths
/// are label differences ("labels1 - labels2 expression in .section
/// requires PTX ISA .version 7.5"). clang and rustc ask for no name tables.
static unsigned dwarfPtxVersion(const Module &M) {
  unsigned Version = 0;
  for (const DICompileUnit *CU : M.debug_compile_units()) {
    auto Kind = CU->getEmissionKind();
    if (Kind != DICompileUnit::FullDebug &&
        Kind != DICompileUnit::LineTablesOnly)
      continue;
    auto Names = CU->getNameTableKind();
    bool PubNames = Kind == DICompileUnit::FullDebug &&
                    (Names == DICompileUnit::DebugNameTableKind::Default ||
                     Names == DICompileUnit::DebugNameTableKind::GNU);
    Version = std::max(Version, PubNames ? 75u : 70u);
  }
  return Version;
}

/// Whether GV, a function or variable, has source types (debug info) that
/// say more than its IR type.
static bool hasSourceTypes(const GlobalValue &GV) {
  if (isa<GlobalVariable>(GV))
    return cast<GlobalVariable>(GV).hasMetadata(LLVMContext::MD_dbg);
  const auto *F = dyn_cast<Function>(&GV);
  const DISubprogram *SP = F ? F->getSubprogram() : nullptr;
  return SP && SP->getType() && SP->getType()->getTypeArray().size() > 0;
}

/// M's facts. With \p Alone, everything is computed now (the module is
/// about to go); otherwise the facts refer to M's globals.
static ModuleFacts factsOf(const Module &M, bool Alone) {
  ModuleFacts F;
  F.Language = moduleLanguage(M);
  F.PtxVersion = requiredPtxVersion(M);
  F.DwarfPtxVersion = dwarfPtxVersion(M);
  for (const GlobalValue &GV : M.global_values()) {
    if (GV.hasLocalLinkage() || !GV.hasName() || isLLVMReserved(GV))
      continue;
    bool Decl = GV.isDeclarationForLinker();
    if (const auto *V = dyn_cast<GlobalVariable>(&GV);
        V && V->isDeclaration() &&
        V->getAddressSpace() == NVPTXAS::ADDRESS_SPACE_SHARED)
      F.SharedDecls.push_back({V->getName().str(), V->getAlign().valueOrOne()});
    SymbolKind Kind = Decl ? refKindOf(GV) : kindOf(GV);
    if (!Decl && Kind == SymbolKind::Other)
      continue;
    ModuleFacts::Symbol S;
    S.Name = GV.getName().str();
    S.Kind = Kind;
    S.ValueType = Alone ? nullptr : GV.getValueType();
    S.Shared = isa<GlobalVariable>(GV) &&
               GV.getAddressSpace() == NVPTXAS::ADDRESS_SPACE_SHARED;
    S.HasSourceTypes = Kind != SymbolKind::Other && hasSourceTypes(GV);
    if (Alone) {
      if (Kind != SymbolKind::Other)
        S.Sig = signatureOf(GV, F.Language);
    } else {
      S.GV = &GV;
    }
    (Decl ? F.Decls : F.Defs).push_back(std::move(S));
  }
  return F;
}

/// Every declaration of a function or variable must agree with the
/// definition it resolves to, in the ways that change the code the call or
/// access compiles to: parameter count, integer or float, width, pointer or
/// value, return type, variadic or not; and, where a source type on each
/// side says (debug info, a C++ mangled name), the sign of an integer and a
/// pointer's pointee. Otherwise a Rust `fn(f32) -> f32` calling a CUDA
/// `float f(double)` links without a word and computes garbage. Runs once
/// per link, on the modules' facts as parsed, before anything is linked;
/// symbols in \p Allowed are not checked (docs/abi.md).
static Error checkSignatures(ArrayRef<ModuleFacts> Facts,
                             ArrayRef<StringRef> Origins,
                             const SymbolTable &Symtab,
                             ArrayRef<std::string> Allowed,
                             unsigned ErrorLimit) {
  TimeTraceScope Scope("Check signatures");
  struct Def {
    const ModuleFacts::Symbol *S;
    size_t Module;
  };
  StringMap<Def> Defs;
  for (auto [I, F] : enumerate(Facts))
    for (const ModuleFacts::Symbol &S : F.Defs)
      Defs.try_emplace(S.Name, Def{&S, I});
  StringSet<> Allow;
  for (const std::string &Name : Allowed)
    Allow.insert(Name);

  ErrorList Errors(ErrorLimit);
  for (auto [I, F] : enumerate(Facts))
    for (const ModuleFacts::Symbol &U : F.Decls) {
      auto It = Defs.find(U.Name);
      if (It == Defs.end() || Allow.contains(U.Name))
        continue;
      const ModuleFacts::Symbol &D = *It->second.S;
      const ModuleFacts &DefFacts = Facts[It->second.Module];
      // A mismatch of kinds is checkKinds'; a kernel's uncalled plain
      // declaration (clang's, for host launches) claims nothing.
      if (U.Kind != D.Kind)
        continue;
      if (U.Kind == SymbolKind::Variable && (U.Shared || D.Shared))
        continue; // unifySharedDeclarations' business
      // A kernel's record (applyKernelRecords) describes it best.
      const Signature *Recorded = nullptr;
      if (U.Kind == SymbolKind::Kernel) {
        auto S = Symtab.Symbols.find(D.Name);
        if (S != Symtab.Symbols.end() && !S->second.RecordOrigin.empty())
          Recorded = &*S->second.KernelSig;
      }
      // The common case costs one comparison: equal IR types (uniqued in
      // the one LLVMContext) agree unless source types on a side (debug
      // info, a kernel's record) can say more than the IR. Facts of
      // modules parsed alone, each in its own context, compare signatures.
      if (U.ValueType && U.ValueType == D.ValueType && !U.HasSourceTypes &&
          !D.HasSourceTypes && !Recorded)
        continue;
      Signature Use = F.signature(U);
      Signature DefSig = Recorded ? *Recorded : DefFacts.signature(D);
      std::string Why = findMismatch(Use, DefSig);
      if (Why.empty())
        continue;
      auto Where = [](StringRef Origin, SourceLanguage L) {
        StringRef Name = languageName(L);
        return Name.empty() ? Origin.str() : (Origin + " (" + Name + ")").str();
      };
      StringRef Link = U.Name;
      Errors.add(createStringError(
          "ABI mismatch for %s: %s\n>>> declared as %s by %s\n>>> defined as "
          "%s in %s\n>>> to link anyway: --allow-abi-mismatch=%s (fatlink "
          "cc, llbc: --fatlink-allow-abi-mismatch=%s)",
          describeSymbol(Link).c_str(), Why.c_str(), Use.str().c_str(),
          Where(Origins[I], Use.Language).c_str(), DefSig.str().c_str(),
          Where(Origins[It->second.Module], DefSig.Language).c_str(),
          Link.str().c_str(), Link.str().c_str()));
    }
  return Errors.take();
}

/// PTX identifiers: a letter then letters, digits, `_` and `$`; or `_`,
/// `$` or `%` then at least one of those (PTX ISA, "Identifiers").
static bool isPTXIdentifier(StringRef Name) {
  auto Follows = [](char C) { return isAlnum(C) || C == '_' || C == '$'; };
  if (Name.empty() || !all_of(Name.drop_front(), Follows))
    return false;
  if (isAlpha(Name.front()))
    return true;
  return (Name.front() == '_' || Name.front() == '$' || Name.front() == '%') &&
         Name.size() > 1;
}

/// The program's visible symbols (kernels, exports, host-visible globals)
/// keep their names in the PTX, where the runtime and the driver look them
/// up, so each must be a PTX identifier (`#[export_name = "scale-by-two"]`
/// is not); internal ones the NVPTX backend renames itself.
static Error checkPTXNames(const Module &M, const SymbolTable &Symtab,
                           unsigned ErrorLimit) {
  ErrorList Errors(ErrorLimit);
  for (const GlobalValue &GV : M.global_values()) {
    if (GV.hasLocalLinkage() || isLLVMReserved(GV) ||
        isPTXIdentifier(GV.getName()))
      continue;
    std::string Msg = std::string(kindName(kindOf(GV))) + " '" +
                      GV.getName().str() +
                      "' is not a valid PTX name: PTX names are letters, "
                      "digits, '_' and '$', and start with a letter, '_' or "
                      "'$'; rename it (Rust: #[export_name = \"...\"], C++: "
                      "extern \"C\" names)";
    auto It = Symtab.Symbols.find(GV.getName().str());
    if (It != Symtab.Symbols.end() && !It->second.DefOrigin.empty())
      Msg += "\n>>> defined in " + It->second.DefOrigin.str();
    Errors.add(createStringError(Msg));
  }
  return Errors.take();
}

/// Functions the PTX toolchain itself provides to every program, and the
/// reflection query that is folded away before code generation.
static bool isProvidedByPTX(StringRef Name) {
  return Name == "vprintf" || Name == "malloc" || Name == "free" ||
         Name == "__assertfail" || Name == "__nvvm_reflect";
}

/// Declarations that are not undefined symbols:
///  - weak references (`extern_weak`), which resolve to null when nothing
///    defines them (resolveWeakReferences); clang declares its builtin variables
///    (threadIdx, blockIdx, blockDim, gridDim, warpSize) so, and at -O0 or
///    wherever their address survives, they reach the link;
///  - variables in the shared address space: `extern __shared__ T a[];` is
///    the block's dynamic shared memory, which the launch sizes; the NVPTX
///    backend writes `.extern .shared` and ptxas accepts it.
static bool mayStayUndefined(const GlobalValue &GV) {
  if (GV.hasExternalWeakLinkage())
    return true;
  return isa<GlobalVariable>(GV) &&
         GV.getAddressSpace() == NVPTXAS::ADDRESS_SPACE_SHARED;
}

/// Weak references that nothing defined resolve to null, as in every ELF
/// linker: `if (&f) f();` then folds away. PTX has no weak undefined
/// symbols (ptxas rejects an unresolved `.extern .func`), so they cannot be
/// left to it. What a relocatable cubin defines is nvlink's to resolve.
static void resolveWeakReferences(Module &M,
                                  const StringSet<> &ProvidedByObjects) {
  std::vector<GlobalValue *> Unresolved;
  for (GlobalValue &GV : M.global_values())
    if (GV.hasExternalWeakLinkage() && !ProvidedByObjects.contains(GV.getName()))
      Unresolved.push_back(&GV);
  for (GlobalValue *GV : Unresolved) {
    GV->replaceAllUsesWith(Constant::getNullValue(GV->getType()));
    GV->eraseFromParent();
  }
}

/// Whether the inputs hold nvcc LTO-IR, whose definitions fatlink cannot
/// list in full (DeviceObject::IsLTOIR): then nvJitLink, which links it,
/// reports what is undefined.
static bool hasLtoIr(const InputSet &Inputs) {
  return any_of(Inputs.Objects,
                [](const DeviceObject &O) { return O.IsLTOIR; });
}

static Error checkUndefined(const Module &M, const SymbolTable &Symtab,
                            const StringSet<> &ProvidedByObjects,
                            LibraryResolver &Libs, unsigned ErrorLimit) {
  ErrorList Errors(ErrorLimit);
  for (const GlobalValue &GV : M.global_values()) {
    if (!GV.isDeclarationForLinker() || isLLVMReserved(GV) ||
        isProvidedByPTX(GV.getName()) || GV.use_empty() ||
        mayStayUndefined(GV) || ProvidedByObjects.contains(GV.getName()))
      continue;
    std::string Msg = "undefined device symbol: " + describeSymbol(GV.getName());
    auto It = Symtab.Symbols.find(GV.getName().str());
    if (It != Symtab.Symbols.end())
      for (StringRef Origin : It->second.Refs)
        Msg += "\n>>> referenced by " + Origin.str();
    if (GV.getName().starts_with("__nv_"))
      Msg += "\n>>> (not in libdevice either: check the function name)";
    Msg += Libs.notesFor(GV.getName());
    Errors.add(createStringError(Msg));
  }
  return Errors.take();
}

/// What relocatable code references must be defined by other relocatable
/// code, a device library or the linked bitcode (\p DefinedByBitcode, after
/// internalization, which keeps what relocatable code references), or
/// nvlink would fail later with less to say. The device runtime's symbols are
/// LibraryResolver::resolveObjects' to report.
static Error checkObjectsUndefined(function_ref<bool(StringRef)> DefinedByBitcode,
                                   const InputSet &Inputs,
                                   const StringSet<> &ProvidedByObjects,
                                   LibraryResolver &Libs, unsigned ErrorLimit) {
  ErrorList Errors(ErrorLimit);
  std::map<std::string, std::vector<StringRef>> Refs; // ordered: stable report
  std::set<unsigned> Units;
  for (const DeviceObject &O : Inputs.Objects) {
    if (!Units.insert(O.Source).second)
      continue;
    for (const std::string &Name : O.Undefined) {
      if (DefinedByBitcode(Name) ||
          ProvidedByObjects.contains(Name) || isDeviceRuntimeSymbol(Name) ||
          isProvidedByPTX(Name))
        continue;
      Refs[Name].push_back(O.Container);
    }
  }
  for (const auto &[Name, Origins] : Refs) {
    std::string Msg = "undefined device symbol: " + describeSymbol(Name);
    for (StringRef Origin : Origins)
      Msg += "\n>>> referenced by " + Origin.str();
    Msg += Libs.notesFor(Name);
    Errors.add(createStringError(Msg));
  }
  return Errors.take();
}

//===----------------------------------------------------------------------===//
// __nvvm_reflect
//===----------------------------------------------------------------------===//

/// Calls of `__nvvm_reflect("KEY")` and `llvm.nvvm.reflect`, with their key.
static std::vector<std::pair<CallInst *, std::string>>
findReflectCalls(Module &M) {
  std::vector<std::pair<CallInst *, std::string>> Calls;
  for (StringRef FnName : {"__nvvm_reflect", "llvm.nvvm.reflect"}) {
    Function *F = M.getFunction(FnName);
    if (!F)
      continue;
    for (User *U : F->users()) {
      auto *CI = dyn_cast<CallInst>(U);
      if (!CI || CI->getCalledFunction() != F || CI->arg_size() != 1)
        continue;
      StringRef Key;
      if (!getConstantStringInfo(CI->getArgOperand(0)->stripPointerCasts(),
                                 Key))
        continue;
      Calls.push_back({CI, Key.rtrim('\0').str()});
    }
  }
  return Calls;
}

/// Replaces reflect calls whose key Answer knows by the answer.
static void foldReflect(Module &M,
                        function_ref<std::optional<int>(StringRef)> Answer) {
  for (auto &[CI, Key] : findReflectCalls(M)) {
    std::optional<int> Value = Answer(Key);
    if (!Value)
      continue;
    CI->replaceAllUsesWith(ConstantInt::get(CI->getType(), *Value));
    CI->eraseFromParent();
  }
}

static int archReflectValue(const Target &T) { return int(T.Sm) * 10; }

/// What a program can observe of `__CUDA_ARCH` for a target: the outcome of
/// each comparison against a constant, or the raw value where it is used
/// otherwise. Targets with equal signatures optimize to the same module.
static std::vector<int> archSignature(Module &M, const Target &T) {
  std::vector<int> Sig;
  int Value = archReflectValue(T);
  for (auto &[CI, Key] : findReflectCalls(M)) {
    if (Key != "__CUDA_ARCH")
      continue;
    for (User *U : CI->users()) {
      auto *Cmp = dyn_cast<ICmpInst>(U);
      auto *RHS = Cmp ? dyn_cast<ConstantInt>(Cmp->getOperand(1)) : nullptr;
      if (Cmp && RHS && Cmp->getOperand(0) == CI)
        Sig.push_back(ICmpInst::compare(
            APInt(RHS->getBitWidth(), Value, /*isSigned=*/true),
            RHS->getValue(), Cmp->getPredicate()));
      else
        Sig.push_back(Value);
    }
  }
  return Sig;
}

//===----------------------------------------------------------------------===//
// Optimization
//===----------------------------------------------------------------------===//

/// Gives every function the target's cpu and PTX version, so that the
/// inliner sees compatible attributes and codegen the right subtarget.
void setTargetAttributes(Module &M, const Target &T) {
  std::string Features = "+ptx" + std::to_string(T.PtxVersion);
  for (Function &F : M) {
    if (F.isDeclaration())
      continue;
    F.addFnAttr("target-cpu", T.Cpu);
    F.addFnAttr("target-features", Features);
  }
}

static Error optimize(Module &M, const Target &T, unsigned OptLevel) {
  TimeTraceScope Scope("Optimize", T.Name);
  // ptxas refuses to optimize code with DWARF (choosePtxVersions).
  if (OptLevel > 0)
    StripDebugInfo(M);
  Expected<std::unique_ptr<TargetMachine>> TMOrErr =
      createTargetMachine(T, OptLevel);
  if (!TMOrErr)
    return TMOrErr.takeError();

  LoopAnalysisManager LAM;
  FunctionAnalysisManager FAM;
  CGSCCAnalysisManager CGAM;
  ModuleAnalysisManager MAM;
  PassBuilder PB(TMOrErr->get());
  PB.registerModuleAnalyses(MAM);
  PB.registerCGSCCAnalyses(CGAM);
  PB.registerFunctionAnalyses(FAM);
  PB.registerLoopAnalyses(LAM);
  PB.crossRegisterProxies(LAM, FAM, CGAM, MAM);

  ModulePassManager MPM;
  if (OptLevel == 0) {
    MPM.addPass(AlwaysInlinerPass());
    MPM.addPass(GlobalDCEPass());
  } else {
    OptimizationLevel Levels[] = {OptimizationLevel::O1, OptimizationLevel::O2,
                                  OptimizationLevel::O3};
    MPM = PB.buildPerModuleDefaultPipeline(Levels[OptLevel - 1]);
  }
  MPM.run(M, MAM);
  return Error::success();
}

/// Declarations of the same shared-memory variable in several inputs
/// (`extern __shared__ float a[];` in one file, `extern __shared__ float4
/// a[];` in another) are one symbol, as in the NVPTX backend and nvcc: one
/// `.extern .shared` with the largest alignment any input asks for. The IR
/// linker keeps the first declaration's alignment, so every declaration
/// gets the largest (sharedAlignments, from every input's facts) before
/// the link.
static StringMap<Align> sharedAlignments(ArrayRef<ModuleFacts> Facts) {
  StringMap<Align> Largest;
  for (const ModuleFacts &F : Facts)
    for (const auto &[Name, A] : F.SharedDecls) {
      Align &L = Largest.try_emplace(Name, Align(1)).first->second;
      L = std::max(L, A);
    }
  return Largest;
}

static void unifySharedDeclarations(Module &M, const StringMap<Align> &Largest) {
  for (GlobalVariable &V : M.globals())
    if (V.isDeclaration() && !V.hasLocalLinkage() &&
        V.getAddressSpace() == NVPTXAS::ADDRESS_SPACE_SHARED)
      if (auto It = Largest.find(V.getName()); It != Largest.end())
        V.setAlignment(It->second);
}

/// The newest PTX ISA (x10) a module was compiled for: the largest `+ptxNN`
/// in its functions' target features (clang writes the CUDA version's ISA,
/// rustc nothing unless asked); 0 when none says.
static unsigned requiredPtxVersion(const Module &M) {
  unsigned Max = 0;
  for (const Function &F : M) {
    if (F.isDeclaration())
      continue;
    SmallVector<StringRef, 8> Features;
    F.getFnAttribute("target-features").getValueAsString().split(Features, ',');
    for (StringRef Feature : Features) {
      unsigned V;
      if (Feature.consume_front("+ptx") && !Feature.getAsInteger(10, V))
        Max = std::max(Max, V);
    }
  }
  return Max;
}

//===----------------------------------------------------------------------===//
// The link
//===----------------------------------------------------------------------===//

namespace {

struct GroupFacts;

/// One link: the images chosen for a set of targets.
struct LinkGroup {
  std::vector<size_t> Images;  // indices into InputSet::Images
  std::vector<size_t> Targets; // indices into the target list
};

/// What several partitions of a partition-first link take from one image
/// (the helpers each clones), with what that references declared, as
/// bitcode. A partition that takes nothing else from the image reads the
/// slice instead: reading an image lazily costs its module-level records
/// (every global it declares) whatever little is taken, so each image is
/// read once for all such partitions rather than once per partition.
struct ImageSlice {
  std::string Bitcode;
  /// For each of the image's globals, its index among the slice's; not
  /// there: UINT32_MAX.
  std::vector<uint32_t> Index;
  /// The slice's globals: what keepOnly reads (Definition, Reserved).
  ImageGraph Graph;
};

class DeviceLinker {
public:
  DeviceLinker(const InputSet &Inputs, ArrayRef<Target> Targets,
               const LinkOptions &Opts)
      : Inputs(Inputs), Targets(Targets.begin(), Targets.end()), Opts(Opts) {}

  Expected<std::vector<LinkGroup>> planGroups();
  Error linkGroup(const LinkGroup &G, LinkedProgram &Out, bool First);
  LibraryResolver &libraries() { return Libraries; }

  /// What each image contributed (noteUse), by image index.
  std::map<size_t, InputUse> Uses;

  /// Images whose debug info parse() dropped (invalid, or of another
  /// version), by image index: the partitions, which read images anew, drop
  /// it too.
  std::set<size_t> DroppedDebugInfo;

private:
  std::vector<size_t> equivalentImages(
      const std::map<unsigned, std::vector<size_t>> &BySource);
  Expected<std::unique_ptr<Module>>
  parse(LLVMContext &Ctx, const DeviceImage &Image, LinkedProgram &Out);
  Error checkCompiledFor(const Module &M, const DeviceImage &Image,
                         const LinkGroup &G);
  Error choosePtxVersions(ArrayRef<ModuleFacts> Facts, const LinkGroup &G,
                          LinkedProgram &Out);
  void noteUse(const Module &M, const DeviceImage &Image, size_t ImageIndex,
               const LinkGroup &G, LinkedProgram &Out);

  Expected<std::unique_ptr<Module>>
  linkInOrder(std::vector<std::unique_ptr<Module>> &Modules,
              const LinkGroup &G, LinkedProgram &Out);
  /// Links what M calls of libdevice into M (by L, errors from D) and
  /// adds the functions it linked to Functions.
  Error linkLibdevice(Module &M, Linker &L, DiagnosticCollector &D,
                      std::vector<std::string> &Functions);
  void internalize(Module &M);
  StringSet<> exportedNames() const;
  Error saveTemp(const Module &M, StringRef Stage);
  /// Moves P's bitcode to a file named after Name (LinkOptions::Spill),
  /// where the driver gives one.
  Error spill(CodegenPartition &P, const Twine &Name) const;
  /// The partitions of a program of Kernels kernels and Instructions
  /// instructions before O3: Opts.Partitions, or with 0 defaultPartitions'
  /// count, which -v reports.
  unsigned partitionCount(size_t Kernels, size_t Instructions) const;
  Expected<bool> optimizePartitions(std::unique_ptr<Module> &M,
                                    const Target &Rep, unsigned Parts,
                                    const StringMap<StringRef> &Units,
                                    OptimizedModule &OM);
  Error optimizeSplit(std::vector<CodegenPartition> Split, const Target &Rep,
                      bool ForTarget, OptimizedModule &OM);

  /// Parses G's images into Ctx, checks each and all together (symbols,
  /// kinds, records, signatures, PTX versions), filling F; the modules go
  /// to Keep, or with none (a partition-first link) are each parsed in a
  /// context of their own, summarized and freed.
  Error readGroup(const LinkGroup &G, LLVMContext &Ctx, GroupFacts &F,
                  LinkedProgram &Out, std::vector<std::unique_ptr<Module>> *Keep);
  /// Whether the images may be linked in partitions (LinkOptions::PartitionFirst).
  bool mayLinkInPartitions() const;
  /// Links G partition by partition from the images' summaries (F), never
  /// holding the whole program: each partition is linked from the images
  /// that define its members, checked, and optimized. False, having done
  /// nothing, where the plan has one partition or an image holds what the
  /// summaries do not model: then the whole link runs. Once the partitions
  /// are linked and checked, F is emptied, before they are optimized.
  Expected<bool> linkPartitionFirst(const LinkGroup &G, GroupFacts &F,
                                 LinkedProgram &Out, bool First);
  /// Turns every definition of M (lazily read; its summary G) not in Keep
  /// into a declaration; with LinkOnce, the linkonce definitions kept are
  /// made weak for the link, and listed there to be made linkonce again.
  Error keepOnly(
      Module &M, const std::vector<bool> &Keep, const ImageGraph &G,
      std::vector<std::pair<std::string, GlobalValue::LinkageTypes>> *LinkOnce);
  /// The slices of G's images that Keep names (linkPartitionFirst), made in
  /// parallel on Pool.
  Expected<std::map<uint32_t, ImageSlice>>
  sliceImages(const LinkGroup &G, const GroupFacts &F,
              const std::map<uint32_t, std::vector<bool>> &Keep,
              const StringMap<uint32_t> &External, ThreadPoolInterface &Pool);
  const Target &representative(ArrayRef<size_t> TIs) const;

  /// The arches each translation unit (DeviceImage::Source) was compiled
  /// for, by sm; filled once, on noteUse's first call.
  std::map<unsigned, std::set<std::pair<unsigned, std::string>>> UnitArches;

  const InputSet &Inputs;
  /// The targets, their PTX versions raised to what their inputs need
  /// (choosePtxVersions) before their modules are optimized.
  std::vector<Target> Targets;
  const LinkOptions &Opts;
  DiagnosticCollector Diags;
  /// Device libraries (CUDA's device runtime), read on first need.
  LibraryResolver Libraries{Inputs, Opts};
};

} // namespace

/// A memo key: what is memoized (Fact, which names LLVM's version and what
/// else the value depends on) and the BLAKE3 hash of the bytes it is
/// computed from.
static std::string memoKey(const Twine &Fact, StringRef Bytes) {
  BLAKE3Result<32> H = BLAKE3::hash(arrayRefFromStringRef(Bytes));
  return (Fact + "-" + toHex(ArrayRef<uint8_t>(H), /*LowerCase=*/true)).str();
}

void takeOverDebugInfoChecks() {
  static std::once_flag Once;
  std::call_once(Once, [] {
    // A missing option (another LLVM) leaves the reader's checks on: the
    // module is then verified twice.
    auto &&Options = cl::getRegisteredOptions();
    if (cl::Option *O = Options.lookup("disable-auto-upgrade-debug-info"))
      (void)O->addOccurrence(0, O->ArgStr, "true");
  });
}

/// Keeps \p Ctx alive for the rest of the run. LLVM 22's bitcode reader,
/// failing on some corrupt input ("Invalid type for value"), leaves the
/// context holding an object whose destruction frees a pointer into the
/// middle of an allocation (AddressSanitizer: bad-free in
/// ~LLVMContextImpl; found by fuzz/link_fuzzer, the input not kept: array
/// data under another type, which intake now refuses). Such a context is never
/// destroyed: it stays reachable from here, so leak checkers do not report
/// it either. Only images that fail to parse get here, and the link then
/// fails on them.
static void keepForever(std::unique_ptr<LLVMContext> Ctx) {
  static std::mutex Mu;
  static auto *Kept = new std::vector<std::unique_ptr<LLVMContext>>;
  std::lock_guard<std::mutex> Lock(Mu);
  Kept->push_back(std::move(Ctx));
}

/// For each image, the image that stands for it: itself, or the first image
/// of its source whose arch's images are, all together, the same program
/// (equal arch-neutral digests, in the same order). Computed only for
/// sources with images for several arches; the digests run in parallel.
std::vector<size_t> DeviceLinker::equivalentImages(
    const std::map<unsigned, std::vector<size_t>> &BySource) {
  std::vector<size_t> Rep(Inputs.Images.size());
  for (size_t I = 0; I < Rep.size(); ++I)
    Rep[I] = I;

  std::vector<size_t> ToHash;
  for (const auto &[Source, Alternatives] : BySource) {
    StringRef Arch0 = Inputs.Images[Alternatives.front()].Arch;
    if (Arch0.empty())
      continue;
    if (any_of(Alternatives,
               [&](size_t I) { return Inputs.Images[I].Arch != Arch0; }))
      append_range(ToHash, Alternatives);
  }
  if (ToHash.empty())
    return Rep;

  TimeTraceScope Scope("Compare per-arch images");
  std::vector<std::optional<BLAKE3Result<32>>> Digest(Inputs.Images.size());
  // Memoized in one table for the link's images (named by their origins,
  // so a re-link of the same program finds it), whose entries pair a hash
  // of an image's bytes with its digest: a re-link after an edit walks only
  // the edited images, and a cold link writes one file, not one per image.
  // Another program linked from the same paths (another build of the
  // same files, sharing the cache) finds its entries kept beside this
  // one's, up to as many again.
  std::string TableKey, OldTable;
  std::map<BLAKE3Result<32>, BLAKE3Result<32>> Known;
  std::vector<BLAKE3Result<32>> Bytes(Inputs.Images.size());
  if (Opts.MemoLookup) {
    BLAKE3 H;
    for (size_t I : ToHash) {
      H.update(Inputs.Images[I].Origin);
      H.update(StringRef("\0", 1));
    }
    BLAKE3Result<32> Names = H.final();
    TableKey = "arch-neutral-digests-4-" LLVM_VERSION_STRING "-" +
               toHex(ArrayRef<uint8_t>(Names), /*LowerCase=*/true);
    if (std::optional<std::string> V = Opts.MemoLookup(TableKey);
        V && V->size() % 64 == 0) {
      OldTable = std::move(*V);
      for (size_t At = 0; At < OldTable.size(); At += 64) {
        BLAKE3Result<32> K, D;
        std::copy_n(OldTable.data() + At, 32, K.begin());
        std::copy_n(OldTable.data() + At + 32, 32, D.begin());
        Known.emplace(K, D);
      }
    }
  }
  std::atomic<bool> Missed = false;
  auto Compute = [&](size_t I) {
    MemoryBufferRef MB = Inputs.Images[I].Bitcode;
    if (Opts.MemoLookup) {
      Bytes[I] = BLAKE3::hash(arrayRefFromStringRef(MB.getBuffer()));
      if (auto It = Known.find(Bytes[I]); It != Known.end()) {
        Digest[I] = It->second;
        return;
      }
    }
    Digest[I] = archNeutralDigest(MB);
    Missed = true;
  };
  {
    DefaultThreadPool Pool(threadStrategy(Opts.Jobs, Opts.UseJobserver));
    for (size_t I : ToHash)
      Pool.async([&, I] { Compute(I); });
    Pool.wait();
  }
  if (Opts.Verbose) {
    size_t Cached =
        count_if(ToHash, [&](size_t I) { return Known.count(Bytes[I]) != 0; });
    Opts.Verbose("per-arch images: " + std::to_string(ToHash.size()) +
                 " compared, " + std::to_string(Cached) +
                 " digests from the cache");
  }
  if (Missed && Opts.MemoStore && !TableKey.empty()) {
    std::string Table;
    std::set<BLAKE3Result<32>> Here;
    for (size_t I : ToHash)
      if (Digest[I] && Here.insert(Bytes[I]).second) {
        Table.append(Bytes[I].begin(), Bytes[I].end());
        Table.append(Digest[I]->begin(), Digest[I]->end());
      }
    // Then the entries this link did not use, most recent first, up to as
    // many as its images (a link where none has a digest keeps them all).
    size_t Limit = Here.size() + ToHash.size();
    for (size_t At = 0; At < OldTable.size() && Here.size() < Limit; At += 64) {
      BLAKE3Result<32> K;
      std::copy_n(OldTable.data() + At, 32, K.begin());
      if (Here.insert(K).second)
        Table.append(OldTable, At, 64);
    }
    Opts.MemoStore(TableKey, Table);
  }

  for (const auto &[Source, Alternatives] : BySource) {
    // The arches of this source in order of appearance, each with its
    // images' digests; an image that did not parse is never merged.
    std::vector<std::pair<std::string, std::vector<size_t>>> Arches;
    for (size_t I : Alternatives) {
      auto It = find_if(Arches, [&](const auto &A) {
        return A.first == Inputs.Images[I].Arch;
      });
      if (It == Arches.end())
        Arches.push_back({Inputs.Images[I].Arch, {I}});
      else
        It->second.push_back(I);
    }
    if (Arches.size() < 2)
      continue;
    auto Same = [&](const std::vector<size_t> &A, const std::vector<size_t> &B) {
      if (A.size() != B.size())
        return false;
      for (size_t K = 0; K < A.size(); ++K)
        if (!Digest[A[K]] || !Digest[B[K]] || *Digest[A[K]] != *Digest[B[K]])
          return false;
      return true;
    };
    for (size_t J = 1; J < Arches.size(); ++J)
      for (size_t K = 0; K < J; ++K)
        if (Same(Arches[K].second, Arches[J].second)) {
          for (size_t M = 0; M < Arches[J].second.size(); ++M)
            Rep[Arches[J].second[M]] = Rep[Arches[K].second[M]];
          break;
        }
  }
  return Rep;
}

/// Chooses, for each target, the images of each source: plain bitcode
/// always; of a source's per-arch images, those of the exact arch, else of
/// the newest arch not newer than the target (never an arch-specific `a`/`f`
/// build of another arch), each replaced by its equivalent image. Targets
/// that end up with the same images form one group.
Expected<std::vector<LinkGroup>> DeviceLinker::planGroups() {
  std::map<unsigned, std::vector<size_t>> BySource;
  for (auto [I, Image] : enumerate(Inputs.Images))
    BySource[Image.Source].push_back(I);
  std::vector<size_t> Rep = equivalentImages(BySource);

  ErrorList Errors(Opts.ErrorLimit);
  std::map<std::vector<size_t>, std::vector<size_t>> Groups;
  for (auto [TI, T] : enumerate(Targets)) {
    std::vector<size_t> Chosen;
    for (const auto &[Source, Alternatives] : BySource) {
      const DeviceImage &First = Inputs.Images[Alternatives.front()];
      if (First.Arch.empty()) {
        append_range(Chosen, Alternatives);
        continue;
      }
      std::optional<size_t> Best;
      unsigned BestSm = 0;
      for (size_t I : Alternatives) {
        const DeviceImage &Image = Inputs.Images[I];
        if (Image.Arch == T.Cpu) {
          Best = I;
          break;
        }
        std::optional<ArchName> A = parseArchName(Image.Arch);
        if (!A || !A->Suffix.empty() || A->Sm > T.Sm || A->Sm < BestSm)
          continue;
        Best = I;
        BestSm = A->Sm;
      }
      if (!Best) {
        std::vector<std::string> Arches;
        for (size_t I : Alternatives)
          Arches.push_back(Inputs.Images[I].Arch);
        std::string Origin = First.Origin;
        Origin = Origin.substr(0, Origin.rfind("(.llvm.offloading"));
        Errors.add(createStringError(
            "%s: device code was compiled for %s only, which cannot run on "
            "target %s: recompile it with --offload-arch=%s as well, or drop "
            "%s from the targets",
            Origin.c_str(), join(Arches, ", ").c_str(), T.Name.c_str(),
            T.Cpu.c_str(), T.Name.c_str()));
        continue;
      }
      // An object may hold several translation units per arch (fatlink
      // embed, ld -r): take every image of the chosen arch.
      for (size_t I : Alternatives)
        if (Inputs.Images[I].Arch == Inputs.Images[*Best].Arch)
          Chosen.push_back(Rep[I]);
    }
    Groups[Chosen].push_back(TI);
  }
  if (Error E = Errors.take())
    return std::move(E);

  std::vector<LinkGroup> Result;
  for (auto &[Images, TargetIndices] : Groups)
    Result.push_back({Images, TargetIndices});
  // Deterministic and natural: the group of the first target first.
  llvm::sort(Result, [](const LinkGroup &A, const LinkGroup &B) {
    return A.Targets.front() < B.Targets.front();
  });
  return Result;
}

/// What LLVM's passes take as given in metadata and its verifier does not
/// check. Found by editing each operand of each metadata record of a CUDA
/// module built with -g, one at a time (docs/reliability.md): these
/// verified, then crashed LICM, StripDebugInfo, NVVMReflect or the NVPTX
/// printer. Empty when the module is clear of them.
static std::string uncheckedMetadataProblem(const Module &M) {
  // Module flags that LLVM's Module getters (and NVVMReflect) cast to an
  // integer constant, and one they cast to a string, without a check.
  static const char *const IntegerFlags[] = {"CodeView",
                                             "Code Model",
                                             "Dwarf Version",
                                             "DWARF64",
                                             "frame-pointer",
                                             "Large Data Threshold",
                                             "NumRegisterParameters",
                                             "nvvm-reflect-ftz",
                                             "PIC Level",
                                             "PIE Level",
                                             "RtLibUseGOT",
                                             "SemanticInterposition",
                                             "direct-access-external-data",
                                             "uwtable"};
  for (const char *Key : IntegerFlags)
    if (const Metadata *Value = M.getModuleFlag(Key);
        Value && !mdconst::dyn_extract<ConstantInt>(Value))
      return std::string("module flag '") + Key +
             "' is not an integer constant (LLVM reads it as one)";
  if (const Metadata *Value = M.getModuleFlag("darwin.target_variant.triple");
      Value && !isa<MDString>(Value))
    return "module flag 'darwin.target_variant.triple' is not a string "
           "(LLVM reads it as one)";
  // A loop's metadata (!llvm.loop): LLVM's loop utilities take every
  // operand after the first (the node itself) as there, and each option's
  // name and values too; the value of an option of theirs
  // (`!{!"llvm.loop.unroll.count", i32 4}`) they cast to an integer
  // constant, but for the options that name other metadata (follow-up
  // loops' options, access groups).
  for (const Function &F : M)
    for (const Instruction &I : instructions(F)) {
      const MDNode *Loop = I.getMetadata(LLVMContext::MD_loop);
      if (!Loop)
        continue;
      auto Problem = [&](const Twine &What) {
        return ("function '" + F.getName() + "': a loop's metadata holds " +
                What)
            .str();
      };
      for (const MDOperand &Op : drop_begin(Loop->operands())) {
        if (!Op)
          return Problem("a null operand");
        const auto *Option = dyn_cast<MDTuple>(Op.get());
        if (!Option || !Option->getNumOperands())
          continue;
        if (!Option->getOperand(0))
          return Problem("an option without a name");
        const auto *Name = dyn_cast<MDString>(Option->getOperand(0));
        for (const MDOperand &Value : drop_begin(Option->operands()))
          if (!Value)
            return Problem("option '" +
                           (Name ? Name->getString() : StringRef("?")) +
                           "' with a null value");
        if (!Name || !Name->getString().starts_with("llvm.loop.") ||
            Name->getString().contains("followup") ||
            Name->getString() == "llvm.loop.parallel_accesses" ||
            Option->getNumOperands() != 2)
          continue;
        if (!mdconst::dyn_extract<ConstantInt>(Option->getOperand(1)))
          return Problem("option '" + Name->getString() +
                         "' whose value is not an integer constant (LLVM "
                         "reads it as one)");
      }
    }
  return "";
}

namespace {
/// A stream that keeps the first line written to it, at most 300
/// characters: LLVM's verifier's message, without the IR it prints after
/// it (which, for corrupt metadata, can be memory read as a string).
class FirstLineStream : public raw_ostream {
public:
  FirstLineStream() { SetUnbuffered(); }
  const std::string &line() const { return Line; }

private:
  void write_impl(const char *Ptr, size_t Size) override {
    Pos += Size;
    for (size_t I = 0; I < Size && !Done; ++I) {
      if (Ptr[I] == '\n')
        Done = true;
      else if (Line.size() < 300)
        Line += Ptr[I];
    }
  }
  uint64_t current_pos() const override { return Pos; }

  std::string Line;
  bool Done = false;
  uint64_t Pos = 0;
};
} // namespace

Expected<std::unique_ptr<Module>> DeviceLinker::parse(LLVMContext &Ctx,
                                                      const DeviceImage &Image,
                                                      LinkedProgram &Out) {
  takeOverDebugInfoChecks();
  // Corrupt bitcode that passed the intake checks can still crash LLVM's
  // reader or verifier: that is this input's error, not the end of fatlink.
  std::unique_ptr<Module> M;
  std::string Invalid;       // the verifier's message for the module
  std::string InvalidDebug;  // ... for its debug info alone
  unsigned Version = 0;      // of its debug info
  bool DroppedOther = false; // debug info of another version, dropped
  if (Error E = runRecoverably(
          [&]() -> Error {
            Expected<std::unique_ptr<Module>> MOrErr =
                parseBitcodeFile(Image.Bitcode, Ctx);
            if (!MOrErr)
              return MOrErr.takeError();
            M = std::move(*MOrErr);
            // As LLVM's reader would (takeOverDebugInfoChecks): debug info
            // of another version is dropped unread; this version's is
            // verified, and dropped if invalid.
            Version = getDebugMetadataVersionFromModule(*M);
            if (Version != DEBUG_METADATA_VERSION)
              DroppedOther = StripDebugInfo(*M);
            FirstLineStream Message;
            bool BrokenDebugInfo = false;
            if (verifyModule(*M, &Message, &BrokenDebugInfo))
              Invalid =
                  Message.line().empty() ? "no reason given" : Message.line();
            else if (BrokenDebugInfo) {
              InvalidDebug = Message.line();
              StripDebugInfo(*M);
            }
            return Error::success();
          },
          "reading it"))
    return createStringError("%s: corrupt bitcode: %s", Image.Origin.c_str(),
                             toString(std::move(E)).c_str());
  if (Error E = Diags.takeError(Image.Origin))
    return std::move(E);
  if (!Invalid.empty())
    return createStringError("%s: invalid LLVM module: %s (LLVM's verifier)",
                             Image.Origin.c_str(), Invalid.c_str());
  if (std::string Problem = uncheckedMetadataProblem(*M); !Problem.empty())
    return createStringError("%s: corrupt bitcode: %s", Image.Origin.c_str(),
                             Problem.c_str());
  if (!InvalidDebug.empty() || DroppedOther) {
    // Said once per image, and only where the link keeps debug info (-O0).
    if (DroppedDebugInfo.insert(&Image - Inputs.Images.data()).second &&
        Opts.OptLevel == 0)
      Out.Warnings.push_back(
          DroppedOther
              ? Image.Origin + ": its debug info is of version " +
                    std::to_string(Version) + " (module flag 'Debug Info " +
                    "Version'), not LLVM " + LLVM_VERSION_STRING + "'s " +
                    std::to_string(DEBUG_METADATA_VERSION) +
                    ": linked without it"
              : Image.Origin + ": its debug info is invalid (" + InvalidDebug +
                    ", LLVM's verifier): linked without it");
  }
  return std::move(M);
}

/// The arch an image was compiled for: its OffloadBinary's, else the newest
/// "target-cpu" of its functions (plain bitcode carries it there).
static std::optional<ArchName> compiledFor(const Module &M,
                                           const DeviceImage &Image) {
  if (!Image.Arch.empty())
    return parseArchName(Image.Arch);
  std::optional<ArchName> Max;
  for (const Function &F : M) {
    if (F.isDeclaration())
      continue;
    std::optional<ArchName> A =
        parseArchName(F.getFnAttribute("target-cpu").getValueAsString());
    if (A && (!Max || A->Sm > Max->Sm))
      Max = A;
  }
  return Max;
}

/// A kernel that takes arguments and ignores them: its body is a bare
/// `ret void`. (A kernel without parameters may be empty by design, as
/// CUB's EmptyKernel, which programs launch to probe the device.)
static bool isEmptiedKernel(const Function &F) {
  return !F.isDeclaration() && F.getCallingConv() == CallingConv::PTX_Kernel &&
         !F.arg_empty() && F.size() == 1 && F.front().size() == 1 &&
         isa<ReturnInst>(F.front().front());
}

/// Records which targets link an image and, for a kernel that is empty in
/// an image compiled for an older arch than a target it serves (when its
/// translation unit has no image of that target's own arch), a warning:
/// code under `#if __CUDA_ARCH__ >= NNN` was left out when the image was
/// compiled, and that target gets an empty kernel without a word otherwise.
void DeviceLinker::noteUse(const Module &M, const DeviceImage &Image,
                           size_t ImageIndex, const LinkGroup &G,
                           LinkedProgram &Out) {
  std::optional<ArchName> Arch = compiledFor(M, Image);
  // The arches the image's translation unit was compiled for: a target
  // served by another arch's image (planGroups' choice, or one found equal
  // to its own) was compiled for all the same.
  if (UnitArches.empty())
    for (const DeviceImage &Other : Inputs.Images)
      if (!Other.Arch.empty())
        if (std::optional<ArchName> A = parseArchName(Other.Arch))
          UnitArches[Other.Source].insert({A->Sm, Other.Arch});
  const std::set<std::pair<unsigned, std::string>> &Listed =
      UnitArches[Image.Source]; // by sm
  InputUse &Use = Uses[ImageIndex];
  Use.Origin = Image.Origin;
  Use.CompiledFor = Arch ? Arch->Cpu : "";
  if (Listed.size() > 1) {
    Use.CompiledFor.clear();
    for (const auto &[Sm, Name] : Listed)
      Use.CompiledFor += (Use.CompiledFor.empty() ? "" : ", ") + Name;
  }
  std::vector<std::string> Newer;
  for (size_t TI : G.Targets) {
    Use.Targets.push_back(Targets[TI].Name);
    if (Arch && Targets[TI].Sm > Arch->Sm &&
        none_of(Listed, [&](const auto &L) { return L.second == Targets[TI].Cpu; }))
      Newer.push_back(Targets[TI].Name);
  }
  if (Newer.empty())
    return;
  for (const Function &F : M)
    if (isEmptiedKernel(F))
      Out.Warnings.push_back(
          (Image.Origin + ": kernel " + F.getName() + " is empty for " +
           join(Newer, ", ") + ": the input was compiled for " + Arch->Cpu +
           ", so code under `#if __CUDA_ARCH__ >= ...` was left out of it; " +
           "compile it for those targets too (clang --offload-arch=" +
           Arch->Cpu + "," + join(Newer, ",") + ")")
              .str());
}

/// Plain bitcode carries the processor it was compiled for in each
/// function's "target-cpu". Code built for a newer GPU than a target may use
/// instructions that GPU lacks, so that is an error, as with nvcc.
Error DeviceLinker::checkCompiledFor(const Module &M, const DeviceImage &Image,
                                     const LinkGroup &G) {
  if (!Image.Arch.empty())
    return Error::success(); // chosen by planGroups
  std::optional<ArchName> Arch = compiledFor(M, Image);
  unsigned MaxSm = Arch ? Arch->Sm : 0;
  std::string MaxCpu = Arch ? Arch->Cpu : "";
  for (size_t TI : G.Targets)
    if (MaxSm > Targets[TI].Sm)
      return createStringError(
          "%s: compiled for %s, which is newer than target %s: compile it "
          "for the oldest target (rustc -C target-cpu=%s, clang "
          "--offload-arch=%s) or drop %s from the targets",
          Image.Origin.c_str(), MaxCpu.c_str(), Targets[TI].Name.c_str(),
          Targets[TI].Cpu.c_str(), Targets[TI].Cpu.c_str(),
          Targets[TI].Name.c_str());
  return Error::success();
}

/// Raises each target's PTX ISA version to the newest its inputs were
/// compiled for, so that their inline PTX assembles (CCCL's `bmsk`, under
/// NV_PROVIDES_SM_70, needs PTX 7.6; sm_75's own minimum is 6.3). An input
/// that needs more than ptxas accepts is an error now, naming it, rather
/// than a ptxas failure after all the optimization work. With
/// --ptx-version the user's choice stands.
Error DeviceLinker::choosePtxVersions(ArrayRef<ModuleFacts> Facts,
                                      const LinkGroup &G, LinkedProgram &Out) {
  unsigned Required = 0;
  size_t By = 0;
  for (size_t I = 0; I < Facts.size(); ++I)
    if (unsigned V = Facts[I].PtxVersion; V > Required) {
      Required = V;
      By = I;
    }
  // Debug info: ptxas optimizes no code with DWARF ("Optimized debugging
  // not supported"), so above -O0 optimize() drops it, as nvcc without -G
  // does; at -O0 it stays for cuda-gdb, and the DWARF sections need PTX ISA
  // 7.0 or 7.5 (dwarfPtxVersion; sm_75's own minimum is 6.3).
  auto Dwarf =
      max_element(Facts, [](const ModuleFacts &A, const ModuleFacts &B) {
        return A.DwarfPtxVersion < B.DwarfPtxVersion;
      });
  if (Dwarf != Facts.end() && !Dwarf->DwarfPtxVersion)
    Dwarf = Facts.end();
  if (Dwarf != Facts.end() && Opts.OptLevel > 0 && Opts.Verbose)
    Opts.Verbose("debug info of " +
                 Inputs.Images[G.Images[Dwarf - Facts.begin()]].Origin +
                 " and any other input dropped: ptxas cannot optimize code "
                 "with DWARF; link at -O0 to keep it for device debugging");
  if (Dwarf != Facts.end() && Opts.OptLevel == 0 &&
      Required < Dwarf->DwarfPtxVersion) {
    Required = Dwarf->DwarfPtxVersion;
    By = Dwarf - Facts.begin();
  }
  if (Opts.KeepPtxVersion || Required == 0)
    return Error::success();
  if (Opts.MaxPtxVersion && Required > Opts.MaxPtxVersion)
    return createStringError(
        "%s: compiled for PTX ISA %s (+ptx%u), but %s accepts at most %s: "
        "use a newer CUDA toolkit (--cuda-path), compile it for an older PTX "
        "ISA, or choose one with --ptx-version",
        Inputs.Images[G.Images[By]].Origin.c_str(),
        ptxVersionString(Required).c_str(), Required,
        Opts.MaxPtxVersionBy.c_str(),
        ptxVersionString(Opts.MaxPtxVersion).c_str());
  for (size_t TI : G.Targets) {
    Targets[TI].PtxVersion = std::max(Targets[TI].PtxVersion, Required);
    Out.PtxVersions[TI] = Targets[TI].PtxVersion;
  }
  return Error::success();
}

/// Links Modules (one per image of G, in G's order) into one, and then
/// libdevice (linkLibdevice). The first module is the destination (as
/// llvm-link's), so a single input, such as an optimized module given back
/// with --codegen-only, keeps its order and codegen gives the same bytes as
/// in the run that wrote it.
///
/// LLVM's linker walks every global of its destination for each module it
/// links in (ModuleLinker::run, to drop replaced comdats), so linking N
/// inputs one after another costs O(N x program): 1.5 s of a 4,096-unit
/// link. Here they are linked in runs of about sqrt(N) inputs, each run into
/// its first module, then the runs in order into the first: the walks cost
/// O(sqrt(N) x program) and each global moves at most twice. One Linker
/// serves each destination, since making one walks every instruction of its
/// module (IRMover's TypeFinder); the first run's is made before the other
/// runs are linked in, while its module is small. The inputs' order, and so
/// the linked module's and which of two weak definitions stays, is kept.
Expected<std::unique_ptr<Module>>
DeviceLinker::linkInOrder(std::vector<std::unique_ptr<Module>> &Modules,
                          const LinkGroup &G, LinkedProgram &Out) {
  assert(!Modules.empty() && "a link group has an image");
  size_t N = Modules.size();
  size_t Run = std::max<size_t>(1, size_t(std::sqrt(double(N))));
  auto LinkInto = [&](Linker &L, size_t From, size_t Count) -> Error {
    if (!L.linkInModule(std::move(Modules[From])))
      return Error::success();
    std::string What = Inputs.Images[G.Images[From]].Origin;
    if (Count > 1)
      What += " (or one of the " + std::to_string(Count - 1) +
              " inputs after it)";
    return Diags.takeError("cannot link " + What);
  };
  auto LinkRun = [&](Linker &L, size_t Head) -> Error {
    for (size_t I = Head + 1; I < std::min(N, Head + Run); ++I)
      if (Error E = LinkInto(L, I, 1))
        return E;
    return Error::success();
  };
  std::unique_ptr<Module> Composite = std::move(Modules[0]);
  Linker Top(*Composite);
  {
    TimeTraceScope Scope("Link modules");
    if (Error E = LinkRun(Top, 0))
      return std::move(E);
    for (size_t Head = Run; Head < N; Head += Run) {
      {
        Linker L(*Modules[Head]);
        if (Error E = LinkRun(L, Head))
          return std::move(E);
      }
      if (Error E = LinkInto(Top, Head, std::min(Run, N - Head)))
        return std::move(E);
    }
  }
  if (Error E = linkLibdevice(*Composite, Top, Diags, Out.LibdeviceFunctions))
    return std::move(E);
  return std::move(Composite);
}

Error DeviceLinker::linkLibdevice(Module &M, Linker &L, DiagnosticCollector &D,
                                  std::vector<std::string> &Functions) {
  std::vector<std::string> Wanted;
  for (const Function &F : M)
    if (F.isDeclaration() && F.getName().starts_with("__nv_"))
      Wanted.push_back(F.getName().str());
  if (Wanted.empty())
    return Error::success();

  TimeTraceScope Scope("Link libdevice");
  if (Opts.LibdevicePath.empty())
    return createStringError(
        "the program calls %s, a libdevice function, but no "
        "libdevice was given: pass --cuda-path or set CUDA_PATH",
        Wanted.front().c_str());
  ErrorOr<std::unique_ptr<MemoryBuffer>> MBOrErr =
      MemoryBuffer::getFile(Opts.LibdevicePath);
  if (!MBOrErr)
    return createStringError(
        "cannot open libdevice %s: %s: pass --cuda-path or set "
        "CUDA_PATH to a CUDA toolkit",
        Opts.LibdevicePath.c_str(), MBOrErr.getError().message().c_str());
  Expected<std::unique_ptr<Module>> LDOrErr =
      parseBitcodeFile((*MBOrErr)->getMemBufferRef(), M.getContext());
  if (!LDOrErr)
    return createStringError("%s: corrupt libdevice: %s",
                             Opts.LibdevicePath.c_str(),
                             toString(LDOrErr.takeError()).c_str());
  // libdevice says nvptx64-nvidia-gpulibs; make it agree with the program.
  // Bitcode for another target is no libdevice, whatever it defines.
  if ((*LDOrErr)->getTargetTriple().getArch() != Triple::nvptx64)
    return createStringError(
        "%s is not libdevice: its target triple is '%s', not nvptx64 "
        "(NVIDIA's libdevice is nvptx64-nvidia-gpulibs): pass the toolkit's "
        "nvvm/libdevice/libdevice.10.bc to --libdevice, or leave it out",
        Opts.LibdevicePath.c_str(),
        (*LDOrErr)->getTargetTriple().str().c_str());
  (*LDOrErr)->setTargetTriple(M.getTargetTriple());
  (*LDOrErr)->setDataLayout(M.getDataLayout());
  if (L.linkInModule(std::move(*LDOrErr), Linker::LinkOnlyNeeded))
    return D.takeError(Opts.LibdevicePath);

  for (const std::string &Name : Wanted) {
    const Function *F = M.getFunction(Name);
    if (F && !F->isDeclaration())
      Functions.push_back(Name);
  }
  return Error::success();
}

/// What internalization keeps besides kernels, host-visible variables and
/// the used lists: --export-symbol names, and what relocatable cubins
/// (linked later by nvlink) reference.
StringSet<> DeviceLinker::exportedNames() const {
  StringSet<> Exports;
  for (const std::string &Name : Opts.ExportSymbols)
    Exports.insert(Name);
  for (const DeviceObject &O : Inputs.Objects)
    for (const auto *Names : {&O.Undefined, &O.OptionalUndefined})
      for (const std::string &Name : *Names)
        Exports.insert(Name);
  return Exports;
}

/// Keeps what the outside world reaches: kernels, exported symbols,
/// host-visible device globals (clang marks `__device__`/`__constant__`
/// variables externally_initialized) and anything in llvm.used.
void DeviceLinker::internalize(Module &M) {
  TimeTraceScope Scope("Internalize");
  StringSet<> Exports = exportedNames();
  SmallVector<GlobalValue *, 8> Used;
  collectUsedGlobalVariables(M, Used, /*CompilerUsed=*/false);
  for (GlobalValue *GV : Used)
    Exports.insert(GV->getName());

  internalizeModule(M, [&](const GlobalValue &GV) {
    if (Exports.contains(GV.getName()))
      return true;
    if (const auto *F = dyn_cast<Function>(&GV))
      return F->getCallingConv() == CallingConv::PTX_Kernel;
    if (const auto *V = dyn_cast<GlobalVariable>(&GV))
      return V->isExternallyInitialized();
    return false;
  });

  // Drop what is now unreachable, so that unused code cannot produce
  // undefined-symbol errors.
  ModuleAnalysisManager MAM;
  PassBuilder PB;
  PB.registerModuleAnalyses(MAM);
  GlobalDCEPass().run(M, MAM);
}

Error DeviceLinker::saveTemp(const Module &M, StringRef Stage) {
  if (Opts.SaveTempsPrefix.empty())
    return Error::success();
  std::string Path = Opts.SaveTempsPrefix + "." + Stage.str() + ".bc";
  std::error_code EC;
  raw_fd_ostream OS(Path, EC, sys::fs::OF_None);
  if (EC)
    return createStringError("cannot write %s: %s", Path.c_str(),
                             EC.message().c_str());
  WriteBitcodeToFile(M, OS);
  return Error::success();
}

/// A kernel parameter as the IR states it: kind, size, alignment, address
/// space; an integer's sign and a pointer's pointee are not in the IR.
static packager::ParamInfo irParam(const DataLayout &DL, const Argument &A) {
  packager::ParamInfo P;
  Type *Ty = A.hasByValAttr() ? A.getParamByValType() : A.getType();
  P.Size = uint32_t(DL.getTypeAllocSize(Ty));
  P.Align = uint32_t(A.hasByValAttr() && A.getParamAlign()
                         ? A.getParamAlign()->value()
                         : DL.getABITypeAlign(Ty).value());
  if (A.hasByValAttr() || Ty->isAggregateType()) {
    P.Kind = FATLINK_PARAM_AGGREGATE;
    if (auto *ST = dyn_cast<StructType>(Ty); ST && ST->hasName()) {
      StringRef Name = ST->getName();
      // clang's "struct.S"/"class.S"; a numbered copy is "struct.S.0".
      if (Name.consume_front("struct.") || Name.consume_front("class.")) {
        auto [Head, Tail] = Name.rsplit('.');
        unsigned Copy;
        P.Type = (!Tail.empty() && !Tail.getAsInteger(10, Copy) ? Head : Name)
                     .str();
      }
    }
  } else if (Ty->isIntegerTy()) {
    P.Kind = FATLINK_PARAM_INT;
  } else if (Ty->isBFloatTy()) {
    P.Kind = FATLINK_PARAM_BF16;
  } else if (Ty->isFloatingPointTy()) {
    P.Kind = FATLINK_PARAM_FLOAT;
  } else if (Ty->isPointerTy()) {
    P.Kind = FATLINK_PARAM_POINTER;
    P.AddrSpace = uint8_t(Ty->getPointerAddressSpace());
  }
  return P;
}

static unsigned manifestLanguage(SourceLanguage L) {
  switch (L) {
  case SourceLanguage::Rust:
    return FATLINK_LANGUAGE_RUST;
  case SourceLanguage::CudaCxx:
    return FATLINK_LANGUAGE_CUDA;
  case SourceLanguage::C:
    return FATLINK_LANGUAGE_C;
  default:
    return FATLINK_LANGUAGE_UNKNOWN;
  }
}

/// Refines \p P, as the IR states it, with what the kernel's source says
/// (lto/Signature.cpp: debug info, a demangled C++ name, a Rust kernel's
/// signature record): an integer's sign, a pointer's pointee and
/// const-ness, the type's spelling, the parameter's name.
static void refineParam(packager::ParamInfo &P, const TypeSig &T) {
  P.Type = T.Spelling.empty() ? P.Type : T.Spelling;
  P.Name = T.Name.empty() ? P.Name : T.Name;
  if (T.K == TypeSig::Int && T.SignFromSource &&
      P.Kind == FATLINK_PARAM_INT)
    P.Kind = T.S == TypeSig::Sign::Signed ? FATLINK_PARAM_SINT
                                          : FATLINK_PARAM_UINT;
  if (T.K != TypeSig::Pointer || P.Kind != FATLINK_PARAM_POINTER)
    return;
  if (T.PointeeK == TypeSig::Int)
    P.ElemKind = T.PointeeS == TypeSig::Sign::Signed     ? FATLINK_PARAM_SINT
                 : T.PointeeS == TypeSig::Sign::Unsigned ? FATLINK_PARAM_UINT
                                                         : FATLINK_PARAM_INT;
  else if (T.PointeeK == TypeSig::Float)
    P.ElemKind = FATLINK_PARAM_FLOAT;
  P.ElemSize = T.PointeeBits / 8;
  // Rust `*const T` / `&T`; C++ `const T *` (const before the last '*').
  StringRef Sp = T.Spelling;
  bool Const = Sp.starts_with("*const ") ||
               (Sp.starts_with("&") && !Sp.starts_with("&mut")) ||
               Sp.rsplit('*').first.contains("const");
  if (Const)
    P.Flags |= FATLINK_PARAM_CONST;
}

/// "256" or "256,2,1" (an nvvm.* launch attribute) into \p Dims.
static void launchDims(const Function &F, StringRef Attr, uint32_t Dims[3]) {
  if (!F.hasFnAttribute(Attr))
    return;
  SmallVector<StringRef, 3> Parts;
  F.getFnAttribute(Attr).getValueAsString().split(Parts, ',');
  for (unsigned I = 0; I < Parts.size() && I < 3; ++I)
    if (Parts[I].trim().getAsInteger(10, Dims[I]))
      Dims[I] = 0;
}

/// The named metadata holding the kernel table of a module written with
/// `-o prog.bc` (attachKernelTable): one string, a packager::writeKernels
/// record.
static constexpr StringLiteral KernelTableMD = "fatlink.kernels";

/// The table M carries, if any and well formed.
static bool readKernelTable(const Module &M, std::vector<KernelInfo> &Out) {
  const NamedMDNode *N = M.getNamedMetadata(KernelTableMD);
  if (!N || N->getNumOperands() != 1 || N->getOperand(0)->getNumOperands() != 1)
    return false;
  const auto *S = dyn_cast<MDString>(N->getOperand(0)->getOperand(0));
  if (!S)
    return false;
  packager::ByteReader R(S->getString());
  return packager::readKernels(R, S->getString().size(), Out) && R.atEnd();
}

Expected<std::string> attachKernelTable(StringRef Bitcode,
                                        ArrayRef<KernelInfo> Kernels) {
  LLVMContext Ctx;
  Expected<std::unique_ptr<Module>> MOrErr =
      readOwnBitcode(MemoryBufferRef(Bitcode, "optimized module"), Ctx,
                     "the optimized module");
  if (!MOrErr)
    return MOrErr.takeError();
  std::string Table;
  packager::ByteWriter W(Table);
  packager::writeKernels(W, Kernels);
  NamedMDNode *N = (*MOrErr)->getOrInsertNamedMetadata(KernelTableMD);
  N->clearOperands();
  N->addOperand(MDNode::get(Ctx, MDString::get(Ctx, Table)));
  std::string Out;
  raw_string_ostream OS(Out);
  WriteBitcodeToFile(**MOrErr, OS);
  OS.flush();
  return Out;
}

/// The kernels and host-visible globals of the linked module M; each
/// kernel's origin from Symtab, where one is known (null: none).
static void collectInterface(const Module &M, LinkedProgram &Out,
                             const SymbolTable *Symtab) {
  const DataLayout &DL = M.getDataLayout();
  for (const Function &F : M) {
    if (F.isDeclaration() || F.getCallingConv() != CallingConv::PTX_Kernel)
      continue;
    KernelInfo K;
    K.Name = F.getName().str();
    const Signature *Sig = nullptr;
    if (Symtab) {
      auto It = Symtab->Symbols.find(K.Name);
      if (It != Symtab->Symbols.end()) {
        K.Origin = It->second.DefOrigin.str();
        if (It->second.KernelSig)
          Sig = &*It->second.KernelSig;
      }
    }
    if (Sig)
      K.Manifest.Language = uint8_t(manifestLanguage(Sig->Language));
    for (const Argument &A : F.args()) {
      packager::ParamInfo P = irParam(DL, A);
      // What the source says, where it still describes this parameter.
      // (A signature from the IR alone says no more than irParam.)
      if (Sig && Sig->FromSource && Sig->Params.size() == F.arg_size())
        refineParam(P, Sig->Params[A.getArgNo()]);
      K.ParamSizes.push_back(P.Size);
      K.Manifest.Params.push_back(std::move(P));
    }
    launchDims(F, "nvvm.maxntid", K.Manifest.MaxThreads);
    launchDims(F, "nvvm.reqntid", K.Manifest.ReqThreads);
    launchDims(F, "nvvm.cluster_dim", K.Manifest.Cluster);
    uint32_t MinBlocks[3] = {0, 0, 0};
    launchDims(F, "nvvm.minctasm", MinBlocks);
    K.Manifest.MinBlocks = MinBlocks[0];
    Out.Kernels.push_back(std::move(K));
  }
  // A module written by `-o prog.bc` carries the link's table: the origins
  // and manifests its inputs gave, which the module alone no longer says.
  std::vector<KernelInfo> Table;
  if (readKernelTable(M, Table))
    for (KernelInfo &K : Out.Kernels) {
      auto It = find_if(Table, [&](const KernelInfo &T) {
        return T.Name == K.Name && T.ParamSizes == K.ParamSizes;
      });
      if (It == Table.end())
        continue;
      // The input that defined the kernel, not the .bc that carries it.
      if (!It->Origin.empty())
        K.Origin = It->Origin;
      K.Manifest = It->Manifest;
    }
  for (const GlobalVariable &V : M.globals())
    if (!V.isDeclaration() && !V.hasLocalLinkage() && V.isExternallyInitialized())
      Out.Globals.push_back(V.getName().str());
}

namespace {
/// What linkGroup learns of its images before it links them.
struct GroupFacts {
  SymbolTable Symtab;
  std::vector<StringRef> Origins;  ///< of the images, in G's order
  std::vector<ModuleFacts> Facts;  ///< the same
  std::vector<ImageGraph> Graphs;  ///< the same, for a partition-first link
  std::vector<std::pair<KernelRecord, StringRef>> Records;
  StringMap<Align> SharedAlignments;
  /// What the relocatable code (nvcc's cubins) defines.
  StringSet<> ProvidedByObjects;
};
} // namespace

Error DeviceLinker::readGroup(const LinkGroup &G, LLVMContext &Ctx,
                              GroupFacts &F, LinkedProgram &Out,
                              std::vector<std::unique_ptr<Module>> *Keep) {
  ErrorList Errors(Opts.ErrorLimit);
  {
    TimeTraceScope Scope("Parse bitcode");
    for (size_t I : G.Images) {
      const DeviceImage &Image = Inputs.Images[I];
      // Summarized and freed, an image is parsed in a context of its own,
      // freed with it: in one context for all, every image's types,
      // constants and metadata would stay to the end of the link (tens of
      // MB in a large program).
      std::unique_ptr<LLVMContext> Own;
      if (!Keep) {
        Own = std::make_unique<LLVMContext>();
        Diags.install(*Own);
      }
      Expected<std::unique_ptr<Module>> MOrErr =
          parse(Own ? *Own : Ctx, Image, Out);
      if (!MOrErr) {
        Errors.add(MOrErr.takeError());
        if (Own)
          keepForever(std::move(Own));
        continue;
      }
      Errors.add(checkCompiledFor(**MOrErr, Image, G));
      Errors.add(checkDataLayout((*MOrErr)->getDataLayoutStr(), Image.Origin));
      // Rust kernels' signature records leave the module here, so that
      // nothing after this reads them as code (docs/abi.md).
      if (Expected<std::vector<KernelRecord>> RsOrErr =
              takeKernelRecords(**MOrErr)) {
        for (KernelRecord &R : *RsOrErr)
          F.Records.emplace_back(std::move(R), Image.Origin);
      } else {
        Errors.add(createStringError("%s: %s", Image.Origin.c_str(),
                                     toString(RsOrErr.takeError()).c_str()));
      }
      noteUse(**MOrErr, Image, I, G, Out);
      F.Symtab.add(**MOrErr, Image.Origin);
      F.Origins.push_back(Image.Origin);
      F.Facts.push_back(factsOf(**MOrErr, /*Alone=*/!Keep));
      if (Keep) {
        Keep->push_back(std::move(*MOrErr));
      } else {
        F.Graphs.push_back(imageGraphOf(**MOrErr));
        // Summarized: its bytes are read again only by the partitions that
        // take code from it, each faulting in what it reads (docs/lto.md,
        // "What a partition-first link holds").
        Inputs.releaseMappedPages(Image.Bitcode.getBuffer());
      }
    }
  }
  if (Error E = Errors.take())
    return E;
  addObjectDefinitions(Inputs, F.Symtab);
  for (const DeviceObject &O : Inputs.Objects)
    for (const std::string &Name : O.Defined)
      F.ProvidedByObjects.insert(Name);
  if (Error E = checkDuplicates(F.Symtab, Opts.ErrorLimit))
    return E;
  if (Error E = checkKinds(F.Symtab, Opts.ErrorLimit))
    return E;
  if (Error E = applyKernelRecords(F.Records, F.Symtab, Opts.ErrorLimit))
    return E;
  if (Error E = checkSignatures(F.Facts, F.Origins, F.Symtab,
                                Opts.AllowAbiMismatch, Opts.ErrorLimit))
    return E;
  if (Error E = choosePtxVersions(F.Facts, G, Out))
    return E;
  F.SharedAlignments = sharedAlignments(F.Facts);
  // Every check that reads them has run: the facts of a large program
  // (every symbol's signature, tens of MB) need not wait for its link.
  std::vector<ModuleFacts>().swap(F.Facts);
  std::vector<std::pair<KernelRecord, StringRef>>().swap(F.Records);
  return Error::success();
}

/// The answers to `__nvvm_reflect` that are the same for every target.
static std::optional<int> commonReflectAnswer(const LinkOptions &Opts,
                                              StringRef Key) {
  if (Key == "__CUDA_FTZ")
    return Opts.FlushDenormals;
  if (Key == "__CUDA_PREC_SQRT")
    return Opts.PreciseSqrt;
  if (Key == "__CUDA_PREC_DIV")
    return Opts.PreciseDiv;
  if (Key == "__CUDA_ARCH")
    return std::nullopt;
  return 0; // unknown keys read as 0, as in NVVMReflect
}

/// G's targets in subgroups of equal signatures (what the program observes
/// of __CUDA_ARCH), ordered by their first target.
static std::vector<std::vector<size_t>>
subgroupsBySignature(ArrayRef<size_t> TargetIndices,
                     const std::map<size_t, std::vector<int>> &Signatures) {
  std::map<std::vector<int>, std::vector<size_t>> BySignature;
  for (size_t TI : TargetIndices)
    BySignature[Signatures.at(TI)].push_back(TI);
  std::vector<std::vector<size_t>> Subgroups;
  for (auto &[Sig, TIs] : BySignature)
    Subgroups.push_back(TIs);
  llvm::sort(Subgroups, [](const std::vector<size_t> &A,
                           const std::vector<size_t> &B) {
    return A.front() < B.front();
  });
  return Subgroups;
}

bool DeviceLinker::mayLinkInPartitions() const {
  if (Opts.PartitionFirst == PartitionFirstMode::Never || Opts.CodegenOnly ||
      Opts.Partitions == 1 || !Opts.SaveTempsPrefix.empty() ||
      hasLtoIr(Inputs))
    return false;
  if (Opts.PartitionFirst == PartitionFirstMode::Always)
    return true;
  uint64_t Bytes = 0;
  for (const DeviceImage &Image : Inputs.Images)
    Bytes += Image.Bitcode.getBufferSize();
  return Bytes >= PartitionFirstFromBytes;
}

Error DeviceLinker::linkGroup(const LinkGroup &G, LinkedProgram &Out,
                              bool First) {
  auto CtxOwner = std::make_unique<LLVMContext>();
  LLVMContext &Ctx = *CtxOwner;
  Diags.install(Ctx);

  // Parse every image, recording who defines and uses what. A partitioned
  // link keeps only each image's facts and summary.
  bool InPartitions = mayLinkInPartitions();
  size_t WarningsBefore = Out.Warnings.size();
  std::vector<std::unique_ptr<Module>> Modules;
  GroupFacts F;
  if (Error E = readGroup(G, Ctx, F, Out, InPartitions ? nullptr : &Modules)) {
    Modules.clear();
    keepForever(std::move(CtxOwner));
    return E;
  }
  if (InPartitions) {
    Expected<bool> Done = linkPartitionFirst(G, F, Out, First);
    if (!Done || *Done)
      return Done.takeError();
    // One partition (or an input the summaries do not model): the whole
    // link, from the images parsed again.
    F = GroupFacts();
    Out.Warnings.resize(WarningsBefore);
    for (size_t I : G.Images)
      Uses.erase(I); // noteUse notes them again

    if (Error E = readGroup(G, Ctx, F, Out, &Modules))
      return E;
  }
  SymbolTable &Symtab = F.Symtab;
  for (std::unique_ptr<Module> &M : Modules)
    unifySharedDeclarations(*M, F.SharedAlignments);

  // From here on the set of device modules is fixed: link them, each
  // definition tagged with its unit for the split (the IR linker carries
  // the tag with the definition that prevails), then the tags read back and
  // removed; not where no split can follow (--codegen-only,
  // --partitions=1).
  bool MaySplit = !Opts.CodegenOnly && Opts.Partitions != 1;
  unsigned UnitKind = MaySplit ? Ctx.getMDKindID("fatlink.unit") : 0;
  if (MaySplit)
    for (std::unique_ptr<Module> &M : Modules)
      if (std::string Unit = unitName(*M); !Unit.empty()) {
        MDNode *Tag = MDNode::get(Ctx, MDString::get(Ctx, Unit));
        for (GlobalObject &GO : M->global_objects())
          if (!GO.isDeclarationForLinker())
            GO.setMetadata(UnitKind, Tag);
      }
  Expected<std::unique_ptr<Module>> Linked = linkInOrder(Modules, G, Out);
  if (!Linked)
    return Linked.takeError();
  std::unique_ptr<Module> Composite = std::move(*Linked);
  StringMap<StringRef> Units; // into the context's MDStrings
  if (MaySplit)
    for (GlobalObject &GO : Composite->global_objects())
      if (MDNode *Tag = GO.getMetadata(UnitKind)) {
        if (!GO.isDeclaration())
          Units[GO.getName()] = cast<MDString>(Tag->getOperand(0))->getString();
        GO.setMetadata(UnitKind, nullptr);
      }
  Modules.clear();
  Inputs.releaseMappedPages(); // parsed: the bytes are not read again here
  if (Error E = saveTemp(*Composite, "linked"))
    return E;

  internalize(*Composite);
  StringSet<> &ProvidedByObjects = F.ProvidedByObjects;
  if (Error E = Libraries.resolve(*Composite, ProvidedByObjects,
                                  isProvidedByPTX, Out))
    return E;
  if (!hasLtoIr(Inputs))
    if (Error E = checkUndefined(*Composite, Symtab, ProvidedByObjects,
                                 Libraries, Opts.ErrorLimit))
      return E;
  if (First && !hasLtoIr(Inputs))
    if (Error E = checkObjectsUndefined(
            [&](StringRef Name) {
              const GlobalValue *GV = Composite->getNamedValue(Name);
              return GV && !GV->isDeclarationForLinker();
            },
            Inputs, ProvidedByObjects, Libraries, Opts.ErrorLimit))
      return E;
  resolveWeakReferences(*Composite, ProvidedByObjects);
  if (Error E = checkPTXNames(*Composite, Symtab, Opts.ErrorLimit))
    return E;
  if (First)
    collectInterface(*Composite, Out, &Symtab);

  // Fold what does not depend on the target, then split the group by what
  // the program can observe of __CUDA_ARCH.
  foldReflect(*Composite,
              [&](StringRef Key) { return commonReflectAnswer(Opts, Key); });
  std::map<size_t, std::vector<int>> Signatures;
  for (size_t TI : G.Targets)
    Signatures[TI] = archSignature(*Composite, Targets[TI]);
  std::vector<std::vector<size_t>> Subgroups =
      subgroupsBySignature(G.Targets, Signatures);

  for (auto [SI, TIs] : enumerate(Subgroups)) {
    // The last subgroup takes the module itself; the others a copy.
    std::unique_ptr<Module> M = SI + 1 == Subgroups.size()
                                    ? std::move(Composite)
                                    : CloneModule(*Composite);
    const Target &Rep = representative(TIs);
    foldReflect(*M, [&](StringRef Key) -> std::optional<int> {
      if (Key == "__CUDA_ARCH")
        return archReflectValue(Rep);
      return std::nullopt;
    });
    setTargetAttributes(*M, Rep);
    OptimizedModule OM;
    OM.TargetIndices = TIs;
    size_t Kernels = 0, Instructions = 0;
    for (const Function &F : *M) {
      Kernels += !F.isDeclaration() &&
                 F.getCallingConv() == CallingConv::PTX_Kernel;
      Instructions += F.getInstructionCount();
    }
    unsigned Parts = partitionCount(Kernels, Instructions);
    if (!Opts.CodegenOnly && Parts > 1) {
      Expected<bool> InParts = optimizePartitions(M, Rep, Parts, Units, OM);
      if (!InParts)
        return InParts.takeError();
      if (*InParts) {
        Out.Modules.push_back(std::move(OM));
        continue;
      }
      // Every component landed in one partition: that is the whole program,
      // optimized as usual (code generation may still split it after O3,
      // where inlining can have separated it).
    }
    if (!Opts.CodegenOnly)
      if (Error E = optimize(*M, Rep, Opts.OptLevel))
        return E;
    if (Error E = Diags.takeError("optimization for " + Rep.Name))
      return E;
    if (Error E = saveTemp(*M, "opt." + Rep.Name))
      return E;

    raw_string_ostream OS(OM.Bitcode);
    WriteBitcodeToFile(*M, OS);
    OS.flush();
    Out.Modules.push_back(std::move(OM));
  }
  return Error::success();
}

/// The oldest target of TIs, whose __CUDA_ARCH the subgroup's module is
/// folded for.
const Target &DeviceLinker::representative(ArrayRef<size_t> TIs) const {
  return Targets[*llvm::min_element(
      TIs, [&](size_t A, size_t B) { return Targets[A].Sm < Targets[B].Sm; })];
}

/// Runs Work(0) to Work(Count - 1) on Pool's threads, each thread taking
/// the next position in order, so that every position before one a thread
/// waits for has been taken by a thread that will finish it. After a
/// failure no more are taken. Returns the failure at the lowest position
/// (what a serial run reports); the others are consumed.
static Error forEachInOrder(ThreadPoolInterface &Pool, size_t Count,
                            unsigned TimeTraceGranularity,
                            function_ref<Error(size_t)> Work) {
  std::vector<std::optional<Error>> Failures(Count);
  std::atomic<size_t> Next{0};
  std::atomic<bool> Failed{false};
  bool Tracing = timeTraceProfilerEnabled();
  size_t Workers = std::min<size_t>(Pool.getMaxConcurrency(), Count);
  for (size_t W = 0; W < Workers; ++W)
    Pool.async([&] {
      if (Tracing)
        timeTraceProfilerInitialize(TimeTraceGranularity, "fatlink");
      for (size_t Pos; !Failed && (Pos = Next++) < Count;)
        if (Error E = Work(Pos)) {
          Failures[Pos] = std::move(E);
          Failed = true;
        }
      if (Tracing)
        timeTraceProfilerFinishThread();
    });
  Pool.wait();
  Error First = Error::success();
  for (std::optional<Error> &E : Failures)
    if (E) {
      if (First)
        consumeError(std::move(*E));
      else
        First = std::move(*E);
    }
  return First;
}

/// Every message of E, each once, in order, into Seen and Out.
static void gatherMessages(Error E, StringSet<> &Seen,
                           std::vector<std::string> &Out) {
  handleAllErrors(std::move(E), [&](const ErrorInfoBase &EI) {
    std::string Msg = EI.message();
    if (Seen.insert(Msg).second)
      Out.push_back(std::move(Msg));
  });
}

Expected<bool> DeviceLinker::linkPartitionFirst(const LinkGroup &G,
                                             GroupFacts &F, LinkedProgram &Out,
                                             bool First) {
  for (auto [I, Graph] : enumerate(F.Graphs))
    if (!Graph.Unsupported.empty()) {
      if (Opts.Verbose)
        Opts.Verbose((F.Origins[I] + ": " + Graph.Unsupported +
                      ": linked whole, not in partitions")
                         .str());
      return false;
    }
  ProgramGraph P = programGraph(F.Graphs, exportedNames());
  size_t Instructions = 0;
  for (const RefGraph::Node &N : P.Graph.Nodes)
    Instructions += N.Instructions;
  unsigned Parts = partitionCount(P.Kernels, Instructions);
  std::vector<GraphPartition> Plans = planGraph(P.Graph, Parts);
  if (count_if(Plans, [](const GraphPartition &GP) {
        return !GP.Members.empty();
      }) < 2)
    return false;

  // Each partition: linked from the images that define its members, each
  // read lazily with everything else it defines declared, then
  // internalized and checked as the whole program would be. Partitions are
  // linked in parallel, each in a context of its own. What they add to
  // what the link shares (the device libraries taken, the checks'
  // messages, libdevice's functions, the kernel table) each adds at its
  // turn, one partition at a time in partition order, so that the result
  // is the same for any -j.
  std::vector<size_t> Todo; // the plans with members, in order
  for (auto [PI, Plan] : enumerate(Plans))
    if (!Plan.Members.empty())
      Todo.push_back(PI);
  struct LinkedPartition {
    CodegenPartition CP;
    std::vector<std::vector<int>> Signatures; ///< by G.Targets' order
  };
  std::vector<LinkedPartition> Linked(Todo.size());
  StringSet<> Seen;
  std::vector<std::string> Problems;
  StringSet<> LibdeviceSeen;
  std::vector<std::string> Libdevice;
  // libdevice's functions, once each, in the order first linked (a
  // group linked before this one comes first).
  auto AddLibdevice = [&](std::vector<std::string> &Names) {
    for (std::string &Name : Names)
      if (LibdeviceSeen.insert(Name).second)
        Libdevice.push_back(std::move(Name));
    Names.clear();
  };
  AddLibdevice(Out.LibdeviceFunctions);

  // The part of a partition's link that reads and adds to what the link
  // shares (F.ProvidedByObjects, Libraries, Out), at its turn.
  auto Share = [&](Module &Part,
                   std::vector<std::string> &LibdeviceNames) -> Error {
    if (Error E =
            Libraries.resolve(Part, F.ProvidedByObjects, isProvidedByPTX, Out))
      return E;
    gatherMessages(checkUndefined(Part, F.Symtab, F.ProvidedByObjects,
                                  Libraries, /*ErrorLimit=*/0),
                   Seen, Problems);
    resolveWeakReferences(Part, F.ProvidedByObjects);
    gatherMessages(checkPTXNames(Part, F.Symtab, /*ErrorLimit=*/0), Seen,
                   Problems);
    if (First)
      collectInterface(Part, Out, &F.Symtab);
    AddLibdevice(LibdeviceNames);
    return Error::success();
  };
  std::mutex TurnMu;
  std::condition_variable TurnCV;
  size_t Turn = 0; // the position in Todo whose turn it is

  // What several partitions take (the helpers each clones) is read once:
  // where a partition takes only such code from an image, and another
  // does too, the image is sliced once and they read the slice.
  std::vector<bool> Shared(P.Where.size());
  {
    std::vector<uint8_t> Takers(P.Where.size());
    for (size_t PI : Todo)
      for (uint32_t N : Plans[PI].Members)
        if (Takers[N] < 2 && ++Takers[N] == 2)
          Shared[N] = true;
  }
  // By position in Todo: the images the partition reads as slices, those
  // it takes only shared code from where another partition does too.
  std::vector<std::set<uint32_t>> ViaSlice(Todo.size());
  std::map<uint32_t, std::vector<bool>> SliceKeep;
  {
    std::vector<std::map<uint32_t, bool>> Only(Todo.size()); // by image
    std::map<uint32_t, unsigned> Readers;
    for (auto [Pos, PI] : enumerate(Todo)) {
      for (uint32_t N : Plans[PI].Members) {
        auto [It, New] = Only[Pos].try_emplace(P.Where[N].first, true);
        It->second = It->second && Shared[N];
      }
      for (auto [I, SharedOnly] : Only[Pos])
        Readers[I] += SharedOnly;
    }
    for (auto [Pos, PI] : enumerate(Todo))
      for (auto [I, SharedOnly] : Only[Pos])
        if (SharedOnly && Readers[I] >= 2)
          ViaSlice[Pos].insert(I);
    for (auto [Pos, PI] : enumerate(Todo))
      for (uint32_t N : Plans[PI].Members) {
        auto [I, J] = P.Where[N];
        if (!ViaSlice[Pos].count(I))
          continue;
        std::vector<bool> &K = SliceKeep[I];
        K.resize(F.Graphs[I].Globals.size());
        K[J] = true;
      }
  }
  // Gone before the partitions are optimized: its threads hold job slots.
  std::optional<DefaultThreadPool> Pool;
  Pool.emplace(threadStrategy(Opts.Jobs, Opts.UseJobserver));
  StringMap<uint32_t> External; // what the program keeps external: by
                                // name, the image that defines it
  for (auto [N, Node] : enumerate(P.Graph.Nodes))
    if (!Node.Local)
      External[Node.Name] = P.Where[N].first;
  Expected<std::map<uint32_t, ImageSlice>> SlicesOrErr =
      sliceImages(G, F, SliceKeep, External, *Pool);
  if (!SlicesOrErr)
    return SlicesOrErr.takeError();
  std::map<uint32_t, ImageSlice> &Slices = *SlicesOrErr;
  if (Opts.Verbose && !Slices.empty()) {
    size_t Bytes = 0;
    for (const auto &[I, S] : Slices)
      Bytes += S.Bitcode.size();
    Opts.Verbose("link: the code partitions share sliced from " +
                 std::to_string(Slices.size()) + " of " +
                 std::to_string(G.Images.size()) + " inputs (" +
                 std::to_string((Bytes + 1023) / 1024) + " KiB)");
  }

  // Links the Pos'th partition with members into Linked[Pos].
  auto LinkOne = [&](size_t Pos) -> Error {
    size_t PI = Todo[Pos];
    GraphPartition &Plan = Plans[PI];
    TimeTraceScope Scope("Link partition", Twine(PI).str());
    // By image: what the partition keeps of it, and its slice, if the
    // partition reads that instead.
    std::map<uint32_t, std::pair<std::vector<bool>, const ImageSlice *>> Kept;
    for (uint32_t N : Plan.Members) {
      auto [I, J] = P.Where[N];
      auto &[K, Slice] = Kept[I];
      if (ViaSlice[Pos].count(I))
        Slice = &Slices.at(I);
      if (Slice) {
        if (J >= Slice->Index.size() || Slice->Index[J] == UINT32_MAX)
          return createStringError(
              "%s: internal error: global %u (%s) is not in its slice",
              Inputs.Images[G.Images[I]].Origin.c_str(), J,
              F.Graphs[I].Globals[J].Name.c_str());
        K.resize(Slice->Graph.Globals.size());
        K[Slice->Index[J]] = true;
      } else {
        K.resize(F.Graphs[I].Globals.size());
        K[J] = true;
      }
    }
    LLVMContext Ctx;
    DiagnosticCollector PartDiags;
    PartDiags.install(Ctx);
    auto Part = std::make_unique<Module>("partition", Ctx);
    std::vector<std::string> LibdeviceNames;
    auto LinkInputs = [&]() -> Error {
      std::vector<std::pair<std::string, GlobalValue::LinkageTypes>> LinkOnce;
      Linker L(*Part);
      for (auto &[I, KS] : Kept) {
        auto &[K, Slice] = KS;
        const DeviceImage &Image = Inputs.Images[G.Images[I]];
        Expected<std::unique_ptr<Module>> MOrErr = getLazyBitcodeModule(
            Slice ? MemoryBufferRef(Slice->Bitcode, Image.Origin)
                  : Image.Bitcode,
            Ctx);
        // A slice is fatlink's own bitcode: an error in it is fatlink's.
        std::string Where =
            Slice ? Image.Origin + " (fatlink's slice of it)" : Image.Origin;
        if (!MOrErr)
          return createStringError("%s: %s", Where.c_str(),
                                   toString(MOrErr.takeError()).c_str());
        Module &M = **MOrErr;
        // Its debug info parse() dropped: read whole, and dropped again
        // (a slice has none).
        if (!Slice && DroppedDebugInfo.count(G.Images[I])) {
          if (Error E = M.materializeAll())
            return createStringError("%s: %s", Image.Origin.c_str(),
                                     toString(std::move(E)).c_str());
          StripDebugInfo(M);
        }
        if (Expected<std::vector<KernelRecord>> Rs = takeKernelRecords(M); !Rs)
          return Rs.takeError(); // read once already
        unifySharedDeclarations(M, F.SharedAlignments);
        if (Error E =
                keepOnly(M, K, Slice ? Slice->Graph : F.Graphs[I], &LinkOnce))
          return createStringError("%s: %s", Where.c_str(),
                                   toString(std::move(E)).c_str());
        if (L.linkInModule(std::move(*MOrErr)))
          return PartDiags.takeError("cannot link " + Image.Origin);
        // Linked: what the partition takes from the image is in its module
        // now. The next partition reads some of the same images for other
        // code, and faults in what it reads.
        if (!Slice)
          Inputs.releaseMappedPages(Image.Bitcode.getBuffer());
      }
      for (const auto &[Name, Linkage] : LinkOnce)
        if (GlobalValue *GV = Part->getNamedValue(Name);
            GV && !GV->isDeclaration())
          GV->setLinkage(Linkage);
      return linkLibdevice(*Part, L, PartDiags, LibdeviceNames);
    };
    Error E = LinkInputs();
    if (!E)
      internalize(*Part);
    {
      // Every partition takes its turn, even one that failed: the next
      // waits for it.
      std::unique_lock<std::mutex> Lock(TurnMu);
      TurnCV.wait(Lock, [&] { return Turn == Pos; });
      if (!E)
        E = Share(*Part, LibdeviceNames);
      ++Turn;
    }
    TurnCV.notify_all();
    if (E)
      return E;
    foldReflect(*Part,
                [&](StringRef Key) { return commonReflectAnswer(Opts, Key); });
    LinkedPartition &R = Linked[Pos];
    for (size_t TI : G.Targets)
      R.Signatures.push_back(archSignature(*Part, Targets[TI]));
    {
      TimeTraceScope Scope("Write partition");
      raw_string_ostream OS(R.CP.Bitcode);
      WriteBitcodeToFile(*Part, OS);
    }
    // To a file until its O3: the partitions linked so far would otherwise
    // wait in memory (tens of MB in a large program).
    if (Error SE = spill(R.CP, "part" + Twine(PI) + ".bc"))
      return SE;
    R.CP.Kernels = std::move(Plan.Kernels);
    R.CP.Instructions = Plan.Instructions;
    return Error::success();
  };

  // Taken in order, a partition waits at its turn only for partitions
  // that workers hold; the first failure in partition order is the one a
  // serial link reports.
  if (Error E = forEachInOrder(*Pool, Todo.size(), Opts.TimeTraceGranularity,
                               [&](size_t Pos) {
                                 Error E = LinkOne(Pos);
                                 releaseFreedMemory(); // its context
                                 return E;
                               }))
    return std::move(E);
  Pool.reset();
  Slices.clear();
  std::vector<CodegenPartition> Split;
  std::map<size_t, std::vector<int>> Signatures;
  for (LinkedPartition &R : Linked) {
    for (auto [K, TI] : enumerate(G.Targets))
      append_range(Signatures[TI], R.Signatures[K]);
    Split.push_back(std::move(R.CP));
  }
  Linked.clear();
  Out.LibdeviceFunctions = std::move(Libdevice);
  if (First && !hasLtoIr(Inputs))
    gatherMessages(checkObjectsUndefined(
                       [&](StringRef Name) {
                         auto It = F.Symtab.Symbols.find(Name.str());
                         return It != F.Symtab.Symbols.end() &&
                                !It->second.DefOrigin.empty();
                       },
                       Inputs, F.ProvidedByObjects, Libraries,
                       /*ErrorLimit=*/0),
                   Seen, Problems);
  if (!Problems.empty()) {
    ErrorList Errors(Opts.ErrorLimit);
    for (const std::string &Msg : Problems)
      Errors.add(createStringError(Msg));
    return Errors.take();
  }

  if (Opts.Verbose) {
    // What the partitions hold beyond the program: the local helpers and
    // constants each copies (planGraph).
    size_t Held = 0;
    for (size_t PI : Todo)
      Held += Plans[PI].Instructions;
    Opts.Verbose("link: " + std::to_string(Split.size()) +
                 " partitions, each linked from its inputs alone (" +
                 std::to_string(Held) + " instructions, " +
                 std::to_string(Held - std::min(Held, Instructions)) +
                 " of them copies of helpers)");
  }
  // Linked and checked: the inputs' facts and summaries and the plan (3 KB
  // per kernel of a large program) are not read again, and go before the
  // partitions are optimized.
  F = GroupFacts();
  P = ProgramGraph();
  Plans = std::vector<GraphPartition>();
  Seen = StringSet<>();
  LibdeviceSeen = StringSet<>();
  releaseFreedMemory();
  Inputs.releaseMappedPages(); // the inputs' bytes, read again only by a
                               // later group's link

  // The targets' subgroups, each optimizing every partition for its
  // representative's __CUDA_ARCH.
  std::vector<std::vector<size_t>> Subgroups =
      subgroupsBySignature(G.Targets, Signatures);
  for (auto [SI, TIs] : enumerate(Subgroups)) {
    OptimizedModule OM;
    OM.TargetIndices = TIs;
    std::vector<CodegenPartition> Mine;
    if (SI + 1 == Subgroups.size())
      Mine = std::move(Split);
    else
      Mine = Split;
    if (Error E = optimizeSplit(std::move(Mine), representative(TIs),
                                /*ForTarget=*/true, OM))
      return std::move(E);
    Out.Modules.push_back(std::move(OM));
  }
  return true;
}

Expected<std::map<uint32_t, ImageSlice>>
DeviceLinker::sliceImages(const LinkGroup &G, const GroupFacts &F,
                          const std::map<uint32_t, std::vector<bool>> &Keep,
                          const StringMap<uint32_t> &External,
                          ThreadPoolInterface &Pool) {
  std::vector<std::pair<uint32_t, const std::vector<bool> *>> Todo;
  for (const auto &[I, K] : Keep)
    Todo.push_back({I, &K});
  std::vector<ImageSlice> Slices(Todo.size());

  // Image I: read lazily, the definitions Keep does not name dropped, the
  // rest read, and the declarations that nothing references any more
  // removed.
  auto SliceOne = [&](size_t Pos) -> Error {
    auto [I, K] = Todo[Pos];
    const DeviceImage &Image = Inputs.Images[G.Images[I]];
    TimeTraceScope Scope("Slice input", Image.Origin);
    auto Fail = [&](Error E) {
      return createStringError("%s: %s", Image.Origin.c_str(),
                               toString(std::move(E)).c_str());
    };
    LLVMContext Ctx;
    DiagnosticCollector D;
    D.install(Ctx);
    Expected<std::unique_ptr<Module>> MOrErr =
        getLazyBitcodeModule(Image.Bitcode, Ctx);
    if (!MOrErr)
      return Fail(MOrErr.takeError());
    Module &M = **MOrErr;
    if (DroppedDebugInfo.count(G.Images[I])) {
      if (Error E = M.materializeAll())
        return Fail(std::move(E));
      StripDebugInfo(M);
    }
    if (Expected<std::vector<KernelRecord>> Rs = takeKernelRecords(M); !Rs)
      return Rs.takeError(); // read once already
    // The image's globals, numbered as its summary numbers them, followed
    // by handle: dropping definitions can remove a used list that empties,
    // and reading the bodies can replace declarations (intrinsics
    // upgraded).
    std::vector<WeakVH> Before;
    for (GlobalValue &GV : M.global_values())
      Before.emplace_back(&GV);
    if (Error E = keepOnly(M, *K, F.Graphs[I], /*LinkOnce=*/nullptr))
      return Fail(std::move(E));
    if (Error E = M.materializeAll())
      return Fail(std::move(E));
    // A declaration of a name the program keeps external and another
    // image defines stays: the partition may hold that definition, and
    // linked beside it the declaration lowers its visibility and
    // unnamed_addr, as the image's does where a partition reads the image.
    for (GlobalValue &GV : make_early_inc_range(M.global_values())) {
      if (!GV.isDeclaration() || !GV.use_empty() || GV.isUsedByMetadata())
        continue;
      auto It = External.find(GV.getName());
      if (It == External.end() || It->second == I)
        GV.eraseFromParent();
    }
    if (Error E = D.takeError("cannot read " + Image.Origin))
      return E;

    ImageSlice &S = Slices[Pos];
    DenseMap<const Value *, uint32_t> IndexOf;
    for (GlobalValue &GV : M.global_values()) {
      IndexOf[&GV] = S.Graph.Globals.size();
      ImageGraph::Global &SG = S.Graph.Globals.emplace_back();
      SG.Name = GV.getName().str();
      SG.Reserved = GV.getName().starts_with("llvm.");
      SG.Definition = !GV.isDeclarationForLinker();
    }
    S.Index.assign(Before.size(), UINT32_MAX);
    for (auto [J, H] : enumerate(Before))
      if (H)
        S.Index[J] = IndexOf.lookup_or(H, UINT32_MAX);
    raw_string_ostream OS(S.Bitcode);
    WriteBitcodeToFile(M, OS);
    return Error::success();
  };

  if (Error E = forEachInOrder(
          Pool, Todo.size(), Opts.TimeTraceGranularity, [&](size_t Pos) {
            Error E = SliceOne(Pos);
            Inputs.releaseMappedPages(
                Inputs.Images[G.Images[Todo[Pos].first]].Bitcode.getBuffer());
            return E;
          }))
    return std::move(E);
  std::map<uint32_t, ImageSlice> Out;
  for (auto [Pos, S] : enumerate(Slices))
    Out.emplace(Todo[Pos].first, std::move(S));
  return Out;
}

/// The bodies of the definitions dropped are never read; the used lists'
/// and `nvvm.annotations`' entries for them go too.
Error DeviceLinker::keepOnly(
    Module &M, const std::vector<bool> &Keep, const ImageGraph &G,
    std::vector<std::pair<std::string, GlobalValue::LinkageTypes>> *LinkOnce) {
  std::vector<GlobalValue *> Globals;
  for (GlobalValue &GV : M.global_values())
    Globals.push_back(&GV);
  if (Globals.size() != G.Globals.size())
    return createStringError("the input changed while it was linked");
  DenseSet<const GlobalValue *> Drop;
  for (auto [J, GV] : enumerate(Globals))
    if (G.Globals[J].Definition && !G.Globals[J].Reserved &&
        !(J < Keep.size() && Keep[J]))
      Drop.insert(GV);
  if (NamedMDNode *Annotations = M.getNamedMetadata("nvvm.annotations")) {
    std::vector<MDNode *> Stay;
    for (MDNode *N : Annotations->operands()) {
      const auto *VM = N->getNumOperands()
                           ? dyn_cast_or_null<ValueAsMetadata>(N->getOperand(0))
                           : nullptr;
      if (!VM || !Drop.contains(dyn_cast<GlobalValue>(VM->getValue())))
        Stay.push_back(N);
    }
    Annotations->clearOperands();
    for (MDNode *N : Stay)
      Annotations->addOperand(N);
  }
  for (auto [J, GV] : enumerate(Globals)) {
    // The linker links a linkonce definition only where something already
    // linked references it, and the references may come from an image
    // linked after this one: made weak for the link, linkonce again after.
    if (LinkOnce && !Drop.contains(GV) && G.Globals[J].Definition &&
        GV->hasLinkOnceLinkage()) {
      LinkOnce->push_back({GV->getName().str(), GV->getLinkage()});
      GV->setLinkage(GV->hasLinkOnceODRLinkage() ? GlobalValue::WeakODRLinkage
                                                 : GlobalValue::WeakAnyLinkage);
    }
    if (!Drop.contains(GV))
      continue;
    if (auto *Fn = dyn_cast<Function>(GV))
      Fn->deleteBody();
    else if (auto *V = dyn_cast<GlobalVariable>(GV))
      V->setInitializer(nullptr);
    if (auto *GO = dyn_cast<GlobalObject>(GV))
      GO->setComdat(nullptr); // a declaration is in none
    GV->setLinkage(GlobalValue::ExternalLinkage);
    GV->setVisibility(GlobalValue::DefaultVisibility);
  }
  // Last: it replaces the used lists' variables, which Globals holds.
  removeFromUsedLists(M, [&](Constant *C) {
    return Drop.contains(dyn_cast<GlobalValue>(C->stripPointerCasts()));
  });
  // The declarations stay: uses in bodies not read yet are not listed, and
  // the reader still refers to every global it made. The linker brings over
  // only those that something it links references.
  return Error::success();
}

void releaseFreedMemory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

Expected<std::unique_ptr<MemoryBuffer>>
loadBitcode(const CodegenPartition &P) {
  if (P.File.empty())
    return MemoryBuffer::getMemBuffer(P.Bitcode, "partition",
                                      /*RequiresNullTerminator=*/false);
  ErrorOr<std::unique_ptr<MemoryBuffer>> MB = MemoryBuffer::getFile(
      P.File, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!MB)
    return createStringError(MB.getError(),
                             "cannot read back the partition's bitcode "
                             "from %s: %s",
                             P.File.c_str(), MB.getError().message().c_str());
  return std::move(*MB);
}

Error DeviceLinker::spill(CodegenPartition &P, const Twine &Name) const {
  if (!Opts.Spill)
    return Error::success();
  Expected<std::string> Path = Opts.Spill(Name.str(), P.Bitcode);
  if (!Path)
    return Path.takeError();
  P.File = std::move(*Path);
  std::string().swap(P.Bitcode);
  return Error::success();
}

ThreadPoolStrategy threadStrategy(unsigned Jobs, bool UseJobserver) {
  if (Jobs == 0 && UseJobserver)
    return jobserver_concurrency();
  return hardware_concurrency(Jobs);
}

unsigned defaultPartitions(size_t Kernels, size_t Instructions,
                           size_t PerPartition) {
  size_t BySize = divideCeil(Instructions, std::max<size_t>(PerPartition, 1));
  // At most 65,536 (8.6 billion instructions at the default budget):
  // partition numbers fit the 24 bits codegen/'s job priorities give them.
  return unsigned(std::max(std::clamp<size_t>(Kernels / 8, 1, 32),
                           std::min<size_t>(BySize, 1 << 16)));
}

unsigned DeviceLinker::partitionCount(size_t Kernels,
                                      size_t Instructions) const {
  if (Opts.Partitions)
    return Opts.Partitions;
  unsigned N =
      defaultPartitions(Kernels, Instructions, Opts.PartitionInstructions);
  if (Opts.Verbose)
    Opts.Verbose(("link: " + Twine(Kernels) + " kernels, " +
                  Twine(Instructions) + " instructions before O3: " +
                  Twine(N) + " partitions at most")
                     .str());
  return N;
}

/// Splits M (linked, internalized, not optimized) into partitions and runs
/// O3 on each (optimizeSplit). Returns false, having done nothing, when the
/// split yields a single partition; otherwise frees M as soon as it is cut.
Expected<bool> DeviceLinker::optimizePartitions(
    std::unique_ptr<Module> &M, const Target &Rep, unsigned Parts,
    const StringMap<StringRef> &Units, OptimizedModule &OM) {
  // Only the partitions are read from here on. M, the whole program's IR
  // and most of the link's memory, is freed as it is cut, before they are
  // optimized, so that the peak is the program's IR or the partitions'
  // work, not both (docs/lto.md, "Memory").
  std::vector<CodegenPartition> Split = splitForOptimization(M, Parts, Units);
  if (Split.empty())
    return false; // one partition: the caller optimizes M whole
  if (Error E = optimizeSplit(std::move(Split), Rep, /*ForTarget=*/false, OM))
    return std::move(E);
  return true;
}

/// Runs O3 on each partition in its own context, in parallel; a partition
/// whose IR was optimized before (same IR, target and level:
/// Opts.MemoLookup) is not optimized again. With \p ForTarget, each is
/// first made Rep's (__CUDA_ARCH folded, target attributes), as the whole
/// link does to its module before the split. With Opts.NeedWholeModule the
/// results are also linked back into one module.
Error DeviceLinker::optimizeSplit(std::vector<CodegenPartition> Split,
                                  const Target &Rep, bool ForTarget,
                                  OptimizedModule &OM) {
  // The optimized partition waits for code generation in a file, where
  // the driver gives one (LinkOptions::Spill).
  auto Optimized = [&](CodegenPartition &P, size_t I) {
    return spill(P, "part" + Twine(I) + "." + Rep.Name + ".opt.bc");
  };
  // Bytes: the size of the partition's input bitcode.
  auto OptimizeOne = [&](size_t I, size_t &Bytes) -> Error {
    CodegenPartition &P = Split[I];
    Expected<std::unique_ptr<MemoryBuffer>> In = loadBitcode(P);
    if (!In)
      return In.takeError();
    Bytes = (*In)->getBufferSize();
    std::string Key;
    if (Opts.MemoLookup) {
      Key = memoKey(Twine(ForTarget ? "o3-for-target-1-" : "o3-1-")
                        + LLVM_VERSION_STRING "-O" + Twine(Opts.OptLevel) +
                        "-" + Rep.Cpu + "-ptx" + Twine(Rep.PtxVersion),
                    (*In)->getBuffer());
      if (std::optional<std::string> V = Opts.MemoLookup(Key)) {
        P.Bitcode = std::move(*V);
        return Optimized(P, I);
      }
    }
    TimeTraceScope Scope("Optimize partition", Rep.Name + ".part" + Twine(I).str());
    LLVMContext Ctx;
    DiagnosticCollector PartDiags;
    PartDiags.install(Ctx);
    Expected<std::unique_ptr<Module>> PM =
        readOwnBitcode((*In)->getMemBufferRef(), Ctx,
                       "partition " + Twine(I) + " for " + Rep.Name);
    In->reset(); // parsed: the input is not read again
    if (PM && ForTarget) {
      foldReflect(**PM, [&](StringRef Key) -> std::optional<int> {
        if (Key == "__CUDA_ARCH")
          return archReflectValue(Rep);
        return std::nullopt;
      });
      setTargetAttributes(**PM, Rep);
    }
    Error E =
        PM ? runRecoverably([&] { return optimize(**PM, Rep, Opts.OptLevel); },
                            "optimizing a partition for " + Rep.Name,
                            /*OnProgram=*/true)
           : PM.takeError();
    if (!E)
      E = PartDiags.takeError("optimization for " + Rep.Name);
    if (E)
      return E;
    P.Bitcode.clear();
    raw_string_ostream OS(P.Bitcode);
    WriteBitcodeToFile(**PM, OS);
    OS.flush();
    if (Opts.MemoStore)
      Opts.MemoStore(Key, P.Bitcode);
    return Optimized(P, I);
  };
  {
    DefaultThreadPool Pool(threadStrategy(Opts.Jobs, Opts.UseJobserver));
    if (Error E = forEachInOrder(Pool, Split.size(), Opts.TimeTraceGranularity,
                                 [&](size_t I) {
                                   size_t Bytes = 0;
                                   Error E = OptimizeOne(I, Bytes);
                                   // Its LLVMContext freed.
                                   if (Bytes >= ReleaseAfterBytes)
                                     releaseFreedMemory();
                                   return E;
                                 }))
      return E;
  }

  if (Opts.NeedWholeModule) {
    TimeTraceScope Scope("Join partitions");
    LLVMContext Ctx;
    DiagnosticCollector JoinDiags;
    JoinDiags.install(Ctx);
    std::unique_ptr<Module> Whole;
    for (const CodegenPartition &P : Split) {
      Expected<std::unique_ptr<MemoryBuffer>> In = loadBitcode(P);
      if (!In)
        return In.takeError();
      Expected<std::unique_ptr<Module>> PM =
          readOwnBitcode((*In)->getMemBufferRef(), Ctx,
                         "an optimized partition for " + Rep.Name);
      if (!PM)
        return PM.takeError();
      if (!Whole) {
        Whole = std::move(*PM);
        continue;
      }
      if (Linker::linkModules(*Whole, std::move(*PM)))
        return JoinDiags.takeError("joining the optimized partitions");
    }
    if (Whole) {
      if (Error E = saveTemp(*Whole, "opt." + Rep.Name))
        return E;
      raw_string_ostream OS(OM.Bitcode);
      WriteBitcodeToFile(*Whole, OS);
      OS.flush();
    }
  }
  OM.Parts = std::move(Split);
  return Error::success();
}

Expected<std::vector<KernelInfo>> readKernels(MemoryBufferRef Bitcode) {
  takeOverDebugInfoChecks();
  LLVMContext Ctx;
  DiagnosticCollector Diags;
  Diags.install(Ctx);
  Expected<std::unique_ptr<Module>> MOrErr = parseBitcodeFile(Bitcode, Ctx);
  if (!MOrErr)
    return createStringError("%s: corrupt bitcode: %s",
                             Bitcode.getBufferIdentifier().str().c_str(),
                             toString(MOrErr.takeError()).c_str());
  LinkedProgram P;
  collectInterface(**MOrErr, P, nullptr);
  llvm::sort(P.Kernels, [](const KernelInfo &A, const KernelInfo &B) {
    return A.Name < B.Name;
  });
  return std::move(P.Kernels);
}

static Expected<LinkedProgram> linkAndOptimizeImpl(const InputSet &Inputs,
                                                   ArrayRef<Target> Targets,
                                                   const LinkOptions &Opts);

Expected<LinkedProgram> linkAndOptimize(const InputSet &Inputs,
                                        ArrayRef<Target> Targets,
                                        const LinkOptions &Opts) {
  // Each input was read under crash recovery already (parse()); this is
  // for what verified IR can still make LLVM do.
  takeOverDebugInfoChecks();
  Expected<LinkedProgram> Result = LinkedProgram();
  if (Error E = runRecoverably(
          [&] {
            Result = linkAndOptimizeImpl(Inputs, Targets, Opts);
            return Result.takeError();
          },
          "linking and optimizing the device code", /*OnProgram=*/true))
    return std::move(E);
  return Result;
}

static Expected<LinkedProgram> linkAndOptimizeImpl(const InputSet &Inputs,
                                                   ArrayRef<Target> Targets,
                                                   const LinkOptions &Opts) {
  TimeTraceScope Scope("Link and optimize");
  if (Inputs.Images.empty() && Inputs.Objects.empty()) {
    // What was left alone says why, where anything was.
    std::string Msg = "no device code in the inputs";
    for (const std::string &S : Inputs.Skipped)
      Msg += "\n>>> skipped " + S;
    return createStringError(Msg);
  }
  if (Targets.empty())
    return createStringError("no targets: pass --arch");

  DeviceLinker DL(Inputs, Targets, Opts);
  Expected<std::vector<LinkGroup>> GroupsOrErr = DL.planGroups();
  if (!GroupsOrErr)
    return GroupsOrErr.takeError();

  LinkedProgram Out;
  for (const Target &T : Targets)
    Out.PtxVersions.push_back(T.PtxVersion);
  if (Error E = DL.libraries().resolveObjects(Out))
    return std::move(E);
  auto SortKernels = [&] {
    // The kernels of relocatable code: each unit's (every object of a unit
    // defines the same).
    std::set<unsigned> Units;
    for (const DeviceObject &O : Inputs.Objects)
      if (Units.insert(O.Source).second)
        for (KernelInfo K : O.Kernels) {
          K.Origin = O.Origin;
          Out.Kernels.push_back(std::move(K));
        }
    llvm::stable_sort(Out.Kernels,
                      [](const KernelInfo &A, const KernelInfo &B) {
                        return A.Name < B.Name;
                      });
  };
  // Each relocatable object a target links (nvcc's cubins, PTX, LTO-IR),
  // after the images, in input order.
  auto NoteObjectUses = [&] {
    std::map<const DeviceObject *, InputUse> ObjectUses;
    for (const Target &T : Targets)
      for (const DeviceObject *O : objectsForTarget(Inputs, T)) {
        InputUse &U = ObjectUses[O];
        U.Origin = O->Origin;
        U.CompiledFor = O->Arch;
        U.Targets.push_back(T.Name);
      }
    for (const DeviceObject &O : Inputs.Objects)
      if (auto It = ObjectUses.find(&O); It != ObjectUses.end())
        Out.Inputs.push_back(std::move(It->second));
  };
  if (Inputs.Images.empty()) {
    SymbolTable Symtab;
    addObjectDefinitions(Inputs, Symtab);
    if (Error E = checkDuplicates(Symtab, Opts.ErrorLimit))
      return std::move(E);
    StringSet<> Provided;
    for (const DeviceObject &O : Inputs.Objects)
      Provided.insert_range(O.Defined);
    if (!hasLtoIr(Inputs))
      if (Error E = checkObjectsUndefined([](StringRef) { return false; }, Inputs, Provided,
                                          DL.libraries(), Opts.ErrorLimit))
        return std::move(E);
    SortKernels();
    NoteObjectUses();
    return std::move(Out); // relocatable code only: nvlink does the link
  }
  for (auto [I, G] : enumerate(*GroupsOrErr))
    if (Error E = DL.linkGroup(G, Out, I == 0))
      return std::move(E);
  SortKernels();
  llvm::sort(Out.Globals);
  llvm::sort(Out.LibdeviceFunctions);
  // Uses in input order, each one's targets in target order.
  StringMap<size_t> TargetOrder;
  for (auto [I, T] : enumerate(Targets))
    TargetOrder[T.Name] = I;
  for (auto &[Index, Use] : DL.Uses) {
    llvm::sort(Use.Targets, [&](const std::string &A, const std::string &B) {
      return TargetOrder.lookup(A) < TargetOrder.lookup(B);
    });
    Out.Inputs.push_back(std::move(Use));
  }
  NoteObjectUses();
  Out.LibdeviceFunctions.erase(llvm::unique(Out.LibdeviceFunctions),
                               Out.LibdeviceFunctions.end());
  llvm::sort(Out.LibrarySymbols);
  Out.LibrarySymbols.erase(llvm::unique(Out.LibrarySymbols),
                           Out.LibrarySymbols.end());
  return std::move(Out);
}

} // namespace fatlink::lto
