// Sort and top-k on the GPU for HLO `sort` (along the minor dimension), `topk` and the TopK
// custom call, with kiln's own NVRTC-compiled kernels (sort_kernels.cc).
//
//   KILN_ASSIGN_OR_RETURN(auto plan, SortPlan::Create(desc, device));   // Initialize stage
//   ... allocate plan->workspace_bytes() ...
//   KILN_RETURN_IF_ERROR(plan->Run(buffers, workspace, stream));        // Execute stage
//
// Order. Keys compare in XLA's TOTALORDER: for floats
//     -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN
// (NaN payloads ordered by their bits), integers and pred by value. Descending is the exact
// reverse of that order. The sort is STABLE in both directions: equal keys keep their input
// order (so a descending sort is not the reverse of an ascending one). JAX's sort comparator
// first maps -0 to +0 and every NaN to +NaN; `canonicalize_floats` does the same, so -0/+0 tie
// (keeping input order) and every NaN sorts last in ascending order, first in descending.
//
// Values. Any number of extra arrays (XLA's other sort operands) are permuted like the keys,
// and the permutation itself can be written as s32/u32/s64 indices (argsort; the TopK indices).
// Only the keys decide the order (XLA comparators over one key operand; multi-key comparators
// need a composite key from the compiler, or a generated kernel).
//
// Top-k: with k > 0 only the first k elements of each sorted row are written (outputs are
// [rows, k]): TopK(largest=true) is a descending sort with k, largest=false an ascending one.
// Ties keep the lower index first, as XLA's TopK.
//
// Algorithms. Rows of up to 4096 elements are sorted by one thread block each in shared memory
// (a bitonic network on (key, original index) pairs, which makes it stable). Longer rows use a
// stable least-significant-digit radix sort over 8-bit digits (histogram, scan, scatter per
// digit: 1/2/4/8 passes for 8/16/32/64-bit keys) through global memory. Both produce the
// permutation; a gather kernel then writes keys, values and indices.
//
// Kernels are compiled by NVRTC for the device's architecture at Create (disk-cached); Run only
// launches. Errors: unsupported key types, rows longer than 2^31-1, more than 2^31-1 rows are
// Unimplemented at Create.
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

namespace kiln {
class HloComputation;
class HloInstruction;
}  // namespace kiln

namespace kiln::cuda::libs {

enum class SortOrder : uint8_t { kAscending, kDescending };

struct SortDesc {
  // pred, s8/s16/s32/s64, u8/u16/u32/u64, f16, bf16, f32, f64.
  PrimitiveType key_type = PrimitiveType::kF32;
  int64_t rows = 1;        // product of the dimensions before the sorted (minor) one
  int64_t row_length = 0;  // the sorted dimension
  SortOrder order = SortOrder::kAscending;
  bool canonicalize_floats = false;  // -0 -> +0, NaN -> +NaN before comparing (JAX's comparator)
  // Arrays permuted with the keys, each [rows, row_length] of its type (any array type whose
  // element is 1, 2, 4, 8 or 16 bytes).
  std::vector<PrimitiveType> value_types;
  // kInvalid: no index output; else kS32, kU32 or kS64.
  PrimitiveType index_type = PrimitiveType::kInvalid;
  int64_t k = 0;  // > 0: top-k, write only the first k of each row

  int64_t output_length() const { return k > 0 ? k : row_length; }
  std::string ToString() const;
};

// InvalidArgument / Unimplemented for descriptors the kernels cannot run.
Status ValidateSortDesc(const SortDesc& desc);

struct SortBuffers {
  runtime::DeviceMemory keys_in, keys_out;          // [rows, row_length] -> [rows, out_len]
  std::vector<runtime::DeviceMemory> values_in, values_out;  // one per value type
  runtime::DeviceMemory indices_out;                // when index_type is set
};

class SortPlan {
 public:
  static StatusOr<std::unique_ptr<SortPlan>> Create(const SortDesc& desc, CudaDevice& device);

  const SortDesc& desc() const { return desc_; }
  bool uses_radix() const { return radix_; }
  uint64_t workspace_bytes() const { return workspace_bytes_; }

