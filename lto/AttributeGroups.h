//===- lto/AttributeGroups.h - Attribute group entries, read as LLVM does -===//
//
// Internal to lto/. An attribute group entry of bitcode
// (PARAMATTR_GRP_CODE_ENTRY: [group id, index, attributes...]) packs its
// attributes in several encodings. Intake reads them to refuse what LLVM's
// reader would take on trust (lto/Inputs.cpp), and the per-arch digest to
// leave out "target-cpu" and "target-features" (lto/ArchDigest.cpp); both
// read them here, one attribute at a time, as
// BitcodeReader::parseAttributeGroupBlock does.
//
//===----------------------------------------------------------------------===//

#ifndef FATLINK_LTO_ATTRIBUTEGROUPS_H
#define FATLINK_LTO_ATTRIBUTEGROUPS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <cstddef>
#include <cstdint>

namespace fatlink::lto {

/// One attribute of an attribute group entry.
struct GroupAttribute {
  /// How it is encoded: 0 enum [kind], 1 integer [kind, value], 3 string
  /// [chars, 0], 4 string with a value [chars, 0, chars, 0], 5 type
  /// attribute without a type [kind], 6 type attribute [kind, type], 7
  /// range [kind, width, range], 8 range list [kind, count, width, range x
  /// count]. A range is [lower, upper] up to 64 bits wide and else [active
  /// words (lower | upper << 32), words...].
  uint64_t Encoding = 0;
  /// The attribute's kind (bitc::ATTR_KIND_*); 0 for a string attribute.
  uint64_t Kind = 0;
  /// A string attribute's key, one character an operand.
  llvm::ArrayRef<uint64_t> Key;
  /// The operands of the entry it spans, [Begin, End), its encoding
  /// included.
  size_t Begin = 0, End = 0;
};

enum class GroupRead {
  /// Every attribute, ending where the entry does.
  Whole,
  /// An encoding LLVM does not know, or attributes that do not end where
  /// the entry does. LLVM's reader rejects an unknown encoding, but reads
  /// the operands of an attribute cut short from past the record.
  Malformed,
  /// A range whose words (lower + upper) run past the entry. LLVM adds the
  /// two counts in 32 bits, and a sum that wraps passes its check (2^32 - 1
  /// + 1 words: 32 GB read from past the record): never hand it to LLVM.
  WordsPast,
};

struct GroupReading {
  GroupRead Read = GroupRead::Whole;
  /// The widest range read whole, in bits (0: none), wherever the entry
  /// turns out malformed: LLVM makes a range's two integers as wide as its
  /// record says as soon as it has read it, before it reads on.
  uint32_t WidestRange = 0;
};

/// Calls F for each attribute of the entry R ([group id, index,
/// attributes...]) in order, each one whole (every operand it needs is in
/// R), and says how the reading ended. F sees the attributes before a
/// malformed one.
GroupReading
forEachGroupAttribute(llvm::ArrayRef<uint64_t> R,
                      llvm::function_ref<void(const GroupAttribute &)> F);

} // namespace fatlink::lto

#endif
