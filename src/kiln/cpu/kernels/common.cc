#include "kiln/cpu/kernels/common.h"

#include <algorithm>

namespace kiln::cpu::internal {

namespace {
void CollectLeaves(const Shape& s, std::vector<Shape>& out) {
  if (s.IsTuple()) {
    for (const Shape& e : s.tuple_shapes()) CollectLeaves(e, out);
  } else if (s.IsArray()) {
    out.push_back(s);
  }
}
}  // namespace

std::vector<Shape> ArrayLeaves(const Shape& shape) {
  std::vector<Shape> out;
  CollectLeaves(shape, out);
  return out;
}

StatusOr<Literal> LiteralFromViews(const Shape& shape, std::span<const ArrayView> views,
                                   size_t* next) {
  if (shape.IsTuple()) {
    std::vector<Literal> elements;
    for (const Shape& e : shape.tuple_shapes()) {
      KILN_ASSIGN_OR_RETURN(Literal l, LiteralFromViews(e, views, next));
      elements.push_back(std::move(l));
    }
    return Literal::MakeTuple(std::move(elements));
  }
  if (!shape.IsArray()) return Literal(shape);  // token / opaque: no data
  if (*next >= views.size())
    return InvalidArgument("expected an input view for ", ShapeText(shape), ", have only ",
                           views.size());
  const ArrayView& v = views[(*next)++];
  if (v.shape.element_type() != shape.element_type() ||
      v.shape.dimensions() != shape.dimensions())
    return InvalidArgument("input view ", ShapeText(v.shape), " does not match ",
                           ShapeText(shape));
  Literal l(shape);
  if (l.size_bytes() > 0) std::memcpy(l.untyped_data(), v.data, l.size_bytes());
  return l;
}

Status LiteralToViews(const Literal& literal, std::span<const ArrayView> views, size_t* next) {
  if (literal.shape().IsTuple()) {
    for (const Literal& e : literal.tuple_elements())
      KILN_RETURN_IF_ERROR(LiteralToViews(e, views, next));
    return OkStatus();
  }
  if (!literal.shape().IsArray()) return OkStatus();
  if (*next >= views.size())
    return InvalidArgument("result has more array leaves than the ", views.size(),
                           " output views");
  const ArrayView& v = views[(*next)++];
  if (v.shape.element_type() != literal.shape().element_type() ||
      v.shape.dimensions() != literal.shape().dimensions())
    return InvalidArgument("output view ", ShapeText(v.shape), " does not match the result ",
                           ShapeText(literal.shape()));
  if (literal.size_bytes() > 0) std::memcpy(v.data, literal.untyped_data(), literal.size_bytes());
  return OkStatus();
}

Status CheckViews(std::string_view what, std::span<const ArrayView> views,
                  const std::vector<Shape>& leaves) {
  if (views.size() != leaves.size())
    return InvalidArgument(what, ": expected ", leaves.size(), " arrays, got ", views.size());
  for (size_t i = 0; i < views.size(); ++i) {
    const Shape& s = leaves[i];
    if (views[i].shape.element_type() != s.element_type() ||
        views[i].shape.dimensions() != s.dimensions())
      return InvalidArgument(what, " ", i, ": expected ", ShapeText(s), ", got ",
                             ShapeText(views[i].shape));
    if (views[i].data == nullptr && s.num_elements() > 0)
      return InvalidArgument(what, " ", i, " has no data");
  }
  return OkStatus();
}

void ParallelCopy(const KernelContext& ctx, void* dst, const void* src, int64_t bytes) {
  if (dst == src || bytes <= 0) return;
  constexpr int64_t kChunk = 256 * 1024;
  const int64_t chunks = (bytes + kChunk - 1) / kChunk;
  ParallelFor(ctx, chunks, 4, [&](int64_t b, int64_t e) {
    const int64_t lo = b * kChunk, hi = std::min(bytes, e * kChunk);
    std::memcpy(static_cast<uint8_t*>(dst) + lo, static_cast<const uint8_t*>(src) + lo, hi - lo);
  });
}

}  // namespace kiln::cpu::internal
