// Convolutions on cuDNN (its legacy convolution API, cuDNN 9): plans built once from a ConvDesc
// (conv_desc.h), algorithms listed for the autotuner, launches that only enqueue.
//
//   KILN_ASSIGN_OR_RETURN(auto plan, ConvPlan::Create(desc, device));       // Initialize stage
//   KILN_ASSIGN_OR_RETURN(std::vector<ConvAlgorithm> algos, plan->ListAlgorithms());
//   KILN_RETURN_IF_ERROR(plan->Run(algos[0], buffers, workspace, stream));  // Execute stage
//
// A plan holds the cuDNN tensor, filter and convolution descriptors (1-D convolutions are run as
// 2-D ones with a unit height), and uses the device's per-stream cuDNN handles (handles.h).
//
// Algorithms come from cuDNN's heuristics (cudnnGetConvolution{Forward,BackwardData,
// BackwardFilter}Algorithm_v7), best first, each with its math type (tensor cores or not), the
// workspace it needs (asked of cuDNN for that math type) and whether it is deterministic.
// Precision policy: f32 under HIGHEST gets FMA math only (no TF32); under DEFAULT/HIGH cuDNN may
// use TF32.
//
// Fused plans (desc.fused(): bias, relu, side input) have two kinds of algorithm:
//   - cuDNN's fused call (cudnnConvolutionBiasActivationForward) with IMPLICIT_PRECOMP_GEMM, the
//     algorithm cuDNN documents for it -- only with a bias, and not for f64;
//   - the split fallback (ConvAlgorithm::split_epilogue): every algorithm of the unfused
//     heuristic, run as cudnnConvolutionForward with beta = side_input_scale over y (a separate
//     side input is first copied into y), then -- when there is a bias or relu -- kiln's own
//     NVRTC-compiled epilogue kernel, y = act(y + bias[k]), one more pass over y. A fused plan
//     without an epilogue kernel (no NVRTC) lists only the fused call.
// The fused call comes first for f32 and f16 (the types cuDNN's fused call documents); for bf16
// and f64 the split algorithms come first and the fused call last, so the default choice
// (DefaultAlgorithm, the first) always runs. A fused candidate cuDNN rejects at run time fails
// with a Status (the autotuner drops it).
//
// Errors: cuDNN failures carry cuDNN's status name and last-error text; descriptors cuDNN
// cannot run are Unimplemented at Create (see conv_desc.h).
//
// Thread safety: Create, ListAlgorithms and Run may be called concurrently; a plan's runs are
// serialized while they set the algorithm's math type and enqueue.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/cuda/cuda_device.h"
#include "kiln/cuda/libs/conv_desc.h"
#include "kiln/runtime/stream.h"

namespace kiln::cuda::libs {

class LibraryHandles;

// The tensors of one run. Which are read and which is written depends on the kind:
//   forward          reads x, w (and bias, z)   writes y
//   backward data    reads y (= dy), w          writes x (= dx)
//   backward filter  reads x, y (= dy)          writes w (= dw)
struct ConvBuffers {
  runtime::DeviceMemory x, w, y;
  runtime::DeviceMemory bias;        // fused: output_features elements of the conv's type
  runtime::DeviceMemory side_input;  // fused with side_input_scale != 0: y's shape (may be y)
};

// One way to run a convolution. Plain data for the autotuner's cache.
struct ConvAlgorithm {
  ConvKind kind = ConvKind::kForward;
  int index = 0;                 // position in ListAlgorithms' result
  int algo = 0;                  // cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t value
  int math_type = 0;             // cudnnMathType_t value
  uint64_t workspace_bytes = 0;
  bool deterministic = false;
  bool tensor_ops = false;       // the math type lets cuDNN use tensor cores (TF32 for f32)
  // Fused plans only: an unfused cuDNN convolution followed by kiln's epilogue kernel (see the
  // header comment) instead of cuDNN's fused call.
  bool split_epilogue = false;
  std::string description;       // "cudnn fwd#0 IMPLICIT_PRECOMP_GEMM tensor_op ws=0 det"
};

class ConvPlan {
 public:
  static StatusOr<std::unique_ptr<ConvPlan>> Create(const ConvDesc& desc, CudaDevice& device);
  ~ConvPlan();
  ConvPlan(const ConvPlan&) = delete;
  ConvPlan& operator=(const ConvPlan&) = delete;

  const ConvDesc& desc() const { return desc_; }

  // cuDNN's heuristic algorithms that need at most `max_workspace_bytes` (default 1 GiB; XLA
  // allows up to 4 GiB), best first; Unimplemented when there is none.
  StatusOr<std::vector<ConvAlgorithm>> ListAlgorithms(
      uint64_t max_workspace_bytes = uint64_t{1} << 30) const;

  // The algorithm to run without autotuning: the first of ListAlgorithms(max_workspace_bytes).
  StatusOr<ConvAlgorithm> DefaultAlgorithm(uint64_t max_workspace_bytes = uint64_t{1} << 30) const;

  // Enqueues the convolution; `workspace` must hold algorithm.workspace_bytes.
  Status Run(const ConvAlgorithm& algorithm, const ConvBuffers& buffers,
             runtime::DeviceMemory workspace, runtime::Stream& stream) const;

  // Bytes of x, w and y.
  uint64_t input_bytes() const;
  uint64_t filter_bytes() const;
  uint64_t output_bytes() const;

 private:
  struct Descriptors;
  ConvPlan(const ConvDesc& desc, LibraryHandles& handles);
  Status Build();

  Status RunSplit(const ConvAlgorithm& algorithm, const ConvBuffers& buffers,
                  runtime::DeviceMemory workspace, runtime::Stream& stream) const;

  ConvDesc desc_;
  LibraryHandles& handles_;
  std::unique_ptr<Descriptors> d_;
  // The split epilogue kernel (fused plans with a bias or relu); null when it is not needed or
  // failed to compile (then epilogue_status_ says why and no split algorithm is listed).
  runtime::Kernel* epilogue_ = nullptr;
  Status epilogue_status_;
  mutable std::mutex run_mu_;
};

// The NVRTC source of the split epilogue kernels kiln_conv_epilogue_{f32,f64,f16,bf16}
// (exposed for the compile test).
const char* ConvEpilogueKernelSource();

}  // namespace kiln::cuda::libs
