#include "kiln/cuda/backend/cuda_backend.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <chrono>
#include <mutex>
#include <optional>
#include <thread>

#include "kiln/autotune/settings.h"
#include "kiln/base/strings.h"
#include "kiln/codegen/device_spec.h"
#include "kiln/cuda/autotune/cuda_backends.h"
#include "kiln/cuda/compiler/gpu_compiler.h"
#include "kiln/cuda/compiler/gpu_executable.h"
#include "kiln/cuda/cuda_platform.h"
#include "kiln/cuda/library_loader.h"
#include "kiln/cuda/mpi_bootstrap.h"
#include "kiln/cuda/nccl_api.h"
#include "kiln/cuda/nccl_communicator.h"
#include "kiln/hlo/computation.h"
#include "kiln/passes/module_clone.h"
#include "kiln/passes/send_recv_ordering.h"
#include "kiln/passes/shard_map_lowering.h"
#include "kiln/runtime/bfc_allocator.h"

namespace kiln::cuda {

namespace {

constexpr std::string_view kPlatform = "cuda";

constexpr FlagSpec kFlagSpecs[] = {
    {"cuda_gemm_epilogue", "0|1  fuse bias/activation epilogues into cuBLASLt (default 1)"},
    {"cuda_conv_epilogue", "0|1  fuse epilogues into cuDNN convolutions (default 1)"},
    {"cuda_conv_backward", "0|1  gradient convolutions on cuDNN's backward calls (default 1)"},
    {"cuda_graph", "0|1  replay runs as CUDA graphs (default 1)"},
    {"cuda_fused_attention", "0|1  attention found in the HLO runs as one fused flash-attention kernel (default 1)"},
    {"cuda_graph_conditionals", "0|1  conditionals and loops of device-side trip count as CUDA graph conditional nodes (default 1)"},
    {"cuda_side_stream", "0|1  run independent library call / kernel pairs on two streams (default 1)"},
    {"cuda_loop_invariants", "0|1  values a loop body computes from its unchanged state computed once before the loop (default 1)"},
    // Platform-level (ClientOptions::flags, read when the backend is created; see CreateCudaBackend).
    {"cuda_driver_library", "PATH  the CUDA driver to load (platform-level; default libcuda.so.1)"},
    {"cuda_nvrtc_library", "PATH  NVRTC to load (platform-level; default libnvrtc.so.<CUDA major>)"},
    {"cuda_cublas_library", "PATH  cuBLAS to load (platform-level; default libcublas.so.<CUDA major>)"},
    {"cuda_cublaslt_library", "PATH  cuBLASLt to load (platform-level; default libcublasLt.so.<CUDA major>)"},
    {"cuda_cufft_library", "PATH  cuFFT to load (platform-level; default libcufft.so.<cuFFT major>)"},
    {"cuda_cusolver_library", "PATH  cuSOLVER to load (platform-level; default libcusolver.so.<cuSOLVER major>)"},
    {"cuda_cudnn_library", "PATH  cuDNN to load (platform-level; default libcudnn.so.<cuDNN major>)"},
    {"cuda_nccl_library", "PATH  NCCL to load (platform-level; default libnccl.so.2)"},
    {"cuda_mpi_library", "PATH  OpenMPI's libmpi for runs over several processes (platform-level; default libmpi.so.40)"},
    // Runs over several processes (Note [Participants on GPUs]); the environment of mpirun sets them.
    {"cuda_process_count", "N  processes of the run (default 1; OMPI_COMM_WORLD_SIZE under mpirun)"},
    {"cuda_process_index", "I  this process's rank (default 0; OMPI_COMM_WORLD_RANK)"},
    {"cuda_local_rank", "I  this process's rank on its host: its GPUs start at cuda:I*k (OMPI_COMM_WORLD_LOCAL_RANK)"},
    {"cuda_include_dir", "DIR  CUDA headers for NVRTC (platform-level; default $CUDA_HOME/include, /usr/local/cuda/include)"},
};

StatusOr<bool> BoolFlag(const BackendFlags& flags, std::string_view name, bool fallback) {
  std::string_view v = FlagOr(flags, name, "");
  if (v.empty()) return fallback;
  if (v == "0" || v == "off" || v == "false") return false;
  if (v == "1" || v == "on" || v == "true") return true;
  return InvalidArgument(name, ": expected 0 or 1, got '", v, "'");
}

StatusOr<int64_t> IntFlag(const BackendFlags& flags, std::string_view name, int64_t fallback) {
  std::string_view v = FlagOr(flags, name, "");
  if (v.empty()) return fallback;
  int64_t x = 0;
  for (char ch : v) {
    if (ch < '0' || ch > '9' || x > (int64_t{1} << 40)) return InvalidArgument(name, ": expected a count, got '", v, "'");
    x = x * 10 + (ch - '0');
  }
  return x;
}

// The process's CUDA platform, created on first use (the result, success or failure, is kept).
// Never destroyed: at exit the driver may already be shut down, and releasing the device's
// context then only produces errors.
StatusOr<runtime::Platform*> Platform() {
  static std::mutex mu;
  static runtime::Platform* platform = nullptr;
  static Status error;
  static bool tried = false;
  std::lock_guard<std::mutex> lock(mu);
  if (!tried) {
    tried = true;
    auto p = CreateCudaPlatform();
    if (p.ok()) platform = p->release();
    else error = p.status();
  }
  if (!platform) return error;
  return platform;
}

StatusOr<CudaDevice*> Device(int ordinal) {
  KILN_ASSIGN_OR_RETURN(runtime::Platform * p, Platform());
  KILN_ASSIGN_OR_RETURN(runtime::Device * d, p->GetDevice(ordinal));
  return static_cast<CudaDevice*>(d);
}

// What the buffers of one device share: the device, a BFC allocator, and a stream for copies.
struct DeviceContext {
  CudaDevice* device = nullptr;
  std::unique_ptr<runtime::BfcAllocator> allocator;
  std::unique_ptr<runtime::Stream> stream;
  std::mutex mu;  // guards `stream`
};

// One allocation of a buffer: freed to the context's allocator when the last owner goes.
struct DeviceAllocation {
  std::shared_ptr<DeviceContext> context;
  runtime::OwnedDeviceMemory memory;
};

// External memory (BufferFromPointer): `release` when the last owner goes.
struct ExternalMemory {
  std::shared_ptr<DeviceContext> context;
  std::function<void()> release;
  ~ExternalMemory() {
    if (release) release();
  }
};

class CudaBuffer final : public Buffer {
 public:
  CudaBuffer(Shape shape, int ordinal, void* ptr, std::shared_ptr<void> owner, std::shared_ptr<DeviceContext> context)
      : Buffer(std::move(shape), std::string(kPlatform), ordinal, ptr, std::move(owner)), context_(std::move(context)) {}
  bool on_host() const override { return false; }

