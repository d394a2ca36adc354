// The "fission" autotuning backend: a GEMM call whose epilogue the GEMM rewriter folded in
// (gemm_rewriter.h) measured split in two -- the plain GEMM on each cuBLASLt algorithm, then the
// epilogue as one generated elementwise kernel -- and, when that wins, rewritten so.
//
// What it takes. Every `__kiln$gemm` call (gemm_config.h) with an f32, bf16 or f16 result and
// an epilogue beyond alpha: a bias, an activation (relu, gelu) and/or a residual c (beta != 0),
// with row-major shapes and no control dependencies. alpha alone is not split: every GEMM scales for free, so a separate
// pass could only be slower. Convolution calls are not taken: cuDNN's own split fallback
// (libs/conv.h, ConvAlgorithm::split_epilogue: the unfused convolution plus kiln's epilogue
// kernel, listed by the `cudnn` backend) already measures the split for them.
//
// The split, for out = act(alpha * (lhs . rhs) + beta * c + bias) of type T:
//   t   = f32 GEMM: alpha * (lhs . rhs), no c, no bias, no activation (cuBLASLt, f32 output
//         even for bf16/f16 operands -- the accumulator is never rounded to T in between)
//   out = convert<T>(act(t + beta * f32(c) + broadcast(f32(bias)))), one kLoop fusion
// which computes what the fused call computes in the same precision (f32 throughout, one
// rounding to T at the end), so the backend cannot produce wrong results any more than the
// fused path: it is trusted (CanProduceWrongResults false). The price is the f32 intermediate
// (batch * m * n * 4 bytes, counted as the candidate's scratch) and one more pass over it.
//
// The pattern the rewriter refuses -- a bf16/f16 bias add after a bf16/f16 GEMM, kept out of
// the fused path because the HLO rounds the product to bf16 before adding -- is already a GEMM
// followed by an elementwise fusion after the fusion pass; fission has nothing to add there
// (and must not: its f32 intermediate would skip the rounding the HLO asks for).
//
// Configs: the plain GEMM's cuBLASLt algorithm, the same params as a `cublaslt` config
// ({"index", "opaque", "workspace", "waves", "desc"}), one per algorithm the heuristic returns
// for the epilogue-free problem (16; 128 exhaustive; without split-K when deterministic). The
// heuristic needs a device: without one nothing is listed (as for cublaslt).
//
// Compile builds the epilogue fusion in a scratch module, emits its kernel with the emitter's
// default launch configuration, compiles it with NVRTC (once per distinct kernel source, shared
// by the candidates) and returns a candidate that runs the GEMM into the f32 intermediate (in
// its scratch, after the GEMM's workspace) and then the kernel into the output: the profiler
// times and checks both as one.
//
// Apply rewrites the module around the call (SplitGemmEpilogue): a new plain f32 GEMM call
// carrying the chosen algorithm as a `cublaslt` choice (which the GEMM thunk reads,
// TunedGemmAlgorithm), and the epilogue fusion reading it, c and bias; the old call's users
// read the fusion, and the old call is left dead for the DCE that follows the autotune pass
// (gpu_compiler.cc). Buffer assignment and thunk emission, which run after, see an ordinary
// GEMM call and an ordinary loop fusion.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "kiln/autotune/backend.h"
#include "kiln/codegen/device_spec.h"
#include "kiln/codegen/kernel_spec.h"
#include "kiln/cuda/nvrtc_compiler.h"
#include "kiln/cuda/libs/gemm_desc.h"

namespace kiln::cuda {

inline constexpr std::string_view kFissionBackend = "fission";

// Whether fission takes `instr` (see above); false for anything that is not a GEMM call.
bool FissionApplies(const HloInstruction& instr);

// The descriptor of the plain GEMM fission runs for `gemm` (FissionApplies): the call's
// descriptor without c, bias and activation, with an f32 result.
StatusOr<libs::GemmDesc> FissionGemmDesc(const HloInstruction& gemm, uint64_t min_alignment = 256);

// The epilogue kernel Compile runs for `gemm` (FissionApplies), emitted for `device` with the
// default launch configuration (no NVRTC, no device needed). Its kOperand parameters index the
// epilogue fusion's operands; `operand_roles` (may be null) receives, per operand, 0 for the
// GEMM's f32 intermediate, 1 for c, 2 for bias.
StatusOr<codegen::KernelSpec> FissionEpilogueKernel(const HloInstruction& gemm, const codegen::DeviceSpec& device,
                                                    std::vector<int>* operand_roles = nullptr);

// The rewrite of Apply: splits `gemm` (FissionApplies) into a plain f32 GEMM call whose
// backend_config carries `algorithm` (a `cublaslt` config, or a `fission` config, whose params
// are the same) and an epilogue fusion, which takes the call's place for all its users (and as
// root). Returns the fusion; `gemm` is left dead. FailedPrecondition for a call fission does not
// take, InvalidArgument for a malformed algorithm.
StatusOr<HloInstruction*> SplitGemmEpilogue(HloInstruction* gemm, const autotune::Config& algorithm);

// `device` (a CUDA device, or null: no listing, no Compile) and `nvrtc` must outlive the
// backend.
std::unique_ptr<autotune::Backend> CreateFissionBackend(codegen::DeviceSpec spec,
                                                        runtime::Device* device,
                                                        std::shared_ptr<NvrtcCompiler> nvrtc,
                                                        const autotune::BackendOptions& options);

}  // namespace kiln::cuda
