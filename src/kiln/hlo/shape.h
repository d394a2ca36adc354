// Shape: an array shape (element type, dimensions, optional layout, dynamic dimensions), a
// tuple of shapes, a token, or opaque.
//
// Dimensions: a static size N; a bounded dynamic size "<=N" (is_dynamic_dimension true, size N
// is the bound); an unbounded dynamic size "?" (size kUnboundedSize). Text forms:
//   f32[2,<=3,?]{2,1,0}   (f32[], pred[4])   token[]   opaque[]
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/hlo/layout.h"
#include "kiln/hlo/types.h"

namespace kiln {

class Shape {
 public:
  static constexpr int64_t kUnboundedSize = INT64_MIN;

  Shape() = default;  // invalid
  // Array shape without a layout.
  Shape(PrimitiveType element_type, std::vector<int64_t> dimensions);
  static Shape Array(PrimitiveType t, std::vector<int64_t> dims) { return Shape(t, std::move(dims)); }
  // Array shape with the default descending layout.
  static Shape ArrayWithDefaultLayout(PrimitiveType t, std::vector<int64_t> dims);
  static Shape Scalar(PrimitiveType t) { return Shape(t, {}); }
  static Shape Tuple(std::vector<Shape> elements);
  static Shape Token();
  static Shape Opaque();

  PrimitiveType element_type() const { return element_type_; }
  void set_element_type(PrimitiveType t) { element_type_ = t; }

  bool IsArray() const { return IsArrayType(element_type_); }
  bool IsTuple() const { return element_type_ == PrimitiveType::kTuple; }
  bool IsToken() const { return element_type_ == PrimitiveType::kToken; }
  bool IsOpaque() const { return element_type_ == PrimitiveType::kOpaque; }
  bool IsScalar() const { return IsArray() && dims_.empty(); }
  bool IsValid() const { return element_type_ != PrimitiveType::kInvalid; }

  // Array accessors.
  int64_t rank() const { return static_cast<int64_t>(dims_.size()); }
  const std::vector<int64_t>& dimensions() const { return dims_; }
  int64_t dimensions(int64_t i) const { return dims_[i]; }
  void set_dimensions(int64_t i, int64_t size) { dims_[i] = size; }
  std::vector<int64_t>& mutable_dimensions() { return dims_; }
  bool is_dynamic_dimension(int64_t i) const { return dynamic_[i]; }
  void set_dynamic_dimension(int64_t i, bool d) { dynamic_[i] = d; }
  bool is_unbounded_dynamic_dimension(int64_t i) const { return dims_[i] == kUnboundedSize; }
  bool is_dynamic() const;  // any dimension dynamic (recursing into tuples)
  const std::vector<bool>& dynamic_dimensions() const { return dynamic_; }
  // Appends a dimension (static unless `dynamic`).
  void add_dimension(int64_t size, bool dynamic = false);

  // Number of elements (product of dimensions; bounds for dynamic dimensions). 1 for scalars.
  // Saturates at INT64_MAX instead of wrapping; CheckShapeSize rejects such shapes.
  int64_t num_elements() const;
  // Bytes of a dense array (elements * PrimitiveByteWidth); for tuples, the sum over leaves.
  // Saturates at INT64_MAX as num_elements does.
  int64_t byte_size() const;

  bool has_layout() const { return layout_.has_value(); }
  const Layout& layout() const { return *layout_; }
  Layout& mutable_layout();
  void set_layout(Layout layout) { layout_ = std::move(layout); }
  void clear_layout();  // recursively
  // Layout if present, else the default descending layout.
  Layout layout_or_default() const;
  // Sets the default layout on every array without one (recursively).
  void set_default_layouts();

  // Tuple accessors.
  int64_t tuple_shapes_size() const { return static_cast<int64_t>(tuple_.size()); }
  const Shape& tuple_shapes(int64_t i) const { return tuple_[i]; }
  Shape& mutable_tuple_shapes(int64_t i) { return tuple_[i]; }
  const std::vector<Shape>& tuple_shapes() const { return tuple_; }
  std::vector<Shape>& mutable_tuple_shapes() { return tuple_; }

  // The subshape at a tuple index path ({} is the shape itself).
  const Shape& Subshape(const std::vector<int64_t>& index) const;
  // Number of array leaves (1 for an array, 0 for a token).
  int64_t LeafCount() const;

  // HLO text form. With print_layout, layouts present are printed ({1,0}).
  std::string ToString(bool print_layout = true) const;

  // Equality of element type, dimensions, dynamism and tuple structure. Layouts are compared
  // only by Equal(a, b, /*compare_layouts=*/true).
  static bool Compatible(const Shape& a, const Shape& b);
  static bool Equal(const Shape& a, const Shape& b, bool compare_layouts);
  bool operator==(const Shape& o) const { return Equal(*this, o, true); }
  bool operator!=(const Shape& o) const { return !(*this == o); }

 private:
  PrimitiveType element_type_ = PrimitiveType::kInvalid;
  std::vector<int64_t> dims_;
  std::vector<bool> dynamic_;
  std::optional<Layout> layout_;
  std::vector<Shape> tuple_;
};

// Program shape: parameter shapes (with optional names) and a result shape; the form of
// entry_computation_layout={(f32[2]{0}, s32[])->f32[2]{0}}.
struct ProgramShape {
  std::vector<Shape> parameters;
  std::vector<std::string> parameter_names;  // may be empty or hold "" entries
  Shape result;
  std::string ToString(bool print_layout = true) const;
};

// The most bytes one array may take (2^62): every size kiln computes from a shape -- element
// counts, byte sizes, offsets, the sum of a tuple's leaves -- then fits in int64 with room to
// spare. The parser rejects larger shapes written in the text, shape inference larger results,
// the verifier larger instruction shapes.
inline constexpr int64_t kMaxArrayBytes = int64_t{1} << 62;

// OK when every array of `shape` (recursing into tuples) has a non-negative, bounded size of at
// most kMaxArrayBytes bytes; else InvalidArgument "shape f32[...] has N elements, more than kiln
// supports (at most 2^62 bytes per array)", N the exact product even where it overflows int64.
Status CheckShapeSize(const Shape& shape);

// Row-major (logical) strides of a shape's dimensions, in elements.
std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& dims);

}  // namespace kiln
