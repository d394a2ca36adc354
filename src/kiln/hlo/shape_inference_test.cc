// Tests of the per-family shape inference functions (shapes and attributes in, shape out).
// InferShape over whole instructions is exercised through the verifier tests, which read HLO
// text.
#include "kiln/hlo/shape_inference.h"

#include <limits>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace kiln {
namespace {

using ::testing::HasSubstr;
using PT = PrimitiveType;

Shape A(PT t, std::vector<int64_t> dims) { return Shape::Array(t, std::move(dims)); }
Shape F32(std::vector<int64_t> d) { return A(PT::kF32, std::move(d)); }
Shape S32(std::vector<int64_t> d) { return A(PT::kS32, std::move(d)); }

// Shape text without layout, for compact expectations.
std::string T(const StatusOr<Shape>& s) {
  return s.ok() ? s->ToString(false) : "error: " + s.status().message();
}
std::string Err(const StatusOr<Shape>& s) { return s.ok() ? "ok: " + s->ToString(false) : s.status().message(); }

ProgramShape Prog(std::vector<Shape> params, Shape result) {
  ProgramShape p;
  p.parameters = std::move(params);
  p.result = std::move(result);
  return p;
}
ProgramShape AddF32() { return Prog({F32({}), F32({})}, F32({})); }

// ---- elementwise ----------------------------------------------------------------------------

TEST(ShapeInferenceElementwise, Unary) {
  EXPECT_EQ(T(InferUnaryOpShape(HloOpcode::kExp, F32({2, 3}))), "f32[2,3]");
  EXPECT_EQ(T(InferUnaryOpShape(HloOpcode::kAbs, A(PT::kC64, {4}))), "f32[4]");
  EXPECT_EQ(T(InferUnaryOpShape(HloOpcode::kReal, A(PT::kC128, {4}))), "f64[4]");
  EXPECT_EQ(T(InferUnaryOpShape(HloOpcode::kImag, F32({4}))), "f32[4]");
  EXPECT_EQ(T(InferUnaryOpShape(HloOpcode::kIsFinite, A(PT::kBF16, {4}))), "pred[4]");
  EXPECT_EQ(T(InferUnaryOpShape(HloOpcode::kNot, A(PT::kPred, {4}))), "pred[4]");
  EXPECT_EQ(T(InferUnaryOpShape(HloOpcode::kPopulationCount, A(PT::kU8, {4}))), "u8[4]");
  EXPECT_EQ(T(InferUnaryOpShape(HloOpcode::kAbs, S32({4}))), "s32[4]");
  EXPECT_EQ(T(InferUnaryOpShape(HloOpcode::kCopy, Shape::Tuple({F32({1}), Shape::Token()}))),
            "(f32[1], token[])");

  EXPECT_THAT(Err(InferUnaryOpShape(HloOpcode::kFloor, S32({4}))), HasSubstr("floating-point"));
  EXPECT_THAT(Err(InferUnaryOpShape(HloOpcode::kExp, S32({4}))), HasSubstr("floating-point or complex"));
  EXPECT_THAT(Err(InferUnaryOpShape(HloOpcode::kNot, F32({4}))), HasSubstr("pred or integer"));
  EXPECT_THAT(Err(InferUnaryOpShape(HloOpcode::kAbs, A(PT::kU32, {4}))), HasSubstr("signed"));
  EXPECT_THAT(Err(InferUnaryOpShape(HloOpcode::kClz, F32({4}))), HasSubstr("integer"));
  EXPECT_THAT(Err(InferUnaryOpShape(HloOpcode::kNegate, A(PT::kPred, {4}))), HasSubstr("integer"));
  EXPECT_THAT(Err(InferUnaryOpShape(HloOpcode::kExp, Shape::Tuple({}))), HasSubstr("must be an array"));
}

TEST(ShapeInferenceElementwise, Binary) {
  EXPECT_EQ(T(InferBinaryOpShape(HloOpcode::kAdd, F32({2, 3}), F32({2, 3}))), "f32[2,3]");
  EXPECT_EQ(T(InferBinaryOpShape(HloOpcode::kCompare, S32({5}), S32({5}))), "pred[5]");
  EXPECT_EQ(T(InferBinaryOpShape(HloOpcode::kComplex, F32({5}), F32({5}))), "c64[5]");
  EXPECT_EQ(T(InferBinaryOpShape(HloOpcode::kComplex, A(PT::kF64, {}), A(PT::kF64, {}))), "c128[]");
  EXPECT_EQ(T(InferBinaryOpShape(HloOpcode::kAnd, A(PT::kPred, {2}), A(PT::kPred, {2}))), "pred[2]");
  EXPECT_EQ(T(InferBinaryOpShape(HloOpcode::kShiftLeft, A(PT::kU32, {2}), A(PT::kU32, {2}))), "u32[2]");
  // Mixed fp precision: the higher precision wins (the verifier decides if it is allowed).
  EXPECT_EQ(T(InferBinaryOpShape(HloOpcode::kMultiply, A(PT::kBF16, {2}), F32({2}))), "f32[2]");

  EXPECT_THAT(Err(InferBinaryOpShape(HloOpcode::kAdd, F32({2, 3}), F32({3, 2}))),
              HasSubstr("different dimensions"));
  EXPECT_THAT(Err(InferBinaryOpShape(HloOpcode::kAdd, F32({2, 3}), F32({}))),
              HasSubstr("no implicit broadcasting"));
  EXPECT_THAT(Err(InferBinaryOpShape(HloOpcode::kAdd, F32({2}), S32({2}))),
              HasSubstr("different element types"));
  EXPECT_THAT(Err(InferBinaryOpShape(HloOpcode::kShiftLeft, F32({2}), F32({2}))), HasSubstr("integer"));
  EXPECT_THAT(Err(InferBinaryOpShape(HloOpcode::kXor, F32({2}), F32({2}))), HasSubstr("pred or integer"));
  EXPECT_THAT(Err(InferBinaryOpShape(HloOpcode::kSubtract, A(PT::kPred, {2}), A(PT::kPred, {2}))),
              HasSubstr("not pred"));
  EXPECT_THAT(Err(InferBinaryOpShape(HloOpcode::kComplex, A(PT::kF16, {2}), A(PT::kF16, {2}))),
              HasSubstr("f32 or f64"));
}

TEST(ShapeInferenceElementwise, SelectClamp) {
  EXPECT_EQ(T(InferSelectShape(A(PT::kPred, {3}), S32({3}), S32({3}))), "s32[3]");
  EXPECT_THAT(Err(InferSelectShape(A(PT::kPred, {}), S32({3}), S32({3}))),
              HasSubstr("operands' dimensions"));
  EXPECT_THAT(Err(InferSelectShape(S32({3}), S32({3}), S32({3}))), HasSubstr("must be pred"));
  EXPECT_THAT(Err(InferSelectShape(A(PT::kPred, {3}), S32({3}), F32({3}))), HasSubstr("same shape"));
  EXPECT_EQ(T(InferClampShape(F32({}), F32({4}), F32({}))), "f32[4]");
  EXPECT_EQ(T(InferClampShape(F32({4}), F32({4}), F32({4}))), "f32[4]");
  EXPECT_THAT(Err(InferClampShape(F32({3}), F32({4}), F32({}))), HasSubstr("clamp bounds"));
}

TEST(ShapeInferenceElementwise, Conversions) {
  EXPECT_EQ(T(InferConvertShape(F32({2}), PT::kBF16)), "bf16[2]");
  EXPECT_THAT(Err(InferConvertShape(Shape::Tuple({}), PT::kBF16)), HasSubstr("arrays only"));
  // bitcast-convert: narrowing adds a minor dimension, widening removes it.
  EXPECT_EQ(T(InferBitcastConvertShape(F32({2, 3}), PT::kU8)), "u8[2,3,4]");
  EXPECT_EQ(T(InferBitcastConvertShape(A(PT::kU8, {2, 4}), PT::kF32)), "f32[2]");
  EXPECT_EQ(T(InferBitcastConvertShape(F32({2}), PT::kS32)), "s32[2]");
  EXPECT_EQ(T(InferBitcastConvertShape(A(PT::kS4, {6, 2}), PT::kS8)), "s8[6]");
  EXPECT_THAT(Err(InferBitcastConvertShape(A(PT::kU8, {2, 3}), PT::kF32)),
              HasSubstr("minor dimension of size 4"));
  EXPECT_THAT(Err(InferBitcastConvertShape(F32({2}), PT::kC64)), HasSubstr("complex and real"));
  EXPECT_EQ(T(InferStochasticConvertShape(F32({4}), A(PT::kU32, {4}), PT::kBF16)), "bf16[4]");
  EXPECT_THAT(Err(InferStochasticConvertShape(F32({4}), A(PT::kU16, {4}), PT::kBF16)),
              HasSubstr("bit width"));
  EXPECT_THAT(Err(InferStochasticConvertShape(F32({4}), S32({4}), PT::kBF16)), HasSubstr("unsigned"));
  EXPECT_EQ(T(InferReducePrecisionShape(F32({4}), 5, 10)), "f32[4]");
  EXPECT_THAT(Err(InferReducePrecisionShape(F32({4}), 0, 10)), HasSubstr("exponent_bits"));
  EXPECT_THAT(Err(InferReducePrecisionShape(S32({4}), 5, 10)), HasSubstr("floating-point"));
}

TEST(ShapeInferenceElementwise, Map) {
  Shape a = F32({2, 3}), b = F32({2, 3});
  EXPECT_EQ(T(InferMapShape({&a, &b}, AddF32())), "f32[2,3]");
  EXPECT_EQ(T(InferMapShape({&a, &b}, Prog({F32({}), F32({})}, A(PT::kPred, {})))), "pred[2,3]");
  EXPECT_THAT(Err(InferMapShape({&a}, AddF32())), HasSubstr("takes 2 parameters"));
  Shape c = F32({3, 2});
  EXPECT_THAT(Err(InferMapShape({&a, &c}, AddF32())), HasSubstr("same dimensions"));
  EXPECT_THAT(Err(InferMapShape({&a, &b}, Prog({F32({}), F32({})}, F32({2})))),
              HasSubstr("return a scalar"));
  EXPECT_THAT(Err(InferMapShape({&a, &b}, Prog({S32({}), F32({})}, F32({})))),
              HasSubstr("parameter 0"));
}

// ---- shape ops ------------------------------------------------------------------------------

TEST(ShapeInferenceShapeOps, BroadcastReshapeTranspose) {
  EXPECT_EQ(T(InferBroadcastShape(F32({3}), {2, 3}, {1})), "f32[2,3]");
  EXPECT_EQ(T(InferBroadcastShape(F32({}), {2, 3}, {})), "f32[2,3]");
  EXPECT_THAT(Err(InferBroadcastShape(F32({3}), {2, 3}, {0})), HasSubstr("sizes must be equal"));
  EXPECT_THAT(Err(InferBroadcastShape(F32({3}), {2, 3}, {2})), HasSubstr("out of range"));
  EXPECT_THAT(Err(InferBroadcastShape(F32({3, 3}), {3, 3}, {0, 0})), HasSubstr("repeats"));
  EXPECT_THAT(Err(InferBroadcastShape(F32({3}), {3, 2}, {})), HasSubstr("one entry per"));

  EXPECT_EQ(T(InferReshapeShape(F32({2, 3}), {3, 2})), "f32[3,2]");
  EXPECT_EQ(T(InferReshapeShape(F32({1}), {})), "f32[]");
  EXPECT_THAT(Err(InferReshapeShape(F32({2, 3}), {4, 2})), HasSubstr("element count"));

  EXPECT_EQ(T(InferTransposeShape(F32({2, 3, 4}), {2, 0, 1})), "f32[4,2,3]");
  EXPECT_THAT(Err(InferTransposeShape(F32({2, 3}), {0, 0})), HasSubstr("not a permutation"));
  EXPECT_THAT(Err(InferTransposeShape(F32({2, 3}), {1})), HasSubstr("not a permutation"));
}

TEST(ShapeInferenceShapeOps, Slices) {
  EXPECT_EQ(T(InferSliceShape(F32({10, 8}), {{0, 10, 3}, {2, 8, 2}})), "f32[4,3]");
  EXPECT_EQ(T(InferSliceShape(F32({10}), {{4, 4, 1}})), "f32[0]");
  EXPECT_THAT(Err(InferSliceShape(F32({10}), {{0, 11, 1}})), HasSubstr("out of range"));
  EXPECT_THAT(Err(InferSliceShape(F32({10}), {{5, 4, 1}})), HasSubstr("out of range"));
  EXPECT_THAT(Err(InferSliceShape(F32({10}), {{0, 4, 0}})), HasSubstr("stride"));
  EXPECT_THAT(Err(InferSliceShape(F32({10, 2}), {{0, 4, 1}})), HasSubstr("ranges for an operand of rank 2"));

  Shape i = S32({}), j = S32({}), u = A(PT::kU32, {}), v = S32({2});
  EXPECT_EQ(T(InferDynamicSliceShape(F32({10, 8}), {&i, &j}, {2, 8})), "f32[2,8]");
  EXPECT_EQ(T(InferDynamicSliceShape(F32({10, 8}), {&v}, {2, 8})), "f32[2,8]");
  EXPECT_THAT(Err(InferDynamicSliceShape(F32({10, 8}), {&i}, {2, 8})), HasSubstr("1 start indices"));
  EXPECT_THAT(Err(InferDynamicSliceShape(F32({10, 8}), {&i, &u}, {2, 8})), HasSubstr("one type"));
  EXPECT_THAT(Err(InferDynamicSliceShape(F32({10, 8}), {&i, &j}, {2, 9})), HasSubstr("out of range"));
  Shape f = F32({});
  EXPECT_THAT(Err(InferDynamicSliceShape(F32({10, 8}), {&i, &f}, {2, 8})), HasSubstr("integer scalars"));

  EXPECT_EQ(T(InferDynamicUpdateSliceShape(F32({10, 8}), F32({2, 8}), {&i, &j})), "f32[10,8]");
  EXPECT_THAT(Err(InferDynamicUpdateSliceShape(F32({10, 8}), F32({2, 9}), {&i, &j})),
              HasSubstr("larger than"));
  EXPECT_THAT(Err(InferDynamicUpdateSliceShape(F32({10, 8}), S32({2, 8}), {&i, &j})),
              HasSubstr("element type"));
}

TEST(ShapeInferenceShapeOps, ConcatPadReverse) {
  Shape a = F32({2, 3}), b = F32({2, 5}), c = F32({3, 5}), d = S32({2, 1});
  EXPECT_EQ(T(InferConcatenateShape({&a, &b}, 1)), "f32[2,8]");
  EXPECT_THAT(Err(InferConcatenateShape({&a, &c}, 1)), HasSubstr("differ in dimension 0"));
  EXPECT_THAT(Err(InferConcatenateShape({&a, &d}, 1)), HasSubstr("element types"));
  EXPECT_THAT(Err(InferConcatenateShape({&a, &b}, 2)), HasSubstr("out of range"));

  // Interior padding, negative edge padding.
  EXPECT_EQ(T(InferPadShape(F32({3, 4}), F32({}), {{1, 2, 1}, {-1, 0, 0}})), "f32[8,3]");
  EXPECT_EQ(T(InferPadShape(F32({0}), F32({}), {{0, 0, 5}})), "f32[0]");
  EXPECT_THAT(Err(InferPadShape(F32({3}), F32({}), {{-4, 0, 0}})), HasSubstr("negative size"));
  EXPECT_THAT(Err(InferPadShape(F32({3}), F32({}), {{0, 0, -1}})), HasSubstr("interior"));
  EXPECT_THAT(Err(InferPadShape(F32({3}), F32({1}), {{0, 0, 0}})), HasSubstr("scalar"));
  EXPECT_THAT(Err(InferPadShape(F32({3}), S32({}), {{0, 0, 0}})), HasSubstr("operand's type"));

  EXPECT_EQ(T(InferReverseShape(F32({3, 4}), {0, 1})), "f32[3,4]");
  EXPECT_THAT(Err(InferReverseShape(F32({3, 4}), {0, 0})), HasSubstr("repeats"));
  EXPECT_THAT(Err(InferReverseShape(F32({3, 4}), {2})), HasSubstr("out of range"));
}

TEST(ShapeInferenceShapeOps, Misc) {
  EXPECT_EQ(T(InferIotaShape(S32({4, 5}), 1)), "s32[4,5]");
  EXPECT_THAT(Err(InferIotaShape(S32({4, 5}), 2)), HasSubstr("out of range"));
  EXPECT_THAT(Err(InferIotaShape(S32({}), 0)), HasSubstr("rank >= 1"));
  EXPECT_THAT(Err(InferIotaShape(A(PT::kPred, {2}), 0)), HasSubstr("integer, floating-point"));

  Shape a = F32({2}), t = Shape::Token();
  EXPECT_EQ(T(InferTupleShape({&a, &t})), "(f32[2], token[])");
  Shape tup = Shape::Tuple({F32({2}), S32({})});
  EXPECT_EQ(T(InferGetTupleElementShape(tup, 1)), "s32[]");
  EXPECT_THAT(Err(InferGetTupleElementShape(tup, 2)), HasSubstr("out of range"));
  EXPECT_THAT(Err(InferGetTupleElementShape(F32({2}), 0)), HasSubstr("non-tuple"));

  EXPECT_EQ(T(InferGetDimensionSizeShape(F32({2, 3}), 1)), "s32[]");
  EXPECT_THAT(Err(InferGetDimensionSizeShape(F32({2, 3}), 2)), HasSubstr("out of range"));
  EXPECT_EQ(T(InferSetDimensionSizeShape(F32({2, 3}), S32({}), 1)), "f32[2,<=3]");
  EXPECT_THAT(Err(InferSetDimensionSizeShape(F32({2, 3}), A(PT::kS64, {}), 1)), HasSubstr("s32 scalar"));

  Shape in = A(PT::kBF16, {8, 1024});
  EXPECT_EQ(T(InferBitcastShape(in, A(PT::kBF16, {8192}))), "bf16[8192]");
  EXPECT_EQ(T(InferBitcastShape(in, A(PT::kF32, {4096}))), "f32[4096]");
  EXPECT_THAT(Err(InferBitcastShape(in, F32({8192}))), HasSubstr("changes the size"));

  std::vector<const Shape*> sizes;
  Shape s0 = S32({}), s1 = S32({});
  sizes = {&s0, &s1};
  EXPECT_EQ(T(InferDynamicReshapeShape(F32({6}), sizes, F32({2, 3}))), "f32[2,3]");
  EXPECT_THAT(Err(InferDynamicReshapeShape(F32({6}), {&s0}, F32({2, 3}))), HasSubstr("one size operand"));
}

// ---- dot / convolution ----------------------------------------------------------------------

DotDimensionNumbers Dnums(std::vector<int64_t> lb, std::vector<int64_t> rb, std::vector<int64_t> lc,
                          std::vector<int64_t> rc) {
  DotDimensionNumbers d;
  d.lhs_batch_dimensions = std::move(lb);
  d.rhs_batch_dimensions = std::move(rb);
  d.lhs_contracting_dimensions = std::move(lc);
  d.rhs_contracting_dimensions = std::move(rc);
  return d;
}

TEST(ShapeInferenceDot, Dot) {
  // Result order: batch, lhs free, rhs free.
  EXPECT_EQ(T(InferDotShape(F32({2, 3}), F32({3, 4}), Dnums({}, {}, {1}, {0}))), "f32[2,4]");
  EXPECT_EQ(T(InferDotShape(F32({7, 2, 3}), F32({7, 4, 3}), Dnums({0}, {0}, {2}, {2}))),
            "f32[7,2,4]");
  EXPECT_EQ(T(InferDotShape(F32({3, 5, 7}), F32({7, 3, 9}), Dnums({}, {}, {0, 2}, {1, 0}))),
            "f32[5,9]");
  // Preferred element types.
  EXPECT_EQ(T(InferDotShape(A(PT::kBF16, {2, 3}), A(PT::kBF16, {3, 4}), Dnums({}, {}, {1}, {0}),
                            PT::kF32)),
            "f32[2,4]");
  EXPECT_EQ(T(InferDotShape(A(PT::kS8, {2, 3}), A(PT::kS8, {3, 4}), Dnums({}, {}, {1}, {0}), PT::kS32)),
            "s32[2,4]");
  EXPECT_THAT(Err(InferDotShape(S32({2, 3}), S32({3, 4}), Dnums({}, {}, {1}, {0}), PT::kS8)),
              HasSubstr("narrower"));
  EXPECT_THAT(Err(InferDotShape(F32({2, 3}), F32({4, 4}), Dnums({}, {}, {1}, {0}))),
              HasSubstr("lhs contracting dimension 1 (size 3) does not match rhs contracting dimension 0 (size 4)"));
  EXPECT_THAT(Err(InferDotShape(F32({2, 3}), F32({3, 4}), Dnums({}, {}, {2}, {0}))),
              HasSubstr("out of range"));
  EXPECT_THAT(Err(InferDotShape(F32({2, 3}), F32({3, 4}), Dnums({1}, {0}, {1}, {0}))),
              HasSubstr("repeats"));
  EXPECT_THAT(Err(InferDotShape(F32({2, 3}), F32({3, 4}), Dnums({0}, {}, {1}, {0}))),
              HasSubstr("batch dimensions"));
  EXPECT_THAT(Err(InferDotShape(F32({5, 3}), F32({6, 3}), Dnums({0}, {0}, {1}, {1}))),
              HasSubstr("batch dimension 0 (size 5)"));
  // Sparse lhs: dimension 1 is stored compressed 2:4.
  EXPECT_EQ(T(InferSparseDotShape(F32({2, 8}), F32({16, 4}), Dnums({}, {}, {1}, {0}), PT::kF32,
                                  {SparsityDescriptor{"L.1@2:4"}})),
            "f32[2,4]");
}

TEST(ShapeInferenceDot, RaggedDot) {
  RaggedDotDimensionNumbers r;
  // Non-contracting ragged dimension: rhs group dimension 0 is dropped.
  r.lhs_ragged_dimensions = {0};
  r.rhs_group_dimensions = {0};
  EXPECT_EQ(T(InferRaggedDotShape(F32({11, 5}), F32({3, 5, 7}), A(PT::kS64, {3}),
                                  Dnums({}, {}, {1}, {1}), r)),
            "f32[11,7]");
  r.lhs_ragged_dimensions = {1};
  EXPECT_EQ(T(InferRaggedDotShape(F32({19, 11, 5}), F32({3, 5, 7}), A(PT::kS64, {19, 3}),
                                  Dnums({}, {}, {2}, {1}), r)),
            "f32[19,11,7]");
  EXPECT_THAT(Err(InferRaggedDotShape(F32({11, 5}), F32({4, 5, 7}), A(PT::kS64, {3}),
                                      Dnums({}, {}, {1}, {1}), RaggedDotDimensionNumbers{{0}, {0}})),
              HasSubstr("groups"));
  // Contracting ragged dimension: a leading group dimension.
  RaggedDotDimensionNumbers c;
  c.lhs_ragged_dimensions = {1};
  EXPECT_EQ(T(InferRaggedDotShape(F32({11, 5}), F32({5, 7}), S32({3}), Dnums({}, {}, {1}, {0}), c)),
            "f32[3,11,7]");
  // Batch ragged dimension.
  RaggedDotDimensionNumbers b;
  b.lhs_ragged_dimensions = {0};
  EXPECT_EQ(T(InferRaggedDotShape(F32({4, 11, 5}), F32({4, 5, 7}), S32({2}), Dnums({0}, {0}, {2}, {1}), b)),
            "f32[4,11,7]");
  EXPECT_THAT(Err(InferRaggedDotShape(F32({11, 5}), F32({5, 7}), F32({3}), Dnums({}, {}, {1}, {0}), c)),
              HasSubstr("integer array"));
}

ConvolutionDimensionNumbers Nhwc() {  // dim_labels=b01f_01io->b01f
  ConvolutionDimensionNumbers d;
  d.input_batch_dimension = 0;
  d.input_spatial_dimensions = {1, 2};
  d.input_feature_dimension = 3;
  d.kernel_spatial_dimensions = {0, 1};
  d.kernel_input_feature_dimension = 2;
  d.kernel_output_feature_dimension = 3;
  d.output_batch_dimension = 0;
  d.output_spatial_dimensions = {1, 2};
  d.output_feature_dimension = 3;
  return d;
}

Window Win(std::vector<WindowDimension> dims) { return Window{std::move(dims)}; }
WindowDimension WD(int64_t size, int64_t stride = 1, int64_t lo = 0, int64_t hi = 0,
                   int64_t lhs_dilate = 1, int64_t rhs_dilate = 1) {
  WindowDimension w;
  w.size = size;
  w.stride = stride;
  w.padding_low = lo;
  w.padding_high = hi;
  w.base_dilation = lhs_dilate;
  w.window_dilation = rhs_dilate;
  return w;
}

TEST(ShapeInferenceConv, Convolution) {
  // 3x3 same padding, stride 1.
  EXPECT_EQ(T(InferConvolutionShape(F32({8, 32, 32, 16}), F32({3, 3, 16, 64}), 1, 1,
                                    Win({WD(3, 1, 1, 1), WD(3, 1, 1, 1)}), Nhwc())),
            "f32[8,32,32,64]");
  // Stride 2, asymmetric padding, lhs and rhs dilation.
  EXPECT_EQ(T(InferConvolutionShape(F32({1, 7, 7, 4}), F32({3, 3, 4, 4}), 1, 1,
                                    Win({WD(3, 2, 0, 1), WD(3, 1, 0, 0, 2, 2)}), Nhwc())),
            "f32[1,3,9,4]");
  // Depthwise: feature_group_count = input features.
  EXPECT_EQ(T(InferConvolutionShape(F32({1, 5, 5, 32}), F32({3, 3, 1, 32}), 32, 1,
                                    Win({WD(3), WD(3)}), Nhwc())),
            "f32[1,3,3,32]");
  // batch_group_count divides the batch and the output features.
  EXPECT_EQ(T(InferConvolutionShape(F32({4, 5, 5, 3}), F32({5, 5, 3, 8}), 1, 4,
                                    Win({WD(5), WD(5)}), Nhwc())),
            "f32[1,1,1,8]");
  EXPECT_EQ(T(InferConvolutionShape(A(PT::kBF16, {1, 5, 5, 3}), A(PT::kBF16, {5, 5, 3, 8}), 1, 1,
                                    Win({WD(5), WD(5)}), Nhwc(), PT::kF32)),
            "f32[1,1,1,8]");
  EXPECT_THAT(Err(InferConvolutionShape(F32({1, 5, 5, 32}), F32({3, 3, 2, 32}), 32, 1,
                                        Win({WD(3), WD(3)}), Nhwc())),
              HasSubstr("feature_group_count=32"));
  EXPECT_THAT(Err(InferConvolutionShape(F32({3, 5, 5, 3}), F32({5, 5, 3, 8}), 1, 2,
                                        Win({WD(5), WD(5)}), Nhwc())),
              HasSubstr("batch_group_count=2"));
  EXPECT_THAT(Err(InferConvolutionShape(F32({1, 5, 5, 3}), F32({3, 3, 3, 8}), 1, 1,
                                        Win({WD(3), WD(2)}), Nhwc())),
              HasSubstr("does not match the kernel size"));
  EXPECT_THAT(Err(InferConvolutionShape(F32({1, 5, 5, 3}), F32({3, 3, 3, 8}), 1, 1,
                                        Win({WD(3, 0), WD(3)}), Nhwc())),
              HasSubstr("stride 0"));
  ConvolutionDimensionNumbers bad = Nhwc();
  bad.input_feature_dimension = 0;
  EXPECT_THAT(Err(InferConvolutionShape(F32({1, 5, 5, 3}), F32({3, 3, 3, 8}), 1, 1,
                                        Win({WD(3), WD(3)}), bad)),
              HasSubstr("input dimensions"));
}

TEST(ShapeInferenceConv, WindowArithmetic) {
  // Padded, base-dilated size 2*(5-1)+1 + 1 + 1 = 11, window dilated 2*(3-1)+1 = 5, stride 3.
  EXPECT_EQ(T(InferWindowOutputShape(F32({5}), Win({WD(3, 3, 1, 1, 2, 2)}), PT::kF32)), "f32[3]");
  EXPECT_EQ(T(InferWindowOutputShape(F32({2}), Win({WD(3)}), PT::kF32)), "f32[0]");
  EXPECT_THAT(Err(InferWindowOutputShape(F32({5}), Win({WD(0)}), PT::kF32)), HasSubstr("window size 0"));
  EXPECT_THAT(Err(InferWindowOutputShape(F32({5, 5}), Win({WD(1)}), PT::kF32)), HasSubstr("1 dimensions"));
}

// Issue 16: arithmetic on huge attributes or dimensions is checked, never wrapped; results too
// large for kiln are errors naming their element count.
TEST(ShapeInferenceOverflow, HugeAttributesAndResults) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  const int64_t big = int64_t{1} << 40;
  // Slice stride near INT64_MAX: one element.
  EXPECT_EQ(T(InferSliceShape(F32({10}), {{1, 10, kMax}})), "f32[1]");
  // Pad sizes past int64.
  EXPECT_THAT(Err(InferPadShape(F32({4}), F32({}), {{0, kMax, 0}})), HasSubstr("does not fit in 64 bits"));
  EXPECT_THAT(Err(InferPadShape(F32({4}), F32({}), {{0, 0, kMax}})), HasSubstr("does not fit in 64 bits"));
  EXPECT_THAT(Err(InferPadShape(F32({4}), F32({}), {{std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::min(), 0}})),
              HasSubstr("does not fit in 64 bits"));
  // Window padding and dilation past int64.
  EXPECT_THAT(Err(InferWindowOutputShape(F32({5}), Win({WD(1, 1, kMax, kMax)}), PT::kF32)),
              HasSubstr("does not fit in 64 bits"));
  EXPECT_EQ(T(InferWindowOutputShape(F32({5}), Win({WD(2, 1, 0, 0, 1, kMax)}), PT::kF32)), "f32[0]");  // window wider than any base
  // Results whose element count overflows: reshape and broadcast targets, a concatenate.
  const std::string too_many = "elements, more than kiln supports";
  EXPECT_THAT(Err(InferReshapeShape(F32({16}), {16777232, 1099510579201})),
              HasSubstr("f32[16777232,1099510579201] has 18446744073709551632 " + too_many));
  EXPECT_THAT(Err(InferBroadcastShape(F32({}), {4294967296, 4294967296, 4294967296}, {})),
              HasSubstr("has 79228162514264337593543950336 " + too_many));
  Shape a = F32({big, 1 << 20});
  std::vector<const Shape*> many(5, &a);
  EXPECT_EQ(T(InferConcatenateShape(many, 0)), "f32[5497558138880,1048576]");  // the family function
  // A bitcast between two arrays of 2^62 bytes (2^65 bits).
  EXPECT_EQ(T(InferBitcastShape(A(PT::kS8, {big, 1 << 22}), A(PT::kF32, {big, 1 << 20}))),
            "f32[1099511627776,1048576]");
}

