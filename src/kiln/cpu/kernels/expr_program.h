// ExprProgram: a fused elementwise/shape-op computation compiled once into a flat list of typed
// block operations (internal to src/kiln/cpu/kernels).
//
// Note [Block expression programs]
//   A program computes the values of some "root" instructions of an HLO graph at every position
//   of a loop space (a row-major iteration over `loop_dims`), a block of positions at a time:
//   EvalBlock(start, n) produces, for each root, n values in a contiguous typed array (the
//   block's temporaries live in a per-thread Scratch of a few L1/L2-sized arrays, so every op is
//   a simple typed loop the compiler vectorizes).
//
//   Which element of a node a block position reads is described by an index map, evaluated
//   per block as a list of runs {pos, len, base, stride}: positions pos..pos+len-1 of the block
//   hold the node's elements at linear (row-major) indices base, base+stride, ... The loop
//   space itself is one run {0, n, start, 1}. Shape ops derive their operand's runs from their
//   own: reshape/bitcast/copy keep the linear index (no work at all); broadcast, transpose,
//   slice, reverse, dynamic-slice, pad and concatenate decompose each run into pieces that move
//   along one dimension of their own shape (splitting at carries) and map each piece
//   analytically. So a same-shape elementwise chain reads each input as one run per block (a
//   pointer into the input, no copy), a row-vector broadcast reads one contiguous run per row,
//   a column broadcast one splat run per row, a transpose one strided run per row, and any
//   other combination is still correct, at worst with runs of one element.
//   pad and concatenate evaluate their operands at every block position (positions outside an
//   operand's runs compute garbage that is never selected) and then select per run.
//
//   Values that do not depend on the position -- everything under a broadcast of a rank-0
//   operand, dynamic-slice start indices, scalar constants -- are "invariant": they are computed
//   once per Run (Prepare, on one element) and splatted once per Scratch.
//
//   Element semantics are the reference evaluator's (its element functors from
//   eval/elementwise_ops.h are called directly), so integer results agree bit for bit and
//   floating-point ones are computed exactly as the evaluator does, op by op.
//
// Thread safety: a compiled program is immutable; Prepare and EvalBlock may run concurrently
// (each thread with its own Scratch).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/hlo/instruction.h"

namespace kiln::cpu::internal {

struct ExprOp;
struct ExprMap;
class ExprProgram;

// Returns the input index a node's value is read from, or -1 when the node is computed.
using LeafResolver = std::function<int(const HloInstruction*)>;

// The per-Run values of a program (invariants, dynamic-slice starts). Made by Prepare.
class ExprRunState {
 public:
  ExprRunState() = default;

 private:
  friend class ExprProgram;
  friend struct ExprExec;
  std::span<const void* const> inputs_;
  std::vector<uint8_t> storage_;   // invariant values, 16 bytes each
  std::vector<void*> ptrs_;        // per value id (invariant values only)
};

// Defined before ExprScratch, whose inline destructor destroys a vector of them (clang rejects
// an incomplete element type there).
struct ExprRun {
  int32_t pos;
  int32_t len;
  int64_t base;
  int64_t stride;
};

// Per-thread block temporaries. Made by NewScratch; reused for every block of one thread.
// Its allocations go back to a per-thread cache when it is destroyed, and the next NewScratch
// of the same program on that thread takes them (Note [Recycled scratch], expr_exec.cc).
class ExprScratch {
 public:
  ExprScratch() = default;
  ExprScratch(ExprScratch&& other) noexcept { *this = std::move(other); }
  ExprScratch& operator=(ExprScratch&& other) noexcept;
  ~ExprScratch() { Recycle(); }

 private:
  friend class ExprProgram;
  friend struct ExprExec;
  void Recycle();
  uint64_t program_id_ = 0;  // 0: not recycled
  const ExprRunState* state_ = nullptr;
  std::vector<uint8_t> storage_;
  std::vector<void*> ptrs_;       // per value id (block values: current pointers)
  std::vector<void*> buffers_;    // per value id: its own buffer (nullptr when none)
  std::vector<std::vector<ExprRun>> runs_;  // per map id
  std::vector<uint8_t> uniform_;  // per value id: Note [Uniform block values] (expr_exec.cc)
};

class ExprProgram {
 public:
  struct Options {
    int64_t block_elements = 2048;
    // Fuse chains of elementwise ops into one block op (Note [Fused op chains] in
    // expr_compile.cc; CpuKernelOptions::expr_chains). Default true.
    bool fuse_chains = true;
  };

