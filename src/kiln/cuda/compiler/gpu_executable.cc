#include "kiln/cuda/compiler/gpu_executable.h"

#include <algorithm>
#include <fstream>

#include "kiln/base/logging.h"
#include "kiln/base/strings.h"
#include "kiln/cuda/compiler/control_flow_thunks.h"
#include "kiln/cuda/compiler/graph_api.h"
#include "kiln/cuda/driver_api.h"
#include "kiln/hlo/computation.h"

namespace kiln::cuda {

namespace {

Literal* LeafOf(Literal& l, const ShapeIndex& index) {
  Literal* x = &l;
  for (int64_t i : index) x = &x->mutable_tuple_element(i);
  return x;
}
const Literal* LeafOf(const Literal& l, const ShapeIndex& index) {
  const Literal* x = &l;
  for (int64_t i : index) x = &x->tuple_element(i);
  return x;
}

Shape Logical(Shape s) {
  s.clear_layout();
  return s;
}

}  // namespace

GpuExecutable::GpuExecutable(std::unique_ptr<CompiledGpuModule> compiled, CudaDevice& device,
                             GpuExecutableOptions options)
    : compiled_(std::move(compiled)),
      device_(device),
      options_(options),
      // Alone without NCCL until set_participant says otherwise: the participant still queues
      // its sends for its recv-dones (Note [Send and recv on NCCL]).
      participant_(std::make_shared<GpuParticipant>()) {}

GpuExecutable::~GpuExecutable() {
  if (stream_) (void)stream_->Synchronize();
  DestroyGraphs();
}

void GpuExecutable::DestroyGraphs() {
  auto api = LoadGraphApi(device_.api());
  if (api.ok()) {
    for (CapturedGraph& g : graphs_) {
      if (g.exec) (*api)->cuGraphExecDestroy(g.exec);
      if (g.graph) (*api)->cuGraphDestroy(g.graph);
    }
  }
  graphs_.clear();
}

std::vector<void*> GpuExecutable::ParameterBases() const {
  std::vector<void*> bases;
  for (int64_t a : leaf_allocation_) bases.push_back(a >= 0 ? buffers_.bases[a].ptr : nullptr);
  return bases;
}

StatusOr<std::unique_ptr<GpuExecutable>> GpuExecutable::Create(std::unique_ptr<CompiledGpuModule> compiled,
                                                               CudaDevice& device, GpuExecutableOptions options) {
  if (!compiled || !compiled->module || !compiled->assignment) return InvalidArgument("gpu executable: nothing compiled");
  std::unique_ptr<GpuExecutable> e(new GpuExecutable(std::move(compiled), device, options));
  KILN_RETURN_IF_ERROR(e->Initialize());
  return e;
}

Status GpuExecutable::Initialize() {
  runtime::BfcOptions bo;
  bo.name = "gpu-executable";
  KILN_ASSIGN_OR_RETURN(allocator_, runtime::CreateBfcDeviceAllocator(device_, bo));
  KILN_ASSIGN_OR_RETURN(stream_, device_.CreateStream({}));
  runtime::EventOptions eo;
  eo.enable_timing = true;
  KILN_ASSIGN_OR_RETURN(start_, device_.CreateEvent(eo));
  KILN_ASSIGN_OR_RETURN(stop_, device_.CreateEvent(eo));

  const BufferAssignment& ba = *compiled_->assignment;
  buffers_.bases.assign(ba.allocations().size(), {});
  parameter_leaves_.assign(ba.allocations().size(), {-1, {}});
  for (const BufferAllocation& a : ba.allocations()) {
    if (a.kind == BufferAllocation::Kind::kParameter) parameter_leaves_[a.index] = {a.parameter_number, a.parameter_index};
    // Parameters are bound to the caller's memory (ExecuteBound) or get slots of their own
    // when SetArguments first needs them.
    if (a.size == 0 || a.kind == BufferAllocation::Kind::kParameter) continue;
    const char* tag = a.kind == BufferAllocation::Kind::kParameter ? "parameter"
                      : a.kind == BufferAllocation::Kind::kConstant ? "constant"
                                                                     : "arena";
    KILN_ASSIGN_OR_RETURN(runtime::OwnedDeviceMemory m,
                          runtime::OwnedDeviceMemory::Allocate(*allocator_, static_cast<uint64_t>(a.size), tag));
    buffers_.bases[a.index] = m.get();
    if (a.kind == BufferAllocation::Kind::kConstant && a.constant && a.constant->has_literal()) {
      const Literal& l = a.constant->literal();
      if (!a.constant->literal_elided() && l.size_bytes() > 0) {
        if (l.size_bytes() > m.get().size) return Internal("constant %", a.constant->name(), " exceeds its allocation");
        KILN_RETURN_IF_ERROR(stream_->MemcpyHostToDevice(m.get(), l.untyped_data(), l.size_bytes()));
      }
    }
    owned_.push_back(std::move(m));
  }
  ThunkInitParams ip;
  ip.device = &device_;
  ip.stream = stream_.get();
  ip.graph_conditionals = options_.use_cuda_graph && options_.use_graph_conditionals;
  ip.graph_switch_nodes = options_.use_graph_switch_nodes;
  KILN_RETURN_IF_ERROR(compiled_->entry.Initialize(ip));
  const uint64_t ws = compiled_->entry.WorkspaceBytes();
  if (ws > 0) {
    KILN_ASSIGN_OR_RETURN(runtime::OwnedDeviceMemory m, runtime::OwnedDeviceMemory::Allocate(*allocator_, ws, "workspace"));
    workspace_ = m.get();
    owned_.push_back(std::move(m));
  }
  for (const GpuThunk* t : compiled_->entry.Flatten()) {
    if (t->kind() != GpuThunk::Kind::kCollective) continue;
    has_collectives_ = true;
    if (!collective_stream_ && static_cast<const CollectiveThunk*>(t)->async()) {
      KILN_ASSIGN_OR_RETURN(collective_stream_, device_.CreateStream({}));
    }
  }
  if (options_.use_side_stream) {
    side_pairs_ = compiled_->entry.PlanSideStream();
    if (side_pairs_ > 0) {
      KILN_ASSIGN_OR_RETURN(side_stream_, device_.CreateStream({}));
      KILN_ASSIGN_OR_RETURN(fork_, device_.CreateEvent({}));
      KILN_ASSIGN_OR_RETURN(join_, device_.CreateEvent({}));
    }
  }
  KILN_RETURN_IF_ERROR(stream_->Synchronize());
  result_shape_ = Logical(compiled_->module->entry_computation()->root_instruction()->shape());
  // Argument leaves in order (parameters in order, each one's leaves in ArrayLeafIndices order).
  const HloComputation* entry = compiled_->module->entry_computation();
  for (int64_t p = 0; p < entry->num_parameters(); ++p)
    for (const ShapeIndex& index : ArrayLeafIndices(entry->parameter_instruction(p)->shape())) {
      int64_t alloc = -1;
      for (size_t a = 0; a < parameter_leaves_.size(); ++a)
        if (parameter_leaves_[a].first == p && parameter_leaves_[a].second == index) alloc = static_cast<int64_t>(a);
      leaf_allocation_.push_back(alloc);
    }
  for (const BufferSlice& slice : ba.output_slices()) {
    OutputPlacement o;
    o.bytes = static_cast<uint64_t>(slice.size);
    if (slice.valid()) {
      const BufferAllocation& a = ba.allocations()[slice.allocation];
      if (a.kind == BufferAllocation::Kind::kConstant) o.kind = OutputPlacement::Kind::kConstant;
      if (a.kind == BufferAllocation::Kind::kParameter) {
        o.kind = OutputPlacement::Kind::kParameter;
        o.offset = static_cast<uint64_t>(slice.offset);
        for (size_t k = 0; k < leaf_allocation_.size(); ++k)
          if (leaf_allocation_[k] == slice.allocation) o.argument_leaf = static_cast<int64_t>(k);
      }
    }
    output_placements_.push_back(o);
  }
  // Loops of known trip count are captured unrolled; a graph of more operations than this
  // would take long to instantiate and much memory: such a module runs eagerly (still
  // without host waits).
  constexpr int64_t kMaxGraphOps = 1 << 17;
  graph_eligible_ = options_.use_cuda_graph && !compiled_->entry.SyncsHost() &&
                    compiled_->entry.EnqueuedOps() <= kMaxGraphOps;
  return OkStatus();
}

Status GpuExecutable::SetArguments(std::span<const Literal> arguments) {
  std::lock_guard<std::mutex> lock(mu_);
  const HloComputation* entry = compiled_->module->entry_computation();
  if (static_cast<int64_t>(arguments.size()) != entry->num_parameters())
    return InvalidArgument("module ", compiled_->module->name(), " takes ", entry->num_parameters(),
                           " arguments, got ", arguments.size());
  for (size_t i = 0; i < arguments.size(); ++i) {
    const Shape& want = entry->parameter_instruction(static_cast<int64_t>(i))->shape();
    if (!Shape::Compatible(Logical(want), Logical(arguments[i].shape())))
      return InvalidArgument("argument ", i, " has shape ", arguments[i].shape().ToString(false), ", parameter ", i,
                             " is ", want.ToString(false));
  }
  KILN_RETURN_IF_ERROR(EnsureParameterSlots());
  for (size_t a = 0; a < parameter_leaves_.size(); ++a) {
    const auto& [p, index] = parameter_leaves_[a];
    if (p < 0 || buffers_.bases[a].is_null()) continue;
    const Literal* leaf = LeafOf(arguments[p], index);
    const uint64_t bytes = std::min<uint64_t>(leaf->size_bytes(), buffers_.bases[a].size);
    if (bytes > 0) KILN_RETURN_IF_ERROR(stream_->MemcpyHostToDevice(buffers_.bases[a], leaf->untyped_data(), bytes));
  }
  return stream_->Synchronize();
}

Status GpuExecutable::EnsureParameterSlots() {
  const BufferAssignment& ba = *compiled_->assignment;
  if (parameter_slots_.empty()) {
    for (const BufferAllocation& a : ba.allocations()) {
      if (a.kind != BufferAllocation::Kind::kParameter || a.size == 0) continue;
      KILN_ASSIGN_OR_RETURN(runtime::OwnedDeviceMemory m,
                            runtime::OwnedDeviceMemory::Allocate(*allocator_, static_cast<uint64_t>(a.size), "parameter"));
      parameter_slots_.push_back(std::move(m));
    }
  }
  size_t next = 0;
  for (const BufferAllocation& a : ba.allocations())
    if (a.kind == BufferAllocation::Kind::kParameter && a.size > 0) buffers_.bases[a.index] = parameter_slots_[next++].get();
  return OkStatus();
}

Status GpuExecutable::ExecuteBound(std::span<const runtime::DeviceMemory> arguments,
                                   std::span<const runtime::DeviceMemory> outputs, const GpuRunOptions& options) {
  std::lock_guard<std::mutex> lock(mu_);
  if (arguments.size() != leaf_allocation_.size())
    return InvalidArgument(compiled_->module->name(), " takes ", leaf_allocation_.size(), " argument leaves, got ",
                           arguments.size());
  if (outputs.size() != output_placements_.size())
    return InvalidArgument(compiled_->module->name(), " has ", output_placements_.size(), " output leaves, got ",
                           outputs.size(), " destinations");
  const BufferAssignment& ba = *compiled_->assignment;
  for (size_t k = 0; k < arguments.size(); ++k) {
    const int64_t a = leaf_allocation_[k];
    if (a < 0) continue;
    const uint64_t need = static_cast<uint64_t>(ba.allocations()[a].size);
    if (need > 0 && (arguments[k].is_null() || arguments[k].size < need))
      return InvalidArgument("argument leaf ", k, " of ", compiled_->module->name(), " needs ", need, " bytes of device memory");
    buffers_.bases[a] = arguments[k];
  }
  KILN_RETURN_IF_ERROR(ExecuteLocked(options));
  bool copied = false;
  for (size_t j = 0; j < outputs.size(); ++j) {
    if (outputs[j].is_null() || output_placements_[j].bytes == 0) continue;
    runtime::DeviceMemory src = buffers_.Get(ba.output_slices()[j]);
    const uint64_t bytes = output_placements_[j].bytes;
    if (outputs[j].size < bytes) return InvalidArgument("output ", j, " needs ", bytes, " bytes");
    KILN_RETURN_IF_ERROR(stream_->MemcpyDeviceToDevice(outputs[j], src, bytes));
    copied = true;
  }
  if (copied) KILN_RETURN_IF_ERROR(stream_->Synchronize());
  return OkStatus();
}

void GpuExecutable::set_participant(std::shared_ptr<GpuParticipant> participant) {
  std::lock_guard<std::mutex> lock(mu_);
  participant_ = std::move(participant);
}

Status GpuExecutable::WaitForRun() {
  if (!participant_ || !participant_->world) return stream_->Synchronize();
  runtime::Stream* s = stream_.get();
  runtime::Stream* c = collective_stream_.get();
  return participant_->world->Wait(
      participant_->device,
      [s, c]() -> StatusOr<bool> {
        KILN_ASSIGN_OR_RETURN(bool idle, s->IsIdle());
        if (idle && c != nullptr) {
          KILN_ASSIGN_OR_RETURN(idle, c->IsIdle());
        }
        return idle;
      },
      participant_->timeout);
}

void GpuExecutable::SetSideStream(ThunkExecuteParams& p) const {
  p.participant = participant_.get();
  p.collective_stream = collective_stream_.get();
  if (participant_) participant_->pending_sends.clear();
  if (!side_stream_) return;
  p.side_stream = side_stream_.get();
  p.fork = fork_.get();
  p.join = join_.get();
}

Status GpuExecutable::Capture() {
  KILN_ASSIGN_OR_RETURN(const GraphApi* g, LoadGraphApi(device_.api()));
  CUstream s = static_cast<CudaStream*>(stream_.get())->handle();
  KILN_RETURN_IF_ERROR(device_.Activate());
  const DriverApi& api = device_.api();
  KILN_RETURN_IF_ERROR(CuStatus(api, g->cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED), "cuStreamBeginCapture"));
  ThunkExecuteParams p;
  p.buffers = &buffers_;
  p.stream = stream_.get();
  p.workspace = workspace_;
  p.capturing = true;
  SetSideStream(p);
  Status run = compiled_->entry.Execute(p);
  CUgraph graph = nullptr;
  Status end = CuStatus(api, g->cuStreamEndCapture(s, &graph), "cuStreamEndCapture");
  if (!run.ok() || !end.ok()) {
    if (graph) g->cuGraphDestroy(graph);
    return run.ok() ? end : run;
  }
  CUgraphExec exec = nullptr;
  Status inst = CuStatus(api, g->cuGraphInstantiateWithFlags(&exec, graph, 0), "cuGraphInstantiateWithFlags");
  if (!inst.ok()) {
    g->cuGraphDestroy(graph);
    return inst;
  }
  if (graphs_.size() >= kMaxGraphs) {
    g->cuGraphExecDestroy(graphs_.front().exec);
    g->cuGraphDestroy(graphs_.front().graph);
    graphs_.erase(graphs_.begin());
  }
  graphs_.push_back({ParameterBases(), graph, exec});
  ++graphs_captured_;
  return OkStatus();
}