TEST(ShapeInferenceLinalg, FftCholeskyTriangularBatchNorm) {
  EXPECT_EQ(T(InferFftShape(A(PT::kC64, {4, 8}), FftType::kFft, {8})), "c64[4,8]");
  EXPECT_EQ(T(InferFftShape(F32({4, 8}), FftType::kRfft, {8})), "c64[4,5]");
  EXPECT_EQ(T(InferFftShape(A(PT::kC128, {4, 5}), FftType::kIrfft, {8})), "f64[4,8]");
  EXPECT_EQ(T(InferFftShape(A(PT::kC64, {3, 4, 5}), FftType::kIrfft, {4, 8})), "f32[3,4,8]");
  EXPECT_THAT(Err(InferFftShape(F32({4, 8}), FftType::kFft, {8})), HasSubstr("complex"));
  EXPECT_THAT(Err(InferFftShape(F32({4, 8}), FftType::kRfft, {6})), HasSubstr("fft_length[0]=6"));
  EXPECT_THAT(Err(InferFftShape(A(PT::kC64, {4, 6}), FftType::kIrfft, {8})), HasSubstr("fft_length/2+1"));
  EXPECT_THAT(Err(InferFftShape(A(PT::kC64, {4}), FftType::kFft, {1, 2, 3, 4})), HasSubstr("1 to 3"));

  EXPECT_EQ(T(InferCholeskyShape(F32({2, 3, 3}))), "f32[2,3,3]");
  EXPECT_THAT(Err(InferCholeskyShape(F32({3, 4}))), HasSubstr("square"));
  TriangularSolveOptions left;
  left.left_side = true;
  EXPECT_EQ(T(InferTriangularSolveShape(F32({3, 3}), F32({3, 5}), left)), "f32[3,5]");
  EXPECT_EQ(T(InferTriangularSolveShape(F32({5, 5}), F32({3, 5}), TriangularSolveOptions{})), "f32[3,5]");
  EXPECT_THAT(Err(InferTriangularSolveShape(F32({3, 3}), F32({3, 5}), TriangularSolveOptions{})),
              HasSubstr("do not share"));

  EXPECT_EQ(T(InferBatchNormTrainingShape(F32({8, 4, 4, 16}), F32({16}), F32({16}), 3)),
            "(f32[8,4,4,16], f32[16], f32[16])");
  EXPECT_EQ(T(InferBatchNormInferenceShape(F32({8, 16}), F32({16}), F32({16}), F32({16}), F32({16}), 1)),
            "f32[8,16]");
  EXPECT_EQ(T(InferBatchNormGradShape(F32({8, 16}), F32({16}), F32({16}), F32({16}), F32({8, 16}), 1)),
            "(f32[8,16], f32[16], f32[16])");
  EXPECT_THAT(Err(InferBatchNormTrainingShape(F32({8, 16}), F32({8}), F32({16}), 1)),
              HasSubstr("scale must be a vector of 16"));
  EXPECT_THAT(Err(InferBatchNormTrainingShape(F32({8, 16}), F32({16}), F32({16}), 2)),
              HasSubstr("feature_index=2"));
  EXPECT_THAT(Err(InferBatchNormTrainingShape(S32({8, 16}), S32({16}), S32({16}), 1)),
              HasSubstr("floating-point"));
}

