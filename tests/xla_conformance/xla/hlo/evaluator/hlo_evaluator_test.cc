// Excerpt of openxla/xla xla/hlo/evaluator/hlo_evaluator_test.cc at 001918b7024cf5f020051a9d25d2dd57a5896aaa:
// one test's HLO raw string verbatim (from characters 100000-116000 of the file).

// Input values, for which IRFFT discards non-zero imaginary parts.
TEST_F(HloEvaluatorTest, 2D_IRFFT_3x4_on_c64x3x3) {
  const char* hlo_text = R"(
HloModule Fft

ENTRY main {
  operand = c64[3, 3] parameter(0)
  ROOT irfft = f32[3, 4] fft(operand), fft_type=IRFFT, fft_length={3, 4}
}
)";
}
