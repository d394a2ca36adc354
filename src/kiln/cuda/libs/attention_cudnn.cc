#include "kiln/cuda/libs/attention_cudnn.h"

#include "kiln/base/strings.h"
#include "kiln/cuda/vendor_apis.h"  // KILN_HAVE_CUDNN_HEADERS

#if defined(KILN_HAVE_CUDNN_FRONTEND) && defined(KILN_HAVE_CUDNN_HEADERS)
#define KILN_CUDNN_SDPA 1
#else
#define KILN_CUDNN_SDPA 0
#endif

#if KILN_CUDNN_SDPA
#include <dlfcn.h>

#include <mutex>
#include <unordered_map>

#define NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING 1
#include <cudnn_frontend.h>

#include "kiln/cuda/libs/handles.h"
#include "kiln/cuda/libs/kernel_loader.h"

// The frontend's handle of libcudnn for dlsym (Note in attention_cudnn.h): the library kiln's
// loader opened, set before the first graph is built.
namespace cudnn_frontend {
void* cudnn_dlhandle = nullptr;
}  // namespace cudnn_frontend
#endif

namespace kiln::cuda::libs {

#if KILN_CUDNN_SDPA
namespace fe = cudnn_frontend;

struct CudnnAttentionPlan::Impl {
  std::shared_ptr<fe::graph::Graph> graph;
  LibraryHandles* handles = nullptr;
};

namespace {
struct Tensor4 {
  int64_t dims[4];
  int64_t strides[4];
};
}  // namespace

// A gradient cuDNN writes packed into the workspace and a copy moves to its view (one whose
// head dim is not contiguous: dV as [b, h, d, s] when autodiff computes it as dOᵀ·p).
struct ScatterParams {
  const void* src;
  void* dst;
  long long d1, d2, d3;      // packed [d0, d1, d2, d3], d3 the head dim
  long long s0, s1, s2, s3;  // the view's strides (elements)
  long long total;
  int rows_inner;            // iterate rows fastest (when they are the view's contiguous dim)
};

const char* kScatterSource = R"(
struct ScatterParams {
  const void* src; void* dst;
  long long d1, d2, d3, s0, s1, s2, s3, total;
  int rows_inner;
};
extern "C" __global__ void kiln_attention_scatter(ScatterParams p) {
  const unsigned short* src = (const unsigned short*)p.src;
  unsigned short* dst = (unsigned short*)p.dst;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < p.total;
       i += (long long)gridDim.x * blockDim.x) {
    long long e, r, rest;
    if (p.rows_inner) { r = i % p.d2; e = (i / p.d2) % p.d3; rest = i / (p.d2 * p.d3); }
    else { e = i % p.d3; r = (i / p.d3) % p.d2; rest = i / (p.d2 * p.d3); }
    const long long h = rest % p.d1, b = rest / p.d1;
    dst[b * p.s0 + h * p.s1 + r * p.s2 + e * p.s3] = src[((b * p.d1 + h) * p.d2 + r) * p.d3 + e];
  }
}
)";

struct CudnnAttentionBackwardPlan::Impl {
  std::shared_ptr<fe::graph::Graph> forward, backward;
  LibraryHandles* handles = nullptr;
  // Per gradient (dQ, dK, dV): its view, whether it goes through the workspace (at `offset`).
  struct Grad {
    Tensor4 view;
    bool packed = false;
    uint64_t offset = 0;
  };
  Grad grads[3];
  runtime::Kernel* scatter = nullptr;
};

