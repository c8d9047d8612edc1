//===- fuzz/BitcodeEdit.h - Bitcode re-encoded with records changed ------===//
//
// How a test writes a record LLVM's writer never would: the bitcode of a
// module, copied block by block and record by record through an edit that
// may change a record's code and operands. The regression tests edit one
// record to reproduce what a fuzzer or an audit found; record_sweep edits
// every operand of every record of a kind, one file each
// (docs/reliability.md, "the metadata sweep").
//
//===----------------------------------------------------------------------===//

#ifndef FATLINK_FUZZ_BITCODEEDIT_H
#define FATLINK_FUZZ_BITCODEEDIT_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>

namespace fatlink::fuzz {

/// An edit of one record: its block ID, code and operands, changed in
/// place. It sees every record of every block, in file order.
using RecordEdit = llvm::function_ref<void(
    unsigned Block, unsigned &Code, llvm::SmallVectorImpl<uint64_t> &Ops)>;

/// Bitcode (one module, as LLVM's writer lays it out) re-encoded with each
/// record through Edit, unabbreviated (a record with a blob through an
/// abbreviation of its own). The module's function index (VSTOFFSET and
/// the module-level symbol table, which locate bodies by bit offset) is
/// left out: LLVM's reader then finds each body where it lies. An error if
/// the input does not read as a bitstream.
llvm::Expected<std::string> editBitcode(llvm::StringRef Bitcode,
                                        RecordEdit Edit);

} // namespace fatlink::fuzz

#endif
