#include "kiln/cuda/compiler/control_flow_thunks.h"

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <mutex>

#include "kiln/base/logging.h"
#include "kiln/base/strings.h"
#include "kiln/cuda/compiler/conv_config.h"
#include "kiln/cuda/compiler/gemm_config.h"
#include "kiln/cuda/compiler/graph_api.h"
#include "kiln/cuda/compiler/library_call_expander.h"
#include "kiln/cuda/cuda_device.h"
#include "kiln/cuda/library_loader.h"
#include "kiln/cuda/nvrtc_compiler.h"
#include "kiln/eval/evaluator.h"
#include "kiln/hlo/clone.h"
#include "kiln/hlo/computation.h"
#include "kiln/passes/thunk_util.h"

namespace kiln::cuda {

Status CopySlice(const ThunkExecuteParams& params, const BufferSlice& src, const BufferSlice& dst) {
  if (src == dst || dst.size == 0) return OkStatus();
  if (src.size != dst.size)
    return Internal("copy between slices of different sizes ", src.ToString(), " -> ", dst.ToString());
  return params.stream->MemcpyDeviceToDevice(params.buffers->Get(dst), params.buffers->Get(src), dst.size);
}

// ---- CopyThunk ----

CopyThunk::CopyThunk(std::string name, std::vector<Copy> copies)
    : GpuThunk(Kind::kCopy, std::move(name),
               [&] {
                 int64_t b = 0;
                 for (const Copy& c : copies) b += 2 * c.dst.size;
                 return b;
               }()),
      copies_(std::move(copies)) {}

std::string CopyThunk::ToString() const {
  std::string s = StrCat("copy %", name());
  for (const Copy& c : copies_) s += StrCat(" ", c.src.ToString(), "->", c.dst.ToString());
  return s;
}

Status CopyThunk::Execute(const ThunkExecuteParams& params) const {
  for (const Copy& c : copies_) KILN_RETURN_IF_ERROR(CopySlice(params, c.src, c.dst));
  return OkStatus();
}

namespace {

std::vector<const GpuThunk*> Pointers(const ThunkSequence& s) {
  std::vector<const GpuThunk*> out;
  for (const auto& t : s.thunks()) out.push_back(t.get());
  return out;
}

StatusOr<runtime::OwnedDeviceMemory> PinnedBytes(const ThunkInitParams& params, uint64_t bytes) {
  return runtime::OwnedDeviceMemory::Allocate(params.device->pinned_host_allocator(), bytes, "control-flow predicate");
}


// ---- Device-side loops (Note [Device-side loops]) ----

// The toolkit's device runtime library (cudaGraphSetConditional lives there).
std::string FindDeviceRuntime() {
  namespace fs = std::filesystem;
  std::vector<fs::path> dirs;
  for (const std::string& inc : FindToolkitIncludeDirs("")) {
    dirs.push_back(fs::path(inc).parent_path() / "lib64");
    dirs.push_back(fs::path(inc).parent_path() / "lib");
  }
  for (const char* env : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* v = std::getenv(env); v && *v) dirs.push_back(fs::path(v) / "lib64");
  dirs.push_back("/usr/local/cuda/lib64");
  dirs.push_back("/usr/lib/x86_64-linux-gnu");
  std::error_code ec;
  for (const fs::path& d : dirs)
    if (fs::is_regular_file(d / "libcudadevrt.a", ec)) return (d / "libcudadevrt.a").string();
  return "";
}

// The branch an HLO conditional runs (Note [Device-side conditionals]): one text, compiled
// here for the host (DeviceBranchRule) and by NVRTC into the set-branch kernel.
#define KILN_BRANCH_RULE(...) \
  __VA_ARGS__                 \
  constexpr char kBranchRuleSource[] = #__VA_ARGS__;
KILN_BRANCH_RULE(inline int kiln_branch_of(int is_pred, unsigned char pred, int index, int n) {
  return is_pred ? (pred != 0 ? 0 : 1) : ((index < 0 || index >= n) ? n - 1 : index);
})
#undef KILN_BRANCH_RULE

// Links `cubin` (CompileSetConditionKernel's) with the device runtime on params.device and
// loads it into `*module` (Note [Device-side loops]).
Status LinkSetConditionModule(const ThunkInitParams& params, const std::string& cubin, CUmodule* module) {
  const DriverApi& api = params.device->api();
  const std::string devrt = FindDeviceRuntime();
  if (devrt.empty()) return NotFound("no libcudadevrt.a (the CUDA toolkit's device runtime) found");
  KILN_ASSIGN_OR_RETURN(const GraphApi* g, LoadConditionalGraphApi(api));
  KILN_RETURN_IF_ERROR(params.device->Activate());
  CUlinkState link = nullptr;
  KILN_RETURN_IF_ERROR(CuStatus(api, g->cuLinkCreate(0, nullptr, nullptr, &link), "cuLinkCreate"));
  Status s = [&]() -> Status {
    KILN_RETURN_IF_ERROR(CuStatus(api,
                                  g->cuLinkAddData(link, CU_JIT_INPUT_CUBIN, const_cast<char*>(cubin.data()),
                                                   cubin.size(), "kiln_set_condition", 0, nullptr, nullptr),
                                  "cuLinkAddData"));
    KILN_RETURN_IF_ERROR(CuStatus(
        api, g->cuLinkAddFile(link, CU_JIT_INPUT_LIBRARY, devrt.c_str(), 0, nullptr, nullptr), "cuLinkAddFile"));
    void* image = nullptr;
    size_t size = 0;
    KILN_RETURN_IF_ERROR(CuStatus(api, g->cuLinkComplete(link, &image, &size), "cuLinkComplete"));
    return CuStatus(api, api.cuModuleLoadDataEx(module, image, 0, nullptr, nullptr), "cuModuleLoadDataEx");
  }();
  g->cuLinkDestroy(link);
  return s;
}

StatusOr<int> DriverVersion(const DriverApi& api) {
  int version = 0;
  KILN_RETURN_IF_ERROR(CuStatus(api, api.cuDriverGetVersion(&version), "cuDriverGetVersion"));
  return version;
}

// The set-condition kernel `kernel` of `cubin`, linked with the device runtime and loaded
// (Notes [Device-side loops] and [Device-side conditionals]); returns the driver's version.
// On any failure *module and *function are left null (the caller keeps its host path).
StatusOr<int> LoadSetKernel(const ThunkInitParams& params, const std::string& cubin, const char* kernel,
                            CUmodule* module, CUfunction* function) {
  const DriverApi& api = params.device->api();
  StatusOr<int> version = [&]() -> StatusOr<int> {
    KILN_ASSIGN_OR_RETURN(int v, DriverVersion(api));
    if (v < 12040) return Unimplemented("the driver (CUDA ", v, ") has no conditional nodes (12.4)");
    KILN_RETURN_IF_ERROR(LinkSetConditionModule(params, cubin, module));
    KILN_RETURN_IF_ERROR(CuStatus(api, api.cuModuleGetFunction(function, *module, kernel), "cuModuleGetFunction"));
    return v;
  }();
  if (!version.ok()) {
    if (*module) api.cuModuleUnload(*module);
    *module = nullptr;
    *function = nullptr;
  }
  return version;
}

// The graph the stream is capturing into (a conditional node's body graph when nested).
StatusOr<CUgraph> CapturingGraph(const GraphApi& g, const DriverApi& api, CUstream s, std::string_view who) {
  CUstreamCaptureStatus status;
  cuuint64_t id = 0;
  CUgraph graph = nullptr;
  const CUgraphNode* deps = nullptr;
  const CUgraphEdgeData* edges = nullptr;
  size_t ndeps = 0;
  KILN_RETURN_IF_ERROR(CuStatus(api, g.cuStreamGetCaptureInfo(s, &status, &id, &graph, &deps, &edges, &ndeps),
                                "cuStreamGetCaptureInfo"));
  if (status != CU_STREAM_CAPTURE_STATUS_ACTIVE || !graph) return Internal(who, ": the stream is not capturing");
  return graph;
}

// A handle for a conditional node of the graph the stream is capturing into.
StatusOr<CUgraphConditionalHandle> CreateConditionalHandle(const GraphApi& g, const DriverApi& api, CUstream s,
                                                           CUcontext ctx, std::string_view who) {
  KILN_ASSIGN_OR_RETURN(CUgraph graph, CapturingGraph(g, api, s, who));
  CUgraphConditionalHandle handle = 0;
  KILN_RETURN_IF_ERROR(
      CuStatus(api, g.cuGraphConditionalHandleCreate(&handle, graph, ctx, 0, 0), "cuGraphConditionalHandleCreate"));
  return handle;
}

// Adds a conditional node of `type` with `size` body graphs after the capture's current
// dependencies, captures body(k) into body graph k on the same stream, and resumes the outer
// capture after the node (also when a body failed, so that the caller's EndCapture finds the
// stream capturing). Nests: a body may do the same. When the driver refuses the node, returns
// its error with the capture untouched and `*refused` (if given) set.
Status CaptureConditionalNode(const GraphApi& g, const DriverApi& api, CUstream s, CUcontext ctx,
                              CUgraphConditionalHandle handle, CUgraphConditionalNodeType type, unsigned size,
                              const std::function<Status(unsigned)>& body, std::string_view what,
                              bool* refused = nullptr) {
  CUstreamCaptureStatus status;
  cuuint64_t id = 0;
  CUgraph graph = nullptr;
  const CUgraphNode* deps = nullptr;
  const CUgraphEdgeData* edges = nullptr;
  size_t ndeps = 0;
  KILN_RETURN_IF_ERROR(CuStatus(api, g.cuStreamGetCaptureInfo(s, &status, &id, &graph, &deps, &edges, &ndeps),
                                "cuStreamGetCaptureInfo"));
  if (status != CU_STREAM_CAPTURE_STATUS_ACTIVE || !graph) return Internal(what, ": the stream is not capturing");
  CUgraphNodeParams np;
  std::memset(&np, 0, sizeof(np));
  np.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
  np.conditional.handle = handle;
  np.conditional.type = type;
  np.conditional.size = size;
  np.conditional.ctx = ctx;
  CUgraphNode node = nullptr;
  Status add = CuStatus(api, g.cuGraphAddNode(&node, graph, deps, edges, ndeps, &np), StrCat("cuGraphAddNode(", what, ")"));
  if (!add.ok()) {
    if (refused) *refused = true;
    return add;
  }
  std::vector<CUgraph> bodies(np.conditional.phGraph_out, np.conditional.phGraph_out + size);
  // The stream's capture moves into each body graph in turn and back after the last.
  CUgraph ended = nullptr;
  KILN_RETURN_IF_ERROR(CuStatus(api, g.cuStreamEndCapture(s, &ended), "cuStreamEndCapture"));
  Status in_body = OkStatus();
  for (unsigned k = 0; k < size && in_body.ok(); ++k) {
    in_body = CuStatus(api,
                       g.cuStreamBeginCaptureToGraph(s, bodies[k], nullptr, nullptr, 0, CU_STREAM_CAPTURE_MODE_RELAXED),
                       "cuStreamBeginCaptureToGraph(body)");
    if (!in_body.ok()) break;
    in_body = body(k);
    CUgraph body_ended = nullptr;
    Status end_body = CuStatus(api, g.cuStreamEndCapture(s, &body_ended), "cuStreamEndCapture(body)");
    if (in_body.ok()) in_body = end_body;
    // A branch with nothing to do: drivers before CUDA 12.8 hang on an empty body graph.
    size_t nodes = 0;
    if (in_body.ok()) in_body = CuStatus(api, g.cuGraphGetNodes(bodies[k], nullptr, &nodes), "cuGraphGetNodes");
    CUgraphNode empty = nullptr;
    if (in_body.ok() && nodes == 0)
      in_body = CuStatus(api, g.cuGraphAddEmptyNode(&empty, bodies[k], nullptr, 0), "cuGraphAddEmptyNode");
  }
  Status resume = CuStatus(api,
                           g.cuStreamBeginCaptureToGraph(s, ended, &node, nullptr, 1, CU_STREAM_CAPTURE_MODE_RELAXED),
                           "cuStreamBeginCaptureToGraph(resume)");
  KILN_RETURN_IF_ERROR(in_body);
  return resume;
}

Status LaunchOneThread(const DriverApi& api, CUfunction f, const ThunkExecuteParams& params, void** args,
                       std::string_view what) {
  CUstream s = static_cast<CudaStream*>(params.stream)->handle();
  return CuStatus(api, api.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, args, nullptr), StrCat("cuLaunchKernel(", what, ")"));
}

}  // namespace