namespace {

constexpr int64_t kQ = 1, kK = 2, kV = 3, kO = 4, kDO = 5, kStats = 6, kDQ = 7, kDK = 8, kDV = 9;

Status FeStatus(fe::error_t e, std::string_view what) {
  if (e.is_good()) return OkStatus();
  return Unimplemented("cudnn sdpa: ", what, ": ", e.get_message());
}

// The frontend's handle on the same libcudnn the loader opened.
Status BindFrontend(LibraryHandles& handles) {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  if (fe::cudnn_dlhandle != nullptr) return OkStatus();
  KILN_ASSIGN_OR_RETURN(const CudnnApi* api, handles.cudnn_api());
  void* h = dlopen(api->library.path().c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (h == nullptr) h = dlopen(api->library.path().c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) return Unavailable("cudnn sdpa: cannot reopen ", api->library.path());
  fe::cudnn_dlhandle = h;
  return OkStatus();
}


// The desc's batch dims as cuDNN's two ([b, h]): size-1 dims dropped, then adjacent dims merged
// where every operand's strides allow, padded in front with size 1. Each entry lists the desc
// dims of one group (outer to inner).
StatusOr<std::vector<std::vector<int>>> BatchGroups(const AttentionDesc& d) {
  std::vector<std::vector<int>> groups;
  for (int i = 0; i < kAttentionMaxBatchDims; ++i)
    if (d.batch[i] != 1) groups.push_back({i});
  std::vector<const AttentionDesc::Operand*> ops = {&d.q, &d.k, &d.v};
  if (d.backward) ops.insert(ops.end(), {&d.d_out, &d.dq, &d.dk, &d.dv});
  else ops.push_back(&d.out);
  if (d.stats) ops.push_back(&d.lse);
  if (d.stats && d.backward) ops.push_back(&d.o);
  auto size = [&](const std::vector<int>& g) {
    int64_t n = 1;
    for (int i : g) n *= d.batch[i];
    return n;
  };
  while (groups.size() > 2) {
    bool merged = false;
    for (size_t i = 0; i + 1 < groups.size() && !merged; ++i) {
      bool ok = true;
      for (const AttentionDesc::Operand* o : ops)
        ok = ok && o->batch[groups[i].back()] == size(groups[i + 1]) * o->batch[groups[i + 1].back()];
      if (!ok) continue;
      groups[i].insert(groups[i].end(), groups[i + 1].begin(), groups[i + 1].end());
      groups.erase(groups.begin() + static_cast<std::ptrdiff_t>(i) + 1);
      merged = true;
    }
    if (!merged) return Unimplemented("cudnn sdpa: three batch dimensions that do not merge into two");
  }
  while (groups.size() < 2) groups.insert(groups.begin(), std::vector<int>{});
  return groups;
}

// [b, h, s, d] dims and strides of one operand. A head dim k/v do not have (stride 0: grouped-
// or multi-query attention) becomes cuDNN's native form, one k/v head for all query heads.
StatusOr<Tensor4> TensorOf(const AttentionDesc& d, const std::vector<std::vector<int>>& groups,
                           const AttentionDesc::Operand& o, int64_t rows) {
  Tensor4 t;
  for (int g = 0; g < 2; ++g) {
    t.dims[g] = 1;
    for (int i : groups[g]) t.dims[g] *= d.batch[i];
    t.strides[g] = groups[g].empty() ? 0 : o.batch[groups[g].back()];
  }
  if (t.dims[0] > 1 && t.strides[0] == 0) return Unimplemented("cudnn sdpa: an operand broadcast along the batch");
  if (t.dims[1] > 1 && t.strides[1] == 0) t.dims[1] = 1;  // q keeps all heads
  t.dims[2] = rows;
  t.strides[2] = o.row;
  t.dims[3] = d.head_dim;
  t.strides[3] = o.element;
  // cuDNN wants every stride set, also of size-1 dims: the extent of the dims inside.
  if (rows == 1 && t.strides[2] == 0) t.strides[2] = d.head_dim;
  if (t.dims[1] == 1) t.strides[1] = std::max<int64_t>(t.strides[2] * rows, 1);
  if (t.dims[0] == 1) t.strides[0] = t.strides[1] * t.dims[1];
  return t;
}

// The [b, h, s, 1] statistics at view `o` (f32; the head dim's stride unused).
StatusOr<Tensor4> StatsTensorOf(const AttentionDesc& d, const std::vector<std::vector<int>>& groups,
                                const AttentionDesc::Operand& o) {
  AttentionDesc one = d;
  one.head_dim = 1;
  AttentionDesc::Operand v = o;
  v.element = 1;
  return TensorOf(one, groups, v, d.q_len);
}

// Where the statistics at view `o` start in `m` (f32 elements).
void* StatsAt(const runtime::DeviceMemory& m, const AttentionDesc::Operand& o) {
  return static_cast<char*>(m.ptr) + o.offset * static_cast<int64_t>(sizeof(float));
}

// Plans of a built graph: heuristics modes A and fallback, checked.
Status FinishGraph(fe::graph::Graph& graph, cudnnHandle_t handle) {
  KILN_RETURN_IF_ERROR(FeStatus(graph.validate(), "validate"));
  KILN_RETURN_IF_ERROR(FeStatus(graph.build_operation_graph(handle), "build_operation_graph"));
  KILN_RETURN_IF_ERROR(
      FeStatus(graph.create_execution_plans({fe::HeurMode_t::A, fe::HeurMode_t::FALLBACK}), "create_execution_plans"));
  return FeStatus(graph.check_support(handle), "check_support");
}

// Packed [b, h, s, d] (and [b, h, s, 1] statistics) of the backward's recomputed forward.
Tensor4 Packed(const Tensor4& like, int64_t d) {
  Tensor4 t = like;
  t.dims[3] = d;
  t.strides[3] = 1;
  t.strides[2] = d;
  t.strides[1] = d * t.dims[2];
  t.strides[0] = t.strides[1] * t.dims[1];
  return t;
}

// A graph with the attention's io type and f32 intermediates and compute.
std::shared_ptr<fe::graph::Graph> NewGraph(const AttentionDesc& d) {
  auto graph = std::make_shared<fe::graph::Graph>();
  const fe::DataType_t io = d.type == PrimitiveType::kBF16 ? fe::DataType_t::BFLOAT16 : fe::DataType_t::HALF;
  graph->set_io_data_type(io).set_intermediate_data_type(fe::DataType_t::FLOAT).set_compute_data_type(fe::DataType_t::FLOAT);
  return graph;
}

std::shared_ptr<fe::graph::Tensor_attributes> Input(fe::graph::Graph& graph, const char* name, int64_t uid,
                                                    const Tensor4& t) {
  return graph.tensor(fe::graph::Tensor_attributes()
                          .set_name(name)
                          .set_uid(uid)
                          .set_dim({t.dims[0], t.dims[1], t.dims[2], t.dims[3]})
                          .set_stride({t.strides[0], t.strides[1], t.strides[2], t.strides[3]}));
}

fe::graph::Tensor_attributes& SetOutput(fe::graph::Tensor_attributes& tensor, int64_t uid, const Tensor4& t) {
  return tensor.set_output(true)
      .set_uid(uid)
      .set_dim({t.dims[0], t.dims[1], t.dims[2], t.dims[3]})
      .set_stride({t.strides[0], t.strides[1], t.strides[2], t.strides[3]});
}

// The causal mask of `d` on SDPA's forward or backward attributes.
template <typename Attributes>
void SetMask(Attributes& options, const AttentionDesc& d) {
  if (!d.causal) return;
  if (d.causal_offset == 0) options.set_causal_mask(true);
  else options.set_causal_mask_bottom_right(true);
}

// `stats_too`: the backward's own forward, O and the statistics packed into its workspace. A
// forward desc with `stats` writes O and the statistics at their views.
StatusOr<std::shared_ptr<fe::graph::Graph>> BuildGraph(const AttentionDesc& d, cudnnHandle_t handle,
                                                       bool stats_too = false) {
  if (d.has_bias || d.has_mask) return Unimplemented("cudnn sdpa: an additive bias or a data mask (the flash kernel runs those)");
  if (d.type != PrimitiveType::kBF16 && d.type != PrimitiveType::kF16)
    return Unimplemented("cudnn sdpa: ", PrimitiveTypeName(d.type), " (bf16 or f16)");
  if (d.causal && d.causal_offset != 0 && d.causal_offset != d.kv_len - d.q_len)
    return Unimplemented("cudnn sdpa: causal offset ", d.causal_offset, " (0 or kv_len - q_len)");
  std::shared_ptr<fe::graph::Graph> graph = NewGraph(d);
  KILN_ASSIGN_OR_RETURN(std::vector<std::vector<int>> groups, BatchGroups(d));
  KILN_ASSIGN_OR_RETURN(const Tensor4 tq, TensorOf(d, groups, d.q, d.q_len));
  KILN_ASSIGN_OR_RETURN(const Tensor4 tk, TensorOf(d, groups, d.k, d.kv_len));
  KILN_ASSIGN_OR_RETURN(const Tensor4 tv, TensorOf(d, groups, d.v, d.kv_len));
  KILN_ASSIGN_OR_RETURN(const Tensor4 to_view, TensorOf(d, groups, d.backward ? d.q : d.out, d.q_len));
  const Tensor4 to = stats_too ? Packed(to_view, d.head_dim) : to_view;
  if (tq.dims[1] == 1 && (tk.dims[1] > 1 || tv.dims[1] > 1)) return Unimplemented("cudnn sdpa: more k/v heads than q heads");
  auto q = Input(*graph, "Q", kQ, tq);
  auto k = Input(*graph, "K", kK, tk);
  auto v = Input(*graph, "V", kV, tv);
  fe::graph::SDPA_attributes options;
  const bool own_stats = !d.backward && d.stats;
  options.set_name("kiln_sdpa").set_generate_stats(stats_too || own_stats).set_attn_scale(static_cast<float>(d.scale));
  SetMask(options, d);
  auto [o, stats] = graph->sdpa(q, k, v, options);
  SetOutput(*o, kO, to);
  if (stats_too) SetOutput(*stats, kStats, Packed(to_view, 1)).set_data_type(fe::DataType_t::FLOAT);
  if (own_stats) {
    KILN_ASSIGN_OR_RETURN(const Tensor4 ts, StatsTensorOf(d, groups, d.lse));
    SetOutput(*stats, kStats, ts).set_data_type(fe::DataType_t::FLOAT);
  }
  KILN_RETURN_IF_ERROR(FinishGraph(*graph, handle));
  return graph;
}

// dQ, dK, dV from q, k, v, the recomputed O and statistics (packed) and dO; a gradient with
// `packed[i]` is written packed (its view's dims, contiguous strides).
StatusOr<std::shared_ptr<fe::graph::Graph>> BuildBackwardGraph(const AttentionDesc& d, cudnnHandle_t handle,
                                                               const bool packed[3]) {
  std::shared_ptr<fe::graph::Graph> graph = NewGraph(d);
  KILN_ASSIGN_OR_RETURN(std::vector<std::vector<int>> groups, BatchGroups(d));
  KILN_ASSIGN_OR_RETURN(const Tensor4 tq, TensorOf(d, groups, d.q, d.q_len));
  KILN_ASSIGN_OR_RETURN(const Tensor4 tk, TensorOf(d, groups, d.k, d.kv_len));
  KILN_ASSIGN_OR_RETURN(const Tensor4 tv, TensorOf(d, groups, d.v, d.kv_len));
  KILN_ASSIGN_OR_RETURN(const Tensor4 tdo, TensorOf(d, groups, d.d_out, d.q_len));
  KILN_ASSIGN_OR_RETURN(Tensor4 tdq, TensorOf(d, groups, d.dq, d.q_len));
  KILN_ASSIGN_OR_RETURN(Tensor4 tdk, TensorOf(d, groups, d.dk, d.kv_len));
  KILN_ASSIGN_OR_RETURN(Tensor4 tdv, TensorOf(d, groups, d.dv, d.kv_len));
  if (packed[0]) tdq = Packed(tdq, d.head_dim);
  if (packed[1]) tdk = Packed(tdk, d.head_dim);
  if (packed[2]) tdv = Packed(tdv, d.head_dim);
  for (const Tensor4* t : {&tq, &tk, &tv, &tdo})
    if (t->strides[3] != 1) return Unimplemented("cudnn sdpa backward: an input whose head dim is not contiguous");
  if (tk.dims[1] != tq.dims[1] || tv.dims[1] != tq.dims[1])
    return Unimplemented("cudnn sdpa backward: k/v heads shared by several query heads");
  Tensor4 to = Packed(tq, d.head_dim), ts = Packed(tq, 1);
  if (d.stats) {  // the forward's own output and statistics (Note [Attention statistics])
    KILN_ASSIGN_OR_RETURN(to, TensorOf(d, groups, d.o, d.q_len));
    KILN_ASSIGN_OR_RETURN(ts, StatsTensorOf(d, groups, d.lse));
    if (to.strides[3] != 1) return Unimplemented("cudnn sdpa backward: an O whose head dim is not contiguous");
  }
  auto q = Input(*graph, "Q", kQ, tq);
  auto k = Input(*graph, "K", kK, tk);
  auto v = Input(*graph, "V", kV, tv);
  auto o = Input(*graph, "O", kO, to);
  auto d_o = Input(*graph, "dO", kDO, tdo);
  auto stats = Input(*graph, "Stats", kStats, ts);
  stats->set_data_type(fe::DataType_t::FLOAT);
  fe::graph::SDPA_backward_attributes options;
  options.set_name("kiln_sdpa_backward").set_attn_scale(static_cast<float>(d.scale));
  SetMask(options, d);
  auto [dq, dk, dv] = graph->sdpa_backward(q, k, v, o, d_o, stats, options);
  SetOutput(*dq, kDQ, tdq);
  SetOutput(*dk, kDK, tdk);
  SetOutput(*dv, kDV, tdv);
  KILN_RETURN_IF_ERROR(FinishGraph(*graph, handle));
  return graph;
}

// Runs `f` turning frontend exceptions (the shim throws when a library is missing) into Status.
template <typename F>
auto Guard(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::exception& e) {
    return Unavailable("cudnn sdpa: ", e.what());
  }
}

}  // namespace

