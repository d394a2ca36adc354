// Typed attributes of HLO instructions. Each struct mirrors one attribute family of XLA's text
// format; the comment above each gives its text form. The parser fills them, the printer writes
// them back in XLA's order, shape inference and the evaluator read them.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kiln/hlo/types.h"

namespace kiln {

class Shape;

// window={size=3x3 stride=2x2 pad=1_1x0_1 lhs_dilate=1x1 rhs_dilate=2x2 rhs_reversal=0x1}
struct WindowDimension {
  int64_t size = 1;
  int64_t stride = 1;
  int64_t padding_low = 0;
  int64_t padding_high = 0;
  int64_t window_dilation = 1;  // rhs_dilate
  int64_t base_dilation = 1;    // lhs_dilate
  bool window_reversal = false;
  bool operator==(const WindowDimension&) const = default;
};
struct Window {
  std::vector<WindowDimension> dimensions;
  bool operator==(const Window&) const = default;
};

// dim_labels=b01f_01io->b01f (any permutation; spatial dims are digits 0..N-1)
struct ConvolutionDimensionNumbers {
  int64_t input_batch_dimension = 0;
  int64_t input_feature_dimension = 0;
  std::vector<int64_t> input_spatial_dimensions;
  int64_t kernel_input_feature_dimension = 0;
  int64_t kernel_output_feature_dimension = 0;
  std::vector<int64_t> kernel_spatial_dimensions;
  int64_t output_batch_dimension = 0;
  int64_t output_feature_dimension = 0;
  std::vector<int64_t> output_spatial_dimensions;
  bool operator==(const ConvolutionDimensionNumbers&) const = default;
};

// lhs_batch_dims={0} lhs_contracting_dims={2} rhs_batch_dims={0} rhs_contracting_dims={1}
struct DotDimensionNumbers {
  std::vector<int64_t> lhs_batch_dimensions;
  std::vector<int64_t> rhs_batch_dimensions;
  std::vector<int64_t> lhs_contracting_dimensions;
  std::vector<int64_t> rhs_contracting_dimensions;
  bool operator==(const DotDimensionNumbers&) const = default;
};

// ragged-dot: lhs_ragged_dims={1}, rhs_group_dims={0} (plus the dot dimension numbers)
struct RaggedDotDimensionNumbers {
  std::vector<int64_t> lhs_ragged_dimensions;
  std::vector<int64_t> rhs_group_dimensions;
  bool operator==(const RaggedDotDimensionNumbers&) const = default;
};

// operand_precision={default,highest}
enum class Precision : uint8_t { kDefault, kHigh, kHighest, kPackedNibble };
// algorithm=dot_bf16_bf16_f32 etc.; kept as the enum's text name ("" = unset).
struct PrecisionConfig {
  std::vector<Precision> operand_precision;
  std::string algorithm;  // e.g. "dot_tf32_tf32_f32"; empty when unset
  bool operator==(const PrecisionConfig&) const = default;
};

// sparsity=L.1@2:4 (structured sparsity descriptor; kept verbatim)
struct SparsityDescriptor {
  std::string text;
  bool operator==(const SparsityDescriptor&) const = default;
};

// gather: offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1,
//         operand_batching_dims={}, start_indices_batching_dims={}, slice_sizes={1,5},
//         indices_are_sorted=true
struct GatherDimensionNumbers {
  std::vector<int64_t> offset_dims;
  std::vector<int64_t> collapsed_slice_dims;
  std::vector<int64_t> start_index_map;
  int64_t index_vector_dim = 0;
  std::vector<int64_t> operand_batching_dims;
  std::vector<int64_t> start_indices_batching_dims;
  bool operator==(const GatherDimensionNumbers&) const = default;
};

// scatter: update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0},
//          index_vector_dim=1, input_batching_dims={}, scatter_indices_batching_dims={}
struct ScatterDimensionNumbers {
  std::vector<int64_t> update_window_dims;
  std::vector<int64_t> inserted_window_dims;
  std::vector<int64_t> scatter_dims_to_operand_dims;
  int64_t index_vector_dim = 0;
  std::vector<int64_t> input_batching_dims;
  std::vector<int64_t> scatter_indices_batching_dims;
  bool operator==(const ScatterDimensionNumbers&) const = default;
};

// slice={[0:4], [2:8:2]}
struct SliceDimension {
  int64_t start = 0;
  int64_t limit = 0;
  int64_t stride = 1;
  bool operator==(const SliceDimension&) const = default;
};

// padding=0_0x1_2_1 (low_high[_interior] per dimension; negative values allowed)
struct PaddingDimension {
  int64_t low = 0;
  int64_t high = 0;
  int64_t interior = 0;
  bool operator==(const PaddingDimension&) const = default;
};

// direction=LT, type=TOTALORDER
enum class ComparisonDirection : uint8_t { kEq, kNe, kGe, kGt, kLe, kLt };
enum class ComparisonType : uint8_t { kDefault, kFloat, kTotalOrder, kSigned, kUnsigned };

// fft_type=RFFT, fft_length={8,16}
enum class FftType : uint8_t { kFft, kIfft, kRfft, kIrfft };

// distribution=rng_uniform
enum class RandomDistribution : uint8_t { kUniform, kNormal };
// algorithm=rng_default | rng_three_fry | rng_philox
enum class RandomAlgorithm : uint8_t { kDefault, kThreeFry, kPhilox };

// triangular-solve: left_side=true, lower=true, unit_diagonal=true, transpose_a=TRANSPOSE
enum class TriangularTranspose : uint8_t { kNoTranspose, kTranspose, kAdjoint };
struct TriangularSolveOptions {
  bool left_side = false;
  bool lower = false;
  bool unit_diagonal = false;
  TriangularTranspose transpose_a = TriangularTranspose::kNoTranspose;
  bool operator==(const TriangularSolveOptions&) const = default;
};

// kind=kLoop (fusion)
enum class FusionKind : uint8_t { kLoop, kInput, kOutput, kCustom };

// custom-call api_version=API_VERSION_STATUS_RETURNING etc.
enum class CustomCallApiVersion : uint8_t {
  kUnspecified,
  kOriginal,
  kStatusReturning,
  kStatusReturningUnified,
  kTypedFfi,
};
// custom_call_schedule=SCHEDULE_LATEST
enum class CustomCallSchedule : uint8_t { kNone, kLatest, kEarliest };

// output_to_operand_aliasing={{0}: (1, {}), {1}: (0, {1})}
struct OutputOperandAlias {
  std::vector<int64_t> output_index;
  int64_t operand_number = 0;
  std::vector<int64_t> operand_index;
  bool operator==(const OutputOperandAlias&) const = default;
};

// replica_groups={{0,1},{2,3}} or the iota form replica_groups=[2,2]<=[4] /
// [2,2]<=[2,2]T(1,0). Kept in whichever form was read; Groups() expands the iota form.
struct ReplicaGroups {
  std::vector<std::vector<int64_t>> groups;  // explicit form
  bool is_iota = false;
  std::vector<int64_t> iota_group_shape;     // [num_groups, group_size]
  std::vector<int64_t> iota_reshape_dims;    // <=[...]
  std::vector<int64_t> iota_transpose_perm;  // T(...), empty = identity
  // The groups as explicit lists of ids.
  std::vector<std::vector<int64_t>> Groups() const;
  bool operator==(const ReplicaGroups&) const = default;
};

// metadata={op_type="dot" op_name="jit(f)/dot" source_file="x.py" source_line=3 ...}
struct OpMetadata {
  std::string op_type;
  std::string op_name;
  std::string source_file;
  int64_t source_line = 0;
  int64_t source_end_line = 0;
  int64_t source_column = 0;
  int64_t source_end_column = 0;
  int64_t stack_frame_id = 0;
  std::string deduplicated_name;
  bool preserve_layout = false;
  std::string scheduling_name;
  // Any other key=value pairs, kept verbatim in order ("profile_type={...}").
  std::vector<std::pair<std::string, std::string>> extra;
  bool empty() const;
  bool operator==(const OpMetadata&) const = default;
};

// sharding={replicated}, {maximal device=1}, {devices=[2,1]0,1}, {devices=[2,2]<=[4]},
// {devices=[2,1,2]<=[2,2]T(1,0) last_tile_dim_replicate}, {devices=[..] last_tile_dims={manual}},
// {manual}, {unknown}, {{replicated}, {maximal device=0}} (tuple), each with optional
// metadata={...}, shard_as/shard_like N.
struct HloSharding {
  enum class Kind : uint8_t { kReplicated, kMaximal, kTiled, kManual, kUnknown, kUnreduced, kTuple };
  Kind kind = Kind::kReplicated;
  int64_t maximal_device = 0;
  std::vector<int64_t> tile_assignment_dims;
  std::vector<int64_t> tile_assignment_devices;  // explicit device list (empty for iota form)
  bool iota = false;
  std::vector<int64_t> iota_reshape_dims;
  std::vector<int64_t> iota_transpose_perm;
  bool replicate_on_last_tile_dim = false;
  std::vector<std::string> last_tile_dims;  // subgroup types: "manual", "replicated", ...
  std::vector<std::string> metadata;        // each metadata entry verbatim ("{op_name=...}")
  std::string shard_group;                  // "shard_as 1" / "shard_like 2", verbatim
  std::vector<HloSharding> tuple_elements;
  bool operator==(const HloSharding&) const = default;
};

// domain={kind="sharding", entry={...}, exit={...}}
struct DomainMetadata {
  std::string kind;
  std::string entry;  // verbatim sharding text
  std::string exit;
  bool operator==(const DomainMetadata&) const = default;
};

// A backend_config: either a quoted string (backend_config="...") or bare JSON
// (backend_config={"a":1}). Kept verbatim; `is_json` says which form was read.
struct BackendConfig {
  std::string text;
  bool is_json = false;
  bool empty() const { return text.empty(); }
  bool operator==(const BackendConfig&) const = default;
};

std::string_view ComparisonDirectionString(ComparisonDirection d);  // "EQ"...
std::string_view ComparisonTypeString(ComparisonType t);            // "FLOAT"...
std::string_view FftTypeString(FftType t);                          // "FFT"...
std::string_view RandomDistributionString(RandomDistribution d);    // "rng_uniform"
std::string_view RandomAlgorithmString(RandomAlgorithm a);          // "rng_three_fry"
std::string_view PrecisionString(Precision p);                      // "default"
std::string_view FusionKindString(FusionKind k);                    // "kLoop"
std::string_view TriangularTransposeString(TriangularTranspose t);  // "TRANSPOSE"
std::string_view CustomCallApiVersionString(CustomCallApiVersion v);
std::string_view CustomCallScheduleString(CustomCallSchedule s);

// The comparison type used when `type=` is absent: FLOAT for floats/complex, SIGNED for signed
// integers, UNSIGNED for unsigned integers and pred.
ComparisonType DefaultComparisonType(PrimitiveType operand_type);

}  // namespace kiln