int64_t DeviceBranchRule(PrimitiveType index_type, const uint8_t* index, int64_t num_branches) {
  const bool is_pred = index_type == PrimitiveType::kPred;
  int32_t i = 0;
  if (!is_pred) std::memcpy(&i, index, sizeof i);
  return kiln_branch_of(is_pred ? 1 : 0, is_pred ? *index : 0, i, static_cast<int>(num_branches));
}

StatusOr<std::string> CompileSetConditionKernel(NvrtcCompiler& nvrtc, const std::string& arch) {
  NvrtcRequest r;
  r.program_name = "kiln_set_condition.cu";
  r.arch = arch;
  r.options = {"-rdc=true"};
  r.source = StrCat(R"(
extern "C" __device__ void cudaGraphSetConditional(unsigned long long handle, unsigned int value);
extern "C" __global__ void kiln_set_while_condition(unsigned long long handle, const unsigned char* pred) {
  cudaGraphSetConditional(handle, *pred != 0 ? 1u : 0u);
}
__device__ )",
                    kBranchRuleSource, R"(
// k < 0: the handle of a SWITCH node, set to the branch; else an IF node's, set to branch == k.
extern "C" __global__ void kiln_set_branch(unsigned long long handle, const void* index, int is_pred, int n, int k) {
  const unsigned char pred = is_pred ? *static_cast<const unsigned char*>(index) : 0;
  const int i = is_pred ? 0 : *static_cast<const int*>(index);
  const int b = kiln_branch_of(is_pred, pred, i, n);
  cudaGraphSetConditional(handle, k < 0 ? static_cast<unsigned int>(b) : (b == k ? 1u : 0u));
}
)");
  KILN_ASSIGN_OR_RETURN(NvrtcProgram prog, nvrtc.Compile(r));
  if (prog.cubin.empty()) return Internal("nvrtc: no cubin for the set-condition kernels");
  return prog.cubin;
}

