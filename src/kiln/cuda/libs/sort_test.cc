// Sort and top-k on the GPU (label gpu) against the reference evaluator's `sort` (TOTALORDER
// comparator, is_stable) and `topk`, bit for bit, with NaNs of both signs and several payloads,
// signed zeros, infinities and many ties; both the shared-memory and the radix paths; values,
// index outputs, JAX's canonicalizing comparator (host reference). Skipped without a GPU.
#include <algorithm>
#include <cstring>
#include <numeric>

#include "kiln/base/strings.h"
#include "kiln/cuda/libs/gpu_test_util.h"
#include "kiln/cuda/libs/sort.h"
#include "kiln/eval/evaluator.h"
#include "kiln/hlo/computation.h"
#include "kiln/hlo/module.h"
#include "kiln/hlo/parser.h"

namespace kiln::cuda::libs {
namespace {

using testing::RandomLiteral;

struct SortCase {
  std::string name;
  PrimitiveType key = PrimitiveType::kF32;
  int64_t rows = 37, n = 100;
  SortOrder order = SortOrder::kAscending;
  int64_t k = 0;                          // > 0: topk
  std::vector<PrimitiveType> values = {};  // extra operands
  PrimitiveType index_type = PrimitiveType::kS32;
  bool canonical = false;
};
std::ostream& operator<<(std::ostream& os, const SortCase& c) { return os << c.name; }

// Random keys with many ties and, for floats, NaNs of both signs and payloads, +-0 and +-inf.
Literal Keys(const SortCase& c, uint64_t seed) {
  const PrimitiveType t = c.key;
  Literal l = IsIntegralType(t) || t == PrimitiveType::kPred
                  ? RandomLiteral(t, {c.rows, c.n}, seed, IsUnsignedIntegralType(t) || t == PrimitiveType::kPred ? 0 : -6,
                                  t == PrimitiveType::kPred ? 1 : 6)
                  : RandomLiteral(t, {c.rows, c.n}, seed, -4, 4);
  if (!IsFloatingPointType(t)) return l;
  std::mt19937_64 rng(seed + 99);
  const int width = PrimitiveByteWidth(t);
  for (int64_t i = 0; i < l.element_count(); ++i) {
    const uint64_t r = rng() % 100;
    double v = l.GetAsDouble(i);
    if (r < 40) v = std::round(v * 2) / 2;  // ties
    l.SetFromDouble(i, v);
    if (r >= 40 && r < 44) l.SetFromDouble(i, r % 2 ? 0.0 : -0.0);
    if (r >= 44 && r < 46) l.SetFromDouble(i, r % 2 ? INFINITY : -INFINITY);
    if (r >= 46 && r < 52) {
      // NaN with a random payload and sign: all exponent bits, a nonzero mantissa.
      uint64_t bits = 0;
      const int mant = MantissaBits(t), exp = ExponentBits(t);
      const uint64_t payload = (rng() % ((uint64_t{1} << std::min(mant, 20)) - 1)) + 1;
      bits = (((uint64_t{1} << exp) - 1) << mant) | payload;
      if (rng() % 2) bits |= uint64_t{1} << (mant + exp);
      std::memcpy(l.untyped_data() + i * width, &bits, width);
    }
  }
  return l;
}

std::string ComparatorHlo(PrimitiveType key, SortOrder order, const std::vector<PrimitiveType>& rest) {
  const std::string kt(PrimitiveTypeName(key));
  std::string params = StrCat("  a = ", kt, "[] parameter(0)\n  b = ", kt, "[] parameter(1)\n");
  int p = 2;
  for (PrimitiveType t : rest) {
    params += StrCat("  p", p, " = ", PrimitiveTypeName(t), "[] parameter(", p, ")\n");
    params += StrCat("  p", p + 1, " = ", PrimitiveTypeName(t), "[] parameter(", p + 1, ")\n");
    p += 2;
  }
  const bool fp = IsFloatingPointType(key);
  return StrCat("cmp {\n", params, "  ROOT c = pred[] compare(a, b), direction=",
                order == SortOrder::kAscending ? "LT" : "GT", fp ? ", type=TOTALORDER" : "",
                "\n}\n");
}

// Expected outputs: (keys, values..., indices) as literals of the output shapes.
StatusOr<std::vector<Literal>> Reference(const SortCase& c, const Literal& keys,
                                         const std::vector<Literal>& values) {
  const int64_t out_len = c.k > 0 ? c.k : c.n;
  if (c.canonical) {
    // JAX's comparator: -0 == +0, every NaN is +NaN; a stable sort on that.
    std::vector<Literal> out;
    Literal sk(Shape::ArrayWithDefaultLayout(c.key, {c.rows, out_len}));
    Literal si(Shape::ArrayWithDefaultLayout(PrimitiveType::kS32, {c.rows, out_len}));
    const int w = PrimitiveByteWidth(c.key);
    for (int64_t r = 0; r < c.rows; ++r) {
      std::vector<int64_t> perm(c.n);
      std::iota(perm.begin(), perm.end(), 0);
      auto canon = [&](int64_t i) {
        const double v = keys.GetAsDouble(r * c.n + i);
        return std::isnan(v) ? INFINITY : v;  // NaN after +inf: compare via (isnan, value)
      };
      auto less = [&](int64_t a, int64_t b) {
        const double x = keys.GetAsDouble(r * c.n + a), y = keys.GetAsDouble(r * c.n + b);
        const bool xn = std::isnan(x), yn = std::isnan(y);
        if (c.order == SortOrder::kAscending) {
          if (xn || yn) return !xn && yn;
          return canon(a) < canon(b);
        }
        if (xn || yn) return xn && !yn;
        return canon(a) > canon(b);
      };
      std::stable_sort(perm.begin(), perm.end(), less);
      for (int64_t j = 0; j < out_len; ++j) {
        std::memcpy(sk.untyped_data() + (r * out_len + j) * w,
                    keys.untyped_data() + (r * c.n + perm[j]) * w, w);
        si.data<int32_t>()[r * out_len + j] = static_cast<int32_t>(perm[j]);
      }
    }
    out.push_back(std::move(sk));
    out.push_back(std::move(si));
    return out;
  }
  const std::string kt(PrimitiveTypeName(c.key));
  const std::string dims = StrCat("[", c.rows, ",", c.n, "]");
  std::string text;
  std::vector<Literal> args;
  args.push_back(keys);
  if (c.k > 0) {
    text = StrCat("HloModule topk\nENTRY e {\n  x = ", kt, dims, " parameter(0)\n",
                  "  ROOT t = (", kt, "[", c.rows, ",", c.k, "], s32[", c.rows, ",", c.k,
                  "]) topk(x), k=", c.k, ", largest=",
                  c.order == SortOrder::kDescending ? "true" : "false", "\n}\n");
  } else {
    std::vector<PrimitiveType> rest = c.values;
    rest.push_back(PrimitiveType::kS32);
    std::string operands = "x", shapes = kt + dims, params;
    for (size_t i = 0; i < c.values.size(); ++i) {
      params += StrCat("  v", i, " = ", PrimitiveTypeName(c.values[i]), dims, " parameter(", i + 1, ")\n");
      operands += StrCat(", v", i);
      shapes += StrCat(", ", PrimitiveTypeName(c.values[i]), dims);
      args.push_back(values[i]);
    }
    text = StrCat("HloModule sort\n", ComparatorHlo(c.key, c.order, rest), "ENTRY e {\n  x = ",
                  kt, dims, " parameter(0)\n", params, "  iota = s32", dims,
                  " iota(), iota_dimension=1\n  ROOT s = (", shapes, ", s32", dims, ") sort(",
                  operands, ", iota), dimensions={1}, is_stable=true, to_apply=cmp\n}\n");
  }
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<HloModule> module, ParseHloModule(text));
  KILN_ASSIGN_OR_RETURN(Literal result, EvaluateModule(*module, args));
  return result.DecomposeTuple();
}

::testing::AssertionResult BitwiseSame(const Literal& actual, const Literal& expected,
                                       const std::string& what) {
  if (actual.BitwiseEquals(expected)) return ::testing::AssertionSuccess();
  const int w = PrimitiveByteWidth(expected.shape().element_type());
  for (int64_t i = 0; i < expected.element_count(); ++i) {
    if (std::memcmp(actual.untyped_data() + i * w, expected.untyped_data() + i * w, w) != 0) {
      return ::testing::AssertionFailure()
             << what << " differs first at element " << i << ": got " << actual.GetAsDouble(i)
             << ", want " << expected.GetAsDouble(i) << " (" << actual.ToShortString(16)
             << " vs " << expected.ToShortString(16) << ")";
    }
  }
  return ::testing::AssertionFailure() << what << ": shapes differ";
}

class SortTest : public testing::GpuTest, public ::testing::WithParamInterface<SortCase> {};

TEST_P(SortTest, MatchesTheEvaluatorBitForBit) {
  const SortCase& c = GetParam();
  SortDesc desc;
  desc.key_type = c.key;
  desc.rows = c.rows;
  desc.row_length = c.n;
  desc.order = c.order;
  desc.k = c.k;
  desc.value_types = c.values;
  desc.index_type = c.index_type;
  desc.canonicalize_floats = c.canonical;
  SCOPED_TRACE(desc.ToString());
  const uint64_t seed = std::hash<std::string>()(c.name);
  Literal keys = Keys(c, seed);
  std::vector<Literal> values;
  for (size_t i = 0; i < c.values.size(); ++i) {
    values.push_back(RandomLiteral(c.values[i], {c.rows, c.n}, seed + 1 + i));
  }
  KILN_ASSERT_OK_AND_ASSIGN(std::vector<Literal> expected, Reference(c, keys, values));

  KILN_ASSERT_OK_AND_ASSIGN(std::unique_ptr<SortPlan> plan, SortPlan::Create(desc, *device_));
  EXPECT_EQ(plan->uses_radix(), c.n > kSortMaxSmallRow);
  const int64_t out_len = desc.output_length();
  SortBuffers buffers;
  KILN_ASSERT_OK_AND_ASSIGN(buffers.keys_in, Upload(keys));
  KILN_ASSERT_OK_AND_ASSIGN(buffers.keys_out, Alloc(c.rows * out_len * PrimitiveByteWidth(c.key)));
  for (size_t i = 0; i < c.values.size(); ++i) {
    KILN_ASSERT_OK_AND_ASSIGN(runtime::DeviceMemory in, Upload(values[i]));
    KILN_ASSERT_OK_AND_ASSIGN(runtime::DeviceMemory out,
                              Alloc(c.rows * out_len * PrimitiveByteWidth(c.values[i])));
    buffers.values_in.push_back(in);
    buffers.values_out.push_back(out);
  }
  KILN_ASSERT_OK_AND_ASSIGN(buffers.indices_out, Alloc(c.rows * out_len * 8));
  KILN_ASSERT_OK_AND_ASSIGN(runtime::DeviceMemory ws, Alloc(plan->workspace_bytes()));
  KILN_ASSERT_OK(plan->Run(buffers, ws, *stream_));

  KILN_ASSERT_OK_AND_ASSIGN(
      Literal got_keys,
      Download(buffers.keys_out, Shape::ArrayWithDefaultLayout(c.key, {c.rows, out_len})));
  EXPECT_TRUE(BitwiseSame(got_keys, expected[0], "keys"));
  for (size_t i = 0; i < c.values.size(); ++i) {
    KILN_ASSERT_OK_AND_ASSIGN(
        Literal got, Download(buffers.values_out[i],
                              Shape::ArrayWithDefaultLayout(c.values[i], {c.rows, out_len})));
    EXPECT_TRUE(BitwiseSame(got, expected[1 + i], StrCat("values ", i)));
  }
  KILN_ASSERT_OK_AND_ASSIGN(
      Literal got_idx, Download(buffers.indices_out,
                                Shape::ArrayWithDefaultLayout(c.index_type, {c.rows, out_len})));
  const Literal& want_idx = expected.back();
  bool same = true;
  for (int64_t i = 0; i < want_idx.element_count() && same; ++i) {
    same = got_idx.GetAsInt64(i) == want_idx.GetAsInt64(i);
    EXPECT_TRUE(same) << "index " << i << ": got " << got_idx.GetAsInt64(i) << ", want "
                      << want_idx.GetAsInt64(i);
  }
}

std::vector<SortCase> Cases() {
  using PT = PrimitiveType;
  const SortOrder desc = SortOrder::kDescending;
  return {
      {.name = "f32_small"},
      {.name = "f32_small_desc", .order = desc},
      {.name = "bf16_small", .key = PT::kBF16},
      {.name = "f16_small_desc", .key = PT::kF16, .order = desc},
      {.name = "f64_small", .key = PT::kF64, .index_type = PT::kS64},
      {.name = "s32_small", .key = PT::kS32},
      {.name = "u32_small_desc", .key = PT::kU32, .order = desc, .index_type = PT::kU32},
      {.name = "s64_small", .key = PT::kS64},
      {.name = "u8_small", .key = PT::kU8},
      {.name = "s8_small_desc", .key = PT::kS8, .order = desc},
      {.name = "s16_small", .key = PT::kS16},
      {.name = "pred_small", .key = PT::kPred},
      {.name = "f32_row_of_one", .rows = 5, .n = 1},
      {.name = "f32_exactly_4096", .rows = 3, .n = 4096},
      {.name = "f32_values", .values = {PT::kC64, PT::kBF16, PT::kPred, PT::kC128}},
      {.name = "f32_radix_4097", .rows = 3, .n = 4097},
      {.name = "f32_radix", .rows = 4, .n = 70001},
      {.name = "f32_radix_desc", .rows = 2, .n = 30000, .order = desc},
      {.name = "bf16_radix_values", .key = PT::kBF16, .rows = 2, .n = 20000, .values = {PT::kF32}},
      {.name = "s64_radix", .key = PT::kS64, .rows = 2, .n = 9000},
      {.name = "f64_radix_desc", .key = PT::kF64, .rows = 1, .n = 50000, .order = desc},
      {.name = "u8_radix", .key = PT::kU8, .rows = 3, .n = 10000},
      {.name = "f32_many_rows", .rows = 5000, .n = 33},
      {.name = "topk_f32_largest", .rows = 16, .n = 1000, .order = desc, .k = 10},
      {.name = "topk_bf16_largest", .key = PT::kBF16, .rows = 8, .n = 300, .order = desc, .k = 5},
      {.name = "topk_f32_smallest", .rows = 16, .n = 1000, .k = 7},
      {.name = "topk_f32_radix", .rows = 2, .n = 50000, .order = desc, .k = 9},
      {.name = "topk_s32_largest", .key = PT::kS32, .rows = 4, .n = 129, .order = desc, .k = 129},
      {.name = "f32_canonical", .canonical = true},
      {.name = "f32_canonical_desc", .order = desc, .canonical = true},
      {.name = "f32_canonical_radix", .rows = 2, .n = 9000, .canonical = true},
  };
}

// The references themselves (HLO text through the evaluator) need no GPU.
TEST(SortReferenceTest, EveryCaseHasAReference) {
  for (const SortCase& c : Cases()) {
    Literal keys = Keys(c, 1);
    std::vector<Literal> values;
    for (PrimitiveType t : c.values) values.push_back(RandomLiteral(t, {c.rows, c.n}, 2));
    StatusOr<std::vector<Literal>> ref = Reference(c, keys, values);
    ASSERT_TRUE(ref.ok()) << c.name << ": " << ref.status().ToString();
    EXPECT_EQ(ref->size(), c.values.size() + 2) << c.name;
    EXPECT_EQ(ref->front().element_count(), c.rows * (c.k > 0 ? c.k : c.n)) << c.name;
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, SortTest, ::testing::ValuesIn(Cases()),
                         [](const auto& info) { return info.param.name; });

// ---- HLO in, GPU out: SortDescFromHlo + SortPlan against the evaluator on the whole module ----

struct HloSortCase {
  std::string name;
  std::string text;  // ENTRY root: the sort / topk / TopK custom call over entry parameters
};
std::ostream& operator<<(std::ostream& os, const HloSortCase& c) { return os << c.name; }

// JAX's float comparator over (keys, iota): both sides canonicalized.
std::string JaxComparator(const std::string& t) {
  return StrCat(R"(
cmp {
  a = )", t, R"([] parameter(0)
  ne.a = pred[] compare(a, a), direction=NE
  nan = )", t, R"([] constant(nan)
  zero = )", t, R"([] constant(0)
  eq.a = pred[] compare(a, zero), direction=EQ
  sel.a = )", t, R"([] select(eq.a, zero, a)
  can.a = )", t, R"([] select(ne.a, nan, sel.a)
  b = )", t, R"([] parameter(1)
  ne.b = pred[] compare(b, b), direction=NE
  eq.b = pred[] compare(b, zero), direction=EQ
  sel.b = )", t, R"([] select(eq.b, zero, b)
  can.b = )", t, R"([] select(ne.b, nan, sel.b)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  ROOT lt = pred[] compare(can.a, can.b), direction=LT, type=TOTALORDER
}
)");
}

std::vector<HloSortCase> HloCases() {
  return {
      {"jax_argsort_f32", StrCat("HloModule m\n", JaxComparator("f32"), R"(
ENTRY e {
  x = f32[4,300]{1,0} parameter(0)
  iota = s32[4,300]{1,0} iota(), iota_dimension=1
  ROOT s = (f32[4,300]{1,0}, s32[4,300]{1,0}) sort(x, iota), dimensions={1}, is_stable=true, to_apply=cmp
})")},
      {"jax_argsort_bf16_radix", StrCat("HloModule m\n", JaxComparator("bf16"), R"(
ENTRY e {
  x = bf16[2,5000]{1,0} parameter(0)
  iota = s32[2,5000]{1,0} iota(), iota_dimension=1
  ROOT s = (bf16[2,5000]{1,0}, s32[2,5000]{1,0}) sort(x, iota), dimensions={1}, is_stable=true, to_apply=cmp
})")},
      {"values_by_second_operand_descending", R"(HloModule m
cmp {
  va = f16[] parameter(0)
  vb = f16[] parameter(1)
  ka = s32[] parameter(2)
  kb = s32[] parameter(3)
  ROOT lt = pred[] compare(kb, ka), direction=LT
}
ENTRY e {
  v = f16[3,100]{1,0} parameter(0)
  k = s32[3,100]{1,0} parameter(1)
  ROOT s = (f16[3,100]{1,0}, s32[3,100]{1,0}) sort(v, k), dimensions={1}, is_stable=true, to_apply=cmp
})"},
      {"plain_float_gt_1d", R"(HloModule m
cmp {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT gt = pred[] compare(a, b), direction=GT, type=TOTALORDER
}
ENTRY e {
  x = f32[777]{0} parameter(0)
  ROOT s = f32[777]{0} sort(x), dimensions={0}, is_stable=true, to_apply=cmp
})"},
      {"topk_op_f32", R"(HloModule m
ENTRY e {
  x = f32[3,1000]{1,0} parameter(0)
  ROOT t = (f32[3,4]{1,0}, s32[3,4]{1,0}) topk(x), k=4, largest=true
})"},
      {"topk_op_s32_smallest", R"(HloModule m
ENTRY e {
  x = s32[5,64]{1,0} parameter(0)
  ROOT t = (s32[5,6]{1,0}, s32[5,6]{1,0}) topk(x), k=6, largest=false
})"},
      {"topk_custom_call_bf16", R"(HloModule m
cmp {
  a = bf16[] parameter(0)
  b = bf16[] parameter(1)
  ROOT gt = pred[] compare(a, b), direction=GT, type=TOTALORDER
}
ENTRY e {
  x = bf16[2,50]{1,0} parameter(0)
  ROOT t = (bf16[2,5]{1,0}, s32[2,5]{1,0}) custom-call(x), custom_call_target="TopK", to_apply=cmp
})"},
  };
}

class SortHloTest : public testing::GpuTest, public ::testing::WithParamInterface<HloSortCase> {};

TEST_P(SortHloTest, MatchesTheEvaluatorBitForBit) {
  const HloSortCase& c = GetParam();
  KILN_ASSERT_OK_AND_ASSIGN(std::unique_ptr<HloModule> module, ParseHloModule(c.text));
  const HloInstruction& root = *module->entry_computation()->root_instruction();
  KILN_ASSERT_OK_AND_ASSIGN(SortFromHlo s, SortDescFromHlo(root));
  SCOPED_TRACE(s.desc.ToString());

  // Arguments: keys with NaNs, zeros, infinities and ties; values random.
  const HloComputation& entry = *module->entry_computation();
  const int64_t key_param = root.operand(s.key_operand)->parameter_number();
  ASSERT_GE(key_param, 0);
  std::vector<Literal> args;
  for (int64_t p = 0; p < entry.num_parameters(); ++p) {
    const Shape& shape = entry.parameter_instruction(p)->shape();
    if (p == key_param) {
      SortCase kc{.name = c.name, .key = shape.element_type(), .rows = s.desc.rows,
                  .n = s.desc.row_length};
      Literal flat = Keys(kc, std::hash<std::string>()(c.name));
      Literal arg(shape);
      std::memcpy(arg.untyped_data(), flat.untyped_data(), arg.size_bytes());
      args.push_back(std::move(arg));
    } else {
      args.push_back(RandomLiteral(shape.element_type(), shape.dimensions(), 7 + p));
    }
  }
  KILN_ASSERT_OK_AND_ASSIGN(Literal expected, EvaluateModule(*module, args));
  auto expected_output = [&](int64_t j) -> const Literal& {
    return root.shape().IsTuple() ? expected.tuple_element(j) : expected;
  };
  auto output_shape = [&](int64_t j) -> Shape {
    return root.shape().IsTuple() ? root.shape().tuple_shapes(j) : root.shape();
  };

  KILN_ASSERT_OK_AND_ASSIGN(std::unique_ptr<SortPlan> plan, SortPlan::Create(s.desc, *device_));
  SortBuffers buffers;
  KILN_ASSERT_OK_AND_ASSIGN(buffers.keys_in, Upload(args[key_param]));
  KILN_ASSERT_OK_AND_ASSIGN(buffers.keys_out, Alloc(Literal(output_shape(s.key_output)).size_bytes()));
  for (size_t i = 0; i < s.value_operands.size(); ++i) {
    const int64_t p = root.operand(s.value_operands[i])->parameter_number();
    ASSERT_GE(p, 0);
    KILN_ASSERT_OK_AND_ASSIGN(runtime::DeviceMemory in, Upload(args[p]));
    KILN_ASSERT_OK_AND_ASSIGN(runtime::DeviceMemory out,
                              Alloc(Literal(output_shape(s.value_outputs[i])).size_bytes()));
    buffers.values_in.push_back(in);
    buffers.values_out.push_back(out);
  }
  if (s.index_output >= 0) {
    KILN_ASSERT_OK_AND_ASSIGN(buffers.indices_out,
                              Alloc(Literal(output_shape(s.index_output)).size_bytes()));
  }
  KILN_ASSERT_OK_AND_ASSIGN(runtime::DeviceMemory ws, Alloc(plan->workspace_bytes()));
  KILN_ASSERT_OK(plan->Run(buffers, ws, *stream_));

  KILN_ASSERT_OK_AND_ASSIGN(Literal got_keys,
                            Download(buffers.keys_out, output_shape(s.key_output)));
  EXPECT_TRUE(BitwiseSame(got_keys, expected_output(s.key_output), "keys"));
  for (size_t i = 0; i < s.value_outputs.size(); ++i) {
    KILN_ASSERT_OK_AND_ASSIGN(Literal got,
                              Download(buffers.values_out[i], output_shape(s.value_outputs[i])));
    EXPECT_TRUE(BitwiseSame(got, expected_output(s.value_outputs[i]), StrCat("values ", i)));
  }
  if (s.index_output >= 0) {
    KILN_ASSERT_OK_AND_ASSIGN(Literal got,
                              Download(buffers.indices_out, output_shape(s.index_output)));
    EXPECT_TRUE(BitwiseSame(got, expected_output(s.index_output), "indices"));
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, SortHloTest, ::testing::ValuesIn(HloCases()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace kiln::cuda::libs
