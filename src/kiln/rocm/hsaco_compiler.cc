#include "kiln/rocm/hsaco_compiler.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "kiln/base/fingerprint.h"
#include "kiln/base/strings.h"
#include "kiln/rocm/vendor_apis.h"

extern char** environ;

namespace kiln::rocm {

namespace {

#ifndef KILN_ROCM_DEFAULT_CLANG
#define KILN_ROCM_DEFAULT_CLANG "clang++-19"
#endif
#ifndef KILN_ROCM_DEFAULT_DEVICE_LIBS
#define KILN_ROCM_DEFAULT_DEVICE_LIBS "/usr/lib/x86_64-linux-gnu/amdgcn/bitcode"
#endif

std::vector<std::string> DefaultDeviceLibDirs() {
  std::vector<std::string> dirs;
  for (std::string_view d : StrSplit(KILN_ROCM_DEFAULT_DEVICE_LIBS, '|'))
    if (!d.empty()) dirs.emplace_back(d);
  return dirs;
}

StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot read ", path);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

Status WriteFile(const std::string& path, std::string_view contents) {
  std::ofstream out(path, std::ios::binary);
  out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  if (!out) return Internal("cannot write ", path);
  return OkStatus();
}

// A private temporary directory, removed with everything in it when this goes.
class TempDir {
 public:
  static StatusOr<TempDir> Create() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = StrCat(base != nullptr && *base != '\0' ? base : "/tmp", "/kiln-hsaco-XXXXXX");
    if (mkdtemp(pattern.data()) == nullptr) return Internal("cannot create a directory like ", pattern);
    TempDir d;
    d.path_ = pattern;
    return d;
  }
  TempDir() = default;
  TempDir(TempDir&& o) noexcept : path_(std::exchange(o.path_, "")) {}
  ~TempDir() {
    if (path_.empty()) return;
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Runs argv[0] (searched in PATH) with stdout and stderr into `log_path`; the exit status, or
// -1 with `*why` when it could not start or was killed.
int RunProcess(const std::vector<std::string>& argv, const std::string& log_path, std::string* why) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    *why = StrCat("cannot run ", argv[0], ": ", std::strerror(rc));
    return -1;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      *why = StrCat("waiting for ", argv[0], ": ", std::strerror(errno));
      return -1;
    }
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  *why = StrCat(argv[0], " was killed by signal ", WTERMSIG(status));
  return -1;
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// clang's hipRTC-free diagnostics name the temporary file; the log keeps only the file name.
std::string StripDir(std::string log, const std::string& dir) {
  const std::string prefix = dir + "/";
  for (size_t p = log.find(prefix); p != std::string::npos; p = log.find(prefix, p)) log.erase(p, prefix.size());
  return log;
}

}  // namespace

std::string_view HsacoPathName(HsacoPath path) {
  switch (path) {
    case HsacoPath::kAuto: return "auto";
    case HsacoPath::kHiprtc: return "hiprtc";
    case HsacoPath::kClang: return "clang";
  }
  return "?";
}

std::string ArchWithoutFeatures(std::string_view arch) {
  return std::string(arch.substr(0, arch.find(':')));
}

std::string IsaFileSuffix(std::string_view arch) {
  std::string a = ArchWithoutFeatures(arch);
  return a.rfind("gfx", 0) == 0 ? a.substr(3) : a;
}

StatusOr<std::unique_ptr<HsacoCompiler>> HsacoCompiler::Create(const HsacoCompilerOptions& options) {
  HsacoCompilerOptions o = options;
  if (o.clang.empty()) o.clang = KILN_ROCM_DEFAULT_CLANG;
  if (o.device_lib_dirs.empty()) o.device_lib_dirs = DefaultDeviceLibDirs();
  if (o.code_object_version != 0 && o.code_object_version != 4 && o.code_object_version != 5) {
    return InvalidArgument("hsaco: code object version ", o.code_object_version, " (4 or 5, or 0 for the default)");
  }
  std::unique_ptr<HsacoCompiler> c(new HsacoCompiler(std::move(o)));
  if (c->options_.use_cache) {
    runtime::DiskCacheOptions dc;
    dc.root = c->options_.cache_root;
    dc.name_space = "hsaco";
    KILN_ASSIGN_OR_RETURN(c->cache_, runtime::DiskCache::Create(dc));
  }
  return c;
}

std::string HsacoCompiler::DeviceLibDirFor(std::string_view arch) const {
  const std::string file = StrCat("oclc_isa_version_", IsaFileSuffix(arch), ".bc");
  for (const std::string& d : options_.device_lib_dirs) {
    std::error_code ec;
    if (!d.empty() && std::filesystem::exists(StrCat(d, "/", file), ec)) return d;
  }
  return "";
}

StatusOr<std::string> HsacoCompiler::ClangVersion() {
  KILN_RETURN_IF_ERROR(SupportedArchs(HsacoPath::kClang).status());
  std::lock_guard<std::mutex> lock(mu_);
  return clang_version_;
}

StatusOr<std::vector<std::string>> HsacoCompiler::SupportedArchs(HsacoPath path) {
  if (path == HsacoPath::kHiprtc) {
    KILN_ASSIGN_OR_RETURN(std::shared_ptr<const HiprtcApi> rtc, HiprtcApi::Default());
    (void)rtc;
    KILN_ASSIGN_OR_RETURN(std::shared_ptr<const ComgrApi> comgr, ComgrApi::Default());
    return ComgrIsaNames(*comgr);
  }
  if (path == HsacoPath::kAuto) return InvalidArgument("SupportedArchs: ask for hiprtc or clang");
  std::lock_guard<std::mutex> lock(mu_);
  if (!clang_probed_) {
    clang_probed_ = true;
    StatusOr<TempDir> dir = TempDir::Create();
    if (!dir.ok()) {
      clang_status_ = dir.status();
    } else {
      const std::string log = dir->path() + "/cpus.txt";
      std::string why;
      int rc = RunProcess({options_.clang, "--target=amdgcn-amd-amdhsa", "-nogpulib", "-mcpu=help"}, log, &why);
      StatusOr<std::string> text = ReadFile(log);
      if (rc != 0 || !text.ok()) {
        clang_status_ = Unavailable("hsaco: clang (", options_.clang, ") is not usable: ",
                                    why.empty() ? Trim(text.ok() ? *text : "") : why);
      } else {
        // "Debian clang version 19.1.7 (...)" / "\tgfx90a" lines after "Available CPUs".
        std::istringstream lines(*text);
        std::string line;
        while (std::getline(lines, line)) {
          if (clang_version_.empty() && line.find("clang version ") != std::string::npos) {
            std::string v = line.substr(line.find("clang version ") + 14);
            clang_version_ = StrCat("clang ", v.substr(0, v.find(' ')));
          }
          std::string cpu = Trim(std::string(StripWhitespace(line)));
          if (cpu.rfind("gfx", 0) == 0 && cpu.find('-') == std::string::npos) clang_archs_.push_back(cpu);
        }
        if (clang_archs_.empty()) {
          clang_status_ = Unavailable("hsaco: ", options_.clang, " lists no amdgcn processors");
        }
      }
    }
  }
  KILN_RETURN_IF_ERROR(clang_status_);
  // Only targets whose device libraries are present can link.
  std::vector<std::string> usable;
  for (const std::string& a : clang_archs_)
    if (!DeviceLibDirFor(a).empty()) usable.push_back(a);
  return usable;
}

StatusOr<HsacoPath> HsacoCompiler::ChoosePath(std::string_view arch, HsacoPath path) {
  const std::string base = ArchWithoutFeatures(arch);
  auto supports = [&](HsacoPath p, std::string* listing) -> bool {
    StatusOr<std::vector<std::string>> archs = SupportedArchs(p);
    if (!archs.ok()) {
      *listing += StrCat("; ", HsacoPathName(p), ": ", archs.status().message());
      return false;
    }
    if (std::find(archs->begin(), archs->end(), base) != archs->end()) return true;
    *listing += StrCat("; ", HsacoPathName(p), " supports ", archs->empty() ? "nothing" : StrJoin(*archs, ", "));
    return false;
  };
  std::string listing;
  if (path == HsacoPath::kHiprtc || path == HsacoPath::kAuto) {
    if (supports(HsacoPath::kHiprtc, &listing)) return HsacoPath::kHiprtc;
    if (path == HsacoPath::kHiprtc) {
      return InvalidArgument("hsaco: target '", arch, "' is not supported by hipRTC here", listing);
    }
  }
  if (supports(HsacoPath::kClang, &listing)) return HsacoPath::kClang;
  return InvalidArgument("hsaco: target '", arch, "' is not supported by ",
                         path == HsacoPath::kClang ? "clang" : "any compiler", " here", listing);
}

StatusOr<CompiledHsaco> HsacoCompiler::Compile(const HsacoSource& source, std::string_view arch,
                                              HsacoPath path) {
  KILN_ASSIGN_OR_RETURN(HsacoPath chosen, ChoosePath(arch, path));
  std::string compiler;
  if (chosen == HsacoPath::kHiprtc) {
    KILN_ASSIGN_OR_RETURN(std::shared_ptr<const HiprtcApi> rtc, HiprtcApi::Default());
    compiler = StrCat("hiprtc ", rtc->Version(), " (", rtc->library.path(), ")");
  } else {
    KILN_ASSIGN_OR_RETURN(compiler, ClangVersion());
    compiler += StrCat(" (", options_.clang, ", ", DeviceLibDirFor(arch), ", code object ",
                      options_.code_object_version == 0 ? std::string("default") : StrCat("v", options_.code_object_version), ")");
  }
  std::string key;
  if (cache_ != nullptr) {
    std::string material = StrCat(compiler, "\n", arch, "\nO", options_.optimization_level, "\n",
                                  StrJoin(options_.extra_flags, " "), "\n", options_.rocm_path, "\n", source.source);
    for (const auto& [name, text] : source.headers) material += StrCat("\n--", name, "\n", text);
    key = Sha256Hex(material);
    KILN_ASSIGN_OR_RETURN(std::optional<std::string> hit, cache_->Lookup(key));
    if (hit.has_value()) {
      CompiledHsaco out;
      out.arch = std::string(arch);
      out.image = std::move(*hit);
      out.compiler = compiler;
      out.from_cache = true;
      return out;
    }
  }
  StatusOr<CompiledHsaco> out = chosen == HsacoPath::kHiprtc ? CompileHiprtc(source, arch) : CompileClang(source, arch);
  if (!out.ok()) return out.status();
  out->compiler = compiler;
  if (cache_ != nullptr) KILN_RETURN_IF_ERROR(cache_->Store(key, out->image));
  return out;
}

StatusOr<CompiledHsaco> HsacoCompiler::CompileHiprtc(const HsacoSource& source, std::string_view arch) {
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const HiprtcApi> rtc, HiprtcApi::Default());
  const HiprtcApi& api = *rtc;
  std::vector<const char*> header_texts, header_names;
  for (const auto& [name, text] : source.headers) {
    header_names.push_back(name.c_str());
    header_texts.push_back(text.c_str());
  }
  std::vector<std::string> flags = {StrCat("--gpu-architecture=", arch), StrCat("-O", options_.optimization_level),
                                    "-std=c++17"};
  for (const std::string& f : options_.extra_flags) flags.push_back(f);
  std::vector<const char*> flag_ptrs;
  for (const std::string& f : flags) flag_ptrs.push_back(f.c_str());
  std::lock_guard<std::mutex> lock(mu_);  // comgr is not known to be reentrant
  hiprtcProgram program = nullptr;
  const std::string file = source.name.empty() ? "kernel.hip" : source.name + ".hip";
  hiprtcResult r = api.hiprtcCreateProgram(&program, source.source.c_str(), file.c_str(),
                                           static_cast<int>(header_texts.size()), header_texts.data(),
                                           header_names.data());
  if (r != HIPRTC_SUCCESS) return Internal("hiprtc: hiprtcCreateProgram: ", api.hiprtcGetErrorString(r));
  struct Destroy {
    const HiprtcApi& api;
    hiprtcProgram* p;
    ~Destroy() { (void)api.hiprtcDestroyProgram(p); }
  } destroy{api, &program};
  const hiprtcResult compiled = api.hiprtcCompileProgram(program, static_cast<int>(flag_ptrs.size()), flag_ptrs.data());
  size_t log_size = 0;
  std::string log;
  if (api.hiprtcGetProgramLogSize(program, &log_size) == HIPRTC_SUCCESS && log_size > 1) {
    log.resize(log_size);
    if (api.hiprtcGetProgramLog(program, log.data()) != HIPRTC_SUCCESS) log.clear();
    log = Trim(std::string(log.c_str()));
  }
  if (compiled != HIPRTC_SUCCESS) {
    return InvalidArgument("hiprtc: compiling '", source.name, "' for ", arch, ": ",
                           api.hiprtcGetErrorString(compiled), log.empty() ? " (no log)" : "\n" + log);
  }
  size_t size = 0;
  r = api.hiprtcGetCodeSize(program, &size);
  if (r != HIPRTC_SUCCESS || size == 0) return Internal("hiprtc: no code for '", source.name, "'");
  CompiledHsaco out;
  out.arch = std::string(arch);
  out.image.resize(size);
  r = api.hiprtcGetCode(program, out.image.data());
  if (r != HIPRTC_SUCCESS) return Internal("hiprtc: hiprtcGetCode: ", api.hiprtcGetErrorString(r));
  out.log = std::move(log);
  return out;
}

