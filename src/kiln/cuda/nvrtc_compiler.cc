#include "kiln/cuda/nvrtc_compiler.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <sstream>

#include "kiln/base/fingerprint.h"
#include "kiln/base/logging.h"
#include "kiln/base/strings.h"

namespace kiln::cuda {

namespace {

bool IsDir(const std::string& path) {
  std::error_code ec;
  return !path.empty() && std::filesystem::is_directory(path, ec);
}

// Cached programs are stored as a sequence of length-prefixed fields.
void PutField(std::string& out, std::string_view field) {
  uint64_t n = field.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  out.append(field);
}

bool GetField(std::string_view in, size_t& pos, std::string* field) {
  if (in.size() - pos < 8) return false;
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t{static_cast<unsigned char>(in[pos + i])} << (8 * i);
  pos += 8;
  if (in.size() - pos < n) return false;
  *field = std::string(in.substr(pos, n));
  pos += n;
  return true;
}

std::string Serialize(const NvrtcProgram& p) {
  std::string out;
  PutField(out, p.arch);
  PutField(out, p.cubin);
  PutField(out, p.ptx);
  PutField(out, p.log);
  PutField(out, std::to_string(p.lowered_names.size()));
  for (const auto& [expression, lowered] : p.lowered_names) {
    PutField(out, expression);
    PutField(out, lowered);
  }
  return out;
}

std::optional<NvrtcProgram> Deserialize(std::string_view in) {
  NvrtcProgram p;
  size_t pos = 0;
  std::string count;
  if (!GetField(in, pos, &p.arch) || !GetField(in, pos, &p.cubin) || !GetField(in, pos, &p.ptx) ||
      !GetField(in, pos, &p.log) || !GetField(in, pos, &count)) {
    return std::nullopt;
  }
  size_t n = std::strtoul(count.c_str(), nullptr, 10);
  for (size_t i = 0; i < n; ++i) {
    std::string expression, lowered;
    if (!GetField(in, pos, &expression) || !GetField(in, pos, &lowered)) return std::nullopt;
    p.lowered_names.emplace_back(std::move(expression), std::move(lowered));
  }
  if (pos != in.size()) return std::nullopt;
  return p;
}

// Destroys an NVRTC program on scope exit.
class ProgramGuard {
 public:
  ProgramGuard(const NvrtcApi& api, nvrtcProgram program) : api_(api), program_(program) {}
  ~ProgramGuard() { (void)api_.nvrtcDestroyProgram(&program_); }
  ProgramGuard(const ProgramGuard&) = delete;
  ProgramGuard& operator=(const ProgramGuard&) = delete;

 private:
  const NvrtcApi& api_;
  nvrtcProgram program_;
};

}  // namespace

StatusOr<int> ParseArch(std::string_view arch) {
  std::string_view digits;
  if (StartsWith(arch, "sm_")) {
    digits = arch.substr(3);
  } else if (StartsWith(arch, "compute_")) {
    digits = arch.substr(8);
  } else {
    return InvalidArgument("architecture '", arch, "' must look like sm_90, sm_90a or compute_90");
  }
  if (!digits.empty() && (digits.back() == 'a' || digits.back() == 'f')) {
    digits.remove_suffix(1);
  }
  if (digits.empty() || digits.size() > 3 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return InvalidArgument("architecture '", arch, "' must look like sm_90, sm_90a or compute_90");
  }
  return std::atoi(std::string(digits).c_str());
}

std::vector<std::string> FindToolkitIncludeDirs(const std::string& nvrtc_library_path) {
  std::vector<std::string> candidates;
  if (std::string dir = GetCudaLibraryPaths().include_dir; !dir.empty()) candidates.push_back(dir);
  // The toolkit's own conventions (CUDA_HOME, CUDA_PATH): ordinary platform defaults, read here.
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
    if (const char* root = std::getenv(var); root != nullptr && *root != '\0') {
      candidates.push_back(StrCat(root, "/include"));
    }
  }
  if (!nvrtc_library_path.empty()) {
    std::filesystem::path lib_dir = std::filesystem::path(nvrtc_library_path).parent_path();
    candidates.push_back((lib_dir / ".." / "include").lexically_normal().string());
    candidates.push_back((lib_dir / ".." / ".." / "include").lexically_normal().string());
  }
  candidates.push_back("/usr/local/cuda/include");
  for (const std::string& dir : candidates) {
    std::error_code ec;
    if (!std::filesystem::exists(dir + "/cuda_fp16.h", ec)) continue;
    std::vector<std::string> dirs = {dir};
    // CUDA 13 moved CCCL (cuda/std, cub, thrust) into include/cccl.
    if (IsDir(dir + "/cccl")) dirs.push_back(dir + "/cccl");
    return dirs;
  }
  return {};
}