// ---- gather / scatter -----------------------------------------------------------------------

TEST(ShapeInferenceGather, Gather) {
  // The classic "take rows": operand [5,7], indices [4] -> [4,7].
  GatherDimensionNumbers d;
  d.offset_dims = {1};
  d.collapsed_slice_dims = {0};
  d.start_index_map = {0};
  d.index_vector_dim = 1;
  EXPECT_EQ(T(InferGatherShape(F32({5, 7}), S32({4}), d, {1, 7})), "f32[4,7]");
  // Index vector in dimension 1 of [4,2,3] -> batch dims 4,3.
  GatherDimensionNumbers e;
  e.offset_dims = {2};
  e.collapsed_slice_dims = {0, 1};
  e.start_index_map = {0, 1};
  e.index_vector_dim = 1;
  EXPECT_EQ(T(InferGatherShape(F32({5, 6, 7}), S32({4, 2, 3}), e, {1, 1, 7})), "f32[4,3,7]");
  // Batching dimensions: operand dim 0 pairs with indices dim 0.
  GatherDimensionNumbers b;
  b.offset_dims = {2};
  b.collapsed_slice_dims = {1};
  b.start_index_map = {1};
  b.index_vector_dim = 2;
  b.operand_batching_dims = {0};
  b.start_indices_batching_dims = {0};
  EXPECT_EQ(T(InferGatherShape(F32({3, 5, 7}), S32({3, 4}), b, {1, 1, 7})), "f32[3,4,7]");

  EXPECT_THAT(Err(InferGatherShape(F32({5, 7}), S32({4}), d, {2, 7})), HasSubstr("collapses dimension 0"));
  EXPECT_THAT(Err(InferGatherShape(F32({5, 7}), S32({4}), d, {1, 8})), HasSubstr("out of range"));
  EXPECT_THAT(Err(InferGatherShape(F32({5, 7}), F32({4}), d, {1, 7})), HasSubstr("integers"));
  GatherDimensionNumbers bad = d;
  bad.start_index_map = {0, 1};
  EXPECT_THAT(Err(InferGatherShape(F32({5, 7}), S32({4}), bad, {1, 7})), HasSubstr("start_index_map"));
  bad = d;
  bad.index_vector_dim = 3;
  EXPECT_THAT(Err(InferGatherShape(F32({5, 7}), S32({4}), bad, {1, 7})), HasSubstr("index_vector_dim=3"));
  bad = b;
  bad.start_indices_batching_dims = {1};
  EXPECT_THAT(Err(InferGatherShape(F32({3, 5, 7}), S32({3, 4}), bad, {1, 1, 7})),
              HasSubstr("does not match dimension 1 of the indices"));
  bad = d;
  bad.offset_dims = {};
  EXPECT_THAT(Err(InferGatherShape(F32({5, 7}), S32({4}), bad, {1, 7})), HasSubstr("each operand dimension"));
}

