//===- hostlink/NvccRegistration.cpp - Registering nvcc modules ----------===//
//
// What nvcc's host code expects, and what this file gives it.
//
// An nvcc -rdc object names its module in section __nv_module_id (a NUL-
// terminated identifier, "_9f38b5d6_10_nv_host_cu_main") and calls, from a
// static constructor,
//
//   __cudaRegisterLinkedBinary_<id>(void (*callback)(void **handle),
//                                   void *prelinked_fatbinc, void *module_id,
//                                   void (*dummy_ref)(void *));
//
// where callback registers the object's kernels and variables
// (__cudaRegisterFunction, __cudaRegisterVar) with the handle it is given.
// crt/link.stub, which nvcc -dlink compiles, collects the callbacks; when
// the last of the NUM_PRELINKED_OBJECTS modules nvlink linked has called,
// it registers the linked fatbin once (__cudaRegisterFatBinary), sets
// __cudaUnregisterFatBinary to run at exit, calls every callback with the
// handle in the order they came, and ends with __cudaRegisterFatBinaryEnd.
// The prelinked fatbin and the module id are only recorded there; the
// dummy reference keeps a symbol alive for old compilers.
//
// The registration here does the same with fatlink's fatbin, in two kinds
// of archive member, generated as LLVM IR and compiled in-process by the
// host backend (position-independent, so for executables, PIEs and shared
// libraries alike):
//
//   <id>.o (one per module): __cudaRegisterLinkedBinary_<id>, hidden, a
//     tail call of __fatlink_nvcc_register(callback, &entry), and `entry`,
//     a pointer to the id string in section fatlink_nvcc_modules;
//   fatlink-nvcc-register.o: __fatlink_nvcc_register, which stores the
//     callback and, when as many modules have called as the linker put
//     entries between __start_/__stop_fatlink_nvcc_modules, registers the
//     wrapper (a hidden symbol of fatlink's host object) as link.stub
//     does; and FATLINK_CUDART_JOIN, by which fatlink's runtime adds its
//     own callback (clang's kernels) so that the fatbin is registered once.
//
// The linker takes a module's member only when the module's object is in
// the link (an archive member it extracts, not one it leaves), so the count
// is that of the constructors that will call: nvlink's NUM_PRELINKED_OBJECTS,
// counted by the linker that really links.
//
//===----------------------------------------------------------------------===//

#include "hostlink/NvccRegistration.h"

#include "intake/Intake.h"
#include "packager/Descriptor.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/BinaryFormat/Magic.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Object/ArchiveWriter.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Threading.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Triple.h"
#include "llvm/Transforms/Utils/ModuleUtils.h"

#include <memory>

extern "C" {
void LLVMInitializeX86TargetInfo();
void LLVMInitializeX86Target();
void LLVMInitializeX86TargetMC();
void LLVMInitializeX86AsmPrinter();
void LLVMInitializeAArch64TargetInfo();
void LLVMInitializeAArch64Target();
void LLVMInitializeAArch64TargetMC();
void LLVMInitializeAArch64AsmPrinter();
}

using namespace llvm;

