// The CPU backend of the `kiln` tool: CpuCompiler + CpuExecutable (src/kiln/cpu) on the host.
#include <fstream>
#include <thread>

#include "kiln/base/strings.h"
#include "kiln/cpu/compiler.h"
#include "kiln/cpu/module_clone.h"
#include "kiln/tools/backend_registry.h"

namespace kiln {

namespace {

std::string CpuModelName() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (StartsWith(line, "model name")) {
      size_t colon = line.find(':');
      if (colon != std::string::npos) return std::string(StripWhitespace(line.substr(colon + 1)));
    }
  return "host CPU";
}

Status CheckOrdinal(int ordinal) {
  if (ordinal != 0) return InvalidArgument("the cpu backend has one device (0), not ", ordinal);
  return OkStatus();
}

StatusOr<std::unique_ptr<cpu::CpuExecutable>> CompileForCpu(const HloModule& module, int threads,
                                                            const std::string& dump_dir) {
  cpu::CpuCompileOptions options;
  options.threads = threads;
  options.dump_dir = dump_dir;
  // The tool verified the module already (unless --no-verify asked it not to).
  options.verify_input = false;
  return cpu::CpuCompiler::Compile(cpu::CloneModule(module), options);
}

class PreparedCpuModule : public PreparedModule {
 public:
  PreparedCpuModule(std::unique_ptr<cpu::CpuExecutable> exe, std::span<const Literal> args, bool profile)
      : exe_(std::move(exe)), args_(args.begin(), args.end()), profile_(profile) {
    // Raw arguments: the literals' memory is row-major, which is the entry layout unless the
    // module says otherwise; those few are converted here, once.
    const auto& shapes = exe_->argument_leaf_shapes();
    size_t k = 0;
    for (const Literal& a : args_)
      for (const Literal* leaf : LeavesOf(a)) {
        if (k >= shapes.size()) break;
        const Shape& s = shapes[k++];
        auto* data = const_cast<uint8_t*>(leaf->untyped_data());
        if (s.has_layout() && !cpu::IsDefaultOrder(s.layout(), s.rank())) {
          owned_.emplace_back(leaf->size_bytes());
          cpu::RelayoutFromRowMajor(data, s, s.layout(), owned_.back().data());
          data = owned_.back().data();
        }
        raw_.push_back(data);
      }
  }
  Status Execute() override {
    cpu::CpuRunOptions o;
    o.profile = profile_;
    return exe_->Execute(raw_, o).status();
  }
  std::string Report() const override {
    std::string s = StrCat(exe_->memory_stats().ToString(), "\nthreads: ", exe_->num_threads(), "\n");
    if (profile_) s += exe_->ProfileReport();
    return s;
  }
  std::vector<std::pair<std::string, double>> Metrics() const override {
    const MemoryStats& m = exe_->memory_stats();
    return {{"argument_bytes", double(m.argument_bytes)}, {"output_bytes", double(m.output_bytes)},
            {"constant_bytes", double(m.constant_bytes)}, {"temp_bytes", double(m.temp_bytes)},
            {"peak_bytes", double(m.peak_bytes)},         {"aliased_bytes", double(m.aliased_bytes)},
            {"threads", double(exe_->num_threads())}};
  }

 private:
  static std::vector<const Literal*> LeavesOf(const Literal& l) {
    std::vector<const Literal*> out;
    if (l.shape().IsTuple()) {
      for (const Literal& e : l.tuple_elements()) {
        std::vector<const Literal*> sub = LeavesOf(e);
        out.insert(out.end(), sub.begin(), sub.end());
      }
    } else if (l.shape().IsArray()) {
      out.push_back(&l);
    }
    return out;
  }

  std::unique_ptr<cpu::CpuExecutable> exe_;
  std::vector<Literal> args_;  // donated arguments may be overwritten by each run
  std::vector<std::vector<uint8_t>> owned_;
  std::vector<void*> raw_;
  bool profile_;
};

class CpuBackend : public Backend {
 public:
  std::string_view name() const override { return "cpu"; }
  std::string_view description() const override {
    return "compiled for the host CPU: fused kernels on a thread pool";
  }
  StatusOr<std::vector<DeviceInfo>> Devices() const override {
    unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    return std::vector<DeviceInfo>{{0, "host", StrCat(CpuModelName(), ", ", cores, " threads")}};
  }
  StatusOr<Literal> Run(const HloModule& module, std::span<const Literal> args,
                        const BackendRunOptions& options) override {
    KILN_RETURN_IF_ERROR(CheckOrdinal(options.device_ordinal));
    KILN_ASSIGN_OR_RETURN(std::unique_ptr<cpu::CpuExecutable> exe, CompileForCpu(module, options.threads, ""));
    return exe->Run(args);
  }
  StatusOr<std::string> Compile(const HloModule& module, const BackendCompileOptions& options) override {
    KILN_RETURN_IF_ERROR(CheckOrdinal(options.device_ordinal));
    KILN_ASSIGN_OR_RETURN(std::unique_ptr<cpu::CpuExecutable> exe,
                          CompileForCpu(module, options.threads, options.dump_passes_dir));
    const cpu::CpuCompileStats& st = exe->compile_stats();
    std::string thunks = options.thunks ? StrCat("thunks:\n", exe->ThunkListing()) : "";
    if (options.stats) return StrCat(st.ToString(), thunks);
    return StrCat("compiled ", module.name(), " in ", RoundTripDouble(std::round(st.compile_seconds * 1e5) / 100),
                  " ms: ", st.thunks, " thunks (", st.kernel_thunks, " kernels), ", st.threads, " threads\n",
                  st.memory.ToString(), "\n", thunks);
  }
  StatusOr<std::unique_ptr<PreparedModule>> Prepare(const HloModule& module, std::span<const Literal> args,
                                                    const BackendRunOptions& options) override {
    KILN_RETURN_IF_ERROR(CheckOrdinal(options.device_ordinal));
    KILN_ASSIGN_OR_RETURN(std::unique_ptr<cpu::CpuExecutable> exe, CompileForCpu(module, options.threads, ""));
    if (static_cast<int64_t>(args.size()) != module.entry_computation()->num_parameters())
      return InvalidArgument("module ", module.name(), " takes ", module.entry_computation()->num_parameters(),
                             " arguments, got ", args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      const Shape& want = module.entry_computation()->parameter_instruction(static_cast<int64_t>(i))->shape();
      if (!Shape::Compatible(want, args[i].shape()))
        return InvalidArgument("argument ", i, " has shape ", args[i].shape().ToString(false), ", parameter ", i,
                               " is ", want.ToString(false));
    }
    return std::unique_ptr<PreparedModule>(new PreparedCpuModule(std::move(exe), args, options.profile));
  }
};

}  // namespace

std::unique_ptr<Backend> CreateCpuBackend() { return std::make_unique<CpuBackend>(); }

}  // namespace kiln
