#include "kiln/hlo/literal.h"

#include <algorithm>
#include <cmath>
#include <new>
#include <stdexcept>

#include "kiln/base/strings.h"

namespace kiln {

Literal::Literal(const Shape& shape) : shape_(shape) {
  if (shape_.IsTuple()) {
    elements_.reserve(shape_.tuple_shapes_size());
    for (const Shape& s : shape_.tuple_shapes()) elements_.emplace_back(s);
  } else if (shape_.IsArray()) {
    // byte_size saturates: a shape too large for int64 fails to allocate, never wraps.
    data_.assign(static_cast<size_t>(shape_.byte_size()), 0);
  }
}

StatusOr<Literal> Literal::Create(const Shape& shape, std::string_view what) {
  KILN_RETURN_IF_ERROR(CheckShapeSize(shape));
  try {
    return Literal(shape);
  } catch (const std::bad_alloc&) {
  } catch (const std::length_error&) {
  }
  return ResourceExhausted("out of memory allocating ", shape.byte_size(), " bytes for ", what, " (",
                           shape.ToString(false), ")");
}

int64_t Literal::LinearIndex(std::span<const int64_t> index) const {
  int64_t linear = 0;
  const auto& dims = shape_.dimensions();
  for (size_t i = 0; i < index.size(); ++i) linear = linear * dims[i] + index[i];
  return linear;
}

namespace {
template <typename T>
double ToDouble(const T& v) {
  if constexpr (kIsComplexNative<T>) {
    return static_cast<double>(v.real());
  } else if constexpr (kIsMiniFloat<T>) {
    return v.ToDouble();
  } else if constexpr (kIsIntN<T>) {
    return static_cast<double>(static_cast<int64_t>(v));
  } else {
    return static_cast<double>(v);
  }
}
template <typename T>
std::complex<double> ToComplex(const T& v) {
  if constexpr (kIsComplexNative<T>) {
    return {static_cast<double>(v.real()), static_cast<double>(v.imag())};
  } else {
    return {ToDouble(v), 0.0};
  }
}
template <typename T>
int64_t ToInt64(const T& v) {
  if constexpr (kIsComplexNative<T>) {
    return static_cast<int64_t>(v.real());
  } else if constexpr (kIsMiniFloat<T>) {
    return static_cast<int64_t>(v.ToDouble());
  } else if constexpr (kIsIntN<T>) {
    return static_cast<int64_t>(v);
  } else {
    return static_cast<int64_t>(v);
  }
}
template <typename T>
T FromDouble(double v) {
  if constexpr (kIsComplexNative<T>) {
    return T(static_cast<typename T::value_type>(v), 0);
  } else if constexpr (std::is_same_v<T, bool>) {
    return v != 0;
  } else if constexpr (kIsIntN<T>) {
    return T(static_cast<int64_t>(v));
  } else {
    return T(v);
  }
}
template <typename T>
T FromInt64(int64_t v) {
  if constexpr (kIsComplexNative<T>) {
    return T(static_cast<typename T::value_type>(v), 0);
  } else if constexpr (std::is_same_v<T, bool>) {
    return v != 0;
  } else if constexpr (kIsMiniFloat<T>) {
    return T(static_cast<double>(v));
  } else {
    return static_cast<T>(v);
  }
}
}  // namespace

double Literal::GetAsDouble(int64_t i) const {
  return ArrayTypeSwitch(shape_.element_type(), [&](auto tag) -> double {
    using T = NativeTypeOf<decltype(tag)::value>;
    return ToDouble(data<T>()[i]);
  });
}

std::complex<double> Literal::GetAsComplex(int64_t i) const {
  return ArrayTypeSwitch(shape_.element_type(), [&](auto tag) -> std::complex<double> {
    using T = NativeTypeOf<decltype(tag)::value>;
    return ToComplex(data<T>()[i]);
  });
}

int64_t Literal::GetAsInt64(int64_t i) const {
  return ArrayTypeSwitch(shape_.element_type(), [&](auto tag) -> int64_t {
    using T = NativeTypeOf<decltype(tag)::value>;
    return ToInt64(data<T>()[i]);
  });
}

bool Literal::GetAsBool(int64_t i) const {
  return ArrayTypeSwitch(shape_.element_type(), [&](auto tag) -> bool {
    using T = NativeTypeOf<decltype(tag)::value>;
    const T& v = data<T>()[i];
    if constexpr (kIsComplexNative<T>) {
      return v != T(0);
    } else {
      return ToDouble(v) != 0;
    }
  });
}

void Literal::SetFromDouble(int64_t i, double v) {
  ArrayTypeSwitch(shape_.element_type(), [&](auto tag) {
    using T = NativeTypeOf<decltype(tag)::value>;
    data<T>()[i] = FromDouble<T>(v);
  });
}

void Literal::SetFromComplex(int64_t i, std::complex<double> v) {
  ArrayTypeSwitch(shape_.element_type(), [&](auto tag) {
    using T = NativeTypeOf<decltype(tag)::value>;
    if constexpr (kIsComplexNative<T>) {
      using C = typename T::value_type;
      data<T>()[i] = T(static_cast<C>(v.real()), static_cast<C>(v.imag()));
    } else {
      data<T>()[i] = FromDouble<T>(v.real());
    }
  });
}

void Literal::SetFromInt64(int64_t i, int64_t v) {
  ArrayTypeSwitch(shape_.element_type(), [&](auto tag) {
    using T = NativeTypeOf<decltype(tag)::value>;
    data<T>()[i] = FromInt64<T>(v);
  });
}

std::vector<Literal> Literal::DecomposeTuple() {
  std::vector<Literal> out = std::move(elements_);
  elements_.clear();
  shape_ = Shape::Tuple({});
  return out;
}

Literal Literal::MakeTuple(std::vector<Literal> elements) {
  std::vector<Shape> shapes;
  shapes.reserve(elements.size());
  for (const Literal& e : elements) shapes.push_back(e.shape());
  Literal l;
  l.shape_ = Shape::Tuple(std::move(shapes));
  l.elements_ = std::move(elements);
  return l;
}

static void Flatten(const Literal& l, std::vector<const Literal*>& out) {
  if (l.shape().IsTuple()) {
    for (const Literal& e : l.tuple_elements()) Flatten(e, out);
  } else {
    out.push_back(&l);
  }
}

std::vector<const Literal*> Literal::FlattenedLeaves() const {
  std::vector<const Literal*> out;
  Flatten(*this, out);
  return out;
}

const Literal& Literal::Subliteral(const std::vector<int64_t>& index) const {
  const Literal* l = this;
  for (int64_t i : index) l = &l->elements_[i];
  return *l;
}

Literal Literal::FromDoubles(const Shape& shape, const std::vector<double>& values) {
  Literal l(shape);
  int64_t n = std::min<int64_t>(l.element_count(), static_cast<int64_t>(values.size()));
  for (int64_t i = 0; i < n; ++i) l.SetFromDouble(i, values[i]);
  return l;
}

Literal Literal::FromInt64s(const Shape& shape, const std::vector<int64_t>& values) {
  Literal l(shape);
  int64_t n = std::min<int64_t>(l.element_count(), static_cast<int64_t>(values.size()));
  for (int64_t i = 0; i < n; ++i) l.SetFromInt64(i, values[i]);
  return l;
}

bool Literal::BitwiseEquals(const Literal& o) const {
  if (!Shape::Compatible(shape_, o.shape_)) return false;
  if (shape_.IsTuple()) {
    for (size_t i = 0; i < elements_.size(); ++i)
      if (!elements_[i].BitwiseEquals(o.elements_[i])) return false;
    return true;
  }
  return data_ == o.data_;
}

std::string Literal::ToShortString(int64_t max_elements) const {
  if (shape_.IsTuple()) {
    return "(" +
           StrJoin(elements_, ", ",
                   [&](std::ostream& os, const Literal& e) { os << e.ToShortString(max_elements); }) +
           ")";
  }
  std::string s = shape_.ToString(false);
  if (!shape_.IsArray()) return s;
  s += " {";
  int64_t n = element_count();
  for (int64_t i = 0; i < std::min(n, max_elements); ++i) {
    if (i) s += ", ";
    PrimitiveType t = shape_.element_type();
    if (IsComplexType(t)) {
      auto c = GetAsComplex(i);
      s += "(" + RoundTripDouble(c.real()) + ", " + RoundTripDouble(c.imag()) + ")";
    } else if (t == PrimitiveType::kPred) {
      s += GetAsBool(i) ? "true" : "false";
    } else if (IsIntegralType(t)) {
      if (t == PrimitiveType::kU64) {
        s += std::to_string(data<uint64_t>()[i]);
      } else {
        s += std::to_string(GetAsInt64(i));
      }
    } else if (t == PrimitiveType::kF32) {
      s += RoundTripFloat(data<float>()[i]);
    } else {
      s += RoundTripDouble(GetAsDouble(i));
    }
  }
  if (n > max_elements) s += ", ...";
  s += "}";
  return s;
}

}  // namespace kiln
