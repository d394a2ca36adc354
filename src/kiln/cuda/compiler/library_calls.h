// The GPU compiler's library calls (__kiln$gemm, __kiln$conv; gemm_config.h, conv_config.h)
// seen by the vendor-library layer, in one place for the thunks and the autotuning backends
// (cuda/autotune/cuda_backends.h, which include it from the room above):
//   - the library descriptors of a call (GemmDescForCall, ConvDescForCall);
//   - the autotuner's configs of the library backends, both ways: an algorithm as a Config
//     (what the backends list and the cache stores) and a Config as the algorithm a thunk runs
//     (GemmAlgorithmFromConfig, ConvAlgorithmFromConfig);
//   - the choice the autotuner wrote into a call (TunedGemmAlgorithm, TunedConvAlgorithm).
//
// Config params:
//   cublas    {"algo": cublasGemmAlgo_t value}
//   cublaslt  {"index", "opaque" (8 words of cublasLtMatmulAlgo_t), "workspace", "waves", "desc"}
//   cudnn     {"index", "algo", "math_type", "workspace", "deterministic", "tensor_ops",
//              "split_epilogue", "desc"}
// Malformed params are InvalidArgument naming the config; nothing throws.
#pragma once

#include <optional>

#include "kiln/autotune/backend.h"
#include "kiln/autotune/config.h"
#include "kiln/base/status.h"
#include "kiln/cuda/libs/attention.h"
#include "kiln/cuda/libs/conv.h"
#include "kiln/cuda/libs/conv_desc.h"
#include "kiln/cuda/libs/gemm.h"
#include "kiln/cuda/libs/gemm_desc.h"
#include "kiln/hlo/instruction.h"
#include "kiln/passes/attention_rewriter.h"

namespace kiln::cuda {

inline constexpr std::string_view kCublasBackend = "cublas";
inline constexpr std::string_view kCublasLtBackend = "cublaslt";
inline constexpr std::string_view kCudnnBackend = "cudnn";
// kiln's flash-attention kernel: {"config": "w4.n128"} (libs::AttentionKernelConfig).
inline constexpr std::string_view kFlashAttentionBackend = "flash";
// cuDNN's SDPA: {"plan": index in the frontend's heuristic list, -1 its first that builds}.
inline constexpr std::string_view kCudnnSdpaBackend = "cudnn_sdpa";

// The GemmDesc of a GEMM custom call whose buffers are all `min_alignment` bytes aligned (the
// autotuner's buffers are 256-aligned, the arena's slices usually are).
StatusOr<libs::GemmDesc> GemmDescForCall(const HloInstruction& gemm, uint64_t min_alignment = 256);
// The AttentionDesc of a matched attention (passes/attention_rewriter.h): its views with at most
// three batch dimensions (adjacent ones merged where every view allows), the head dimension
// contiguous. Unimplemented for what the fused kernel cannot take (CheckAttentionSupported).
StatusOr<libs::AttentionDesc> AttentionDescForConfig(const AttentionConfig& config, int compute_capability_major);
StatusOr<libs::AttentionDesc> AttentionDescForCall(const HloInstruction& call, int compute_capability_major);
// The ConvDesc of a convolution custom call.
StatusOr<libs::ConvDesc> ConvDescForCall(const HloInstruction& conv);

autotune::Config GemmAlgorithmToConfig(const libs::GemmAlgorithm& a);
autotune::Config ConvAlgorithmToConfig(const libs::ConvAlgorithm& a);
// A cublas or cublaslt config as the algorithm for `desc` (a cublas config's workspace is
// desc.max_workspace_bytes, as cuBLAS may use up to its workspace).
StatusOr<libs::GemmAlgorithm> GemmAlgorithmFromConfig(const autotune::Config& config,
                                                      const libs::GemmDesc& desc);
StatusOr<libs::ConvAlgorithm> ConvAlgorithmFromConfig(const autotune::Config& config);

// The algorithm the autotuner chose for `gemm` (its backend_config's "autotune" field), for the
// thunk running it with `desc`. nullopt: no choice was written, or it cannot be honoured here
// (a cuBLASLt algorithm tuned on 256-aligned buffers while desc allows less alignment: the
// heuristic then picks again). Errors: a malformed choice, a choice of a non-GEMM backend.
StatusOr<std::optional<libs::GemmAlgorithm>> TunedGemmAlgorithm(const HloInstruction& gemm,
                                                                const libs::GemmDesc& desc);
autotune::Config AttentionKernelConfigToConfig(const libs::AttentionKernelConfig& c);
StatusOr<libs::AttentionKernelConfig> AttentionKernelConfigFromConfig(const autotune::Config& config);
// What the autotuner chose for an attention call: the flash kernel in a config, or a cuDNN SDPA
// plan (nullopt: nothing written; the thunk runs the flash kernel's default).
struct AttentionChoice {
  bool cudnn = false;
  libs::AttentionKernelConfig flash;
  int64_t cudnn_plan = -1;
};
autotune::Config CudnnSdpaPlanToConfig(int64_t plan);
StatusOr<std::optional<AttentionChoice>> TunedAttentionChoice(const HloInstruction& call);
// The same for a convolution call (cudnn).
StatusOr<std::optional<libs::ConvAlgorithm>> TunedConvAlgorithm(const HloInstruction& conv);

}  // namespace kiln::cuda