bool CudnnAttentionBuilt() { return true; }

CudnnAttentionPlan::~CudnnAttentionPlan() = default;

StatusOr<int64_t> CudnnAttentionPlan::PlanCount(const AttentionDesc& desc, CudaDevice& device) {
  return Guard([&]() -> StatusOr<int64_t> {
    KILN_ASSIGN_OR_RETURN(LibraryHandles * handles, LibraryHandles::ForDevice(device));
    KILN_RETURN_IF_ERROR(BindFrontend(*handles));
    std::unique_lock<std::mutex> lock = handles->QueryLock();
    KILN_ASSIGN_OR_RETURN(cudnnHandle_t h, handles->CudnnForQueries());
    KILN_ASSIGN_OR_RETURN(std::shared_ptr<fe::graph::Graph> g, BuildGraph(desc, h));
    return g->get_execution_plan_count();
  });
}

StatusOr<std::unique_ptr<CudnnAttentionPlan>> CudnnAttentionPlan::Create(const AttentionDesc& desc, CudaDevice& device,
                                                                         int64_t plan_index) {
  return Guard([&]() -> StatusOr<std::unique_ptr<CudnnAttentionPlan>> {
    // The descriptor checks the kernel makes, less its own limit: cuDNN writes statistics.
    AttentionDesc plain = desc;
    plain.stats = false;
    KILN_RETURN_IF_ERROR(CheckAttentionSupported(plain, device.description().compute_capability_major));
    KILN_ASSIGN_OR_RETURN(LibraryHandles * handles, LibraryHandles::ForDevice(device));
    KILN_RETURN_IF_ERROR(BindFrontend(*handles));
    std::unique_lock<std::mutex> lock = handles->QueryLock();
    KILN_ASSIGN_OR_RETURN(cudnnHandle_t h, handles->CudnnForQueries());
    KILN_ASSIGN_OR_RETURN(std::shared_ptr<fe::graph::Graph> g, BuildGraph(desc, h));
    std::unique_ptr<CudnnAttentionPlan> plan(new CudnnAttentionPlan());
    int64_t ws = 0;
    if (plan_index < 0) {
      KILN_RETURN_IF_ERROR(FeStatus(g->build_plans(h, fe::BuildPlanPolicy_t::HEURISTICS_CHOICE), "build_plans"));
      KILN_RETURN_IF_ERROR(FeStatus(g->get_workspace_size(ws), "get_workspace_size"));
    } else {
      if (plan_index >= g->get_execution_plan_count())
        return InvalidArgument("cudnn sdpa: plan ", plan_index, " of ", g->get_execution_plan_count());
      KILN_RETURN_IF_ERROR(FeStatus(g->build_plan_at_index(h, plan_index), StrCat("build_plan_at_index(", plan_index, ")")));
      KILN_RETURN_IF_ERROR(FeStatus(g->get_workspace_size_plan_at_index(plan_index, ws), "get_workspace_size"));
    }
    plan->impl_ = std::make_unique<Impl>();
    plan->impl_->graph = std::move(g);
    plan->impl_->handles = handles;
    plan->desc_ = desc;
    plan->workspace_bytes_ = static_cast<uint64_t>(std::max<int64_t>(ws, 0));
    plan->plan_index_ = plan_index;
    return plan;
  });
}