TEST(ShapeInferenceGather, Scatter) {
  ScatterDimensionNumbers d;
  d.update_window_dims = {1};
  d.inserted_window_dims = {0};
  d.scatter_dims_to_operand_dims = {0};
  d.index_vector_dim = 1;
  Shape operand = F32({5, 7}), indices = S32({4}), updates = F32({4, 7});
  EXPECT_EQ(T(InferScatterShape({&operand}, indices, {&updates}, d, AddF32())), "f32[5,7]");
  Shape operand2 = S32({5, 7}), updates2 = S32({4, 7});
  ProgramShape two = Prog({F32({}), S32({}), F32({}), S32({})}, Shape::Tuple({F32({}), S32({})}));
  EXPECT_EQ(T(InferScatterShape({&operand, &operand2}, indices, {&updates, &updates2}, d, two)),
            "(f32[5,7], s32[5,7])");
  Shape big = F32({4, 8});
  EXPECT_THAT(Err(InferScatterShape({&operand}, indices, {&big}, d, AddF32())), HasSubstr("exceeds"));
  Shape wrong_n = F32({3, 7});
  EXPECT_THAT(Err(InferScatterShape({&operand}, indices, {&wrong_n}, d, AddF32())),
              HasSubstr("must equal index dimension"));
  EXPECT_THAT(Err(InferScatterShape({&operand}, indices, {&updates}, d,
                                    Prog({F32({}), F32({}), F32({})}, F32({})))),
              HasSubstr("scatter update computation"));
  ScatterDimensionNumbers bad = d;
  bad.inserted_window_dims = {};
  EXPECT_THAT(Err(InferScatterShape({&operand}, indices, {&updates}, bad, AddF32())),
              HasSubstr("do not cover"));
}