Status GpuExecutable::ExecuteLocked(const GpuRunOptions& options) {
  uint64_t rng_state = options.seed;
  ThunkExecuteParams p;
  p.rng_state = &rng_state;
  p.buffers = &buffers_;
  p.stream = stream_.get();
  p.workspace = workspace_;
  if (options.profile && !profiler_) {
    KILN_ASSIGN_OR_RETURN(profiler_, ThunkProfiler::Create(device_));
  }
  if (options.profile) p.profiler = profiler_.get();
  // The graph of these parameter addresses, if one was captured (moved to the back: most
  // recently used); Note [CUDA graphs of bound parameters].
  CUgraphExec graph_exec = nullptr;
  if (graph_eligible_ && !options.profile) {
    const std::vector<void*> bases = ParameterBases();
    for (size_t i = 0; i < graphs_.size(); ++i)
      if (graphs_[i].parameter_bases == bases) {
        std::rotate(graphs_.begin() + static_cast<std::ptrdiff_t>(i), graphs_.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                    graphs_.end());
        graph_exec = graphs_.back().exec;
        break;
      }
  }
  if (graph_eligible_ && !options.profile && eager_runs_ > 0 && !graph_exec) {
    Status s = Capture();
    if (s.ok()) graph_exec = graphs_.back().exec;
    if (!s.ok()) {
      KILN_LOG(Warning) << "cuda: CUDA graph capture of " << compiled_->module->name()
                        << " failed, running without graphs: " << s.message();
      graph_eligible_ = false;
      // A failed capture may leave the stream in error: start over on a fresh one.
      KILN_ASSIGN_OR_RETURN(stream_, device_.CreateStream({}));
      p.stream = stream_.get();
      if (side_stream_) {
        KILN_ASSIGN_OR_RETURN(side_stream_, device_.CreateStream({}));
      }
    }
  }
  SetSideStream(p);
  if (options.poison) {
    const int64_t arena = compiled_->assignment->temp_allocation();
    if (arena >= 0 && !buffers_.bases[arena].is_null()) KILN_RETURN_IF_ERROR(stream_->Memset8(buffers_.bases[arena], 0xff));
    if (!workspace_.is_null()) KILN_RETURN_IF_ERROR(stream_->Memset8(workspace_, 0xff));
  }
  KILN_RETURN_IF_ERROR(stream_->RecordEvent(*start_));
  if (graph_exec) {
    KILN_ASSIGN_OR_RETURN(const GraphApi* g, LoadGraphApi(device_.api()));
    CUstream s = static_cast<CudaStream*>(stream_.get())->handle();
    KILN_RETURN_IF_ERROR(device_.Activate());
    KILN_RETURN_IF_ERROR(CuStatus(device_.api(), g->cuGraphLaunch(graph_exec, s), "cuGraphLaunch"));
  } else {
    KILN_RETURN_IF_ERROR(compiled_->entry.Execute(p));
    ++eager_runs_;
  }
  KILN_RETURN_IF_ERROR(stream_->RecordEvent(*stop_));
  KILN_RETURN_IF_ERROR(WaitForRun());
  KILN_ASSIGN_OR_RETURN(float ms, stop_->ElapsedMillisSince(*start_));
  last_device_ms_ = ms;
  if (options.profile) KILN_RETURN_IF_ERROR(profiler_->Collect());
  return OkStatus();
}

