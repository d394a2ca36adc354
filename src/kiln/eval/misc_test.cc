// Tests of rng-bit-generator, rng, fft, cholesky, triangular-solve, batch-norm, scan,
// custom-call and the one-participant collectives.
//
// misc_cases.json (testdata/gen_eval_b_cases.py): fft/ifft/rfft/irfft in 1-3 dimensions,
// power-of-two and other lengths, against numpy.fft; cholesky (lower/upper, f32/f64/c64, the
// unused triangle filled with junk, a non-positive-definite batch element) and
// triangular-solve (all sides, triangles, unit diagonal, transposes, batch) against numpy;
// batch-norm training/inference/grad against numpy; the LAPACK custom calls of JAX's CPU
// lowering (potrf incl. info and the untouched triangle, getrf incl. pivots and a singular
// matrix, geqrf/orgqr/ungqr, trsm) against LAPACK itself through scipy.
// rng_bit_generator.json (testdata/gen_rng_bit_generator.py): XLA CPU's rng-bit-generator
// outputs and new states through jax for three_fry, philox and default, u8/u16/u32/u64, shapes
// of rank 0-3 with and without even dimensions, and a counter about to wrap.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <complex>

#include "kiln/base/strings.h"
#include "kiln/eval/evaluator.h"
#include "kiln/eval/reference_cases.h"
#include "kiln/hlo/parser.h"

namespace kiln {
namespace {

using reference_cases::RunHlo;

Literal F32(std::vector<int64_t> dims, std::vector<double> v) {
  return Literal::FromDoubles(Shape::Array(PrimitiveType::kF32, std::move(dims)), v);
}
Literal U64(std::vector<uint64_t> v) {
  Literal l(Shape::Array(PrimitiveType::kU64, {static_cast<int64_t>(v.size())}));
  std::copy(v.begin(), v.end(), l.data<uint64_t>().begin());
  return l;
}
std::vector<double> Values(const Literal& l) {
  std::vector<double> out;
  for (int64_t i = 0; i < l.element_count(); ++i) out.push_back(l.GetAsDouble(i));
  return out;
}

TEST(Misc, ReferenceCases) { EXPECT_GE(reference_cases::RunJsonCases("misc_cases.json"), 27); }

// ---- rng-bit-generator ----

TEST(Misc, RngBitGeneratorMatchesXlaBitForBit) {
  nlohmann::json j = reference_cases::LoadTestdata("rng_bit_generator.json");
  ASSERT_TRUE(j.contains("cases"));
  int checked = 0;
  for (const auto& c : j["cases"]) {
    const std::string alg = c["algorithm"], type = c["type"];
    std::vector<int64_t> dims = c["shape"].get<std::vector<int64_t>>();
    std::vector<uint64_t> key = c["key"].get<std::vector<uint64_t>>();
    std::vector<uint64_t> new_key = c["new_key"].get<std::vector<uint64_t>>();
    const std::string data_shape = StrCat(type, "[", StrJoin(dims, ","), "]");
    const std::string hlo = StrCat("ENTRY e {\n  s = u64[2] parameter(0)\n  ROOT r = (u64[2], ",
                                   data_shape, ") rng-bit-generator(s), algorithm=", alg, "\n}\n");
    SCOPED_TRACE(StrCat(alg, " ", data_shape, " key ", StrJoin(key, ",")));
    std::vector<Literal> args;
    args.push_back(U64({key[0] | key[1] << 32, key[2] | key[3] << 32}));
    auto r = RunHlo(hlo, args);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    const Literal& st = r->tuple_element(0);
    EXPECT_EQ(st.data<uint64_t>()[0], new_key[0] | new_key[1] << 32);
    EXPECT_EQ(st.data<uint64_t>()[1], new_key[2] | new_key[3] << 32);
    const Literal& bits = r->tuple_element(1);
    const auto& want = c["bits"];
    ASSERT_EQ(static_cast<int64_t>(want.size()), bits.element_count());
    for (int64_t i = 0; i < bits.element_count(); ++i) {
      uint64_t got = static_cast<uint64_t>(bits.GetAsInt64(i));
      if (type == "u64") got = bits.data<uint64_t>()[i];
      ASSERT_EQ(got, std::stoull(want[i].get<std::string>())) << "element " << i;
    }
    ++checked;
  }
  EXPECT_GE(checked, 200);
}

TEST(Misc, PhiloxThreeWordStateCarriesIntoTheHighWord) {
  // [key, low, high] with high == key gives the same bits as [key, low]; the 128-bit counter
  // carries from low into high.
  const char* hlo3 = R"(
ENTRY e {
  s = u64[3] parameter(0)
  ROOT r = (u64[3], u32[10]) rng-bit-generator(s), algorithm=rng_philox
})";
  const char* hlo2 = R"(
ENTRY e {
  s = u64[2] parameter(0)
  ROOT r = (u64[2], u32[10]) rng-bit-generator(s), algorithm=rng_philox
})";
  const uint64_t key = 0x0123456789abcdefull, low = ~uint64_t{0} - 1;
  std::vector<Literal> a3, a2;
  a3.push_back(U64({key, low, key}));
  a2.push_back(U64({key, low}));
  auto r3 = RunHlo(hlo3, a3);
  auto r2 = RunHlo(hlo2, a2);
  ASSERT_TRUE(r3.ok() && r2.ok());
  EXPECT_TRUE(r3->tuple_element(1).BitwiseEquals(r2->tuple_element(1)));
  // 10 words = 3 blocks: low wraps from 2^64-2 to 1 and high gains the carry.
  EXPECT_EQ(r3->tuple_element(0).data<uint64_t>()[1], 1u);
  EXPECT_EQ(r3->tuple_element(0).data<uint64_t>()[2], key + 1);
  EXPECT_EQ(r2->tuple_element(0).data<uint64_t>()[1], 1u);
}