// ---- WhileThunk ----

WhileThunk::WhileThunk(std::string name, ThunkSequence condition, ThunkSequence body, BufferSlice predicate,
                       WhileCopyPlan plan, std::optional<TripCount> trip_count)
    : GpuThunk(Kind::kWhile, std::move(name)),
      condition_(std::move(condition)),
      body_(std::move(body)),
      predicate_(predicate),
      plan_(std::move(plan)),
      trip_count_(trip_count) {}

bool WhileThunk::SyncsHost() const {
  if (!trip_count_) return !device_loop() || body_.SyncsHost() || condition_.SyncsHost();
  return body_.SyncsHost() || (trip_count_->run_condition && condition_.SyncsHost());
}

int64_t WhileThunk::EnqueuedOps() const {
  int64_t per_trip = body_.EnqueuedOps() + static_cast<int64_t>(plan_.leaves.size());
  if (!trip_count_) return SaturatingAdd(condition_.EnqueuedOps(), per_trip);  // one trip's worth
  if (trip_count_->run_condition) per_trip = SaturatingAdd(per_trip, condition_.EnqueuedOps());
  return SaturatingAdd(SaturatingMul(per_trip, trip_count_->trips), static_cast<int64_t>(plan_.leaves.size()));
}

std::string WhileThunk::ToString() const {
  std::string s = StrCat("while %", name());
  if (trip_count_)
    s += StrCat(" (", trip_count_->trips, " trips, known", trip_count_->run_condition ? "; condition run for its effects" : "",
                ")");
  else
    s += device_loop() ? " (trip count on the device: a conditional node in graphs)"
         : device_loop_cubin_.empty() ? " (trip count on the device: predicate read on the host)"
                                      : " (trip count on the device)";
  int64_t copies = 0, bytes = 0;
  for (size_t j = 0; j < plan_.leaves.size(); ++j)
    if (plan_.copy_body_result[j] && plan_.body_result[j].valid()) {
      ++copies;
      bytes += plan_.state[j].size;
    }
  s += StrCat(": per iteration ", copies, copies == 1 ? " copy (" : " copies (", HumanBytes(bytes), ")");
  if (wrap_pair_) s += "; each trip's last kernel beside the next trip's first library call";
  return s;
}