StatusOr<std::string> NvrtcProgram::LoweredName(std::string_view name_expression) const {
  for (const auto& [expression, lowered] : lowered_names) {
    if (expression == name_expression) return lowered;
  }
  return NotFound("no lowered name for '", name_expression,
                  "': add it to NvrtcRequest::name_expressions");
}

StatusOr<std::unique_ptr<NvrtcCompiler>> NvrtcCompiler::Create(const NvrtcOptions& options) {
  std::unique_ptr<NvrtcCompiler> compiler(new NvrtcCompiler());
  if (options.library.empty()) {
    KILN_ASSIGN_OR_RETURN(compiler->api_, NvrtcApi::Default());
  } else {
    KILN_ASSIGN_OR_RETURN(compiler->api_, NvrtcApi::Load(options.library));
  }
  const NvrtcApi& api = *compiler->api_;
  int count = 0;
  KILN_RETURN_IF_ERROR(KILN_NVRTC(api, nvrtcGetNumSupportedArchs(&count)));
  compiler->supported_archs_.resize(count);
  if (count > 0) {
    KILN_RETURN_IF_ERROR(
        KILN_NVRTC(api, nvrtcGetSupportedArchs(compiler->supported_archs_.data())));
  }
  compiler->include_dirs_ = options.include_dirs;
  for (std::string& dir : FindToolkitIncludeDirs(api.library.path())) {
    compiler->include_dirs_.push_back(std::move(dir));
  }
  struct stat st;
  if (stat(api.library.path().c_str(), &st) == 0) compiler->library_size_ = st.st_size;
  if (options.use_cache) {
    StatusOr<std::unique_ptr<runtime::DiskCache>> cache =
        runtime::DiskCache::Create({options.cache_root, "nvrtc"});
    if (cache.ok()) {
      compiler->cache_ = std::move(cache).value();
    } else {
      KILN_LOG(Warning) << "nvrtc: compiling without a kernel cache: " << cache.status().message();
    }
  }
  return compiler;
}

std::string NvrtcCompiler::version() const {
  return StrCat(api_->version_major, ".", api_->version_minor);
}

std::vector<std::string> NvrtcCompiler::FullOptions(const NvrtcRequest& request) const {
  std::vector<std::string> options = {StrCat("--gpu-architecture=", request.arch)};
  bool has_std = std::any_of(request.options.begin(), request.options.end(),
                             [](const std::string& o) { return StartsWith(o, "-std") ||
                                                               StartsWith(o, "--std"); });
  if (!has_std) options.push_back("-std=c++17");
  for (const std::string& dir : include_dirs_) options.push_back(StrCat("-I", dir));
  options.insert(options.end(), request.options.begin(), request.options.end());
  return options;
}

std::string NvrtcCompiler::CacheKey(const NvrtcRequest& request) const {
  std::ostringstream key;
  key << "kiln-nvrtc-v1\n"
      << "nvrtc " << version() << " size " << library_size_ << "\n"
      << "arch " << request.arch << "\n";
  for (const std::string& option : FullOptions(request)) key << "option " << option << "\n";
  key << "source " << Sha256Hex(request.source) << "\n";
  for (const auto& [name, contents] : request.headers) {
    key << "header " << name << " " << Sha256Hex(contents) << "\n";
  }
  for (const std::string& expression : request.name_expressions) {
    key << "name " << expression << "\n";
  }
  return key.str();
}

