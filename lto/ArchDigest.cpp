//===- lto/ArchDigest.cpp - Per-arch images compared without parsing ------===//
//
// clang --offload-arch=sm_75,sm_80,... writes one bitcode image per arch.
// Most CUDA C++ never looks at __CUDA_ARCH__, and then the images differ
// only in each function's "target-cpu" and "target-features", which the
// link overwrites anyway (docs/lto.md, "Per-arch images"). Telling such
// images apart used to mean parsing each into a module, removing the two
// attributes and writing it back: about 1.4 ms an image, 1.5 s of CPU for
// a 256-unit program at four arches. Here the bitcode is read record by
// record with LLVM's bitstream reader, never built into IR: every record's
// code, operands and blob are hashed, in order and with the blocks'
// nesting, except
//   - the two attributes, in the attribute groups of functions,
//   - what is only a position in the file, which the attributes' lengths
//     shift: the module's VST offset (checked to point at the VST) and each
//     function's entry in the module's symbol table (replaced by which
//     function block, counted in order, it points at).
// Abbreviations only choose an encoding and are not hashed. Equal digests
// are the same records, so the same program; what the walk cannot vouch
// for (an encoding it does not know, an offset that points elsewhere,
// malformed bitcode) gets no digest, and its image is never merged.
//
//===----------------------------------------------------------------------===//

#include "lto/AttributeGroups.h"
#include "lto/LTO.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Bitcode/LLVMBitCodes.h"
#include "llvm/Bitstream/BitCodes.h"
#include "llvm/Bitstream/BitstreamReader.h"
#include "llvm/IR/Attributes.h"
#include "llvm/Support/BLAKE3.h"

using namespace llvm;

namespace fatlink::lto {
namespace {

class DigestWalk {
public:
  explicit DigestWalk(StringRef Buffer)
      : Buffer(Buffer), Stream(arrayRefFromStringRef(Buffer)) {}

  std::optional<BLAKE3Result<32>> run() {
    // Raw bitcode only ('BC' 0xC0DE); a wrapper header is not clang's
    // offload image.
    if (Buffer.size() < 8 || !Buffer.starts_with("BC\xC0\xDE"))
      return std::nullopt;
    if (Error E = Stream.JumpToBit(32)) {
      consumeError(std::move(E));
      return std::nullopt;
    }
    if (Error E = walk(/*BlockID=*/~0u)) {
      consumeError(std::move(E));
      return std::nullopt;
    }
    // The reader finds the VST where the module says it is.
    if (!Ok || Depth != 0 || VSTOffset != VSTAt)
      return std::nullopt;
    BLAKE3 Hasher;
    Hasher.update(ArrayRef<uint8_t>(Out.data(), Out.size()));
    return Hasher.final();
  }

private:
  void put(uint64_t V) {
    for (int I = 0; I < 8; ++I)
      Out.push_back(uint8_t(V >> (8 * I)));
  }

  Error walk(unsigned BlockID);
  void record(unsigned BlockID, unsigned Code, ArrayRef<uint64_t> Vals,
              StringRef Blob);
  bool functionAttributes(ArrayRef<uint64_t> Vals);