// ---- reductions -----------------------------------------------------------------------------

TEST(ShapeInferenceReduce, Reduce) {
  Shape in = F32({2, 3, 4}), init = F32({});
  EXPECT_EQ(T(InferReduceShape({&in}, {&init}, {1}, AddF32())), "f32[2,4]");
  EXPECT_EQ(T(InferReduceShape({&in}, {&init}, {0, 1, 2}, AddF32())), "f32[]");
  Shape idx = S32({2, 3, 4}), idx_init = S32({});
  ProgramShape argmax = Prog({F32({}), S32({}), F32({}), S32({})}, Shape::Tuple({F32({}), S32({})}));
  EXPECT_EQ(T(InferReduceShape({&in, &idx}, {&init, &idx_init}, {2}, argmax)), "(f32[2,3], s32[2,3])");
  EXPECT_THAT(Err(InferReduceShape({&in}, {&init}, {3}, AddF32())), HasSubstr("out of range"));
  EXPECT_THAT(Err(InferReduceShape({&in}, {&init}, {1, 1}, AddF32())), HasSubstr("repeats"));
  EXPECT_THAT(Err(InferReduceShape({&in}, {&idx_init}, {1}, AddF32())), HasSubstr("init value type"));
  EXPECT_THAT(Err(InferReduceShape({&in}, {&init}, {1}, Prog({F32({}), F32({})}, F32({2})))),
              HasSubstr("must return scalars"));
  EXPECT_THAT(Err(InferReduceShape({&in}, {&init}, {1}, Prog({F32({})}, F32({})))),
              HasSubstr("must take 2 parameters"));
}