// ---- rng ----

TEST(Misc, GetRngSeedIsTheRunsSeed) {
  auto module = ParseHloModule("HloModule m\nENTRY e {\n  ROOT s = u64[] custom-call(), custom_call_target=\"GetRngSeed\"\n}\n");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  Evaluator e(EvaluatorOptions{.rng_seed = 1234});
  auto r = e.Run(**module, {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->data<uint64_t>()[0], 1234u);
}

TEST(Misc, RngUniformAndNormalAreInRangeAndDeterministic) {
  auto module = ParseHloModule(R"(
ENTRY e {
  a = f32[] constant(-2)
  b = f32[] constant(3)
  u = f32[20000] rng(a, b), distribution=rng_uniform
  m = f32[] constant(1)
  s = f32[] constant(2)
  n = f32[20000] rng(m, s), distribution=rng_normal
  lo = s32[] constant(5)
  hi = s32[] constant(8)
  i = s32[1000] rng(lo, hi), distribution=rng_uniform
  ROOT t = (f32[20000], f32[20000], s32[1000]) tuple(u, n, i)
})");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  Evaluator e1(EvaluatorOptions{.rng_seed = 7});
  auto r = e1.Run(**module, {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::vector<double> u = Values(r->tuple_element(0)), n = Values(r->tuple_element(1));
  double su = 0, sn = 0, sn2 = 0;
  for (double x : u) {
    ASSERT_GE(x, -2);
    ASSERT_LT(x, 3);
    su += x;
  }
  for (double x : n) {
    sn += x;
    sn2 += (x - 1) * (x - 1);
  }
  EXPECT_NEAR(su / u.size(), 0.5, 0.05);
  EXPECT_NEAR(sn / n.size(), 1.0, 0.05);
  EXPECT_NEAR(std::sqrt(sn2 / n.size()), 2.0, 0.05);
  for (double x : Values(r->tuple_element(2))) {
    ASSERT_GE(x, 5);
    ASSERT_LT(x, 8);
  }
  Evaluator e2(EvaluatorOptions{.rng_seed = 7});
  auto r2 = e2.Run(**module, {});
  ASSERT_TRUE(r2.ok());
  EXPECT_TRUE(r2->BitwiseEquals(*r));
  Evaluator e3(EvaluatorOptions{.rng_seed = 8});
  auto r3 = e3.Run(**module, {});
  ASSERT_TRUE(r3.ok());
  EXPECT_FALSE(r3->tuple_element(0).BitwiseEquals(r->tuple_element(0)));
}

// ---- fft ----

// x[j] = exp(2 pi i f j / n) + 0.5 has the transform n at k = f, n/2 at k = 0, zero elsewhere.
void CheckLongFft(int64_t n, int64_t f) {
  std::vector<std::complex<double>> x(n);
  for (int64_t j = 0; j < n; ++j)
    x[j] = std::polar(1.0, 2 * M_PI * static_cast<double>((f * j) % n) / n) + 0.5;
  Literal in(Shape::Array(PrimitiveType::kC128, {n}));
  for (int64_t j = 0; j < n; ++j) in.SetFromComplex(j, x[j]);
  std::vector<Literal> args;
  args.push_back(std::move(in));
  auto start = std::chrono::steady_clock::now();
  auto r = RunHlo(StrCat("ENTRY e {\n  x = c128[", n, "] parameter(0)\n  ROOT f = c128[", n,
                         "] fft(x), fft_type=FFT, fft_length={", n, "}\n}\n"),
                  args);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  for (int64_t k = 0; k < n; ++k) {
    std::complex<double> want = (k == f ? double(n) : 0.0) + (k == 0 ? 0.5 * n : 0.0);
    ASSERT_LT(std::abs(r->GetAsComplex(k) - want), 1e-8) << "n=" << n << " k=" << k;
  }
  // Speed is for benchmarks, not tests: report only.
  std::printf("fft of length %lld: %.3f s\n", static_cast<long long>(n), secs);
}

TEST(Misc, FftLongPowerOfTwo) { CheckLongFft(4096, 37); }
TEST(Misc, FftLongOtherLength) { CheckLongFft(4095, 1000); }

TEST(Misc, FftWrongLengthIsAnError) {
  auto r = RunHlo(R"(
ENTRY e {
  x = c64[8] parameter(0)
  ROOT f = c64[8] fft(x), fft_type=FFT, fft_length={4}
})",
                  {Literal(Shape::Array(PrimitiveType::kC64, {8}))});
  EXPECT_FALSE(r.ok());
}

// ---- scan ----

// The step returns (previous carry, current input): outputs shift the input by one, seeded with
// the init, and the final carry is the last input visited.
constexpr char kShiftScan[] = R"(
step {
  x = f32[2] parameter(0)
  c = f32[2] parameter(1)
  ROOT t = (f32[2], f32[2]) tuple(c, x)
}
ENTRY e {
  xs = f32[3,2] parameter(0)
  init = f32[2] parameter(1)
  ROOT s = (f32[3,2], f32[2]) scan(xs, init), dimensions={0}, is_reverse=%s, to_apply=step
})";

TEST(Misc, ScanForwardAndReverse) {
  for (bool reverse : {false, true}) {
    char text[1024];
    std::snprintf(text, sizeof(text), kShiftScan, reverse ? "true" : "false");
    auto r = RunHlo(text, {F32({3, 2}, {1, 2, 3, 4, 5, 6}), F32({2}, {-1, -2})});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    if (!reverse) {
      EXPECT_EQ(Values(r->tuple_element(0)), (std::vector<double>{-1, -2, 1, 2, 3, 4}));
      EXPECT_EQ(Values(r->tuple_element(1)), (std::vector<double>{5, 6}));
    } else {
      EXPECT_EQ(Values(r->tuple_element(0)), (std::vector<double>{3, 4, 5, 6, -1, -2}));
      EXPECT_EQ(Values(r->tuple_element(1)), (std::vector<double>{1, 2}));
    }
  }
}

TEST(Misc, ScanAlongInnerDimension) {
  // Scan over dimension 1 of a [2,3] input: slices are columns.
  auto r = RunHlo(R"(
step {
  x = f32[2] parameter(0)
  c = f32[2] parameter(1)
  ROOT t = (f32[2], f32[2]) tuple(c, x)
}
ENTRY e {
  xs = f32[2,3] parameter(0)
  init = f32[2] parameter(1)
  ROOT s = (f32[2,3], f32[2]) scan(xs, init), dimensions={1}, to_apply=step
})",
                  {F32({2, 3}, {1, 2, 3, 4, 5, 6}), F32({2}, {0, 0})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Values(r->tuple_element(0)), (std::vector<double>{0, 1, 2, 0, 4, 5}));
  EXPECT_EQ(Values(r->tuple_element(1)), (std::vector<double>{3, 6}));
}

// ---- custom-call and collectives ----

TEST(Misc, AnnotationCustomCallsAreIdentity) {
  auto r = RunHlo(R"(
ENTRY e {
  x = f32[3] parameter(0)
  a = f32[3] custom-call(x), custom_call_target="Sharding", sharding={replicated}
  b = f32[3] custom-call(a), custom_call_target="SPMDFullToShardShape"
  c = f32[3] custom-call(b), custom_call_target="SPMDShardToFullShape"
  ROOT d = f32[3] custom-call(c), custom_call_target="MoveToHost"
})",
                  {F32({3}, {1, 2, 3})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Values(*r), (std::vector<double>{1, 2, 3}));
}

TEST(Misc, UnknownCustomCallNamesTheTarget) {
  auto r = RunHlo(R"(
ENTRY e {
  x = f32[3] parameter(0)
  ROOT y = f32[3] custom-call(x), custom_call_target="my_kernel"
})",
                  {F32({3}, {1, 2, 3})});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(r.status().message().find("unsupported: custom-call \"my_kernel\" at line 4"),
            std::string::npos)
      << r.status().message();
}