 private:
  Status CopyToHostImpl(void* dst, uint64_t bytes) const override {
    std::lock_guard<std::mutex> lock(context_->mu);
    KILN_RETURN_IF_ERROR(context_->stream->MemcpyDeviceToHost(dst, {opaque_pointer(), bytes}, bytes));
    return context_->stream->Synchronize();
  }
  std::shared_ptr<DeviceContext> context_;
};

// The contexts of the devices, made on first use.
class DeviceContexts {
 public:
  StatusOr<std::shared_ptr<DeviceContext>> Get(int ordinal) {
    std::lock_guard<std::mutex> lock(mu_);
    if (ordinal < 0) return InvalidArgument("cuda: bad device ordinal ", ordinal);
    if (static_cast<size_t>(ordinal) < contexts_.size() && contexts_[ordinal]) return contexts_[ordinal];
    KILN_ASSIGN_OR_RETURN(CudaDevice * device, Device(ordinal));
    auto c = std::make_shared<DeviceContext>();
    c->device = device;
    runtime::BfcOptions bo;
    bo.name = "cuda-buffers";
    KILN_ASSIGN_OR_RETURN(c->allocator, runtime::CreateBfcDeviceAllocator(*device, bo));
    KILN_ASSIGN_OR_RETURN(c->stream, device->CreateStream({}));
    if (contexts_.size() <= static_cast<size_t>(ordinal)) contexts_.resize(ordinal + 1);
    contexts_[ordinal] = c;
    return c;
  }

