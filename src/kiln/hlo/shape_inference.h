// Shape inference: the result shape of an HLO instruction computed from its operand shapes,
// the computations it calls and its attributes, with XLA's rules.
//
// Two layers:
//  * InferShape(instr) -- for any instruction of a module. Where XLA's text format carries a
//    part of the result that operands cannot determine (broadcast/reshape dimensions, the
//    target type of convert, the preferred element type of dot/convolution, the shape of a
//    parameter/constant/iota/rng/infeed/recv, custom-call results, the context elements of
//    *-start tuples), that part is read from the instruction's declared shape and everything
//    else is checked. The verifier compares the result with the declared shape.
//  * Per-family functions (InferDotShape, InferConvolutionShape, ...) taking shapes and
//    attributes only, for passes that build new instructions.
//
// Contract of every function: the returned shape has no layout (element type, dimensions and
// dynamic-dimension flags only); bad input gives InvalidArgument with a message that names the
// offending attribute and values ("dot: lhs contracting dimension 1 (size 3) does not match
// rhs contracting dimension 0 (size 4)"); nothing aborts, whatever the input.
//
// Element types: like XLA, operands that must "have the same type" may differ in floating-point
// precision (f32 vs bf16); the result then takes the higher precision. The verifier rejects
// such mixes unless VerifierOptions::allow_mixed_precision is set.
//
// Dynamic dimensions: bounded dynamic dimensions ("<=N") take part with their bound N and the
// dynamic flags are propagated where XLA propagates them. Unbounded dimensions ("?") are not
// supported by the arithmetic here; InferShape returns Unimplemented for them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/hlo/attributes.h"
#include "kiln/hlo/instruction.h"
#include "kiln/hlo/opcode.h"
#include "kiln/hlo/shape.h"

