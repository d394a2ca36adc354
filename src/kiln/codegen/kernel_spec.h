// KernelSpec: one generated kernel -- its CUDA C++ source, entry points, launch dimensions and
// parameter list -- and KernelConfig, the tunable knobs an emitter takes.
//
// Parameters. Every entry point of a KernelSpec takes the same parameter list, in this order:
//   1. one pointer per operand of the instruction (fusion operand i is parameter i), whether the
//      kernel reads it or not (an operand updated in place is not read: see in_place);
//   2. one pointer per output array (the array leaves of the result in order: the elements of
//      a multi-output fusion's tuple);
//   3. when scratch_bytes > 0, one pointer to a scratch buffer of that many bytes, whose
//      contents are undefined at entry and dead after the last launch;
//   4. scalar arguments (kScalar params), passed by value, in order.
// Current emitters compile all sizes into the kernel and pass no scalars.
//
// Buffers. Every pointer must be aligned to `buffer_alignment` bytes (16 for kernels that use
// vector accesses: kiln's allocators and buffer assignment give 64-byte aligned buffers, see
// docs/codegen.md). Buffers must not overlap, except that for each (output, operand) pair in
// `in_place` the output IS the operand's buffer: the kernel writes only part of it (an in-place
// dynamic-update-slice) and relies on the rest already holding the operand's value.
//
// Launches run in order on one stream (a two-stage reduction has two); each is one entry point
// of the module compiled from `source` (plus `headers`) with its grid, block and dynamic shared
// memory. A launch whose dynamic shared memory exceeds 48 KiB needs the kernel's limit raised
// first (runtime::Kernel::SetMaxDynamicSharedMemory).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/hlo/shape.h"
#include "kiln/runtime/types.h"

namespace kiln::codegen {

// Tunable knobs. 0 means "the emitter's default"; DefaultConfig/CandidateConfigs (emitters.h)
// return fully specified configs. Which knobs matter depends on the emitter:
//   loop       block_size, vector_width, unroll (vectors per thread)
//   row        block_size, vector_width, unroll (loads in flight per thread), rows_per_block,
//              split (blocks per row: two-stage reduction when > 1)
//   column     block_size (threads = 32 columns x block_size/32 rows), vector_width,
//              split (blocks along the reduced dimension: two-stage when > 1)
//   transpose  tile (tile edge, 32 or 64), block_size, vector_width
struct KernelConfig {
  int block_size = 0;      // threads per block
  int vector_width = 0;    // elements per vector access (1: scalar accesses)
  int unroll = 0;          // independent vectors per thread per iteration
  int rows_per_block = 0;  // row reductions: rows sharing one block
  int split = 0;           // reductions: blocks sharing one reduced row/column (1: none)
  int tile = 0;            // transposes: shared-memory tile edge

  // Short stable form for cache keys and logs: the set fields in a fixed order,
  // "b256.v4.u2.r1.s1.t32" (unset fields omitted; the default config is "default").
  std::string ToString() const;
  // Inverse of ToString. InvalidArgument on anything else.
  static StatusOr<KernelConfig> Parse(std::string_view text);
  bool operator==(const KernelConfig&) const = default;
};

struct KernelParam {
  enum class Kind { kOperand, kOutput, kScratch, kScalar };
  Kind kind = Kind::kOperand;
  int64_t index = 0;   // operand number, output leaf index, 0 for scratch, scalar position
  std::string name;    // the parameter's name in the source
  Shape shape;         // operands/outputs: the array shape with its layout; scratch: u8[bytes]
  bool read = false;   // the kernel reads it
  bool written = false;  // the kernel writes it
  // kScalar: the value to pass (as `scalar_type`).
  PrimitiveType scalar_type = PrimitiveType::kS64;
  int64_t scalar_value = 0;
};
std::string_view KernelParamKindName(KernelParam::Kind kind);

struct KernelLaunch {
  std::string entry;  // the extern "C" entry point
  runtime::LaunchDims dims;
};

struct KernelSpec {
  std::string name;     // the instruction's name ("fusion.3")
  std::string emitter;  // "loop", "row_reduction", "column_reduction", "transpose", ...
  KernelConfig config;  // fully specified (what the emitter actually used)
  std::string source;   // CUDA C++; includes the headers below
  std::vector<std::pair<std::string, std::string>> headers;  // (include name, contents)
  std::vector<KernelParam> params;
  std::vector<KernelLaunch> launches;
  int64_t scratch_bytes = 0;
  int buffer_alignment = 16;
  std::vector<std::pair<int64_t, int64_t>> in_place;  // (output leaf, operand)
  // Bytes the kernel must move at least (reads of operands it needs + writes of its outputs):
  // the performance model's floor is min_bytes / memory bandwidth.
  int64_t min_bytes = 0;
  std::string hlo;  // the instruction (and its fused computation) as text, for dumps

  // Entry point names of the launches, in order, without duplicates.
  std::vector<std::string> Entries() const;
  // One line per launch and parameter (what `kiln compile --dump-kernels` indexes).
  std::string Summary() const;
};

// Writes each kernel's source to DIR/<name>.cu (names made file-safe and unique), the headers
// they include once each, and DIR/kernels.txt (one Summary per kernel). Creates DIR.
Status DumpKernels(std::span<const KernelSpec> kernels, const std::string& dir);

}  // namespace kiln::codegen
