// GEMMs on cuBLASLt: plans built once from a GemmDesc (gemm_desc.h), algorithms listed for the
// autotuner, launches that only enqueue.
//
//   // Initialize stage (compile time):
//   KILN_ASSIGN_OR_RETURN(auto plan, GemmPlan::Create(desc, device));
//   KILN_ASSIGN_OR_RETURN(std::vector<GemmAlgorithm> algos, plan->ListAlgorithms());
//   GemmAlgorithm chosen = algos[0];   // cuBLASLt's heuristic favourite, or the autotuner's pick
//   // Execute stage:
//   KILN_RETURN_IF_ERROR(plan->Run(chosen, buffers, workspace, stream));
//
// A plan holds cuBLASLt's matmul descriptor and matrix layouts (built once by Create) and the
// device's shared cuBLASLt handle (handles.h). ListAlgorithms asks cuBLASLt's heuristic for up to
// `max` algorithms that fit desc.max_workspace_bytes and desc.min_alignment_bytes, best first,
// each with the workspace it needs. Run checks the buffers (sizes, alignment), sets the per-run
// pointers (bias, f8 scales, amax) and calls cublasLtMatmul on the stream: no allocation, no
// synchronization.
//
// Errors: a failing cuBLASLt call is a Status carrying cuBLASLt's status name and text
// ("cublasLt: cublasLtMatmul(...): CUBLAS_STATUS_NOT_SUPPORTED (...)"); a descriptor no library
// runs is Unimplemented at Create; no algorithm for a valid descriptor is Unimplemented from
// ListAlgorithms.
//
// Thread safety: Create, ListAlgorithms and Run may be called from several threads; Runs of one
// plan are serialized by a mutex while they set the per-run pointers and enqueue.
#pragma once

#include <cublasLt.h>

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/cuda/cuda_device.h"
#include "kiln/cuda/libs/gemm_desc.h"
#include "kiln/runtime/stream.h"

namespace kiln::cuda::libs {

class LibraryHandles;

// The device buffers of one GEMM run. Sizes are checked against the descriptor.
struct GemmBuffers {
  runtime::DeviceMemory lhs, rhs, out;
  // Read when beta != 0; null means out (the in-place residual add). f8 outputs (beta must be 0):
  // cuBLASLt's C is then bf16 and may not alias out, so leave c null (passed as null, never read)
  // or give a separate buffer of out's element count in bf16.
  runtime::DeviceMemory c;
  runtime::DeviceMemory bias;  // bias epilogues: n elements of the bias type
  // f8 only, as the descriptor's has_* flags say: one f32 each.
  runtime::DeviceMemory a_scale, b_scale, d_scale, d_amax;
};

// One way to run a GEMM: a cuBLASLt algorithm (opaque, from its heuristic) or a cuBLAS algorithm
// id. Plain data: the autotuner stores it; `opaque` is only meaningful to the same cuBLASLt
// version (the device fingerprint covers library versions).
struct GemmAlgorithm {
  enum class Backend : uint8_t { kCublasLt, kCublas };
  Backend backend = Backend::kCublasLt;
  int index = 0;                    // position in ListAlgorithms' result
  std::array<uint64_t, 8> opaque{};  // cublasLtMatmulAlgo_t (cuBLASLt)
  int cublas_algo = -1;             // cublasGemmAlgo_t value (cuBLAS)
  uint64_t workspace_bytes = 0;     // what the algorithm needs
  float waves = 0;                  // cuBLASLt's estimate of device occupancy (1 = one full wave)
  std::string description;          // "cublasLt#0 algo=66 tile=... stages=... splitk=1"
};

class GemmPlan {
 public:
  // Validates `desc` and builds the cuBLASLt descriptors for `device`.
  static StatusOr<std::unique_ptr<GemmPlan>> Create(const GemmDesc& desc, CudaDevice& device);
  ~GemmPlan();
  GemmPlan(const GemmPlan&) = delete;
  GemmPlan& operator=(const GemmPlan&) = delete;

  const GemmDesc& desc() const { return desc_; }
  const GemmTypes& types() const { return types_; }
  const ColumnMajorGemm& column_major() const { return cm_; }

  // Up to `max_algorithms` algorithms from cuBLASLt's heuristic, best first (at least one, else
  // Unimplemented naming the descriptor).
  StatusOr<std::vector<GemmAlgorithm>> ListAlgorithms(int max_algorithms = 64) const;

  // The algorithm to run without autotuning: cuBLASLt's heuristic favourite (the first of
  // ListAlgorithms).
  StatusOr<GemmAlgorithm> DefaultAlgorithm() const;

  // Enqueues the GEMM on `stream` with `algorithm` (from ListAlgorithms of an identical plan).
  // `workspace` must hold algorithm.workspace_bytes.
  Status Run(const GemmAlgorithm& algorithm, const GemmBuffers& buffers,
             runtime::DeviceMemory workspace, runtime::Stream& stream) const;

 private:
  GemmPlan(const GemmDesc& desc, const GemmTypes& types, const ColumnMajorGemm& cm,
           LibraryHandles& handles)
      : desc_(desc), types_(types), cm_(cm), handles_(handles) {}
  Status Build();

  GemmDesc desc_;
  GemmTypes types_;
  ColumnMajorGemm cm_;
  LibraryHandles& handles_;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, c_ = nullptr, d_ = nullptr;
  // alpha and beta in the scale type (f32, f64, s32 or complex f32), host memory.
  alignas(16) std::array<unsigned char, 16> alpha_{};
  alignas(16) std::array<unsigned char, 16> beta_{};
  mutable std::mutex run_mu_;
};

// Checks that `buffers` hold what `desc` needs (sizes, alignment to desc.min_alignment_bytes,
// scale and bias presence). Shared by both GEMM backends.
Status CheckGemmBuffers(const GemmDesc& desc, const GemmTypes& types, const ColumnMajorGemm& cm,
                        const GemmBuffers& buffers);

// The cudaDataType of a kiln type, or Unimplemented.
StatusOr<cudaDataType> CudaDataType(PrimitiveType t);

// alpha/beta bytes in the scale type.
void EncodeScalar(PrimitiveType scale_type, double real, double imag, unsigned char* out);

}  // namespace kiln::cuda::libs
