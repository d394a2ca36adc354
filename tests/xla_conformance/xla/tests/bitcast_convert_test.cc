// Excerpt of openxla/xla xla/tests/bitcast_convert_test.cc at 001918b7024cf5f020051a9d25d2dd57a5896aaa:
// the text-based tests' HLO raw strings verbatim (the XlaBuilder tests left out).

XLA_TEST_F(BitcastConvertHloTest, S32to4S8) {
  absl::string_view hlo_string = R"(
HloModule bitcast_to_smaller

ENTRY main {
  p = s32[10] parameter(0)
  ROOT out = s8[10,4] bitcast-convert(p)
}
)";
  EXPECT_TRUE(RunAndCompare(hlo_string, ErrorSpec{0, 0}));
}

XLA_TEST_F(BitcastConvertHloTest, FourS8toS32) {
  absl::string_view hlo_string = R"(
HloModule bitcast_to_larger

ENTRY main {
  p = s8[10,4] parameter(0)
  ROOT out = s32[10] bitcast-convert(p)
}
)";
  EXPECT_TRUE(RunAndCompare(hlo_string, ErrorSpec{0, 0}));
}

XLA_TEST_F(BitcastConvertHloTest, F32to2F16) {
  absl::string_view hlo_string = R"(
HloModule bitcast_to_smaller

ENTRY main {
  p = f32[10] parameter(0)
  ROOT out = f16[10,2] bitcast-convert(p)
}
)";
  EXPECT_TRUE(RunAndCompare(hlo_string, ErrorSpec{1e-5, 1e-5}));
}

XLA_TEST_F(BitcastConvertHloTest, TwoF16toF32) {
  absl::string_view hlo_string = R"(
HloModule bitcast_to_smaller

ENTRY main {
  p = f16[10,2] parameter(0)
  ROOT out = f32[10] bitcast-convert(p)
}
)";
  EXPECT_TRUE(RunAndCompare(hlo_string, ErrorSpec{1e-5, 1e-5}));
}
