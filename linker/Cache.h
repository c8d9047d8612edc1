//===- linker/Cache.h - Content-addressed cache of device links ----------===//
//
// Internal to linker/. A device link is a pure function of its device
// inputs, its options and the tools that run it, so its result can be
// reused whenever all three are unchanged: re-linking after a host-only
// change then costs reading the inputs and one hash.
//
// The key is a BLAKE3 hash of, in order: a format tag, fatlink's and LLVM's
// versions, the identity (path, size, modification time) of ptxas, nvlink
// and libdevice, every option that can change the output, and every device
// image's bytes with its arch, source grouping and origin (the entry holds
// the origins: the host object's kernel manifests, --json and replayed
// warnings name them). It is computed before the tools are probed, so a
// hit runs no subprocess at all. A renamed input misses the entry but
// still reuses each partition's O3 result and code, which are keyed by
// content alone.
//
// An entry is one file named "llvmcache-<the key's hex digits>" (the names
// LLVM's pruneCache, which keeps the cache within its limits, considers; it
// leaves every other file alone): "FLCACHE1", the
// payload's length and its BLAKE3 hash, then the payload (targets, their
// PTX, cubins and spills, the kernel table, the fatbin and host object).
// Entries are written to a temporary file in the cache directory and renamed,
// so concurrent links never see half an entry; an entry whose length or hash
// does not match, or that is not a regular file, is treated as a miss and
// rewritten. Type and length are checked before anything is read, and the
// hash through a small buffer before the payload is kept.
//
//===----------------------------------------------------------------------===//

#ifndef FATLINK_LINKER_CACHE_H
#define FATLINK_LINKER_CACHE_H

#include "linker/DeviceBuild.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>

namespace fatlink {

/// The cache key of a device link (64 hex digits).
std::string deviceLinkKey(const DeviceLinkConfig &C, const lto::InputSet &Inputs);

/// The entry for Key in Dir, if present and intact. A damaged entry is
/// reported through Ctx.verbose and treated as absent.
std::optional<DeviceBuild> cacheLookup(Context &Ctx, llvm::StringRef Dir,
                                       llvm::StringRef Key);

/// Stores B under Key in Dir (created if needed); whether it was stored.
/// Failure to write is not an error of the link: it is reported with -v,
/// and by a warning naming the directory once a run
/// (Context::CacheStoreWarned), and the link goes on.
bool cacheStore(Context &Ctx, llvm::StringRef Dir, llvm::StringRef Key,
                const DeviceBuild &B);

/// The cache key of one partition's code for one target (64 hex digits):
/// its bitcode (BitcodeHash: its BLAKE3 hash, computed once for all
/// targets), the target, the optimization level, the tools, and PTXSource:
/// where the target's PTX comes from ("" when generated for it; the oldest
/// and newest arch when it may reuse theirs).
std::string codegenKey(const DeviceLinkConfig &C, const lto::Target &T,
                       llvm::ArrayRef<uint8_t> BitcodeHash,
                       llvm::StringRef PTXSource);

/// The cache key of what fatlink learns about the installed tools by
/// probing them (ToolFacts: LLVM's arches and their PTX ISA versions,
/// ptxas's release, arches and newest PTX ISA): fatlink's and LLVM's
/// versions and ptxas's identity (path, size, modification time), like
/// the link's own key. A link that misses its entry (any edit) then runs
/// no `ptxas --version`/`--help` and no backend probe (about 35 ms). An
/// entry holds the PTX ISA of the arches links have named so far (0 for
/// the others), completed as links name more.
std::string toolFactsKey(const DeviceLinkConfig &C);
std::string encodeToolFacts(const ToolFacts &F);
/// The facts in Payload; none if it is malformed.
std::optional<ToolFacts> decodeToolFacts(llvm::StringRef Payload);

/// The payload of a partition's codegen entry: its cubin and its spills.
std::string encodePartitionCode(const codegen::PartitionCode &Code);
/// The partition code in Payload; none if it is malformed.
std::optional<codegen::PartitionCode>
decodePartitionCode(llvm::StringRef Payload);

/// The payload stored under Key in Dir, if present and intact (checked
/// against its recorded length and BLAKE3 hash); misses, hits and damaged
/// entries are reported through Ctx.verbose (unless !Report). Thread-safe.
std::optional<std::string> cacheLookupBlob(Context &Ctx, llvm::StringRef Dir,
                                           llvm::StringRef Key,
                                           bool Report = true);

/// Stores Payload under Key in Dir, atomically (temporary file, rename).
/// Failure to write is reported with -v (unless !Report) and, the first
/// time in a run, by a warning, whatever Report says; returns whether it
/// was stored. Thread-safe.
bool cacheStoreBlob(Context &Ctx, llvm::StringRef Dir, llvm::StringRef Key,
                    llvm::StringRef Payload, bool Report = true);
/// The same, for a payload given as pieces, written one after another
/// (never joined in memory), each hashed and written a few MB at a time;
/// Read is told of every such part after it is hashed and after it is
/// written (a caller whose pieces are mapped files hands their pages back).
bool cacheStoreBlob(Context &Ctx, llvm::StringRef Dir, llvm::StringRef Key,
                    llvm::ArrayRef<llvm::StringRef> Payload,
                    bool Report = true,
                    llvm::function_ref<void(llvm::StringRef)> Read = {});

/// The default cache directory of the host-link wrappers:
/// $FATLINK_CACHE_DIR, else $XDG_CACHE_HOME/fatlink/device-links, else
/// ~/.cache/fatlink/device-links: a directory of its own, not
/// ~/.cache/fatlink, where scripts/setup.sh keeps build dependencies (deps/).
std::string defaultCacheDir();

/// Checks a cache policy (llvm::parseCachePruningPolicy syntax) given as
/// Name (the option or setting, for the message).
llvm::Error checkCachePolicy(llvm::StringRef Name, llvm::StringRef Policy);

/// Prunes Dir and its memo/, codegen/ and tools/ directories by Policy, with
/// LLVM's pruneCache (as lld's --thinlto-cache-policy): entries unused for too
/// long, then the least recently used beyond the size limits. Only entries
/// are ever removed: pruneCache looks at files named "llvmcache-*" alone,
/// the names fatlink gives its entries, and at no subdirectory.
void cachePrune(Context &Ctx, llvm::StringRef Dir, llvm::StringRef Policy);

} // namespace fatlink

#endif // FATLINK_LINKER_CACHE_H
