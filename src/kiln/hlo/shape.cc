#include "kiln/hlo/shape.h"

#include "kiln/base/saturating.h"
#include "kiln/base/strings.h"

namespace kiln {

Shape::Shape(PrimitiveType element_type, std::vector<int64_t> dimensions)
    : element_type_(element_type), dims_(std::move(dimensions)), dynamic_(dims_.size(), false) {
  for (size_t i = 0; i < dims_.size(); ++i)
    if (dims_[i] == kUnboundedSize) dynamic_[i] = true;
}

Shape Shape::ArrayWithDefaultLayout(PrimitiveType t, std::vector<int64_t> dims) {
  Shape s(t, std::move(dims));
  s.layout_ = Layout::Default(s.rank());
  return s;
}

Shape Shape::Tuple(std::vector<Shape> elements) {
  Shape s;
  s.element_type_ = PrimitiveType::kTuple;
  s.tuple_ = std::move(elements);
  return s;
}

Shape Shape::Token() {
  Shape s;
  s.element_type_ = PrimitiveType::kToken;
  return s;
}

Shape Shape::Opaque() {
  Shape s;
  s.element_type_ = PrimitiveType::kOpaque;
  return s;
}

bool Shape::is_dynamic() const {
  if (IsTuple()) {
    for (const Shape& s : tuple_)
      if (s.is_dynamic()) return true;
    return false;
  }
  for (bool d : dynamic_)
    if (d) return true;
  return false;
}

void Shape::add_dimension(int64_t size, bool dynamic) {
  dims_.push_back(size);
  dynamic_.push_back(dynamic || size == kUnboundedSize);
}

int64_t Shape::num_elements() const {
  int64_t n = 1;
  for (int64_t d : dims_) n = SaturatingMul(n, d == kUnboundedSize ? 0 : d);
  return n;
}

int64_t Shape::byte_size() const {
  if (IsTuple()) {
    int64_t total = 0;
    for (const Shape& s : tuple_) total = SaturatingAdd(total, s.byte_size());
    return total;
  }
  if (!IsArray()) return 0;
  return SaturatingMul(num_elements(), PrimitiveByteWidth(element_type_));
}

namespace {

// The exact product of `dims` in decimal (base-10^9 limbs, least significant first), for
// messages about counts that overflow int64.
std::string ExactProduct(const std::vector<int64_t>& dims) {
  std::vector<uint64_t> limbs{1};
  constexpr uint64_t kBase = 1000000000;
  for (int64_t d : dims) {
    unsigned __int128 carry = 0;
    for (uint64_t& l : limbs) {
      unsigned __int128 v = static_cast<unsigned __int128>(l) * static_cast<uint64_t>(d) + carry;
      l = static_cast<uint64_t>(v % kBase);
      carry = v / kBase;
    }
    while (carry) {
      limbs.push_back(static_cast<uint64_t>(carry % kBase));
      carry /= kBase;
    }
  }
  while (limbs.size() > 1 && limbs.back() == 0) limbs.pop_back();
  std::string s = std::to_string(limbs.back());
  for (size_t i = limbs.size() - 1; i-- > 0;) {
    std::string part = std::to_string(limbs[i]);
    s += std::string(9 - part.size(), '0') + part;
  }
  return s;
}

}  // namespace

Status CheckShapeSize(const Shape& shape) {
  if (shape.IsTuple()) {
    for (const Shape& e : shape.tuple_shapes()) KILN_RETURN_IF_ERROR(CheckShapeSize(e));
    return OkStatus();
  }
  if (!shape.IsArray()) return OkStatus();
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < shape.rank(); ++i) {
    if (shape.is_unbounded_dynamic_dimension(i)) continue;  // no size until it is known
    if (shape.dimensions(i) < 0)
      return InvalidArgument("shape ", shape.ToString(false), " has a negative dimension");
    dims.push_back(shape.dimensions(i));
  }
  for (int64_t d : dims)
    if (d == 0) return OkStatus();  // no elements, however large the other dimensions
  int64_t elements = 1, bytes = 0;
  bool overflow = false;
  for (int64_t d : dims) overflow |= __builtin_mul_overflow(elements, d, &elements);
  overflow |= __builtin_mul_overflow(elements, int64_t{PrimitiveByteWidth(shape.element_type())}, &bytes);
  if (overflow || bytes > kMaxArrayBytes)
    return InvalidArgument("shape ", shape.ToString(false), " has ", overflow ? ExactProduct(dims) : std::to_string(elements),
                           " elements, more than kiln supports (at most 2^62 bytes per array)");
  return OkStatus();
}

