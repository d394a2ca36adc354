// Sort and topk kernels against the evaluator: total-order and float compares (NaN, -0/+0),
// every key type, multi-operand stability with many ties, general comparators, any sort
// dimension, long rows sorted in parallel chunks, topk op and the TopK custom call.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "kiln/base/strings.h"
#include "kiln/cpu/kernels/kernel_test_util.h"
#include "kiln/hlo/random_literal.h"

namespace kiln::cpu {
namespace {

using testing::CheckOptions;

const char* kComparators = R"(
lt_total { a = $T[] parameter(0)  b = $T[] parameter(1)
           ROOT r = pred[] compare(a, b), direction=LT, type=TOTALORDER }
gt_total { a = $T[] parameter(0)  b = $T[] parameter(1)
           ROOT r = pred[] compare(a, b), direction=GT, type=TOTALORDER }
lt_plain { a = $T[] parameter(0)  b = $T[] parameter(1)  ROOT r = pred[] compare(a, b), direction=LT }
gt_swapped { a = $T[] parameter(0)  b = $T[] parameter(1)  ROOT r = pred[] compare(b, a), direction=LT }
)";

std::string Replace(std::string s, std::string_view from, std::string_view to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size()))
    s.replace(p, from.size(), to);
  return s;
}

// Random operands; float operands get NaNs, infinities and signed zeros sprinkled in, integer
// operands keep the small random range (many ties).
std::vector<Literal> Operands(const HloInstruction& instr, uint64_t seed) {
  std::vector<Literal> ops = testing::RandomOperands(instr, seed);
  std::mt19937_64 rng(seed);
  for (Literal& l : ops) {
    const PrimitiveType t = l.shape().element_type();
    if (t != PrimitiveType::kF32 && t != PrimitiveType::kF64) continue;
    const int64_t n = l.shape().num_elements();
    for (int64_t i = 0; i < n; ++i) {
      const int pick = static_cast<int>(rng() % 24);
      const double specials[] = {std::numeric_limits<double>::quiet_NaN(),
                                 -std::numeric_limits<double>::quiet_NaN(),
                                 std::numeric_limits<double>::infinity(),
                                 -std::numeric_limits<double>::infinity(), 0.0, -0.0, 0.5};
      if (pick >= 7) continue;
      if (t == PrimitiveType::kF32) l.data<float>()[i] = static_cast<float>(specials[pick]);
      else l.data<double>()[i] = specials[pick];
    }
  }
  return ops;
}

void Check(const std::string& hlo, int64_t min_parallel = 16) {
  std::unique_ptr<HloModule> m = testing::Parse(hlo);
  ASSERT_NE(m, nullptr);
  const HloInstruction* instr = testing::Find(*m);
  for (bool pool : {true, false}) {
    CheckOptions o;
    o.with_pool = pool;
    o.kernel.min_parallel_elements = min_parallel;
    testing::ExpectMatchesEvaluator(*instr, o, Operands(*instr, 3));
    if (::testing::Test::HasFailure()) return;
  }
}

TEST(SortKernelTest, OneOperand) {
  const char* types[] = {"f32", "f64", "bf16", "f16", "s8", "s32", "s64", "u8", "u32", "u64",
                         "pred"};
  const char* shapes[] = {"[37]", "[5,19]", "[6,1,7]", "[0,4]", "[3,1]"};
  const char* cmps[] = {"lt_total", "gt_total", "lt_plain", "gt_swapped"};
  for (const char* t : types) {
    for (const char* shape : shapes) {
      for (const char* cmp : cmps) {
        for (int64_t dim = 0; dim < 3; ++dim) {
          const int64_t rank = std::count(shape, shape + std::strlen(shape), ',') + 1;
          if (dim >= rank) continue;
          const std::string hlo = StrCat(
              Replace(kComparators, "$T", t), "ENTRY e {\n x = ", t, shape,
              " parameter(0)\n ROOT s = ", t, shape, " sort(x), dimensions={", dim,
              "}, to_apply=", cmp, "\n}\n");
          SCOPED_TRACE(hlo);
          Check(hlo);
          if (HasFailure()) return;
        }
      }
    }
  }
}