std::vector<const GpuThunk*> WhileThunk::nested() const {
  std::vector<const GpuThunk*> out = Pointers(condition_);
  std::vector<const GpuThunk*> b = Pointers(body_);
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

WhileThunk::~WhileThunk() {
  if (api_ && set_module_) api_->cuModuleUnload(set_module_);
}

Status WhileThunk::Initialize(const ThunkInitParams& params) {
  KILN_RETURN_IF_ERROR(condition_.Initialize(params));
  KILN_RETURN_IF_ERROR(body_.Initialize(params));
  if (host_.get().is_null()) {
    KILN_ASSIGN_OR_RETURN(host_, PinnedBytes(params, 64));
  }
  if (trip_count_ || set_condition_ || device_loop_cubin_.empty() || !params.graph_conditionals) return OkStatus();
  // Note [Device-side loops]: link the set-condition kernel with the device runtime. Any
  // failure leaves the loop on the host.
  StatusOr<int> linked =
      LoadSetKernel(params, device_loop_cubin_, "kiln_set_while_condition", &set_module_, &set_condition_);
  if (!linked.ok()) {
    static std::once_flag once;
    std::call_once(once, [&] {
      KILN_LOG(Info) << "cuda: loops of device-side trip count read their predicate on the host: "
                     << linked.status().message();
    });
    return OkStatus();
  }
  api_ = &params.device->api();
  context_ = params.device->context();
  return OkStatus();
}

Status WhileThunk::LaunchSetCondition(const ThunkExecuteParams& params, uint64_t handle) const {
  runtime::DeviceMemory pred = params.buffers->Get(predicate_);
  if (pred.is_null()) return Internal("while %", name(), " has no predicate buffer");
  unsigned long long h = handle;
  CUdeviceptr p = reinterpret_cast<CUdeviceptr>(pred.ptr);
  void* args[] = {&h, &p};
  return LaunchOneThread(*api_, set_condition_, params, args, "kiln_set_while_condition");
}

Status WhileThunk::CaptureDeviceLoop(const ThunkExecuteParams& params) const {
  KILN_ASSIGN_OR_RETURN(const GraphApi* g, LoadConditionalGraphApi(*api_));
  CUstream s = static_cast<CudaStream*>(params.stream)->handle();
  const std::string who = StrCat("while %", name());
  KILN_ASSIGN_OR_RETURN(CUgraphConditionalHandle handle, CreateConditionalHandle(*g, *api_, s, context_, who));
  // Before the loop (after Execute's init copies): the first condition, the handle set from it.
  KILN_RETURN_IF_ERROR(condition_.Execute(params));
  KILN_RETURN_IF_ERROR(LaunchSetCondition(params, handle));
  // The WHILE node after them; its body ends with the next condition and sets the handle again.
  return CaptureConditionalNode(
      *g, *api_, s, context_, handle, CU_GRAPH_COND_TYPE_WHILE, 1,
      [&](unsigned) -> Status {
        KILN_RETURN_IF_ERROR(body_.Execute(params));
        KILN_RETURN_IF_ERROR(CopyBodyResults(params));
        KILN_RETURN_IF_ERROR(condition_.Execute(params));
        return LaunchSetCondition(params, handle);
      },
      who);
}

Status WhileThunk::CopyBodyResults(const ThunkExecuteParams& params) const {
  return ForEachLoopStateCopy(
      plan_, [&](const BufferSlice& src, const BufferSlice& dst) { return CopySlice(params, src, dst); });
}

int64_t WhileThunk::PlanNestedSideStreams() {
  wrap_pair_ = false;
  if (!trip_count_) return 0;  // other loops run on one stream
  // Pairs inside the body are not planned: beside a step's GEMM, a full-size kernel competes
  // for the SMs (train_loop_f32 ran 3% slower with them); only tiny kernels pair, across trips.
  int64_t pairs = 0;
  const auto& t = body_.thunks();
  bool copies = false;
  for (size_t j = 0; j < plan_.leaves.size(); ++j)
    copies |= plan_.copy_body_result[j] && plan_.body_result[j].valid();
  const size_t n = t.size();
  constexpr int64_t kTinyKernelBytes = 4096;
  if (!copies && !trip_count_->run_condition && trip_count_->trips > 1 && n >= 2 && SideStreamKernel(*t[n - 1]) &&
      t[n - 1]->bytes() <= kTinyKernelBytes && SideStreamLibraryCall(*t[0]) && IndependentThunks(*t[n - 1], *t[0])) {
    wrap_pair_ = true;
    ++pairs;
  }
  return pairs;
}

Status WhileThunk::Execute(const ThunkExecuteParams& params) const {
  const size_t n = plan_.leaves.size();
  for (size_t j = 0; j < n; ++j)
    if (plan_.copy_init[j] && plan_.init[j].valid()) KILN_RETURN_IF_ERROR(CopySlice(params, plan_.init[j], plan_.state[j]));
  if (trip_count_ && wrap_pair_ && params.side_stream && params.fork && params.join) {
    // Note [Pairs across iterations]: trip k's last kernel beside trip k+1's first library call.
    const auto& t = body_.thunks();
    const size_t m = t.size();
    for (int64_t k = 0; k < trip_count_->trips; ++k) {
      const bool last = k + 1 == trip_count_->trips;
      KILN_RETURN_IF_ERROR(body_.ExecuteRange(params, k == 0 ? 0 : 1, last ? m : m - 1));
      if (!last) KILN_RETURN_IF_ERROR(RunSideStreamPair(*t[0], *t[m - 1], params));
    }
    return OkStatus();
  }
  if (trip_count_) {
    // Known trip count: nothing is read back, the host never waits (a graph capture records
    // every iteration).
    for (int64_t k = 0; k < trip_count_->trips; ++k) {
      if (trip_count_->run_condition) KILN_RETURN_IF_ERROR(condition_.Execute(params));
      KILN_RETURN_IF_ERROR(body_.Execute(params));
      KILN_RETURN_IF_ERROR(CopyBodyResults(params));
    }
    if (trip_count_->run_condition) KILN_RETURN_IF_ERROR(condition_.Execute(params));
    return OkStatus();
  }
  if (params.capturing && device_loop()) return CaptureDeviceLoop(params);
  runtime::DeviceMemory pred = params.buffers->Get(predicate_);
  if (pred.is_null()) return Internal("while %", name(), " has no predicate buffer");
  auto* host = static_cast<volatile uint8_t*>(host_.get().ptr);
  for (;;) {
    KILN_RETURN_IF_ERROR(condition_.Execute(params));
    KILN_RETURN_IF_ERROR(params.stream->MemcpyDeviceToHost(host_.get().ptr, pred, 1));
    KILN_RETURN_IF_ERROR(params.stream->Synchronize());
    if (*host == 0) break;
    KILN_RETURN_IF_ERROR(body_.Execute(params));
    KILN_RETURN_IF_ERROR(CopyBodyResults(params));
  }
  return OkStatus();
}

// ---- ConditionalThunk ----

ConditionalThunk::ConditionalThunk(std::string name, BufferSlice index, PrimitiveType index_type,
                                   std::vector<ThunkSequence> branches, std::vector<std::vector<Copy>> result_copies)
    : GpuThunk(Kind::kConditional, std::move(name)),
      index_(index),
      index_type_(index_type),
      branches_(std::move(branches)),
      result_copies_(std::move(result_copies)) {}

ConditionalThunk::~ConditionalThunk() {
  if (api_ && set_module_) api_->cuModuleUnload(set_module_);
}

std::vector<const GpuThunk*> ConditionalThunk::nested() const {
  std::vector<const GpuThunk*> out;
  for (const ThunkSequence& b : branches_) {
    std::vector<const GpuThunk*> p = Pointers(b);
    out.insert(out.end(), p.begin(), p.end());
  }
  return out;
}

bool ConditionalThunk::SyncsHost() const {
  if (!device_conditional()) return true;
  for (const ThunkSequence& b : branches_)
    if (b.SyncsHost()) return true;
  return false;
}

int64_t ConditionalThunk::EnqueuedOps() const {
  // A graph holds every branch, and the set-branch kernels before them.
  int64_t ops = static_cast<int64_t>(branches_.size());
  for (size_t k = 0; k < branches_.size(); ++k)
    ops = SaturatingAdd(ops, SaturatingAdd(branches_[k].EnqueuedOps(), static_cast<int64_t>(result_copies_[k].size())));
  return ops;
}

std::string ConditionalThunk::ToString() const {
  std::string s = StrCat("conditional %", name(), " (", branches_.size(), " branches, ",
                         index_type_ == PrimitiveType::kPred ? "pred" : "s32 index");
  if (device_conditional())
    s += use_switch_ ? ": a SWITCH node in graphs)" : ": a chain of IF nodes in graphs)";
  else
    s += cubin_.empty() ? ": index read on the host)" : ")";
  return s;
}

Status ConditionalThunk::Initialize(const ThunkInitParams& params) {
  for (ThunkSequence& b : branches_) KILN_RETURN_IF_ERROR(b.Initialize(params));
  if (host_.get().is_null()) {
    KILN_ASSIGN_OR_RETURN(host_, PinnedBytes(params, 64));
  }
  if (set_branch_ || cubin_.empty() || !params.graph_conditionals || branches_.empty()) return OkStatus();
  // Note [Device-side conditionals]: as a device loop's, any failure leaves the index read on
  // the host.
  StatusOr<int> version = LoadSetKernel(params, cubin_, "kiln_set_branch", &set_module_, &set_branch_);
  if (!version.ok()) {
    static std::once_flag once;
    std::call_once(once, [&] {
      KILN_LOG(Info) << "cuda: conditionals read their branch index on the host: " << version.status().message();
    });
    return OkStatus();
  }
  api_ = &params.device->api();
  context_ = params.device->context();
  use_switch_ = *version >= 12080 && params.graph_switch_nodes;
  return OkStatus();
}

Status ConditionalThunk::LaunchSetBranch(const ThunkExecuteParams& params, uint64_t handle, int k) const {
  runtime::DeviceMemory index = params.buffers->Get(index_);
  if (index.is_null()) return Internal("conditional %", name(), " has no index buffer");
  unsigned long long h = handle;
  CUdeviceptr p = reinterpret_cast<CUdeviceptr>(index.ptr);
  int is_pred = index_type_ == PrimitiveType::kPred ? 1 : 0;
  int n = static_cast<int>(branches_.size());
  void* args[] = {&h, &p, &is_pred, &n, &k};
  return LaunchOneThread(*api_, set_branch_, params, args, "kiln_set_branch");
}

Status ConditionalThunk::RunBranch(const ThunkExecuteParams& params, int64_t branch) const {
  KILN_RETURN_IF_ERROR(branches_[branch].Execute(params));
  for (const Copy& c : result_copies_[branch]) KILN_RETURN_IF_ERROR(CopySlice(params, c.src, c.dst));
  return OkStatus();
}

Status ConditionalThunk::CaptureDeviceConditional(const ThunkExecuteParams& params) const {
  if (!use_switch_) return CaptureIfChain(params);
  KILN_ASSIGN_OR_RETURN(const GraphApi* g, LoadConditionalGraphApi(*api_));
  CUstream s = static_cast<CudaStream*>(params.stream)->handle();
  const std::string who = StrCat("conditional %", name());
  KILN_ASSIGN_OR_RETURN(CUgraphConditionalHandle handle, CreateConditionalHandle(*g, *api_, s, context_, who));
  KILN_RETURN_IF_ERROR(LaunchSetBranch(params, handle, -1));
#if CUDA_VERSION >= 12080
  constexpr CUgraphConditionalNodeType kSwitch = CU_GRAPH_COND_TYPE_SWITCH;
#else
  constexpr auto kSwitch = static_cast<CUgraphConditionalNodeType>(2);  // CUDA 12.8's value
#endif
  bool refused = false;
  Status st = CaptureConditionalNode(
      *g, *api_, s, context_, handle, kSwitch, static_cast<unsigned>(branches_.size()),
      [&](unsigned k) { return RunBranch(params, k); }, who, &refused);
  if (st.ok() || !refused) return st;
  // The driver refused the SWITCH node (the capture is untouched; the kernel just launched
  // sets a handle nobody reads): IF nodes instead.
  static std::once_flag once;
  std::call_once(once, [&] {
    KILN_LOG(Info) << "cuda: no SWITCH conditional nodes (" << st.message() << "): conditionals become IF nodes";
  });
  return CaptureIfChain(params);
}

Status ConditionalThunk::CaptureIfChain(const ThunkExecuteParams& params) const {
  KILN_ASSIGN_OR_RETURN(const GraphApi* g, LoadConditionalGraphApi(*api_));
  CUstream s = static_cast<CudaStream*>(params.stream)->handle();
  const std::string who = StrCat("conditional %", name());
  // Every handle is set before any branch runs (a branch may overwrite the index's buffer).
  std::vector<CUgraphConditionalHandle> handles;
  for (size_t k = 0; k < branches_.size(); ++k) {
    KILN_ASSIGN_OR_RETURN(CUgraphConditionalHandle h, CreateConditionalHandle(*g, *api_, s, context_, who));
    handles.push_back(h);
    KILN_RETURN_IF_ERROR(LaunchSetBranch(params, h, static_cast<int>(k)));
  }
  for (size_t k = 0; k < branches_.size(); ++k)
    KILN_RETURN_IF_ERROR(CaptureConditionalNode(
        *g, *api_, s, context_, handles[k], CU_GRAPH_COND_TYPE_IF, 1,
        [&](unsigned) { return RunBranch(params, static_cast<int64_t>(k)); }, StrCat(who, " branch ", k)));
  return OkStatus();
}

Status ConditionalThunk::Execute(const ThunkExecuteParams& params) const {
  if (params.capturing && device_conditional()) return CaptureDeviceConditional(params);
  runtime::DeviceMemory index = params.buffers->Get(index_);
  if (index.is_null()) return Internal("conditional %", name(), " has no index buffer");
  const uint64_t bytes = index_type_ == PrimitiveType::kPred ? 1 : 4;
  KILN_RETURN_IF_ERROR(params.stream->MemcpyDeviceToHost(host_.get().ptr, index, bytes));
  KILN_RETURN_IF_ERROR(params.stream->Synchronize());
  const int64_t n = static_cast<int64_t>(branches_.size());
  const int64_t branch = SelectConditionalBranch(index_type_, static_cast<const uint8_t*>(host_.get().ptr), n);
  if (branch < 0 || branch >= n) return Internal("conditional %", name(), " has no branch ", branch);
  return RunBranch(params, branch);
}

// ---- HostThunk ----

namespace {

// The sub-literal of `l` at tuple index `index`.
Literal* LeafOf(Literal& l, const ShapeIndex& index) {
  Literal* x = &l;
  for (int64_t i : index) x = &x->mutable_tuple_element(i);
  return x;
}

}  // namespace

HostThunk::HostThunk(std::string name, std::unique_ptr<HloModule> module, std::vector<Shape> operand_shapes,
                     std::vector<std::vector<BufferSlice>> operands, std::vector<BufferSlice> outputs, std::string what)
    : GpuThunk(Kind::kHost, std::move(name)),
      module_(std::move(module)),
      operand_shapes_(std::move(operand_shapes)),
      operands_(std::move(operands)),
      outputs_(std::move(outputs)),
      what_(std::move(what)) {}

std::string HostThunk::ToString() const { return StrCat("host %", name(), " (", what_, " on the evaluator)"); }

StatusOr<std::unique_ptr<HostThunk>> HostThunk::Create(const HloInstruction& instr,
                                                       std::vector<std::vector<BufferSlice>> operands,
                                                       std::vector<BufferSlice> outputs) {
  auto module = std::make_unique<HloModule>(StrCat("host_", instr.name()));
  auto entry = std::make_unique<HloComputation>("entry");
  std::vector<HloInstruction*> params;
  std::vector<Shape> shapes;
  for (int64_t i = 0; i < instr.operand_count(); ++i) {
    Shape s = instr.operand(i)->shape();
    auto p = std::make_unique<HloInstruction>(HloOpcode::kParameter, s, StrCat("p", i));
    p->set_parameter_number(i);
    params.push_back(entry->AddInstruction(std::move(p)));
    shapes.push_back(s);
  }
  HloInstruction* clone = entry->AddInstruction(CloneInstruction(instr, instr.shape(), params, instr.name()));
  entry->set_root_instruction(clone);
  HloComputation* e = module->AddComputation(std::move(entry), /*is_entry=*/true);
  if (IsGemmCall(instr) || IsConvCall(instr)) {
    KILN_ASSIGN_OR_RETURN(HloInstruction * v, ExpandLibraryCall(clone));
    e->set_root_instruction(v);
  }
  std::string what(HloOpcodeString(instr.opcode()));
  if (instr.opcode() == HloOpcode::kCustomCall) what = StrCat("custom-call ", instr.attrs().custom_call_target);
  return std::unique_ptr<HostThunk>(new HostThunk(instr.name(), std::move(module), std::move(shapes),
                                                  std::move(operands), std::move(outputs), std::move(what)));
}

Status HostThunk::Execute(const ThunkExecuteParams& params) const {
  runtime::Stream& stream = *params.stream;
  std::vector<Literal> args;
  for (size_t i = 0; i < operand_shapes_.size(); ++i) {
    Literal arg(operand_shapes_[i]);
    std::vector<ShapeIndex> leaves = ArrayLeafIndices(operand_shapes_[i]);
    if (leaves.size() != operands_[i].size()) return Internal("host %", name(), ": operand ", i, " leaf count");
    for (size_t j = 0; j < leaves.size(); ++j) {
      Literal* leaf = LeafOf(arg, leaves[j]);
      if (leaf->size_bytes() == 0) continue;
      KILN_RETURN_IF_ERROR(
          stream.MemcpyDeviceToHost(leaf->untyped_data(), params.buffers->Get(operands_[i][j]), leaf->size_bytes()));
    }
    args.push_back(std::move(arg));
  }
  KILN_RETURN_IF_ERROR(stream.Synchronize());
  EvaluatorOptions eo;
  eo.max_loop_iterations = -1;
  if (params.rng_state) eo.rng_seed = *params.rng_state;
  Evaluator evaluator(eo);
  KILN_ASSIGN_OR_RETURN(Literal result, evaluator.Run(*module_, args));
  if (params.rng_state) *params.rng_state = evaluator.rng_state();
  std::vector<ShapeIndex> leaves = ArrayLeafIndices(result.shape());
  if (leaves.size() != outputs_.size()) return Internal("host %", name(), ": result leaf count");
  for (size_t j = 0; j < leaves.size(); ++j) {
    const Literal* leaf = LeafOf(result, leaves[j]);
    if (leaf->size_bytes() == 0) continue;
    runtime::DeviceMemory dst = params.buffers->Get(outputs_[j]);
    if (dst.size < leaf->size_bytes()) return Internal("host %", name(), ": output ", j, " buffer too small");
    KILN_RETURN_IF_ERROR(stream.MemcpyHostToDevice(dst, leaf->untyped_data(), leaf->size_bytes()));
  }
  return stream.Synchronize();
}

}  // namespace kiln::cuda
