// Thunks that call the vendor-library layer (src/kiln/cuda/libs): GEMMs on cuBLASLt,
// convolutions on cuDNN, sorts and top-k on kiln's sort kernels, FFTs on cuFFT.
//
// Each builds its library descriptor at compile time (library_calls.h), creates
// the plan and picks the algorithm in Initialize -- the autotuner's choice when the call carries
// one (`tuned`: a cuBLAS algorithm id runs on cuBLAS, a cuBLASLt or cuDNN algorithm with its
// workspace as measured), else the library's heuristic favourite -- and only enqueues in
// Execute. A GEMM or convolution the library turns down at
// Initialize (Unimplemented / InvalidArgument: a layout or alignment it cannot take) runs its
// host fallback instead -- the expanded HLO on the evaluator -- with a warning; any other
// failure is an error.
#pragma once

#include <array>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kiln/cuda/compiler/conv_config.h"
#include "kiln/cuda/compiler/gemm_config.h"
#include "kiln/cuda/compiler/gpu_thunk.h"
#include "kiln/cuda/libs/attention.h"
#include "kiln/cuda/libs/attention_cudnn.h"
#include "kiln/cuda/libs/conv.h"
#include "kiln/cuda/libs/cublas_gemm.h"
#include "kiln/cuda/libs/fft.h"
#include "kiln/cuda/libs/gemm.h"
#include "kiln/cuda/libs/sort.h"

namespace kiln::cuda {

class GemmThunk : public GpuThunk {
 public:
  // `operands`: lhs, rhs[, c][, bias] slices as the config orders them.
  GemmThunk(std::string name, libs::GemmDesc desc, std::vector<BufferSlice> operands, BufferSlice output,
            std::unique_ptr<GpuThunk> fallback, std::optional<libs::GemmAlgorithm> tuned = std::nullopt);
  Status Initialize(const ThunkInitParams& params) override;
  Status Execute(const ThunkExecuteParams& params) const override;
  bool SyncsHost() const override { return use_fallback_; }
  uint64_t workspace_bytes() const override;
  std::string ToString() const override;
  double PeakFlops(const runtime::DeviceDescription& device) const override;
  const libs::GemmDesc& desc() const { return desc_; }
  const std::optional<libs::GemmAlgorithm>& tuned() const { return tuned_; }

 private:
  libs::GemmDesc desc_;
  std::vector<BufferSlice> operands_;
  BufferSlice output_;
  std::unique_ptr<GpuThunk> fallback_;
  std::optional<libs::GemmAlgorithm> tuned_;
  bool use_fallback_ = false;
  std::unique_ptr<libs::GemmPlan> plan_;              // cuBLASLt
  std::unique_ptr<libs::CublasGemmPlan> cublas_plan_;  // a tuned cuBLAS algorithm
  libs::GemmAlgorithm algorithm_;
};

// Dense peak FLOP/s of `device` for products of `type` (f32 counted as TF32 unless `highest`).
double PeakMatmulFlops(const runtime::DeviceDescription& device, PrimitiveType type, bool highest);

class ConvThunk : public GpuThunk {
 public:
  // `operands`: x, w[, bias][, side].
  ConvThunk(std::string name, libs::ConvDesc desc, std::vector<BufferSlice> operands, BufferSlice output,
            std::unique_ptr<GpuThunk> fallback, std::optional<libs::ConvAlgorithm> tuned = std::nullopt);
  Status Initialize(const ThunkInitParams& params) override;
  Status Execute(const ThunkExecuteParams& params) const override;
  bool SyncsHost() const override { return use_fallback_; }
  uint64_t workspace_bytes() const override;
  std::string ToString() const override;
  double PeakFlops(const runtime::DeviceDescription& device) const override;
  const std::optional<libs::ConvAlgorithm>& tuned() const { return tuned_; }

 private:
  libs::ConvDesc desc_;
  std::vector<BufferSlice> operands_;
  BufferSlice output_;
  std::unique_ptr<GpuThunk> fallback_;
  std::optional<libs::ConvAlgorithm> tuned_;
  bool use_fallback_ = false;
  std::unique_ptr<libs::ConvPlan> plan_;
  libs::ConvAlgorithm algorithm_;
};

// Fused attention for a __kiln$attention call: kiln's flash-attention kernel (libs/attention.h)
// in the autotuner's config, or the cuDNN SDPA plan it chose (libs/attention_cudnn.h); without
// a choice cuDNN's heuristic plan where the build has cuDNN SDPA and cuDNN takes the problem,
// else the flash kernel's default config. A problem the chosen implementation turns down at
// Initialize runs the host fallback (the outlined computation on the evaluator) with a warning.
class AttentionThunk : public GpuThunk {
 public:
  // `operands`: the call's operand slices (the desc's views index into them by q/k/v operand).
  // `cudnn_plan` >= -1: run cuDNN's SDPA (that plan); otherwise the flash kernel in `flash`
  // (nullopt: its default config).
  AttentionThunk(std::string name, libs::AttentionDesc desc, BufferSlice q, BufferSlice k, BufferSlice v,
                 BufferSlice output, std::unique_ptr<GpuThunk> fallback,
                 std::optional<libs::AttentionKernelConfig> flash = std::nullopt, int64_t cudnn_plan = -2);
  Status Initialize(const ThunkInitParams& params) override;
  Status Execute(const ThunkExecuteParams& params) const override;
  bool SyncsHost() const override { return use_fallback_; }
  uint64_t workspace_bytes() const override {
    if (use_fallback_) return fallback_->workspace_bytes();
    return cudnn_plan_ ? cudnn_plan_->workspace_bytes() : 0;
  }
  std::string ToString() const override;
  double PeakFlops(const runtime::DeviceDescription& device) const override;
  const libs::AttentionDesc& desc() const { return desc_; }
  // Where a desc with `stats` writes them (Note [Attention statistics]).
  void set_statistics(BufferSlice lse) { lse_ = lse; }
  // The bias and data mask a desc with them reads (Note [Attention bias and masks]).
  void set_bias_and_mask(BufferSlice bias, BufferSlice mask) {
    bias_ = bias;
    mask_ = mask;
  }