Status GpuExecutable::Execute(const GpuRunOptions& options) {
  std::lock_guard<std::mutex> lock(mu_);
  return ExecuteLocked(options);
}

StatusOr<Literal> GpuExecutable::FetchResult() {
  std::lock_guard<std::mutex> lock(mu_);
  Literal result(result_shape_);
  const std::vector<ShapeIndex> leaves = ArrayLeafIndices(result_shape_);
  const std::vector<BufferSlice>& slices = compiled_->assignment->output_slices();
  if (leaves.size() != slices.size())
    return Internal("result has ", leaves.size(), " array leaves, buffer assignment ", slices.size());
  for (size_t i = 0; i < leaves.size(); ++i) {
    Literal* leaf = LeafOf(result, leaves[i]);
    if (leaf->size_bytes() == 0) continue;
    runtime::DeviceMemory src = buffers_.Get(slices[i]);
    if (src.size < leaf->size_bytes()) return Internal("output ", i, " slice ", slices[i].ToString(), " is too small");
    KILN_RETURN_IF_ERROR(stream_->MemcpyDeviceToHost(leaf->untyped_data(), src, leaf->size_bytes()));
  }
  KILN_RETURN_IF_ERROR(stream_->Synchronize());
  return result;
}

StatusOr<Literal> GpuExecutable::Run(std::span<const Literal> arguments, const GpuRunOptions& options) {
  KILN_RETURN_IF_ERROR(SetArguments(arguments));
  KILN_RETURN_IF_ERROR(Execute(options));
  return FetchResult();
}