StatusOr<CompiledHsaco> HsacoCompiler::CompileClang(const HsacoSource& source, std::string_view arch) {
  const std::string device_libs = DeviceLibDirFor(arch);
  KILN_ASSIGN_OR_RETURN(TempDir dir, TempDir::Create());
  for (const auto& [name, text] : source.headers) {
    if (name.find('/') != std::string::npos || name.find("..") != std::string::npos) {
      return InvalidArgument("hsaco: header name '", name, "' is not a plain file name");
    }
    KILN_RETURN_IF_ERROR(WriteFile(dir.path() + "/" + name, text));
  }
  const std::string file = (source.name.empty() ? "kernel" : source.name) + ".hip";
  std::string safe;
  for (char ch : file) safe += (std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '_') ? ch : '_';
  const std::string src = dir.path() + "/" + safe, out_path = dir.path() + "/out.hsaco", log_path = dir.path() + "/log.txt";
  KILN_RETURN_IF_ERROR(WriteFile(src, source.source));
  std::vector<std::string> argv = {options_.clang, "-x", "hip", StrCat("--offload-arch=", arch), "--offload-device-only",
                                   "--no-gpu-bundle-output", StrCat("-O", options_.optimization_level), "-std=c++17",
                                   "-c", src, "-o", out_path, StrCat("--rocm-path=", options_.rocm_path),
                                   StrCat("--rocm-device-lib-path=", device_libs), "-I", dir.path()};
  if (options_.code_object_version != 0) argv.push_back(StrCat("-mcode-object-version=", options_.code_object_version));
  for (const std::string& f : options_.extra_flags) argv.push_back(f);
  std::string why;
  const int rc = RunProcess(argv, log_path, &why);
  StatusOr<std::string> log_text = ReadFile(log_path);
  std::string log = StripDir(Trim(log_text.ok() ? *log_text : std::string()), dir.path());
  if (rc != 0) {
    return InvalidArgument("hsaco: clang compiling '", source.name, "' for ", arch, " failed",
                           why.empty() ? StrCat(" (exit ", rc, ")") : StrCat(": ", why), log.empty() ? "" : "\n" + log);
  }
  CompiledHsaco out;
  out.arch = std::string(arch);
  KILN_ASSIGN_OR_RETURN(out.image, ReadFile(out_path));
  out.log = std::move(log);
  return out;
}

}  // namespace kiln::rocm
