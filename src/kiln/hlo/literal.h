// Literal: a host value of any shape -- a dense array of one element type, or a tuple of
// literals. Arrays are stored densely in logical row-major order (the last dimension varies
// fastest) regardless of the shape's layout; layouts matter only where a program reinterprets
// memory (bitcast), which the evaluator handles explicitly.
//
// Element storage is PrimitiveByteWidth(type) bytes per element: sub-byte types (s4, u2,
// f4e2m1fn, ...) take one byte each, pred takes one byte holding 0 or 1, complex types hold
// (real, imag) pairs.
#pragma once

#include <complex>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/hlo/shape.h"
#include "kiln/hlo/types.h"

namespace kiln {

class Literal {
 public:
  Literal() : shape_(Shape::Tuple({})) {}
  // A zero-filled literal of `shape` (tuples get zero-filled elements; tokens are empty).
  // Throws std::bad_alloc when the host cannot hold it: use Create where the size comes from a
  // program or a file.
  explicit Literal(const Shape& shape);
  // The same without exceptions, for sizes that come from input (a module's shapes, a file's
  // header): InvalidArgument when the shape is larger than kiln supports (CheckShapeSize),
  // ResourceExhausted "out of memory allocating N bytes for <what>" when the host cannot hold it.
  static StatusOr<Literal> Create(const Shape& shape, std::string_view what);

  const Shape& shape() const { return shape_; }
  // Replaces the layout part of the shape (data stays in logical order).
  void set_layout(const Layout& layout) { shape_.set_layout(layout); }

  // ---- Arrays ----
  int64_t element_count() const { return shape_.IsArray() ? shape_.num_elements() : 0; }
  size_t size_bytes() const { return data_.size(); }
  uint8_t* untyped_data() { return data_.data(); }
  const uint8_t* untyped_data() const { return data_.data(); }

  // Typed views; T must be NativeTypeOf<shape().element_type()>.
  template <typename T>
  std::span<T> data() {
    return {reinterpret_cast<T*>(data_.data()), data_.size() / sizeof(T)};
  }
  template <typename T>
  std::span<const T> data() const {
    return {reinterpret_cast<const T*>(data_.data()), data_.size() / sizeof(T)};
  }
  template <typename T>
  T Get(std::span<const int64_t> index) const {
    return data<T>()[LinearIndex(index)];
  }
  template <typename T>
  T Get(std::initializer_list<int64_t> index) const {
    return Get<T>(std::span<const int64_t>(index.begin(), index.size()));
  }
  template <typename T>
  void Set(std::span<const int64_t> index, T value) {
    data<T>()[LinearIndex(index)] = value;
  }
  template <typename T>
  void Set(std::initializer_list<int64_t> index, T value) {
    Set<T>(std::span<const int64_t>(index.begin(), index.size()), value);
  }
  // Row-major linear position of a multi-index.
  int64_t LinearIndex(std::span<const int64_t> index) const;

  // Type-erased element access by linear index. Complex types: GetAsDouble gives the real
  // part. Conversions follow C++ casts (no saturation); use the evaluator for XLA's convert.
  double GetAsDouble(int64_t i) const;
  std::complex<double> GetAsComplex(int64_t i) const;
  int64_t GetAsInt64(int64_t i) const;
  bool GetAsBool(int64_t i) const;  // nonzero
  void SetFromDouble(int64_t i, double v);
  void SetFromComplex(int64_t i, std::complex<double> v);
  void SetFromInt64(int64_t i, int64_t v);

  // ---- Tuples ----
  int64_t tuple_size() const { return static_cast<int64_t>(elements_.size()); }
  const Literal& tuple_element(int64_t i) const { return elements_[i]; }
  Literal& mutable_tuple_element(int64_t i) { return elements_[i]; }
  const std::vector<Literal>& tuple_elements() const { return elements_; }
  // Moves the elements out, leaving an empty tuple.
  std::vector<Literal> DecomposeTuple();
  static Literal MakeTuple(std::vector<Literal> elements);
  // Leaves of a (nested) tuple in order, as out0, out1, ... are numbered.
  std::vector<const Literal*> FlattenedLeaves() const;
  // The sub-literal at a tuple index path.
  const Literal& Subliteral(const std::vector<int64_t>& index) const;

  // ---- Construction helpers ----
  template <typename T>
  static Literal CreateR0(PrimitiveType t, T v) {
    Literal l(Shape::ArrayWithDefaultLayout(t, {}));
    l.data<T>()[0] = v;
    return l;
  }
  template <typename T>
  static Literal CreateR1(PrimitiveType t, const std::vector<T>& v) {
    Literal l(Shape::ArrayWithDefaultLayout(t, {static_cast<int64_t>(v.size())}));
    std::copy(v.begin(), v.end(), l.data<T>().begin());
    return l;
  }
  // Array literal from values in row-major order (converted with SetFromDouble).
  static Literal FromDoubles(const Shape& shape, const std::vector<double>& values);
  static Literal FromInt64s(const Shape& shape, const std::vector<int64_t>& values);
  static Literal Token() { return Literal(Shape::Token()); }

  // Same shape (ignoring layout) and bitwise-identical data.
  bool BitwiseEquals(const Literal& o) const;

  // Short human summary: "f32[2,3] {1, 2, 3, 4, 5, 6}" with at most `max_elements` values.
  std::string ToShortString(int64_t max_elements = 8) const;

 private:
  Shape shape_;
  std::vector<uint8_t> data_;
  std::vector<Literal> elements_;
};

}  // namespace kiln
