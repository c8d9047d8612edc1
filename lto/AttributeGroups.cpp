//===- lto/AttributeGroups.cpp - Attribute group entries -----------------===//

#include "lto/AttributeGroups.h"

#include <algorithm>

using namespace llvm;

namespace fatlink::lto {

GroupReading
forEachGroupAttribute(ArrayRef<uint64_t> R,
                      function_ref<void(const GroupAttribute &)> F) {
  GroupReading Result;
  size_t I = 2, E = R.size();
  // Steps over a range of Width bits at I; false when it is not all there.
  auto Range = [&](uint32_t Width) {
    if (Width <= 64) {
      I += 2; // lower, upper
      if (I > E)
        return false;
    } else {
      if (I >= E)
        return false;
      uint64_t Words = R[I++];
      uint64_t Count = uint64_t(uint32_t(Words)) + (Words >> 32);
      if (Count > E - I) {
        Result.Read = GroupRead::WordsPast;
        return false;
      }
      I += Count;
    }
    Result.WidestRange = std::max(Result.WidestRange, Width);
    return true;
  };
  // Steps over a NUL-terminated string at I; false when it has no NUL.
  auto String = [&] {
    while (I < E && R[I] != 0)
      ++I;
    if (I == E)
      return false;
    ++I;
    return true;
  };

  while (I < E) {
    GroupAttribute A;
    A.Begin = I;
    A.Encoding = R[I++];
    bool Whole = true;
    switch (A.Encoding) {
    case 0:   // [kind]
    case 5:   // [kind]
    case 1:   // [kind, value]
    case 6: { // [kind, type]
      size_t Operands = A.Encoding == 1 || A.Encoding == 6 ? 2 : 1;
      Whole = E - I >= Operands;
      if (Whole)
        A.Kind = R[I];
      I += Operands;
      break;
    }
    case 3:
    case 4: {
      size_t KeyBegin = I;
      Whole = String();
      if (Whole)
        A.Key = R.slice(KeyBegin, I - 1 - KeyBegin);
      if (Whole && A.Encoding == 4)
        Whole = String();
      break;
    }
    case 7:
      Whole = E - I >= 2;
      if (Whole) {
        A.Kind = R[I];
        uint32_t Width = uint32_t(R[I + 1]);
        I += 2;
        Whole = Range(Width);
      }
      break;
    case 8: {
      Whole = E - I >= 3;
      if (!Whole)
        break;
      A.Kind = R[I];
      uint32_t Count = uint32_t(R[I + 1]), Width = uint32_t(R[I + 2]);
      I += 3;
      for (uint32_t N = 0; N < Count && Whole; ++N)
        Whole = Range(Width);
      break;
    }
    default:
      Result.Read = GroupRead::Malformed;
      return Result;
    }
    if (!Whole) {
      if (Result.Read == GroupRead::Whole)
        Result.Read = GroupRead::Malformed;
      return Result;
    }
    A.End = I;
    F(A);
  }
  return Result;
}

} // namespace fatlink::lto