std::string GpuExecutable::ProfileReport(int max_rows) const {
  if (!profiler_) return "no profile (run with profiling on)\n";
  const runtime::DeviceDescription& d = device_.description();
  const double bw = d.memory_bandwidth_bytes_per_s > 0 ? d.memory_bandwidth_bytes_per_s : 4.8e12;
  std::vector<ThunkProfiler::Entry> rows = profiler_->entries();
  double top_total = 0;
  for (const ThunkProfiler::Entry& e : rows)
    if (e.thunk->kind() != GpuThunk::Kind::kWhile && e.thunk->kind() != GpuThunk::Kind::kConditional)
      top_total += e.total_ms;
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.total_ms > b.total_ms; });
  std::string s = StrCat("per-thunk device time (", rows.empty() ? 0 : rows[0].count, " runs; floor = max(bytes / ",
                         RoundTripDouble(std::round(bw / 1e9)), " GB/s, FLOPs / peak)):\n");
  char buf[512];
  std::snprintf(buf, sizeof buf, "  %-34s %-7s %10s %6s %10s %10s %9s %9s %7s\n", "thunk", "kind", "ms/run", "%",
                "MB", "GFLOP", "GB/s", "TFLOP/s", "%floor");
  s += buf;
  int n = 0;
  for (const ThunkProfiler::Entry& e : rows) {
    if (n++ >= max_rows) break;
    const double ms = e.count ? e.total_ms / static_cast<double>(e.count) : 0;
    const double bytes = static_cast<double>(e.thunk->bytes());
    const double flops = static_cast<double>(e.thunk->flops());
    const double peak = e.thunk->PeakFlops(d);
    const double floor_ms = std::max(bytes / bw, peak > 0 ? flops / peak : 0.0) * 1e3;
    std::string name = e.thunk->name();
    if (name.size() > 34) name = name.substr(0, 31) + "...";
    std::snprintf(buf, sizeof buf, "  %-34s %-7s %10.4f %5.1f%% %10.2f %10.2f %9.1f %9.2f %6.1f%%\n", name.c_str(),
                  std::string(ThunkKindName(e.thunk->kind())).c_str(), ms,
                  top_total > 0 ? 100.0 * e.total_ms / top_total : 0.0, bytes / 1e6, flops / 1e9,
                  ms > 0 ? bytes / (ms * 1e-3) / 1e9 : 0.0, ms > 0 ? flops / (ms * 1e-3) / 1e12 : 0.0,
                  ms > 0 ? 100.0 * floor_ms / ms : 0.0);
    s += buf;
  }
  // Loops: iterations per run (executions of the body's first thunk) and the time of one.
  for (const ThunkProfiler::Entry& e : rows) {
    if (e.thunk->kind() != GpuThunk::Kind::kWhile || e.count == 0) continue;
    const auto* w = static_cast<const WhileThunk*>(e.thunk);
    if (w->body().thunks().empty()) continue;
    const GpuThunk* first = w->body().thunks().front().get();
    int64_t iterations = 0;
    for (const ThunkProfiler::Entry& b : rows)
      if (b.thunk == first) iterations = b.count;
    if (iterations == 0) continue;
    std::snprintf(buf, sizeof buf, "  loop %%%s: %.1f iterations per run, %.4f ms each\n", w->name().c_str(),
                  static_cast<double>(iterations) / static_cast<double>(e.count),
                  e.total_ms / static_cast<double>(iterations));
    s += buf;
  }
  return s;
}

Status GpuExecutable::WriteChromeTrace(const std::string& path) const {
  if (!profiler_) return FailedPrecondition("no profiled run to trace");
  std::ofstream out(path);
  if (!out) return InvalidArgument("cannot write ", path);
  out << "{\"traceEvents\":[\n";
  bool first = true;
  for (const ThunkProfiler::Span& sp : profiler_->last_run()) {
    out << (first ? "" : ",\n") << "{\"name\":\"" << sp.thunk->name() << "\",\"cat\":\""
        << ThunkKindName(sp.thunk->kind()) << "\",\"ph\":\"X\",\"pid\":0,\"tid\":" << sp.lane << ",\"ts\":" << sp.start_ms * 1e3
        << ",\"dur\":" << sp.duration_ms * 1e3 << ",\"args\":{\"bytes\":" << sp.thunk->bytes()
        << ",\"flops\":" << sp.thunk->flops() << "}}";
    first = false;
  }
  out << "\n],\"displayTimeUnit\":\"ms\"}\n";
  return out ? OkStatus() : Internal("writing ", path, " failed");
}

}  // namespace kiln::cuda