StatusOr<NvrtcProgram> NvrtcCompiler::Compile(const NvrtcRequest& request) {
  KILN_ASSIGN_OR_RETURN(int arch, ParseArch(request.arch));
  if (std::find(supported_archs_.begin(), supported_archs_.end(), arch) ==
      supported_archs_.end()) {
    return InvalidArgument("nvrtc ", version(), " cannot compile for ", request.arch,
                           " (supported: ", StrJoin(supported_archs_, ", "), ")");
  }
  std::string key;
  if (cache_ != nullptr) {
    key = CacheKey(request);
    StatusOr<std::optional<std::string>> hit = cache_->Lookup(key);
    if (hit.ok() && hit->has_value()) {
      std::optional<NvrtcProgram> program = Deserialize(**hit);
      if (program.has_value()) {
        program->from_cache = true;
        return *std::move(program);
      }
      KILN_LOG(Warning) << "nvrtc: unreadable cache entry " << cache_->PathForKey(key)
                        << "; recompiling";
    } else if (!hit.ok()) {
      KILN_LOG(Warning) << "nvrtc: cache lookup failed: " << hit.status().message();
    }
  }
  KILN_ASSIGN_OR_RETURN(NvrtcProgram program, CompileUncached(request, FullOptions(request)));
  if (cache_ != nullptr) {
    Status stored = cache_->Store(key, Serialize(program));
    if (!stored.ok()) {
      KILN_LOG(Warning) << "nvrtc: cache store failed: " << stored.message();
    }
  }
  return program;
}

StatusOr<NvrtcProgram> NvrtcCompiler::CompileUncached(
    const NvrtcRequest& request, const std::vector<std::string>& options) const {
  const NvrtcApi& api = *api_;
  std::vector<const char*> header_sources, header_names;
  for (const auto& [name, contents] : request.headers) {
    header_names.push_back(name.c_str());
    header_sources.push_back(contents.c_str());
  }
  nvrtcProgram handle = nullptr;
  KILN_RETURN_IF_ERROR(KILN_NVRTC(
      api, nvrtcCreateProgram(&handle, request.source.c_str(), request.program_name.c_str(),
                              static_cast<int>(header_names.size()), header_sources.data(),
                              header_names.data())));
  ProgramGuard guard(api, handle);
  for (const std::string& expression : request.name_expressions) {
    KILN_RETURN_IF_ERROR(KILN_NVRTC(api, nvrtcAddNameExpression(handle, expression.c_str())));
  }
  std::vector<const char*> option_ptrs;
  for (const std::string& o : options) option_ptrs.push_back(o.c_str());
  nvrtcResult compiled =
      api.nvrtcCompileProgram(handle, static_cast<int>(option_ptrs.size()), option_ptrs.data());

  NvrtcProgram program;
  program.arch = request.arch;
  size_t log_size = 0;
  if (api.nvrtcGetProgramLogSize(handle, &log_size) == NVRTC_SUCCESS && log_size > 1) {
    program.log.resize(log_size);
    if (api.nvrtcGetProgramLog(handle, program.log.data()) != NVRTC_SUCCESS) program.log.clear();
    while (!program.log.empty() && (program.log.back() == '\0' || program.log.back() == '\n')) {
      program.log.pop_back();
    }
  }
  if (compiled != NVRTC_SUCCESS) {
    return InvalidArgument("nvrtc ", version(), ": compiling '", request.program_name, "' for ",
                           request.arch, " failed (",
                           NvrtcStatus(api, compiled, "nvrtcCompileProgram").message(),
                           "):\n", program.log);
  }
  if (StartsWith(request.arch, "sm_")) {
    size_t size = 0;
    KILN_RETURN_IF_ERROR(KILN_NVRTC(api, nvrtcGetCUBINSize(handle, &size)));
    program.cubin.resize(size);
    KILN_RETURN_IF_ERROR(KILN_NVRTC(api, nvrtcGetCUBIN(handle, program.cubin.data())));
  } else {
    size_t size = 0;
    KILN_RETURN_IF_ERROR(KILN_NVRTC(api, nvrtcGetPTXSize(handle, &size)));
    program.ptx.resize(size);
    KILN_RETURN_IF_ERROR(KILN_NVRTC(api, nvrtcGetPTX(handle, program.ptx.data())));
    while (!program.ptx.empty() && program.ptx.back() == '\0') program.ptx.pop_back();
  }
  for (const std::string& expression : request.name_expressions) {
    const char* lowered = nullptr;
    KILN_RETURN_IF_ERROR(
        KILN_NVRTC(api, nvrtcGetLoweredName(handle, expression.c_str(), &lowered)));
    program.lowered_names.emplace_back(expression, lowered);
  }
  return program;
}

}  // namespace kiln::cuda
