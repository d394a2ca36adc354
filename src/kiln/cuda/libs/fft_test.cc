// FFTs on the GPU (label gpu): cuFFT plans against the reference evaluator's `fft` for every
// type, 1-3 transformed dimensions, batches, odd and prime lengths, single and double
// precision; IRFFT leaves its input untouched; plans are cached. Skipped without a GPU.
#include "kiln/base/strings.h"
#include "kiln/cuda/libs/fft.h"
#include "kiln/cuda/libs/gpu_test_util.h"
#include "kiln/eval/evaluator.h"
#include "kiln/hlo/parser.h"

namespace kiln::cuda::libs {
namespace {

using testing::Matches;
using testing::RandomLiteral;

struct FftCase {
  std::string name;
  FftType type = FftType::kFft;
  PrimitiveType precision = PrimitiveType::kF32;
  std::vector<int64_t> batch_dims;
  std::vector<int64_t> fft_length;
};
std::ostream& operator<<(std::ostream& os, const FftCase& c) { return os << c.name; }

const char* TypeText(FftType t) {
  switch (t) {
    case FftType::kFft: return "FFT";
    case FftType::kIfft: return "IFFT";
    case FftType::kRfft: return "RFFT";
    case FftType::kIrfft: return "IRFFT";
  }
  return "?";
}

StatusOr<Literal> Reference(const FftCase& c, const Shape& in_shape, const Shape& out_shape,
                            const Literal& input) {
  const std::string text =
      StrCat("HloModule fft\nENTRY e {\n  x = ", in_shape.ToString(false), " parameter(0)\n",
             "  ROOT f = ", out_shape.ToString(false), " fft(x), fft_type=", TypeText(c.type),
             ", fft_length={", StrJoin(c.fft_length, ","), "}\n}\n");
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<HloModule> module, ParseHloModule(text));
  std::vector<Literal> args;
  args.push_back(input);
  return EvaluateModule(*module, args);
}

class FftTest : public testing::GpuTest, public ::testing::WithParamInterface<FftCase> {};

TEST_P(FftTest, MatchesTheEvaluator) {
  const FftCase& c = GetParam();
  FftDesc desc;
  desc.type = c.type;
  desc.precision = c.precision;
  desc.fft_length = c.fft_length;
  desc.batch = 1;
  for (int64_t b : c.batch_dims) desc.batch *= b;
  SCOPED_TRACE(desc.ToString());

  std::vector<int64_t> in_dims = c.batch_dims, out_dims = c.batch_dims;
  for (size_t i = 0; i < c.fft_length.size(); ++i) {
    const bool last = i + 1 == c.fft_length.size();
    const int64_t half = c.fft_length[i] / 2 + 1;
    in_dims.push_back(last && c.type == FftType::kIrfft ? half : c.fft_length[i]);
    out_dims.push_back(last && c.type == FftType::kRfft ? half : c.fft_length[i]);
  }
  const Shape in_shape = Shape::ArrayWithDefaultLayout(desc.input_type(), in_dims);
  const Shape out_shape = Shape::ArrayWithDefaultLayout(desc.output_type(), out_dims);
  Literal input = RandomLiteral(desc.input_type(), in_dims, std::hash<std::string>()(c.name));

  KILN_ASSERT_OK_AND_ASSIGN(Literal expected, Reference(c, in_shape, out_shape, input));

  KILN_ASSERT_OK_AND_ASSIGN(std::shared_ptr<FftPlan> plan, FftPlan::GetOrCreate(desc, *device_));
  KILN_ASSERT_OK_AND_ASSIGN(std::shared_ptr<FftPlan> again, FftPlan::GetOrCreate(desc, *device_));
  EXPECT_EQ(plan.get(), again.get()) << "plans are cached per (device, descriptor)";
  KILN_ASSERT_OK_AND_ASSIGN(runtime::DeviceMemory d_in, Upload(input));
  KILN_ASSERT_OK_AND_ASSIGN(runtime::DeviceMemory d_out, Alloc(plan->output_bytes()));
  KILN_ASSERT_OK_AND_ASSIGN(runtime::DeviceMemory ws, Alloc(plan->workspace_bytes()));
  KILN_ASSERT_OK(plan->Run(d_in, d_out, ws, *stream_));
  KILN_ASSERT_OK_AND_ASSIGN(Literal actual, Download(d_out, out_shape));
  // Errors of an FFT grow with log(n) and the magnitude of the whole transform.
  const Tolerance tol = c.precision == PrimitiveType::kF64 ? Tolerance{1e-9, 1e-9, 1e-12}
                                                           : Tolerance{1e-4, 1e-5, 2e-6};
  EXPECT_TRUE(Matches(actual, expected, tol));
  KILN_ASSERT_OK_AND_ASSIGN(Literal input_after, Download(d_in, in_shape));
  EXPECT_TRUE(input_after.BitwiseEquals(input)) << "the input was modified";
}

std::vector<FftCase> Cases() {
  using PT = PrimitiveType;
  std::vector<FftCase> cases;
  for (FftType t : {FftType::kFft, FftType::kIfft, FftType::kRfft, FftType::kIrfft}) {
    const std::string n = TypeText(t);
    cases.push_back({n + "_1d", t, PT::kF32, {4}, {64}});
    cases.push_back({n + "_1d_odd_batched", t, PT::kF32, {3, 5}, {45}});
    cases.push_back({n + "_2d", t, PT::kF32, {2}, {16, 12}});
    cases.push_back({n + "_3d", t, PT::kF32, {3}, {8, 6, 10}});
    cases.push_back({n + "_1d_prime_f64", t, PT::kF64, {2}, {97}});
    cases.push_back({n + "_2d_f64", t, PT::kF64, {}, {32, 30}});
    cases.push_back({n + "_1d_long", t, PT::kF32, {}, {8192}});
  }
  return cases;
}

// The references (HLO text through the evaluator) need no GPU: a sanity check of the shapes.
TEST(FftReferenceTest, EveryCaseHasAReference) {
  for (const FftCase& c : Cases()) {
    FftDesc desc;
    desc.type = c.type;
    desc.precision = c.precision;
    std::vector<int64_t> in_dims = c.batch_dims, out_dims = c.batch_dims;
    for (size_t i = 0; i < c.fft_length.size(); ++i) {
      const bool last = i + 1 == c.fft_length.size();
      in_dims.push_back(last && c.type == FftType::kIrfft ? c.fft_length[i] / 2 + 1 : c.fft_length[i]);
      out_dims.push_back(last && c.type == FftType::kRfft ? c.fft_length[i] / 2 + 1 : c.fft_length[i]);
    }
    const Shape in_shape = Shape::ArrayWithDefaultLayout(desc.input_type(), in_dims);
    const Shape out_shape = Shape::ArrayWithDefaultLayout(desc.output_type(), out_dims);
    StatusOr<Literal> ref = Reference(c, in_shape, out_shape, RandomLiteral(desc.input_type(), in_dims, 1));
    EXPECT_TRUE(ref.ok()) << c.name << ": " << ref.status().ToString();
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, FftTest, ::testing::ValuesIn(Cases()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace kiln::cuda::libs
