// Fused attention on the GPU: softmax(scale * q·kᵀ masked) · v in one kernel, never writing the
// [q_len, kv_len] scores to memory, with kiln's own NVRTC-compiled flash-attention kernel
// (attention_kernels.cc).
//
//   KILN_ASSIGN_OR_RETURN(auto plan, AttentionPlan::Create(desc, device, config));  // Initialize
//   KILN_RETURN_IF_ERROR(plan->Run(q, k, v, out, stream));                          // Execute
//
// Problem. For every batch index b (up to three batch dimensions) and query row i:
//   s_j   = scale * sum_d q[b,i,d] * k[b,j,d]        (f32 products of bf16/f16 inputs)
//   s_j  += bias_scale * bias[b,i,j]                 (optional additive bias, any float type)
//   s_j   = -inf where the mask drops (i, j): causal drops j > i + causal_offset; with a data
//           mask (mask[b,i,j] == 0 drops too) a dropped score is mask_fill instead, and every
//           k/v tile is processed (Note [Attention bias and masks] in passes/attention_rewriter.h)
//   out[b,i,:] = sum_j softmax(s)_j * v[b,j,:]       (f32 softmax and accumulation)
// Operands and the output are strided views (AttentionDesc::Operand): any batch and row strides
// in elements, the head dimension contiguous. That is how the compiler hands over q, k and v
// slices of a fused qkv projection, or heads that sit in the middle of [batch, seq, heads, dim].
//
// Algorithm (FlashAttention-2): one thread block per (batch, tile of 16*warps query rows);
// warps own 16 rows each; k/v tiles of block_n rows stream through shared memory (cp.async, an
// XOR-swizzled layout for ldmatrix), q·kᵀ and p·v on tensor cores (mma.sync m16n8k16, f32
// accumulators, sm_80 and newer), the softmax online (running max and sum per row, rescaling
// the accumulator), probabilities rounded to the input type for p·v as in the HLO
// JAX writes. Causal tiles above the diagonal are skipped, and the longest query tiles are
// scheduled first.
//
// Configs (AttentionKernelConfig): warps per block (4 or 8), query rows per warp (16 or 32: a
// warp's k/v fragments then serve two m16 tiles, halving shared-memory reads) and the k/v tile
// (64 or 128 rows); AttentionConfigs lists those that fit in registers without spilling (ptxas
// on sm_90), for the autotuner.
//
// Errors: Unimplemented at Create for what the kernel does not take (types other than bf16/f16,
// head dims other than 64 and 128, strides or offsets not multiples of 8 elements, sm < 80,
// a negative causal offset, a scale that is not positive); InvalidArgument for malformed descriptors.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/cuda/cuda_device.h"
#include "kiln/cuda/nvrtc_compiler.h"
#include "kiln/hlo/types.h"
#include "kiln/runtime/stream.h"

namespace kiln::cuda::libs {

inline constexpr int kAttentionMaxBatchDims = 3;

struct AttentionDesc {
  // Where element [b0, b1, b2, row, d] of an operand lives, in elements from the start of its
  // buffer: offset + b0*batch[0] + b1*batch[1] + b2*batch[2] + row*row + d.
  struct Operand {
    int64_t offset = 0;
    int64_t batch[kAttentionMaxBatchDims] = {0, 0, 0};
    int64_t row = 0;
    int64_t element = 1;  // the head dim's stride: 1, except for a backward's gradients
  };
  PrimitiveType type = PrimitiveType::kBF16;  // q, k, v and the output: bf16 or f16
  int64_t batch[kAttentionMaxBatchDims] = {1, 1, 1};
  int64_t q_len = 0, kv_len = 0, head_dim = 0;
  Operand q, k, v, out;
  double scale = 1.0;
  bool causal = false;
  int64_t causal_offset = 0;  // keep key j for query i iff j <= i + causal_offset
  // Backward problems (CudnnAttentionBackwardPlan) only: dO (an input with q's rows) and the
  // gradients' views, dQ = scale dS·K, dK = scale dSᵀ·Q, dV = Pᵀ·dO (attention_rewriter.h).
  bool backward = false;
  Operand d_out, dq, dk, dv;
  // Statistics (Note [Attention statistics] in passes/attention_rewriter.h): a forward also
  // writes each row's log-sum-exp of its scaled scores (f32) at `lse`; a backward reads them and
  // the forward's output at `o` instead of running the forward again. cuDNN only.
  bool stats = false;
  Operand lse, o;
  // Note [Attention bias and masks]: `bias` and `mask` are views [b..., row, key] whose
  // `element` is the key's stride (any strides, zero where they broadcast); the flash kernel
  // only. mask elements are pred bytes.
  bool has_bias = false;
  PrimitiveType bias_type = PrimitiveType::kF32;
  Operand bias;
  double bias_scale = 1.0;
  bool has_mask = false;
  Operand mask;
  double mask_fill = -1e30;

  int64_t batch_count() const { return batch[0] * batch[1] * batch[2]; }
  // Buffer elements an operand's view reaches (the largest index + 1).
  int64_t ExtentOf(const Operand& o, int64_t rows) const;
  // FLOPs of the two products (causal: the kept half).
  double Flops() const;
  std::string ToString() const;
};

struct AttentionKernelConfig {
  int warps = 4;     // warps per block
  int mt = 1;        // m16 tiles of query rows per warp: a block owns 16 * mt * warps rows
  int block_n = 64;  // k/v rows per tile
  std::string ToString() const;  // "w4.m1.n64"
  static StatusOr<AttentionKernelConfig> Parse(std::string_view text);
  bool operator==(const AttentionKernelConfig&) const = default;
};

// Unimplemented (with the reason) for problems the kernel does not run; OkStatus otherwise.
Status CheckAttentionSupported(const AttentionDesc& desc, int compute_capability_major);

// The configs worth measuring for `desc`, the default first.
std::vector<AttentionKernelConfig> AttentionConfigs(const AttentionDesc& desc);
AttentionKernelConfig DefaultAttentionConfig(const AttentionDesc& desc);

// The CUDA source of the kernel (compiled per type, head dim and config by macros) and the
// NVRTC request of one configuration (arch left at the request's default).
const char* AttentionKernelSource();
NvrtcRequest AttentionKernelRequest(const AttentionDesc& desc, const AttentionKernelConfig& config);

class AttentionPlan {
 public:
  static StatusOr<std::unique_ptr<AttentionPlan>> Create(const AttentionDesc& desc, CudaDevice& device,
                                                         const AttentionKernelConfig& config);
  // Enqueues the kernel; the buffers hold the operands' elements as AttentionDesc says.
  // `bias` and `mask`: the desc's bias and data mask buffers (ignored without them).
  Status Run(runtime::DeviceMemory q, runtime::DeviceMemory k, runtime::DeviceMemory v,
             runtime::DeviceMemory out, runtime::Stream& stream, runtime::DeviceMemory bias = {},
             runtime::DeviceMemory mask = {}) const;
  const AttentionDesc& desc() const { return desc_; }
  const AttentionKernelConfig& config() const { return config_; }

 private:
  AttentionPlan(AttentionDesc desc, AttentionKernelConfig config) : desc_(desc), config_(config) {}
  AttentionDesc desc_;
  AttentionKernelConfig config_;
  runtime::Kernel* kernel_ = nullptr;
  uint32_t shared_bytes_ = 0;
};

}  // namespace kiln::cuda::libs
