//===- lto/Inputs.cpp - Find every device image in the inputs ------------===//
//
// Input intake: files are mapped once and every unit of device bitcode in
// them is recorded with its origin, so that later diagnostics can say
// "libfoo.rlib(foo.rcgu.o)" rather than "module 3".
//
// Accepted containers:
//   - raw LLVM bitcode (.bc; rustc's nvptx `.rcgu.o` files are bitcode),
//   - ar archives (rlibs, static libraries): bitcode members are device
//     images, ELF members are searched for OffloadBinaries, and everything
//     else (`lib.rmeta`, `lib.rmeta-link`) is skipped; thin archives
//     (`ar rcT`) are followed as GNU ld and lld follow them,
//   - ELF objects with a SHT_LLVM_OFFLOADING section (clang
//     `--offload-new-driver -fgpu-rdc -foffload-lto`, `fatlink embed`),
//   - ELF objects from nvcc -dc (relocatable device code): the relocatable
//     cubins and PTX of their `__nv_relfatbin` fatbin become DeviceObjects,
//     which nvlink links with the LTO part's code, per target; nvcc -c
//     objects (complete cubins in `.nv_fatbin`, which register themselves)
//     are left as they are,
//   - CUDA's device runtime, libcudadevrt.a: nvcc relocatable cubins that
//     are not read into the LTO part but handed to nvlink as an archive
//     (readDeviceLibrary), so that it takes only the members it needs.
//
// Archives, object sections and OffloadBinaries are taken apart by intake/
// (intake/Intake.h), with its bounds checks, as for `inspect`. Each image
// is checked before LLVM's reader sees it: the bitcode's triple
// must be nvptx64, and bitcode from a newer LLVM than ours is refused with
// both versions named (LLVM reads only its own and older bitcode).
//
//===----------------------------------------------------------------------===//

#include "lto/AttributeGroups.h"
#include "lto/LTO.h"
#include "lto/Support.h"
#include "lto/Target.h"
#include "packager/Packager.h"

#include "intake/Intake.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/BinaryFormat/Magic.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/LLVMBitCodes.h"
#include "llvm/Bitstream/BitstreamReader.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Object/ObjectFile.h"
#include "llvm/Object/OffloadBinary.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/TimeProfiler.h"
#include "llvm/TargetParser/Triple.h"

#include <map>
#include <set>

using namespace llvm;