 private:
  std::mutex mu_;
  std::vector<std::shared_ptr<DeviceContext>> contexts_;
};

// Fresh device memory for a buffer of `bytes` (at least one byte, so the pointer is never null).
StatusOr<std::shared_ptr<DeviceAllocation>> Allocate(const std::shared_ptr<DeviceContext>& c, uint64_t bytes,
                                                     std::string_view tag) {
  auto a = std::make_shared<DeviceAllocation>();
  a->context = c;
  KILN_ASSIGN_OR_RETURN(a->memory, runtime::OwnedDeviceMemory::Allocate(*c->allocator, std::max<uint64_t>(bytes, 1), tag));
  return a;
}

bool RunsF32InTf32(const HloModule& module) {
  for (const HloComputation* c : module.computations())
    for (const HloInstruction* i : c->instructions()) {
      if (i->opcode() != HloOpcode::kDot && i->opcode() != HloOpcode::kConvolution) continue;
      const PrimitiveType t = i->operand(0)->shape().element_type();
      if (t != PrimitiveType::kF32 && t != PrimitiveType::kC64) continue;
      bool highest = false;
      for (Precision p : i->attrs().precision_config.operand_precision) highest |= p == Precision::kHighest;
      if (!highest) return true;
    }
  return false;
}

std::string Ms(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", ms);
  return buf;
}

// The neutral line (backend/executable.h), as the cpu backend prints it.
std::string HostFallbackLine(const std::map<std::string, int64_t>& fallbacks) {
  return kiln::HostFallbackLine({fallbacks.begin(), fallbacks.end()});
}

// Where the participants of a run live (Note [Participants on GPUs]).
struct ParticipantPlan {
  int64_t replicas = 1, partitions = 1;
  int64_t process_count = 1, process_index = 0, local_rank = 0;
  std::vector<int64_t> local;  // global ids this process runs
  std::vector<int> ordinals;   // their devices
  Status runnable;             // why the participants cannot run here, if they cannot
  int64_t n() const { return replicas * partitions; }
};

// Note [Participants on GPUs]
//   One process driving N GPUs: participant i runs on cuda:(first + i), first being the
//   compile's device ordinal; every participant is local and the NCCL world is made with
//   ncclCommInitAll. Several processes (`mpirun -np P kiln ...`; the environment names the
//   process: cuda_process_count / cuda_process_index / cuda_local_rank, api/environment.h):
//   process r runs participants [r * N / P, (r + 1) * N / P) on cuda:(local_rank * N / P + k);
//   rank 0 makes the NCCL unique id and broadcasts it over MPI (mpi_bootstrap.h), and every
//   process joins with ncclCommInitRank. Each participant has its own GpuExecutable (its own
//   thunks, memory, streams and CUDA graph) on its device; arguments on another device are
//   copied there, results come back on the participant's device.
class CudaExecutable final : public Executable {
 public:
  // `exes` empty: compiled without a device (can_execute() is false). exes[k] runs
  // plan.local[k] on contexts[k]'s device.
  CudaExecutable(const HloModule& module, int ordinal, std::vector<std::unique_ptr<GpuExecutable>> exes,
                 std::vector<std::shared_ptr<DeviceContext>> contexts, CompileReport report, bool tf32,
                 ParticipantPlan plan, std::chrono::milliseconds timeout)
      : Executable(std::string(kPlatform), ordinal, module, std::move(report)),
        exes_(std::move(exes)),
        contexts_(std::move(contexts)),
        tf32_(tf32),
        plan_(std::move(plan)) {
    set_participants(plan_.replicas, plan_.partitions);
    (void)timeout;
  }

  bool can_execute() const override { return !exes_.empty(); }
  bool RunsF32ProductsInTf32() const override { return tf32_; }
  std::vector<int64_t> local_participants() const override { return plan_.local; }

  StatusOr<std::unique_ptr<Buffer>> BufferFromLiteral(const Literal& literal) override {
    if (contexts_.empty()) return FailedPrecondition("cuda: compiled without a device");
    return Upload(contexts_[0], literal);
  }

  std::string RunReport() const override {
    if (exes_.empty()) return "compiled without a device: nothing ran\n";
    const GpuExecutable* exe = exes_[0].get();
    std::string s;
    if (!device_ms_.empty()) {
      std::vector<double> v = device_ms_;
      std::sort(v.begin(), v.end());
      const double median = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
      s += StrCat("device time (events): median ", Ms(median), " ms  min ", Ms(v.front()), " ms  max ", Ms(v.back()),
                  " ms (all ", v.size(), " runs)\n");
    }
    s += StrCat("cuda graph: ", exe->graph_captured() ? "captured" : exe->graph_eligible() ? "eligible, not yet" : "no",
                exe->graphs_captured() > 1 ? StrCat(" (", exe->graphs_captured(), " captures: the arguments moved)") : "",
                profiled_ ? " (profiling runs eagerly)" : "", "\n");
    if (exe->has_collectives())
      s += StrCat("collectives: ", nccl_line_.empty() ? "not run yet" : nccl_line_, "\n");
    s += exe->compiled().stats.memory.ToString() + "\n";
    if (exe->compiled().stats.autotune) s += exe->compiled().stats.autotune->SummaryLine() + "\n";
    s += HostFallbackLine(exe->compiled().stats.host_fallbacks);
    if (profiled_) {
      s += exe->ProfileReport();
      if (!trace_path_.empty()) {
        Status t = exe->WriteChromeTrace(trace_path_);
        s += t.ok() ? StrCat("chrome trace: ", trace_path_, "\n") : StrCat("chrome trace failed: ", t.message(), "\n");
      }
    }
    return s;
  }

 protected:
  StatusOr<std::vector<std::unique_ptr<Buffer>>> ExecuteImpl(std::span<Buffer* const> arguments,
                                                              const ExecuteOptions& options) override {
    std::lock_guard<std::mutex> lock(run_mu_);
    KILN_RETURN_IF_ERROR(EnsureParticipants(options));
    return RunLocal(0, arguments, options);
  }

