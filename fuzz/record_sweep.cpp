//===- fuzz/record_sweep.cpp - One file per operand of each debug record -===//
//
// record_sweep [--per-code=N] IN.bc OUTDIR VALUE... writes, for each
// operand of each record that names metadata (the metadata blocks' records
// but the strings, names, kinds and index; metadata attachments;
// instructions' debug locations and debug records), one copy of IN.bc per
// VALUE with that operand set to it:
// OUTDIR/b<block>c<code>r<record>o<operand>v<value>.bc. With --per-code,
// only the first N records of each block and code (a function's dozens of
// debug locations are one layout). It prints how many records and files.
// test/reliability/metadata-sweep.test links each (docs/reliability.md, "the
// metadata sweep"): the metadata references, kinds and nulls that LLVM's
// reader, verifier and passes take as given, which random byte changes rarely
// reach.
//
//===----------------------------------------------------------------------===//

#include "fuzz/BitcodeEdit.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Bitcode/LLVMBitCodes.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

using namespace llvm;

/// Whether a record names metadata, the sweep's records.
static bool isSwept(unsigned Block, unsigned Code) {
  switch (Block) {
  case bitc::METADATA_ATTACHMENT_ID:
    return true;
  case bitc::FUNCTION_BLOCK_ID:
    return Code == bitc::FUNC_CODE_DEBUG_LOC ||
           (Code >= bitc::FUNC_CODE_DEBUG_RECORD_VALUE &&
            Code <= bitc::FUNC_CODE_DEBUG_RECORD_DECLARE_VALUE);
  case bitc::METADATA_BLOCK_ID:
    switch (Code) {
    case bitc::METADATA_STRINGS:
    case bitc::METADATA_KIND:
    case bitc::METADATA_NAME:
    case bitc::METADATA_INDEX_OFFSET:
    case bitc::METADATA_INDEX:
      return false;
    default:
      return true;
    }
  default:
    return false;
  }
}

static int fail(const Twine &Message) {
  WithColor::error(errs(), "record_sweep") << Message << "\n";
  return 1;
}

int main(int Argc, char **Argv) {
  size_t PerCode = SIZE_MAX;
  if (Argc > 1 && StringRef(Argv[1]).starts_with("--per-code=")) {
    if (!to_integer(StringRef(Argv[1]).drop_front(11), PerCode, 10) || !PerCode)
      return fail(Twine("not a count: ") + Argv[1]);
    ++Argv;
    --Argc;
  }
  if (Argc < 4)
    return fail("usage: record_sweep [--per-code=N] IN.bc OUTDIR VALUE...");
  std::vector<uint64_t> Values;
  for (int I = 3; I < Argc; ++I) {
    uint64_t V;
    if (!to_integer(StringRef(Argv[I]), V, 10))
      return fail(Twine("not a value: ") + Argv[I]);
    Values.push_back(V);
  }
  ErrorOr<std::unique_ptr<MemoryBuffer>> In = MemoryBuffer::getFile(Argv[1]);
  if (!In)
    return fail(Twine(Argv[1]) + ": " + In.getError().message());
  StringRef Bitcode = (*In)->getBuffer();

  // The swept records, in file order: block, code, operand count.
  struct Swept {
    unsigned Block, Code;
    size_t Operands;
  };
  std::vector<Swept> Records;
  if (Error E = fatlink::fuzz::editBitcode(
                    Bitcode,
                    [&](unsigned Block, unsigned &Code,
                        SmallVectorImpl<uint64_t> &R) {
                      if (isSwept(Block, Code))
                        Records.push_back({Block, Code, R.size()});
                    })
                    .takeError())
    return fail(Twine(Argv[1]) + ": " + toString(std::move(E)));

  size_t Files = 0, Swept = 0;
  std::map<std::pair<unsigned, unsigned>, size_t> SeenOfCode;
  for (size_t K = 0; K < Records.size(); ++K) {
    if (SeenOfCode[{Records[K].Block, Records[K].Code}]++ >= PerCode)
      continue;
    ++Swept;
    for (size_t Op = 0; Op < Records[K].Operands; ++Op)
      for (uint64_t V : Values) {
        size_t Seen = 0;
        Expected<std::string> Out = fatlink::fuzz::editBitcode(
            Bitcode,
            [&](unsigned Block, unsigned &Code, SmallVectorImpl<uint64_t> &R) {
              if (isSwept(Block, Code) && Seen++ == K)
                R[Op] = V;
            });
        if (!Out)
          return fail(toString(Out.takeError()));
        SmallString<128> Path(Argv[2]);
        sys::path::append(Path,
                          formatv("b{0}c{1}r{2}o{3}v{4}.bc", Records[K].Block,
                                  Records[K].Code, K, Op, V)
                              .str());
        std::error_code EC;
        raw_fd_ostream OS(Path, EC);
        if (EC)
          return fail(Twine(Path) + ": " + EC.message());
        OS << *Out;
        ++Files;
      }
  }
  outs() << Swept << " of " << Records.size() << " records, " << Files
         << " files\n";
  return 0;
}