  StringRef Buffer;
  BitstreamCursor Stream;
  std::optional<BitstreamBlockInfo> BlockInfo;
  SmallVector<uint8_t, 0> Out;
  /// Where each function block of the module starts (the reader's
  /// DeferredFunctionInfo positions), in words, to its number in order.
  DenseMap<uint64_t, uint64_t> FunctionAt;
  uint64_t VSTAt = 0;     // the module VST's position, in words
  uint64_t VSTOffset = 0; // MODULE_CODE_VSTOFFSET, 0 if none
  unsigned Depth = 0;
  static constexpr unsigned MaxDepth = 16;
  bool Ok = true;
};

Error DigestWalk::walk(unsigned BlockID) {
  SmallVector<uint64_t, 64> Vals;
  while (Ok) {
    if (BlockID == ~0u && Stream.AtEndOfStream())
      return Error::success();
    uint64_t Before = Stream.GetCurrentBitNo();
    Expected<BitstreamEntry> Entry = Stream.advance();
    if (!Entry)
      return Entry.takeError();
    switch (Entry->Kind) {
    case BitstreamEntry::Error:
      Ok = false;
      return Error::success();
    case BitstreamEntry::EndBlock:
      put('E'); // the end of this block (at the top level: an Error)
      return Error::success();
    case BitstreamEntry::SubBlock: {
      if (Entry->ID == bitc::BLOCKINFO_BLOCK_ID) {
        Expected<std::optional<BitstreamBlockInfo>> BI =
            Stream.ReadBlockInfoBlock();
        if (!BI)
          return BI.takeError();
        if (!*BI) {
          Ok = false;
          return Error::success();
        }
        BlockInfo = std::move(**BI);
        Stream.setBlockInfo(&*BlockInfo);
        continue;
      }
      if (BlockID == bitc::MODULE_BLOCK_ID) {
        // Both offsets name where the block's ENTER_SUBBLOCK starts, in
        // 32-bit words from one word before the identification block,
        // which raw bitcode starts at bit 32: its position in words.
        if (Entry->ID == bitc::FUNCTION_BLOCK_ID) {
          if (Before % 32 != 0) {
            Ok = false;
            return Error::success();
          }
          FunctionAt.try_emplace(Before / 32, FunctionAt.size());
        } else if (Entry->ID == bitc::VALUE_SYMTAB_BLOCK_ID) {
          if (Before % 32 != 0 || VSTAt != 0) {
            Ok = false;
            return Error::success();
          }
          VSTAt = Before / 32;
        }
      }
      // LLVM nests its blocks four deep at most (module, function,
      // constants); a crafted image nesting thousands must not take the
      // stack with it.
      if (Depth == MaxDepth) {
        Ok = false;
        return Error::success();
      }
      put('B');
      put(Entry->ID);
      if (Error E = Stream.EnterSubBlock(Entry->ID))
        return E;
      ++Depth;
      if (Error E = walk(Entry->ID))
        return E;
      --Depth;
      continue;
    }
    case BitstreamEntry::Record: {
      Vals.clear();
      StringRef Blob;
      Expected<unsigned> Code = Stream.readRecord(Entry->ID, Vals, &Blob);
      if (!Code)
        return Code.takeError();
      record(BlockID, *Code, Vals, Blob);
      continue;
    }
    }
  }
  return Error::success();
}

void DigestWalk::record(unsigned BlockID, unsigned Code,
                        ArrayRef<uint64_t> Vals, StringRef Blob) {
  if (BlockID == bitc::MODULE_BLOCK_ID && Code == bitc::MODULE_CODE_VSTOFFSET) {
    // A position: checked against where the VST is (run).
    if (Vals.size() != 1 || Vals[0] == 0 || VSTOffset != 0) {
      Ok = false;
      return;
    }
    VSTOffset = Vals[0];
    return;
  }
  if (BlockID == bitc::PARAMATTR_GROUP_BLOCK_ID &&
      Code == bitc::PARAMATTR_GRP_CODE_ENTRY && Vals.size() >= 2 &&
      Vals[1] == AttributeList::FunctionIndex) {
    if (!functionAttributes(Vals))
      Ok = false;
    return;
  }
  put('R');
  put(Code);
  if (BlockID == bitc::VALUE_SYMTAB_BLOCK_ID && Depth == 2 &&
      Code == bitc::VST_CODE_FNENTRY) {
    // [valueid, offset, name...]: the module VST (depth 2: inside the
    // module block) names each function's body by its position; hash
    // which block that is. The blocks precede the VST.
    auto It = Vals.size() >= 2 ? FunctionAt.find(Vals[1]) : FunctionAt.end();
    if (It == FunctionAt.end()) {
      Ok = false;
      return;
    }
    put(Vals.size());
    put(Vals[0]);
    put(It->second);
    for (uint64_t V : Vals.drop_front(2))
      put(V);
  } else {
    put(Vals.size());
    for (uint64_t V : Vals)
      put(V);
  }
  put(Blob.size());
  Out.append(Blob.begin(), Blob.end());
}

/// Hashes a function's attribute group [grpid, idx, attr...] without its
/// "target-cpu" and "target-features" string attributes; an entry that
/// does not read whole (lto/AttributeGroups.h) fails the digest rather
/// than being guessed at.
bool DigestWalk::functionAttributes(ArrayRef<uint64_t> Vals) {
  SmallVector<uint64_t, 32> Kept(Vals.begin(), Vals.begin() + 2);
  auto IsKey = [](ArrayRef<uint64_t> Key, StringRef Name) {
    return Key.size() == Name.size() &&
           std::equal(Key.begin(), Key.end(), Name.bytes_begin());
  };
  GroupReading Reading =
      forEachGroupAttribute(Vals, [&](const GroupAttribute &A) {
        if (!IsKey(A.Key, "target-cpu") && !IsKey(A.Key, "target-features"))
          Kept.append(Vals.begin() + A.Begin, Vals.begin() + A.End);
      });
  if (Reading.Read != GroupRead::Whole)
    return false;
  put('A');
  put(Kept.size());
  for (uint64_t V : Kept)
    put(V);
  return true;
}

} // namespace

std::optional<BLAKE3Result<32>> archNeutralDigest(MemoryBufferRef Bitcode) {
  return DigestWalk(Bitcode.getBuffer()).run();
}

} // namespace fatlink::lto
