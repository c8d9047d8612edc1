//===- unittests/codegen/CubinSplitTest.cpp - Shared ptxas runs, cut apart ===//
//
// splitBatchCubin on the cubins the real ptxas makes: testdata/cuda sources
// compiled to PTX by clang, assembled by `ptxas -c` one by one and all in
// one run. Each piece cut from the shared run must be, byte for byte, what
// canonicalCubin makes of the input's own run, and nvlink must link the
// pieces into the cubin it links from ptxas's own files. What the cut
// cannot divide is refused by name; damaged cubins are errors, never
// crashes.
//
//===----------------------------------------------------------------------===//

#include "codegen/Codegen.h"
#include "unittests/packager/TestUtil.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Object/ELF.h"

using namespace llvm;
using namespace fatlink;
using namespace fatlink::packager::test;

namespace {

/// PTX for Arch from testdata/cuda/<Unit>.cu, by clang.
std::string ptxOf(const std::string &Dir, const std::string &Unit,
                  const std::string &Arch) {
  std::string Out = Dir + "/" + Unit + "." + Arch + ".ptx";
  runOk({llvmTool("clang++"), "-x", "cuda",
         "--cuda-path=" + envOr("CUDA_PATH", "/usr/local/cuda"),
         "-Wno-unknown-cuda-version", "--cuda-device-only", "-O3",
         "--offload-arch=" + Arch, "-Itestdata/cuda", "-S",
         "testdata/cuda/" + Unit + ".cu", "-o", Out});
  return Out;
}

/// `ptxas -c` of Ptx files for Arch, as fatlink runs it, into Out.
void ptxas(const std::vector<std::string> &Ptx, const std::string &Arch,
           const std::string &Out) {
  std::vector<std::string> Argv = {cudaTool("ptxas"), "-arch=" + Arch, "-O3",
                                   "-c"};
  append_range(Argv, Ptx);
  append_range(
      Argv, std::vector<std::string>{"-o", Out, codegen::PtxasSpillFlag.str()});
  runOk(Argv);
}

/// nvlink's cubin for Arch from relocatable cubin files.
std::string nvlink(const std::vector<std::string> &Cubins,
                   const std::string &Arch, const std::string &Out) {
  std::vector<std::string> Argv = {cudaTool("nvlink"), "-arch=" + Arch};
  append_range(Argv, Cubins);
  append_range(Argv, std::vector<std::string>{"-o", Out});
  runOk(Argv);
  return readFile(Out);
}

/// Units whose PTX may share a run (sharedRunFunctions): kernels,
/// device-function calls (.nv.callgraph, .nv.prototype), shared memory,
/// inline PTX, arch-gated code.
const std::vector<std::string> Shareable = {
    "unit_a",       "unit_b",         "alias",       "arch_gated",
    "arch_variant", "inline_ptx_isa", "bf16_convert"};

struct Units {
  std::vector<std::string> Ptx;
  std::vector<std::vector<std::string>> Functions;
};

Units prepare(const std::string &Dir, const std::vector<std::string> &Names,
              const std::string &PtxArch) {
  Units R;
  for (const std::string &U : Names) {
    R.Ptx.push_back(ptxOf(Dir, U, PtxArch));
    std::optional<std::vector<std::string>> F =
        codegen::sharedRunFunctions(readFile(R.Ptx.back()));
    R.Functions.push_back(F ? *F : std::vector<std::string>());
  }
  return R;
}

TEST(CubinSplit, PiecesAreWhatEachInputAloneGives) {
  std::string Dir = tempDir("cubin-split-pieces");
  Units R = prepare(Dir, Shareable, "sm_75");
  for (auto [U, F] : zip(Shareable, R.Functions))
    ASSERT_FALSE(F.empty()) << U << " may not share a run";
  for (std::string Arch : {"sm_75", "sm_80", "sm_86"}) {
    SCOPED_TRACE(Arch);
    std::string Batch = Dir + "/batch." + Arch + ".cubin";
    ptxas(R.Ptx, Arch, Batch);
    Expected<std::vector<std::string>> Pieces =
        codegen::splitBatchCubin(readFile(Batch), R.Functions);
    ASSERT_OK(Pieces);
    ASSERT_EQ(Pieces->size(), R.Ptx.size());
    std::vector<std::string> Own, Cut;
    for (size_t I = 0; I < R.Ptx.size(); ++I) {
      SCOPED_TRACE(Shareable[I]);
      std::string Alone = Dir + "/" + Shareable[I] + "." + Arch + ".cubin";
      ptxas({R.Ptx[I]}, Arch, Alone);
      Expected<std::string> Canonical =
          codegen::canonicalCubin(readFile(Alone));
      ASSERT_OK(Canonical);
      EXPECT_TRUE((*Pieces)[I] == *Canonical) << "the piece differs";
      // A canonical cubin is canonical already.
      Expected<std::string> Again = codegen::canonicalCubin(*Canonical);
      ASSERT_OK(Again);
      EXPECT_TRUE(*Again == *Canonical);
      Own.push_back(Alone);
      Cut.push_back(Dir + "/" + Shareable[I] + "." + Arch + ".piece.cubin");
      writeFile(Cut.back(), (*Pieces)[I]);
    }
    // nvlink makes the same program of the pieces as of ptxas's own files.
    EXPECT_TRUE(nvlink(Own, Arch, Dir + "/own.linked.cubin") ==
                nvlink(Cut, Arch, Dir + "/cut.linked.cubin"));
  }
}

TEST(CubinSplit, PiecesDoNotDependOnTheirCompany) {
  // unit_a's piece is the same cut from two different runs, in either order.
  std::string Dir = tempDir("cubin-split-company");
  Units R = prepare(Dir, {"unit_a", "alias", "arch_variant"}, "sm_75");
  ptxas({R.Ptx[0], R.Ptx[1]}, "sm_80", Dir + "/ab.cubin");
  ptxas({R.Ptx[2], R.Ptx[0]}, "sm_80", Dir + "/ca.cubin");
  Expected<std::vector<std::string>> AB = codegen::splitBatchCubin(
      readFile(Dir + "/ab.cubin"), {R.Functions[0], R.Functions[1]});
  Expected<std::vector<std::string>> CA = codegen::splitBatchCubin(
      readFile(Dir + "/ca.cubin"), {R.Functions[2], R.Functions[0]});
  ASSERT_OK(AB);
  ASSERT_OK(CA);
  EXPECT_TRUE((*AB)[0] == (*CA)[1]);
}

/// The error splitting a run of Units for Arch gives (with each unit's
/// functions as its PTX declares them).
std::string splitError(const std::string &Dir,
                       const std::vector<std::string> &Units,
                       const std::string &Arch) {
  std::vector<std::string> Ptx;
  std::vector<std::vector<std::string>> Functions;
  for (const std::string &U : Units) {
    Ptx.push_back(ptxOf(Dir, U, "sm_75"));
    Functions.push_back({});
    std::string Text = readFile(Ptx.back());
    for (StringRef Line : split(Text, '\n'))
      if (Line.starts_with(".visible .entry ") ||
          Line.starts_with(".visible .func ") || Line.starts_with(".func ")) {
        // `.visible .func (.param .b32 r) name(`: the word before the
        // last parenthesis.
        Functions.back().push_back(
            Line.rsplit('(').first.rsplit(' ').second.str());
      }
  }
  std::string Cubin = Dir + "/refused." + Arch + ".cubin";
  ptxas(Ptx, Arch, Cubin);
  return errorOf(codegen::splitBatchCubin(readFile(Cubin), Functions));
}

TEST(CubinSplit, RefusesWhatItCannotDivide) {
  std::string Dir = tempDir("cubin-split-refused");
  // Module-scope variables: one section for all inputs.
  EXPECT_NE(splitError(Dir, {"unit_a", "softplus"}, "sm_80")
                .find("section .nv.global.init is shared by the inputs"),
            std::string::npos);
  // The block's dynamic shared memory: an extern symbol of all inputs.
  EXPECT_NE(splitError(Dir, {"unit_a", "dynamic_smem_a"}, "sm_80")
                .find("symbol 'dyn_smem' is defined outside the inputs"),
            std::string::npos);
  // sm_90: module-wide compatibility attributes, differing per module.
  EXPECT_NE(splitError(Dir, {"unit_a", "unit_b"}, "sm_90")
                .find("section .nv.compat is shared by the inputs"),
            std::string::npos);
  // A module of device functions only: ptxas marks it apart.
  EXPECT_EQ(splitError(Dir, {"unit_a", "duplicate"}, "sm_80"),
            "input 1 defines no kernel");
  // And sharedRunFunctions keeps each of these out of a shared run.
  for (const char *U : {"softplus", "dynamic_smem_a", "duplicate"})
    EXPECT_FALSE(codegen::sharedRunFunctions(readFile(ptxOf(Dir, U, "sm_75"))))
        << U;
}

TEST(CubinSplit, ChecksTheFunctionLists) {
  std::string Dir = tempDir("cubin-split-lists");
  Units R = prepare(Dir, {"unit_a", "unit_b"}, "sm_75");
  ptxas(R.Ptx, "sm_80", Dir + "/ab.cubin");
  std::string Batch = readFile(Dir + "/ab.cubin");
  EXPECT_EQ(errorOf(codegen::splitBatchCubin(Batch,
                                             {R.Functions[0], R.Functions[0]})),
            "function 'unit_a_twice' is in two inputs");
  EXPECT_EQ(errorOf(codegen::splitBatchCubin(Batch, {R.Functions[0], {}})),
            "function 'unit_b_kernel' is in no input");
  EXPECT_EQ(errorOf(codegen::splitBatchCubin(Batch, {})),
            "a batch of no inputs");
}

TEST(CubinSplit, DamagedCubinsAreErrors) {
  std::string Dir = tempDir("cubin-split-damaged");
  Units R = prepare(Dir, {"unit_a", "alias"}, "sm_75");
  ptxas(R.Ptx, "sm_80", Dir + "/ab.cubin");
  std::string Batch = readFile(Dir + "/ab.cubin");
  EXPECT_NE(
      errorOf(codegen::splitBatchCubin(Batch.substr(0, 200), R.Functions)),
      "<success>");
  EXPECT_NE(errorOf(codegen::canonicalCubin("not a cubin")), "<success>");
  // .rel.debug_frame made to relocate another section: refused, not
  // rebuilt as .debug_frame's (which would drop its relocations).
  {
    std::string Bad = Batch;
    auto File = cantFail(object::ELF64LEFile::create(Bad));
    for (const object::ELF64LE::Shdr &S : cantFail(File.sections()))
      if (cantFail(File.getSectionName(S)) == ".rel.debug_frame")
        const_cast<object::ELF64LE::Shdr &>(S).sh_info = 0;
    EXPECT_EQ(errorOf(codegen::splitBatchCubin(Bad, R.Functions)),
              ".rel.debug_frame does not relocate .debug_frame");
  }
  // Found by fuzz/cubin_split_fuzzer.cpp. Two sections of one name the
  // cut rebuilds: refused, not merged into one with the other's strings.
  {
    std::string Bad = Batch;
    auto File = cantFail(object::ELF64LEFile::create(Bad));
    auto Sections = cantFail(File.sections());
    uint32_t Prototype = 0;
    for (const object::ELF64LE::Shdr &S : Sections)
      if (cantFail(File.getSectionName(S)) == ".nv.prototype")
        Prototype = S.sh_name;
    ASSERT_NE(Prototype, 0u);
    for (const object::ELF64LE::Shdr &S : Sections)
      if (cantFail(File.getSectionName(S)) == ".nv.callgraph")
        const_cast<object::ELF64LE::Shdr &>(S).sh_name = Prototype;
    EXPECT_EQ(errorOf(codegen::splitBatchCubin(Bad, R.Functions)),
              "two sections named .nv.prototype");
  }
  // .nv.callgraph typed as a string table: refused, not overwritten with
  // the symbol names.
  {
    std::string Bad = Batch;
    auto File = cantFail(object::ELF64LEFile::create(Bad));
    for (const object::ELF64LE::Shdr &S : cantFail(File.sections()))
      if (cantFail(File.getSectionName(S)) == ".nv.callgraph")
        const_cast<object::ELF64LE::Shdr &>(S).sh_type = ELF::SHT_STRTAB;
    EXPECT_EQ(errorOf(codegen::splitBatchCubin(Bad, R.Functions)),
              "section .nv.callgraph is a string table, neither of section "
              "nor symbol names");
  }
  // A CIE pointer under .rela.debug_frame with something in place, which
  // a pointer moved to .rel.debug_frame would add to its target: refused.
  {
    std::string Bad = Batch;
    auto File = cantFail(object::ELF64LEFile::create(Bad));
    auto Sections = cantFail(File.sections());
    const object::ELF64LE::Shdr *Frame = nullptr, *Rela = nullptr;
    for (const object::ELF64LE::Shdr &S : Sections) {
      StringRef Name = cantFail(File.getSectionName(S));
      if (Name == ".debug_frame")
        Frame = &S;
      else if (Name == ".rela.debug_frame")
        Rela = &S;
    }
    ASSERT_TRUE(Frame && Rela);
    const object::ELF64LE::Shdr *Symtab = &Sections[Rela->sh_link];
    uint64_t Pointer = ~0ull;
    for (const object::ELF64LE::Rela &Rel : cantFail(File.relas(*Rela))) {
      auto Sym = cantFail(File.getRelocationSymbol(Rel, Symtab));
      if (Sym->getType() == ELF::STT_SECTION && Pointer == ~0ull)
        Pointer = Rel.r_offset;
    }
    ASSERT_NE(Pointer, ~0ull) << "no CIE pointer under .rela.debug_frame";
    std::string InPlace = Bad;
    InPlace[Frame->sh_offset + Pointer] = 1;
    EXPECT_EQ(errorOf(codegen::splitBatchCubin(InPlace, R.Functions)),
              ".debug_frame: the CIE pointer at offset " +
                  std::to_string(Pointer) + " holds 1 in place, not 0");
    // The same pointer moved to its FDE's last 4 bytes (a 64-bit DWARF
    // FDE: 0xffffffff, its 8-byte length, then the CIE pointer).
    uint64_t Length =
        support::endian::read64le(Bad.data() + Frame->sh_offset + Pointer - 8);
    uint64_t Moved = Pointer + Length - 4;
    for (const object::ELF64LE::Rela &Rel : cantFail(File.relas(*Rela)))
      if (Rel.r_offset == Pointer)
        const_cast<object::ELF64LE::Rela &>(Rel).r_offset = Moved;
    EXPECT_EQ(errorOf(codegen::splitBatchCubin(Bad, R.Functions)),
              ".debug_frame: the CIE pointer at offset " +
                  std::to_string(Moved) + " runs past its entry");
  }
  // Section names and symbol names in one string table: the cut writes
  // two, so it refuses.
  {
    std::string Bad = Batch;
    auto File = cantFail(object::ELF64LEFile::create(Bad));
    for (const object::ELF64LE::Shdr &S : cantFail(File.sections()))
      if (S.sh_type == ELF::SHT_SYMTAB)
        const_cast<object::ELF64LE::Shdr &>(S).sh_link =
            File.getHeader().e_shstrndx;
    EXPECT_EQ(errorOf(codegen::splitBatchCubin(Bad, R.Functions)),
              "no section name table of its own");
  }
  // Every 7th byte changed in turn, and every 13th length: an answer
  // (most changes are in code, which the cut copies), never a crash; under
  // ASan (.ci/run), never a read out of bounds.
  size_t Cut = 0, Refused = 0;
  for (size_t At = 0; At < Batch.size(); At += 7) {
    std::string Bad = Batch;
    Bad[At] = char(Bad[At] ^ 0x5a);
    if (Expected<std::vector<std::string>> P =
            codegen::splitBatchCubin(Bad, R.Functions))
      ++Cut;
    else
      ++Refused, consumeError(P.takeError());
    if (Expected<std::string> C = codegen::canonicalCubin(Bad); !C)
      consumeError(C.takeError());
  }
  for (size_t Len = 0; Len < Batch.size(); Len += 13)
    EXPECT_NE(
        errorOf(codegen::splitBatchCubin(Batch.substr(0, Len), R.Functions)),
        "<success>")
        << Len;
  EXPECT_GT(Cut, 0u);
  EXPECT_GT(Refused, 0u);
}

} // namespace