TEST(Misc, SingleParticipantCollectives) {
  auto r = RunHlo(R"(
sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ENTRY e {
  x = f32[4] parameter(0)
  ar = f32[4] all-reduce(x), replica_groups={}, to_apply=sum
  ag = f32[4] all-gather(ar), dimensions={0}, replica_groups={{0}}
  rs = f32[4] reduce-scatter(ag), dimensions={0}, replica_groups={}, to_apply=sum
  a2a = f32[4] all-to-all(rs), dimensions={0}
  cp = f32[4] collective-permute(a2a), source_target_pairs={{0,0}}
  cz = f32[4] collective-permute(a2a), source_target_pairs={{1,2}}
  st = f32[4] all-reduce-start(cp), replica_groups={}, to_apply=sum
  dn = f32[4] all-reduce-done(st)
  ROOT t = (f32[4], f32[4]) tuple(dn, cz)
})",
                  {F32({4}, {1, 2, 3, 4})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Values(r->tuple_element(0)), (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(Values(r->tuple_element(1)), (std::vector<double>{0, 0, 0, 0}));
}

TEST(Misc, CollectiveStartDoneTuples) {
  auto r = RunHlo(R"(
ENTRY e {
  x = f32[4] parameter(0)
  ags = (f32[4], f32[4]) all-gather-start(x), dimensions={0}, replica_groups={{0}}
  agd = f32[4] all-gather-done(ags)
  cps = (f32[4], f32[4], u32[], u32[]) collective-permute-start(agd), source_target_pairs={{0,0}}
  ROOT cpd = f32[4] collective-permute-done(cps)
})",
                  {F32({4}, {1, 2, 3, 4})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Values(*r), (std::vector<double>{1, 2, 3, 4}));
}

TEST(Misc, CollectivePermuteFromAnotherParticipantIsUnsupported) {
  auto r = RunHlo(R"(
ENTRY e {
  x = f32[4] parameter(0)
  ROOT cp = f32[4] collective-permute(x), source_target_pairs={{1,0},{0,1}}
})",
                  {F32({4}, {1, 2, 3, 4})});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented) << r.status().ToString();
}