TEST(ShapeInferenceReduce, WindowsSortTopK) {
  Shape in = F32({4, 6}), init = F32({});
  EXPECT_EQ(T(InferReduceWindowShape({&in}, {&init}, Win({WD(2, 2), WD(3, 1, 1, 1)}), AddF32())),
            "f32[2,6]");
  EXPECT_THAT(Err(InferReduceWindowShape({&in}, {&init}, Win({WD(2, 2)}), AddF32())),
              HasSubstr("window has 1 dimensions"));

  ProgramShape ge = Prog({F32({}), F32({})}, A(PT::kPred, {}));
  EXPECT_EQ(T(InferSelectAndScatterShape(in, ge, Win({WD(2, 2), WD(2, 2)}), F32({2, 3}), init, AddF32())),
            "f32[4,6]");
  EXPECT_THAT(Err(InferSelectAndScatterShape(in, ge, Win({WD(2, 2), WD(2, 2)}), F32({2, 2}), init,
                                             AddF32())),
              HasSubstr("windowed operand's dimensions"));
  EXPECT_THAT(Err(InferSelectAndScatterShape(in, AddF32(), Win({WD(2, 2), WD(2, 2)}), F32({2, 3}),
                                             init, AddF32())),
              HasSubstr("must return pred[]"));

  Shape keys = F32({3, 5}), vals = S32({3, 5});
  ProgramShape cmp2 = Prog({F32({}), F32({}), S32({}), S32({})}, A(PT::kPred, {}));
  EXPECT_EQ(T(InferSortShape({&keys}, 1, ge)), "f32[3,5]");
  EXPECT_EQ(T(InferSortShape({&keys, &vals}, 1, cmp2)), "(f32[3,5], s32[3,5])");
  EXPECT_THAT(Err(InferSortShape({&keys, &vals}, 1, ge)), HasSubstr("must take 4 parameters"));
  EXPECT_THAT(Err(InferSortShape({&keys}, 2, ge)), HasSubstr("out of range"));

  EXPECT_EQ(T(InferTopKShape(F32({3, 10}), 4)), "(f32[3,4], s32[3,4])");
  EXPECT_THAT(Err(InferTopKShape(F32({3, 10}), 11)), HasSubstr("k=11"));
}

