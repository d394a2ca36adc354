// Excerpt of openxla/xla xla/tests/dynamic_ops_test.cc at 003fb8efe3e20ced83bf16c0623f5361800d073a:
// the tests' HLO raw strings verbatim, the C++ between them left out.

XLA_TEST_F(HloTestBase, AddOfDUS) {
  const char* hlo_string = R"(
  HloModule m
  test {
    o = s32[6] constant({2,3,4,5,6,7})
    i = s32[] parameter(0)
    u = s32[2] parameter(1)
    dus = s32[6] dynamic-update-slice(o,u,i)
    a = s32[6] add(dus, dus)
    j = s32[] parameter(2)
    ROOT ds = s32[2] dynamic-slice(a, j), dynamic_slice_sizes={2}
  }
  )";
  EXPECT_TRUE(RunAndCompare(hlo_string, ErrorSpec{0, 0}));
}

XLA_TEST_F(HloTestBase,
           ShouldCorrectlyUpdateMultipleOutputFusedDynamicUpdateSlices) {
  const char* hlo_string = R"(
HloModule multi_output_fused_dus, input_output_alias={ {0}: (0, {}), {1}: (2, {}) }

fused_computation {
  p0 = bf16[10,11,12] parameter(0)
  p1 = bf16[1,11,12] parameter(1)
  p2 = bf16[8,11,12] parameter(2)
  p3 = bf16[1,11,12] parameter(3)
  p4 = s32[] parameter(4)
  c0 = s32[] constant(0)
  cmp = pred[] compare(p4, c0), direction=EQ
  broadcast = pred[1,11,12] broadcast(cmp), dimensions={}
  select = bf16[1,11,12] select(broadcast, p1, p3)
  dus0 = bf16[10,11,12] dynamic-update-slice(p0, select, c0, c0, c0)
  dus1 = bf16[8,11,12] dynamic-update-slice(p2, select, c0, c0, c0)
  ROOT tuple = (bf16[10,11,12], bf16[8,11,12]) tuple(dus0, dus1)
}

ENTRY main {
  p0 = bf16[10,11,12] parameter(0)
  p1 = bf16[1,11,12] parameter(1)
  p2 = bf16[8,11,12] parameter(2)
  p3 = bf16[1,11,12] parameter(3)
  p4 = s32[] parameter(4)
  ROOT fusion = (bf16[10,11,12], bf16[8,11,12]) fusion(p0, p1, p2, p3, p4), kind=kLoop, calls=fused_computation
})";
  EXPECT_TRUE(RunAndCompareNoHloPasses(hlo_string, ErrorSpec{0, 0}));
}