  StatusOr<std::vector<std::vector<std::unique_ptr<Buffer>>>> ExecuteParticipantsImpl(
      std::span<const std::vector<Buffer*>> arguments, const ExecuteOptions& options) override {
    std::lock_guard<std::mutex> lock(run_mu_);
    KILN_RETURN_IF_ERROR(plan_.runnable);
    KILN_RETURN_IF_ERROR(EnsureParticipants(options));
    const size_t k_count = exes_.size();
    std::vector<std::optional<StatusOr<std::vector<std::unique_ptr<Buffer>>>>> results(k_count);
    auto run_one = [&](size_t k) {
      const int64_t i = plan_.local[k];
      std::vector<Buffer*> args(arguments[i].begin(), arguments[i].end());
      auto r = RunLocal(k, args, options);
      if (!r.ok() && world_) world_->Abort(Status(StatusCode::kAborted, StrCat("participant ", i, " failed: ", r.status().message())));
      results[k] = std::move(r);
    };
    if (k_count == 1) {
      run_one(0);
    } else {
      std::vector<std::thread> threads;
      for (size_t k = 0; k < k_count; ++k) threads.emplace_back(run_one, k);
      for (auto& t : threads) t.join();
    }
    std::optional<Status> first, first_abort;
    for (size_t k = 0; k < k_count; ++k) {
      if (results[k]->ok()) continue;
      const int64_t i = plan_.local[k];
      const Status& st = results[k]->status();
      Status s(st.code(), StrCat("participant ", i, " (replica ", i / plan_.partitions, ", partition ", i % plan_.partitions,
                                 ", cuda:", plan_.ordinals[k], "): ", st.message()));
      if (st.code() == StatusCode::kAborted) {
        if (!first_abort) first_abort = s;
      } else if (!first) {
        first = s;
      }
    }
    if (first || first_abort) {
      world_.reset();  // an aborted world is dead: the next run makes a new one
      return first ? *first : *first_abort;
    }
    std::vector<std::vector<std::unique_ptr<Buffer>>> out(plan_.n());
    for (size_t k = 0; k < k_count; ++k) out[plan_.local[k]] = std::move(*results[k]).value();
    return out;
  }

 private:
  static StatusOr<std::unique_ptr<Buffer>> Upload(const std::shared_ptr<DeviceContext>& c, const Literal& literal) {
    if (!literal.shape().IsArray()) return InvalidArgument("a buffer holds one array, not ", literal.shape().ToString(false));
    KILN_ASSIGN_OR_RETURN(std::shared_ptr<DeviceAllocation> a, Allocate(c, literal.size_bytes(), "argument"));
    {
      std::lock_guard<std::mutex> lock(c->mu);
      if (literal.size_bytes() > 0)
        KILN_RETURN_IF_ERROR(c->stream->MemcpyHostToDevice(a->memory.get(), literal.untyped_data(), literal.size_bytes()));
      KILN_RETURN_IF_ERROR(c->stream->Synchronize());
    }
    void* ptr = a->memory.get().ptr;
    return std::unique_ptr<Buffer>(new CudaBuffer(literal.shape(), c->device->ordinal(), ptr, std::move(a), c));
  }

  // The NCCL world of the run and each local participant's place in it, made on first use
  // (again after a failed run). A module without collectives needs none; a run of one
  // participant without NCCL runs its collectives as copies (collective_thunks.h).
  Status EnsureParticipants(const ExecuteOptions& options) {
    const auto timeout = std::chrono::milliseconds(std::max<int64_t>(options.collective_timeout_ms, 1));
    if (exes_.empty() || !exes_[0]->has_collectives()) return OkStatus();
    if (world_ && !world_->aborted() && !participants_.empty()) {
      for (auto& p : participants_) p->timeout = timeout;
      return OkStatus();
    }
    world_.reset();
    StatusOr<std::shared_ptr<const NcclApi>> api = NcclApi::Default();
    if (!api.ok() && plan_.n() > 1) return api.status();
    if (api.ok()) {
      std::vector<CudaDevice*> devices;
      for (const auto& c : contexts_) devices.push_back(c->device);
      if (plan_.process_count <= 1) {
        KILN_ASSIGN_OR_RETURN(world_, NcclWorld::CreateInProcess(*api, devices));
      } else {
        KILN_ASSIGN_OR_RETURN(MpiBootstrap * mpi, MpiBootstrap::Get(GetCudaLibraryPaths().mpi));
        if (mpi->size() != plan_.process_count || mpi->rank() != plan_.process_index)
          return FailedPrecondition("cuda: MPI says rank ", mpi->rank(), " of ", mpi->size(), ", the environment ",
                                    plan_.process_index, " of ", plan_.process_count);
        nccl::ncclUniqueId id{};
        if (mpi->rank() == 0) KILN_RETURN_IF_ERROR(NcclStatus(**api, (*api)->ncclGetUniqueId(&id), "ncclGetUniqueId"));
        KILN_RETURN_IF_ERROR(mpi->Broadcast(&id, static_cast<int>(sizeof id), 0));
        KILN_ASSIGN_OR_RETURN(world_, NcclWorld::CreateWithId(*api, id, plan_.n(), plan_.local, devices));
      }
      nccl_line_ = StrCat("NCCL ", (*api)->Version(), ", ", plan_.n(), " rank", plan_.n() == 1 ? "" : "s",
                          plan_.process_count > 1 ? StrCat(" over ", plan_.process_count, " processes (MPI)") : " in this process");
    } else {
      nccl_line_ = StrCat("local copies (one participant; ", api.status().message(), ")");
    }
    participants_.clear();
    for (size_t k = 0; k < exes_.size(); ++k) {
      auto p = std::make_shared<GpuParticipant>();
      p->grid = DeviceGrid{plan_.replicas, plan_.partitions};
      p->device = plan_.local[k];
      p->world = world_;
      p->timeout = timeout;
      exes_[k]->set_participant(p);
      participants_.push_back(std::move(p));
    }
    return OkStatus();
  }