Layout& Shape::mutable_layout() {
  if (!layout_) layout_ = Layout::Default(rank());
  return *layout_;
}

void Shape::clear_layout() {
  layout_.reset();
  for (Shape& s : tuple_) s.clear_layout();
}

Layout Shape::layout_or_default() const { return layout_ ? *layout_ : Layout::Default(rank()); }

void Shape::set_default_layouts() {
  if (IsTuple()) {
    for (Shape& s : tuple_) s.set_default_layouts();
    return;
  }
  if (IsArray() && !layout_) layout_ = Layout::Default(rank());
}

const Shape& Shape::Subshape(const std::vector<int64_t>& index) const {
  const Shape* s = this;
  for (int64_t i : index) s = &s->tuple_[i];
  return *s;
}

int64_t Shape::LeafCount() const {
  if (IsTuple()) {
    int64_t n = 0;
    for (const Shape& s : tuple_) n += s.LeafCount();
    return n;
  }
  return IsArray() ? 1 : 0;
}

std::string Shape::ToString(bool print_layout) const {
  if (IsTuple()) {
    return "(" +
           StrJoin(tuple_, ", ",
                   [&](std::ostream& os, const Shape& s) { os << s.ToString(print_layout); }) +
           ")";
  }
  if (element_type_ == PrimitiveType::kInvalid) return "invalid[]";
  std::string s(PrimitiveTypeName(element_type_));
  s += "[";
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i) s += ",";
    if (dims_[i] == kUnboundedSize) {
      s += "?";
    } else {
      if (dynamic_[i]) s += "<=";
      s += std::to_string(dims_[i]);
    }
  }
  s += "]";
  if (print_layout && layout_ && IsArray()) s += layout_->ToString();
  return s;
}

bool Shape::Compatible(const Shape& a, const Shape& b) { return Equal(a, b, false); }

bool Shape::Equal(const Shape& a, const Shape& b, bool compare_layouts) {
  if (a.element_type_ != b.element_type_) return false;
  if (a.IsTuple()) {
    if (a.tuple_.size() != b.tuple_.size()) return false;
    for (size_t i = 0; i < a.tuple_.size(); ++i)
      if (!Equal(a.tuple_[i], b.tuple_[i], compare_layouts)) return false;
    return true;
  }
  if (a.dims_ != b.dims_ || a.dynamic_ != b.dynamic_) return false;
  if (compare_layouts && a.IsArray()) {
    Layout la = a.layout_or_default(), lb = b.layout_or_default();
    if (la != lb) return false;
  }
  return true;
}

std::string ProgramShape::ToString(bool print_layout) const {
  std::string s = "(";
  for (size_t i = 0; i < parameters.size(); ++i) {
    if (i) s += ", ";
    if (i < parameter_names.size() && !parameter_names[i].empty()) s += parameter_names[i] + ": ";
    s += parameters[i].ToString(print_layout);
  }
  s += ")->" + result.ToString(print_layout);
  return s;
}

std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size());
  int64_t s = 1;
  for (int64_t i = static_cast<int64_t>(dims.size()) - 1; i >= 0; --i) {
    strides[i] = s;
    s = SaturatingMul(s, dims[i]);
  }
  return strides;
}

}  // namespace kiln
