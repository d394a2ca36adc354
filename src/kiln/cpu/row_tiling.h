// Row tiling: a chain of consecutive fusion kernels that all work row by row over the same
// leading dimension runs tile by tile -- every kernel of the chain on rows [0, T), then every
// kernel on rows [T, 2T), ... -- so that the rows a kernel writes are still in cache when the
// next one reads them, and the input is read from memory once instead of once per kernel.
//
// Note [Row tiling]
//   Softmax is three or four kernels (row max; exp and row sum; reciprocal; normalize), layer
//   normalization three or four, each a pass over an array bigger than the L2 cache: run one
//   after the other, each pass reads the input from memory again. Run as a row-tiled chain, a
//   tile of T rows (a few hundred KiB over all the chain's arrays) stays in L2 from the first
//   kernel to the last, and the tiles are independent, so they are spread over the threads
//   with no fork-join per kernel.
//
//   A fusion is row-local over R rows when every output leaf has leading dimension R and row r
//   of every output depends only on row r of the operands that have rows ("row operands"); the
//   other operands ("invariant" ones) are read whole by every tile: per-feature vectors of a
//   layer norm, scalars. RowLocalAnalysis decides it from the fused computation, walking from
//   the root to the parameters and requiring of each instruction:
//     row        elementwise ops (operands row), broadcast (operand dimension 0 -> result
//                dimension 0: row operand; result dimension 0 not from the operand: invariant
//                operand), reshape/bitcast keeping dimension 0, reduce not over dimension 0
//                (init values invariant), transpose keeping dimension 0 first, iota not along
//                dimension 0, concatenate not along dimension 0;
//     invariant  anything, its operands invariant too (computed the same for every tile).
//   An instruction needed both ways, or anything else (slices, pads, dynamic slices, gathers,
//   constants with rows, iota along dimension 0), makes the fusion not row-local.
//   A tile's kernel is compiled from a clone of the fusion in which every row instruction's
//   dimension 0 is T instead of R (CloneForRows).
//
//   Chains (FindRowTiledChains) are runs of consecutive kernel-emitting instructions of one
//   scheduled computation that are row-local over the same R. A value a member produces is
//   internal to the chain when every reader (through views and get-tuple-elements) is a later
//   member reading it as a row operand and it is not the computation's result: it never goes
//   to the arena -- each tile writes and reads it in per-thread scratch of T rows (the row
//   reductions' results, exp(x - max) of a softmax). Every other array the members touch is
//   in the arena, and those slices must either not overlap or coincide as row arrays of the
//   same row size (buffer assignment may place a later member's output where an earlier
//   member's dead input was: tile t of the writer then overwrites only rows the reader has
//   already read), and no member may read and write the same bytes (in-place kernels are left
//   alone). A value read whole (not by rows) by a later member is never internal, and its
//   slice then conflicts with its producer's row slice: the chain is cut there.
//   Only chains of at least two kernels whose row arrays (scratch included) total at least
//   min_chain_bytes are tiled, and none with a member that only the evaluator's fallback
//   kernel runs (it would run once per tile). For tests and A/B runs, the cpu backend's flags
//   (ApplyCpuFlags in cpu_backend.cc; the `kiln` tool also takes them from KILN_<FLAG> in the
//   environment): cpu_row_tiling=off turns tiling off, =force tiles every chain in tiles of a
//   few rows; cpu_row_tile_bytes=N sets tile_bytes.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/hlo/module.h"
#include "kiln/passes/buffer_assignment.h"

namespace kiln::cpu {

struct RowTilingOptions {
  // Tile working set: rows per tile are chosen so that one tile of every array the chain
  // touches (row arrays) fits in about this many bytes (L2-sized).
  int64_t tile_bytes = 512 * 1024;
  // Chains whose row arrays total fewer bytes than this are left alone (they fit in cache).
  int64_t min_chain_bytes = 2 * 1024 * 1024;
  // At least this many tiles per thread when the rows allow it (load balance).
  int64_t min_tiles_per_thread = 4;
};

// How a fusion's operands relate to its rows, or not row-local at all.
struct RowLocality {
  bool ok = false;
  int64_t rows = 0;
  std::vector<bool> row_operand;  // per fusion operand: sliced by rows (true) or read whole
};

// Decides whether `fusion` (a kLoop or kInput fusion with array operands) is row-local over its
// output's leading dimension (see the Note).
RowLocality AnalyzeRowLocality(const HloInstruction& fusion);

// A clone of `fusion` whose rows are `tile_rows` instead of R, with parameters standing for its
// operands (row operands with tile_rows rows), added as the root of a new computation of
// `module` (which also receives the fused computation's clone). Returns the clone of the fusion.
StatusOr<const HloInstruction*> CloneForRows(const HloInstruction& fusion, const RowLocality& locality,
                                             int64_t tile_rows, HloModule& module);

// One kernel of a chain and where its arrays live: input_value[k] / output_value[l] is -1 for
// an array in the arena (a buffer slice), else the index of a value internal to the chain
// (produced and read only by its members, by rows), which lives in per-tile scratch.
struct RowTiledMember {
  const HloInstruction* instr = nullptr;
  std::vector<int> input_value;   // per operand
  std::vector<int> output_value;  // per array leaf of the result
};

struct RowTiledChain {
  int64_t begin = 0, end = 0;  // [begin, end) indices into the sequence given to the finder
  int64_t rows = 0;
  int64_t row_bytes = 0;       // bytes of one row over every row array the chain touches
  std::vector<RowTiledMember> members;     // in order
  std::vector<int64_t> internal_row_bytes;  // per internal value: bytes of one row
};

// The chains of `sequence` (one computation's instructions in schedule order) worth tiling.
// `emits_thunk(i)` says whether sequence[i] gets a thunk of its own (instructions that do not --
// parameters, tuples, get-tuple-elements, views -- neither break nor join a chain).
StatusOr<std::vector<RowTiledChain>> FindRowTiledChains(
    std::span<const HloInstruction* const> sequence, const std::vector<bool>& emits_thunk,
    const BufferAssignment& assignment, const RowTilingOptions& options);

// Rows per tile for a chain run with `threads` threads.
int64_t ChooseTileRows(const RowTiledChain& chain, int threads, const RowTilingOptions& options);

}  // namespace kiln::cpu
