// RocmExecutor: a compiled module's thunks (RocmCompiledModule::thunks) as a program over the
// neutral runtime interfaces -- runtime::Device (code objects through LoadModule with
// ModuleSpec::FromHsaco), runtime::Stream (launches, copies), runtime::Allocator (per-run
// memory) -- in the spirit of the cuda executable (a sequence per computation, host-driven
// control flow), written for the rocm compiler's thunks.
//
// Note [ROCm executor]
//   NEVER EXECUTED: no AMD GPU exists on kiln's machines (Note [Untested ROCm execution] in
//   rocm/rocm_device.h). Create builds the plan without a device -- every step's buffer slices
//   resolved from the buffer assignment, which rocm_compiler_test checks -- and Initialize /
//   Execute are compiled and reviewed, never run. What a plan step does:
//     kernel          in-place outputs first get their operand's bytes (KernelSpec::in_place),
//                     then every launch of the kernel with its parameters' slices, the shared
//                     scratch and its scalars, from the kernel's code object;
//     while           the WhileCopyPlan's init copies, then condition -> predicate byte read on
//                     the host -> body -> ForEachLoopStateCopy (passes/thunk_util.h) until false;
//     conditional     the index read on the host, SelectConditionalBranch, the operand copied
//                     into the branch's parameter and the branch's root into the result where
//                     their slices differ;
//     call            the same copies around the callee's sequence;
//     gemm            a canonical dot (passes/dot_canonicalizer.h: [B,] M x K times [B,] K x N,
//                     row-major) as rocblas_gemm_ex / rocblas_gemm_strided_batched_ex on the
//                     stream (rocblas_set_stream), row-major as the column-major D^T = B^T A^T:
//                     m = N, n = M, lda = N, ldb = K, ldd = N; f16 / bf16 (f32 accumulation,
//                     f16 / bf16 / f32 results), f32, f64, c64, c128; the autotuner's rocBLAS
//                     solution index where it chose one (a hipBLASLt or fission choice runs
//                     rocBLAS' default);
//     host            the operands copied to host literals, the instruction evaluated by the
//                     reference evaluator (a one-instruction computation), the result copied
//                     back;
//     collective      one participant alone (a 1x1 grid, groups of one): the one-member result
//                     by copies (all-reduce, all-gather, reduce-scatter, all-to-all, broadcast,
//                     a permute to itself; a permute nobody sends to: zeros; replica-id and
//                     partition-id: 0), and its -done a copy where the slices differ.
//   Not implemented (unsupported() lists them and Initialize fails with Unimplemented naming
//   each): hipBLASLt GEMMs and dots rocBLAS does not take (integer, f8, other type pairs),
//   MIOpen convolutions, RCCL communicators (collectives of
//   several participants), send / recv, ragged-all-to-all and the tuple-shaped async starts.
#pragma once

#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/passes/buffer_assignment.h"
#include "kiln/rocm/compiler/rocm_compiler.h"
#include "kiln/runtime/allocator.h"
#include "kiln/runtime/device.h"
#include "kiln/runtime/module.h"
#include "kiln/runtime/stream.h"

namespace kiln::rocm {

class RocmExecutor {
 public:
  // The plan for `compiled`, which must outlive the executor. Internal for a slice the buffer
  // assignment lacks (a compiler bug).
  static StatusOr<std::unique_ptr<RocmExecutor>> Create(const RocmCompiledModule& compiled);
  ~RocmExecutor();

  // "gemm %d: rocBLAS calls are not implemented", one per step the executor cannot run.
  const std::vector<std::string>& unsupported() const { return unsupported_; }
  // One line per step: "fusion.3 [e]: kernel 0 (code object 0), args a0[0:1024) a2[0:4096) s64 8".
  std::string PlanListing() const;

  // Loads the code objects and looks up every launch's entry; uploads the constants.
  // Unimplemented naming unsupported() when it is not empty. Not thread-safe.
  Status Initialize(runtime::Device& device, runtime::Allocator& allocator);
  // Runs the entry computation on `stream`: `arguments` the entry parameters' array leaves in
  // order (parameter number, then ArrayLeafIndices), the result's leaves returned in new
  // memory of `allocator` (the caller frees them). Blocks until the stream is done.
  StatusOr<std::vector<runtime::DeviceMemory>> Execute(runtime::Stream& stream,
                                                       std::span<const runtime::DeviceMemory> arguments);

  struct Copy {
    BufferSlice src, dst;
  };
  struct KernelArg {
    enum class Kind { kSlice, kScratch, kScalar } kind = Kind::kSlice;
    BufferSlice slice;
    PrimitiveType scalar_type = PrimitiveType::kS64;
    int64_t scalar_value = 0;
  };
  struct Step {
    enum class Kind { kKernel, kGemm, kWhile, kConditional, kCall, kHost, kCollectiveAlone, kZero, kUnsupported };
    Kind kind = Kind::kKernel;
    const HloInstruction* instr = nullptr;
    // kKernel
    int kernel = -1;
    std::vector<KernelArg> args;
    // kGemm: rocBLAS' types (rocblas_datatype values), sizes, solution (0: the default); the
    // slices in `args`: lhs, rhs, result
    int a_type = 0, d_type = 0, compute_type = 0;
    int64_t batch = 1, m = 0, n = 0, k = 0;
    int64_t solution = 0;
    // kKernel (in place), kCall / kConditional (into the callee, per branch), kCollectiveAlone
    std::vector<Copy> before;
    // kCall / kConditional: the root into the result, per branch
    std::vector<std::vector<Copy>> after;
    std::vector<std::vector<Copy>> branch_before;
    std::vector<const HloComputation*> callees;  // while: {condition, body}; conditional: branches
    BufferSlice predicate;                        // while: the condition's root; conditional: the index
    PrimitiveType predicate_type = PrimitiveType::kPred;
    WhileCopyPlan loop;
    // kHost: per operand, its array leaves' slices; the result's leaves
    std::vector<std::vector<BufferSlice>> operand_leaves;
    std::vector<BufferSlice> result_leaves;  // also kZero: what is zeroed
    std::string note;                        // kUnsupported: why
  };

 private:
  explicit RocmExecutor(const RocmCompiledModule& compiled) : compiled_(compiled) {}
  Status Plan();
  StatusOr<Step> PlanStep(const RocmThunk& thunk, const HloInstruction& instr, int* next_kernel);
  Status RunSequence(const HloComputation* c, runtime::Stream& stream);
  Status RunStep(const Step& step, runtime::Stream& stream);
  Status RunCopies(std::span<const Copy> copies, runtime::Stream& stream);
  Status RunHost(const Step& step, runtime::Stream& stream);
  Status RunGemm(const Step& step, runtime::Stream& stream);
  runtime::DeviceMemory Memory(const BufferSlice& slice) const;

  const RocmCompiledModule& compiled_;
  std::map<const HloComputation*, std::vector<Step>> sequences_;
  std::vector<std::string> unsupported_;
  int64_t scratch_bytes_ = 0;
  // After Initialize
  runtime::Device* device_ = nullptr;
  runtime::Allocator* allocator_ = nullptr;
  std::vector<std::unique_ptr<runtime::Module>> modules_;       // per code object
  std::vector<std::vector<runtime::Kernel*>> launch_kernels_;  // per kernel, per launch
  std::map<int64_t, runtime::DeviceMemory> constants_;          // by allocation
  void* rocblas_ = nullptr;                                      // rocblas_handle, where a GEMM needs it
  // During Execute: every allocation's memory
  std::vector<runtime::DeviceMemory> bases_;
  runtime::DeviceMemory scratch_;
};

}  // namespace kiln::rocm
