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

constexpr int64_t kQ = 1, kK = 2, kV = 3, kO = 4;

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

struct Tensor4 {
  int64_t dims[4];
  int64_t strides[4];
};

// The desc's batch dims as cuDNN's two ([b, h]): size-1 dims dropped, then adjacent dims merged
// where every operand's strides allow, padded in front with size 1. Each entry lists the desc
// dims of one group (outer to inner).
StatusOr<std::vector<std::vector<int>>> BatchGroups(const AttentionDesc& d) {
  std::vector<std::vector<int>> groups;
  for (int i = 0; i < kAttentionMaxBatchDims; ++i)
    if (d.batch[i] != 1) groups.push_back({i});
  const AttentionDesc::Operand* ops[4] = {&d.q, &d.k, &d.v, &d.out};
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
  t.strides[3] = 1;
  // cuDNN wants every stride set, also of size-1 dims: the extent of the dims inside.
  if (rows == 1 && t.strides[2] == 0) t.strides[2] = d.head_dim;
  if (t.dims[1] == 1) t.strides[1] = std::max<int64_t>(t.strides[2] * rows, 1);
  if (t.dims[0] == 1) t.strides[0] = t.strides[1] * t.dims[1];
  return t;
}

StatusOr<std::shared_ptr<fe::graph::Graph>> BuildGraph(const AttentionDesc& d, cudnnHandle_t handle) {
  if (d.type != PrimitiveType::kBF16 && d.type != PrimitiveType::kF16)
    return Unimplemented("cudnn sdpa: ", PrimitiveTypeName(d.type), " (bf16 or f16)");
  if (d.causal && d.causal_offset != 0 && d.causal_offset != d.kv_len - d.q_len)
    return Unimplemented("cudnn sdpa: causal offset ", d.causal_offset, " (0 or kv_len - q_len)");
  auto graph = std::make_shared<fe::graph::Graph>();
  const fe::DataType_t io = d.type == PrimitiveType::kBF16 ? fe::DataType_t::BFLOAT16 : fe::DataType_t::HALF;
  graph->set_io_data_type(io).set_intermediate_data_type(fe::DataType_t::FLOAT).set_compute_data_type(fe::DataType_t::FLOAT);
  auto make = [&](const char* name, int64_t uid, const Tensor4& t) {
    return graph->tensor(fe::graph::Tensor_attributes()
                             .set_name(name)
                             .set_uid(uid)
                             .set_dim({t.dims[0], t.dims[1], t.dims[2], t.dims[3]})
                             .set_stride({t.strides[0], t.strides[1], t.strides[2], t.strides[3]}));
  };
  KILN_ASSIGN_OR_RETURN(std::vector<std::vector<int>> groups, BatchGroups(d));
  KILN_ASSIGN_OR_RETURN(const Tensor4 tq, TensorOf(d, groups, d.q, d.q_len));
  KILN_ASSIGN_OR_RETURN(const Tensor4 tk, TensorOf(d, groups, d.k, d.kv_len));
  KILN_ASSIGN_OR_RETURN(const Tensor4 tv, TensorOf(d, groups, d.v, d.kv_len));
  KILN_ASSIGN_OR_RETURN(const Tensor4 to, TensorOf(d, groups, d.out, d.q_len));
  if (tq.dims[1] == 1 && (tk.dims[1] > 1 || tv.dims[1] > 1)) return Unimplemented("cudnn sdpa: more k/v heads than q heads");
  auto q = make("Q", kQ, tq);
  auto k = make("K", kK, tk);
  auto v = make("V", kV, tv);
  fe::graph::SDPA_attributes options;
  options.set_name("kiln_sdpa").set_generate_stats(false).set_attn_scale(static_cast<float>(d.scale));
  if (d.causal) {
    if (d.causal_offset == 0) options.set_causal_mask(true);
    else options.set_causal_mask_bottom_right(true);
  }
  auto [o, stats] = graph->sdpa(q, k, v, options);
  (void)stats;
  o->set_output(true)
      .set_uid(kO)
      .set_dim({to.dims[0], to.dims[1], to.dims[2], to.dims[3]})
      .set_stride({to.strides[0], to.strides[1], to.strides[2], to.strides[3]});
  KILN_RETURN_IF_ERROR(FeStatus(graph->validate(), "validate"));
  KILN_RETURN_IF_ERROR(FeStatus(graph->build_operation_graph(handle), "build_operation_graph"));
  KILN_RETURN_IF_ERROR(
      FeStatus(graph->create_execution_plans({fe::HeurMode_t::A, fe::HeurMode_t::FALLBACK}), "create_execution_plans"));
  KILN_RETURN_IF_ERROR(FeStatus(graph->check_support(handle), "check_support"));
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
    KILN_RETURN_IF_ERROR(CheckAttentionSupported(desc, device.description().compute_capability_major));
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
                               runtime::DeviceMemory out, runtime::DeviceMemory workspace,
                               runtime::Stream& stream) const {
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
    fe::error_t e = plan_index_ < 0 ? impl_->graph->execute(h, pack, workspace.ptr)
                                    : impl_->graph->execute_plan_at_index(h, pack, workspace.ptr, plan_index_);
    if (!e.is_good()) return Internal("cudnn sdpa: execute: ", e.get_message());
    return OkStatus();
  });
}

#else  // !KILN_CUDNN_SDPA

struct CudnnAttentionPlan::Impl {};

bool CudnnAttentionBuilt() { return false; }

CudnnAttentionPlan::~CudnnAttentionPlan() = default;

StatusOr<int64_t> CudnnAttentionPlan::PlanCount(const AttentionDesc&, CudaDevice&) {
  return Unimplemented("cudnn sdpa: kiln was built without the cuDNN frontend headers (pip install nvidia-cudnn-frontend)");
}

StatusOr<std::unique_ptr<CudnnAttentionPlan>> CudnnAttentionPlan::Create(const AttentionDesc&, CudaDevice&, int64_t) {
  return Unimplemented("cudnn sdpa: kiln was built without the cuDNN frontend headers (pip install nvidia-cudnn-frontend)");
}

Status CudnnAttentionPlan::Run(runtime::DeviceMemory, runtime::DeviceMemory, runtime::DeviceMemory,
                               runtime::DeviceMemory, runtime::DeviceMemory, runtime::Stream&) const {
  return FailedPrecondition("cudnn sdpa: not built");
}

#endif

}  // namespace kiln::cuda::libs