Status CudnnAttentionPlan::Run(runtime::DeviceMemory q, runtime::DeviceMemory k, runtime::DeviceMemory v,
                               runtime::DeviceMemory out, runtime::DeviceMemory workspace, runtime::Stream& stream,
                               runtime::DeviceMemory lse) const {
  if (desc_.stats && lse.ptr == nullptr) return InvalidArgument("cudnn sdpa: no buffer for the statistics");
  if (workspace_bytes_ > 0 && workspace.size < workspace_bytes_)
    return InvalidArgument("cudnn sdpa: workspace of ", workspace.size, " bytes, the plan needs ", workspace_bytes_);
  return Guard([&]() -> Status {
    KILN_ASSIGN_OR_RETURN(cudnnHandle_t h, impl_->handles->Cudnn(stream));
    const uint64_t w = PrimitiveByteWidth(desc_.type);
    auto at = [&](const runtime::DeviceMemory& m, const AttentionDesc::Operand& o) {
      return static_cast<void*>(static_cast<char*>(m.ptr) + o.offset * w);
    };
    std::unordered_map<int64_t, void*> pack = {
        {kQ, at(q, desc_.q)}, {kK, at(k, desc_.k)}, {kV, at(v, desc_.v)}, {kO, at(out, desc_.out)}};
    if (desc_.stats) pack[kStats] = StatsAt(lse, desc_.lse);
    fe::error_t e = plan_index_ < 0 ? impl_->graph->execute(h, pack, workspace.ptr)
                                    : impl_->graph->execute_plan_at_index(h, pack, workspace.ptr, plan_index_);
    if (!e.is_good()) return Internal("cudnn sdpa: execute: ", e.get_message());
    return OkStatus();
  });
}