  // Local participant k's run: its arguments on its device (copied there when they live
  // elsewhere), its results in fresh memory there.
  StatusOr<std::vector<std::unique_ptr<Buffer>>> RunLocal(size_t k, std::span<Buffer* const> arguments,
                                                          const ExecuteOptions& options) {
    GpuExecutable& exe = *exes_[k];
    const std::shared_ptr<DeviceContext>& context = contexts_[k];
    const int ordinal = context->device->ordinal();
    KILN_RETURN_IF_ERROR(context->device->Activate());
    std::vector<runtime::DeviceMemory> args(arguments.size());
    std::vector<std::shared_ptr<DeviceAllocation>> copies;
    std::vector<bool> moved(arguments.size(), false);
    for (size_t i = 0; i < arguments.size(); ++i) {
      args[i] = {arguments[i]->opaque_pointer(), arguments[i]->size_bytes()};
      if (arguments[i]->device_ordinal() == ordinal) continue;
      KILN_ASSIGN_OR_RETURN(std::shared_ptr<DeviceAllocation> a, Allocate(context, arguments[i]->size_bytes(), "argument"));
      {
        std::lock_guard<std::mutex> lock(context->mu);
        KILN_RETURN_IF_ERROR(context->stream->MemcpyDeviceToDevice(a->memory.get(), args[i], arguments[i]->size_bytes()));
        KILN_RETURN_IF_ERROR(context->stream->Synchronize());
      }
      args[i] = a->memory.get();
      moved[i] = true;
      copies.push_back(std::move(a));
    }
    const auto& placements = exe.output_placements();
    // Each result gets its own memory, except one the module places in a donated argument,
    // which takes that argument's memory over.
    std::vector<runtime::DeviceMemory> dst(placements.size());
    std::vector<std::shared_ptr<void>> owners(placements.size());
    std::vector<void*> pointers(placements.size(), nullptr);
    if (!options.discard_results) {
      for (size_t j = 0; j < placements.size(); ++j) {
        const GpuExecutable::OutputPlacement& o = placements[j];
        if (o.kind == GpuExecutable::OutputPlacement::Kind::kParameter && o.argument_leaf >= 0 &&
            donated()[o.argument_leaf] && !moved[o.argument_leaf]) {
          Buffer* a = arguments[o.argument_leaf];
          owners[j] = a->memory_owner();
          pointers[j] = static_cast<char*>(a->opaque_pointer()) + o.offset;
          continue;
        }
        KILN_ASSIGN_OR_RETURN(uint64_t bytes, BufferBytes(result_shapes()[j]));
        KILN_ASSIGN_OR_RETURN(std::shared_ptr<DeviceAllocation> a, Allocate(context, bytes, "result"));
        dst[j] = a->memory.get();
        pointers[j] = dst[j].ptr;
        owners[j] = std::move(a);
      }
    }
    GpuRunOptions ro;
    ro.profile = options.profile;
    ro.poison = options.poison;
    ro.seed = options.seed;
    if (k == 0) {
      profiled_ |= options.profile;
      if (!options.trace_path.empty()) trace_path_ = options.trace_path;
    }
    KILN_RETURN_IF_ERROR(exe.ExecuteBound(args, dst, ro));
    if (k == 0) device_ms_.push_back(exe.last_device_ms());
    for (size_t i = 0; i < arguments.size(); ++i)
      if (donated()[i]) arguments[i]->MarkDonated(StrCat("donated to ", module_name()));
    std::vector<std::unique_ptr<Buffer>> out;
    if (options.discard_results) return out;
    for (size_t j = 0; j < placements.size(); ++j)
      out.push_back(std::make_unique<CudaBuffer>(result_shapes()[j], ordinal, pointers[j], std::move(owners[j]), context));
    return out;
  }

