//===- fuzz/fatbin_diff_fuzzer.cpp - Two fatbin readers, one answer ------===//
//
// A differential target: the same bytes go to the packager's reader
// (packager::readFatbin, C++ and LLVM, used by `fatlink inspect`) and to
// the runtime's (fatlink_rt_parse_fatbin, plain C, which registers a
// program's modules). They must agree on accept or reject and, when both
// accept, on every entry: kind, SM, arch variant, PTX version, compression
// and uncompressed size.
//
// The one licensed difference: the runtime never decodes a payload (the
// driver does), so a compressed payload that does not decode to its
// declared bytes is rejected by the packager alone. readFatbin marks that
// error with std::errc::illegal_byte_sequence (Packager.h); with it, the
// runtime may accept or reject.
//
//===----------------------------------------------------------------------===//

#include "fuzz/FuzzSupport.h"
#include "packager/Packager.h"

#include "fatlink/runtime.h"

#include <cstdio>
#include <system_error>
#include <vector>

using namespace fatlink;

namespace {

[[noreturn]] void disagree(const char *What, const std::string &Packager,
                           const char *Runtime) {
  std::fprintf(stderr,
               "fatbin readers disagree: %s\n  packager: %s\n  runtime: %s\n",
               What, Packager.c_str(), Runtime);
  std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  static const uint8_t Empty = 0;
  const uint8_t *Bytes = Data ? Data : &Empty;
  size_t N = 0;
  fatlink_rt_status S = fatlink_rt_parse_fatbin(Bytes, Size, nullptr, 0, &N);
  std::string RtError = fatlink_rt_last_error();
  std::vector<fatlink_rt_image> Rt(N);
  if (S == FATLINK_RT_SUCCESS && N) {
    size_t Again = 0;
    S = fatlink_rt_parse_fatbin(Bytes, Size, Rt.data(), N, &Again);
    if (S != FATLINK_RT_SUCCESS || Again != N)
      disagree("the runtime counts differently with room for the images", "",
               fatlink_rt_last_error());
  }
  bool RtOk = S == FATLINK_RT_SUCCESS;

  llvm::StringRef In(reinterpret_cast<const char *>(Bytes), Size);
  llvm::Expected<std::vector<packager::FatbinEntry>> Entries =
      packager::readFatbin(In);
  if (!Entries) {
    std::string Msg;
    std::error_code EC;
    llvm::handleAllErrors(Entries.takeError(),
                          [&](const llvm::ErrorInfoBase &E) {
                            Msg = E.message();
                            EC = E.convertToErrorCode();
                          });
    bool PayloadOnly =
        EC == std::make_error_code(std::errc::illegal_byte_sequence);
    if (RtOk && !PayloadOnly)
      disagree("the runtime accepts what the packager rejects", Msg,
               "(accepted)");
    return 0;
  }
  if (!RtOk)
    disagree("the packager accepts what the runtime rejects", "(accepted)",
             RtError.c_str());
  if (Entries->size() != N)
    disagree("different entry counts",
             std::to_string(Entries->size()) + " entries",
             (std::to_string(N) + " entries").c_str());
  for (size_t I = 0; I < N; ++I) {
    const packager::FatbinEntry &E = (*Entries)[I];
    const fatlink_rt_image &Img = Rt[I];
    std::string Where = "entry at offset " + std::to_string(E.Offset);
    if (unsigned(Img.kind) != unsigned(E.Kind))
      disagree("kind", Where, std::to_string(Img.kind).c_str());
    if (Img.sm != E.SM)
      disagree("SM", Where, std::to_string(Img.sm).c_str());
    char Variant =
        E.Arch.back() == 'a' || E.Arch.back() == 'f' ? E.Arch.back() : 0;
    if (Img.variant != Variant)
      disagree("arch variant", Where + " " + E.Arch,
               std::string(1, Img.variant ? Img.variant : '-').c_str());
    if (E.Kind != packager::ImageKind::Cubin &&
        (Img.ptx_major != E.Major || Img.ptx_minor != E.Minor))
      disagree("PTX version", Where, "");
    fatlink_rt_compression C =
        E.Flags & packager::FlagZstd  ? FATLINK_RT_COMPRESSION_ZSTD
        : E.Flags & packager::FlagLZ4 ? FATLINK_RT_COMPRESSION_LZ4
                                      : FATLINK_RT_COMPRESSION_NONE;
    if (Img.compression != C)
      disagree("compression", Where, "");
    // An obfuscated entry is kept compressed (packager::FlagObfuscated);
    // the runtime reports the size its header declares.
    if (!(E.Flags & packager::FlagObfuscated) && Img.size != E.Payload.size())
      disagree("size", Where + ": " + std::to_string(E.Payload.size()),
               std::to_string(Img.size).c_str());
  }
  return 0;
}