CudnnAttentionBackwardPlan::~CudnnAttentionBackwardPlan() = default;

StatusOr<std::unique_ptr<CudnnAttentionBackwardPlan>> CudnnAttentionBackwardPlan::Create(const AttentionDesc& desc,
                                                                                         CudaDevice& device) {
  return Guard([&]() -> StatusOr<std::unique_ptr<CudnnAttentionBackwardPlan>> {
    if (!desc.backward) return InvalidArgument("cudnn sdpa backward: not a backward problem");
    if (device.description().compute_capability_major < 8)
      return Unimplemented("cudnn sdpa backward: sm_", device.description().compute_capability_major, "x (sm_80 or newer)");
    if (desc.head_dim % 8 != 0 || desc.head_dim > 128)
      return Unimplemented("cudnn sdpa backward: head dim ", desc.head_dim, " (a multiple of 8 up to 128)");
    KILN_ASSIGN_OR_RETURN(LibraryHandles * handles, LibraryHandles::ForDevice(device));
    KILN_RETURN_IF_ERROR(BindFrontend(*handles));
    std::unique_lock<std::mutex> lock = handles->QueryLock();
    KILN_ASSIGN_OR_RETURN(cudnnHandle_t h, handles->CudnnForQueries());
    std::unique_ptr<CudnnAttentionBackwardPlan> plan(new CudnnAttentionBackwardPlan());
    plan->impl_ = std::make_unique<Impl>();
    KILN_ASSIGN_OR_RETURN(std::vector<std::vector<int>> groups, BatchGroups(desc));
    bool packed[3];
    const AttentionDesc::Operand* views[3] = {&desc.dq, &desc.dk, &desc.dv};
    const int64_t rows[3] = {desc.q_len, desc.kv_len, desc.kv_len};
    for (int i = 0; i < 3; ++i) {
      KILN_ASSIGN_OR_RETURN(plan->impl_->grads[i].view, TensorOf(desc, groups, *views[i], rows[i]));
      packed[i] = plan->impl_->grads[i].packed = views[i]->element != 1;
    }
    if (packed[0] || packed[1] || packed[2]) {
      NvrtcRequest r;
      r.source = kScatterSource;
      r.program_name = "kiln_attention_scatter.cu";
      KILN_ASSIGN_OR_RETURN(runtime::Module * module, LoadLibraryModule(device, std::move(r)));
      KILN_ASSIGN_OR_RETURN(plan->impl_->scatter, module->GetKernel("kiln_attention_scatter"));
    }
    // With the forward's statistics (desc.stats) there is no forward to run again.
    std::shared_ptr<fe::graph::Graph> fwd;
    int64_t ws_f = 0, ws_b = 0;
    if (!desc.stats) {
      KILN_ASSIGN_OR_RETURN(fwd, BuildGraph(desc, h, /*stats_too=*/true));
      KILN_RETURN_IF_ERROR(FeStatus(fwd->build_plans(h, fe::BuildPlanPolicy_t::HEURISTICS_CHOICE), "build_plans (forward)"));
      KILN_RETURN_IF_ERROR(FeStatus(fwd->get_workspace_size(ws_f), "get_workspace_size"));
    }
    KILN_ASSIGN_OR_RETURN(std::shared_ptr<fe::graph::Graph> bwd, BuildBackwardGraph(desc, h, packed));
    KILN_RETURN_IF_ERROR(FeStatus(bwd->build_plans(h, fe::BuildPlanPolicy_t::HEURISTICS_CHOICE), "build_plans (backward)"));
    KILN_RETURN_IF_ERROR(FeStatus(bwd->get_workspace_size(ws_b), "get_workspace_size"));
    auto round = [](uint64_t b) { return (b + 255) / 256 * 256; };
    const uint64_t w = PrimitiveByteWidth(desc.type);
    const uint64_t q_rows = static_cast<uint64_t>(desc.batch_count() * desc.q_len);
    plan->o_bytes_ = desc.stats ? 0 : round(q_rows * desc.head_dim * w);
    plan->stats_bytes_ = desc.stats ? 0 : round(q_rows * sizeof(float));
    uint64_t at = plan->o_bytes_ + plan->stats_bytes_;
    for (int i = 0; i < 3; ++i) {
      if (!packed[i]) continue;
      plan->impl_->grads[i].offset = at;
      at += round(static_cast<uint64_t>(desc.batch_count() * rows[i] * desc.head_dim) * w);
    }
    plan->grads_bytes_ = at - plan->o_bytes_ - plan->stats_bytes_;
    plan->workspace_bytes_ = at + static_cast<uint64_t>(std::max<int64_t>({ws_f, ws_b, 0}));
    plan->impl_->forward = std::move(fwd);
    plan->impl_->backward = std::move(bwd);
    plan->impl_->handles = handles;
    plan->desc_ = desc;
    return plan;
  });
}