TEST(Misc, RngGetAndUpdateStateAdvancesByDelta) {
  auto module = ParseHloModule(R"(
ENTRY e {
  a = u64[2] rng-get-and-update-state(), delta=4
  b = u64[2] rng-get-and-update-state(), delta=4, control-predecessors={a}
  ROOT t = (u64[2], u64[2]) tuple(a, b)
})");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  Evaluator e(EvaluatorOptions{.rng_seed = 100});
  auto r = e.Run(**module, {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->tuple_element(0).data<uint64_t>()[0], 100u);
  EXPECT_EQ(r->tuple_element(1).data<uint64_t>()[0], 104u);
  EXPECT_EQ(e.rng_state(), 108u);
}

TEST(Misc, MultiParticipantCollectiveIsUnsupported) {
  auto r = RunHlo(R"(
ENTRY e {
  x = f32[4] parameter(0)
  ROOT ag = f32[8] all-gather(x), dimensions={0}, replica_groups={{0,1}}
})",
                  {F32({4}, {1, 2, 3, 4})});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(r.status().message().find("unsupported: all-gather"), std::string::npos);
}

TEST(Misc, AsyncStartDoneRunTheWrappedComputation) {
  auto r = RunHlo(R"(
wrapped {
  p = f32[4] parameter(0)
  ROOT c = f32[4] copy(p)
}
ENTRY e {
  x = f32[4] parameter(0)
  s = ((f32[4]), f32[4], s32[]) async-start(x), calls=wrapped
  u = ((f32[4]), f32[4], s32[]) async-update(s)
  ROOT d = f32[4] async-done(u)
})",
                  {F32({4}, {1, 2, 3, 4})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Values(*r), (std::vector<double>{1, 2, 3, 4}));
}

}  // namespace
}  // namespace kiln