namespace fatlink::lto {

/// Major version of an LLVM producer string such as "LLVM22.1.2" or
/// "LLVM22.1.2-rust-1.95.0-stable"; none when the string has another form.
static std::optional<unsigned> producerMajor(StringRef Producer) {
  if (!Producer.consume_front("LLVM"))
    return std::nullopt;
  unsigned Major;
  if (Producer.consumeInteger(10, Major))
    return std::nullopt;
  return Major;
}

/// Reads the block Block (the cursor just past its entry) record by record
/// to its end, as LLVM's reader reads a module or a string table; F gets
/// each record's code, operands and blob, and returns whether to go on. A
/// sub-block goes to SubBlock (its ID; the cursor just past its entry),
/// which reads it whole and returns true, or returns false to have it
/// skipped by its length (all of them, without SubBlock).
static Error
forEachRecord(BitstreamCursor &Stream, unsigned Block,
              function_ref<bool(unsigned, ArrayRef<uint64_t>, StringRef)> F,
              function_ref<Expected<bool>(unsigned)> SubBlock = nullptr) {
  if (Error E = Stream.EnterSubBlock(Block))
    return E;
  SmallVector<uint64_t, 64> Record;
  while (true) {
    Expected<BitstreamEntry> Entry = Stream.advance();
    if (!Entry)
      return Entry.takeError();
    switch (Entry->Kind) {
    case BitstreamEntry::Error:
      return createStringError("malformed block");
    case BitstreamEntry::EndBlock:
      return Error::success();
    case BitstreamEntry::SubBlock:
      if (SubBlock) {
        Expected<bool> Read = SubBlock(Entry->ID);
        if (!Read)
          return Read.takeError();
        if (*Read)
          continue;
      }
      if (Error E = Stream.SkipBlock())
        return E;
      continue;
    case BitstreamEntry::Record:
      break;
    }
    Record.clear();
    StringRef Blob;
    Expected<unsigned> Code = Stream.readRecord(Entry->ID, Record, &Blob);
    if (!Code)
      return Code.takeError();
    if (!F(*Code, Record, Blob))
      return Error::success();
  }
}

/// What an attribute group entry holds that LLVM's reader takes as given
/// (lto/AttributeGroups.h).
struct GroupEntry {
  GroupReading Reading;
  /// A type attribute left without a type where the reader supplies none
  /// (its bitcode kind): it upgrades byval, sret and inalloca without a
  /// type (or in the enum form of old bitcode) on a parameter, from the
  /// parameter's type; anywhere else the type stays null, and LLVM's
  /// writer and printer crash on it.
  std::optional<uint64_t> Untyped;
};

/// Reads an attribute group entry (R: [group id, index, attributes...]).
static GroupEntry readGroupEntry(ArrayRef<uint64_t> R) {
  GroupEntry Entry;
  // Index 0 is the return value, ~0U the function, K parameter K - 1.
  bool Parameter =
      R.size() >= 2 && uint32_t(R[1]) != 0 && uint32_t(R[1]) != ~0u;
  auto Upgraded = [](uint64_t Kind) {
    return Kind == bitc::ATTR_KIND_BY_VAL ||
           Kind == bitc::ATTR_KIND_STRUCT_RET ||
           Kind == bitc::ATTR_KIND_IN_ALLOCA;
  };
  Entry.Reading = forEachGroupAttribute(R, [&](const GroupAttribute &A) {
    if (!Entry.Untyped &&
        (A.Encoding == 5 || (A.Encoding == 0 && Upgraded(A.Kind))) &&
        !(Parameter && Upgraded(A.Kind)))
      Entry.Untyped = A.Kind;
  });
  return Entry;
}

/// What LLVM's reader takes from a module block as given, and what the
/// walk found wrong with it.
struct ModuleScan {
  /// The end of the furthest partition name the global variables name in
  /// the string table that follows the module (in a module of
  /// MODULE_CODE_VERSION 2 or later each record starts with its own name's
  /// offset and size); UINT64_MAX when it cannot lie inside one (no string
  /// table in an older module, or offset + size overflows).
  uint64_t NamesEnd = 0;
  /// Why LLVM's reader must not read the module (the first reason found):
  /// a count it would allocate for before it finds the module corrupt, or
  /// a type it would use unchecked.
  std::string Refused;
};

/// The longest vector fatlink reads: no GPU program has one near it, and
/// LLVM makes a table as long as the vector for constants and shuffles of
/// its type (it also takes a length as 32 bits, 2^32 as 0).
static constexpr uint64_t MaxVectorLength = 1 << 16;

/// What a module's constants and debug-info enumerators may take past what
/// their records hold (scanModule): this much, or this many times the
/// module's size.
static constexpr uint64_t MinConstantBudget = uint64_t(256) << 20;
static constexpr uint64_t ConstantBudgetPerByte = 16;

/// Reads a module block (the cursor just past its entry): its records, the
/// attribute groups, the type table, the constants, the metadata and the
/// function bodies within it.
///
/// LLVM's reader sizes some tables by a number in a record, before it reads
/// what they hold: an attribute group's index (AttributeList::get keeps a
/// slot per parameter up to it, 8 bytes each; a 3 KB fuzzed module asked
/// for 2^31, 17 GB, and got it from the kernel's overcommit), the type
/// table's entry count (TypeList.resize), a function body's basic block
/// count (each one created) and a block address's block number (a slot per
/// block up to it, for a body not read yet). Each is bounded by the
/// module's size: a function with N parameters needs a type or a call
/// record with N operands, at least a bit each, each type a record of at
/// least a bit, and each basic block a terminator. A landing pad's clause
/// count and a 2012-form switch's case count (room for each made before
/// the operands are read) are bounded by their own record: each clause or
/// case takes operands of it. Past a bound the module is corrupt.
///
/// And what LLVM's reader reads unchecked, by an audit of its source: an
/// array or vector constant's data (CST_CODE_DATA) must have an array or
/// vector type, an aggregate constant not a scalable vector one, an
/// invoke's explicit type must exist, a vector type's element count fit 32
/// bits, a getelementptr constant's in-range width that of an integer type,
/// a callbr's and a catchswitch's destinations fit their record, an old
/// inline asm constant's typed pointer must point to a function type, a
/// fixed-point type's numerator and denominator fit their record, what
/// LLVM makes for constants and enumerators from their types and widths
/// stay within a budget (integers wider than 64 bits, splats), and
/// a switch must not be in the 2012 form (LLVM 3.1 to 3.3), whose type,
/// counts and case ranges LLVM takes as given.
/// The bytes an integer of Width bits keeps out of line (APInt: the words
/// of one wider than 64 bits).
static uint64_t wideIntegerBytes(uint64_t Width) {
  return Width > 64 ? (Width + 63) / 64 * 8 : 0;
}

/// Whether a function block's record Code makes an instruction (LLVM's
/// reader adds each one to the function's instruction list; these others
/// annotate one or declare its blocks).
static bool makesInstruction(unsigned Code) {
  switch (Code) {
  case bitc::FUNC_CODE_DECLAREBLOCKS:
  case bitc::FUNC_CODE_DEBUG_LOC:
  case bitc::FUNC_CODE_DEBUG_LOC_AGAIN:
  case bitc::FUNC_CODE_OPERAND_BUNDLE:
  case bitc::FUNC_CODE_BLOCKADDR_USERS:
  case bitc::FUNC_CODE_DEBUG_RECORD_VALUE:
  case bitc::FUNC_CODE_DEBUG_RECORD_DECLARE:
  case bitc::FUNC_CODE_DEBUG_RECORD_ASSIGN:
  case bitc::FUNC_CODE_DEBUG_RECORD_VALUE_SIMPLE:
  case bitc::FUNC_CODE_DEBUG_RECORD_LABEL:
  case bitc::FUNC_CODE_DEBUG_RECORD_DECLARE_VALUE:
    return false;
  default:
    return true;
  }
}

static Expected<ModuleScan> scanModule(BitstreamCursor &Stream,
                                       BitstreamBlockInfo &BlockInfo) {
  ModuleScan Scan;
  uint64_t Version = 0;
  uint64_t Start = Stream.GetCurrentBitNo();
  // The largest attribute index that names a parameter, in a group or an
  // old-style list (LLVM reads it as an unsigned: 0 is the return value,
  // ~0U the function, K the parameter K - 1).
  uint32_t MaxParamIndex = 0;
  // The first table found too large is the one reported.
  auto Refuse = [&](std::string Why) {
    if (Scan.Refused.empty())
      Scan.Refused = std::move(Why);
  };
  auto Note = [&](unsigned Code, ArrayRef<uint64_t> R, StringRef) {
    if (Code == bitc::MODULE_CODE_VERSION && !R.empty())
      Version = R[0];
    if (Code != bitc::MODULE_CODE_GLOBALVAR)
      return true;
    if (Version >= 2)
      R = R.drop_front(std::min<size_t>(2, R.size()));
    // [..., dso_local (13), partition offset (14), partition size (15), ...]
    if (R.size() <= 15)
      return true;
    if (Version < 2 || R[15] > UINT64_MAX - R[14])
      Scan.NamesEnd = UINT64_MAX;
    else if (Scan.NamesEnd != UINT64_MAX)
      Scan.NamesEnd = std::max(Scan.NamesEnd, R[14] + R[15]);
    return true;
  };
  // Each type's record code, by type ID (every type table record but the
  // entry count and a struct's name makes the next type).
  struct TypeEntry {
    unsigned Code;
    bool Scalable = false; ///< a scalable vector
    /// A typed pointer's pointee (before LLVM 15), a vector's element.
    uint64_t Of = UINT64_MAX;
    uint64_t Count = 0; ///< an integer's width in bits, a vector's length
  };
  // INTEGER: [width]; POINTER: [pointee, address space]; VECTOR: [length,
  // element, scalable].
  auto typeEntry = [](unsigned Code, ArrayRef<uint64_t> R) {
    TypeEntry T{Code};
    if (Code == bitc::TYPE_CODE_INTEGER && !R.empty())
      T.Count = R[0];
    if (Code == bitc::TYPE_CODE_POINTER && !R.empty())
      T.Of = R[0];
    if (Code == bitc::TYPE_CODE_VECTOR && R.size() >= 2) {
      T.Count = R[0];
      T.Of = R[1];
      T.Scalable = R.size() > 2 && R[2] != 0;
    }
    return T;
  };
  std::vector<TypeEntry> Types;
  // The largest basic block number a block address names. LLVM's reader
  // keeps a slot per block up to it (8 bytes each) for a function whose
  // body it has not read yet.
  uint64_t MaxBlockAddress = 0;
  // The constants block's current type (SETTYPE); none where the ID names
  // no type (LLVM's reader refuses it).
  std::optional<TypeEntry> Current;
  // The bytes LLVM makes for the constants (and debug info's enumerators)
  // from their types and widths alone, past what their records hold; and
  // for one constant of type T made by a record Code: an integer's words past
  // 64 bits (a value of an i8388608 is 1 MB, whatever its record holds), and a
  // vector's lanes for what LLVM makes one value in every lane of (a splat: an
  // integer or a floating-point value, or an expression folded lane by lane).
  uint64_t MadeBytes = 0;
  auto MadeFor = [&](const TypeEntry &T, unsigned Code) -> uint64_t {
    auto IntegerBytes = [](const TypeEntry &I) -> uint64_t {
      return I.Code == bitc::TYPE_CODE_INTEGER ? wideIntegerBytes(I.Count) : 0;
    };
    switch (Code) {
    case bitc::CST_CODE_SETTYPE:
    case bitc::CST_CODE_UNDEF:
    case bitc::CST_CODE_POISON:
    case bitc::CST_CODE_AGGREGATE:
    case bitc::CST_CODE_STRING:
    case bitc::CST_CODE_CSTRING:
    case bitc::CST_CODE_DATA:
      return 0; // nothing, or what the record holds
    default:
      break;
    }
    if (T.Code != bitc::TYPE_CODE_VECTOR)
      return IntegerBytes(T);
    if (Code == bitc::CST_CODE_NULL)
      return 0;        // one zero for the whole vector
    uint64_t Lane = 8; // a pointer to the lane's value, or its data
    if (T.Of < Types.size())
      Lane += IntegerBytes(Types[T.Of]);
    return T.Count * Lane;
  };
  auto Constant = [&](unsigned Code, ArrayRef<uint64_t> R, StringRef) {
    if (Current)
      MadeBytes += MadeFor(*Current, Code);
    switch (Code) {
    case bitc::CST_CODE_SETTYPE:
      Current.reset();
      if (!R.empty() && R[0] < Types.size())
        Current = Types[R[0]];
      break;
    case bitc::CST_CODE_DATA:
      // [elements]: LLVM's reader takes the element type from the current
      // type as an array's, else as a vector's without checking that it
      // is one, and reads a pointer out of whatever type it is (a crash,
      // or a write through it).
      if (Current && Current->Code != bitc::TYPE_CODE_ARRAY &&
          Current->Code != bitc::TYPE_CODE_VECTOR)
        Refuse("an array or vector constant is given a type that is not "
               "an array or vector");
      break;
    case bitc::CST_CODE_INLINEASM_OLD:
    case bitc::CST_CODE_INLINEASM_OLD2:
    case bitc::CST_CODE_INLINEASM_OLD3:
      // Inline asm of older bitcode, of a typed pointer type: LLVM
      // casts the pointee to a function type without checking that it is
      // one. (A pointee past the table, or a type that is no typed
      // pointer, it refuses.)
      if (Current && Current->Code == bitc::TYPE_CODE_POINTER &&
          Current->Of < Types.size() &&
          Types[Current->Of].Code != bitc::TYPE_CODE_FUNCTION &&
          Types[Current->Of].Code != bitc::TYPE_CODE_FUNCTION_OLD)
        Refuse("an inline asm constant's type points to a type that is not "
               "a function type");
      break;
    case bitc::CST_CODE_AGGREGATE:
      // [values]: a vector's is made as a fixed one, whatever the type.
      if (Current && Current->Scalable)
        Refuse("an aggregate constant is given a scalable vector type");
      break;
    case bitc::CST_CODE_CE_GEP_WITH_INRANGE:
      // [source type, flags, range width, range..., operands]: LLVM makes
      // the range's two integers as wide as stated (512 MB each at 2^32
      // bits; a 2^31-bit range took a link 5.3 GB, and it linked).
      if (R.size() >= 3 && uint32_t(R[2]) > IntegerType::MAX_INT_BITS)
        Refuse("a getelementptr constant's in-range bounds are " +
               std::to_string(uint32_t(R[2])) +
               " bits wide, wider than any integer type (" +
               std::to_string(IntegerType::MAX_INT_BITS) + ")");
      break;
    case bitc::CST_CODE_BLOCKADDRESS:
      // [function type, function, block number]
      if (R.size() >= 3)
        MaxBlockAddress = std::max(MaxBlockAddress, uint64_t(uint32_t(R[2])));
      break;
    default:
      break;
    }
    return true;
  };
  // Debug info's integers as wide as a record says: an enumerator's value
  // (LLVM makes it as wide as stated, whatever words the record holds: 512
  // MB at 2^32 - 1 bits) and a fixed-point type's numerator and
  // denominator (their word counts LLVM makes room for, then reads past
  // the record: a crash, after a gigabyte).
  auto Wide = [&](const char *What, uint64_t Width) {
    if (Width > IntegerType::MAX_INT_BITS)
      Refuse(std::string(What) + " is " + std::to_string(Width) +
             " bits wide, wider than any integer type (" +
             std::to_string(IntegerType::MAX_INT_BITS) + ")");
    else
      MadeBytes += wideIntegerBytes(Width);
  };
  auto Metadata = [&](unsigned Code, ArrayRef<uint64_t> R, StringRef) {
    switch (Code) {
    case bitc::METADATA_ENUMERATOR:
      // [flags, value (width if big: flags & 4), name, words...]
      if (R.size() >= 3 && (R[0] & 4))
        Wide("an enumerator's value", uint32_t(R[1]));
      break;
    case bitc::METADATA_FIXED_POINT_TYPE:
      // [..., (words << 32 | width), words..., (words << 32 | width),
      // words..., ...] from operand 9, in a record of at least 11.
      for (size_t At = 9, I = 0; R.size() >= 11 && I < 2; ++I) {
        uint64_t Words = At < R.size() ? R[At] >> 32 : 0;
        if (At >= R.size() || Words > R.size() - At - 1) {
          Refuse("a fixed-point type's record of " + std::to_string(R.size()) +
                 " operands ends inside its " +
                 (I ? "denominator" : "numerator") + " (" +
                 std::to_string(Words) + " words)");
          break;
        }
        Wide(I ? "a fixed-point type's denominator"
               : "a fixed-point type's numerator",
             uint32_t(R[At]));
        At += 1 + Words;
      }
      break;
    default:
      break;
    }
    return true;
  };
  // Each constants block starts with i32 as its type.
  auto Constants = [&](unsigned ID) -> Error {
    Current = TypeEntry{bitc::TYPE_CODE_INTEGER, false, UINT64_MAX, 32};
    return forEachRecord(Stream, ID, Constant);
  };
  auto SubBlock = [&](unsigned ID) -> Expected<bool> {
    switch (ID) {
    case bitc::BLOCKINFO_BLOCK_ID: {
      // Abbreviations the blocks after it may use, as LLVM's reader reads
      // them: the stream's, for the rest of the walk.
      Expected<std::optional<BitstreamBlockInfo>> Info =
          Stream.ReadBlockInfoBlock();
      if (!Info)
        return Info.takeError();
      if (!*Info)
        return createStringError("malformed block info");
      BlockInfo = std::move(**Info);
      Stream.setBlockInfo(&BlockInfo);
      return true;
    }
    case bitc::PARAMATTR_GROUP_BLOCK_ID: {
      auto Group = [&](unsigned Code, ArrayRef<uint64_t> R, StringRef) {
        // ENTRY: [group id, index, attributes...]
        if (Code == bitc::PARAMATTR_GRP_CODE_ENTRY && R.size() >= 2) {
          uint32_t Index = uint32_t(R[1]);
          if (Index != ~0u)
            MaxParamIndex = std::max(MaxParamIndex, Index);
          GroupEntry Entry = readGroupEntry(R);
          if (Entry.Reading.Read == GroupRead::WordsPast)
            Refuse("an attribute's range has more words than its record "
                   "holds");
          if (Entry.Untyped)
            Refuse("an attribute group gives attribute kind " +
                   std::to_string(*Entry.Untyped) +
                   " no type, which it needs, where LLVM's reader cannot "
                   "supply one");
          // A range is of an integer type: at most MAX_INT_BITS wide.
          if (Entry.Reading.WidestRange > IntegerType::MAX_INT_BITS)
            Refuse("an attribute's range is " +
                   std::to_string(Entry.Reading.WidestRange) +
                   " bits wide, wider than any integer type (" +
                   std::to_string(IntegerType::MAX_INT_BITS) + ")");
          // LLVM rejects an unknown encoding, but reads an attribute cut
          // short from past the record.
          if (Entry.Reading.Read == GroupRead::Malformed)
            Refuse("an attribute group entry's attributes do not end where "
                   "its record does");
        }
        return true;
      };
      if (Error E = forEachRecord(Stream, ID, Group))
        return std::move(E);
      return true;
    }
    case bitc::PARAMATTR_BLOCK_ID: {
      // Bitcode before LLVM 3.3: ENTRY_OLD [index, attributes]...
      auto Lists = [&](unsigned Code, ArrayRef<uint64_t> R, StringRef) {
        if (Code == bitc::PARAMATTR_CODE_ENTRY_OLD)
          for (size_t I = 0; I + 1 < R.size(); I += 2)
            if (uint32_t(R[I]) != ~0u)
              MaxParamIndex = std::max(MaxParamIndex, uint32_t(R[I]));
        return true;
      };
      if (Error E = forEachRecord(Stream, ID, Lists))
        return std::move(E);
      return true;
    }
    case bitc::TYPE_BLOCK_ID_NEW: {
      uint64_t TypesStart = Stream.GetCurrentBitNo();
      uint64_t Entries = 0;
      auto Type = [&](unsigned Code, ArrayRef<uint64_t> R, StringRef) {
        if (Code == bitc::TYPE_CODE_NUMENTRY && !R.empty())
          Entries = std::max(Entries, R[0]);
        else if (Code != bitc::TYPE_CODE_STRUCT_NAME)
          Types.push_back(typeEntry(Code, R));
        // VECTOR: [element count, element type, scalable]: LLVM makes
        // tables of a vector's length for what is of its type (a shuffle's
        // mask, twice, from its record of a few bits; a constant splat, a
        // lane at a time), and takes the count as 32 bits.
        if (Code == bitc::TYPE_CODE_VECTOR && !R.empty() &&
            R[0] > MaxVectorLength)
          Refuse("a vector type has " + std::to_string(R[0]) +
                 " elements; fatlink reads vectors of at most " +
                 std::to_string(MaxVectorLength) +
                 " (LLVM makes a table of every element for what is of "
                 "its type)");
        return true;
      };
      if (Error E = forEachRecord(Stream, ID, Type))
        return std::move(E);
      uint64_t Bits = Stream.GetCurrentBitNo() - TypesStart;
      if (Entries > Bits)
        Refuse("the type table claims " + std::to_string(Entries) +
               " types, more than its " + std::to_string(Bits) +
               " bits can hold");
      return true;
    }
    case bitc::CONSTANTS_BLOCK_ID:
      if (Error E = Constants(ID))
        return std::move(E);
      return true;
    case bitc::METADATA_BLOCK_ID:
      if (Error E = forEachRecord(Stream, ID, Metadata))
        return std::move(E);
      return true;
    case bitc::FUNCTION_BLOCK_ID: {
      uint64_t BodyStart = Stream.GetCurrentBitNo();
      uint64_t Blocks = 0;
      // The instructions read so far.
      uint64_t Instructions = 0;
      auto Instruction = [&](unsigned Code, ArrayRef<uint64_t> R, StringRef) {
        Instructions += makesInstruction(Code);
        switch (Code) {
        case bitc::FUNC_CODE_DECLAREBLOCKS:
          // [count]: LLVM's reader creates that many basic blocks.
          if (!R.empty())
            Blocks = std::max(Blocks, R[0]);
          break;
        case bitc::FUNC_CODE_INST_LANDINGPAD:
          // [type, cleanup, clause count, (clause kind, value)...]: LLVM
          // makes room for the clauses (32 bytes each) before it reads them.
          if (R.size() >= 3 && R[2] > R.size())
            Refuse("a landing pad claims " + std::to_string(R[2]) +
                   " clauses, more than its record of " +
                   std::to_string(R.size()) + " operands can hold");
          break;
        case bitc::FUNC_CODE_INST_SWITCH:
          // The 2012 form (magic 0x4B5 over the type), which only LLVM 3.1
          // to 3.3 wrote: LLVM reads its type, counts and case ranges
          // unchecked (a cast to an integer type, room for as many cases
          // as it says, every value of a range made).
          if (!R.empty() && (R[0] >> 16) == 0x4B5)
            Refuse("a switch is in the form of LLVM 3.1 to 3.3, which "
                   "fatlink does not read: rebuild it with a current LLVM");
          break;
        case bitc::FUNC_CODE_INST_INVOKE:
          // [attributes, cc, normal, unwind, (function type), callee, ...]:
          // an explicit type's ID goes to dyn_cast unchecked.
          if (R.size() >= 5 && (R[1] & (1 << 13)) && R[4] >= Types.size())
            Refuse("an invoke names type " + std::to_string(R[4]) +
                   ", past the module's " + std::to_string(Types.size()) +
                   " types");
          break;
        case bitc::FUNC_CODE_INST_CALLBR:
          // [attributes, cc, default, indirect count, indirect...]: LLVM
          // reads the destinations without checking the record's size.
          if (R.size() < 4)
            Refuse("a callbr record has " + std::to_string(R.size()) +
                   " operands, fewer than the 4 every callbr has");
          else if (R[3] > R.size() - 4)
            Refuse("a callbr claims " + std::to_string(R[3]) +
                   " indirect destinations, more than its record of " +
                   std::to_string(R.size()) + " operands can hold");
          break;
        case bitc::FUNC_CODE_DEBUG_LOC:
          // [line, column, scope, inlined at, ...]: LLVM takes the scope's
          // context from it without checking that there is one (a read
          // through null, for every such record).
          if (R.size() >= 4 && R[2] == 0)
            Refuse("a debug location has no scope");
          break;
        case bitc::FUNC_CODE_INST_CATCHSWITCH:
          // [parent pad, handler count, handlers..., (unwind)]: the same.
          if (R.size() >= 2 && R[1] > R.size() - 2)
            Refuse("a catchswitch claims " + std::to_string(R[1]) +
                   " handlers, more than its record of " +
                   std::to_string(R.size()) + " operands can hold");
          break;
        default:
          break;
        }
        return true;
      };
      // ATTACHMENT: [instruction, (kind, metadata)...] (an odd count; an
      // even one is the function's own): LLVM takes the instruction from
      // those read so far without checking that it is one of them, and
      // writes through what it finds (a crash, or a write to the heap).
      auto Attachment = [&](unsigned Code, ArrayRef<uint64_t> R, StringRef) {
        if (Code == bitc::METADATA_ATTACHMENT && R.size() % 2 == 1 &&
            R[0] >= Instructions)
          Refuse("a metadata attachment names instruction " +
                 std::to_string(R[0]) + ", past the function's " +
                 std::to_string(Instructions) + " instructions");
        return true;
      };
      auto Nested = [&](unsigned Sub) -> Expected<bool> {
        Error E = Error::success();
        if (Sub == bitc::CONSTANTS_BLOCK_ID)
          E = Constants(Sub);
        else if (Sub == bitc::METADATA_BLOCK_ID)
          E = forEachRecord(Stream, Sub, Metadata);
        else if (Sub == bitc::METADATA_ATTACHMENT_ID)
          E = forEachRecord(Stream, Sub, Attachment);
        else
          return false;
        if (E)
          return std::move(E);
        return true;
      };
      if (Error E = forEachRecord(Stream, ID, Instruction, Nested))
        return std::move(E);
      uint64_t Bits = Stream.GetCurrentBitNo() - BodyStart;
      if (Blocks > Bits)
        Refuse("a function body declares " + std::to_string(Blocks) +
               " basic blocks, more than its " + std::to_string(Bits) +
               " bits can hold");
      return true;
    }
    default:
      return false;
    }
  };
  if (Error E = forEachRecord(Stream, bitc::MODULE_BLOCK_ID, Note, SubBlock))
    return std::move(E);
  uint64_t Bits = Stream.GetCurrentBitNo() - Start;
  if (MaxParamIndex > Bits)
    Refuse("an attribute index names parameter " +
           std::to_string(MaxParamIndex - 1) + ", more than a module of " +
           std::to_string(Bits) + " bits can have");
  if (MaxBlockAddress > Bits)
    Refuse("a block address names basic block " +
           std::to_string(MaxBlockAddress) + ", more than a module of " +
           std::to_string(Bits) + " bits can have");
  uint64_t MaxMadeBytes =
      std::max<uint64_t>(MinConstantBudget, ConstantBudgetPerByte * (Bits / 8));
  if (MadeBytes > MaxMadeBytes)
    Refuse("its constants and enumerators take " + std::to_string(MadeBytes) +
           " bytes as LLVM makes them (integers wider than 64 bits, vectors "
           "with a value in every lane), more than fatlink reads from a "
           "module of " +
           std::to_string(Bits / 8) + " bytes (" +
           std::to_string(MinConstantBudget >> 20) + " MB, or " +
           std::to_string(ConstantBudgetPerByte) + " times its size)");
  return Scan;
}

/// The size of the blob of the last RecordId record in the block Block,
/// as LLVM's reader reads a string or symbol table.
static Expected<size_t> blobSize(BitstreamCursor &Stream, unsigned Block,
                                 unsigned RecordId) {
  size_t Size = 0;
  auto Note = [&](unsigned Code, ArrayRef<uint64_t>, StringRef Blob) {
    if (Code == RecordId)
      Size = Blob.size();
    return true;
  };
  if (Error E = forEachRecord(Stream, Block, Note))
    return std::move(E);
  return Size;
}

/// What LLVM's reader takes from a file as given, checked before it reads
/// the file. It takes a global variable's partition name from the string
/// table without checking that it lies inside it (it checks a function's
/// and an alias's): a corrupt record makes it read past the table, or
/// crash. And it sizes tables by numbers in records (ModuleScan): a corrupt
/// one makes it allocate gigabytes for a file of kilobytes. Checked: the
/// partition names of every module lie inside the string table that
/// follows it, and each module's tables fit its size.
static Error checkTables(MemoryBufferRef MB, StringRef Origin) {
  StringRef Buf = MB.getBuffer();
  const unsigned char *Begin =
      reinterpret_cast<const unsigned char *>(Buf.begin());
  const unsigned char *End = reinterpret_cast<const unsigned char *>(Buf.end());
  if (isBitcodeWrapper(Begin, End) &&
      SkipBitcodeWrapperHeader(Begin, End, /*VerifyBufferSize=*/true))
    return Error::success(); // LLVM's reader says what is wrong
  if (!isRawBitcode(Begin, End))
    return Error::success();
  BitstreamCursor Stream(ArrayRef<uint8_t>(Begin, End));
  // The modules no string table has been given yet: their names' ends.
  std::vector<uint64_t> Pending;
  // The first module whose names do not fit: its end and the table's size.
  std::optional<std::pair<uint64_t, uint64_t>> Bad;
  // Why the first module LLVM's reader must not read is refused
  // (ModuleScan).
  std::string Refused;
  BitstreamBlockInfo BlockInfo; // the stream's, once read
  auto Walk = [&]() -> Error {
    if (Error E = Stream.JumpToBit(32)) // past 'BC' 0xC0DE
      return E;
    // As LLVM's reader walks the top level (getBitcodeFileContents): up to
    // the last 8 bytes, which may be a client's padding; records skipped;
    // a module skipped by its length; a string or symbol table read to its
    // end; a string table given to the modules before it that have none.
    while (Stream.getCurrentByteNo() + 8 < Stream.getBitcodeBytes().size() &&
           !Bad && Refused.empty()) {
      Expected<BitstreamEntry> Entry = Stream.advance();
      if (!Entry)
        return Entry.takeError();
      if (Entry->Kind == BitstreamEntry::Record) {
        if (Error E = Stream.skipRecord(Entry->ID).takeError())
          return E;
        continue;
      }
      if (Entry->Kind != BitstreamEntry::SubBlock)
        return createStringError("malformed block");
      switch (Entry->ID) {
      case bitc::MODULE_BLOCK_ID: {
        uint64_t Start = Stream.GetCurrentBitNo();
        Expected<ModuleScan> Scan = scanModule(Stream, BlockInfo);
        if (!Scan)
          return Scan.takeError();
        if (!Scan->Refused.empty() && Refused.empty())
          Refused = std::move(Scan->Refused);
        Pending.push_back(Scan->NamesEnd);
        if (Error E = Stream.JumpToBit(Start))
          return E;
        if (Error E = Stream.SkipBlock())
          return E;
        break;
      }
      case bitc::STRTAB_BLOCK_ID: {
        Expected<size_t> Size =
            blobSize(Stream, bitc::STRTAB_BLOCK_ID, bitc::STRTAB_BLOB);
        if (!Size)
          return Size.takeError();
        if (*Size == 0)
          break; // LLVM gives the modules the next one
        for (uint64_t NamesEnd : Pending)
          if (NamesEnd > *Size && !Bad)
            Bad = {NamesEnd, *Size};
        Pending.clear();
        break;
      }
      case bitc::SYMTAB_BLOCK_ID:
        if (Expected<size_t> Size =
                blobSize(Stream, bitc::SYMTAB_BLOCK_ID, bitc::SYMTAB_BLOB);
            !Size)
          return Size.takeError();
        break;
      default:
        if (Error E = Stream.SkipBlock())
          return E;
      }
    }
    return Error::success();
  };
  // What this walk cannot read, LLVM's reader could read differently: the
  // file is refused rather than handed to it unchecked.
  if (Error E = Walk())
    return createStringError("%s: corrupt bitcode: %s", Origin.str().c_str(),
                             toString(std::move(E)).c_str());
  if (!Refused.empty())
    return createStringError("%s: corrupt bitcode: %s", Origin.str().c_str(),
                             Refused.c_str());
  for (uint64_t NamesEnd : Pending)
    if (NamesEnd > 0 && !Bad)
      Bad = {NamesEnd, 0};
  if (!Bad)
    return Error::success();
  std::string Where =
      "the module's string table has " + std::to_string(Bad->second) + " bytes";
  if (Bad->first != UINT64_MAX)
    Where += "; the name ends at byte " + std::to_string(Bad->first);
  return createStringError("%s: corrupt bitcode: a global variable's "
                           "partition name lies outside the module's string "
                           "table (%s)",
                           Origin.str().c_str(), Where.c_str());
}

Expected<std::unique_ptr<Module>>
readOwnBitcode(MemoryBufferRef MB, LLVMContext &Ctx, const Twine &What) {
  takeOverDebugInfoChecks(); // what fatlink wrote, it verified
  Expected<std::unique_ptr<Module>> M = parseBitcodeFile(MB, Ctx);
  if (M)
    return M;
  return createStringError(
      "LLVM cannot read back %s, which it wrote: %s: an input holds what "
      "LLVM read without an error but does not write back (corrupt in a "
      "way fatlink does not detect, or an LLVM bug); link the inputs in "
      "halves to find which",
      What.str().c_str(), toString(M.takeError()).c_str());
}

Error checkBitcode(MemoryBufferRef MB, StringRef Origin) {
  Expected<std::string> ProducerOrErr = getBitcodeProducerString(MB);
  std::string Producer;
  if (ProducerOrErr)
    Producer = std::move(*ProducerOrErr);
  else
    consumeError(ProducerOrErr.takeError());

  std::optional<unsigned> Major = producerMajor(Producer);
  if (Major && *Major > LLVM_VERSION_MAJOR)
    return createStringError(
        "%s: bitcode was produced by %s, this fatlink reads LLVM <= %d: "
        "rebuild fatlink against LLVM %u, or compile with a toolchain "
        "built on LLVM %d (for Rust, a rustc whose `rustc -vV` reports "
        "LLVM version %d)",
        Origin.str().c_str(), Producer.c_str(), LLVM_VERSION_MAJOR, *Major,
        LLVM_VERSION_MAJOR, LLVM_VERSION_MAJOR);

  Expected<std::string> TripleOrErr = getBitcodeTargetTriple(MB);
  if (!TripleOrErr)
    return createStringError("%s: corrupt bitcode: %s", Origin.str().c_str(),
                             toString(TripleOrErr.takeError()).c_str());
  Triple T(*TripleOrErr);
  if (T.getArch() != Triple::nvptx64)
    return createStringError(
        "%s: bitcode is for target '%s', not nvptx64-nvidia-cuda: device "
        "code must be compiled for the GPU (rustc --target "
        "nvptx64-nvidia-cuda, clang -x cuda --cuda-device-only or "
        "--offload-new-driver -foffload-lto)",
        Origin.str().c_str(),
        TripleOrErr->empty() ? "(none)" : TripleOrErr->c_str());
  return checkTables(MB, Origin);
}

/// The device runtime's file name; an archive of nvcc relocatable code by
/// this name is a device library, any other is refused.
static constexpr const char DeviceRuntimeName[] = "libcudadevrt.a";

static Expected<DeviceLibrary> readDeviceLibrary(MemoryBufferRef MB,
                                                 StringRef Path) {
  Expected<std::vector<packager::EmbeddedImage>> ImagesOrErr =
      packager::scanFile(MB.getBuffer(), sys::path::filename(Path));
  if (!ImagesOrErr)
    return createStringError("%s: cannot read its device code: %s",
                             Path.str().c_str(),
                             toString(ImagesOrErr.takeError()).c_str());
  DeviceLibrary Lib;
  Lib.Path = Path.str();
  const packager::EmbeddedImage *First = nullptr;
  for (const packager::EmbeddedImage &I : *ImagesOrErr) {
    if (I.Section != "__nv_relfatbin" || I.Kind != "cubin")
      continue;
    if (!First)
      First = &I;
    if (!is_contained(Lib.Arches, I.Arch))
      Lib.Arches.push_back(I.Arch);
  }
  if (!First)
    return createStringError(
        "%s: no relocatable cubins (no __nv_relfatbin section "
        "with cubins): the CUDA device runtime is nvcc "
        "relocatable device code; use the toolkit's "
        "lib64/libcudadevrt.a",
        Path.str().c_str());
  // Oldest first, for messages ("sm_100, sm_103, sm_110").
  auto SmOf = [](StringRef Arch) {
    unsigned Sm = 0;
    Arch.drop_front(3).consumeInteger(10, Sm);
    return Sm;
  };
  llvm::sort(Lib.Arches, [&](const std::string &A, const std::string &B) {
    return std::make_tuple(SmOf(A), A) < std::make_tuple(SmOf(B), B);
  });
  // Every arch's cubin defines the same interface: read the first one's.
  Expected<packager::ModuleSymbols> Syms =
      packager::readCubinSymbols(First->Data);
  if (!Syms)
    return createStringError("%s: its %s cubin: %s", Path.str().c_str(),
                             First->Arch.c_str(),
                             toString(Syms.takeError()).c_str());
  Lib.Defined = std::move(Syms->Defined);
  llvm::sort(Lib.Defined);
  Lib.Defined.erase(std::unique(Lib.Defined.begin(), Lib.Defined.end()),
                    Lib.Defined.end());
  return Lib;
}

Expected<DeviceLibrary> readDeviceLibrary(StringRef Path) {
  ErrorOr<std::unique_ptr<MemoryBuffer>> MBOrErr =
      MemoryBuffer::getFile(Path, /*IsText=*/false,
                            /*RequiresNullTerminator=*/false);
  if (!MBOrErr)
    return createStringError("cannot open %s: %s", Path.str().c_str(),
                             MBOrErr.getError().message().c_str());
  return readDeviceLibrary((*MBOrErr)->getMemBufferRef(), Path);
}

/// Sets \p O's symbols and kernels to \p S's.
static void setSymbols(DeviceObject &O, packager::ModuleSymbols S) {
  O.Defined = std::move(S.Defined);
  O.Undefined = std::move(S.Undefined);
  O.OptionalUndefined = std::move(S.OptionalUndefined);
  O.Weak = std::move(S.Weak);
  O.Kernels = std::move(S.Kernels);
}

void readPtxSymbols(StringRef Ptx, DeviceObject &O) {
  setSymbols(O, packager::readPtxSymbols(Ptx));
}

namespace {

/// Collects device images and the errors met on the way, so that one run
/// reports every bad input.
class InputReader {
public:
  InputReader(InputMode Mode, unsigned ErrorLimit)
      : Mode(Mode), Errors(ErrorLimit) {}

