// Parser tests, attribute families: each attribute read into its typed field, checked exactly.
#include <gtest/gtest.h>

#include "kiln/hlo/parser.h"
#include "kiln/hlo/parser_test_util.h"
#include "kiln/hlo/printer.h"

namespace kiln {
namespace {

// Parses `body` as the entry computation of a module (with an `add` region available) and
// returns the module.
std::unique_ptr<HloModule> ParseBody(std::string_view body) {
  std::string text = std::string(R"(HloModule m
add {
  add_lhs = f32[] parameter(0)
  add_rhs = f32[] parameter(1)
  ROOT add_sum = f32[] add(add_lhs, add_rhs)
}
ENTRY e {
)") + std::string(body) + "\n}\n";
  auto m = ParseHloModule(text);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  if (!m.ok()) return nullptr;
  // Every parsed module must print to a fixed point.
  std::string p1 = (*m)->ToString();
  auto m2 = ParseHloModule(p1);
  EXPECT_TRUE(m2.ok()) << m2.status().ToString() << "\n" << p1;
  if (m2.ok()) {
    EXPECT_EQ(p1, (*m2)->ToString());
    EXPECT_EQ(testing_internal::CompareModules(**m, **m2), "") << p1;
  }
  return std::move(m).value();
}

const HloInstruction& Get(const HloModule& m, std::string_view name) {
  HloInstruction* i = nullptr;
  for (HloComputation* c : m.computations())
    if ((i = c->GetInstructionWithName(name))) break;
  EXPECT_TRUE(i) << name;
  return *i;
}

TEST(ParserAttributesTest, WindowAndDimLabels) {
  auto m = ParseBody(R"(
  a = f32[1,8,8,3]{3,2,1,0} parameter(0)
  k = f32[3,3,3,16]{3,2,1,0} parameter(1)
  ROOT c = f32[1,4,4,16]{3,2,1,0} convolution(a, k), window={size=3x3 stride=2x2 pad=1_1x0_1 lhs_dilate=1x1 rhs_dilate=2x1 rhs_reversal=0x1}, dim_labels=b01f_01io->b01f, feature_group_count=1, batch_group_count=1, operand_precision={highest,default})");
  ASSERT_TRUE(m);
  const HloAttributes& a = Get(*m, "c").attrs();
  ASSERT_TRUE(a.window);
  ASSERT_EQ(a.window->dimensions.size(), 2u);
  const WindowDimension& d0 = a.window->dimensions[0];
  const WindowDimension& d1 = a.window->dimensions[1];
  EXPECT_EQ(d0.size, 3);
  EXPECT_EQ(d0.stride, 2);
  EXPECT_EQ(d0.padding_low, 1);
  EXPECT_EQ(d0.padding_high, 1);
  EXPECT_EQ(d1.padding_low, 0);
  EXPECT_EQ(d1.padding_high, 1);
  EXPECT_EQ(d0.window_dilation, 2);
  EXPECT_EQ(d1.window_dilation, 1);
  EXPECT_FALSE(d0.window_reversal);
  EXPECT_TRUE(d1.window_reversal);
  ASSERT_TRUE(a.convolution_dimension_numbers);
  const ConvolutionDimensionNumbers& dn = *a.convolution_dimension_numbers;
  EXPECT_EQ(dn.input_batch_dimension, 0);
  EXPECT_EQ(dn.input_feature_dimension, 3);
  EXPECT_EQ(dn.input_spatial_dimensions, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(dn.kernel_input_feature_dimension, 2);
  EXPECT_EQ(dn.kernel_output_feature_dimension, 3);
  EXPECT_EQ(dn.kernel_spatial_dimensions, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(dn.output_feature_dimension, 3);
  EXPECT_EQ(a.precision_config.operand_precision,
            (std::vector<Precision>{Precision::kHighest, Precision::kDefault}));
  std::string printed = Get(*m, "c").ToString();
  EXPECT_NE(printed.find("window={size=3x3 stride=2x2 pad=1_1x0_1 rhs_dilate=2x1 rhs_reversal=0x1}, "
                         "dim_labels=b01f_01io->b01f, operand_precision={highest,default}"),
            std::string::npos)
      << printed;
}

TEST(ParserAttributesTest, NonCanonicalDimLabels) {
  auto m = ParseBody(R"(
  a = f32[2,3,5,5]{3,2,1,0} parameter(0)
  k = f32[4,3,1,1]{3,2,1,0} parameter(1)
  ROOT c = f32[2,4,5,5]{3,2,1,0} convolution(a, k), window={size=1x1}, dim_labels=bf01_oi01->bf01)");
  ASSERT_TRUE(m);
  const ConvolutionDimensionNumbers& dn = *Get(*m, "c").attrs().convolution_dimension_numbers;
  EXPECT_EQ(dn.input_feature_dimension, 1);
  EXPECT_EQ(dn.kernel_output_feature_dimension, 0);
  EXPECT_EQ(dn.kernel_input_feature_dimension, 1);
  EXPECT_EQ(dn.output_spatial_dimensions, (std::vector<int64_t>{2, 3}));
}

TEST(ParserAttributesTest, DotAndRaggedDot) {
  auto m = ParseBody(R"(
  a = f32[4,2,3]{2,1,0} parameter(0)
  b = f32[4,3,5]{2,1,0} parameter(1)
  d = f32[4,2,5]{2,1,0} dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}, operand_precision={high,highest}, algorithm=dot_tf32_tf32_f32
  g = s32[4]{0} parameter(2)
  ROOT r = f32[4,2,5]{2,1,0} ragged-dot(a, b, g), lhs_contracting_dims={2}, rhs_contracting_dims={1}, lhs_ragged_dims={0}, rhs_group_dims={0})");
  ASSERT_TRUE(m);
  const HloAttributes& d = Get(*m, "d").attrs();
  ASSERT_TRUE(d.dot_dimension_numbers);
  EXPECT_EQ(d.dot_dimension_numbers->lhs_batch_dimensions, std::vector<int64_t>{0});
  EXPECT_EQ(d.dot_dimension_numbers->lhs_contracting_dimensions, std::vector<int64_t>{2});
  EXPECT_EQ(d.dot_dimension_numbers->rhs_batch_dimensions, std::vector<int64_t>{0});
  EXPECT_EQ(d.dot_dimension_numbers->rhs_contracting_dimensions, std::vector<int64_t>{1});
  EXPECT_EQ(d.precision_config.algorithm, "dot_tf32_tf32_f32");
  EXPECT_EQ(d.precision_config.operand_precision[0], Precision::kHigh);
  const HloAttributes& r = Get(*m, "r").attrs();
  ASSERT_TRUE(r.ragged_dot_dimension_numbers);
  EXPECT_EQ(r.ragged_dot_dimension_numbers->lhs_ragged_dimensions, std::vector<int64_t>{0});
  EXPECT_EQ(r.ragged_dot_dimension_numbers->rhs_group_dimensions, std::vector<int64_t>{0});
}

TEST(ParserAttributesTest, SparseDot) {
  auto m = ParseBody(R"(
  a = f32[16,32]{1,0} parameter(0)
  b = f32[64,16]{1,0} parameter(1)
  meta = u16[16,4]{1,0} parameter(2)
  ROOT d = f32[16,16]{1,0} dot(a, b, meta), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sparsity=L.1@2:4)");
  // A sparse dot takes one metadata operand per sparsity descriptor after lhs and rhs.
  ASSERT_TRUE(m);
  const HloInstruction& d = Get(*m, "d");
  EXPECT_EQ(d.operand_count(), 3);
  ASSERT_EQ(d.attrs().sparsity.size(), 1u);
  EXPECT_EQ(d.attrs().sparsity[0].text, "L.1@2:4");
}

TEST(ParserAttributesTest, GatherScatterWithBatchingDims) {
  auto m = ParseBody(R"(
  op = f32[2,5,7]{2,1,0} parameter(0)
  idx = s32[2,3,1]{2,1,0} parameter(1)
  g = f32[2,3,7]{2,1,0} gather(op, idx), offset_dims={2}, collapsed_slice_dims={1}, start_index_map={1}, operand_batching_dims={0}, start_indices_batching_dims={0}, index_vector_dim=2, slice_sizes={1,1,7}, indices_are_sorted=true
  upd = f32[2,3,7]{2,1,0} parameter(2)
  ROOT s = f32[2,5,7]{2,1,0} scatter(op, idx, upd), update_window_dims={2}, inserted_window_dims={1}, scatter_dims_to_operand_dims={1}, input_batching_dims={0}, scatter_indices_batching_dims={0}, index_vector_dim=2, indices_are_sorted=true, unique_indices=true, to_apply=add)");
  ASSERT_TRUE(m);
  const HloAttributes& g = Get(*m, "g").attrs();
  ASSERT_TRUE(g.gather_dimension_numbers);
  EXPECT_EQ(g.gather_dimension_numbers->offset_dims, std::vector<int64_t>{2});
  EXPECT_EQ(g.gather_dimension_numbers->collapsed_slice_dims, std::vector<int64_t>{1});
  EXPECT_EQ(g.gather_dimension_numbers->start_index_map, std::vector<int64_t>{1});
  EXPECT_EQ(g.gather_dimension_numbers->operand_batching_dims, std::vector<int64_t>{0});
  EXPECT_EQ(g.gather_dimension_numbers->start_indices_batching_dims, std::vector<int64_t>{0});
  EXPECT_EQ(g.gather_dimension_numbers->index_vector_dim, 2);
  EXPECT_EQ(g.gather_slice_sizes, (std::vector<int64_t>{1, 1, 7}));
  EXPECT_TRUE(g.indices_are_sorted);
  const HloInstruction& s = Get(*m, "s");
  ASSERT_TRUE(s.attrs().scatter_dimension_numbers);
  const ScatterDimensionNumbers& sd = *s.attrs().scatter_dimension_numbers;
  EXPECT_EQ(sd.update_window_dims, std::vector<int64_t>{2});
  EXPECT_EQ(sd.inserted_window_dims, std::vector<int64_t>{1});
  EXPECT_EQ(sd.scatter_dims_to_operand_dims, std::vector<int64_t>{1});
  EXPECT_EQ(sd.input_batching_dims, std::vector<int64_t>{0});
  EXPECT_EQ(sd.scatter_indices_batching_dims, std::vector<int64_t>{0});
  EXPECT_EQ(sd.index_vector_dim, 2);
  EXPECT_TRUE(s.attrs().unique_indices);
  EXPECT_EQ(s.to_apply()->name(), "add");
}

TEST(ParserAttributesTest, SliceDynamicSlicePadIotaGte) {
  auto m = ParseBody(R"(
  p = f32[8,9]{1,0} parameter(0)
  s = f32[4,3]{1,0} slice(p), slice={[0:4], [1:9:3]}
  i = s32[] parameter(1)
  ds = f32[2,2]{1,0} dynamic-slice(p, i, i), dynamic_slice_sizes={2,2}
  z = f32[] constant(0)
  pd = f32[10,20]{1,0} pad(p, z), padding=1_1x-1_3_1
  io = s32[5]{0} iota(), iota_dimension=0
  t = (f32[8,9]{1,0}, s32[]) tuple(p, i)
  ROOT g = s32[] get-tuple-element(t), index=1)");
  ASSERT_TRUE(m);
  const auto& sl = Get(*m, "s").attrs().slice;
  ASSERT_EQ(sl.size(), 2u);
  EXPECT_EQ(sl[0], (SliceDimension{0, 4, 1}));
  EXPECT_EQ(sl[1], (SliceDimension{1, 9, 3}));
  EXPECT_EQ(Get(*m, "ds").attrs().dynamic_slice_sizes, (std::vector<int64_t>{2, 2}));
  const auto& pd = Get(*m, "pd").attrs().padding;
  ASSERT_EQ(pd.size(), 2u);
  EXPECT_EQ(pd[0], (PaddingDimension{1, 1, 0}));
  EXPECT_EQ(pd[1], (PaddingDimension{-1, 3, 1}));
  EXPECT_EQ(Get(*m, "io").attrs().iota_dimension, 0);
  EXPECT_EQ(Get(*m, "g").attrs().tuple_index, 1);
  EXPECT_NE(Get(*m, "pd").ToString().find("padding=1_1_0x-1_3_1"), std::string::npos);
}

TEST(ParserAttributesTest, CompareSortFftRngAndFriends) {
  auto m = ParseBody(R"(
  p = f32[4]{0} parameter(0)
  c = pred[4]{0} compare(p, p), direction=LT, type=TOTALORDER
  c2 = pred[4]{0} compare(p, p), direction=GE
  srt = f32[4]{0} sort(p), dimensions={0}, is_stable=true, to_apply=add
  cp = c64[4]{0} parameter(1)
  f = c64[4]{0} fft(cp), fft_type=IFFT, fft_length={4}
  lo = f32[] constant(0)
  r = f32[4]{0} rng(lo, lo), distribution=rng_normal
  st = u64[2]{0} parameter(2)
  rb = (u64[2]{0}, u32[4]{0}) rng-bit-generator(st), algorithm=rng_philox
  rp = f32[4]{0} reduce-precision(p), exponent_bits=5, mantissa_bits=10
  tk = (f32[2]{0}, s32[2]{0}) topk(p), k=2, largest=false
  ROOT t = (pred[4]{0}) tuple(c))");
  ASSERT_TRUE(m);
  EXPECT_EQ(Get(*m, "c").attrs().comparison_direction, ComparisonDirection::kLt);
  EXPECT_EQ(Get(*m, "c").attrs().comparison_type, ComparisonType::kTotalOrder);
  EXPECT_EQ(Get(*m, "c2").attrs().comparison_direction, ComparisonDirection::kGe);
  EXPECT_EQ(Get(*m, "c2").attrs().comparison_type, ComparisonType::kDefault);
  EXPECT_TRUE(Get(*m, "srt").attrs().is_stable);
  EXPECT_EQ(Get(*m, "srt").attrs().dimensions, std::vector<int64_t>{0});
  EXPECT_EQ(Get(*m, "f").attrs().fft_type, FftType::kIfft);
  EXPECT_EQ(Get(*m, "f").attrs().fft_length, std::vector<int64_t>{4});
  EXPECT_EQ(Get(*m, "r").attrs().distribution, RandomDistribution::kNormal);
  EXPECT_EQ(Get(*m, "rb").attrs().rng_algorithm, RandomAlgorithm::kPhilox);
  EXPECT_EQ(Get(*m, "rp").attrs().exponent_bits, 5);
  EXPECT_EQ(Get(*m, "rp").attrs().mantissa_bits, 10);
  EXPECT_EQ(Get(*m, "tk").attrs().k, 2);
  EXPECT_FALSE(Get(*m, "tk").attrs().largest);
}

TEST(ParserAttributesTest, LinalgAndBatchNorm) {
  auto m = ParseBody(R"(
  a = f32[4,4]{1,0} parameter(0)
  b = f32[4,4]{1,0} parameter(1)
  ts = f32[4,4]{1,0} triangular-solve(a, b), left_side=true, lower=true, unit_diagonal=true, transpose_a=ADJOINT
  ch = f32[4,4]{1,0} cholesky(a), lower=true
  x = f32[2,4]{1,0} parameter(2)
  s = f32[4]{0} parameter(3)
  ROOT bn = (f32[2,4]{1,0}, f32[4]{0}, f32[4]{0}) batch-norm-training(x, s, s), epsilon=0.001, feature_index=1)");
  ASSERT_TRUE(m);
  const TriangularSolveOptions& t = Get(*m, "ts").attrs().triangular_solve_options;
  EXPECT_TRUE(t.left_side && t.lower && t.unit_diagonal);
  EXPECT_EQ(t.transpose_a, TriangularTranspose::kAdjoint);
  EXPECT_TRUE(Get(*m, "ch").attrs().cholesky_lower);
  EXPECT_FALSE(Get(*m, "ts").attrs().cholesky_lower);
  EXPECT_EQ(Get(*m, "bn").attrs().epsilon, 0.001f);
  EXPECT_EQ(Get(*m, "bn").attrs().feature_index, 1);
}

TEST(ParserAttributesTest, FusionAndCustomCall) {
  auto m = ParseHloModule(R"(HloModule m
fc {
  p0 = f32[4]{0} parameter(0)
  ROOT n = f32[4]{0} negate(p0)
}
ENTRY e {
  p = f32[4]{0} parameter(0)
  f = f32[4]{0} fusion(p), kind=kLoop, calls=fc, output_to_operand_aliasing={{}: (0, {})}
  cc = (f32[4]{0}, s8[16]{0}) custom-call(f, p), custom_call_target="my$target", api_version=API_VERSION_TYPED_FFI, custom_call_has_side_effect=true, operand_layout_constraints={f32[4]{0}, f32[4]{0}}, output_to_operand_aliasing={{0}: (1, {})}, custom_call_schedule=SCHEDULE_LATEST, backend_config={"x":[1,{"y":"}"}]}, called_computations={fc}, literal=s32[2] {1, 2}
  cv = f32[1,4,4,1]{3,2,1,0} custom-call(p), custom_call_target="__cudnn$convForward", window={size=1x1}, dim_labels=b01f_01io->b01f, feature_group_count=2
  ROOT g = f32[4]{0} get-tuple-element(cc), index=0
})");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const HloInstruction& f = Get(**m, "f");
  EXPECT_EQ(f.attrs().fusion_kind, FusionKind::kLoop);
  EXPECT_EQ(f.fused_computation()->name(), "fc");
  ASSERT_EQ(f.attrs().output_to_operand_aliasing.size(), 1u);
  EXPECT_TRUE(f.attrs().output_to_operand_aliasing[0].output_index.empty());
  const HloInstruction& cc = Get(**m, "cc");
  const HloAttributes& a = cc.attrs();
  EXPECT_EQ(a.custom_call_target, "my$target");
  EXPECT_EQ(a.api_version, CustomCallApiVersion::kTypedFfi);
  EXPECT_TRUE(a.custom_call_has_side_effect);
  ASSERT_TRUE(a.operand_layout_constraints);
  EXPECT_EQ(a.operand_layout_constraints->size(), 2u);
  ASSERT_EQ(a.output_to_operand_aliasing.size(), 1u);
  EXPECT_EQ(a.output_to_operand_aliasing[0].output_index, std::vector<int64_t>{0});
  EXPECT_EQ(a.output_to_operand_aliasing[0].operand_number, 1);
  EXPECT_EQ(a.custom_call_schedule, CustomCallSchedule::kLatest);
  EXPECT_TRUE(cc.backend_config().is_json);
  EXPECT_EQ(cc.backend_config().text, R"({"x":[1,{"y":"}"}]})");
  ASSERT_EQ(cc.called_computations().size(), 1u);
  ASSERT_TRUE(cc.has_literal());
  EXPECT_EQ(cc.literal().Get<int32_t>({1}), 2);
  const HloAttributes& cv = Get(**m, "cv").attrs();
  ASSERT_TRUE(cv.window && cv.convolution_dimension_numbers);
  EXPECT_EQ(cv.feature_group_count, 2);
  std::string p1 = (*m)->ToString();
  auto m2 = ParseHloModule(p1);
  ASSERT_TRUE(m2.ok()) << m2.status().ToString();
  EXPECT_EQ(p1, (*m2)->ToString());
  EXPECT_EQ(testing_internal::CompareModules(**m, **m2), "") << p1;
}

TEST(ParserAttributesTest, ControlFlow) {
  auto m = ParseHloModule(R"(HloModule m
c { p = s32[] parameter(0)
    ROOT t = pred[] constant(true) }
b { p = s32[] parameter(0)
    ROOT n = s32[] negate(p) }
sel { a = f32[] parameter(0)
      b = f32[] parameter(1)
      ROOT g = pred[] compare(a, b), direction=GE }
sc { a = f32[] parameter(0)
     b = f32[] parameter(1)
     ROOT s = f32[] add(a, b) }
ENTRY e {
  i = s32[] parameter(0)
  w = s32[] while(i), condition=c, body=b
  pr = pred[] parameter(1)
  c1 = s32[] conditional(pr, i, i), true_computation=b, false_computation=b
  c2 = s32[] conditional(i, i, i, i), branch_computations={b, b, b}
  op = f32[4]{0} parameter(2)
  src = f32[2]{0} parameter(3)
  z = f32[] constant(0)
  ss = f32[4]{0} select-and-scatter(op, src, z), window={size=2 stride=2}, select=sel, scatter=sc
  cl = s32[] call(i), to_apply=b, is_composite=true
  ROOT t = (s32[], s32[], s32[]) tuple(w, c1, c2)
})");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const HloInstruction& w = Get(**m, "w");
  EXPECT_EQ(w.while_condition()->name(), "c");
  EXPECT_EQ(w.while_body()->name(), "b");
  EXPECT_EQ(Get(**m, "c1").branch_computations().size(), 2u);
  EXPECT_EQ(Get(**m, "c2").branch_computations().size(), 3u);
  const HloInstruction& ss = Get(**m, "ss");
  EXPECT_EQ(ss.select()->name(), "sel");
  EXPECT_EQ(ss.scatter()->name(), "sc");
  EXPECT_EQ(ss.attrs().window->dimensions[0].stride, 2);
  EXPECT_TRUE(Get(**m, "cl").attrs().is_composite);
  std::string printed = (*m)->ToString();
  EXPECT_NE(printed.find("true_computation=%b, false_computation=%b"), std::string::npos);
  EXPECT_NE(printed.find("branch_computations={%b, %b, %b}"), std::string::npos);
}

TEST(ParserAttributesTest, Collectives) {
  auto m = ParseBody(R"(
  p = f32[8]{0} parameter(0)
  ar = f32[8]{0} all-reduce(p), channel_id=1, replica_groups={{0,1},{2,3}}, use_global_device_ids=true, to_apply=add
  ag = f32[16]{0} all-gather(p), channel_id=2, replica_groups=[2,2]<=[2,2]T(1,0), dimensions={0}, constrain_layout=true
  rs = f32[4]{0} reduce-scatter(p), replica_groups={}, dimensions={0}, to_apply=add
  a2a = f32[8]{0} all-to-all(p), replica_groups={{0,1}}, dimensions={0}
  cp = f32[8]{0} collective-permute(p), channel_id=3, source_target_pairs={{0,1},{1,2},{2,0}}
  ars = f32[8]{0} all-reduce-start(p), replica_groups={}, to_apply=add
  ard = f32[8]{0} all-reduce-done(ars)
  ROOT t = (f32[8]{0}) tuple(ar))");
  ASSERT_TRUE(m);
  const HloAttributes& ar = Get(*m, "ar").attrs();
  EXPECT_EQ(ar.channel_id, 1);
  ASSERT_TRUE(ar.replica_groups);
  EXPECT_EQ(ar.replica_groups->groups, (std::vector<std::vector<int64_t>>{{0, 1}, {2, 3}}));
  EXPECT_TRUE(ar.use_global_device_ids);
  const HloAttributes& ag = Get(*m, "ag").attrs();
  ASSERT_TRUE(ag.replica_groups && ag.replica_groups->is_iota);
  EXPECT_EQ(ag.replica_groups->iota_group_shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(ag.replica_groups->iota_reshape_dims, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(ag.replica_groups->iota_transpose_perm, (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(ag.replica_groups->Groups(), (std::vector<std::vector<int64_t>>{{0, 2}, {1, 3}}));
  EXPECT_TRUE(ag.constrain_layout);
  EXPECT_EQ(ag.dimensions, std::vector<int64_t>{0});
  EXPECT_TRUE(Get(*m, "rs").attrs().replica_groups->groups.empty());
  EXPECT_EQ(Get(*m, "a2a").attrs().dimensions, std::vector<int64_t>{0});
  EXPECT_EQ(Get(*m, "cp").attrs().source_target_pairs,
            (std::vector<std::pair<int64_t, int64_t>>{{0, 1}, {1, 2}, {2, 0}}));
  EXPECT_EQ(Get(*m, "ard").operand(0)->opcode(), HloOpcode::kAllReduceStart);
}

TEST(ParserAttributesTest, SendRecvInfeedOutfeedCopyStartDomain) {
  auto m = ParseBody(R"(
  tok = token[] after-all()
  p = f32[4]{0} parameter(0)
  s = (f32[4]{0}, u32[], token[]) send(p, tok), channel_id=5, is_host_transfer=true
  sd = token[] send-done(s), channel_id=5, is_host_transfer=true
  r = (f32[4]{0}, u32[], token[]) recv(tok), channel_id=6
  rd = (f32[4]{0}, token[]) recv-done(r), channel_id=6
  inf = ((f32[4]{0}), token[]) infeed(tok), infeed_config="cfg"
  out = token[] outfeed(p, tok), outfeed_shape=f32[4]{0}, outfeed_config="o"
  cs = (f32[4]{0}, f32[4]{0}, u32[]) copy-start(p), cross_program_prefetch_index=0
  cd = f32[4]{0} copy-done(cs)
  dm = f32[4]{0} domain(cd), domain={kind="sharding", entry={maximal device=0}, exit={replicated}}
  ROOT t = (f32[4]{0}) tuple(dm))");
  ASSERT_TRUE(m);
  EXPECT_EQ(Get(*m, "s").attrs().channel_id, 5);
  EXPECT_TRUE(Get(*m, "s").attrs().is_host_transfer);
  EXPECT_TRUE(Get(*m, "sd").attrs().is_host_transfer);
  EXPECT_FALSE(Get(*m, "r").attrs().is_host_transfer);
  EXPECT_EQ(Get(*m, "inf").attrs().infeed_config, "cfg");
  EXPECT_EQ(Get(*m, "out").attrs().outfeed_config, "o");
  ASSERT_TRUE(Get(*m, "out").attrs().outfeed_shape);
  EXPECT_EQ(Get(*m, "out").attrs().outfeed_shape->ToString(), "f32[4]{0}");
  EXPECT_EQ(Get(*m, "cs").attrs().cross_program_prefetch_index, 0);
  const auto& dm = Get(*m, "dm").attrs().domain;
  ASSERT_TRUE(dm);
  EXPECT_EQ(dm->kind, "sharding");
  EXPECT_EQ(dm->entry, "{maximal device=0}");
  EXPECT_EQ(dm->exit, "{replicated}");
}

TEST(ParserAttributesTest, ScanAndReshape) {
  auto m = ParseBody(R"(
  p = f32[4]{0} parameter(0)
  z = f32[] constant(0)
  sc = (f32[4]{0}, f32[]) scan(p, z), dimensions={0}, num_carries=1, is_reverse=true, is_associative=true, to_apply=add
  ROOT r = f32[2,2]{1,0} reshape(p), inferred_dimension=1)");
  ASSERT_TRUE(m);
  const HloInstruction& sc = Get(*m, "sc");
  EXPECT_EQ(sc.attrs().scan_dimension, 0);
  EXPECT_TRUE(sc.attrs().is_reverse);
  EXPECT_EQ(sc.attrs().is_associative, true);
  ASSERT_EQ(sc.attrs().extra.size(), 1u);
  EXPECT_EQ(sc.attrs().extra[0], (std::pair<std::string, std::string>{"num_carries", "1"}));
  EXPECT_EQ(sc.to_apply()->name(), "add");
  EXPECT_EQ(Get(*m, "r").attrs().inferred_dimension, 1);
}

TEST(ParserAttributesTest, ShardingForms) {
  auto m = ParseBody(R"(
  a = f32[4]{0} parameter(0), sharding={replicated}
  b = f32[4]{0} parameter(1), sharding={maximal device=3}
  c = f32[4,4]{1,0} parameter(2), sharding={devices=[2,2]0,2,1,3}
  d = f32[4,4]{1,0} parameter(3), sharding={devices=[2,1,2]<=[2,2]T(1,0) last_tile_dim_replicate}
  e2 = f32[4,4]{1,0} parameter(4), sharding={devices=[2,2,2]<=[8] last_tile_dims={manual, replicated} shard_like 1 metadata={op_name="x"}}
  f = (f32[4]{0}, f32[]) parameter(5), sharding={{manual}, {unknown shard_as 2}}
  g = f32[4]{0} parameter(6), sharding={replicated metadata={{op_name="a"}, {op_name="b"}}}
  h = () parameter(7), sharding={}
  ROOT t = (f32[4]{0}) tuple(a), sharding={{unreduced}})");
  ASSERT_TRUE(m);
  using K = HloSharding::Kind;
  EXPECT_EQ(Get(*m, "a").sharding()->kind, K::kReplicated);
  EXPECT_EQ(Get(*m, "b").sharding()->kind, K::kMaximal);
  EXPECT_EQ(Get(*m, "b").sharding()->maximal_device, 3);
  const HloSharding& c = *Get(*m, "c").sharding();
  EXPECT_EQ(c.kind, K::kTiled);
  EXPECT_EQ(c.tile_assignment_dims, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(c.tile_assignment_devices, (std::vector<int64_t>{0, 2, 1, 3}));
  EXPECT_FALSE(c.iota);
  const HloSharding& d = *Get(*m, "d").sharding();
  EXPECT_TRUE(d.iota);
  EXPECT_EQ(d.iota_reshape_dims, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(d.iota_transpose_perm, (std::vector<int64_t>{1, 0}));
  EXPECT_TRUE(d.replicate_on_last_tile_dim);
  const HloSharding& e = *Get(*m, "e2").sharding();
  EXPECT_EQ(e.last_tile_dims, (std::vector<std::string>{"manual", "replicated"}));
  EXPECT_EQ(e.shard_group, "shard_like 1");
  EXPECT_EQ(e.metadata, std::vector<std::string>{"{op_name=\"x\"}"});
  const HloSharding& f = *Get(*m, "f").sharding();
  ASSERT_EQ(f.kind, K::kTuple);
  ASSERT_EQ(f.tuple_elements.size(), 2u);
  EXPECT_EQ(f.tuple_elements[0].kind, K::kManual);
  EXPECT_EQ(f.tuple_elements[1].kind, K::kUnknown);
  EXPECT_EQ(f.tuple_elements[1].shard_group, "shard_as 2");
  EXPECT_EQ(Get(*m, "g").sharding()->metadata.size(), 2u);
  EXPECT_EQ(Get(*m, "h").sharding()->kind, K::kTuple);
  EXPECT_TRUE(Get(*m, "h").sharding()->tuple_elements.empty());
}

TEST(ParserAttributesTest, MetadataWithCommasAndBracedFrontendAttributes) {
  // Older XLA text separates metadata fields with commas; frontend attribute values may be
  // braced dictionaries or lists (kept as their text).
  auto m = ParseBody(R"(
  x = f32[4] parameter(0), metadata={op_type="add", op_name="jit(f)/add", source_line=3}
  ROOT y = f32[4] add(x, x), frontend_attributes={composite.attributes={n = 1 : i32}, _xla_send_recv_source_target_pairs={{0,1},{1,2}}, s="t"})");
  ASSERT_TRUE(m);
  const OpMetadata& md = Get(*m, "x").metadata();
  EXPECT_EQ(md.op_type, "add");
  EXPECT_EQ(md.op_name, "jit(f)/add");
  EXPECT_EQ(md.source_line, 3);
  const auto& fa = Get(*m, "y").frontend_attributes();
  ASSERT_EQ(fa.size(), 3u);
  EXPECT_EQ(fa[0], (std::pair<std::string, std::string>{"composite.attributes", "{n = 1 : i32}"}));
  EXPECT_EQ(fa[1], (std::pair<std::string, std::string>{"_xla_send_recv_source_target_pairs", "{{0,1},{1,2}}"}));
  EXPECT_EQ(fa[2].second, "t");
}

TEST(ParserAttributesTest, MetadataFrontendAttributesBackendConfig) {
  auto m = ParseBody(R"(
  p = f32[4]{0} parameter(0), metadata={op_type="Add" op_name="jit(f)/add" source_file="/a/b.py" source_line=12 source_end_line=13 source_column=4 source_end_column=9 stack_frame_id=7 deduplicated_name="dd" preserve_layout=true scheduling_name="p" profile_type={1,2} size_of_generated_code_in_bytes=10}
  ROOT n = f32[4]{0} negate(p), frontend_attributes={_xla_compute_type="host",b="x\"y"}, backend_config="raw \"config\"", control-predecessors={p})");
  ASSERT_TRUE(m);
  const OpMetadata& md = Get(*m, "p").metadata();
  EXPECT_EQ(md.op_type, "Add");
  EXPECT_EQ(md.op_name, "jit(f)/add");
  EXPECT_EQ(md.source_file, "/a/b.py");
  EXPECT_EQ(md.source_line, 12);
  EXPECT_EQ(md.source_end_line, 13);
  EXPECT_EQ(md.source_column, 4);
  EXPECT_EQ(md.source_end_column, 9);
  EXPECT_EQ(md.stack_frame_id, 7);
  EXPECT_EQ(md.deduplicated_name, "dd");
  EXPECT_TRUE(md.preserve_layout);
  EXPECT_EQ(md.scheduling_name, "p");
  ASSERT_EQ(md.extra.size(), 2u);
  EXPECT_EQ(md.extra[0], (std::pair<std::string, std::string>{"profile_type", "{1,2}"}));
  const HloInstruction& n = Get(*m, "n");
  ASSERT_EQ(n.frontend_attributes().size(), 2u);
  EXPECT_EQ(n.frontend_attributes()[0].first, "_xla_compute_type");
  EXPECT_EQ(n.frontend_attributes()[1].second, "x\"y");
  EXPECT_FALSE(n.backend_config().is_json);
  EXPECT_EQ(n.backend_config().text, "raw \"config\"");
  ASSERT_EQ(n.control_predecessors().size(), 1u);
  EXPECT_EQ(n.control_predecessors()[0]->name(), "p");
}

TEST(ParserAttributesTest, AsyncSyntaxSugar) {
  auto m = ParseHloModule(R"(HloModule m
fc {
  q = f32[2]{0} parameter(0)
  ROOT e = f32[2]{0} exponential(q)
}
ENTRY e {
  p = f32[2]{0} parameter(0)
  s = ((f32[2]{0}), f32[2]{0}, u32[]) custom-call-start(p), custom_call_target="foo", async_execution_thread="side", metadata={op_name="s"}
  u = ((f32[2]{0}), f32[2]{0}, u32[]) custom-call-update(s)
  d = f32[2]{0} custom-call-done(u)
  fs = ((f32[2]{0}), f32[2]{0}, s32[]) fusion-start(d), kind=kLoop, calls=fc
  ROOT fd = f32[2]{0} fusion-done(fs)
})");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const HloInstruction& s = Get(**m, "s");
  EXPECT_EQ(s.opcode(), HloOpcode::kAsyncStart);
  EXPECT_EQ(s.attrs().async_execution_thread, "side");
  EXPECT_EQ(s.metadata().op_name, "s");
  ASSERT_EQ(s.called_computations().size(), 1u);
  const HloComputation* wrapped = s.called_computations()[0];
  EXPECT_EQ(wrapped->execution_thread(), "side");
  ASSERT_EQ(wrapped->num_parameters(), 1);
  const HloInstruction* cc = wrapped->root_instruction();
  EXPECT_EQ(cc->opcode(), HloOpcode::kCustomCall);
  EXPECT_EQ(cc->attrs().custom_call_target, "foo");
  EXPECT_EQ(cc->shape().ToString(), "f32[2]{0}");
  EXPECT_EQ(Get(**m, "u").opcode(), HloOpcode::kAsyncUpdate);
  EXPECT_EQ(Get(**m, "u").called_computations()[0], wrapped);
  EXPECT_EQ(Get(**m, "d").opcode(), HloOpcode::kAsyncDone);
  EXPECT_EQ(Get(**m, "d").called_computations()[0], wrapped);
  const HloInstruction* fusion = Get(**m, "fs").called_computations()[0]->root_instruction();
  EXPECT_EQ(fusion->opcode(), HloOpcode::kFusion);
  EXPECT_EQ(fusion->fused_computation()->name(), "fc");
  std::string printed = (*m)->ToString();
  EXPECT_NE(printed.find("custom-call-start(f32[2]{0} %p), async_execution_thread=\"side\", "
                         "custom_call_target=\"foo\", metadata={op_name=\"s\"}"),
            std::string::npos)
      << printed;
  EXPECT_NE(printed.find("fusion-start(f32[2]{0} %d), kind=kLoop, calls=%fc"), std::string::npos);
  EXPECT_EQ(printed.find("async_computation"), std::string::npos) << printed;
}

TEST(ParserAttributesTest, AsyncSugarInABareComputation) {
  // No ENTRY: the last written computation is the entry, not the synthesized wrapper; a
  // computation named like a wrapper does not collide with it.
  auto m = ParseHloModule(R"(e {
  p = f32[2]{0} parameter(0)
  s = ((f32[2]{0}), f32[2]{0}, u32[]) negate-start(p)
  ROOT d = f32[2]{0} negate-done(s)
}
s.async_computation {
  ROOT q = f32[] parameter(0)
})");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ((*m)->entry_computation()->name(), "s.async_computation");
  const HloInstruction* s = (*m)->GetComputationWithName("e")->GetInstructionWithName("s");
  ASSERT_EQ(s->called_computations().size(), 1u);
  EXPECT_NE(s->called_computations()[0]->name(), "s.async_computation");
  EXPECT_EQ(s->called_computations()[0]->root_instruction()->opcode(), HloOpcode::kNegate);
}

TEST(ParserAttributesTest, ComputationExecutionThread) {
  auto m = ParseHloModule(R"(HloModule m
%host (p: f32[2]) -> f32[2] {
  %p = f32[2]{0} parameter(0)
  ROOT %n = f32[2]{0} negate(%p)
}, execution_thread="host"
%other, execution_thread="x" {
  ROOT %q = f32[2]{0} parameter(0)
}
ENTRY %e {
  %a = f32[2]{0} parameter(0)
  %s = ((f32[2]{0}), f32[2]{0}, s32[]) async-start(%a), async_execution_thread="host", calls=%host
  ROOT %d = f32[2]{0} async-done(%s), async_execution_thread="host", calls=%host
})");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ((*m)->GetComputationWithName("host")->execution_thread(), "host");
  EXPECT_EQ((*m)->GetComputationWithName("other")->execution_thread(), "x");
  std::string printed = (*m)->ToString();
  // The computation is a one-instruction wrapper on the start's thread: sugar form.
  EXPECT_NE(printed.find("negate-start(f32[2]{0} %a), async_execution_thread=\"host\""),
            std::string::npos)
      << printed;
  EXPECT_NE(printed.find("}, execution_thread=\"x\"\n"), std::string::npos) << printed;
  auto m2 = ParseHloModule(printed);
  ASSERT_TRUE(m2.ok()) << m2.status().ToString();
  EXPECT_EQ(printed, (*m2)->ToString());
}

}  // namespace
}  // namespace kiln