TEST(SortKernelTest, MultiOperandAndGeneralComparators) {
  const std::string comps = R"(
by_key { a = s32[] parameter(0)  b = s32[] parameter(1)  c = f32[] parameter(2)
         d = f32[] parameter(3)  ROOT r = pred[] compare(a, b), direction=LT }
by_value { a = s32[] parameter(0)  b = s32[] parameter(1)  c = f32[] parameter(2)
           d = f32[] parameter(3)  ROOT r = pred[] compare(c, d), direction=GT, type=TOTALORDER }
lexicographic { a = s32[] parameter(0)  b = s32[] parameter(1)  c = f32[] parameter(2)
                d = f32[] parameter(3)  eq = pred[] compare(a, b), direction=EQ
                lt0 = pred[] compare(a, b), direction=LT
                lt1 = pred[] compare(c, d), direction=LT, type=TOTALORDER
                ROOT r = pred[] select(eq, lt1, lt0) }
unsigned_cmp { a = s32[] parameter(0)  b = s32[] parameter(1)  c = f32[] parameter(2)
               d = f32[] parameter(3)  ROOT r = pred[] compare(a, b), direction=LT, type=UNSIGNED }
)";
  for (const char* cmp : {"by_key", "by_value", "lexicographic", "unsigned_cmp"}) {
    for (const char* shape : {"[50]", "[4,33]", "[0]", "[1]"}) {
      const std::string hlo = StrCat(comps, "ENTRY e {\n k = s32", shape, " parameter(0)\n v = f32",
                                     shape, " parameter(1)\n ROOT s = (s32", shape, ", f32", shape,
                                     ") sort(k, v), dimensions={0}, is_stable=true, to_apply=",
                                     cmp, "\n}\n");
      SCOPED_TRACE(hlo);
      Check(hlo);
      if (HasFailure()) return;
    }
  }
}

TEST(SortKernelTest, LongRowsInParallelChunks) {
  for (const char* t : {"f32", "s32", "u8"}) {
    const std::string hlo =
        StrCat(Replace(kComparators, "$T", t), "ENTRY e {\n x = ", t, "[20001] parameter(0)\n",
               " i = s32[20001] parameter(1)\n ROOT s = (", t, "[20001], s32[20001]) sort(x, i),",
               " dimensions={0}, to_apply=lt2\n}\n");
    const std::string lt2 = StrCat("lt2 { a = ", t, "[] parameter(0)  b = ", t,
                                   "[] parameter(1)  c = s32[] parameter(2)  d = s32[] parameter(3)"
                                   "  ROOT r = pred[] compare(a, b), direction=GT, type=TOTALORDER }\n");
    SCOPED_TRACE(t);
    Check(lt2 + hlo, 1000);
    if (HasFailure()) return;
  }
}

std::string DimsText(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += StrCat(i ? "," : "", d[i]);
  return s + "]";
}

TEST(TopKKernelTest, OpAndCustomCall) {
  const std::vector<std::vector<int64_t>> shapes = {{40}, {3, 17}, {2, 2, 9}, {4, 1}, {0, 6}};
  for (const char* t : {"f32", "bf16", "f64", "s32", "u8", "s8"}) {
    for (const std::vector<int64_t>& dims : shapes) {
      const int64_t n = dims.back();
      const std::string x = StrCat(t, DimsText(dims));
      for (int64_t k : {int64_t{0}, int64_t{1}, std::min<int64_t>(n, 5), n}) {
        std::vector<int64_t> od = dims;
        od.back() = k;
        const std::string outs = StrCat("(", t, DimsText(od), ", s32", DimsText(od), ")");
        for (const char* largest : {"true", "false"}) {
          const std::string hlo = StrCat("ENTRY e {\n x = ", x, " parameter(0)\n ROOT t = ", outs,
                                         " topk(x), k=", k, ", largest=", largest, "\n}\n");
          SCOPED_TRACE(hlo);
          Check(hlo);
          if (HasFailure()) return;
        }
        const std::string call = StrCat(
            Replace(kComparators, "$T", t), "cmp4 { a = ", t, "[] parameter(0)  b = ", t,
            "[] parameter(1)  c = s32[] parameter(2)  d = s32[] parameter(3)",
            "  ROOT r = pred[] compare(a, b), direction=GT, type=TOTALORDER }\n",
            "ENTRY e {\n x = ", x, " parameter(0)\n ROOT t = ", outs,
            " custom-call(x), custom_call_target=\"TopK\", to_apply=");
        for (const char* cmp : {"gt_total", "cmp4", "lt_plain"}) {
          const std::string hlo = StrCat(call, cmp, "\n}\n");
          SCOPED_TRACE(hlo);
          Check(hlo);
          if (HasFailure()) return;
        }
      }
    }
  }
}

}  // namespace
}  // namespace kiln::cpu
