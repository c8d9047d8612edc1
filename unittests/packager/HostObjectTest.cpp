//===- unittests/packager/HostObjectTest.cpp - Host and offload objects ---===//
//
// The host object for x86-64 is linked with `cc` into a C program that walks
// the module descriptors (testdata/walk_modules.c) and run; the AArch64 one
// is read back with llvm-readelf. The offload object is read by
// llvm-objdump --offloading and linked by clang's new offload driver
// (clang-linker-wrapper). scanFile finds everything again, also inside an
// archive, whose walk (intake::forEachMember) is tested here too.
//
//===----------------------------------------------------------------------===//

#include "unittests/packager/TestUtil.h"

#include "intake/Intake.h"

#include "llvm/Object/ELFObjectFile.h"

using namespace llvm;
using namespace fatlink::packager;
using namespace fatlink::packager::test;

namespace {

std::string smallFatbin(const std::string &Dir) {
  auto Paths = buildDeviceCode(Dir, "sm_80");
  std::vector<FatbinImage> Images;
  for (const std::string &P : {Paths.second, Paths.first}) {
    auto ImgOrErr = describeImage(readFile(P));
    EXPECT_TRUE(bool(ImgOrErr)) << toString(ImgOrErr.takeError());
    if (ImgOrErr)
      Images.push_back(std::move(*ImgOrErr));
  }
  auto FatbinOrErr = writeFatbin(Images);
  EXPECT_TRUE(bool(FatbinOrErr)) << toString(FatbinOrErr.takeError());
  return FatbinOrErr ? *FatbinOrErr : std::string();
}

const std::vector<KernelInfo> Kernels = {{"scale", {8, 4}},
                                         {"saxpy", {4, 8, 8}}};

TEST(HostObject, LinksAndRunsOnX86_64) {
  std::string Dir = tempDir("host-x86");
  std::string Fatbin = smallFatbin(Dir);
  auto ObjOrErr = writeHostObject(Fatbin, Kernels, HostArch::X86_64);
  ASSERT_OK(ObjOrErr);
  // A second module with no kernels: the records must concatenate.
  auto Obj2OrErr = writeHostObject(Fatbin, {}, HostArch::X86_64);
  ASSERT_OK(Obj2OrErr);
  writeFile(Dir + "/mod1.o", *ObjOrErr);
  writeFile(Dir + "/mod2.o", *Obj2OrErr);
  runOk({envOr("CC", "cc"), "-I.", "-Wall", "-Werror",
         "unittests/packager/testdata/walk_modules.c", Dir + "/mod1.o",
         Dir + "/mod2.o", "-Wl,--gc-sections", "-o", Dir + "/walk"});
  std::string Out = runOk({Dir + "/walk"});
  std::string Size = std::to_string(Fatbin.size());
  EXPECT_EQ(Out, "module 0: fatbin " + Size + " bytes, 2 kernels\n"
                 "  saxpy(4,8,8)\n"
                 "  scale(8,4)\n"
                 "module 1: fatbin " + Size + " bytes, 0 kernels\n"
                 "2 modules\n");
}

TEST(HostObject, AArch64Relocations) {
  std::string Dir = tempDir("host-aarch64");
  auto ObjOrErr =
      writeHostObject(smallFatbin(Dir), Kernels, HostArch::AArch64);
  ASSERT_OK(ObjOrErr);
  writeFile(Dir + "/mod.o", *ObjOrErr);
  std::string Out = runOk({llvmTool("llvm-readelf"), "-h", "-S", "-r",
                           Dir + "/mod.o"});
  EXPECT_NE(Out.find("Machine:                           AArch64"),
            std::string::npos) << Out;
  // The wrapper's data pointer: R_AARCH64_ABS64 against .nv_fatbin + 0.
  size_t Rela = Out.find("Relocation section '.rela.nvFatBinSegment'");
  ASSERT_NE(Rela, std::string::npos) << Out;
  std::string Line = Out.substr(Out.find("\n0000", Rela) + 1);
  Line = Line.substr(0, Line.find('\n'));
  EXPECT_NE(Line.find("0000000000000008"), std::string::npos) << Line;
  EXPECT_NE(Line.find("R_AARCH64_ABS64"), std::string::npos) << Line;
  EXPECT_NE(Line.find(".nv_fatbin + 0"), std::string::npos) << Line;
  EXPECT_NE(Out.find("Relocation section '.relafatlink_modules'"),
            std::string::npos) << Out;
  EXPECT_EQ(Out.find("R_X86_64"), std::string::npos) << Out;
}

// The one named symbol: the wrapper's, weak and hidden, named by the
// fatbin's content, for host code generated for this link (fatlink cc's
// nvcc registration, docs/nvcc-host.md).
TEST(HostObject, DefinesItsWrapperSymbol) {
  std::string Fatbin = smallFatbin(tempDir("host-sym"));
  std::string Name = wrapperSymbol(Fatbin);
  EXPECT_EQ(Name.size(), strlen("__fatlink_wrapper_") + 16);
  EXPECT_EQ(StringRef(Name).take_front(18), "__fatlink_wrapper_");
  std::string Other = Fatbin;
  Other.back() ^= 1;
  EXPECT_NE(wrapperSymbol(Other), Name);
  EXPECT_EQ(wrapperSymbol(Fatbin), Name);

  for (HostArch Arch : {HostArch::X86_64, HostArch::AArch64}) {
    auto ObjOrErr = writeHostObject(Fatbin, Kernels, Arch);
    ASSERT_OK(ObjOrErr);
    auto FileOrErr = object::ObjectFile::createObjectFile(
        MemoryBufferRef(*ObjOrErr, "host.o"));
    ASSERT_OK(FileOrErr);
    auto *Elf = cast<object::ELF64LEObjectFile>(FileOrErr->get());
    unsigned Named = 0;
    for (const object::ELFSymbolRef &Sym : Elf->symbols()) {
      if (Sym.getELFType() == ELF::STT_SECTION)
        continue;
      Expected<StringRef> SymName = Sym.getName();
      ASSERT_OK(SymName);
      if (SymName->empty())
        continue; // the null symbol
      ++Named;
      EXPECT_EQ(*SymName, Name);
      EXPECT_EQ(Sym.getBinding(), ELF::STB_WEAK);
      EXPECT_EQ(Sym.getOther(), ELF::STV_HIDDEN);
      EXPECT_EQ(Sym.getELFType(), ELF::STT_OBJECT);
      EXPECT_EQ(Sym.getSize(), 24u);
      Expected<uint64_t> Value = Sym.getValue();
      ASSERT_OK(Value);
      EXPECT_EQ(*Value, 0u);
      Expected<object::section_iterator> Sec = Sym.getSection();
      ASSERT_OK(Sec);
      Expected<StringRef> SecName = (*Sec)->getName();
      ASSERT_OK(SecName);
      EXPECT_EQ(*SecName, ".nvFatBinSegment");
    }
    EXPECT_EQ(Named, 1u);
  }
}

TEST(HostObject, Errors) {
  EXPECT_EQ(errorOf(writeHostObject("not a fatbin at all", {},
                                    HostArch::X86_64)),
            "data to embed is not a fatbin (no magic 0xba55ed50)");
  std::string Dir = tempDir("host-errors");
  std::string Fatbin = smallFatbin(Dir);
  EXPECT_EQ(errorOf(writeHostObject(Fatbin, {{"k", {}}, {"k", {4}}},
                                    HostArch::X86_64)),
            "kernel 'k' is listed twice");
  EXPECT_EQ(errorOf(writeHostObject(Fatbin, {{"", {}}}, HostArch::X86_64)),
            "kernel name '' is empty or holds a NUL");
}

// readModuleManifests reads back what writeHostObject wrote, through
// either arch's relocations: the table in name order, each manifest whole,
// a kernel without one as such. (fuzz/hostobj_roundtrip fuzzes the same.)
TEST(HostObject, ManifestsReadBack) {
  std::string Fatbin = smallFatbin(tempDir("host-manifest"));
  std::vector<KernelInfo> WithManifest = Kernels;
  KernelInfo &Scale = WithManifest[0];
  Scale.Origin = "libk.rlib(k.rcgu.o)";
  Scale.Manifest.Language = FATLINK_LANGUAGE_RUST;
  Scale.Manifest.MaxThreads[0] = 256;
  Scale.Manifest.Cluster[1] = 2;
  ParamInfo Ptr;
  Ptr.Kind = FATLINK_PARAM_POINTER;
  Ptr.Flags = FATLINK_PARAM_CONST;
  Ptr.ElemKind = FATLINK_PARAM_FLOAT;
  Ptr.Size = Ptr.Align = 8;
  Ptr.ElemSize = 4;
  Ptr.Type = "*const f32";
  Ptr.Name = "x";
  ParamInfo N;
  N.Kind = FATLINK_PARAM_UINT;
  N.Size = N.Align = 4;
  N.Type = "u32";
  Scale.Manifest.Params = {Ptr, N};
  for (HostArch Arch : {HostArch::X86_64, HostArch::AArch64}) {
    auto ObjOrErr = writeHostObject(Fatbin, WithManifest, Arch);
    ASSERT_OK(ObjOrErr);
    auto ModsOrErr = readModuleManifests(*ObjOrErr, "k.o");
    ASSERT_OK(ModsOrErr);
    ASSERT_EQ(ModsOrErr->size(), 1u);
    const ModuleManifest &M = (*ModsOrErr)[0];
    EXPECT_TRUE(M.Known && M.hasManifest());
    EXPECT_EQ(M.FatbinSize, Fatbin.size());
    ASSERT_EQ(M.Kernels.size(), 2u);
    const ManifestKernel &Saxpy = M.Kernels[0], &Read = M.Kernels[1];
    EXPECT_EQ(Saxpy.Info.Name, "saxpy");
    EXPECT_EQ(Saxpy.Info.ParamSizes, (std::vector<uint32_t>{4, 8, 8}));
    EXPECT_EQ(Saxpy.ManifestVersion, 0u);
    EXPECT_EQ(Read.Info.Name, "scale");
    EXPECT_EQ(Read.ManifestVersion, FATLINK_MANIFEST_VERSION);
    EXPECT_EQ(Read.Info.Origin, Scale.Origin);
    const KernelManifest &RM = Read.Info.Manifest;
    EXPECT_EQ(RM.Language, FATLINK_LANGUAGE_RUST);
    EXPECT_EQ(RM.MaxThreads[0], 256u);
    EXPECT_EQ(RM.Cluster[1], 2u);
    ASSERT_EQ(RM.Params.size(), 2u);
    EXPECT_EQ(RM.Params[0].Kind, FATLINK_PARAM_POINTER);
    EXPECT_EQ(RM.Params[0].Flags, FATLINK_PARAM_CONST);
    EXPECT_EQ(RM.Params[0].ElemKind, FATLINK_PARAM_FLOAT);
    EXPECT_EQ(RM.Params[0].ElemSize, 4u);
    EXPECT_EQ(RM.Params[0].Type, "*const f32");
    EXPECT_EQ(RM.Params[0].Name, "x");
    EXPECT_EQ(RM.Params[1].Kind, FATLINK_PARAM_UINT);
    EXPECT_EQ(RM.Params[1].Type, "u32");
    EXPECT_EQ(RM.Params[1].Name, "");
  }
  // Not an ELF file: an error naming it.
  auto NoneOrErr = readModuleManifests(Fatbin, "k.fatbin");
  EXPECT_EQ(errorOf(std::move(NoneOrErr)),
            "k.fatbin: not an ELF object, executable or shared library, nor "
            "an archive of them");
}

TEST(Scan, FindsFatbinsInObjectsAndArchives) {
  std::string Dir = tempDir("scan");
  std::string Fatbin = smallFatbin(Dir);
  auto ObjOrErr = writeHostObject(Fatbin, Kernels, HostArch::X86_64);
  ASSERT_OK(ObjOrErr);
  writeFile(Dir + "/mod.o", *ObjOrErr);
  writeFile(Dir + "/notes.txt", "not an object\n");
  runOk({llvmTool("llvm-ar"), "rcs", Dir + "/libmod.a", Dir + "/notes.txt",
         Dir + "/mod.o"});
  auto ImagesOrErr = scanFile(readFile(Dir + "/libmod.a"), "libmod.a");
  ASSERT_OK(ImagesOrErr);
  ASSERT_EQ(ImagesOrErr->size(), 2u);
  const EmbeddedImage &C = (*ImagesOrErr)[0];
  EXPECT_EQ(C.Origin, "libmod.a(mod.o)");
  EXPECT_EQ(C.Section, ".nv_fatbin");
  EXPECT_EQ(C.Offset, 16u);
  EXPECT_EQ(C.Kind, "cubin");
  EXPECT_EQ(C.Arch, "sm_80");
  EXPECT_EQ((*ImagesOrErr)[1].Kind, "ptx");

  auto BareOrErr = scanFile(Fatbin, "a.fatbin");
  ASSERT_OK(BareOrErr);
  ASSERT_EQ(BareOrErr->size(), 2u);
  EXPECT_EQ((*BareOrErr)[0].Section, "");
  EXPECT_EQ((*BareOrErr)[0].Data, C.Data);

  EXPECT_EQ(errorOf(scanFile("hello", "x.txt")),
            "x.txt: not a fatbin, OffloadBinary, ELF file or archive");
  // A fatbin section that is cut short names the file, section and offset.
  auto BrokenObj = writeHostObject(Fatbin, {}, HostArch::X86_64);
  ASSERT_OK(BrokenObj);
  std::string Obj = *BrokenObj;
  size_t At = Obj.find(Fatbin.substr(0, 64));
  ASSERT_NE(At, std::string::npos);
  Obj[At + 8] = char(0xff); // entries size low byte: now past the section
  EXPECT_EQ(StringRef(errorOf(scanFile(Obj, "m.o"))).take_front(56),
            "'m.o section .nv_fatbin': fatbin at offset 0x0 declares ");
}

//===----------------------------------------------------------------------===//
// Offload objects
//===----------------------------------------------------------------------===//

std::string cudaBitcode(const std::string &Dir) {
  std::string Cu = Dir + "/kern.cu";
  writeFile(Cu, "extern \"C\" __device__ float twice(float x) {\n"
                "  return 2.0f * x;\n}\n");
  std::string Bc = Dir + "/kern.bc";
  runOk({llvmTool("clang++"), "-x", "cuda",
         "--cuda-path=" + envOr("CUDA_PATH", "/usr/local/cuda"),
         "-Wno-unknown-cuda-version", "--cuda-device-only",
         "--offload-arch=sm_80", "-fgpu-rdc", "-O2", "-emit-llvm", "-c", Cu,
         "-o", Bc});
  return readFile(Bc);
}

TEST(OffloadObject, ReadByObjdumpAndLinkedByClang) {
  std::string Dir = tempDir("offload");
  std::string Bitcode = cudaBitcode(Dir);
  OffloadImage Img;
  Img.Arch = "sm_80";
  Img.Bitcode = Bitcode;
  auto ObjOrErr = writeOffloadObject({Img}, HostArch::X86_64);
  ASSERT_OK(ObjOrErr);
  writeFile(Dir + "/dev.o", *ObjOrErr);

  std::string Sections =
      runOk({llvmTool("llvm-readelf"), "-S", "-W", Dir + "/dev.o"});
  EXPECT_NE(Sections.find(".llvm.offloading  LLVM_OFFLOADING"),
            std::string::npos) << Sections;
  std::string Dump =
      runOk({llvmTool("llvm-objdump"), "--offloading", Dir + "/dev.o"});
  EXPECT_NE(Dump.find("kind            llvm ir"), std::string::npos) << Dump;
  EXPECT_NE(Dump.find("arch            sm_80"), std::string::npos) << Dump;
  EXPECT_NE(Dump.find("triple          nvptx64-nvidia-cuda"),
            std::string::npos) << Dump;
  EXPECT_NE(Dump.find("producer        cuda"), std::string::npos) << Dump;

  // clang's new driver: a kernel in main.cu calls the device function in
  // our object, so clang-linker-wrapper must take our bitcode into its
  // device link (an undefined `twice` fails it), then runs fatbinary.
  std::string Main = Dir + "/main.cu";
  writeFile(Main, "extern \"C\" __device__ float twice(float);\n"
                  "extern \"C\" __global__ void k(float *p) {\n"
                  "  p[0] = twice(p[0]);\n}\n"
                  "int main() { k<<<1, 1>>>(nullptr); return 0; }\n");
  runOk({llvmTool("clang++"), "--offload-new-driver", "-fgpu-rdc",
         "-foffload-lto", "--offload-arch=sm_80",
         "--cuda-path=" + envOr("CUDA_PATH", "/usr/local/cuda"),
         "-Wno-unknown-cuda-version", Main, Dir + "/dev.o",
         "-L" + envOr("CUDA_PATH", "/usr/local/cuda") + "/lib64", "-lcudart",
         "-o", Dir + "/app"});
  auto ImagesOrErr = scanFile(readFile(Dir + "/app"), "app");
  ASSERT_OK(ImagesOrErr);
  bool HasKernel = false;
  for (const EmbeddedImage &I : *ImagesOrErr)
    HasKernel |= I.Kind == "cubin" && I.Arch == "sm_80" &&
                 I.Data.find(".text.k") != std::string::npos;
  EXPECT_TRUE(HasKernel) << "no sm_80 cubin with kernel k in the linked app";

  auto ScanOrErr = scanFile(*ObjOrErr, "dev.o");
  ASSERT_OK(ScanOrErr);
  ASSERT_EQ(ScanOrErr->size(), 1u);
  EXPECT_EQ((*ScanOrErr)[0].Section, ".llvm.offloading");
  EXPECT_EQ((*ScanOrErr)[0].Kind, "bc");
  EXPECT_EQ((*ScanOrErr)[0].Arch, "sm_80");
  EXPECT_EQ((*ScanOrErr)[0].Triple, "nvptx64-nvidia-cuda");
  EXPECT_EQ((*ScanOrErr)[0].Data, Bitcode);
}

/// The members intake::forEachMember hands out: (name, bytes, owned).
struct Walked {
  std::string Name, Bytes;
  bool Owned;
};

static Expected<std::vector<Walked>> walk(StringRef Archive, StringRef Path,
                                          fatlink::intake::ThinArchive Thin) {
  std::vector<Walked> Out;
  Error E = fatlink::intake::forEachMember(
      MemoryBufferRef(Archive, Path), Path, Thin,
      [&](fatlink::intake::Member &M) {
        Out.push_back({M.Name.str(), M.Data.getBuffer().str(), bool(M.Owned)});
        return Error::success();
      });
  if (E)
    return std::move(E);
  return Out;
}

// The archive walk the link commands (lto::readInputs) and scanFile share:
// every member with its name and bytes, rlib metadata included (what is
// device code is the caller's to decide).
TEST(OffloadObject, WalksArchives) {
  using fatlink::intake::ThinArchive;
  std::string Dir = tempDir("collect");
  std::string Bitcode = cudaBitcode(Dir);
  writeFile(Dir + "/k.rcgu.o", Bitcode);
  writeFile(Dir + "/lib.rmeta", "rust metadata, not bitcode");
  runOk({llvmTool("llvm-ar"), "rc", Dir + "/libk.rlib", Dir + "/lib.rmeta",
         Dir + "/k.rcgu.o"});
  auto MembersOrErr =
      walk(readFile(Dir + "/libk.rlib"), "libk.rlib", ThinArchive::Refuse);
  ASSERT_OK(MembersOrErr);
  ASSERT_EQ(MembersOrErr->size(), 2u);
  EXPECT_EQ((*MembersOrErr)[0].Name, "lib.rmeta");
  EXPECT_EQ((*MembersOrErr)[0].Bytes, "rust metadata, not bitcode");
  EXPECT_EQ((*MembersOrErr)[1].Name, "k.rcgu.o");
  EXPECT_EQ((*MembersOrErr)[1].Bytes, Bitcode);
  EXPECT_FALSE((*MembersOrErr)[1].Owned);

  // A thin archive names its members' files: scanFile (inspect) opens none
  // of them (the member file exists, so a reader that followed it would
  // succeed).
  runOk({llvmTool("llvm-ar"), "rcT", Dir + "/libthin.a", Dir + "/k.rcgu.o",
         Dir + "/lib.rmeta"});
  std::string ThinPath = Dir + "/libthin.a", Thin = readFile(ThinPath);
  // (llvm-ar keeps the absolute paths it was given.)
  std::string ThinError = ThinPath +
                          ": thin archive: its members are files elsewhere (" +
                          Dir + "/k.rcgu.o, " + Dir +
                          "/lib.rmeta), which are not followed here: pass "
                          "those files instead";
  EXPECT_EQ(errorOf(walk(Thin, ThinPath, ThinArchive::Refuse)), ThinError);
  EXPECT_EQ(errorOf(scanFile(Thin, ThinPath)), ThinError);
  // The link commands follow it, as ld does, and get the files' bytes.
  auto FollowedOrErr = walk(Thin, ThinPath, ThinArchive::Follow);
  ASSERT_OK(FollowedOrErr);
  ASSERT_EQ(FollowedOrErr->size(), 2u);
  EXPECT_EQ((*FollowedOrErr)[0].Bytes, Bitcode);
  EXPECT_TRUE((*FollowedOrErr)[0].Owned);

  // Not an archive at all.
  EXPECT_EQ(StringRef(errorOf(walk("text", "x.o", ThinArchive::Refuse)))
                .take_front(22),
            "x.o: corrupt archive: ");
  OffloadImage NoArch;
  NoArch.Bitcode = Bitcode;
  EXPECT_EQ(errorOf(writeOffloadObject({NoArch}, HostArch::X86_64)),
            "device bitcode for nvptx64-nvidia-cuda has no arch");
}

} // namespace
