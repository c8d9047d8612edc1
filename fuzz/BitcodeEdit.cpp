//===- fuzz/BitcodeEdit.cpp - Bitcode re-encoded with records changed ----===//

#include "fuzz/BitcodeEdit.h"

#include "llvm/Bitcode/LLVMBitCodes.h"
#include "llvm/Bitstream/BitstreamReader.h"
#include "llvm/Bitstream/BitstreamWriter.h"

#include <map>
#include <memory>
#include <optional>

using namespace llvm;

namespace fatlink::fuzz {

/// Copies the block Block (the cursor just past its entry).
static Error copyBlock(BitstreamCursor &In, BitstreamWriter &Out,
                       unsigned Block, RecordEdit Edit,
                       BitstreamBlockInfo &Info) {
  if (Error E = In.EnterSubBlock(Block))
    return E;
  Out.EnterSubblock(Block, 6);
  std::map<unsigned, unsigned> BlobAbbrev;
  SmallVector<uint64_t, 64> R;
  while (true) {
    Expected<BitstreamEntry> Entry =
        In.advance(BitstreamCursor::AF_DontAutoprocessAbbrevs);
    if (!Entry)
      return Entry.takeError();
    if (Entry->Kind == BitstreamEntry::Error)
      return createStringError("malformed block %u", Block);
    if (Entry->Kind == BitstreamEntry::EndBlock) {
      Out.ExitBlock();
      return Error::success();
    }
    if (Entry->Kind == BitstreamEntry::SubBlock) {
      if (Entry->ID == bitc::BLOCKINFO_BLOCK_ID) {
        Expected<std::optional<BitstreamBlockInfo>> Read =
            In.ReadBlockInfoBlock();
        if (!Read)
          return Read.takeError();
        if (!*Read)
          return createStringError("malformed block info");
        Info = std::move(**Read);
        In.setBlockInfo(&Info);
      } else if (Block == bitc::MODULE_BLOCK_ID &&
                 Entry->ID == bitc::VALUE_SYMTAB_BLOCK_ID) {
        if (Error E = In.SkipBlock())
          return E;
      } else if (Error E = copyBlock(In, Out, Entry->ID, Edit, Info)) {
        return E;
      }
      continue;
    }
    if (Entry->ID == bitc::DEFINE_ABBREV) {
      if (Error E = In.ReadAbbrevRecord())
        return E;
      continue;
    }
    R.clear();
    StringRef Blob;
    Expected<unsigned> Code = In.readRecord(Entry->ID, R, &Blob);
    if (!Code)
      return Code.takeError();
    if (Block == bitc::MODULE_BLOCK_ID && *Code == bitc::MODULE_CODE_VSTOFFSET)
      continue;
    Edit(Block, *Code, R);
    if (!Blob.data()) {
      Out.EmitRecord(*Code, R);
      continue;
    }
    unsigned &Abbrev = BlobAbbrev[*Code];
    if (!Abbrev) {
      auto A = std::make_shared<BitCodeAbbrev>();
      A->Add(BitCodeAbbrevOp(*Code));
      for (size_t I = 0; I < R.size(); ++I)
        A->Add(BitCodeAbbrevOp(BitCodeAbbrevOp::VBR, 6));
      A->Add(BitCodeAbbrevOp(BitCodeAbbrevOp::Blob));
      Abbrev = Out.EmitAbbrev(std::move(A));
    }
    SmallVector<uint64_t, 8> Fields{*Code};
    append_range(Fields, R);
    Out.EmitRecordWithBlob(Abbrev, Fields, Blob);
  }
}

Expected<std::string> editBitcode(StringRef Bitcode, RecordEdit Edit) {
  BitstreamCursor In(ArrayRef<uint8_t>(
      reinterpret_cast<const uint8_t *>(Bitcode.data()), Bitcode.size()));
  SmallVector<char, 0> Buf;
  BitstreamWriter Out(Buf);
  // The magic: 'BC' 0xC0DE.
  for (char C : {'B', 'C'})
    Out.Emit(unsigned(C), 8);
  for (unsigned Nibble : {0x0, 0xC, 0xE, 0xD})
    Out.Emit(Nibble, 4);
  BitstreamBlockInfo Info;
  if (Error E = In.JumpToBit(32))
    return std::move(E);
  while (In.getCurrentByteNo() + 4 <= Bitcode.size()) {
    Expected<BitstreamEntry> Entry =
        In.advance(BitstreamCursor::AF_DontAutoprocessAbbrevs);
    if (!Entry)
      return Entry.takeError();
    if (Entry->Kind != BitstreamEntry::SubBlock)
      break;
    if (Error E = copyBlock(In, Out, Entry->ID, Edit, Info))
      return std::move(E);
  }
  return std::string(Buf.begin(), Buf.end());
}

} // namespace fatlink::fuzz