  std::vector<std::unique_ptr<GpuExecutable>> exes_;
  std::vector<std::shared_ptr<DeviceContext>> contexts_;
  bool tf32_ = false;
  ParticipantPlan plan_;
  std::mutex run_mu_;
  std::shared_ptr<NcclWorld> world_;
  std::vector<std::shared_ptr<GpuParticipant>> participants_;
  std::string nccl_line_;
  bool profiled_ = false;
  std::string trace_path_;
  std::vector<double> device_ms_;
};

class CudaBackend final : public Backend {
 public:
  std::string_view name() const override { return kPlatform; }
  std::string_view description() const override {
    return "NVIDIA GPUs: generated CUDA kernels (NVRTC), cuBLASLt GEMMs, cuDNN convolutions, CUDA graphs";
  }
  std::string flag_help() const override { return CudaFlagHelp(); }

  StatusOr<std::vector<DeviceInfo>> Devices() const override {
    KILN_ASSIGN_OR_RETURN(runtime::Platform * p, Platform());
    std::vector<DeviceInfo> out;
    for (int i = 0; i < p->device_count(); ++i) {
      KILN_ASSIGN_OR_RETURN(runtime::Device * d, p->GetDevice(i));
      const runtime::DeviceDescription& dd = d->description();
      out.push_back({i, dd.name,
                     StrCat("compute capability ", dd.compute_capability(), ", ", dd.multiprocessor_count, " SMs, ",
                            HumanBytes(dd.memory_bytes))});
    }
    return out;
  }

  StatusOr<std::unique_ptr<Executable>> Compile(const HloModule& module, const CompileOptions& options) override {
    KILN_ASSIGN_OR_RETURN(ParticipantPlan plan, PlanParticipants(module, options));
    KILN_ASSIGN_OR_RETURN(Compiled c, CompileModule(module, options));
    std::vector<std::unique_ptr<GpuExecutable>> exes;
    std::vector<std::shared_ptr<DeviceContext>> contexts;
    if (c.device != nullptr) {
      GpuExecutableOptions eo;
      KILN_ASSIGN_OR_RETURN(eo.use_cuda_graph, BoolFlag(options.flags, "cuda_graph", true));
      KILN_ASSIGN_OR_RETURN(eo.use_side_stream, BoolFlag(options.flags, "cuda_side_stream", true));
      KILN_ASSIGN_OR_RETURN(eo.use_graph_conditionals, BoolFlag(options.flags, "cuda_graph_conditionals", true));
      // Note [Participants on GPUs]: one executable per local participant, each compiled for
      // and loaded on its device (the first one is this compile's).
      const bool runnable = plan.runnable.ok();
      const size_t count = runnable ? plan.local.size() : 1;
      for (size_t k = 0; k < count; ++k) {
        const int ordinal = runnable ? plan.ordinals[k] : options.device_ordinal;
        KILN_ASSIGN_OR_RETURN(std::shared_ptr<DeviceContext> context, contexts_.Get(ordinal));
        std::unique_ptr<CompiledGpuModule> compiled;
        if (k == 0 && ordinal == options.device_ordinal) {
          compiled = std::move(c.compiled);
        } else {
          CompileOptions o = options;
          o.device_ordinal = ordinal;
          KILN_ASSIGN_OR_RETURN(Compiled again, CompileModule(module, o));
          compiled = std::move(again.compiled);
        }
        KILN_RETURN_IF_ERROR(context->device->Activate());
        KILN_ASSIGN_OR_RETURN(std::unique_ptr<GpuExecutable> exe, GpuExecutable::Create(std::move(compiled), *context->device, eo));
        exes.push_back(std::move(exe));
        contexts.push_back(std::move(context));
      }
      if (!runnable) {
        plan.local = {0};
        plan.ordinals = {options.device_ordinal};
      }
    }
    return std::unique_ptr<Executable>(new CudaExecutable(module, options.device_ordinal, std::move(exes), std::move(contexts),
                                                          std::move(c.report), RunsF32InTf32(module), std::move(plan),
                                                          std::chrono::milliseconds(60000)));
  }

  StatusOr<CompileReport> Tune(const HloModule& module, const CompileOptions& options) override {
    KILN_ASSIGN_OR_RETURN(CudaDevice * device, Device(options.device_ordinal));
    (void)device;  // tuning measures on the device: without one, fail here, saying why
    KILN_ASSIGN_OR_RETURN(Compiled c, CompileModule(module, options));
    if (!c.report.autotune) return FailedPrecondition("cuda: no autotuning step ran for ", module.name(), " (tuning is off)");
    return std::move(c.report);
  }

