#include "kiln/hlo/layout.h"

#include "kiln/base/strings.h"
#include "kiln/hlo/shape.h"

namespace kiln {

Layout Layout::Default(int64_t rank) {
  std::vector<int64_t> m2m(rank);
  for (int64_t i = 0; i < rank; ++i) m2m[i] = rank - 1 - i;
  return Layout(std::move(m2m));
}

bool Layout::HasExtraAttributes() const {
  return !dim_levels.empty() || !tiles.empty() || tail_padding_alignment_in_elements != 1 ||
         index_primitive_type != PrimitiveType::kInvalid ||
         pointer_primitive_type != PrimitiveType::kInvalid || element_size_in_bits != 0 ||
         memory_space != 0 || !split_configs.empty() || physical_shape != nullptr ||
         dynamic_shape_metadata_prefix_bytes != 0;
}

bool Layout::IsDefaultFor(int64_t rank) const {
  if (HasExtraAttributes()) return false;
  if (static_cast<int64_t>(minor_to_major_.size()) != rank) return false;
  for (int64_t i = 0; i < rank; ++i)
    if (minor_to_major_[i] != rank - 1 - i) return false;
  return true;
}

std::string Layout::ToString() const {
  std::string s = "{" + StrJoin(minor_to_major_, ",");
  if (HasExtraAttributes()) {
    s += ":";
    if (!dim_levels.empty()) {
      s += "D(" + StrJoin(dim_levels, ",", [](std::ostream& os, const DimLevel& d) { os << d.text; }) + ")";
    }
    if (!tiles.empty()) {
      s += "T";
      for (const Tile& t : tiles) {
        s += "(" +
             StrJoin(t.dimensions, ",",
                     [](std::ostream& os, int64_t d) {
                       if (d == Tile::kCombineDimension) os << "*";
                       else os << d;
                     }) +
             ")";
      }
    }
    if (tail_padding_alignment_in_elements != 1)
      s += "L(" + std::to_string(tail_padding_alignment_in_elements) + ")";
    if (index_primitive_type != PrimitiveType::kInvalid)
      s += "#(" + std::string(PrimitiveTypeName(index_primitive_type)) + ")";
    if (pointer_primitive_type != PrimitiveType::kInvalid)
      s += "*(" + std::string(PrimitiveTypeName(pointer_primitive_type)) + ")";
    if (element_size_in_bits != 0) s += "E(" + std::to_string(element_size_in_bits) + ")";
    if (memory_space != 0) s += "S(" + std::to_string(memory_space) + ")";
    if (!split_configs.empty()) {
      for (const SplitConfig& sc : split_configs) {
        s += "SC(" + std::to_string(sc.dimension) + ":" + StrJoin(sc.split_indices, ",") + ")";
      }
    }
    if (physical_shape) s += "P(" + physical_shape->ToString(true) + ")";
    if (dynamic_shape_metadata_prefix_bytes != 0)
      s += "M(" + std::to_string(dynamic_shape_metadata_prefix_bytes) + ")";
  }
  s += "}";
  return s;
}

bool Layout::operator==(const Layout& o) const {
  if (minor_to_major_ != o.minor_to_major_ || dim_levels != o.dim_levels || tiles != o.tiles ||
      tail_padding_alignment_in_elements != o.tail_padding_alignment_in_elements ||
      index_primitive_type != o.index_primitive_type ||
      pointer_primitive_type != o.pointer_primitive_type ||
      element_size_in_bits != o.element_size_in_bits || memory_space != o.memory_space ||
      split_configs != o.split_configs ||
      dynamic_shape_metadata_prefix_bytes != o.dynamic_shape_metadata_prefix_bytes)
    return false;
  if ((physical_shape == nullptr) != (o.physical_shape == nullptr)) return false;
  return !physical_shape || *physical_shape == *o.physical_shape;
}

}  // namespace kiln
