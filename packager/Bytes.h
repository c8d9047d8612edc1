//===- packager/Bytes.h - Length-prefixed little-endian records ---*- C++ -*-===//
//
// A writer and a reader of unambiguous byte records: every integer is 8
// bytes little-endian, every string length-prefixed. Cache keys and entries
// (linker/Cache.cpp) and the kernel table an optimized module carries
// (KernelTable.cpp) are made of them.
//
//===----------------------------------------------------------------------===//

#ifndef FATLINK_PACKAGER_BYTES_H
#define FATLINK_PACKAGER_BYTES_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Endian.h"

#include <cstdint>
#include <string>

namespace fatlink::packager {

class ByteWriter {
public:
  explicit ByteWriter(std::string &Out) : Out(Out) {}
  void u64(uint64_t V) {
    char Buf[8];
    llvm::support::endian::write64le(Buf, V);
    Out.append(Buf, 8);
  }
  void str(llvm::StringRef S) {
    u64(S.size());
    Out.append(S.data(), S.size());
  }

private:
  std::string &Out;
};

/// Reads what ByteWriter wrote; each call returns false, consuming nothing
/// more, when the input is too short.
class ByteReader {
public:
  explicit ByteReader(llvm::StringRef In) : In(In) {}
  bool u64(uint64_t &V) {
    if (In.size() < 8)
      return false;
    V = llvm::support::endian::read64le(In.data());
    In = In.drop_front(8);
    return true;
  }
  bool str(std::string &S) {
    uint64_t N;
    if (!u64(N) || N > In.size())
      return false;
    S = In.take_front(N).str();
    In = In.drop_front(N);
    return true;
  }
  bool atEnd() const { return In.empty(); }

private:
  llvm::StringRef In;
};

} // namespace fatlink::packager

#endif // FATLINK_PACKAGER_BYTES_H
