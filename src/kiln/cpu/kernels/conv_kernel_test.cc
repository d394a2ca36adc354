// Convolution kernel against the evaluator: hand-picked JAX forms and random windows, labels,
// groups and types.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "kiln/base/strings.h"
#include "kiln/cpu/kernels/conv_indirect.h"
#include "kiln/cpu/kernels/kernel_test_util.h"

namespace kiln::cpu {
namespace {

using testing::CheckHlo;
using testing::CheckOptions;

TEST(ConvKernelTest, JaxForms) {
  const char* cases[] = {
      // flax NHWC / HWIO, SAME padding, stride 2
      "x = f32[2,9,9,5] parameter(0)\n k = f32[3,3,5,7] parameter(1)\n"
      " ROOT c = f32[2,5,5,7] convolution(x, k), window={size=3x3 stride=2x2 pad=1_1x1_1},"
      " dim_labels=b01f_01io->b01f",
      // lax NCHW / OIHW
      "x = f32[2,3,8,7] parameter(0)\n k = f32[4,3,3,2] parameter(1)\n"
      " ROOT c = f32[2,4,6,6] convolution(x, k), window={size=3x2}, dim_labels=bf01_oi01->bf01",
      // backward data: lhs-dilated, reversed kernel with swapped features
      "x = f32[2,5,5,7] parameter(0)\n k = f32[3,3,5,7] parameter(1)\n"
      " ROOT c = f32[2,9,9,5] convolution(x, k), window={size=3x3 pad=1_1x1_1 lhs_dilate=2x2"
      " rhs_reversal=1x1}, dim_labels=b01f_01oi->b01f",
      // backward filter: batch as the contracted feature, output window as kernel
      "x = f32[2,9,9,5] parameter(0)\n g = f32[2,5,5,7] parameter(1)\n"
      " ROOT c = f32[3,3,5,7] convolution(x, g), window={size=5x5 pad=1_1x1_1 rhs_dilate=2x2},"
      " dim_labels=f01b_i01o->01bf",
      // depthwise (feature_group_count = C), multiplier 1 and 2
      "x = f32[2,10,10,6] parameter(0)\n k = f32[3,3,1,6] parameter(1)\n"
      " ROOT c = f32[2,10,10,6] convolution(x, k), window={size=3x3 pad=1_1x1_1},"
      " dim_labels=b01f_01io->b01f, feature_group_count=6",
      "x = f32[1,7,4] parameter(0)\n k = f32[3,1,8] parameter(1)\n"
      " ROOT c = f32[1,5,8] convolution(x, k), window={size=3}, dim_labels=b0f_0io->b0f,"
      " feature_group_count=4",
      // grouped
      "x = f32[2,6,6,8] parameter(0)\n k = f32[2,2,4,6] parameter(1)\n"
      " ROOT c = f32[2,5,5,6] convolution(x, k), window={size=2x2}, dim_labels=b01f_01io->b01f,"
      " feature_group_count=2",
      // depthwise backward filter: batch_group_count
      "x = f32[4,8,8,3] parameter(0)\n g = f32[4,6,6,3] parameter(1)\n"
      " ROOT c = f32[3,3,1,3] convolution(x, g), window={size=6x6},"
      " dim_labels=f01b_i01o->01bf, batch_group_count=3",
      // 1x1 (pointwise) and dense (no spatial dims)
      "x = f32[3,5,5,16] parameter(0)\n k = f32[1,1,16,8] parameter(1)\n"
      " ROOT c = f32[3,5,5,8] convolution(x, k), window={size=1x1}, dim_labels=b01f_01io->b01f",
      "x = f32[6,10] parameter(0)\n k = f32[10,4] parameter(1)\n"
      " ROOT c = f32[6,4] convolution(x, k), dim_labels=bf_io->bf",
      // 3-D and negative padding
      "x = f32[1,5,6,7,2] parameter(0)\n k = f32[2,3,2,2,3] parameter(1)\n"
      " ROOT c = f32[1,4,5,6,3] convolution(x, k), window={size=2x3x2 pad=0_0x1_0x0_0},"
      " dim_labels=b012f_012io->b012f",
      "x = f32[1,9,2] parameter(0)\n k = f32[3,2,2] parameter(1)\n"
      " ROOT c = f32[1,5,2] convolution(x, k), window={size=3 pad=-1_-1}, dim_labels=b0f_0io->b0f",
      // empty batch, empty features, window larger than the input
      "x = f32[0,5,3] parameter(0)\n k = f32[2,3,4] parameter(1)\n"
      " ROOT c = f32[0,4,4] convolution(x, k), window={size=2}, dim_labels=b0f_0io->b0f",
      "x = f32[2,5,0] parameter(0)\n k = f32[2,0,4] parameter(1)\n"
      " ROOT c = f32[2,4,4] convolution(x, k), window={size=2}, dim_labels=b0f_0io->b0f",
      "x = f32[2,2,3] parameter(0)\n k = f32[4,3,4] parameter(1)\n"
      " ROOT c = f32[2,0,4] convolution(x, k), window={size=4}, dim_labels=b0f_0io->b0f",
  };
  for (const char* c : cases) {
    SCOPED_TRACE(c);
    CheckHlo(StrCat("ENTRY e {\n ", c, "\n}\n"));
  }
}

TEST(ConvKernelTest, Types) {
  struct Case {
    const char *lt, *rt, *out;
  };
  const Case cases[] = {{"f64", "f64", "f64"}, {"bf16", "bf16", "bf16"}, {"f16", "f16", "f16"},
                        {"bf16", "bf16", "f32"}, {"c64", "c64", "c64"},  {"s8", "s8", "s32"},
                        {"s32", "s32", "s32"},   {"u8", "u8", "u8"},     {"s64", "s64", "s64"},
                        {"c128", "c128", "c128"}};
  for (const Case& c : cases) {
    SCOPED_TRACE(StrCat(c.lt, " * ", c.rt, " -> ", c.out));
    CheckHlo(StrCat("ENTRY e {\n x = ", c.lt, "[2,7,6,3] parameter(0)\n k = ", c.rt,
                    "[3,2,3,4] parameter(1)\n ROOT c = ", c.out,
                    "[2,4,5,4] convolution(x, k), window={size=3x2 stride=2x1 pad=1_1x0_0},"
                    " dim_labels=b01f_01io->b01f\n}\n"));
    CheckHlo(StrCat("ENTRY e {\n x = ", c.lt, "[2,6,6,4] parameter(0)\n k = ", c.rt,
                    "[3,3,1,4] parameter(1)\n ROOT c = ", c.out,
                    "[2,6,6,4] convolution(x, k), window={size=3x3 pad=1_1x1_1},"
                    " dim_labels=b01f_01io->b01f, feature_group_count=4\n}\n"));
  }
}

// Random convolutions: random dim_labels orders, windows (stride, padding incl. negative,
// dilations, reversal), feature or batch groups, odd and size-1 dimensions.
TEST(ConvKernelTest, Random) {
  std::mt19937_64 rng(12345);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  int tested = 0;
  for (int iter = 0; iter < 400 && tested < 120; ++iter) {
    const int64_t nsp = pick(0, 3);
    int64_t fgc = 1, bgc = 1;
    switch (pick(0, 3)) {
      case 1: fgc = pick(2, 4); break;
      case 2: bgc = pick(2, 3); break;
      default: break;
    }
    const int64_t cg = pick(1, 4), n_out = pick(1, 3);
    const int64_t c_in = cg * fgc, n_in = n_out * bgc;
    const int64_t o = std::max(fgc, bgc) * pick(1, 3);
    std::vector<int64_t> in_sp, k_sp, out_sp;
    std::string size, stride, pad, lhs_d, rhs_d, rev;
    bool ok = true;
    for (int64_t i = 0; i < nsp; ++i) {
      const int64_t in = pick(1, 9), k = pick(1, 4), s = pick(1, 3);
      const int64_t lo = pick(-1, 3), hi = pick(-1, 3), ld = pick(1, 3), rd = pick(1, 2);
      const int64_t padded = (in - 1) * ld + 1 + lo + hi, dw = (k - 1) * rd + 1;
      if (padded < 0) ok = false;
      const int64_t out = padded < dw ? 0 : (padded - dw) / s + 1;
      in_sp.push_back(in);
      k_sp.push_back(k);
      out_sp.push_back(out);
      const char* sep = i ? "x" : "";
      size += StrCat(sep, k);
      stride += StrCat(sep, s);
      pad += StrCat(sep, lo, "_", hi);
      lhs_d += StrCat(sep, ld);
      rhs_d += StrCat(sep, rd);
      rev += StrCat(sep, pick(0, 1));
    }
    if (!ok) continue;
    // Random orders of the labels: input (b, f, spatial), kernel (i, o, spatial), output.
    auto order = [&](int64_t n) {
      std::vector<int64_t> p(n);
      std::iota(p.begin(), p.end(), 0);
      std::shuffle(p.begin(), p.end(), rng);
      return p;
    };
    // Position j of operand holds logical dim p[j]: 0 = batch/in-feature, 1 = feature/out,
    // 2 + i = spatial i.
    auto labels = [&](const std::vector<int64_t>& p, char a, char b) {
      std::string s;
      for (int64_t d : p) s += d == 0 ? a : d == 1 ? b : static_cast<char>('0' + d - 2);
      return s;
    };
    auto dims = [&](const std::vector<int64_t>& p, int64_t a, int64_t b,
                    const std::vector<int64_t>& sp) {
      std::string s;
      for (size_t j = 0; j < p.size(); ++j)
        s += StrCat(j ? "," : "", p[j] == 0 ? a : p[j] == 1 ? b : sp[p[j] - 2]);
      return s;
    };
    const std::vector<int64_t> ip = order(nsp + 2), kp = order(nsp + 2), op = order(nsp + 2);
    std::string window;
    if (nsp > 0)
      window = StrCat(", window={size=", size, " stride=", stride, " pad=", pad,
                      " lhs_dilate=", lhs_d, " rhs_dilate=", rhs_d, " rhs_reversal=", rev, "}");
    const std::string hlo =
        StrCat("ENTRY e {\n x = f32[", dims(ip, n_in, c_in, in_sp), "] parameter(0)\n",
               " k = f32[", dims(kp, cg, o, k_sp), "] parameter(1)\n", " ROOT c = f32[",
               dims(op, n_out, o, out_sp), "] convolution(x, k)", window,
               ", dim_labels=", labels(ip, 'b', 'f'), "_", labels(kp, 'i', 'o'), "->",
               labels(op, 'b', 'f'), fgc > 1 ? StrCat(", feature_group_count=", fgc) : "",
               bgc > 1 ? StrCat(", batch_group_count=", bgc) : "", "\n}\n");
    SCOPED_TRACE(hlo);
    CheckHlo(hlo);
    // Tiny patch blocks: every outer tap its own K block (accumulated GEMMs).
    CheckOptions tiny;
    tiny.kernel.conv_patch_bytes = 1;
    CheckHlo(hlo, "", tiny);
    if (::testing::Test::HasFailure()) return;
    ++tested;
  }
  EXPECT_GE(tested, 100);
}

// The indirect (im2col-free) f32 path (Note [Indirect convolution]): enough features per tap to
// take it; output features that fill 1-4 vectors and leave partial ones; row counts that end
// in partial tiles; strides, padding (negative too), dilations, reversal, 1-3 spatial dims and
// permuted labels; features large enough to split a tap into K blocks.
TEST(ConvKernelTest, Indirect) {
  if (!internal::IndirectConvAvailable()) GTEST_SKIP() << "no micro-kernel in this build";
  const char* cases[] = {
      // the bench's resblock conv, smaller batch
      "x = f32[2,9,9,64] parameter(0)\n k = f32[3,3,64,64] parameter(1)\n"
      " ROOT c = f32[2,9,9,64] convolution(x, k), window={size=3x3 pad=1_1x1_1},"
      " dim_labels=b01f_01io->b01f",
      // odd output features (1 full + 1 partial vector; 3 vectors; 4 + partial panel)
      "x = f32[3,7,5,16] parameter(0)\n k = f32[3,2,16,17] parameter(1)\n"
      " ROOT c = f32[3,3,4,17] convolution(x, k), window={size=3x2 stride=2x1},"
      " dim_labels=b01f_01io->b01f",
      "x = f32[1,11,24] parameter(0)\n k = f32[5,24,40] parameter(1)\n"
      " ROOT c = f32[1,6,40] convolution(x, k), window={size=5 stride=2 pad=2_2 rhs_dilate=1},"
      " dim_labels=b0f_0io->b0f",
      "x = f32[2,6,6,20] parameter(0)\n k = f32[2,2,20,130] parameter(1)\n"
      " ROOT c = f32[2,7,7,130] convolution(x, k), window={size=2x2 pad=1_1x1_1},"
      " dim_labels=b01f_01io->b01f",
      // dilations, reversal, negative padding
      "x = f32[2,10,9,16] parameter(0)\n k = f32[3,3,16,32] parameter(1)\n"
      " ROOT c = f32[2,6,5,32] convolution(x, k), window={size=3x3 pad=0_0x-1_0 rhs_dilate=2x2"
      " rhs_reversal=1x0}, dim_labels=b01f_01io->b01f",
      // backward data (lhs-dilated, reversed) with many features
      "x = f32[2,5,5,32] parameter(0)\n k = f32[3,3,16,32] parameter(1)\n"
      " ROOT c = f32[2,9,9,16] convolution(x, k), window={size=3x3 pad=1_1x1_1 lhs_dilate=2x2"
      " rhs_reversal=1x1}, dim_labels=b01f_01oi->b01f",
      // NCHW / OIHW (permuted operands and result)
      "x = f32[2,24,8,7] parameter(0)\n k = f32[48,24,3,2] parameter(1)\n"
      " ROOT c = f32[2,48,6,6] convolution(x, k), window={size=3x2}, dim_labels=bf01_oi01->bf01",
      // 3-D
      "x = f32[1,4,5,6,16] parameter(0)\n k = f32[2,3,2,16,16] parameter(1)\n"
      " ROOT c = f32[1,3,5,5,16] convolution(x, k), window={size=2x3x2 pad=0_0x1_1x0_0},"
      " dim_labels=b012f_012io->b012f",
      // a tap's features split in K blocks (C * 64 floats > 32 KiB)
      "x = f32[1,6,6,300] parameter(0)\n k = f32[2,2,300,64] parameter(1)\n"
      " ROOT c = f32[1,5,5,64] convolution(x, k), window={size=2x2},"
      " dim_labels=b01f_01io->b01f",
      // one output row, one tap
      "x = f32[1,1,16] parameter(0)\n k = f32[1,16,16] parameter(1)\n"
      " ROOT c = f32[1,3,16] convolution(x, k), window={size=1 pad=1_1}, dim_labels=b0f_0io->b0f",
  };
  for (const char* c : cases) {
    SCOPED_TRACE(c);
    const std::string hlo = StrCat("ENTRY e {\n ", c, "\n}\n");
    std::unique_ptr<HloModule> m = testing::Parse(hlo);
    ASSERT_NE(m, nullptr);
    CheckOptions o;
    o.rtol = 1e-5;
    o.atol = 1e-5;
    EXPECT_NE(testing::ExpectMatchesEvaluator(*testing::Find(*m), o).find("indirect"),
              std::string::npos);
    CheckHlo(hlo, "", o);
    if (::testing::Test::HasFailure()) return;
  }
}

// CpuKernelOptions::conv_indirect off (flag cpu_conv=im2col): a convolution the indirect kernel
// would take runs on im2col + GEMM, with the same results.
TEST(ConvKernelTest, Im2colOnly) {
  const std::string hlo =
      "ENTRY e {\n x = f32[2,9,9,64] parameter(0)\n k = f32[3,3,64,64] parameter(1)\n"
      " ROOT c = f32[2,9,9,64] convolution(x, k), window={size=3x3 pad=1_1x1_1},"
      " dim_labels=b01f_01io->b01f\n}\n";
  std::unique_ptr<HloModule> m = testing::Parse(hlo);
  ASSERT_NE(m, nullptr);
  CheckOptions o;
  o.rtol = 1e-5;
  o.atol = 1e-5;
  o.kernel.conv_indirect = false;
  EXPECT_NE(testing::ExpectMatchesEvaluator(*testing::Find(*m), o).find("im2col"),
            std::string::npos);
  CheckHlo(hlo, "", o);
}

// 1600-term f32 sums (the evaluator sums in double): cancellation leaves ~1e-5 absolute error.
CheckOptions Sums1600() {
  CheckOptions o;
  o.rtol = 1e-4;
  o.atol = 1e-4;
  return o;
}

TEST(ConvKernelTest, LargeMultiThreaded) {
  CheckHlo(R"(
ENTRY e {
  x = f32[4,20,20,32] parameter(0)
  k = f32[3,3,32,48] parameter(1)
  ROOT c = f32[4,20,20,48] convolution(x, k), window={size=3x3 pad=1_1x1_1},
    dim_labels=b01f_01io->b01f
})");
  CheckHlo(R"(
ENTRY e {
  x = f32[4,20,20,32] parameter(0)
  g = f32[4,20,20,48] parameter(1)
  ROOT c = f32[3,3,32,48] convolution(x, g), window={size=20x20 pad=1_1x1_1},
    dim_labels=f01b_i01o->01bf
})",
           "", Sums1600());
  CheckOptions tiny = Sums1600();
  tiny.kernel.conv_patch_bytes = 4096;
  CheckHlo(R"(
ENTRY e {
  x = f32[4,20,20,32] parameter(0)
  g = f32[4,20,20,48] parameter(1)
  ROOT c = f32[3,3,32,48] convolution(x, g), window={size=20x20 pad=1_1x1_1},
    dim_labels=f01b_i01o->01bf
})",
           "", tiny);
}

}  // namespace
}  // namespace kiln::cpu
