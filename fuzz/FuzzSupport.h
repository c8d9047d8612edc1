//===- fuzz/FuzzSupport.h - Shared helpers of fatlink's fuzz targets -----===//
//
// The fuzz targets call the library functions that read untrusted bytes
// (fatbins, objects, archives, bitcode, command lines, config files). Some
// of those take paths rather than bytes (readInputs, response files, config
// files), so each target process gets one private scratch directory, made
// once under $TMPDIR and removed at exit, and writes its input there.
//
// A target must not leak an llvm::Error (that aborts): every result goes
// through consume(). The round-trip targets take structured values from
// their input with ByteReader (fuzz/RoundTrip.h builds fatbin images).
//
//===----------------------------------------------------------------------===//

#ifndef FATLINK_FUZZ_FUZZSUPPORT_H
#define FATLINK_FUZZ_FUZZSUPPORT_H

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace fatlink::fuzz {

/// The process's scratch directory (created on first use).
inline const std::string &scratchDir() {
  static const std::string Dir = [] {
    llvm::SmallString<128> D;
    if (std::error_code EC =
            llvm::sys::fs::createUniqueDirectory("fatlink-fuzz", D)) {
      llvm::errs() << "fuzz: cannot create a scratch directory: "
                   << EC.message() << "\n";
      std::abort();
    }
    std::string S(D);
    static std::string ForAtExit = S;
    std::atexit([] { llvm::sys::fs::remove_directories(ForAtExit); });
    return S;
  }();
  return Dir;
}

/// Writes Data to Name in the scratch directory and returns its path.
inline std::string writeScratch(llvm::StringRef Name, llvm::StringRef Data) {
  llvm::SmallString<128> Path(scratchDir());
  llvm::sys::path::append(Path, Name);
  std::error_code EC;
  llvm::raw_fd_ostream OS(Path, EC);
  if (EC) {
    llvm::errs() << "fuzz: cannot write " << Path << ": " << EC.message()
                 << "\n";
    std::abort();
  }
  OS << Data;
  return std::string(Path);
}

/// Drops a result, success or error, after touching its value so that a
/// bad size or pointer in it is seen by ASan.
template <typename T> void consume(llvm::Expected<T> V) {
  if (!V)
    llvm::consumeError(V.takeError());
}
inline void consume(llvm::Error E) { llvm::consumeError(std::move(E)); }

/// Takes structured values from the front of a fuzz input, as zstd's
/// round-trip targets do (and LLVM's FuzzedDataProvider, which the gcc
/// build of //fuzz:corpus_test lacks). An exhausted input gives zeros and
/// empty strings, so every input decodes to something.
class ByteReader {
public:
  explicit ByteReader(llvm::StringRef Data) : Rest(Data) {}
  uint8_t byte() {
    if (Rest.empty())
      return 0;
    uint8_t B = Rest.front();
    Rest = Rest.drop_front();
    return B;
  }
  uint16_t u16() { return byte() | uint16_t(byte()) << 8; }
  /// Up to \p Max bytes, the count taken from the input first.
  std::string bytes(size_t Max) {
    size_t N = std::min<size_t>(u16() % (Max + 1), Rest.size());
    std::string S = Rest.take_front(N).str();
    Rest = Rest.drop_front(N);
    return S;
  }
  bool empty() const { return Rest.empty(); }

private:
  llvm::StringRef Rest;
};

/// Splits Data at Sep.
inline llvm::SmallVector<llvm::StringRef, 16> split(llvm::StringRef Data,
                                                    char Sep) {
  llvm::SmallVector<llvm::StringRef, 16> Parts;
  Data.split(Parts, Sep);
  return Parts;
}

} // namespace fatlink::fuzz

#endif // FATLINK_FUZZ_FUZZSUPPORT_H