// ---- control flow and collectives -----------------------------------------------------------

TEST(ShapeInferenceControl, WhileConditionalCall) {
  Shape state = Shape::Tuple({S32({}), F32({4})});
  ProgramShape cond = Prog({state}, A(PT::kPred, {}));
  ProgramShape body = Prog({state}, state);
  EXPECT_EQ(T(InferWhileShape(cond, body, state)), "(s32[], f32[4])");
  EXPECT_THAT(Err(InferWhileShape(Prog({state}, S32({})), body, state)), HasSubstr("return pred[]"));
  EXPECT_THAT(Err(InferWhileShape(cond, Prog({state}, F32({4})), state)), HasSubstr("body result"));
  EXPECT_THAT(Err(InferWhileShape(cond, body, F32({4}))), HasSubstr("loop state"));

  Shape a = F32({2}), b = S32({});
  std::vector<ProgramShape> branches = {Prog({F32({2})}, F32({})), Prog({S32({})}, F32({}))};
  EXPECT_EQ(T(InferConditionalShape(A(PT::kPred, {}), branches, {&a, &b})), "f32[]");
  EXPECT_EQ(T(InferConditionalShape(S32({}), branches, {&a, &b})), "f32[]");
  EXPECT_THAT(Err(InferConditionalShape(A(PT::kU32, {}), branches, {&a, &b})), HasSubstr("pred[] or s32[]"));
  EXPECT_THAT(Err(InferConditionalShape(S32({}), branches, {&b, &b})), HasSubstr("branch 0 parameter"));
  std::vector<ProgramShape> mismatched = {Prog({F32({2})}, F32({})), Prog({S32({})}, S32({}))};
  EXPECT_THAT(Err(InferConditionalShape(S32({}), mismatched, {&a, &b})), HasSubstr("branch 1 returns"));

  EXPECT_EQ(T(InferCallShape({&a}, Prog({F32({2})}, S32({3})))), "s32[3]");
  EXPECT_THAT(Err(InferCallShape({&a, &b}, Prog({F32({2})}, S32({3})))), HasSubstr("takes 1 parameters"));
}

