#include "kiln/hlo/attributes.h"

namespace kiln {

std::vector<std::vector<int64_t>> ReplicaGroups::Groups() const {
  if (!is_iota) return groups;
  // Device ids are iota over iota_reshape_dims, transposed by iota_transpose_perm, then
  // reshaped to iota_group_shape.
  int64_t total = 1;
  for (int64_t d : iota_reshape_dims) total *= d;
  std::vector<int64_t> perm = iota_transpose_perm;
  if (perm.empty())
    for (size_t i = 0; i < iota_reshape_dims.size(); ++i) perm.push_back(static_cast<int64_t>(i));
  std::vector<int64_t> tdims(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) tdims[i] = iota_reshape_dims[perm[i]];
  std::vector<int64_t> in_strides(iota_reshape_dims.size(), 1);
  for (int64_t i = static_cast<int64_t>(iota_reshape_dims.size()) - 2; i >= 0; --i)
    in_strides[i] = in_strides[i + 1] * iota_reshape_dims[i + 1];
  std::vector<int64_t> flat(total);
  std::vector<int64_t> idx(tdims.size(), 0);
  for (int64_t n = 0; n < total; ++n) {
    int64_t src = 0;
    for (size_t i = 0; i < tdims.size(); ++i) src += idx[i] * in_strides[perm[i]];
    flat[n] = src;
    for (int64_t i = static_cast<int64_t>(tdims.size()) - 1; i >= 0; --i) {
      if (++idx[i] < tdims[i]) break;
      idx[i] = 0;
    }
  }
  std::vector<std::vector<int64_t>> out;
  int64_t num_groups = iota_group_shape.size() > 0 ? iota_group_shape[0] : 1;
  int64_t group_size = iota_group_shape.size() > 1 ? iota_group_shape[1] : total;
  for (int64_t g = 0; g < num_groups; ++g)
    out.emplace_back(flat.begin() + g * group_size, flat.begin() + (g + 1) * group_size);
  return out;
}

bool OpMetadata::empty() const {
  return op_type.empty() && op_name.empty() && source_file.empty() && source_line == 0 &&
         source_end_line == 0 && source_column == 0 && source_end_column == 0 &&
         stack_frame_id == 0 && deduplicated_name.empty() && !preserve_layout &&
         scheduling_name.empty() && extra.empty();
}

std::string_view ComparisonDirectionString(ComparisonDirection d) {
  switch (d) {
    case ComparisonDirection::kEq: return "EQ";
    case ComparisonDirection::kNe: return "NE";
    case ComparisonDirection::kGe: return "GE";
    case ComparisonDirection::kGt: return "GT";
    case ComparisonDirection::kLe: return "LE";
    case ComparisonDirection::kLt: return "LT";
  }
  return "EQ";
}

std::string_view ComparisonTypeString(ComparisonType t) {
  switch (t) {
    case ComparisonType::kDefault: return "";
    case ComparisonType::kFloat: return "FLOAT";
    case ComparisonType::kTotalOrder: return "TOTALORDER";
    case ComparisonType::kSigned: return "SIGNED";
    case ComparisonType::kUnsigned: return "UNSIGNED";
  }
  return "";
}

std::string_view FftTypeString(FftType t) {
  switch (t) {
    case FftType::kFft: return "FFT";
    case FftType::kIfft: return "IFFT";
    case FftType::kRfft: return "RFFT";
    case FftType::kIrfft: return "IRFFT";
  }
  return "FFT";
}

std::string_view RandomDistributionString(RandomDistribution d) {
  return d == RandomDistribution::kUniform ? "rng_uniform" : "rng_normal";
}

std::string_view RandomAlgorithmString(RandomAlgorithm a) {
  switch (a) {
    case RandomAlgorithm::kDefault: return "rng_default";
    case RandomAlgorithm::kThreeFry: return "rng_three_fry";
    case RandomAlgorithm::kPhilox: return "rng_philox";
  }
  return "rng_default";
}

std::string_view PrecisionString(Precision p) {
  switch (p) {
    case Precision::kDefault: return "default";
    case Precision::kHigh: return "high";
    case Precision::kHighest: return "highest";
    case Precision::kPackedNibble: return "packed_nibble";
  }
  return "default";
}

std::string_view FusionKindString(FusionKind k) {
  switch (k) {
    case FusionKind::kLoop: return "kLoop";
    case FusionKind::kInput: return "kInput";
    case FusionKind::kOutput: return "kOutput";
    case FusionKind::kCustom: return "kCustom";
  }
  return "kLoop";
}

std::string_view TriangularTransposeString(TriangularTranspose t) {
  switch (t) {
    case TriangularTranspose::kNoTranspose: return "NO_TRANSPOSE";
    case TriangularTranspose::kTranspose: return "TRANSPOSE";
    case TriangularTranspose::kAdjoint: return "ADJOINT";
  }
  return "NO_TRANSPOSE";
}

std::string_view CustomCallApiVersionString(CustomCallApiVersion v) {
  switch (v) {
    case CustomCallApiVersion::kUnspecified: return "API_VERSION_UNSPECIFIED";
    case CustomCallApiVersion::kOriginal: return "API_VERSION_ORIGINAL";
    case CustomCallApiVersion::kStatusReturning: return "API_VERSION_STATUS_RETURNING";
    case CustomCallApiVersion::kStatusReturningUnified:
      return "API_VERSION_STATUS_RETURNING_UNIFIED";
    case CustomCallApiVersion::kTypedFfi: return "API_VERSION_TYPED_FFI";
  }
  return "API_VERSION_ORIGINAL";
}

std::string_view CustomCallScheduleString(CustomCallSchedule s) {
  switch (s) {
    case CustomCallSchedule::kNone: return "SCHEDULE_NONE";
    case CustomCallSchedule::kLatest: return "SCHEDULE_LATEST";
    case CustomCallSchedule::kEarliest: return "SCHEDULE_EARLIEST";
  }
  return "SCHEDULE_NONE";
}

ComparisonType DefaultComparisonType(PrimitiveType t) {
  if (IsFloatingPointType(t) || IsComplexType(t)) return ComparisonType::kFloat;
  if (IsSignedIntegralType(t)) return ComparisonType::kSigned;
  return ComparisonType::kUnsigned;
}

}  // namespace kiln