namespace kiln {

class HloModule;

// The result shape of `instr` (see the header comment for what is read from its declared
// shape). Needs the called computations for reduce/map/sort/while/... and, for collectives
// whose group size is not in the replica_groups, the module header's replica_count /
// num_partitions (found through instr.parent()->parent() when set).
StatusOr<Shape> InferShape(const HloInstruction& instr);

// What the backends check even when the verifier is skipped (--no-verify), the part of the
// verifier that keeps kernels inside their buffers: the call graph has no cycles and no chains
// deeper than kMaxCallDepth (passes and the evaluator would recurse without end); every instruction's operands are ones its shape
// inference accepts (tuple indices, slice bounds, dimension numbers in range, sizes that fit:
// CheckShapeSize); and its declared shape has the dimensions, element widths and tuple arity of
// the inferred one (kernels size their loops by the declared shape). InvalidArgument naming the
// first instruction and line that fails; instructions inference does not know (Unimplemented)
// pass. Everything else the verifier checks (exact element types, layouts, attribute sanity,
// the module header) is skipped.
Status CheckOperandsInRange(const HloModule& module);

// The deepest chain of nested calls kiln takes: passes, the evaluator and the tool's counts
// recurse along calls (the evaluator stops at 256 nested evaluations anyway).
inline constexpr int64_t kMaxCallDepth = 1024;

// What is wrong with the call graph (calls through to_apply, calls, body, branches, ...): a
// computation on a cycle (depth 0), or one starting a chain of more than kMaxCallDepth nested
// calls (depth: its length); computation null when nothing is.
struct CallGraphProblem {
  const HloComputation* computation = nullptr;
  int64_t depth = 0;
  std::string Message() const;  // "is part of a cycle of computations calling each other", ...
};
CallGraphProblem FindCallGraphProblem(const HloModule& module);

// ---- Elementwise family (shape_inference_elementwise.cc) ---------------------------------

// abs, negate, exponential, floor, not, popcnt, is-finite, real, imag, copy, ... : the rules of
// XLA (floor/ceil/round need floats; cos/exp/log/... floats or complex; clz/popcnt integers;
// not pred or integers; sign signed or complex; abs/real/imag of complex give the component
// type; is-finite gives pred).
StatusOr<Shape> InferUnaryOpShape(HloOpcode opcode, const Shape& operand);
// add, subtract, compare (-> pred), complex (f32,f32 -> c64), and/or/xor (pred or integers),
// shift-* (integers), atan2, power, remainder, ... Operand dimensions must be equal: HLO has no
// implicit broadcasting.
StatusOr<Shape> InferBinaryOpShape(HloOpcode opcode, const Shape& lhs, const Shape& rhs);
// select(pred, on_true, on_false): pred is a pred array with the dimensions of the operands.
StatusOr<Shape> InferSelectShape(const Shape& pred, const Shape& on_true, const Shape& on_false);
// clamp(min, operand, max): min and max are scalars or have the operand's dimensions.
StatusOr<Shape> InferClampShape(const Shape& min, const Shape& operand, const Shape& max);
StatusOr<Shape> InferConvertShape(const Shape& operand, PrimitiveType new_type);
// Equal bit widths keep the dimensions; a narrower result adds a minor dimension of the width
// ratio; a wider result removes a minor dimension that must equal the ratio.
StatusOr<Shape> InferBitcastConvertShape(const Shape& operand, PrimitiveType new_type);
StatusOr<Shape> InferStochasticConvertShape(const Shape& operand, const Shape& random,
                                            PrimitiveType new_type);
StatusOr<Shape> InferReducePrecisionShape(const Shape& operand, int64_t exponent_bits,
                                          int64_t mantissa_bits);
// map(operands...), to_apply: scalar parameters of the operand types -> scalar.
StatusOr<Shape> InferMapShape(const std::vector<const Shape*>& operands,
                              const ProgramShape& to_apply);

// ---- Shape-changing ops (shape_inference_shape_ops.cc) -----------------------------------

// broadcast: operand dimension i goes to output dimension dimensions[i] (same size).
StatusOr<Shape> InferBroadcastShape(const Shape& operand, const std::vector<int64_t>& output_dims,
                                    const std::vector<int64_t>& dimensions);
StatusOr<Shape> InferReshapeShape(const Shape& operand, const std::vector<int64_t>& new_dims);
// dynamic-reshape(operand, sizes...): one s32 scalar per result dimension.
StatusOr<Shape> InferDynamicReshapeShape(const Shape& operand,
                                         const std::vector<const Shape*>& dim_sizes,
                                         const Shape& declared);
StatusOr<Shape> InferTransposeShape(const Shape& operand, const std::vector<int64_t>& permutation);
StatusOr<Shape> InferSliceShape(const Shape& operand, const std::vector<SliceDimension>& slice);
// dynamic-slice(operand, i0, i1, ...) with scalar integer indices (or one rank-1 index array).
StatusOr<Shape> InferDynamicSliceShape(const Shape& operand,
                                       const std::vector<const Shape*>& start_indices,
                                       const std::vector<int64_t>& slice_sizes);
StatusOr<Shape> InferDynamicUpdateSliceShape(const Shape& operand, const Shape& update,
                                             const std::vector<const Shape*>& start_indices);
StatusOr<Shape> InferConcatenateShape(const std::vector<const Shape*>& operands,
                                      int64_t dimension);
// Negative edge padding is allowed (as long as no dimension becomes negative); interior
// padding must be >= 0.
StatusOr<Shape> InferPadShape(const Shape& operand, const Shape& padding_value,
                              const std::vector<PaddingDimension>& padding);
StatusOr<Shape> InferReverseShape(const Shape& operand, const std::vector<int64_t>& dimensions);
// iota: the declared array shape (rank >= 1, numeric type) with iota_dimension in range.
StatusOr<Shape> InferIotaShape(const Shape& declared, int64_t iota_dimension);
StatusOr<Shape> InferTupleShape(const std::vector<const Shape*>& operands);
StatusOr<Shape> InferGetTupleElementShape(const Shape& tuple, int64_t index);
StatusOr<Shape> InferGetDimensionSizeShape(const Shape& operand, int64_t dimension);
StatusOr<Shape> InferSetDimensionSizeShape(const Shape& operand, const Shape& size,
                                           int64_t dimension);
// bitcast: the declared shape, which must hold as many bits as the operand.
StatusOr<Shape> InferBitcastShape(const Shape& operand, const Shape& declared);

// ---- Dot, convolution and linear algebra (shape_inference_dot_conv.cc) -------------------

// Result dimensions: batch dimensions (in lhs_batch order), lhs free dimensions, rhs free
// dimensions. The element type is `preferred_type` when given (an integer result may not be
// narrower than integer operands), else the higher-precision operand type.
StatusOr<Shape> InferDotShape(const Shape& lhs, const Shape& rhs, const DotDimensionNumbers& dnums,
                              std::optional<PrimitiveType> preferred_type = std::nullopt);
// dot with structured-sparsity descriptors (sparsity=L.1@2:4): the sparse operand stores that
// dimension compressed by n:m, so it counts as size * m / n.
StatusOr<Shape> InferSparseDotShape(const Shape& lhs, const Shape& rhs,
                                    const DotDimensionNumbers& dnums,
                                    std::optional<PrimitiveType> preferred_type,
                                    const std::vector<SparsityDescriptor>& sparsity);
// ragged-dot(lhs, rhs, group_sizes): the ragged lhs dimension is non-contracting (rhs has one
// group dimension, dropped from the result), contracting (the result gets a leading group
// dimension) or batch (result as dot).
StatusOr<Shape> InferRaggedDotShape(const Shape& lhs, const Shape& rhs, const Shape& group_sizes,
                                    const DotDimensionNumbers& dnums,
                                    const RaggedDotDimensionNumbers& ragged,
                                    std::optional<PrimitiveType> preferred_type = std::nullopt);
// scaled-dot(lhs, rhs, lhs_scale, rhs_scale): dot of lhs and rhs; scales are arrays of the
// operands' ranks whose dimensions divide the operands' dimensions.
StatusOr<Shape> InferScaledDotShape(const Shape& lhs, const Shape& rhs, const Shape& lhs_scale,
                                    const Shape& rhs_scale, const DotDimensionNumbers& dnums,
                                    std::optional<PrimitiveType> preferred_type = std::nullopt);
// The spatial result of sliding `window` over `base` (padding, base/window dilation, stride).
StatusOr<Shape> InferWindowOutputShape(const Shape& base, const Window& window,
                                       PrimitiveType element_type);
StatusOr<Shape> InferConvolutionShape(const Shape& lhs, const Shape& rhs,
                                      int64_t feature_group_count, int64_t batch_group_count,
                                      const Window& window,
                                      const ConvolutionDimensionNumbers& dnums,
                                      std::optional<PrimitiveType> preferred_type = std::nullopt);
StatusOr<Shape> InferFftShape(const Shape& operand, FftType type,
                              const std::vector<int64_t>& fft_length);
StatusOr<Shape> InferCholeskyShape(const Shape& a);
StatusOr<Shape> InferTriangularSolveShape(const Shape& a, const Shape& b,
                                          const TriangularSolveOptions& options);
// (output, batch_mean, batch_var)
StatusOr<Shape> InferBatchNormTrainingShape(const Shape& operand, const Shape& scale,
                                            const Shape& offset, int64_t feature_index);
StatusOr<Shape> InferBatchNormInferenceShape(const Shape& operand, const Shape& scale,
                                             const Shape& offset, const Shape& mean,
                                             const Shape& variance, int64_t feature_index);
// (grad_operand, grad_scale, grad_offset)
StatusOr<Shape> InferBatchNormGradShape(const Shape& operand, const Shape& scale,
                                        const Shape& mean, const Shape& variance,
                                        const Shape& grad_output, int64_t feature_index);

// ---- Gather and scatter (shape_inference_gather_scatter.cc) ------------------------------

StatusOr<Shape> InferGatherShape(const Shape& operand, const Shape& start_indices,
                                 const GatherDimensionNumbers& dnums,
                                 const std::vector<int64_t>& slice_sizes);
// scatter(operands..., indices, updates...): the operand shape (a tuple for several operands).
StatusOr<Shape> InferScatterShape(const std::vector<const Shape*>& operands,
                                  const Shape& scatter_indices,
                                  const std::vector<const Shape*>& updates,
                                  const ScatterDimensionNumbers& dnums,
                                  const ProgramShape& to_apply);

// ---- Reductions, windows, sorting (shape_inference_reduce.cc) ----------------------------

// Checks a reducer signature: 2N scalar parameters (accumulators then inputs), a scalar or an
// N-tuple of scalars result, accumulator types matching `init_types`, inputs `input_types`.
Status VerifyReducerShape(const ProgramShape& reducer, const std::vector<PrimitiveType>& init_types,
                          const std::vector<PrimitiveType>& input_types);
StatusOr<Shape> InferReduceShape(const std::vector<const Shape*>& inputs,
                                 const std::vector<const Shape*>& init_values,
                                 const std::vector<int64_t>& dimensions,
                                 const ProgramShape& to_apply);
StatusOr<Shape> InferReduceWindowShape(const std::vector<const Shape*>& inputs,
                                       const std::vector<const Shape*>& init_values,
                                       const Window& window, const ProgramShape& to_apply);
StatusOr<Shape> InferSelectAndScatterShape(const Shape& operand, const ProgramShape& select,
                                           const Window& window, const Shape& source,
                                           const Shape& init_value, const ProgramShape& scatter);
// comparator: 2N scalar parameters (two per operand) -> pred[].
StatusOr<Shape> InferSortShape(const std::vector<const Shape*>& operands, int64_t dimension,
                               const ProgramShape& comparator);
// (values[..., k], s32 indices[..., k]) over the minor dimension.
StatusOr<Shape> InferTopKShape(const Shape& operand, int64_t k);

// ---- Control flow, calls, async, collectives, I/O (shape_inference_control.cc) -----------

StatusOr<Shape> InferWhileShape(const ProgramShape& condition, const ProgramShape& body,
                                const Shape& init);
StatusOr<Shape> InferConditionalShape(const Shape& branch_index,
                                      const std::vector<ProgramShape>& branches,
                                      const std::vector<const Shape*>& branch_operands);
StatusOr<Shape> InferCallShape(const std::vector<const Shape*>& args, const ProgramShape& to_apply);
// all-gather: `dimension` grows by shard_count (the replica group size).
StatusOr<Shape> InferAllGatherShape(const std::vector<const Shape*>& operands, int64_t dimension,
                                    int64_t shard_count);
StatusOr<Shape> InferAllReduceShape(const std::vector<const Shape*>& operands);
// reduce-scatter: `dimension` shrinks by shard_count (which must divide it).
StatusOr<Shape> InferReduceScatterShape(const std::vector<const Shape*>& operands,
                                        int64_t dimension, int64_t shard_count);
// all-to-all with split_dimension: the split dimension is divided by split_count and the same
// dimension gathers split_count chunks back (so the shape is unchanged); without a split
// dimension: N operands of equal shapes -> an N-tuple.
StatusOr<Shape> InferAllToAllShape(const std::vector<const Shape*>& operands,
                                   std::optional<int64_t> split_dimension, int64_t split_count);
StatusOr<Shape> InferCollectivePermuteShape(const std::vector<const Shape*>& operands);

// Group size of a collective: the size of its first replica group, or (without groups) the
// replica count / partition count / their product per XLA's group modes. 0 when unknown.
int64_t CollectiveGroupSize(const HloInstruction& instr);

}  // namespace kiln
