// Layout: how an array's logical dimensions are ordered in memory, plus XLA's extra layout
// attributes (tiling, element size, memory space, ...). kiln keeps every attribute it reads and
// prints it back; only minor_to_major changes meaning in the reference evaluator (bitcast).
//
// Text form:  {1,0}  or  {1,0:D(D,C)T(8,128)(2,1)L(4)#(s32)*(s64)E(4)S(1)SC(0:1,2)P(f32[4]{0})M(8)}
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kiln/hlo/types.h"

namespace kiln {

class Shape;

// One tile of a tiling: dimension sizes, where kCombineDimension ('*') means "combine".
struct Tile {
  static constexpr int64_t kCombineDimension = INT64_MIN;
  std::vector<int64_t> dimensions;
  bool operator==(const Tile& o) const = default;
};

// Per-dimension storage kind for sparse layouts: D (dense), C (compressed), S (singleton),
// H (loose compressed), with optional '+' (not unique) / '~' (not ordered) suffixes kept
// verbatim.
struct DimLevel {
  std::string text;  // "D", "C+", "S~", ...
  bool operator==(const DimLevel& o) const = default;
};

// split_configs: SC(dimension:split_index,split_index...)
struct SplitConfig {
  int64_t dimension = 0;
  std::vector<int64_t> split_indices;
  bool operator==(const SplitConfig& o) const = default;
};

class Layout {
 public:
  Layout() = default;
  explicit Layout(std::vector<int64_t> minor_to_major) : minor_to_major_(std::move(minor_to_major)) {}

  // Default (descending) layout {rank-1, ..., 0} for a rank.
  static Layout Default(int64_t rank);

  const std::vector<int64_t>& minor_to_major() const { return minor_to_major_; }
  std::vector<int64_t>& mutable_minor_to_major() { return minor_to_major_; }

  std::vector<DimLevel> dim_levels;
  std::vector<Tile> tiles;
  int64_t tail_padding_alignment_in_elements = 1;  // L(n); 1 = none
  PrimitiveType index_primitive_type = PrimitiveType::kInvalid;    // #(type)
  PrimitiveType pointer_primitive_type = PrimitiveType::kInvalid;  // *(type)
  int64_t element_size_in_bits = 0;                                // E(n); 0 = natural
  int64_t memory_space = 0;                                        // S(n)
  std::vector<SplitConfig> split_configs;                          // SC(...)
  std::shared_ptr<Shape> physical_shape;                           // P(shape)
  int64_t dynamic_shape_metadata_prefix_bytes = 0;                 // M(n)

  // True if the layout is the default descending order and carries no other attribute.
  bool IsDefaultFor(int64_t rank) const;
  // Whether any attribute beyond minor_to_major is set.
  bool HasExtraAttributes() const;

  // Text form without braces handling ambiguity: "{1,0}" or "{1,0:T(8,128)}".
  std::string ToString() const;

  bool operator==(const Layout& o) const;
  bool operator!=(const Layout& o) const { return !(*this == o); }

 private:
  std::vector<int64_t> minor_to_major_;
};

}  // namespace kiln