  StatusOr<std::unique_ptr<Buffer>> BufferFromHost(const void* data, uint64_t bytes, const Shape& shape,
                                                   int ordinal) override {
    KILN_ASSIGN_OR_RETURN(uint64_t want, BufferBytes(shape));
    if (bytes != want) return InvalidArgument("a buffer of ", shape.ToString(false), " takes ", want, " bytes, got ", bytes);
    KILN_ASSIGN_OR_RETURN(std::shared_ptr<DeviceContext> c, contexts_.Get(ordinal));
    KILN_ASSIGN_OR_RETURN(std::shared_ptr<DeviceAllocation> a, Allocate(c, bytes, "buffer"));
    {
      std::lock_guard<std::mutex> lock(c->mu);
      if (bytes > 0) KILN_RETURN_IF_ERROR(c->stream->MemcpyHostToDevice(a->memory.get(), data, bytes));
      KILN_RETURN_IF_ERROR(c->stream->Synchronize());
    }
    void* ptr = a->memory.get().ptr;
    return std::unique_ptr<Buffer>(new CudaBuffer(shape, ordinal, ptr, std::move(a), c));
  }

  StatusOr<std::unique_ptr<Buffer>> BufferFromPointer(void* ptr, const Shape& shape, int ordinal,
                                                      std::function<void()> release) override {
    KILN_RETURN_IF_ERROR(BufferBytes(shape).status());
    if (ptr == nullptr) return InvalidArgument("BufferFromPointer: null device pointer");
    KILN_ASSIGN_OR_RETURN(std::shared_ptr<DeviceContext> c, contexts_.Get(ordinal));
    auto owner = std::make_shared<ExternalMemory>();
    owner->context = c;
    owner->release = std::move(release);
    return std::unique_ptr<Buffer>(new CudaBuffer(shape, ordinal, ptr, std::move(owner), c));
  }

 private:
  struct Compiled {
    std::unique_ptr<CompiledGpuModule> compiled;
    CudaDevice* device = nullptr;  // null: compiled for the preset
    CompileReport report;
  };

  // Note [Participants on GPUs]: the grid, this process's participants and their devices.
  StatusOr<ParticipantPlan> PlanParticipants(const HloModule& module, const CompileOptions& options) {
    ParticipantPlan plan;
    KILN_ASSIGN_OR_RETURN(auto grid, ParticipantsOf(module, options));
    plan.replicas = grid.first;
    plan.partitions = grid.second;
    KILN_ASSIGN_OR_RETURN(plan.process_count, IntFlag(options.flags, "cuda_process_count", 1));
    KILN_ASSIGN_OR_RETURN(plan.process_index, IntFlag(options.flags, "cuda_process_index", 0));
    KILN_ASSIGN_OR_RETURN(plan.local_rank, IntFlag(options.flags, "cuda_local_rank", plan.process_index));
    const int64_t n = plan.n();
    if (plan.process_count < 1 || plan.process_index < 0 || plan.process_index >= plan.process_count)
      return InvalidArgument("cuda: process ", plan.process_index, " of ", plan.process_count);
    if (n % plan.process_count != 0)
      return InvalidArgument("cuda: ", n, " participants do not split evenly over ", plan.process_count, " processes");
    const int64_t per = n / plan.process_count;
    int devices = 0;
    if (auto p = Platform(); p.ok()) devices = (*p)->device_count();
    const int64_t first = plan.process_count > 1 ? plan.local_rank * per : options.device_ordinal;
    for (int64_t k = 0; k < per; ++k) {
      plan.local.push_back(plan.process_index * per + k);
      plan.ordinals.push_back(static_cast<int>(first + k));
    }
    if (first + per > devices)
      plan.runnable = FailedPrecondition("cuda: ", per, " participant", per == 1 ? "" : "s", " from cuda:", first,
                                         " need ", first + per, " GPU", first + per == 1 ? "" : "s", " (NCCL runs one rank per GPU); this machine has ",
                                         devices);
    return plan;
  }

