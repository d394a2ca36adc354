// Collective lowering shared by the GPU compilers -- cuda/compiler on NCCL and rocm/compiler on
// RCCL, which is NCCL's API under NCCL's names (the same entry points, data types and reduction
// operators) -- so that both read a collective the same way: which instructions become
// collective thunks, whether the library reduces an all-reduce / reduce-scatter by itself, and
// the device kernels of what it cannot do alone, in either dialect (DeviceSpec::dialect). The
// facts about the instruction itself (sync opcode, wrapped op, dimension, pairs) are
// eval/collective_ops.h's. Moved here from cuda/compiler/collective_kernels.h and
// collective_thunks.h when the rocm compiler came to lower collectives (docs/rocm.md).
//
// Note [Reductions NCCL lacks]
//   NCCL (and RCCL) reduce with sum / product / min / max on their own element types only. Any
//   other all-reduce or reduce-scatter -- a reduction computation that is not one add / multiply
//   / minimum / maximum of its parameters (what JAX emits for a custom reducer), a type NCCL does
//   not reduce (s16, u16, f8, s4, complex products) -- gathers every member's operand to every
//   rank in rank order (ncclAllGather into the workspace) and then combines on the device:
//   `kiln_combine_<k>` (operand k) folds out[i] = f(...f(f(x_0[i], x_1[i]), x_2[i])...,
//   x_{n-1}[i]) with f the reduction computation compiled to a device function by codegen's
//   KernelSource (the same code the fusions' reducers get), in rank order: the evaluator's
//   result, element for element. A reduce-scatter folds only its own chunk. The workspace
//   holds n (at most the largest group the compile's grid allows) copies of the operand.
//
// Note [Ragged all-to-all on NCCL]
//   NCCL has no ragged primitive, and a grouped ncclSend/ncclRecv needs the sizes on the host,
//   which would end every CUDA graph at the op. Instead every rank gathers every member's input
//   and its input_offsets, send_sizes and output_offsets (four ncclAllGathers in one group) and
//   `kiln_ragged` copies the rows on the device: block (s, u) of the grid copies the rows that
//   member s sends this rank as its update u (its entry rank * k + u) from the gathered input to
//   the output at the sender's output offset. The result starts as the `output` operand. An
//   update outside the input or the output is skipped (the evaluator reports it; XLA leaves it
//   undefined). Costs n times the input in workspace and traffic: correct and graph-friendly, not
//   a fast all-to-all.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/codegen/device_spec.h"
#include "kiln/hlo/instruction.h"

namespace kiln::codegen {

// Whether the NCCL API (NCCL, RCCL) reduces elements of `type`: s8, u8, s32, u32, s64, u64, f16,
// f32, f64, bf16, and pred as u8 (and = min, or = max).
bool NcclApiReducesType(PrimitiveType type);

// Whether the library itself reduces all-reduce / reduce-scatter `op_instr` (one add / multiply
// / min / max of its parameters on a type it reduces; complex sums as pairs of reals); otherwise
// its thunk gathers and combines (Note [Reductions NCCL lacks]).
bool NcclReduces(const HloInstruction& op_instr);

// Whether a GPU compiler runs `instr` as a collective thunk (or its -done as a collective-done
// thunk); Unimplemented saying why not otherwise (the compiler then falls back to the host
// evaluator, which serves one-member groups only).
Status CollectiveThunkApplies(const HloInstruction& instr);
bool IsCollectiveThunkOp(const HloInstruction& instr);  // the opcodes considered at all
bool IsCollectiveDoneOp(const HloInstruction& instr);   // -done, async-done, send-done, recv-done

struct CollectiveKernelSource {
  std::string name;  // program name ("kiln_combine_all-reduce.3.cu" / ".hip")
  std::string source;
  std::vector<std::pair<std::string, std::string>> headers;  // the dialect's prelude
};

// The kernels collective `op` (the synchronous op; an async-start's wrapped root) needs, in
// `dialect`, or nullopt when the library does it all. `device_reduction`: an all-reduce /
// reduce-scatter whose reduction the library cannot do (Note [Reductions NCCL lacks]).
// Unimplemented when the reduction computation has no device form.
StatusOr<std::optional<CollectiveKernelSource>> CollectiveKernelsFor(const HloInstruction& op, bool device_reduction,
                                                                     GpuDialect dialect = GpuDialect::kCuda);

// kiln_combine_<k>(const S* all, S* out, long long count, long long stride, long long offset,
// int n): out[i] = fold over r < n of all[r * stride + offset + i], i < count.
std::string CombineEntry(int64_t operand);
// kiln_ragged(const u8* inputs, long long input_bytes, const I* input_offsets, const I* sizes,
// const I* output_offsets, long long entries, u8* out, int n, int per, int rank, long long
// input_rows, long long output_rows, long long row_bytes): grid (x, n * per).
inline constexpr const char* kRaggedEntry = "kiln_ragged";

}  // namespace kiln::codegen