  // Compiles the computation of `roots` (array-shaped instructions of one computation; nodes
  // for which `leaves` returns an input index are read from that input instead of computed).
  // The loop space is `loop_dims`; root r's value at loop multi-index i is its element at index
  // j with j[root_perm[k]] = i[k] (root_perm empty: the identity, loop_dims == root dims).
  // Every root must have the same dimensions. Unimplemented for ops the program cannot compute
  // (the caller then uses another kernel).
  static StatusOr<std::unique_ptr<ExprProgram>> Compile(
      std::span<const HloInstruction* const> roots, std::vector<int64_t> loop_dims,
      std::vector<int64_t> root_perm, const LeafResolver& leaves, const Options& options);

  ~ExprProgram();

  // Evaluates the invariant values for one run over `inputs` (the kernel's input arrays, indexed
  // as LeafResolver numbers them). `inputs` must outlive the returned state.
  StatusOr<ExprRunState> Prepare(std::span<const void* const> inputs) const;

  // Temporaries for one thread, with the splatted invariants of `state` filled in.
  ExprScratch NewScratch(const ExprRunState& state) const;

  // Evaluates every root at loop positions [start, start + n), 0 < n <= block_elements().
  // results[r] receives a pointer to root r's n values (valid until the next call with this
  // scratch). Where dest[r] is non-null (dest may be empty), root r's values are written to
  // dest[r] instead and results[r] == dest[r].
  void EvalBlock(ExprScratch& scratch, int64_t start, int64_t n, std::span<void* const> dest,
                 std::span<const void*> results) const;

  int64_t block_elements() const { return block_; }
  const std::vector<int64_t>& loop_dims() const { return loop_dims_; }
  int64_t loop_elements() const { return loop_elements_; }
  int num_roots() const { return static_cast<int>(root_values_.size()); }
  PrimitiveType root_type(int r) const;
  // Number of block ops (for kernel names and tests).
  int64_t num_ops() const;
  // Estimated work per loop position, in units of about one simple elementwise op over one
  // element (Note [Parallel grain], common.h): 1 per computed value plus the output, 4 per
  // transcendental, 8 per op computed element by element through the evaluator.
  int64_t work_per_element() const { return work_per_element_; }
  // Human-readable op list (tests, debugging).
  std::string ToString() const;

 private:
  friend struct ExprCompiler;
  friend struct ExprExec;
  ExprProgram() = default;

  uint64_t id_ = 0;  // unique per program in this process (scratch recycling)
  int64_t block_ = 2048;
  std::vector<int64_t> loop_dims_;
  int64_t loop_elements_ = 1;
  int num_inputs_ = 0;
  std::vector<std::unique_ptr<ExprMap>> maps_;
  std::vector<ExprOp> invariant_ops_;  // once per Run, one element
  std::vector<ExprOp> splat_ops_;      // once per Scratch
  std::vector<ExprOp> block_ops_;      // per block
  // Values: element type, width, whether invariant, and (block values) the buffer they use.
  std::vector<PrimitiveType> value_types_;
  std::vector<bool> value_invariant_;
  std::vector<int> value_buffer_;            // block values: buffer index, -1 none
  std::vector<int64_t> buffer_offsets_;      // byte offset of each buffer in the scratch
  int64_t scratch_bytes_ = 0;
  std::vector<int> root_values_;
  std::vector<int> root_block_values_;  // the block value holding each root (splat if invariant)
  std::vector<bool> root_direct_;       // the root's block op may write into a destination
  int64_t num_values_ = 0;
  int64_t work_per_element_ = 1;
  // Runs of the block maps for every block [b * block_, ...) (Note [Precomputed block runs],
  // expr_exec.cc): map m's runs for block b are pre_runs_[pre_offset_[k] .. pre_offset_[k+1])
  // with k = pre_slot_[m] * pre_blocks_ + b; pre_slot_[m] < 0 (or pre_blocks_ == 0): computed.
  int64_t pre_blocks_ = 0;
  std::vector<int> pre_slot_;
  std::vector<uint32_t> pre_offset_;
  std::vector<ExprRun> pre_runs_;
  void PrecomputeBlockRuns();
};

}  // namespace kiln::cpu::internal
