//===- hostlink/Settings.h - fatlink's own settings inside host links ----===//
//
// Internal to hostlink/. `fatlink cc` and `fatlink llbc` run inside other
// tools' command lines (cargo, rustc, Bazel), so their own settings arrive
// three ways, in this order of precedence:
//
//   1. `--fatlink-<key>[=<value>]` arguments, stripped before the host
//      linker sees the command line (`-C link-arg=--fatlink-arch=sm_90`);
//   2. `FATLINK_<KEY>` environment variables (cargo's `[env]` table);
//   3. a config file of `key = value` lines, named by `--fatlink-config=`
//      or FATLINK_CONFIG.
//
// Keys: arch, opt, ptx-version, compress, jobs, cuda-path, ptxas, linker,
// verbose, dry-run, save-temps, time-trace, config, host-arch, cache-dir, min-driver,
// cache-policy
// (a directory, or "off"; default $XDG_CACHE_HOME/fatlink), partitions,
// ptx-per-arch.
//
//===----------------------------------------------------------------------===//

#ifndef FATLINK_HOSTLINK_SETTINGS_H
#define FATLINK_HOSTLINK_SETTINGS_H

#include "linker/DeviceBuild.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>
#include <optional>
#include <string>

namespace fatlink {

/// The settings, as key -> value ("1" for flags), with where each came from.
struct Settings {
  llvm::StringMap<std::string> Values;
  llvm::StringMap<std::string> Sources; ///< "--fatlink-arch", "FATLINK_ARCH", "f.conf:3"

  std::optional<llvm::StringRef> get(llvm::StringRef Key) const;
  bool flag(llvm::StringRef Key) const;
  /// The setting as a message tells the user to change it, by where it was
  /// set: "FATLINK_ARCH" (or "CUDA_PATH"), "--fatlink-arch", "arch at
  /// f.conf:3"; FATLINK_ARCH when it was not set.
  std::string nameOf(llvm::StringRef Key) const;
};

/// The wrappers that read the settings.
enum class SettingsTool {
  Cc,   ///< fatlink cc: the rest of the line is the host linker's
  Llbc, ///< fatlink llbc: the rest is rustc's; no host linker, no log
};

/// `--fatlink-help`: every setting \p Tool reads, its argument, environment
/// variable, default and meaning.
void printSettingsHelp(llvm::raw_ostream &OS, SettingsTool Tool);

/// The save-temps setting: the intermediates of the link of \p Output are
/// kept beside it (or in the directory named), named after it
/// (app -> app.device.o, app.sm_80.ptx, app.linked.bc).
llvm::Error saveTempsFromSettings(Context &Ctx, const Settings &S,
                                  llvm::StringRef Output);

/// The message that ends a dry run under cargo (CARGO_CRATE_NAME set),
/// where exit 0 would make cargo report a finished build and keep, or run,
/// the \p Output an earlier build left; none elsewhere.
std::optional<std::string> dryRunUnderCargo(const Settings &S,
                                            llvm::StringRef Output);

/// Whether Arg is one of fatlink's own (`--fatlink-...`).
bool isFatlinkArg(llvm::StringRef Arg);

/// Merges the settings from Args (the `--fatlink-` arguments only), the
/// environment (GetEnv, injectable for tests) and the config file.
llvm::Expected<Settings>
collectSettings(llvm::ArrayRef<std::string> Args,
                std::function<std::optional<std::string>(llvm::StringRef)> GetEnv);

/// A warning for each FATLINK_* variable of \p EnvNames (the environment's
/// names) that is neither a setting nor read by anything else of fatlink's
/// (the runtime's FATLINK_RT_*, fatlink-build's, the build's and the
/// tests'): a misspelled setting is otherwise ignored without a word.
std::vector<std::string>
unknownSettingVariables(llvm::ArrayRef<std::string> EnvNames);

/// The names of this process's environment variables.
std::vector<std::string> environmentNames();

/// The device-link configuration the settings describe, for a host object
/// output (for this machine's arch unless `host-arch` names one).
/// DefaultArch applies when no `arch` is set.
llvm::Expected<DeviceLinkConfig> deviceConfigFromSettings(const Settings &S,
                                                          llvm::StringRef DefaultArch);

} // namespace fatlink

#endif // FATLINK_HOSTLINK_SETTINGS_H