TEST(ShapeInferenceControl, Collectives) {
  Shape a = F32({4, 8}), b = S32({4});
  EXPECT_EQ(T(InferAllGatherShape({&a}, 1, 4)), "f32[4,32]");
  EXPECT_EQ(T(InferAllGatherShape({&a, &b}, 0, 2)), "(f32[8,8], s32[8])");
  EXPECT_THAT(Err(InferAllGatherShape({&a}, 2, 4)), HasSubstr("out of range"));
  EXPECT_EQ(T(InferReduceScatterShape({&a}, 1, 4)), "f32[4,2]");
  EXPECT_THAT(Err(InferReduceScatterShape({&a}, 1, 3)), HasSubstr("not divisible"));
  EXPECT_EQ(T(InferAllReduceShape({&a, &b})), "(f32[4,8], s32[4])");
  EXPECT_EQ(T(InferAllToAllShape({&a}, 1, 4)), "f32[4,8]");
  EXPECT_THAT(Err(InferAllToAllShape({&a}, 1, 3)), HasSubstr("not divisible"));
  EXPECT_EQ(T(InferAllToAllShape({&a, &a}, std::nullopt, 2)), "(f32[4,8], f32[4,8])");
  EXPECT_THAT(Err(InferAllToAllShape({&a, &b}, std::nullopt, 2)), HasSubstr("equal shapes"));
  EXPECT_EQ(T(InferCollectivePermuteShape({&a})), "f32[4,8]");
}

}  // namespace
}  // namespace kiln