  // Enqueues the sort. Outputs must not overlap any input (the final gather reads inputs while
  // writing outputs): sorting in place needs a copy first.
  Status Run(const SortBuffers& buffers, runtime::DeviceMemory workspace,
             runtime::Stream& stream) const;

 private:
  SortPlan(const SortDesc& desc, CudaDevice& device) : desc_(desc), device_(device) {}
  Status Build();

  SortDesc desc_;
  CudaDevice& device_;
  bool radix_ = false;
  int small_size_ = 0;  // padded (power of two) row length of the shared-memory path
  uint64_t workspace_bytes_ = 0;
  runtime::Kernel* small_ = nullptr;
  runtime::Kernel* init_ = nullptr;
  runtime::Kernel* hist_ = nullptr;
  runtime::Kernel* scan_ = nullptr;
  runtime::Kernel* scatter_ = nullptr;
  std::vector<runtime::Kernel*> gathers_;  // keys, then each value
  runtime::Kernel* indices_ = nullptr;
};

// ---- From HLO -------------------------------------------------------------------------------
//
// What a sort comparator says, when it is one strict order on one operand:
//     compare(k(p[2i]), k(p[2i+1])), direction=LT|GT [, type=TOTALORDER|FLOAT|SIGNED|UNSIGNED]
// where k is the identity or JAX's float canonicalization
//     select(compare(x, x), direction=NE, NaN, select(compare(x, 0), direction=EQ, 0, x))
// (in either nesting). LT with the lhs parameter first is ascending; GT, or the parameters
// swapped, descending. Float keys compared without TOTALORDER get canonicalize_floats (a plain
// float compare ties -0 and +0, and leaves NaN unordered, so any placement of NaN is allowed).
// Anything else -- multi-key comparators, tie-breaks on indices, arithmetic on the keys -- is
// Unimplemented with the reason: the compiler then builds a composite key or emits a kernel.
struct SortComparator {
  int64_t key_operand = 0;  // i: the operand whose parameters 2i, 2i+1 are compared
  SortOrder order = SortOrder::kAscending;
  bool canonicalize_floats = false;
};
// `key_type_hint` is used only when the comparator has too few parameters to tell the key type.
StatusOr<SortComparator> AnalyzeSortComparator(const HloComputation& comparator,
                                               PrimitiveType key_type_hint);

// How an HLO instruction maps onto a SortPlan: the descriptor plus which HLO operands feed
// SortBuffers and which results its outputs are. Result numbers are the instruction's tuple
// indices (a one-operand sort, whose result is not a tuple, has only result 0).
//   sort      keys = the operand the comparator compares; every other operand is a value,
//             except the first iota along the sorted dimension of type s32/u32/s64, which is
//             written as the permutation (index output) instead of being gathered (argsort).
//             All operands must share one layout, and the sorted dimension must be minor in it.
//   topk      (values, indices) = descending (largest=true) or ascending sort with k, total
//             order, s32 indices; the operand's last dimension must be minor.
//   custom-call "TopK" (XLA's TopkRewriter form): k from the result shape; the comparator (2 or
//             4 parameters; with 4 it must compare only the values) gives the order; without
//             one, largest first in total order.
struct SortFromHlo {
  SortDesc desc;
  int64_t key_operand = 0;
  std::vector<int64_t> value_operands;  // values_in[i] = operand value_operands[i]
  int64_t key_output = 0;               // result index of keys_out
  std::vector<int64_t> value_outputs;   // values_out[i] = result value_outputs[i]
  int64_t index_output = -1;            // result index of indices_out; -1: none
};
// InvalidArgument for malformed instructions, Unimplemented (with the reason) for well-formed
// ones the kernels cannot run as they are.
StatusOr<SortFromHlo> SortDescFromHlo(const HloInstruction& instr);

// The NVRTC requests of a plan's kernels (exposed for the compile tests): the key-specific
// module and the shared one (gathers, scans, index writers).
NvrtcRequest SortKeyKernelsRequest(const SortDesc& desc);
NvrtcRequest SortCommonKernelsRequest();

// Longest row sorted in shared memory by one block.
inline constexpr int64_t kSortMaxSmallRow = 4096;

}  // namespace kiln::cuda::libs