Status CudnnAttentionBackwardPlan::Run(runtime::DeviceMemory q, runtime::DeviceMemory k, runtime::DeviceMemory v,
                                       runtime::DeviceMemory d_out, runtime::DeviceMemory dq, runtime::DeviceMemory dk,
                                       runtime::DeviceMemory dv, runtime::DeviceMemory workspace,
                                       runtime::Stream& stream, runtime::DeviceMemory o_in,
                                       runtime::DeviceMemory lse_in) const {
  if (desc_.stats && (o_in.ptr == nullptr || lse_in.ptr == nullptr))
    return InvalidArgument("cudnn sdpa backward: no forward output or statistics given");
  if (workspace.size < workspace_bytes_)
    return InvalidArgument("cudnn sdpa backward: workspace of ", workspace.size, " bytes, the plan needs ", workspace_bytes_);
  return Guard([&]() -> Status {
    KILN_ASSIGN_OR_RETURN(cudnnHandle_t h, impl_->handles->Cudnn(stream));
    const uint64_t w = PrimitiveByteWidth(desc_.type);
    auto at = [&](const runtime::DeviceMemory& m, const AttentionDesc::Operand& o) {
      return static_cast<void*>(static_cast<char*>(m.ptr) + o.offset * w);
    };
    char* ws = static_cast<char*>(workspace.ptr);
    void* o = desc_.stats ? at(o_in, desc_.o) : ws;
    void* stats = desc_.stats ? StatsAt(lse_in, desc_.lse) : static_cast<void*>(ws + o_bytes_);
    void* scratch = ws + o_bytes_ + stats_bytes_ + grads_bytes_;
    void* grads[3] = {at(dq, desc_.dq), at(dk, desc_.dk), at(dv, desc_.dv)};
    void* targets[3] = {grads[0], grads[1], grads[2]};
    for (int i = 0; i < 3; ++i)
      if (impl_->grads[i].packed) grads[i] = ws + impl_->grads[i].offset;
    fe::error_t e;
    if (impl_->forward) {
      std::unordered_map<int64_t, void*> fpack = {
          {kQ, at(q, desc_.q)}, {kK, at(k, desc_.k)}, {kV, at(v, desc_.v)}, {kO, o}, {kStats, stats}};
      e = impl_->forward->execute(h, fpack, scratch);
      if (!e.is_good()) return Internal("cudnn sdpa backward: forward: ", e.get_message());
    }
    std::unordered_map<int64_t, void*> bpack = {{kQ, at(q, desc_.q)},       {kK, at(k, desc_.k)},
                                                {kV, at(v, desc_.v)},       {kO, o},
                                                {kDO, at(d_out, desc_.d_out)}, {kStats, stats},
                                                {kDQ, grads[0]},            {kDK, grads[1]},
                                                {kDV, grads[2]}};
    e = impl_->backward->execute(h, bpack, scratch);
    if (!e.is_good()) return Internal("cudnn sdpa backward: execute: ", e.get_message());
    for (int i = 0; i < 3; ++i) {
      const Impl::Grad& g = impl_->grads[i];
      if (!g.packed) continue;
      ScatterParams p{};
      p.src = grads[i];
      p.dst = targets[i];
      p.d1 = g.view.dims[1];
      p.d2 = g.view.dims[2];
      p.d3 = g.view.dims[3];
      p.s0 = g.view.strides[0];
      p.s1 = g.view.strides[1];
      p.s2 = g.view.strides[2];
      p.s3 = g.view.strides[3];
      p.total = g.view.dims[0] * p.d1 * p.d2 * p.d3;
      p.rows_inner = p.s2 < p.s3 ? 1 : 0;
      runtime::LaunchDims dims = runtime::LaunchDims::Linear(static_cast<uint64_t>(std::min<long long>(p.total, 1 << 22)), 256);
      runtime::KernelArgs args;
      args.Add(p);
      KILN_RETURN_IF_ERROR(stream.Launch(*impl_->scatter, dims, args));
    }
    return OkStatus();
  });
}

