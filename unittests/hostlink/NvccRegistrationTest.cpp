//===- unittests/hostlink/NvccRegistrationTest.cpp - nvcc registration ---===//
//
// The archive fatlink cc adds for nvcc -rdc host code, read back with
// LLVM's object readers: one member per module id (sorted, duplicates
// once) after the shared registration, the symbols each defines (hidden)
// and refers to, the counted section, both host arches, the same bytes for
// any order of the modules. Modules are read from objects written by
// yaml2obj in-process, alone and in an archive.
//
//===----------------------------------------------------------------------===//

#include "hostlink/NvccRegistration.h"
#include "unittests/TestSupport.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Object/Archive.h"
#include "llvm/Object/ArchiveWriter.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/ObjectYAML/yaml2obj.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/YAMLTraits.h"

#include <map>

using namespace llvm;
using namespace fatlink;
using fatlink::test::TempDir;

namespace {

constexpr const char *Wrapper = "__fatlink_wrapper_0123456789abcdef";

const std::vector<NvccModule> Modules = {
    {"_b2_1_y_cu", "y.o", true},
    {"_a1_1_x_cu", "x.o", true},
    {"_a1_1_x_cu", "libx.a(x.o)", true},
};

/// What one member defines and refers to.
struct MemberInfo {
  uint16_t Machine = 0;
  std::map<std::string, uint8_t> DefinedVisibility;
  std::vector<std::string> Undefined;
  uint64_t ModulesSectionSize = 0;
};

std::vector<std::pair<std::string, MemberInfo>> readArchive(StringRef Bytes) {
  std::vector<std::pair<std::string, MemberInfo>> Out;
  auto ArOrErr = object::Archive::create(MemoryBufferRef(Bytes, "reg.a"));
  EXPECT_THAT_EXPECTED(ArOrErr, Succeeded());
  if (!ArOrErr)
    return Out;
  EXPECT_TRUE((*ArOrErr)->hasSymbolTable());
  Error Err = Error::success();
  for (const object::Archive::Child &C : (*ArOrErr)->children(Err)) {
    Expected<StringRef> Name = C.getName();
    Expected<MemoryBufferRef> MB = C.getMemoryBufferRef();
    EXPECT_THAT_EXPECTED(Name, Succeeded());
    EXPECT_THAT_EXPECTED(MB, Succeeded());
    if (!Name || !MB)
      continue;
    auto ObjOrErr = object::ObjectFile::createObjectFile(*MB);
    EXPECT_THAT_EXPECTED(ObjOrErr, Succeeded());
    if (!ObjOrErr)
      continue;
    auto *Elf = cast<object::ELF64LEObjectFile>(ObjOrErr->get());
    MemberInfo Info;
    Info.Machine = Elf->getELFFile().getHeader().e_machine;
    for (const object::ELFSymbolRef &Sym : Elf->symbols()) {
      Expected<StringRef> SymName = Sym.getName();
      if (!SymName || SymName->empty() || Sym.getBinding() == ELF::STB_LOCAL) {
        consumeError(SymName.takeError());
        continue;
      }
      Expected<object::section_iterator> Sec = Sym.getSection();
      if (Sec && *Sec != Elf->section_end())
        Info.DefinedVisibility[SymName->str()] = Sym.getOther() & 3;
      else
        Info.Undefined.push_back(SymName->str());
      consumeError(Sec.takeError());
    }
    for (const object::SectionRef &S : Elf->sections()) {
      Expected<StringRef> SecName = S.getName();
      if (SecName && *SecName == "fatlink_nvcc_modules")
        Info.ModulesSectionSize = S.getSize();
      consumeError(SecName.takeError());
    }
    llvm::sort(Info.Undefined);
    Out.push_back({Name->str(), std::move(Info)});
  }
  EXPECT_THAT_ERROR(std::move(Err), Succeeded());
  return Out;
}

TEST(NvccRegistration, OneMemberPerModule) {
  for (const char *Triple :
       {"x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu"}) {
    SCOPED_TRACE(Triple);
    Expected<std::string> Ar = writeNvccRegistration(Modules, Wrapper, Triple);
    ASSERT_THAT_EXPECTED(Ar, Succeeded());
    auto Members = readArchive(*Ar);
    ASSERT_EQ(Members.size(), 3u);
    EXPECT_EQ(Members[0].first, "fatlink-nvcc-register.o");
    EXPECT_EQ(Members[1].first, "_a1_1_x_cu.o");
    EXPECT_EQ(Members[2].first, "_b2_1_y_cu.o");
    uint16_t Machine = StringRef(Triple).starts_with("x86_64")
                           ? ELF::EM_X86_64
                           : ELF::EM_AARCH64;
    for (auto &[Name, Info] : Members)
      EXPECT_EQ(Info.Machine, Machine) << Name;

    const MemberInfo &Core = Members[0].second;
    EXPECT_EQ(Core.DefinedVisibility,
              (std::map<std::string, uint8_t>{
                  {"__fatlink_cudart_join", ELF::STV_HIDDEN},
                  {"__fatlink_nvcc_register", ELF::STV_HIDDEN}}));
    EXPECT_EQ(Core.Undefined,
              (std::vector<std::string>{
                  "__cudaRegisterFatBinary", "__cudaRegisterFatBinaryEnd",
                  "__cudaUnregisterFatBinary", Wrapper,
                  "__start_fatlink_nvcc_modules", "__stop_fatlink_nvcc_modules",
                  "atexit"}));
    EXPECT_EQ(Core.ModulesSectionSize, 0u);

    for (int I : {1, 2}) {
      const MemberInfo &M = Members[I].second;
      std::string Fn = "__cudaRegisterLinkedBinary" +
                       Members[I].first.substr(0, Members[I].first.size() - 2);
      EXPECT_EQ(M.DefinedVisibility,
                (std::map<std::string, uint8_t>{{Fn, ELF::STV_HIDDEN}}));
      EXPECT_EQ(M.Undefined,
                std::vector<std::string>{"__fatlink_nvcc_register"});
      // One pointer to the id, counted by the linker.
      EXPECT_EQ(M.ModulesSectionSize, 8u);
    }
  }
}

TEST(NvccRegistration, SameBytesForAnyOrder) {
  std::vector<NvccModule> Reversed(Modules.rbegin(), Modules.rend());
  Expected<std::string> A =
      writeNvccRegistration(Modules, Wrapper, "x86_64-linux-gnu");
  Expected<std::string> B =
      writeNvccRegistration(Reversed, Wrapper, "x86_64-linux-gnu");
  // A third call with A's input: nothing carries over from one call (or
  // one member) to the next.
  Expected<std::string> C =
      writeNvccRegistration(Modules, Wrapper, "x86_64-linux-gnu");
  ASSERT_THAT_EXPECTED(A, Succeeded());
  ASSERT_THAT_EXPECTED(B, Succeeded());
  ASSERT_THAT_EXPECTED(C, Succeeded());
  EXPECT_TRUE(*A == *B);
  EXPECT_TRUE(*A == *C);
  Expected<std::string> Other = writeNvccRegistration(
      Modules, "__fatlink_wrapper_fedcba9876543210", "x86_64-linux-gnu");
  ASSERT_THAT_EXPECTED(Other, Succeeded());
  EXPECT_FALSE(*A == *Other);
}

TEST(NvccRegistration, OtherHostArch) {
  EXPECT_THAT_EXPECTED(
      writeNvccRegistration(Modules, Wrapper, "riscv64-unknown-linux-gnu"),
      FailedWithMessage("cannot write nvcc registration code for host "
                        "riscv64-unknown-linux-gnu: fatlink writes host "
                        "code for x86_64 and aarch64"));
}

/// A relocatable x86-64 object with the given sections (name, hex bytes),
/// undefined global symbols, and global symbols defined in its first
/// section.
std::string object(ArrayRef<std::pair<std::string, std::string>> Sections,
                   ArrayRef<std::string> Undefined = {},
                   ArrayRef<std::string> Defined = {}) {
  std::string Yaml = "--- !ELF\nFileHeader:\n  Class: ELFCLASS64\n"
                     "  Data: ELFDATA2LSB\n  Type: ET_REL\n"
                     "  Machine: EM_X86_64\nSections:\n";
  for (auto &[Name, Hex] : Sections)
    Yaml += "  - Name: " + Name +
            "\n    Type: SHT_PROGBITS\n    Flags: [ SHF_ALLOC ]\n"
            "    Content: " +
            Hex + "\n";
  if (!Undefined.empty() || !Defined.empty())
    Yaml += "Symbols:\n";
  for (const std::string &Name : Undefined)
    Yaml += "  - Name: \"" + Name + "\"\n    Binding: STB_GLOBAL\n";
  for (const std::string &Name : Defined)
    Yaml += "  - Name: \"" + Name + "\"\n    Section: " +
            Sections.front().first + "\n    Binding: STB_GLOBAL\n";
  std::string Out;
  raw_string_ostream OS(Out);
  yaml::Input YIn(Yaml);
  EXPECT_TRUE(yaml::convertYAML(
      YIn, OS, [](const Twine &Msg) { ADD_FAILURE() << Msg.str(); }));
  return Out;
}

std::string moduleIds(ArrayRef<std::string> Ids) {
  std::string S;
  for (const std::string &Id : Ids)
    S += Id + std::string(16 - Id.size() % 16, '\0');
  return toHex(S);
}

const std::string RelFatbin = "50ED55BA010010000000000000000000";

TEST(NvccRegistration, FindsModules) {
  TempDir Dir;
  // `ld -r` of two nvcc objects: two ids, two calls.
  std::string Two =
      object({{"__nv_module_id", moduleIds({"_a1_1_x_cu", "_b2_1_y_cu"})},
              {"__nv_relfatbin", RelFatbin}},
             {"__cudaRegisterLinkedBinary_a1_1_x_cu",
              "__cudaRegisterLinkedBinary_b2_1_y_cu"});
  // A call, but no device code.
  std::string NoCode = object({{"__nv_module_id", moduleIds({"_c3_1_z_cu"})}},
                              {"__cudaRegisterLinkedBinary_c3_1_z_cu"});
  // nvcc -c: a module id, a complete fatbin, no call: not a module here.
  std::string Whole = object({{"__nv_module_id", moduleIds({"_d4_1_w_cu"})},
                              {".nv_fatbin", RelFatbin}});
  std::string Plain = object({{".text", "C3"}});
  std::string TwoPath = Dir.write("two.o", Two);
  std::string WholePath = Dir.write("whole.o", Whole);
  std::string PlainPath = Dir.write("plain.o", Plain);

  std::vector<NewArchiveMember> Members;
  Members.emplace_back(MemoryBufferRef(NoCode, "nocode.o"));
  Members.emplace_back(MemoryBufferRef(Plain, "plain.o"));
  std::string ArPath = Dir.file("libnv.a");
  ASSERT_THAT_ERROR(writeArchive(ArPath, Members,
                                 SymtabWritingMode::NormalSymtab,
                                 object::Archive::K_GNU, true, false),
                    Succeeded());
  std::string TextPath = Dir.write("notes.txt", "not an object\n");

  Expected<NvccInputs> Inputs = findNvccInputs(
      {PlainPath, TwoPath, WholePath, ArPath, TextPath, Dir.file("missing.o")});
  ASSERT_THAT_EXPECTED(Inputs, Succeeded());
  const std::vector<NvccModule> *Found = &Inputs->Modules;
  ASSERT_EQ(Found->size(), 3u);
  EXPECT_EQ((*Found)[0].Id, "_a1_1_x_cu");
  EXPECT_EQ((*Found)[0].Origin, TwoPath);
  EXPECT_TRUE((*Found)[0].HasDeviceCode);
  EXPECT_EQ((*Found)[0].registerFunction(),
            "__cudaRegisterLinkedBinary_a1_1_x_cu");
  EXPECT_EQ((*Found)[1].Id, "_b2_1_y_cu");
  EXPECT_EQ((*Found)[2].Id, "_c3_1_z_cu");
  EXPECT_EQ((*Found)[2].Origin, ArPath + "(nocode.o)");
  EXPECT_FALSE((*Found)[2].HasDeviceCode);
  EXPECT_TRUE(Inputs->DeviceLinks.empty());

  std::string Bad =
      Dir.write("bad.o", object({}, {"__cudaRegisterLinkedBinary_9lives-\\n"}));
  EXPECT_THAT_EXPECTED(
      findNvccInputs({Bad}),
      FailedWithMessage(Bad + ": '__cudaRegisterLinkedBinary_9lives-\\n' "
                              "names no nvcc module id (an identifier after "
                              "__cudaRegisterLinkedBinary): the object is "
                              "corrupt or not from nvcc"));
}

TEST(NvccRegistration, FindsDeviceLinks) {
  TempDir Dir;
  std::string Module = object({{"__nv_relfatbin", RelFatbin}},
                              {"__cudaRegisterLinkedBinary_a1_1_x_cu"});
  // nvcc -dlink's output: the modules' functions defined, nothing else.
  std::string Dlink =
      object({{".text", "C3"}, {".nv_fatbin", RelFatbin}},
             {"__cudaRegisterFatBinary"}, {"__cudaRegisterLinkedBinary_a1_1_x_cu"});
  // One that defines more is not nvcc -dlink's: the link needs it.
  std::string Mixed = object(
      {{".text", "C3"}}, {}, {"__cudaRegisterLinkedBinary_b2_1_y_cu", "helper"});
  std::vector<NewArchiveMember> Members;
  Members.emplace_back(MemoryBufferRef(Module, "k.o"));
  Members.emplace_back(MemoryBufferRef(Dlink, "k_dlink.o"));
  std::string ArPath = Dir.file("libk.a");
  ASSERT_THAT_ERROR(writeArchive(ArPath, Members,
                                 SymtabWritingMode::NormalSymtab,
                                 object::Archive::K_GNU, true, false),
                    Succeeded());
  std::string MixedPath = Dir.write("mixed.o", Mixed);
  std::string DlinkPath = Dir.write("cmake_device_link.o", Dlink);

  Expected<NvccInputs> Found = findNvccInputs({MixedPath, ArPath, DlinkPath});
  ASSERT_THAT_EXPECTED(Found, Succeeded());
  ASSERT_EQ(Found->Modules.size(), 1u);
  EXPECT_EQ(Found->Modules[0].Origin, ArPath + "(k.o)");
  ASSERT_EQ(Found->DeviceLinks.size(), 2u);
  const NvccDeviceLink &Member = Found->DeviceLinks[0];
  EXPECT_EQ(Member.Input, 1u);
  EXPECT_EQ(Member.Member, std::optional<size_t>(1));
  EXPECT_EQ(Member.Origin, ArPath + "(k_dlink.o)");
  EXPECT_EQ(Member.Ids, std::vector<std::string>{"_a1_1_x_cu"});
  EXPECT_EQ(Found->DeviceLinks[1].Input, 2u);
  EXPECT_EQ(Found->DeviceLinks[1].Member, std::nullopt);

  // The archive without the member: the module's object and its symbol.
  Expected<std::string> Without = archiveWithout(ArPath, {1});
  ASSERT_THAT_EXPECTED(Without, Succeeded());
  Expected<std::unique_ptr<object::Archive>> Ar =
      object::Archive::create(MemoryBufferRef(*Without, "without"));
  ASSERT_THAT_EXPECTED(Ar, Succeeded());
  std::vector<std::string> Names;
  Error Err = Error::success();
  for (const object::Archive::Child &C : (*Ar)->children(Err)) {
    Expected<StringRef> Name = C.getName();
    ASSERT_THAT_EXPECTED(Name, Succeeded());
    Names.push_back(Name->str());
  }
  ASSERT_THAT_ERROR(std::move(Err), Succeeded());
  EXPECT_EQ(Names, std::vector<std::string>{"k.o"});
  EXPECT_FALSE((*Ar)->isThin());

  std::string Missing = Dir.file("missing.a");
  EXPECT_THAT_EXPECTED(archiveWithout(Missing, {0}),
                       FailedWithMessage("cannot read " + Missing +
                                         ": No such file or directory"));
}

} // namespace