 private:
  libs::AttentionDesc desc_;
  BufferSlice q_, k_, v_, output_, lse_, bias_, mask_;
  std::unique_ptr<GpuThunk> fallback_;
  std::optional<libs::AttentionKernelConfig> tuned_;
  int64_t cudnn_index_;
  bool use_fallback_ = false;
  std::unique_ptr<libs::AttentionPlan> plan_;
  std::unique_ptr<libs::CudnnAttentionPlan> cudnn_plan_;
};

// The backward of attention for a __kiln$attention_backward call (Note [Attention backward]):
// cuDNN's SDPA forward with statistics then backward (libs::CudnnAttentionBackwardPlan); a
// problem cuDNN turns down at Initialize runs the host fallback with a warning.
class AttentionBackwardThunk : public GpuThunk {
 public:
  // `inputs`: q, k, v, dO slices, then (desc.stats) the forward's output and statistics;
  // `outputs`: dQ, dK, dV slices.
  AttentionBackwardThunk(std::string name, libs::AttentionDesc desc, std::array<BufferSlice, 6> inputs,
                         std::array<BufferSlice, 3> outputs, std::unique_ptr<GpuThunk> fallback);
  Status Initialize(const ThunkInitParams& params) override;
  Status Execute(const ThunkExecuteParams& params) const override;
  bool SyncsHost() const override { return use_fallback_; }
  uint64_t workspace_bytes() const override {
    if (use_fallback_) return fallback_->workspace_bytes();
    return plan_ ? plan_->workspace_bytes() : 0;
  }
  std::string ToString() const override;
  double PeakFlops(const runtime::DeviceDescription& device) const override;

 private:
  libs::AttentionDesc desc_;
  std::array<BufferSlice, 6> in_;
  std::array<BufferSlice, 3> out_;
  std::unique_ptr<GpuThunk> fallback_;
  bool use_fallback_ = false;
  std::unique_ptr<libs::CudnnAttentionBackwardPlan> plan_;
};

class SortThunk : public GpuThunk {
 public:
  // Keys from `key_in` to `key_out`; `values_in[i]` permuted into `values_out[i]`; the
  // permutation written to `indices_out` when it is valid (desc.index_type set).
  SortThunk(std::string name, libs::SortDesc desc, BufferSlice key_in, BufferSlice key_out,
            std::vector<BufferSlice> values_in, std::vector<BufferSlice> values_out, BufferSlice indices_out);
  Status Initialize(const ThunkInitParams& params) override;
  Status Execute(const ThunkExecuteParams& params) const override;
  uint64_t workspace_bytes() const override;
  std::string ToString() const override;

 private:
  libs::SortDesc desc_;
  BufferSlice key_in_, key_out_;
  std::vector<BufferSlice> values_in_, values_out_;
  BufferSlice indices_out_;
  std::unique_ptr<libs::SortPlan> plan_;
};

// The sort of `instr` (sort, topk, or the TopK custom call) as a SortThunk, or Unimplemented
// when the sort kernels cannot run it (multi-key comparators, a sort dimension that is not the
// minor one, unsupported key types).
// `inputs`: one slice per operand; `outputs`: one per array leaf of the result.
StatusOr<std::unique_ptr<GpuThunk>> MakeSortThunk(const HloInstruction& instr, const std::vector<BufferSlice>& inputs,
                                                  const std::vector<BufferSlice>& outputs);

// Whether MakeSortThunk takes `instr` (the library sort applies); otherwise the GPU compiler
// runs the sort as a generated comparison-sort kernel (codegen/emit_sort.cc) when it can.
bool LibrarySortApplies(const HloInstruction& instr);

class FftThunk : public GpuThunk {
 public:
  FftThunk(std::string name, libs::FftDesc desc, BufferSlice input, BufferSlice output);
  Status Initialize(const ThunkInitParams& params) override;
  Status Execute(const ThunkExecuteParams& params) const override;
  uint64_t workspace_bytes() const override;

 private:
  libs::FftDesc desc_;
  BufferSlice input_, output_;
  std::shared_ptr<libs::FftPlan> plan_;
};

StatusOr<libs::FftDesc> MakeFftDesc(const HloInstruction& fft);

}  // namespace kiln::cuda