  // The GPU compiler on `module` for the device (or the sm_90 preset without one), with the
  // autotuning step where the settings and a device allow it.
  StatusOr<Compiled> CompileModule(const HloModule& module, const CompileOptions& options) {
    KILN_RETURN_IF_ERROR(CheckBackendFlags(options.flags, "cuda_", kFlagSpecs));
    Compiled out;
    codegen::DeviceSpec spec;
    if (auto d = Device(options.device_ordinal); d.ok()) {
      out.device = *d;
      spec = codegen::DeviceSpec::FromDescription(out.device->description());
      out.report.target = StrCat(out.device->description().name, " (", spec.arch(), ")");
    } else {
      KILN_ASSIGN_OR_RETURN(spec, codegen::DeviceSpec::FromPreset("sm_90"));
      out.report.target = StrCat("sm_90 preset (no device: ", d.status().message(), ")");
    }
    GpuCompileOptions o;
    o.device = spec;
    o.verify_input = options.verify;
    o.dump_dir = options.dump_dir;
    o.kernel_dump_dir = options.kernel_dump_dir;
    KILN_ASSIGN_OR_RETURN(o.gemm.fuse_epilogues, BoolFlag(options.flags, "cuda_gemm_epilogue", true));
    KILN_ASSIGN_OR_RETURN(o.fused_attention, BoolFlag(options.flags, "cuda_fused_attention", true));
    KILN_ASSIGN_OR_RETURN(o.hoist_loop_invariants, BoolFlag(options.flags, "cuda_loop_invariants", true));
    KILN_ASSIGN_OR_RETURN(o.conv.fuse_epilogues, BoolFlag(options.flags, "cuda_conv_epilogue", true));
    KILN_ASSIGN_OR_RETURN(o.conv.backward_convolutions, BoolFlag(options.flags, "cuda_conv_backward", true));
    // The autotuning step: with a device, and settings that ask for tuning. The cache must
    // outlive the compile only.
    std::unique_ptr<autotune::Cache> cache;
    if (out.device != nullptr && options.autotune.enabled()) {
      KILN_ASSIGN_OR_RETURN(autotune::AutotuneOptions ao, autotune::MakeAutotuneOptions(options.autotune));
      KILN_ASSIGN_OR_RETURN(cache, autotune::OpenAutotuneCache(options.autotune));
      o.autotune.factory = CudaAutotuneFactory();
      o.autotune.target = out.device->description();
      o.autotune.device = out.device;
      o.autotune.cache = cache.get();
      o.autotune.options = std::move(ao);
    }
    // A shard_map program runs as its per-device program (passes/shard_map_lowering.h), as on
    // the cpu and the interpreter.
    std::unique_ptr<HloModule> lowered = CloneModule(module);
    KILN_RETURN_IF_ERROR(LowerShardMap(*lowered).status());
    KILN_RETURN_IF_ERROR(OrderSendsBeforeRecvDones(*lowered).status());
    // The run's grid in the header: collectives that gather every member's data size their
    // workspace by it (cuda/compiler/collective_kernels.h).
    KILN_ASSIGN_OR_RETURN(auto grid, ParticipantsOf(*lowered, options));
    lowered->header().replica_count = grid.first;
    lowered->header().num_partitions = grid.second;
    KILN_ASSIGN_OR_RETURN(out.compiled, GpuCompiler::Compile(std::move(lowered), o));
    const GpuCompileStats& st = out.compiled->stats;
    if (st.autotune) KILN_RETURN_IF_ERROR(autotune::WriteAutotuneJson(options.autotune, *st.autotune));
    CompileReport& r = out.report;
    r.compile_seconds = st.compile_seconds;
    r.memory = st.memory;
    r.autotune = st.autotune;
    for (const auto& [k, n] : st.host_fallbacks) r.host_fallbacks.emplace_back(k, n);
    r.details = StrCat("target: ", r.target, "\n", st.ToString());
    r.thunk_listing = out.compiled->ThunkListing();
    r.summary = StrCat("target: ", r.target, "\n", st.autotune ? st.autotune->SummaryLine() + "\n" : "", "compiled ",
                       module.name(), " in ", RoundTripDouble(std::round(st.compile_seconds * 1e5) / 100), " ms: ",
                       st.thunks, " thunks, ", st.kernels, " kernels (", st.kernels_from_cache, " from the NVRTC cache)\n",
                       st.memory.ToString(), "\n", HostFallbackLine(st.host_fallbacks),
                       options.kernel_dump_dir.empty() ? "" : StrCat("kernel sources in ", options.kernel_dump_dir, "\n"));
    if (options.keep_compiled_module_text) r.compiled_module_text = out.compiled->module->ToString();
    return out;
  }

  DeviceContexts contexts_;
};

}  // namespace

// The platform-level flags (cuda_*_library, cuda_include_dir) set the process's CudaLibraryPaths
// (library_loader.h) -- those given; the others keep their value. Each library is loaded once
// per process, on first use, so they take effect when given before that: to the first Client's
// creation (ClientOptions::flags). Compile accepts and ignores them (they are in every
// compile's flags too).
std::unique_ptr<Backend> CreateCudaBackend(const BackendFlags& flags) {
  CudaLibraryPaths paths = GetCudaLibraryPaths();
  const std::pair<std::string_view, std::string*> fields[] = {
      {"cuda_driver_library", &paths.driver}, {"cuda_nvrtc_library", &paths.nvrtc},
      {"cuda_cublas_library", &paths.cublas}, {"cuda_cublaslt_library", &paths.cublaslt},
      {"cuda_cufft_library", &paths.cufft},   {"cuda_cudnn_library", &paths.cudnn},
      {"cuda_nccl_library", &paths.nccl},     {"cuda_include_dir", &paths.include_dir},
      {"cuda_mpi_library", &paths.mpi},       {"cuda_cusolver_library", &paths.cusolver},
  };
  bool given = false;
  for (const auto& [name, field] : fields)
    if (std::string_view v = FlagOr(flags, name, ""); !v.empty()) {
      *field = std::string(v);
      given = true;
    }
  if (given) SetCudaLibraryPaths(paths);
  return std::make_unique<CudaBackend>();
}

std::string CudaFlagHelp() { return FlagHelp(kFlagSpecs); }

}  // namespace kiln::cuda
