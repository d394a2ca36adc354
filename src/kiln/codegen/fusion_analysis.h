// Structural analysis of a fusion for the emitters (internal to codegen/): its reductions in
// canonical physical form, and its transpose hero.
#pragma once

#include <cstdint>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/codegen/emitter_common.h"

namespace kiln::codegen {

// The reductions of a fusion, all over the same input dimensions and reduced dimensions,
// viewed physically as [k1, r, k2]: k1 = product of the kept dimensions before the reduced
// ones in memory order (major side), r = product of the reduced dimensions, k2 = product of
// the kept dimensions after them (minor side). k2 == 1: a row reduction (reduced dimensions
// contiguous in memory); k2 > 1: a column reduction.
struct ReductionAnalysis {
  std::vector<const HloInstruction*> reduces;  // post order
  Shape input_shape;                           // the reduce inputs' shape, with layout
  std::vector<int64_t> reduced_dims;           // sorted, logical
  std::vector<int64_t> k1_dims, r_dims, k2_dims;  // logical dims, major to minor in memory
  int64_t k1 = 1, r = 1, k2 = 1;
  // The dimensions of a reduce's result (the input's kept dimensions in logical order).
  std::vector<int64_t> output_dims;
  // level[i]: 1 + the highest level among the reduces reduces[i]'s inputs depend on.
  std::vector<int> level;
  bool is_row() const { return k2 == 1; }
  int LevelOf(const HloInstruction* reduce) const;
};

// Unimplemented when the fusion has no reduce, or reduces of different shapes, or reduced
// dimensions interleaved with kept ones in memory (..., R, K, R, ...).
StatusOr<ReductionAnalysis> AnalyzeReductions(const FusionView& view);

// The highest reduce level `instr`'s value depends on (0: none).
int DependsOnLevel(const ReductionAnalysis& ra, const HloInstruction* instr);

// A transpose hero: an instruction (transpose, or copy between layouts) whose operand's minor
// dimension in memory is not its own minor dimension, with the output space it lives in.
struct TransposeAnalysis {
  const HloInstruction* hero = nullptr;
  // The hero's logical output dimension that reads the operand's minor (contiguous) dimension,
  // and the hero's own minor dimension in memory.
  int64_t dim_in = -1;
  int64_t dim_out = -1;
  // operand_dim[d]: the operand dimension that hero output dimension d reads.
  std::vector<int64_t> operand_dim;
};
// Unimplemented when the fusion has no such hero, the outputs do not all have the hero's
// dimensions and layout, or the transposed dimensions are too small to gain from tiling.
StatusOr<TransposeAnalysis> AnalyzeTranspose(const FusionView& view);

}  // namespace kiln::codegen