namespace fatlink {

//===----------------------------------------------------------------------===//
// Finding the modules
//===----------------------------------------------------------------------===//

static constexpr StringLiteral RegisterPrefix = "__cudaRegisterLinkedBinary";
static constexpr StringLiteral RelFatbinSection = "__nv_relfatbin";
/// Far longer than nvcc's ids (a hash, the file name and a symbol).
static constexpr size_t MaxIdLength = 4096;

static bool isIdentifier(StringRef S) {
  return !S.empty() && !isDigit(S.front()) &&
         all_of(S, [](char C) { return isAlnum(C) || C == '_'; });
}

/// Where an object stands: a file on the line, or a member of one.
struct ObjectPlace {
  size_t Input;
  std::optional<size_t> Member;
  std::string Origin;
};

/// The nvcc pieces of one relocatable ELF object, appended to \p Out: the
/// __cudaRegisterLinkedBinary_<id> functions it calls (undefined symbols),
/// or, when it defines them, the nvcc -dlink output it is. Its
/// __nv_module_id section names the same ids, but nvcc -c whole-program
/// objects carry one too, and they register themselves.
static Error readObject(MemoryBufferRef MB, ObjectPlace Place,
                        NvccInputs &Out) {
  Expected<std::unique_ptr<object::ObjectFile>> Obj =
      object::ObjectFile::createObjectFile(MB);
  if (!Obj) {
    // Not ours to judge: the host linker reports a bad object.
    consumeError(Obj.takeError());
    return Error::success();
  }
  std::vector<StringRef> Called, Defined;
  bool DefinesOthers = false;
  for (const object::SymbolRef &Sym : (*Obj)->symbols()) {
    Expected<uint32_t> Flags = Sym.getFlags();
    Expected<StringRef> Name = Sym.getName();
    if (!Flags || !Name) {
      consumeError(Flags.takeError());
      consumeError(Name.takeError());
      continue;
    }
    StringRef Id = *Name;
    if (!(*Flags & object::SymbolRef::SF_Global))
      continue; // nvcc -dlink's helper __cudaRegisterLinkedBinary is local
    if (!Id.consume_front(RegisterPrefix)) {
      DefinesOthers |= !(*Flags & object::SymbolRef::SF_Undefined);
      continue;
    }
    if (Id.size() > MaxIdLength || !isIdentifier(Id)) {
      std::string Shown;
      raw_string_ostream(Shown).write_escaped(Name->take_front(96));
      return createStringError(
          "%s: '%s%s' names no nvcc module id (an identifier after %s): the "
          "object is corrupt or not from nvcc",
          Place.Origin.c_str(), Shown.c_str(), Name->size() > 96 ? "..." : "",
          RegisterPrefix.data());
    }
    (*Flags & object::SymbolRef::SF_Undefined ? Called : Defined).push_back(Id);
  }
  // Only what nvcc -dlink writes: an object that defines more is not one,
  // and leaving it out of the link would lose those definitions.
  if (!Defined.empty() && !DefinesOthers) {
    NvccDeviceLink Link{Place.Input, Place.Member, Place.Origin, {}};
    for (StringRef Id : Defined)
      Link.Ids.push_back(Id.str());
    Out.DeviceLinks.push_back(std::move(Link));
  }
  if (Called.empty())
    return Error::success();
  bool HasDeviceCode = false;
  for (const object::SectionRef &Sec : (*Obj)->sections()) {
    Expected<StringRef> Name = Sec.getName();
    if (Name && *Name == RelFatbinSection)
      HasDeviceCode = true;
    consumeError(Name.takeError());
  }
  for (StringRef Id : Called)
    Out.Modules.push_back({Id.str(), Place.Origin, HasDeviceCode});
  return Error::success();
}

Expected<NvccInputs> findNvccInputs(ArrayRef<std::string> Paths) {
  NvccInputs Found;
  for (size_t I = 0; I < Paths.size(); ++I) {
    const std::string &Path = Paths[I];
    ErrorOr<std::unique_ptr<MemoryBuffer>> MB = MemoryBuffer::getFile(
        Path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
    if (!MB)
      continue; // The host linker reports what it cannot open.
    MemoryBufferRef Ref = (*MB)->getMemBufferRef();
    file_magic Magic = identify_magic(Ref.getBuffer());
    if (Magic == file_magic::elf_relocatable) {
      if (Error E = readObject(Ref, {I, std::nullopt, Path}, Found))
        return std::move(E);
      continue;
    }
    if (Magic != file_magic::archive)
      continue;
    size_t Member = 0;
    if (Error E = intake::forEachMember(
            Ref, Path, intake::ThinArchive::Follow,
            [&](intake::Member &M) -> Error {
              size_t Index = Member++;
              if (identify_magic(M.Data.getBuffer()) !=
                  file_magic::elf_relocatable)
                return Error::success();
              return readObject(
                  M.Data, {I, Index, (Path + "(" + M.Name + ")").str()},
                  Found);
            },
            // A thin member that cannot be read: the host linker says so.
            [&](Error E) {
              ++Member;
              consumeError(std::move(E));
            }))
      return std::move(E);
  }
  return std::move(Found);
}

Expected<std::string> archiveWithout(StringRef Path, ArrayRef<size_t> Drop) {
  ErrorOr<std::unique_ptr<MemoryBuffer>> MB = MemoryBuffer::getFile(
      Path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!MB)
    return createStringError(MB.getError(), "cannot read %s: %s",
                             Path.str().c_str(),
                             MB.getError().message().c_str());
  Expected<std::unique_ptr<object::Archive>> Ar =
      object::Archive::create((*MB)->getMemBufferRef());
  if (!Ar)
    return createStringError("%s: %s", Path.str().c_str(),
                             toString(Ar.takeError()).c_str());
  std::vector<NewArchiveMember> Members;
  Error Err = Error::success();
  size_t Index = 0;
  for (const object::Archive::Child &C : (*Ar)->children(Err)) {
    if (is_contained(Drop, Index++))
      continue;
    Expected<NewArchiveMember> M =
        NewArchiveMember::getOldMember(C, /*Deterministic=*/true);
    if (!M)
      return createStringError("%s: %s", Path.str().c_str(),
                               toString(M.takeError()).c_str());
    Members.push_back(std::move(*M));
  }
  if (Err)
    return createStringError("%s: %s", Path.str().c_str(),
                             toString(std::move(Err)).c_str());
  Expected<std::unique_ptr<MemoryBuffer>> Out = writeArchiveToBuffer(
      Members, SymtabWritingMode::NormalSymtab, object::Archive::K_GNU,
      /*Deterministic=*/true, /*Thin=*/false);
  if (!Out)
    return createStringError("%s: cannot write it without its nvcc -dlink "
                             "members: %s",
                             Path.str().c_str(),
                             toString(Out.takeError()).c_str());
  return (*Out)->getBuffer().str();
}

//===----------------------------------------------------------------------===//
// The registration code
//===----------------------------------------------------------------------===//

static constexpr StringLiteral RegisterFn = "__fatlink_nvcc_register";
static constexpr StringLiteral CoreMember = "fatlink-nvcc-register.o";

#define FATLINK_STR2(X) #X
#define FATLINK_STR(X) FATLINK_STR2(X)
static constexpr StringLiteral JoinFn = FATLINK_STR(FATLINK_CUDART_JOIN);

namespace {

/// Builds and compiles the members for one host target. Each module gets
/// a TargetMachine of its own: the ELF object-file lowering remembers the
/// llvm.used globals of every module it has seen, by address, so a later
/// module's global at a reused address would land in another section.
class Generator {
public:
  Generator(const Triple &T, const Target &Tgt) : T(T), Tgt(Tgt) {}

  /// The member for module \p Id.
  Expected<std::string> moduleMember(StringRef Id);
  /// The shared registration, with room for \p MaxCallbacks callbacks.
  Expected<std::string> coreMember(StringRef WrapperSymbol,
                                   uint64_t MaxCallbacks);

private:
  Expected<std::unique_ptr<TargetMachine>> targetMachine() const;
  Expected<std::unique_ptr<Module>> newModule(StringRef Name);
  Function *define(Module &M, StringRef Name, FunctionType *Ty,
                   GlobalValue::LinkageTypes Linkage);
  Expected<std::string> compile(Module &M);

  const Triple &T;
  const Target &Tgt;
  LLVMContext Ctx;
};

} // namespace

/// Position-independent code (executables, PIEs and shared libraries
/// alike) at -O0: a few loads, stores and calls.
Expected<std::unique_ptr<TargetMachine>> Generator::targetMachine() const {
  std::unique_ptr<TargetMachine> TM(
      Tgt.createTargetMachine(T, "", "", TargetOptions(), Reloc::PIC_,
                              std::nullopt, CodeGenOptLevel::None));
  if (!TM)
    return createStringError("cannot create an LLVM target machine for %s",
                             T.str().c_str());
  return std::move(TM);
}

Expected<std::unique_ptr<Module>> Generator::newModule(StringRef Name) {
  Expected<std::unique_ptr<TargetMachine>> TM = targetMachine();
  if (!TM)
    return TM.takeError();
  auto M = std::make_unique<Module>(Name, Ctx);
  M->setTargetTriple(T);
  M->setDataLayout((*TM)->createDataLayout());
  M->setPICLevel(PICLevel::BigPIC);
  return std::move(M);
}

Function *Generator::define(Module &M, StringRef Name, FunctionType *Ty,
                            GlobalValue::LinkageTypes Linkage) {
  Function *F = Function::Create(Ty, Linkage, Name, M);
  if (!F->hasLocalLinkage())
    F->setVisibility(GlobalValue::HiddenVisibility);
  // No unwind tables: nothing here throws, and the callbacks are nvcc's
  // and the runtime's registration calls.
  F->addFnAttr(Attribute::NoUnwind);
  F->setDSOLocal(true);
  return F;
}

Expected<std::string> Generator::compile(Module &M) {
  std::string Err;
  raw_string_ostream ErrOS(Err);
  if (verifyModule(M, &ErrOS))
    return createStringError("generated nvcc registration code is invalid: " +
                             Err);
  Expected<std::unique_ptr<TargetMachine>> TM = targetMachine();
  if (!TM)
    return TM.takeError();
  SmallString<0> Buf;
  raw_svector_ostream OS(Buf);
  legacy::PassManager PM;
  if ((*TM)->addPassesToEmitFile(PM, OS, nullptr, CodeGenFileType::ObjectFile))
    return createStringError("LLVM's %s backend cannot write objects",
                             T.getArchName().str().c_str());
  PM.run(M);
  return std::string(Buf.str());
}

Expected<std::string> Generator::moduleMember(StringRef Id) {
  Expected<std::unique_ptr<Module>> MOrErr = newModule(Id);
  if (!MOrErr)
    return MOrErr.takeError();
  std::unique_ptr<Module> M = std::move(*MOrErr);
  Type *Ptr = PointerType::getUnqual(Ctx);
  Type *Void = Type::getVoidTy(Ctx);

  // entry: a pointer to the id, counted by the linker through the section.
  Constant *IdStr = ConstantDataArray::getString(Ctx, Id);
  auto *IdVar =
      new GlobalVariable(*M, IdStr->getType(), /*isConstant=*/true,
                         GlobalValue::PrivateLinkage, IdStr, "fatlink.nvcc.id");
  IdVar->setUnnamedAddr(GlobalValue::UnnamedAddr::Global);
  IdVar->setAlignment(Align(1));
  auto *Entry = new GlobalVariable(*M, Ptr, /*isConstant=*/false,
                                   GlobalValue::InternalLinkage, IdVar,
                                   "fatlink.nvcc.entry");
  Entry->setSection(FATLINK_NVCC_MODULES_SECTION);
  Entry->setAlignment(Align(8));
  appendToUsed(*M, {Entry});

  FunctionType *RegTy = FunctionType::get(Void, {Ptr, Ptr}, false);
  Function *Reg =
      Function::Create(RegTy, GlobalValue::ExternalLinkage, RegisterFn, *M);
  Reg->setVisibility(GlobalValue::HiddenVisibility);
  Reg->setDSOLocal(true);

  FunctionType *Ty = FunctionType::get(Void, {Ptr, Ptr, Ptr, Ptr}, false);
  Function *F = define(*M, ("__cudaRegisterLinkedBinary" + Id).str(), Ty,
                       GlobalValue::ExternalLinkage);
  IRBuilder<> B(BasicBlock::Create(Ctx, "entry", F));
  CallInst *Call = B.CreateCall(Reg, {F->getArg(0), Entry});
  Call->setTailCall();
  B.CreateRetVoid();
  return compile(*M);
}

Expected<std::string> Generator::coreMember(StringRef WrapperSymbol,
                                            uint64_t MaxCallbacks) {
  Expected<std::unique_ptr<Module>> MOrErr = newModule(CoreMember);
  if (!MOrErr)
    return MOrErr.takeError();
  std::unique_ptr<Module> M = std::move(*MOrErr);
  Type *Ptr = PointerType::getUnqual(Ctx);
  Type *Void = Type::getVoidTy(Ctx);
  Type *I32 = Type::getInt32Ty(Ctx);
  Type *I64 = Type::getInt64Ty(Ctx);
  Type *I8 = Type::getInt8Ty(Ctx);
  FunctionType *CallbackTy = FunctionType::get(Void, {Ptr}, false);

  auto Hidden = [&](StringRef Name, Type *Ty) {
    auto *G = new GlobalVariable(*M, Ty, /*isConstant=*/true,
                                 GlobalValue::ExternalLinkage, nullptr, Name);
    G->setVisibility(GlobalValue::HiddenVisibility);
    G->setDSOLocal(true);
    return G;
  };
  auto State = [&](StringRef Name, Type *Ty) {
    return new GlobalVariable(*M, Ty, /*isConstant=*/false,
                              GlobalValue::InternalLinkage,
                              Constant::getNullValue(Ty), Name);
  };
  GlobalVariable *Wrapper = Hidden(WrapperSymbol, I8);
  GlobalVariable *Start = Hidden("__start_" FATLINK_NVCC_MODULES_SECTION, I8);
  GlobalVariable *Stop = Hidden("__stop_" FATLINK_NVCC_MODULES_SECTION, I8);
  ArrayType *CallbacksTy = ArrayType::get(Ptr, MaxCallbacks);
  GlobalVariable *Callbacks = State("fatlink.nvcc.callbacks", CallbacksTy);
  GlobalVariable *NumCallbacks = State("fatlink.nvcc.num_callbacks", I64);
  GlobalVariable *Arrived = State("fatlink.nvcc.arrived", I64);
  GlobalVariable *Registered = State("fatlink.nvcc.registered", I8);
  GlobalVariable *Handle = State("fatlink.nvcc.handle", Ptr);

  auto Extern = [&](StringRef Name, Type *Ret, ArrayRef<Type *> Params) {
    return M->getOrInsertFunction(Name, FunctionType::get(Ret, Params, false));
  };
  FunctionCallee RegisterFatBinary =
      Extern("__cudaRegisterFatBinary", Ptr, {Ptr});
  FunctionCallee RegisterFatBinaryEnd =
      Extern("__cudaRegisterFatBinaryEnd", Void, {Ptr});
  FunctionCallee UnregisterFatBinary =
      Extern("__cudaUnregisterFatBinary", Void, {Ptr});
  FunctionCallee Atexit = Extern("atexit", I32, {Ptr});

  // static void unregister(void) { __cudaUnregisterFatBinary(Handle); }
  Function *Unregister =
      define(*M, "fatlink.nvcc.unregister", FunctionType::get(Void, false),
             GlobalValue::InternalLinkage);
  {
    IRBuilder<> B(BasicBlock::Create(Ctx, "entry", Unregister));
    B.CreateCall(UnregisterFatBinary, {B.CreateLoad(Ptr, Handle)});
    B.CreateRetVoid();
  }

  // static void registerAll(void): link.stub's order.
  Function *RegisterAll =
      define(*M, "fatlink.nvcc.register_all", FunctionType::get(Void, false),
             GlobalValue::InternalLinkage);
  {
    BasicBlock *Entry = BasicBlock::Create(Ctx, "entry", RegisterAll);
    BasicBlock *Loop = BasicBlock::Create(Ctx, "loop", RegisterAll);
    BasicBlock *Body = BasicBlock::Create(Ctx, "body", RegisterAll);
    BasicBlock *Done = BasicBlock::Create(Ctx, "done", RegisterAll);
    IRBuilder<> B(Entry);
    Value *H = B.CreateCall(RegisterFatBinary, {Wrapper});
    B.CreateStore(H, Handle);
    B.CreateStore(ConstantInt::get(I8, 1), Registered);
    B.CreateCall(Atexit, {Unregister});
    B.CreateBr(Loop);
    B.SetInsertPoint(Loop);
    PHINode *I = B.CreatePHI(I64, 2);
    I->addIncoming(ConstantInt::get(I64, 0), Entry);
    B.CreateCondBr(B.CreateICmpULT(I, B.CreateLoad(I64, NumCallbacks)), Body,
                   Done);
    B.SetInsertPoint(Body);
    Value *Slot = B.CreateInBoundsGEP(CallbacksTy, Callbacks,
                                      {ConstantInt::get(I64, 0), I});
    B.CreateCall(CallbackTy, B.CreateLoad(Ptr, Slot), {H});
    I->addIncoming(B.CreateAdd(I, ConstantInt::get(I64, 1)), Body);
    B.CreateBr(Loop);
    B.SetInsertPoint(Done);
    B.CreateCall(RegisterFatBinaryEnd, {H});
    B.CreateRetVoid();
  }

  // static int add(callback): after registration, call it with the handle
  // at once (returns 0); before, store it (returns 1). There is a slot for
  // every module the link line holds and one for the runtime; a callback
  // beyond them (more calls than modules) is dropped.
  Function *Add =
      define(*M, "fatlink.nvcc.add", FunctionType::get(I32, {Ptr}, false),
             GlobalValue::InternalLinkage);
  {
    BasicBlock *Entry = BasicBlock::Create(Ctx, "entry", Add);
    BasicBlock *Late = BasicBlock::Create(Ctx, "late", Add);
    BasicBlock *Check = BasicBlock::Create(Ctx, "check", Add);
    BasicBlock *Store = BasicBlock::Create(Ctx, "store", Add);
    BasicBlock *Full = BasicBlock::Create(Ctx, "full", Add);
    IRBuilder<> B(Entry);
    Value *Cb = Add->getArg(0);
    B.CreateCondBr(
        B.CreateICmpNE(B.CreateLoad(I8, Registered), ConstantInt::get(I8, 0)),
        Late, Check);
    B.SetInsertPoint(Late);
    B.CreateCall(CallbackTy, Cb, {B.CreateLoad(Ptr, Handle)});
    B.CreateRet(ConstantInt::get(I32, 0));
    B.SetInsertPoint(Check);
    Value *N = B.CreateLoad(I64, NumCallbacks);
    B.CreateCondBr(B.CreateICmpULT(N, ConstantInt::get(I64, MaxCallbacks)),
                   Store, Full);
    B.SetInsertPoint(Store);
    B.CreateStore(Cb, B.CreateInBoundsGEP(CallbacksTy, Callbacks,
                                          {ConstantInt::get(I64, 0), N}));
    B.CreateStore(B.CreateAdd(N, ConstantInt::get(I64, 1)), NumCallbacks);
    B.CreateRet(ConstantInt::get(I32, 1));
    B.SetInsertPoint(Full);
    B.CreateRet(ConstantInt::get(I32, 1));
  }

  // void __fatlink_nvcc_register(callback, entry): one module has called.
  Function *Register =
      define(*M, RegisterFn, FunctionType::get(Void, {Ptr, Ptr}, false),
             GlobalValue::ExternalLinkage);
  {
    BasicBlock *Entry = BasicBlock::Create(Ctx, "entry", Register);
    BasicBlock *Count = BasicBlock::Create(Ctx, "count", Register);
    BasicBlock *Last = BasicBlock::Create(Ctx, "last", Register);
    BasicBlock *Ret = BasicBlock::Create(Ctx, "ret", Register);
    IRBuilder<> B(Entry);
    Value *Stored = B.CreateCall(Add, {Register->getArg(0)});
    B.CreateCondBr(B.CreateICmpNE(Stored, ConstantInt::get(I32, 0)), Count,
                   Ret);
    B.SetInsertPoint(Count);
    Value *A =
        B.CreateAdd(B.CreateLoad(I64, Arrived), ConstantInt::get(I64, 1));
    B.CreateStore(A, Arrived);
    Value *Bytes =
        B.CreateSub(B.CreatePtrToInt(Stop, I64), B.CreatePtrToInt(Start, I64));
    Value *Total = B.CreateLShr(Bytes, ConstantInt::get(I64, 3));
    B.CreateCondBr(B.CreateICmpEQ(A, Total), Last, Ret);
    B.SetInsertPoint(Last);
    B.CreateCall(RegisterAll);
    B.CreateBr(Ret);
    B.SetInsertPoint(Ret);
    B.CreateRetVoid();
  }

  // int FATLINK_CUDART_JOIN(wrapper, callback): the runtime's way in.
  Function *Join = define(*M, JoinFn, FunctionType::get(I32, {Ptr, Ptr}, false),
                          GlobalValue::ExternalLinkage);
  {
    BasicBlock *Entry = BasicBlock::Create(Ctx, "entry", Join);
    BasicBlock *Ours = BasicBlock::Create(Ctx, "ours", Join);
    BasicBlock *Other = BasicBlock::Create(Ctx, "other", Join);
    IRBuilder<> B(Entry);
    B.CreateCondBr(B.CreateICmpEQ(Join->getArg(0), Wrapper), Ours, Other);
    B.SetInsertPoint(Ours);
    B.CreateCall(Add, {Join->getArg(1)});
    B.CreateRet(ConstantInt::get(I32, 1));
    B.SetInsertPoint(Other);
    B.CreateRet(ConstantInt::get(I32, 0));
  }
  return compile(*M);
}

/// The backend for \p T, initialized once; only x86-64 and AArch64.
static Expected<const Target *> hostBackend(const Triple &T) {
  static once_flag X86Once, AArch64Once;
  switch (T.getArch()) {
  case Triple::x86_64:
    llvm::call_once(X86Once, [] {
      LLVMInitializeX86TargetInfo();
      LLVMInitializeX86Target();
      LLVMInitializeX86TargetMC();
      LLVMInitializeX86AsmPrinter();
    });
    break;
  case Triple::aarch64:
    llvm::call_once(AArch64Once, [] {
      LLVMInitializeAArch64TargetInfo();
      LLVMInitializeAArch64Target();
      LLVMInitializeAArch64TargetMC();
      LLVMInitializeAArch64AsmPrinter();
    });
    break;
  default:
    return createStringError(
        "cannot write nvcc registration code for host %s: fatlink writes "
        "host code for x86_64 and aarch64",
        T.str().c_str());
  }
  std::string Err;
  const Target *Tgt = TargetRegistry::lookupTarget(T, Err);
  if (!Tgt)
    return createStringError("no LLVM backend for host %s: %s", T.str().c_str(),
                             Err.c_str());
  return Tgt;
}

Expected<std::string> writeNvccRegistration(ArrayRef<NvccModule> Modules,
                                            StringRef WrapperSymbol,
                                            StringRef TripleStr) {
  Triple T(Triple::normalize(TripleStr));
  Expected<const Target *> Tgt = hostBackend(T);
  if (!Tgt)
    return Tgt.takeError();

  // One member per distinct id, by id: the same archive whatever the order
  // of the link line.
  std::vector<StringRef> Ids;
  StringSet<> Seen;
  for (const NvccModule &M : Modules)
    if (Seen.insert(M.Id).second)
      Ids.push_back(M.Id);
  llvm::sort(Ids);

  Generator G(T, **Tgt);
  std::vector<std::string> Bytes, Names;
  Expected<std::string> Core = G.coreMember(WrapperSymbol, Ids.size() + 1);
  if (!Core)
    return Core.takeError();
  Bytes.push_back(std::move(*Core));
  Names.push_back(CoreMember.str());
  for (StringRef Id : Ids) {
    Expected<std::string> Obj = G.moduleMember(Id);
    if (!Obj)
      return Obj.takeError();
    Bytes.push_back(std::move(*Obj));
    Names.push_back((Id + ".o").str());
  }

  std::vector<NewArchiveMember> Members;
  for (size_t I = 0; I < Bytes.size(); ++I) {
    NewArchiveMember Member(MemoryBufferRef(Bytes[I], Names[I]));
    Member.MemberName = Names[I];
    Members.push_back(std::move(Member));
  }
  std::string Out;
  raw_string_ostream OS(Out);
  Error WarnErr = Error::success();
  if (Error E = writeArchiveToStream(
          OS, Members, SymtabWritingMode::NormalSymtab, object::Archive::K_GNU,
          /*Deterministic=*/true, /*Thin=*/false, std::nullopt, [&](Error W) {
            WarnErr = joinErrors(std::move(WarnErr), std::move(W));
          }))
    return joinErrors(std::move(E), std::move(WarnErr));
  if (WarnErr)
    return std::move(WarnErr);
  return Out;
}

} // namespace fatlink
