// HsacoCompiler: HIP C++ to AMDGPU code objects (HSACO), with hipRTC in-process or clang as a
// subprocess, and an on-disk cache of the results.
//
//   KILN_ASSIGN_OR_RETURN(auto compiler, HsacoCompiler::Create({}));
//   KILN_ASSIGN_OR_RETURN(CompiledHsaco co, compiler->Compile(source, "gfx942"));
//   // co.image: an ELF for EM_AMDGPU (InspectCodeObject reads it); co.log: warnings, if any
//
// Two compilers, one interface:
//   kHiprtc  hipRTC (vendor_apis.h: libhiprtc.so.7/.6, or inside libamdhip64.so.5), for the
//            targets of the comgr it is built on (Debian 12's comgr 2.4: up to gfx90a/gfx90c,
//            gfx10; not gfx94x, not gfx11). Headers are passed in memory.
//   kClang   clang (-x hip --offload-arch=gfxNNN --offload-device-only --no-gpu-bundle-output),
//            the offline path and the one for gfx942 here: clang-19 with device libraries that
//            have the target's oclc_isa_version_NNN.bc (Debian 13's rocm-device-libs-17,
//            unpacked). The source and headers go to a private temporary directory.
//   kAuto    hipRTC when it supports the target, else clang.
//
// Note [hipRTC and unknown targets]
//   hipRTC 5.2 over comgr 2.4 aborts the process (a double free in comgr's action cleanup) when
//   asked for a target comgr does not know (gfx940, gfx942, gfx1100, gfx9999...). So every
//   target is checked against the compiler's own list before any call -- comgr's ISA list for
//   hipRTC, `clang --target=amdgcn-amd-amdhsa -mcpu=help` plus the device libraries for clang --
//   and an unsupported one is InvalidArgument naming both lists. hipRTC is never called with
//   an architecture that was not checked.
//
// Cache: keyed by the compiler and its version, the target, the options and the source with its
// headers (SHA-256), in DiskCache namespace "hsaco" (the default root: $XDG_CACHE_HOME/kiln, as
// the NVRTC cache). Thread safety: Compile may be called concurrently (hipRTC calls are
// serialized; clang runs one process per call).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/runtime/disk_cache.h"

namespace kiln::rocm {

enum class HsacoPath { kAuto, kHiprtc, kClang };
std::string_view HsacoPathName(HsacoPath path);  // "auto", "hiprtc", "clang"

struct HsacoCompilerOptions {
  // clang++ with the amdgcn target. Empty: the one found when kiln was configured
  // (KILN_ROCM_CLANG), else "clang++-19" from PATH.
  std::string clang;
  // Directories of ROCm device-library bitcode (ockl.bc, oclc_isa_version_NNN.bc), searched in
  // order for the target's ISA file. Empty: those found when kiln was configured.
  std::vector<std::string> device_lib_dirs;
  // --rocm-path for clang: where it finds the HIP headers (include/hip). Default: /usr
  // (Debian's libamdhip64-dev).
  std::string rocm_path = "/usr";
  // -mcode-object-version for clang (4 or 5); 0 (default): the compiler's (clang-19: 5).
  int code_object_version = 0;
  int optimization_level = 3;
  // Extra flags for either compiler (e.g. "-Wall").
  std::vector<std::string> extra_flags;
  // Disk cache: off when false; `cache_root` empty = DiskCache::DefaultRoot().
  bool use_cache = true;
  std::string cache_root;
};

struct HsacoSource {
  std::string name;    // for messages and the file name ("fusion_3.hip")
  std::string source;  // HIP C++
  std::vector<std::pair<std::string, std::string>> headers;  // (include name, contents)
};

struct CompiledHsaco {
  std::string arch;      // "gfx942"
  std::string image;     // the code object (ELF)
  std::string log;       // the compiler's diagnostics (empty: clean)
  std::string compiler;  // "hiprtc 9.0" or "clang 19.1.7"
  bool from_cache = false;
};

class HsacoCompiler {
 public:
  static StatusOr<std::unique_ptr<HsacoCompiler>> Create(const HsacoCompilerOptions& options = {});

  // The targets each path can compile for here (without feature suffixes); the reason when the
  // path is unavailable (hipRTC or comgr not found, clang not found).
  StatusOr<std::vector<std::string>> SupportedArchs(HsacoPath path);
  // Which path kAuto takes for `arch`; InvalidArgument naming every list when none supports it.
  StatusOr<HsacoPath> ChoosePath(std::string_view arch, HsacoPath path = HsacoPath::kAuto);

  // Compiles `source` for `arch` ("gfx90a"; a feature suffix like ":xnack-" is passed on).
  // InvalidArgument for an unsupported target (checked first), for a compile error (with the
  // log), or Unavailable when the chosen compiler is missing.
  StatusOr<CompiledHsaco> Compile(const HsacoSource& source, std::string_view arch,
                                  HsacoPath path = HsacoPath::kAuto);

  const HsacoCompilerOptions& options() const { return options_; }
  // The device-library directory clang uses for `arch` ("" when none has its ISA file).
  std::string DeviceLibDirFor(std::string_view arch) const;

 private:
  explicit HsacoCompiler(HsacoCompilerOptions options) : options_(std::move(options)) {}
  StatusOr<CompiledHsaco> CompileHiprtc(const HsacoSource& source, std::string_view arch);
  StatusOr<CompiledHsaco> CompileClang(const HsacoSource& source, std::string_view arch);
  StatusOr<std::string> ClangVersion();

  HsacoCompilerOptions options_;
  std::unique_ptr<runtime::DiskCache> cache_;
  std::mutex mu_;  // guards the lazily filled lists below, and serializes hipRTC
  bool clang_probed_ = false;
  Status clang_status_;
  std::vector<std::string> clang_archs_;
  std::string clang_version_;
};

// "gfx90a:xnack-" → "gfx90a"; "gfx942" → "942" is IsaFileSuffix.
std::string ArchWithoutFeatures(std::string_view arch);
std::string IsaFileSuffix(std::string_view arch);  // "gfx942" → "942"

}  // namespace kiln::rocm
