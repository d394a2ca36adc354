// Kernel families of the CPU backend (internal to src/kiln/cpu): one factory per family;
// CreateCpuKernel (kernel.cc) picks the family for an instruction.
//
// Each factory returns Unimplemented when it does not cover the instruction (an op outside
// the family's fast forms); CreateCpuKernel then falls back to the evaluator kernel, except for
// hot-path opcodes, whose factories cover every valid instruction.
#pragma once

#include <memory>

#include "kiln/base/status.h"
#include "kiln/cpu/kernel.h"
#include "kiln/passes/attention_rewriter.h"
#include "kiln/cpu/kernels/expr_program.h"

namespace kiln::cpu::internal {

// The instructions a loop program computes and where their leaves come from: for a fusion,
// the fused computation's root(s) with fused parameters read from inputs; for a single
// instruction, the instruction with its operands read from inputs.
struct LoopRoots {
  std::vector<const HloInstruction*> roots;
  LeafResolver leaves;
};
LoopRoots RootsOf(const HloInstruction& instr);

// kLoop fusions (one or several outputs of equal dimensions) and standalone elementwise and
// shape ops (broadcast, reshape, transpose, slice, pad, concatenate, reverse, iota, convert,
// copy, dynamic-slice, ...): one block expression program over the output elements.
StatusOr<std::unique_ptr<CpuKernel>> CreateLoopKernel(const HloInstruction& instr,
                                                      const CpuKernelOptions& options);

// dynamic-update-slice, alone or as the root of a kLoop fusion (its update computed by a
// block expression program); in place when the output aliases the updated operand.
StatusOr<std::unique_ptr<CpuKernel>> CreateDynamicUpdateSliceKernel(const HloInstruction& instr,
                                                                    const CpuKernelOptions& options);

// reduce, alone or as the root (or tuple root with loop outputs) of a kInput fusion.
StatusOr<std::unique_ptr<CpuKernel>> CreateReduceKernel(const HloInstruction& instr,
                                                        const CpuKernelOptions& options);

// reduce-window, standalone, any window and reducer that is a scalar computation
// (kernels/reduce_window.cc, Note [Reduce-window kernel]).
StatusOr<std::unique_ptr<CpuKernel>> CreateReduceWindowKernel(const HloInstruction& instr,
                                                              const CpuKernelOptions& options);
// select-and-scatter with scalar select and scatter computations (kernels/reduce_window.cc).
StatusOr<std::unique_ptr<CpuKernel>> CreateSelectAndScatterKernel(const HloInstruction& instr,
                                                                  const CpuKernelOptions& options);

// bitcast-convert between element types of different widths (kernels/bitcast_convert.cc);
// equal widths are loop kernels.
StatusOr<std::unique_ptr<CpuKernel>> CreateBitcastConvertKernel(const HloInstruction& instr,
                                                                const CpuKernelOptions& options);

// cholesky, triangular-solve and JAX's LAPACK / cuSOLVER / hipSOLVER linear-algebra custom
// calls on Eigen (kernels/linalg.cc, Note [Linear-algebra kernels]). IsNativeLinalg: the
// custom-call targets (and ops) it takes.
bool IsNativeLinalg(const HloInstruction& instr);
StatusOr<std::unique_ptr<CpuKernel>> CreateLinalgKernel(const HloInstruction& instr,
                                                        const CpuKernelOptions& options);

// A standalone transpose (cache-blocked tiles).
StatusOr<std::unique_ptr<CpuKernel>> CreateTransposeKernel(const HloInstruction& instr,
                                                           const CpuKernelOptions& options);

// dot (Eigen tensor contraction).
StatusOr<std::unique_ptr<CpuKernel>> CreateDotKernel(const HloInstruction& instr,
                                                     const CpuKernelOptions& options);

// convolution (im2col + Eigen GEMM; direct depthwise).
StatusOr<std::unique_ptr<CpuKernel>> CreateConvolutionKernel(const HloInstruction& instr,
                                                             const CpuKernelOptions& options);

// gather and scatter.
StatusOr<std::unique_ptr<CpuKernel>> CreateGatherKernel(const HloInstruction& instr,
                                                        const CpuKernelOptions& options);
StatusOr<std::unique_ptr<CpuKernel>> CreateScatterKernel(const HloInstruction& instr,
                                                         const CpuKernelOptions& options);

// sort and topk.
StatusOr<std::unique_ptr<CpuKernel>> CreateSortKernel(const HloInstruction& instr,
                                                      const CpuKernelOptions& options);
StatusOr<std::unique_ptr<CpuKernel>> CreateTopKKernel(const HloInstruction& instr,
                                                      const CpuKernelOptions& options);

// Fused attention (the __kiln$attention call, kernels/attention.cc): f32 flash attention over
// the call's strided views. CpuAttentionSupported: what it takes (the CPU matcher's predicate).
StatusOr<std::unique_ptr<CpuKernel>> CreateAttentionKernel(const HloInstruction& instr,
                                                           const CpuKernelOptions& options);
bool CpuAttentionSupported(const AttentionConfig& config);
// Its backward (the __kiln$attention_backward call, kernels/attention_backward.cc): f32
// FlashAttention-2 backward in two passes over tiles. CpuAttentionBackwardSupported: what it
// takes (the CPU backward matcher's predicate).
StatusOr<std::unique_ptr<CpuKernel>> CreateAttentionBackwardKernel(const HloInstruction& instr,
                                                                   const CpuKernelOptions& options);
bool CpuAttentionBackwardSupported(const AttentionConfig& config);

// rng-bit-generator (the evaluator's bit streams, eval/rng_bits.h, in parallel).
StatusOr<std::unique_ptr<CpuKernel>> CreateRngBitGeneratorKernel(const HloInstruction& instr,
                                                                 const CpuKernelOptions& options);

// fft: FFT, IFFT, RFFT, IRFFT over 1-3 trailing dimensions, c64/c128 (Eigen's FFT module).
StatusOr<std::unique_ptr<CpuKernel>> CreateFftKernel(const HloInstruction& instr,
                                                     const CpuKernelOptions& options);

// all-reduce (add/multiply/min/max), all-gather, reduce-scatter, all-to-all,
// collective-permute and their -start forms, replica-id, partition-id (kernels/collectives.cc).
StatusOr<std::unique_ptr<CpuKernel>> CreateCollectiveKernel(const HloInstruction& instr,
                                                            const CpuKernelOptions& options);

}  // namespace kiln::cpu::internal