  InputMode Mode;
  InputSet Set;
  ErrorList Errors;
  /// Source number of the next container (file, member or object).
  unsigned NextSource = 0;
  /// The files read so far, by identity: a file named twice (`-ldev -ldev`
  /// for circular dependencies, a path and a symlink to it) is read once,
  /// as a linker takes an archive's members once.
  std::set<sys::fs::UniqueID> Seen;

  void readFile(const std::string &Path);

private:
  void addBitcode(MemoryBufferRef MB, std::string Origin, std::string Arch,
                  size_t &Found);
  void addObject(MemoryBufferRef MB, std::string Origin, std::string Arch,
                 size_t &Found);
  void readArchive(MemoryBufferRef MB, StringRef Path, size_t &Found);
  void readMember(MemoryBufferRef MB, const std::string &Origin, size_t &Found);
  void readOffloadObject(MemoryBufferRef MB, StringRef Origin, size_t &Found);
  void readNvccFatbin(MemoryBufferRef Object, StringRef Contents,
                      StringRef Origin, size_t &Found);
};

} // namespace

void InputReader::addBitcode(MemoryBufferRef MB, std::string Origin,
                             std::string Arch, size_t &Found) {
  // In a host link, bitcode for another target is host LTO input.
  if (Mode == InputMode::HostLink) {
    Expected<std::string> TripleOrErr = getBitcodeTargetTriple(MB);
    if (!TripleOrErr || Triple(*TripleOrErr).getArch() != Triple::nvptx64) {
      if (!TripleOrErr)
        consumeError(TripleOrErr.takeError());
      Set.Skipped.push_back(Origin + ": host bitcode");
      return;
    }
  }
  if (Error E = checkBitcode(MB, Origin)) {
    Errors.add(std::move(E));
    return;
  }
  Set.Images.push_back({std::move(Origin), MB, std::move(Arch), NextSource});
  ++Found;
}

/// A relocatable cubin: an ELF for EM_CUDA whose global symbols are read.
void InputReader::addObject(MemoryBufferRef MB, std::string Origin,
                            std::string Arch, size_t &Found) {
  DeviceObject Obj;
  Expected<packager::ModuleSymbols> Syms =
      packager::readCubinSymbols(MB.getBuffer());
  if (!Syms) {
    Errors.add(createStringError("%s: %s", Origin.c_str(),
                                 toString(Syms.takeError()).c_str()));
    return;
  }
  setSymbols(Obj, std::move(*Syms));
  Obj.Container = Origin.substr(0, Origin.rfind("(.llvm.offloading"));
  Obj.Origin = std::move(Origin);
  Obj.Data = MB;
  Obj.Arch = std::move(Arch);
  Set.Objects.push_back(std::move(Obj));
  ++Found;
}

/// The `__nv_relfatbin` section of an nvcc -dc object: its relocatable
/// cubins and PTX, each a DeviceObject of one translation unit (a new unit
/// starts where an entry's kind and arch repeat: `ld -r` of nvcc objects
/// concatenates their fatbins). LTO-IR (`code=lto_XX`, `-dlto`) is refused
/// with what to do instead.
void InputReader::readNvccFatbin(MemoryBufferRef Object, StringRef Contents,
                                 StringRef Origin, size_t &Found) {
  Expected<std::vector<packager::FatbinEntry>> Entries =
      packager::readFatbin(Contents);
  if (!Entries) {
    Errors.add(createStringError("%s: cannot read its nvcc device code "
                                 "(__nv_relfatbin): %s",
                                 Origin.str().c_str(),
                                 toString(Entries.takeError()).c_str()));
    return;
  }
  std::set<std::pair<unsigned, std::string>> UnitEntries;
  for (auto [I, E] : enumerate(*Entries)) {
    std::string EntryOrigin =
        (Origin + "(__nv_relfatbin[" + Twine(I) + "])").str();
    bool IsPTX = E.Kind == packager::ImageKind::PTX;
    bool IsLTOIR = E.Kind == packager::ImageKind::LtoIR;
    std::string Arch = IsPTX     ? "compute_" + std::to_string(E.SM)
                       : IsLTOIR ? "lto_" + std::to_string(E.SM)
                                 : E.Arch;
    if (IsLTOIR) {
      // Only nvJitLink reads LTO-IR; it takes the whole object and picks
      // the entry. Its symbols come later (readPtxSymbols, by the driver).
      if (!UnitEntries.insert({unsigned(E.Kind), Arch}).second) {
        ++NextSource;
        UnitEntries = {{unsigned(E.Kind), Arch}};
      }
      DeviceObject Obj;
      Obj.Origin = EntryOrigin;
      Obj.Container = Origin.str();
      Obj.Data = Object;
      Obj.Arch = std::move(Arch);
      Obj.IsLTOIR = true;
      Obj.LtoIrMajor = E.Major;
      Obj.LtoIrMinor = E.Minor;
      Obj.FromNvcc = true;
      Obj.Source = NextSource;
      Set.Objects.push_back(std::move(Obj));
      ++Found;
      continue;
    }
    if (!UnitEntries.insert({unsigned(E.Kind), Arch}).second) {
      ++NextSource; // an arch repeats: the next unit's entries
      UnitEntries = {{unsigned(E.Kind), Arch}};
    }
    StringRef Payload = E.Payload;
    if (IsPTX)
      Payload = Payload.rtrim('\0'); // the entry's padding
    std::unique_ptr<MemoryBuffer> Copy =
        MemoryBuffer::getMemBufferCopy(Payload, EntryOrigin);
    DeviceObject Obj;
    Obj.Origin = EntryOrigin;
    Obj.Container = Origin.str();
    Obj.Data = Copy->getMemBufferRef();
    Obj.Arch = std::move(Arch);
    Obj.IsPTX = IsPTX;
    Obj.FromNvcc = true;
    Obj.Source = NextSource;
    Set.addBuffer(std::move(Copy));
    if (IsPTX) {
      setSymbols(Obj, packager::readPtxSymbols(Obj.Data.getBuffer()));
    } else if (Expected<packager::ModuleSymbols> Syms =
                   packager::readCubinSymbols(Obj.Data.getBuffer())) {
      setSymbols(Obj, std::move(*Syms));
    } else {
      Errors.add(createStringError("%s: %s", EntryOrigin.c_str(),
                                   toString(Syms.takeError()).c_str()));
      continue;
    }
    Set.Objects.push_back(std::move(Obj));
    ++Found;
  }
  ++NextSource;
}

/// The source file a bitcode image was compiled from (its module's
/// source_filename: clang's main file, rustc's crate root); empty when the
/// bitcode does not say or does not parse (its check reports that).
///
/// Every image of an offload object is asked, and a re-link served from
/// the cache asks them all, so this reads only the few records before the
/// first sub-block that matters: the module block's SOURCE_FILENAME record,
/// which the writer emits among the module's first records, with LLVM's
/// bitstream cursor, skipping every sub-block by its length. (Loading the
/// module lazily, the obvious way, costs about 0.2 ms an image: 0.2 s for a
/// 256-unit, four-arch program's cached re-link.)
/// Whether \p Obj defines a __cudaRegisterLinkedBinary_<id> function: nvcc
/// -dlink's output does; nvcc's -rdc objects call it.
///
/// A corrupt symbol table can claim more entries than the file holds (an
/// ELF `.symtab` of sh_size 2^64 - 112, found by fuzzing, is 7.7e17 of
/// them, each of which fails to read: hours). The first entry that cannot
/// be read therefore ends the scan: what follows it is no more readable.
static bool definesNvccRegistration(const object::ObjectFile &Obj) {
  for (const object::SymbolRef &Sym : Obj.symbols()) {
    Expected<uint32_t> Flags = Sym.getFlags();
    if (!Flags) {
      consumeError(Flags.takeError());
      return false;
    }
    Expected<StringRef> Name = Sym.getName();
    if (!Name) {
      consumeError(Name.takeError());
      return false;
    }
    if ((*Flags & object::SymbolRef::SF_Global) &&
        !(*Flags & object::SymbolRef::SF_Undefined) &&
        Name->starts_with("__cudaRegisterLinkedBinary_"))
      return true;
  }
  return false;
}

static std::string sourceFileName(MemoryBufferRef MB) {
  StringRef Buf = MB.getBuffer();
  if (!isBitcode(reinterpret_cast<const unsigned char *>(Buf.begin()),
                 reinterpret_cast<const unsigned char *>(Buf.end())))
    return "";
  BitstreamCursor Stream(Buf);
  auto Scan = [&]() -> Expected<std::string> {
    if (Error E = Stream.JumpToBit(32)) // past the magic, BC 0xC0DE
      return std::move(E);
    while (true) {
      Expected<BitstreamEntry> Entry = Stream.advance();
      if (!Entry)
        return Entry.takeError();
      if (Entry->Kind == BitstreamEntry::Record) {
        if (Error E = Stream.skipRecord(Entry->ID).takeError())
          return std::move(E);
        continue;
      }
      if (Entry->Kind != BitstreamEntry::SubBlock)
        return "";
      if (Entry->ID != bitc::MODULE_BLOCK_ID) {
        if (Error E = Stream.SkipBlock())
          return std::move(E);
        continue;
      }
      std::string Name;
      if (Error E = forEachRecord(
              Stream, bitc::MODULE_BLOCK_ID,
              [&](unsigned Code, ArrayRef<uint64_t> R, StringRef Blob) {
                if (Code != bitc::MODULE_CODE_SOURCE_FILENAME)
                  return true;
                if (!Blob.empty())
                  Name = Blob.str();
                else
                  for (uint64_t C : R)
                    Name += char(C);
                return false;
              }))
        return std::move(E);
      return Name;
    }
  };
  Expected<std::string> Name = Scan();
  if (!Name) {
    consumeError(Name.takeError());
    return "";
  }
  return *Name;
}

/// An object's `.llvm.offloading` section may hold several translation
/// units: clang writes one OffloadBinary per arch of one unit, consecutively,
/// and `ld -r` and `fatlink embed` concatenate the binaries of their inputs
/// in order. The images of one unit are alternatives (each target links the
/// best arch of each unit), so the units must be told apart: a new unit
/// starts where the bitcode's source file changes, where an arch repeats
/// (the same file compiled twice, or rustc's codegen units, all of one
/// arch), at every image without an arch, and, for relocatable cubins
/// (which name no source file), where the global symbols a cubin defines
/// differ from its unit's first cubin's. Two units of the same source file
/// with disjoint arch sets next to each other cannot be told from one unit
/// compiled for their union (see docs/lto.md).
void InputReader::readOffloadObject(MemoryBufferRef MB, StringRef Origin,
                                    size_t &Found) {
  auto CannotRead = [&](Error E) {
    Errors.add(createStringError(
        "%s: cannot read its .llvm.offloading section: %s",
        Origin.str().c_str(), toString(std::move(E)).c_str()));
  };
  Expected<std::unique_ptr<object::ObjectFile>> ObjOrErr =
      object::ObjectFile::createObjectFile(MB);
  if (!ObjOrErr) {
    CannotRead(ObjOrErr.takeError());
    return;
  }
  auto AtOffset = [](uint64_t Off, Error E) {
    return createStringError("offset %llu: %s", (unsigned long long)Off,
                             toString(std::move(E)).c_str());
  };
  // Calls Fn for every OffloadBinary of the object, in order, and notes
  // nvcc's sections (-dc's __nv_relfatbin, -c's .nv_fatbin) on the way.
  bool HasNvccCode = false;
  std::vector<StringRef> RelocatableFatbins;
  auto ForEachBinary =
      [&](function_ref<Error(const object::OffloadBinary &)> Fn) {
        HasNvccCode = false;
        RelocatableFatbins.clear();
        return intake::forEachDeviceSection(
            **ObjOrErr, Origin,
            [&](intake::SectionKind Kind, StringRef Name,
                StringRef Contents) -> Error {
              if (Kind == intake::SectionKind::Fatbin) {
                if (Name == "__nv_relfatbin")
                  RelocatableFatbins.push_back(Contents);
                else
                  HasNvccCode = true;
                return Error::success();
              }
              return intake::forEachOffloadBinary(
                  Contents,
                  [&](uint64_t, const object::OffloadBinary &OB) {
                    return Fn(OB);
                  },
                  AtOffset);
            });
      };
  // Every binary is checked before any is read, so that a bad one is the
  // only error its object reports.
  size_t NumBinaries = 0;
  if (Error E = ForEachBinary([&](const object::OffloadBinary &) {
        ++NumBinaries;
        return Error::success();
      })) {
    CannotRead(std::move(E));
    return;
  }
  if (NumBinaries == 0 && RelocatableFatbins.empty() && HasNvccCode) {
    // nvcc -c: complete cubins that its own constructor registers. Left as
    // they are, but remembered: an undefined symbol it defines says so.
    Set.NvccObjects.push_back({Origin.str(), MB});
    Set.Skipped.push_back(
        Origin.str() +
        (definesNvccRegistration(**ObjOrErr)
             ? ": nvcc -dlink output (nvlink's device link of nvcc -rdc "
               "code): left as it is (fatlink cc leaves it out of the host "
               "link when it registers those modules itself)"
             : ": nvcc whole-program device code (nvcc -c without -rdc), "
               "which registers itself: left as it is"));
  }
  bool UnitOpen = false;
  std::string UnitFile;
  StringSet<> UnitArches;
  // Relocatable cubins carry no source file name; the per-arch cubins of
  // one unit define the same global symbols (its kernels and visible
  // functions), another unit's define others (or the link has duplicates).
  std::optional<std::vector<std::string>> UnitDefined;
  size_t I = 0;
  auto ReadBinary = [&](const object::OffloadBinary &OB) -> Error {
    // An image fatlink embed wrapped names its own origin (the crate's
    // rlib and member), which says more than its index.
    StringRef Embedded = OB.getString(packager::OriginKey);
    std::string ImageOrigin =
        Embedded.empty()
            ? (Origin + "(.llvm.offloading[" + Twine(I) + "])").str()
            : (Origin + "(" + Embedded + ")").str();
    ++I;
    Triple T(OB.getTriple());
    if (T.getArch() != Triple::nvptx64) {
      Set.Skipped.push_back(ImageOrigin + ": image for " + OB.getTriple().str() +
                            ", not an NVIDIA GPU");
      return Error::success();
    }
    // An image for an arch fatlink cannot place (not sm_NN, sm_NNa or
    // sm_NNf) would never be chosen for any target: refuse it rather than
    // leave its code out without a word.
    StringRef Arch = OB.getArch();
    if (!Arch.empty() && !parseArchName(Arch)) {
      Errors.add(createStringError(
          "%s: image for unknown GPU arch '%s': fatlink links device code "
          "compiled for sm_NN, sm_NNa or sm_NNf; recompile it with "
          "--offload-arch=sm_NN",
          ImageOrigin.c_str(), Arch.str().c_str()));
      return Error::success();
    }
    std::string File = OB.getImageKind() == object::IMG_Bitcode
                           ? sourceFileName(MemoryBufferRef(OB.getImage(), ""))
                           : std::string();
    bool StartsUnit =
        !UnitOpen ||
        (Arch.empty() || File != UnitFile || UnitArches.contains(Arch));
    if (StartsUnit && UnitOpen) {
      ++NextSource;
      UnitArches.clear();
    }
    if (StartsUnit)
      UnitDefined.reset();
    UnitOpen = true;
    UnitFile = File;
    UnitArches.insert(Arch);
    object::ImageKind Kind = OB.getImageKind();
    if (Kind != object::IMG_Bitcode && Kind != object::IMG_Object &&
        Kind != object::IMG_Cubin) {
      Errors.add(createStringError(
          "%s: the %s image is %s, which fatlink cannot link: it links LLVM "
          "bitcode (clang -foffload-lto, fatlink embed) and relocatable "
          "cubins (clang -fgpu-rdc)",
          ImageOrigin.c_str(), OB.getArch().str().c_str(),
          object::getImageKindName(Kind).str().c_str()));
      return Error::success();
    }
    // The image is referred to where it lies, in the object's bytes, which
    // the set owns (a file's pages, mapped, not a copy on the heap: tens of
    // MB in a large program), unless forEachOffloadBinary had to copy a
    // misaligned section: that copy lives only during the walk. Either way
    // the set holds a buffer named for the image, the name its bitcode
    // reader gives the module.
    StringRef Image = OB.getImage();
    bool InObject = Image.begin() >= MB.getBufferStart() &&
                    Image.end() <= MB.getBufferEnd();
    std::unique_ptr<MemoryBuffer> Buffer =
        InObject ? MemoryBuffer::getMemBuffer(Image, ImageOrigin,
                                              /*RequiresNullTerminator=*/false)
                 : MemoryBuffer::getMemBufferCopy(Image, ImageOrigin);
    MemoryBufferRef Ref = Buffer->getMemBufferRef();
    Set.addBuffer(std::move(Buffer));
    if (Kind == object::IMG_Bitcode)
      addBitcode(Ref, ImageOrigin, OB.getArch().str(), Found);
    else {
      size_t Before = Set.Objects.size();
      addObject(Ref, ImageOrigin, OB.getArch().str(), Found);
      if (Set.Objects.size() == Before)
        return Error::success();
      std::vector<std::string> Defined = Set.Objects.back().Defined;
      llvm::sort(Defined);
      if (UnitDefined && *UnitDefined != Defined) {
        ++NextSource; // another unit's cubin
        UnitArches.clear();
        UnitArches.insert(Arch);
        UnitDefined.reset();
      }
      if (!UnitDefined)
        UnitDefined = std::move(Defined);
      Set.Objects.back().Source = NextSource;
    }
    return Error::success();
  };
  // Checked above: this walk meets no error.
  if (Error E = ForEachBinary(ReadBinary))
    CannotRead(std::move(E));
  ++NextSource;
  for (StringRef Contents : RelocatableFatbins)
    readNvccFatbin(MB, Contents, Origin, Found);
}

void InputReader::readMember(MemoryBufferRef MB, const std::string &Origin,
                             size_t &Found) {
  switch (identify_magic(MB.getBuffer())) {
  case file_magic::bitcode:
    addBitcode(MB, Origin, "", Found);
    ++NextSource;
    break;
  case file_magic::elf_relocatable:
    readOffloadObject(MB, Origin, Found);
    break;
  default:
    Set.Skipped.push_back(Origin + ": not device code");
    break;
  }
}

void InputReader::readArchive(MemoryBufferRef MB, StringRef Path,
                              size_t &Found) {
  // Thin archives are followed as ld and lld follow them, so fatlink reads
  // the device code of exactly the files the host linker links; a member
  // file that cannot be read is reported and the other members read.
  size_t Members = 0;
  Error E = intake::forEachMember(
      MB, Path, intake::ThinArchive::Follow,
      [&](intake::Member &M) -> Error {
        ++Members;
        if (M.Owned)
          Set.addBuffer(std::move(M.Owned));
        readMember(M.Data, (Path + "(" + M.Name + ")").str(), Found);
        return Error::success();
      },
      [&](Error E) {
        ++Members;
        Errors.add(std::move(E));
      });
  if (E) {
    Errors.add(std::move(E));
    return;
  }
  if (Members == 0)
    Set.Skipped.push_back(Path.str() + ": empty archive");
}

void InputReader::readFile(const std::string &Path) {
  sys::fs::file_status Status;
  bool Exists = !sys::fs::status(Path, Status);
  // Only regular files are read: a FIFO would block, a device such as
  // /dev/zero would be read until memory ran out, a directory has nothing.
  if (Exists && Status.type() != sys::fs::file_type::regular_file) {
    if (Mode == InputMode::HostLink) {
      Set.Skipped.push_back(Path + ": not a regular file (left to the host "
                                   "linker)");
      return;
    }
    Errors.add(
        createStringError("%s: not a regular file (a FIFO, a device or a "
                          "directory): pass the bitcode, archive or object "
                          "file itself",
                          Path.c_str()));
    return;
  }
  if (Exists && !Seen.insert(Status.getUniqueID()).second) {
    Set.Skipped.push_back(Path + ": already read (the same file as an "
                                 "earlier input)");
    return;
  }
  ErrorOr<std::unique_ptr<MemoryBuffer>> MBOrErr =
      MemoryBuffer::getFile(Path, /*IsText=*/false,
                            /*RequiresNullTerminator=*/false);
  if (!MBOrErr) {
    if (Mode == InputMode::HostLink) {
      Set.Skipped.push_back(Path + ": cannot open (left to the host linker)");
      return;
    }
    Errors.add(createStringError("cannot open %s: %s", Path.c_str(),
                                 MBOrErr.getError().message().c_str()));
    return;
  }
  MemoryBufferRef MB = (*MBOrErr)->getMemBufferRef();
  Set.addBuffer(std::move(*MBOrErr));
  Set.Files.push_back(Path);

  size_t Found = 0;
  // Whether this file's reading failed already; earlier files' errors must
  // not hide that this one has no device code.
  unsigned ErrorsBefore = Errors.count();
  auto FailedHere = [&] { return Errors.count() != ErrorsBefore; };
  bool Strict = Mode == InputMode::Device;
  file_magic Magic = identify_magic(MB.getBuffer());
  switch (Magic) {
  case file_magic::bitcode:
    addBitcode(MB, Path, "", Found);
    ++NextSource;
    return;
  case file_magic::archive: {
    if (sys::path::filename(Path) == DeviceRuntimeName) {
      // CUDA's device runtime: nvlink links it as an archive, taking only
      // the members the program needs.
      Expected<DeviceLibrary> Lib = readDeviceLibrary(MB, Path);
      if (Lib)
        Set.Libraries.push_back(std::move(*Lib));
      else
        Errors.add(Lib.takeError());
      return;
    }
    size_t NvccBefore = Set.NvccObjects.size();
    readArchive(MB, Path, Found);
    // Members of nvcc -c code register themselves: seen and left alone, as
    // such an object is on its own.
    bool WholeProgram = Set.NvccObjects.size() != NvccBefore;
    if (Strict && Found == 0 && !FailedHere() && !WholeProgram)
      Errors.add(createStringError(
          "%s: archive contains no device bitcode: build the crate or "
          "library for the GPU (rustc --target nvptx64-nvidia-cuda, objects "
          "from clang --offload-new-driver -fgpu-rdc -foffload-lto, or nvcc "
          "-dc)",
          Path.c_str()));
    return;
  }
  case file_magic::elf_executable:
  case file_magic::elf_shared_object:
    if (!Strict) {
      // Linked images carry their own fatbins, registered at run time.
      Set.Skipped.push_back(Path + ": shared library or executable");
      return;
    }
    [[fallthrough]];
  case file_magic::elf_relocatable: {
    size_t NvccBefore = Set.NvccObjects.size();
    readOffloadObject(MB, Path, Found);
    // nvcc -c code registers itself: seen and left alone (-v says so).
    bool WholeProgram = Set.NvccObjects.size() != NvccBefore;
    if (Strict && Found == 0 && !FailedHere() && !WholeProgram)
      Errors.add(createStringError(
          "%s: object carries no device bitcode (no .llvm.offloading "
          "section with nvptx64 bitcode, no nvcc -dc __nv_relfatbin "
          "section)",
          Path.c_str()));
    return;
  }
  default:
    if (!Strict) {
      Set.Skipped.push_back(Path + ": not device code");
      return;
    }
    Errors.add(
        createStringError("%s: unknown file type: expected LLVM bitcode, an "
                          "archive or an ELF object with device code",
                          Path.c_str()));
    return;
  }
}

/// NN of a PTX or LTO-IR object's arch "compute_NN" or "lto_NN"
/// (readNvccFatbin makes the name from the entry's SM).
static unsigned archSm(const DeviceObject &O) {
  unsigned Sm = ~0u;
  if (StringRef(O.Arch)
          .drop_until([](char C) { return C == '_'; })
          .drop_front()
          .getAsInteger(10, Sm))
    return ~0u;
  return Sm;
}

/// Whether a relocatable cubin for \p Arch ("sm_80", "sm_100f") runs on
/// target \p T though it is not T's arch: a GPU runs the SASS of an older
/// arch of its major version (sm_80 on sm_86 and sm_89; CUDA's binary
/// compatibility, which nvlink applies too), but never an arch-specific
/// one's ("sm_90a").
static bool cubinRunsOn(StringRef Arch, const Target &T) {
  unsigned Sm = 0;
  if (!Arch.consume_front("sm_") || Arch.consumeInteger(10, Sm) ||
      !(Arch.empty() || Arch == "f"))
    return false;
  return Sm / 10 == T.Sm / 10 && Sm <= T.Sm;
}

std::vector<const DeviceObject *>
objectsForTarget(const InputSet &Inputs, const Target &T,
                 std::vector<const DeviceObject *> *Missing) {
  // Units in input order; each one's best object.
  std::vector<unsigned> Order;
  std::map<unsigned, std::pair<const DeviceObject *, const DeviceObject *>>
      Best; // Source -> (chosen, any)
  for (const DeviceObject &O : Inputs.Objects) {
    auto [It, New] = Best.try_emplace(O.Source, nullptr, &O);
    if (New)
      Order.push_back(O.Source);
    const DeviceObject *&Chosen = It->second.first;
    // LTO-IR of an arch no newer than T's, the newest, is best (nvJitLink
    // optimizes across it); then a cubin of T's arch; then PTX of an arch
    // no newer than T's, the newest (ptxas compiles it for T itself); then
    // a cubin of an older arch that runs on T, the newest. A PTX target
    // takes no cubin (its code is one PTX module) and prefers PTX to
    // LTO-IR: nvJitLink's PTX of LTO-IR keeps only what the unit's own
    // kernels reach.
    auto Rank = [&](const DeviceObject &X) -> unsigned {
      if (T.IsPTX)
        return X.IsPTX ? 4 : 2;
      if (X.IsLTOIR)
        return 4;
      if (X.IsPTX)
        return 2;
      return X.Arch == T.Cpu ? 3 : 1;
    };
    if (!O.IsPTX && !O.IsLTOIR) {
      if (T.IsPTX || (O.Arch != T.Cpu && !cubinRunsOn(O.Arch, T)))
        continue;
      if (!Chosen || Rank(*Chosen) < Rank(O) ||
          (Rank(O) == 1 && Rank(*Chosen) == 1 &&
           StringRef(Chosen->Arch)
                   .drop_front(3)
                   .compare_numeric(StringRef(O.Arch).drop_front(3)) < 0))
        Chosen = &O;
      continue;
    }
    if (archSm(O) > T.Sm)
      continue;
    if (!Chosen || Rank(*Chosen) < Rank(O) ||
        (Rank(*Chosen) == Rank(O) && archSm(*Chosen) < archSm(O)))
      Chosen = &O;
  }
  std::vector<const DeviceObject *> Objs;
  for (unsigned Source : Order) {
    auto [Chosen, Any] = Best[Source];
    if (Chosen)
      Objs.push_back(Chosen);
    else if (Missing)
      Missing->push_back(Any);
  }
  return Objs;
}

Expected<InputSet> readInputs(ArrayRef<std::string> Paths, InputMode Mode,
                              unsigned ErrorLimit) {
  TimeTraceScope Scope("Read inputs");
  if (Paths.empty() && Mode == InputMode::Device)
    return createStringError("no input files");
  InputReader R(Mode, ErrorLimit);
  for (const std::string &Path : Paths)
    R.readFile(Path);
  if (Error E = R.Errors.take())
    return std::move(E);
  // Reading the files touched their headers, symbol tables and whatever
  // the kernel mapped around them (a large program's objects, hundreds of
  // MB, nearly all resident): the link faults in again what it parses.
  R.Set.releaseMappedPages();
  return std::move(R.Set);
}

void InputSet::addBuffer(std::unique_ptr<MemoryBuffer> MB) {
  // A mapped buffer is a whole file, mapped read-only (readInputs maps
  // files, never slices): the mapping ends where it does.
  if (MB->getBufferKind() == MemoryBuffer::MemoryBuffer_MMap &&
      MB->getBufferSize() > 0)
    Mapped[MB->getBufferStart()] = MB->getBuffer();
  Buffers.push_back(std::move(MB));
}

void InputSet::releaseMappedPages() const {
  for (const auto &[Start, Mapping] : Mapped)
    intake::releasePages(Mapping, Mapping);
}

void InputSet::releaseMappedPages(StringRef Within) const {
  auto It = Mapped.upper_bound(Within.begin());
  if (It == Mapped.begin())
    return;
  StringRef Mapping = std::prev(It)->second;
  if (Within.begin() >= Mapping.begin() && Within.end() <= Mapping.end())
    intake::releasePages(Mapping, Mapping);
}

} // namespace fatlink::lto
