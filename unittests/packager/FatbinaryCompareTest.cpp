//===- unittests/packager/FatbinaryCompareTest.cpp - Against NVIDIA's tools ===//
//
// Builds PTX (llc) and cubins (ptxas) from testdata/scale.ll at test time,
// packs them with fatlink's writer and with CUDA's `fatbinary`, and checks
// that the two agree byte for byte, uncompressed and with zstd (fatlink
// links zstd >= 1.5.7, the compressor inside fatbinary). NVIDIA's
// cuobjdump (installed by cuobjdump_test.sh) must list and extract what
// fatlink writes, bare and inside a host object. (The sizes quoted in
// docs/packager.md come from bench/fatbin_sizes.sh.)
//
//===----------------------------------------------------------------------===//

#include "unittests/packager/TestUtil.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/MathExtras.h"

using namespace llvm;
using namespace fatlink::packager;
using namespace fatlink::packager::test;

namespace {

std::string fatbinary(const std::string &Dir, const std::string &Cubin,
                      const std::string &Ptx, const std::string &Sm,
                      const std::string &Mode) {
  std::string Out = Dir + "/fatbinary." + Mode + ".fatbin";
  runOk({cudaTool("fatbinary"), "-64", "--create", Out,
         "--image3=kind=elf,sm=" + Sm + ",file=" + Cubin,
         "--image3=kind=ptx,sm=" + Sm + ",file=" + Ptx,
         "--compress-mode=" + Mode});
  return readFile(Out);
}

std::vector<FatbinImage> describe(const std::string &Cubin,
                                  const std::string &Ptx) {
  std::vector<FatbinImage> Images;
  for (const std::string &Path : {Cubin, Ptx}) {
    auto ImgOrErr = describeImage(readFile(Path));
    EXPECT_TRUE(bool(ImgOrErr)) << toString(ImgOrErr.takeError());
    if (ImgOrErr)
      Images.push_back(std::move(*ImgOrErr));
  }
  return Images;
}

std::vector<FatbinEntry> read(StringRef Fatbin) {
  auto EntriesOrErr = readFatbin(Fatbin);
  EXPECT_TRUE(bool(EntriesOrErr)) << toString(EntriesOrErr.takeError());
  return EntriesOrErr ? std::move(*EntriesOrErr) : std::vector<FatbinEntry>();
}

class FatbinaryCompare : public ::testing::Test {
protected:
  void SetUp() override {
    Dir = tempDir("fatbinary-compare");
    std::tie(Ptx, Cubin) = buildDeviceCode(Dir, "sm_80");
  }
  std::string Dir, Ptx, Cubin;
};

TEST_F(FatbinaryCompare, DescribesRealImages) {
  auto Images = describe(Cubin, Ptx);
  ASSERT_EQ(Images.size(), 2u);
  EXPECT_EQ(Images[0].Kind, ImageKind::Cubin);
  EXPECT_EQ(Images[0].Arch, "sm_80");
  EXPECT_EQ(Images[0].Major, 1u);
  EXPECT_EQ(Images[0].Minor, 8u);
  EXPECT_EQ(Images[1].Kind, ImageKind::PTX);
  EXPECT_EQ(Images[1].Arch, "sm_80");
  EXPECT_EQ(Images[1].Major, 7u);
  EXPECT_EQ(Images[1].Minor, 0u);

  // e_flags cannot tell sm_90 from sm_90a or sm_100 from sm_100f.
  for (const char *Arch : {"sm_90", "sm_90a"}) {
    auto Paths = buildDeviceCode(Dir, Arch);
    auto ImgOrErr = describeImage(readFile(Paths.second));
    ASSERT_OK(ImgOrErr);
    EXPECT_EQ(ImgOrErr->Arch, Arch);
  }
  auto Sm100 = buildDeviceCode(Dir, "sm_100");
  std::string Text = readFile(Sm100.first);
  size_t At = Text.find(".target sm_100\n");
  ASSERT_NE(At, std::string::npos);
  Text.replace(At, 15, ".target sm_100f\n");
  At = Text.find(".version ");
  ASSERT_NE(At, std::string::npos);
  Text.replace(At, 12, ".version 8.8");
  writeFile(Dir + "/f.ptx", Text);
  runOk({cudaTool("ptxas"), "-arch=sm_100f", Dir + "/f.ptx", "-o",
         Dir + "/f.cubin"});
  auto ImgOrErr = describeImage(readFile(Dir + "/f.cubin"));
  ASSERT_OK(ImgOrErr);
  EXPECT_EQ(ImgOrErr->Arch, "sm_100f");
  auto PtxOrErr = describeImage(Text);
  ASSERT_OK(PtxOrErr);
  EXPECT_EQ(PtxOrErr->Arch, "sm_100f");
}

TEST_F(FatbinaryCompare, UncompressedIsByteIdentical) {
  FatbinOptions Opts;
  Opts.Compress = Compression::None;
  auto OursOrErr = writeFatbin(describe(Cubin, Ptx), Opts);
  ASSERT_OK(OursOrErr);
  std::string Theirs = fatbinary(Dir, Cubin, Ptx, "80", "none");
  EXPECT_EQ(*OursOrErr, Theirs);
}

TEST_F(FatbinaryCompare, ZstdMatchesSizeMode) {
  auto OursOrErr = writeFatbin(describe(Cubin, Ptx), FatbinOptions());
  ASSERT_OK(OursOrErr);
  std::string TheirBytes = fatbinary(Dir, Cubin, Ptx, "80", "size");
  // zstd >= 1.5.7 at level 19 is the compressor fatbinary carries: the
  // whole container comes out byte for byte the same.
  EXPECT_EQ(*OursOrErr, TheirBytes);
  std::vector<FatbinEntry> Ours = read(*OursOrErr);
  std::vector<FatbinEntry> Theirs = read(TheirBytes);
  ASSERT_EQ(Ours.size(), 2u);
  ASSERT_EQ(Theirs.size(), 2u);
  for (size_t I = 0; I < 2; ++I) {
    SCOPED_TRACE("entry " + std::to_string(I));
    EXPECT_EQ(Ours[I].Kind, Theirs[I].Kind);
    EXPECT_EQ(Ours[I].Arch, Theirs[I].Arch);
    EXPECT_EQ(Ours[I].Major, Theirs[I].Major);
    EXPECT_EQ(Ours[I].Minor, Theirs[I].Minor);
    EXPECT_EQ(Ours[I].Flags, 0x8011u);
    EXPECT_EQ(Ours[I].Flags, Theirs[I].Flags);
    EXPECT_EQ(Ours[I].HeaderSize, Theirs[I].HeaderSize);
    EXPECT_EQ(Ours[I].UncompressedSize, Theirs[I].UncompressedSize);
    EXPECT_EQ(Ours[I].Payload, Theirs[I].Payload);
    EXPECT_EQ(Ours[I].StoredSize, Theirs[I].StoredSize);
  }
}

TEST_F(FatbinaryCompare, ZstdIsByteIdenticalAcrossGenerations) {
  // One fatbin holding a cubin per generation (sm_100+ with their
  // .nv.compat header) plus PTX, against fatbinary with the same images in
  // the same order.
  std::vector<std::string> Args = {cudaTool("fatbinary"), "-64", "--create",
                                   Dir + "/gens.fatbin",
                                   "--compress-mode=size"};
  std::vector<std::string> Paths;
  for (const char *Arch : {"sm_75", "sm_90a", "sm_100", "sm_120"}) {
    auto [P, C] = buildDeviceCode(Dir, Arch);
    StringRef Sm = StringRef(Arch).drop_front(3);
    Args.push_back("--image3=kind=elf,sm=" + Sm.str() + ",file=" + C);
    Paths.push_back(C);
    if (StringRef(Arch) == "sm_120") {
      Args.push_back("--image3=kind=ptx,sm=" + Sm.str() + ",file=" + P);
      Paths.push_back(P);
    }
  }
  runOk(Args);
  std::vector<FatbinImage> Images;
  for (const std::string &Path : Paths) {
    auto ImgOrErr = describeImage(readFile(Path));
    ASSERT_OK(ImgOrErr);
    Images.push_back(std::move(*ImgOrErr));
  }
  auto OursOrErr = writeFatbin(Images, FatbinOptions());
  ASSERT_OK(OursOrErr);
  std::string Theirs = readFile(Dir + "/gens.fatbin");
  EXPECT_EQ(OursOrErr->size(), Theirs.size());
  EXPECT_EQ(*OursOrErr, Theirs);
}

TEST_F(FatbinaryCompare, ReadsEveryFatbinaryMode) {
  // LZ4 (speed), zstd (default, size, balance) and none all decode to the
  // same images.
  std::vector<FatbinEntry> Plain =
      read(fatbinary(Dir, Cubin, Ptx, "80", "none"));
  ASSERT_EQ(Plain.size(), 2u);
  for (const char *Mode : {"default", "size", "speed", "balance"}) {
    SCOPED_TRACE(Mode);
    std::vector<FatbinEntry> Entries =
        read(fatbinary(Dir, Cubin, Ptx, "80", Mode));
    ASSERT_EQ(Entries.size(), 2u);
    for (size_t I = 0; I < 2; ++I) {
      std::string Expected = Plain[I].Payload;
      if (Entries[I].UncompressedSize)
        Expected.resize(Entries[I].UncompressedSize);
      EXPECT_EQ(Entries[I].Payload, Expected);
    }
  }
  EXPECT_EQ(read(fatbinary(Dir, Cubin, Ptx, "80", "speed"))[1].Flags,
            0x2011u);
}

TEST_F(FatbinaryCompare, MinifiesPtxLikeFatbinary) {
  // The corner cases of Ptx.Minify, run through fatbinary itself.
  std::string Text = ".version 7.0\n.target sm_80\n"
                     "\t// .globl\tk // begin\n\tld.param.b64 \t%rd1, [p];\n"
                     "a  /* c */  b\t\t/* multi\nline */ c\n"
                     "\t/* c */\tfoo\n  /**/x\n"
                     "x\"y // z\"w\n\"a\\\"//b\" y\r\n"
                     "tab\there  \n/* a */ /* b */ z\n\t\n";
  writeFile(Dir + "/tricky.ptx", Text);
  std::string Out = Dir + "/tricky.fatbin";
  runOk({cudaTool("fatbinary"), "-64", "--create", Out,
         "--image3=kind=ptx,sm=80,file=" + Dir + "/tricky.ptx",
         "--compress-mode=none"});
  std::vector<FatbinEntry> Entries = read(readFile(Out));
  ASSERT_EQ(Entries.size(), 1u);
  std::string Expected = minifyPtx(Text) + '\0';
  Expected.resize(alignTo(Expected.size(), 8), '\0');
  EXPECT_EQ(Entries[0].Payload, Expected);
}

TEST_F(FatbinaryCompare, CuobjdumpReadsOurFatbins) {
  std::string Cuobjdump = envOr("CUOBJDUMP", "");
  ASSERT_FALSE(Cuobjdump.empty())
      << "CUOBJDUMP is not set: run through cuobjdump_test.sh";
  std::vector<FatbinImage> Images = describe(Cubin, Ptx);
  for (Compression C : {Compression::None, Compression::Zstd}) {
    FatbinOptions Opts;
    Opts.Compress = C;
    auto FatbinOrErr = writeFatbin(Images, Opts);
    ASSERT_OK(FatbinOrErr);
    auto ObjOrErr = writeHostObject(*FatbinOrErr, {{"saxpy", {4, 8, 8}}},
                                    HostArch::X86_64);
    ASSERT_OK(ObjOrErr);
    std::string Sub = Dir + (C == Compression::None ? "/none" : "/zstd");
    tempDir(Sub.substr(Dir.size() - std::string("fatbinary-compare").size()));
    writeFile(Sub + "/ours.fatbin", *FatbinOrErr);
    writeFile(Sub + "/ours.o", *ObjOrErr);
    for (const char *File : {"ours.fatbin", "ours.o"}) {
      SCOPED_TRACE(File);
      std::string List =
          runOk({Cuobjdump, "-lelf", "-lptx", Sub + "/" + File});
      EXPECT_NE(List.find("ELF file    1: "), std::string::npos) << List;
      EXPECT_NE(List.find(".sm_80.cubin"), std::string::npos) << List;
      EXPECT_NE(List.find("PTX file    1: "), std::string::npos) << List;
      EXPECT_NE(List.find(".sm_80.ptx"), std::string::npos) << List;
    }
    // Extract both images and compare them with what went in.
    runOk({"/bin/sh", "-c",
           "cd '" + Sub + "' && '" + Cuobjdump +
               "' -xelf all -xptx all ours.fatbin"});
    std::error_code EC;
    std::string GotCubin, GotPtx;
    for (sys::fs::directory_iterator It(Sub, EC), End; It != End && !EC;
         It.increment(EC)) {
      StringRef Path = It->path();
      if (Path.ends_with(".cubin"))
        GotCubin = readFile(Path.str());
      else if (Path.ends_with(".ptx"))
        GotPtx = readFile(Path.str());
    }
    EXPECT_EQ(GotCubin, Images[0].Data);
    // cuobjdump writes the stored text, without the NUL.
    EXPECT_EQ(GotPtx, minifyPtx(Images[1].Data));
  }
}

// A cubin over 32 MB is compressed in 4 MB steps, a frame of its own
// (docs/packager.md, "Cubins over 32 MB"): NVIDIA's cuobjdump must read it
// back to the same bytes. The real cubin made 40 MB larger, at level 1:
// compressible bytes between its sections and its header tables (ptxas
// puts both tables after the sections; cuobjdump extracts an ELF up to
// the end of its tables), the tables' offsets moved past them.
TEST_F(FatbinaryCompare, CuobjdumpReadsACubinCompressedInSteps) {
  std::string Cuobjdump = envOr("CUOBJDUMP", "");
  ASSERT_FALSE(Cuobjdump.empty())
      << "CUOBJDUMP is not set: run through cuobjdump_test.sh";
  std::string Small = readFile(Cubin);
  ASSERT_GE(Small.size(), 64u);
  uint64_t PhOff = support::endian::read64le(Small.data() + 0x20);
  uint64_t ShOff = support::endian::read64le(Small.data() + 0x28);
  uint64_t At = std::min(PhOff, ShOff);
  ASSERT_LE(At, Small.size());
  std::string Gap;
  for (uint64_t X = 7; Gap.size() < (40u << 20);) {
    X = X * 6364136223846793005ULL + 1442695040888963407ULL;
    Gap += "k" + std::to_string((X >> 33) % 5000) + ' ';
  }
  Gap.resize(alignTo(Gap.size(), 8), ' ');
  std::string Large = Small.substr(0, At) + Gap + Small.substr(At);
  support::endian::write64le(Large.data() + 0x20, PhOff + Gap.size());
  support::endian::write64le(Large.data() + 0x28, ShOff + Gap.size());
  auto ImgOrErr = describeImage(Large);
  ASSERT_OK(ImgOrErr);
  FatbinOptions Opts;
  Opts.ZstdLevel = 1;
  auto FatbinOrErr = writeFatbin({*ImgOrErr}, Opts);
  ASSERT_OK(FatbinOrErr);
  std::vector<FatbinEntry> Entries = read(*FatbinOrErr);
  ASSERT_EQ(Entries.size(), 1u);
  EXPECT_EQ(Entries[0].Flags & 0x8000, 0x8000u); // zstd
  EXPECT_LT(Entries[0].StoredSize, Large.size() / 2);
  std::string Sub = Dir + "/large";
  tempDir(Sub.substr(Dir.size() - std::string("fatbinary-compare").size()));
  writeFile(Sub + "/large.fatbin", *FatbinOrErr);
  runOk({"/bin/sh", "-c",
         "cd '" + Sub + "' && '" + Cuobjdump + "' -xelf all large.fatbin"});
  std::string Got;
  std::error_code EC;
  for (sys::fs::directory_iterator It(Sub, EC), End; It != End && !EC;
       It.increment(EC))
    if (StringRef(It->path()).ends_with(".cubin"))
      Got = readFile(It->path());
  EXPECT_TRUE(Got == Large) << "cuobjdump extracted " << Got.size()
                            << " bytes of " << Large.size();
}

} // namespace
