// Fused attention on cuDNN 9's SDPA (the graph API, built with the cuDNN frontend headers from
// PyPI's nvidia-cudnn-frontend), the second implementation next to kiln's flash kernel
// (attention.h); the autotuner measures both ("cudnn_sdpa" and "flash" configs).
//
//   KILN_ASSIGN_OR_RETURN(auto plan, CudnnAttentionPlan::Create(desc, device, plan_index));
//   ... workspace of plan->workspace_bytes() ...
//   KILN_RETURN_IF_ERROR(plan->Run(q, k, v, out, workspace, stream));
//
// The problem is AttentionDesc's, as [b, h, s, d] tensors with the views' strides (two of the
// desc's batch dims, or three when the outer two merge); causal masks top-left (offset 0) or
// bottom-right (offset kv_len - q_len); the forward without softmax statistics here, with them
// in CudnnAttentionBackwardPlan. Plans are the
// frontend's heuristic list (modes A and fallback), in order: `plan_index` -1 is the first that
// builds; PlanCount says how many there are for the autotuner.
//
// The frontend reaches cuDNN through dlsym on the library kiln's loader opened
// (NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING); nothing links libcudnn. Every frontend call is
// wrapped: its errors and exceptions become Status values. Built without the frontend headers
// (KILN_HAVE_CUDNN_FRONTEND unset), Create is Unimplemented.
#pragma once

#include <cstdint>
#include <memory>

#include "kiln/base/status.h"
#include "kiln/cuda/cuda_device.h"
#include "kiln/cuda/libs/attention.h"
#include "kiln/runtime/stream.h"

namespace kiln::cuda::libs {

// Whether this build has the cuDNN attention path.
bool CudnnAttentionBuilt();

class CudnnAttentionPlan {
 public:
  ~CudnnAttentionPlan();
  // Builds the graph and the plan with the device's query handle (runs bind the stream's own).
  static StatusOr<std::unique_ptr<CudnnAttentionPlan>> Create(const AttentionDesc& desc, CudaDevice& device,
                                                              int64_t plan_index = -1);
  // How many execution plans cuDNN's heuristics offer for `desc` (an error when it takes none).
  static StatusOr<int64_t> PlanCount(const AttentionDesc& desc, CudaDevice& device);
  uint64_t workspace_bytes() const { return workspace_bytes_; }
  int64_t plan_index() const { return plan_index_; }
  // `lse`: where desc.stats puts the statistics (desc.lse is a view of it).
  Status Run(runtime::DeviceMemory q, runtime::DeviceMemory k, runtime::DeviceMemory v, runtime::DeviceMemory out,
             runtime::DeviceMemory workspace, runtime::Stream& stream, runtime::DeviceMemory lse = {}) const;

  struct Impl;

 private:
  CudnnAttentionPlan() = default;
  std::unique_ptr<Impl> impl_;
  AttentionDesc desc_;
  uint64_t workspace_bytes_ = 0;
  int64_t plan_index_ = -1;
};

// The backward of attention (desc.backward) on cuDNN's SDPA: the forward again, now with its
// softmax statistics (O and the rows' log-sum-exp into the workspace), then sdpa_backward into
// dQ, dK and dV; with desc.stats the forward's own O and statistics are operands and the
// forward is not run again. Heuristic plans only.
class CudnnAttentionBackwardPlan {
 public:
  ~CudnnAttentionBackwardPlan();
  static StatusOr<std::unique_ptr<CudnnAttentionBackwardPlan>> Create(const AttentionDesc& desc, CudaDevice& device);
  uint64_t workspace_bytes() const { return workspace_bytes_; }
  // `o` and `lse`: the forward's output and statistics where desc.stats says they are given.
  Status Run(runtime::DeviceMemory q, runtime::DeviceMemory k, runtime::DeviceMemory v, runtime::DeviceMemory d_out,
             runtime::DeviceMemory dq, runtime::DeviceMemory dk, runtime::DeviceMemory dv,
             runtime::DeviceMemory workspace, runtime::Stream& stream, runtime::DeviceMemory o = {},
             runtime::DeviceMemory lse = {}) const;

  struct Impl;

 private:
  CudnnAttentionBackwardPlan() = default;
  std::unique_ptr<Impl> impl_;
  AttentionDesc desc_;
  uint64_t workspace_bytes_ = 0;
  uint64_t o_bytes_ = 0, stats_bytes_ = 0, grads_bytes_ = 0;
};

}  // namespace kiln::cuda::libs
