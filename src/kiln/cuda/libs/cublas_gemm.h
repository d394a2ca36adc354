// GEMMs on plain cuBLAS (cublasGemmEx / cublasGemmStridedBatchedEx): the second GEMM backend the
// autotuner measures against cuBLASLt. Same descriptor, buffers and algorithm record as
// GemmPlan (gemm.h); algorithms are cuBLAS's algorithm ids.
//
// What cuBLAS cannot do, and so is Unimplemented at Create: epilogues (bias/relu/gelu), f8
// operands, sizes or leading dimensions above 2^31-1. beta*c is done in place in out: when c is
// a separate buffer, Run first copies it into out on the stream (c must not partially overlap
// out).
//
// Algorithms: CUBLAS_GEMM_DEFAULT, CUBLAS_GEMM_ALGO0..23, CUBLAS_GEMM_DEFAULT_TENSOR_OP and
// CUBLAS_GEMM_ALGO0..15_TENSOR_OP. On Ampere and later cuBLAS treats most of these ids as hints
// (several behave like the default); the autotuner measures them anyway. Each is offered with
// the plan's workspace (desc.max_workspace_bytes), given to cuBLAS through cublasSetWorkspace on
// every run, so cuBLAS never allocates.
//
// Thread safety: as GemmPlan. The cuBLAS handle is the stream's own (handles.h).
#pragma once

#include <memory>
#include <vector>

#include "kiln/cuda/libs/gemm.h"

namespace kiln::cuda::libs {

class CublasGemmPlan {
 public:
  static StatusOr<std::unique_ptr<CublasGemmPlan>> Create(const GemmDesc& desc,
                                                          CudaDevice& device);

  const GemmDesc& desc() const { return desc_; }
  const ColumnMajorGemm& column_major() const { return cm_; }

  // Every algorithm id (see above), CUBLAS_GEMM_DEFAULT first; at most `max_algorithms`.
  StatusOr<std::vector<GemmAlgorithm>> ListAlgorithms(int max_algorithms = 64) const;
  // CUBLAS_GEMM_DEFAULT (the first of ListAlgorithms).
  StatusOr<GemmAlgorithm> DefaultAlgorithm() const;

  Status Run(const GemmAlgorithm& algorithm, const GemmBuffers& buffers,
             runtime::DeviceMemory workspace, runtime::Stream& stream) const;

 private:
  CublasGemmPlan(const GemmDesc& desc, const GemmTypes& types, const ColumnMajorGemm& cm,
                 LibraryHandles& handles)
      : desc_(desc), types_(types), cm_(cm), handles_(handles) {}

  GemmDesc desc_;
  GemmTypes types_;
  ColumnMajorGemm cm_;
  LibraryHandles& handles_;
  alignas(16) std::array<unsigned char, 16> alpha_{};
  alignas(16) std::array<unsigned char, 16> beta_{};
};

// Whether the cuBLAS backend takes `desc` (OK) or why not (Unimplemented); no device needed.
Status CublasSupports(const GemmDesc& desc);

}  // namespace kiln::cuda::libs
