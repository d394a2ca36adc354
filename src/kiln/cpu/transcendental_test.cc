// The f32 exp/tanh/log/logistic of fused loops (Note [Vectorized f32 transcendentals] in
// kernels/expr_elementwise.cc) against libm, element by element, over a sweep and the special
// values where vectorized approximations usually go wrong: overflow and denormal edges of exp,
// denormal inputs of log, NaN, infinities, signed zeros.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "kiln/base/strings.h"
#include "kiln/cpu/cpu_test_util.h"

namespace kiln::cpu {
namespace {

std::vector<float> Inputs() {
  std::vector<float> v;
  for (float x = -120.0f; x <= 120.0f; x += 0.37f) v.push_back(x);
  for (float x = -1e-3f; x <= 1e-3f; x += 3.1e-5f) v.push_back(x);
  const float inf = std::numeric_limits<float>::infinity();
  for (float x : {0.0f, -0.0f, inf, -inf, std::numeric_limits<float>::quiet_NaN(), 1e-30f, -1e-30f,
                  1e-40f, 1e-45f, -1e-40f, 88.0f, 88.5f, 88.7f, 88.8f, 89.0f, -87.0f, -87.5f,
                  -100.0f, -103.9f, -104.0f, -110.0f, 9.5f, -9.5f, 20.0f, -20.0f,
                  std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(),
                  std::numeric_limits<float>::min(), 1.0f, -1.0f})
    v.push_back(x);
  return v;
}

float Reference(const std::string& op, float x) {
  if (op == "exponential") return std::exp(x);
  if (op == "tanh") return std::tanh(x);
  if (op == "log") return std::log(x);
  return 1.0f / (1.0f + std::exp(-x));  // logistic, as the evaluator computes it
}

class TranscendentalTest : public ::testing::TestWithParam<std::string> {};

TEST_P(TranscendentalTest, MatchesLibm) {
  const std::string op = GetParam();
  std::vector<float> in = Inputs();
  const int64_t n = static_cast<int64_t>(in.size());
  // Inside a fusion (x * 1 keeps it a loop fusion of two ops), over a block-sized array.
  std::string hlo = StrCat("HloModule m\nENTRY e {\n  a = f32[", n, "] parameter(0)\n  one = f32[] constant(1)\n",
                           "  b = f32[", n, "] broadcast(one), dimensions={}\n  m = f32[", n,
                           "] multiply(a, b)\n  ROOT r = f32[", n, "] ", op, "(m)\n}\n");
  auto exe = testing::MustCompile(hlo);
  ASSERT_NE(exe, nullptr);
  std::vector<Literal> args;
  args.push_back(Literal::CreateR1<float>(PrimitiveType::kF32, in));
  auto r = exe->Run(args);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto got = r->data<float>();
  int bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float want = Reference(op, in[i]);
    const float g = got[i];
    bool ok;
    if (std::isnan(want)) ok = std::isnan(g);
    else if (std::isinf(want)) ok = g == want;
    else ok = std::fabs(g - want) <= 1e-6f * std::fabs(want) + 1e-37f;
    if (!ok && ++bad <= 5)
      ADD_FAILURE() << op << "(" << in[i] << ") = " << g << ", libm " << want;
  }
  EXPECT_EQ(bad, 0);
}

INSTANTIATE_TEST_SUITE_P(Ops, TranscendentalTest,
                         ::testing::Values("exponential", "tanh", "log", "logistic"));

}  // namespace
}  // namespace kiln::cpu