#else  // !KILN_CUDNN_SDPA

struct CudnnAttentionPlan::Impl {};
struct CudnnAttentionBackwardPlan::Impl {};

CudnnAttentionBackwardPlan::~CudnnAttentionBackwardPlan() = default;

StatusOr<std::unique_ptr<CudnnAttentionBackwardPlan>> CudnnAttentionBackwardPlan::Create(const AttentionDesc&,
                                                                                         CudaDevice&) {
  return Unimplemented("cudnn sdpa: kiln was built without the cuDNN frontend headers (pip install nvidia-cudnn-frontend)");
}

Status CudnnAttentionBackwardPlan::Run(runtime::DeviceMemory, runtime::DeviceMemory, runtime::DeviceMemory,
                                       runtime::DeviceMemory, runtime::DeviceMemory, runtime::DeviceMemory,
                                       runtime::DeviceMemory, runtime::DeviceMemory, runtime::Stream&,
                                       runtime::DeviceMemory, runtime::DeviceMemory) const {
  return FailedPrecondition("cudnn sdpa: not built");
}

bool CudnnAttentionBuilt() { return false; }

CudnnAttentionPlan::~CudnnAttentionPlan() = default;

StatusOr<int64_t> CudnnAttentionPlan::PlanCount(const AttentionDesc&, CudaDevice&) {
  return Unimplemented("cudnn sdpa: kiln was built without the cuDNN frontend headers (pip install nvidia-cudnn-frontend)");
}

StatusOr<std::unique_ptr<CudnnAttentionPlan>> CudnnAttentionPlan::Create(const AttentionDesc&, CudaDevice&, int64_t) {
  return Unimplemented("cudnn sdpa: kiln was built without the cuDNN frontend headers (pip install nvidia-cudnn-frontend)");
}

Status CudnnAttentionPlan::Run(runtime::DeviceMemory, runtime::DeviceMemory, runtime::DeviceMemory,
                               runtime::DeviceMemory, runtime::DeviceMemory, runtime::Stream&,
                               runtime::DeviceMemory) const {
  return FailedPrecondition("cudnn sdpa: not built");
}

#endif

}  // namespace kiln::cuda::libs
