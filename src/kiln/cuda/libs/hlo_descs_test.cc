// Library descriptors from HLO text, without a GPU (label cpu): sort comparators in the forms JAX
// emits (canonicalized float keys, argsort with iota, descending, swapped parameters), topk and
// the TopK custom call, fft; and the forms that must be refused with a reason.
#include <gtest/gtest.h>

#include "kiln/cuda/libs/fft.h"
#include "kiln/cuda/libs/sort.h"
#include "kiln/hlo/computation.h"
#include "kiln/hlo/module.h"
#include "kiln/hlo/parser.h"
#include "kiln/runtime/test_macros.h"

namespace kiln::cuda::libs {
namespace {

// The entry computation's root, or the first instruction of `opcode` in the entry.
class HloDescTest : public ::testing::Test {
 protected:
  const HloInstruction& Parse(const std::string& text, HloOpcode opcode) {
    StatusOr<std::unique_ptr<HloModule>> module = ParseHloModule(text);
    EXPECT_TRUE(module.ok()) << module.status().ToString();
    if (!module.ok()) std::abort();  // test-only: the texts below are fixed
    module_ = std::move(module).value();
    for (HloInstruction* i : module_->entry_computation()->instructions()) {
      if (i->opcode() == opcode) return *i;
    }
    ADD_FAILURE() << "no " << HloOpcodeString(opcode) << " in the entry";
    std::abort();
  }
  std::unique_ptr<HloModule> module_;
};

// JAX's comparator for a float key: both sides canonicalized (-0 -> 0, NaN -> NaN).
constexpr char kJaxFloatComparator[] = R"(
cmp {
  a = f32[] parameter(0)
  ne.a = pred[] compare(a, a), direction=NE
  nan = f32[] constant(nan)
  zero = f32[] constant(0)
  eq.a = pred[] compare(a, zero), direction=EQ
  sel.a = f32[] select(eq.a, zero, a)
  can.a = f32[] select(ne.a, nan, sel.a)
  b = f32[] parameter(1)
  ne.b = pred[] compare(b, b), direction=NE
  eq.b = pred[] compare(b, zero), direction=EQ
  sel.b = f32[] select(eq.b, zero, b)
  can.b = f32[] select(ne.b, nan, sel.b)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  ROOT lt = pred[] compare(can.a, can.b), direction=LT, type=TOTALORDER
}
)";

TEST_F(HloDescTest, JaxArgsortWritesThePermutation) {
  const HloInstruction& sort = Parse(std::string("HloModule m\n") + kJaxFloatComparator + R"(
ENTRY e {
  x = f32[4,32]{1,0} parameter(0)
  iota = s32[4,32]{1,0} iota(), iota_dimension=1
  ROOT s = (f32[4,32]{1,0}, s32[4,32]{1,0}) sort(x, iota), dimensions={1}, is_stable=true, to_apply=cmp
}
)", HloOpcode::kSort);
  KILN_ASSERT_OK_AND_ASSIGN(SortFromHlo s, SortDescFromHlo(sort));
  EXPECT_EQ(s.desc.key_type, PrimitiveType::kF32);
  EXPECT_EQ(s.desc.rows, 4);
  EXPECT_EQ(s.desc.row_length, 32);
  EXPECT_EQ(s.desc.order, SortOrder::kAscending);
  EXPECT_TRUE(s.desc.canonicalize_floats);
  EXPECT_EQ(s.desc.index_type, PrimitiveType::kS32);
  EXPECT_TRUE(s.desc.value_types.empty());
  EXPECT_EQ(s.key_operand, 0);
  EXPECT_EQ(s.key_output, 0);
  EXPECT_EQ(s.index_output, 1);
  EXPECT_EQ(s.desc.k, 0);
}

TEST_F(HloDescTest, IotaAlongAnotherDimensionIsAValue) {
  const HloInstruction& sort = Parse(std::string("HloModule m\n") + kJaxFloatComparator + R"(
ENTRY e {
  x = f32[4,32]{1,0} parameter(0)
  iota = s32[4,32]{1,0} iota(), iota_dimension=0
  ROOT s = (f32[4,32]{1,0}, s32[4,32]{1,0}) sort(x, iota), dimensions={1}, to_apply=cmp
}
)", HloOpcode::kSort);
  KILN_ASSERT_OK_AND_ASSIGN(SortFromHlo s, SortDescFromHlo(sort));
  EXPECT_EQ(s.desc.index_type, PrimitiveType::kInvalid);
  ASSERT_EQ(s.value_operands.size(), 1u);
  EXPECT_EQ(s.value_operands[0], 1);
  EXPECT_EQ(s.value_outputs[0], 1);
  EXPECT_EQ(s.desc.value_types[0], PrimitiveType::kS32);
}

TEST_F(HloDescTest, KeyOperandSecondAndDescendingBySwappedParameters) {
  // Sorting (values, keys) by the second operand, descending (compare(rhs, lhs) LT).
  const HloInstruction& sort = Parse(R"(HloModule m
cmp {
  va = f16[] parameter(0)
  vb = f16[] parameter(1)
  ka = u16[] parameter(2)
  kb = u16[] parameter(3)
  ROOT lt = pred[] compare(kb, ka), direction=LT
}
ENTRY e {
  v = f16[100]{0} parameter(0)
  k = u16[100]{0} parameter(1)
  ROOT s = (f16[100]{0}, u16[100]{0}) sort(v, k), dimensions={0}, to_apply=cmp
}
)", HloOpcode::kSort);
  KILN_ASSERT_OK_AND_ASSIGN(SortFromHlo s, SortDescFromHlo(sort));
  EXPECT_EQ(s.desc.key_type, PrimitiveType::kU16);
  EXPECT_EQ(s.desc.order, SortOrder::kDescending);
  EXPECT_FALSE(s.desc.canonicalize_floats);
  EXPECT_EQ(s.key_operand, 1);
  EXPECT_EQ(s.key_output, 1);
  ASSERT_EQ(s.value_operands.size(), 1u);
  EXPECT_EQ(s.value_operands[0], 0);
  EXPECT_EQ(s.desc.value_types[0], PrimitiveType::kF16);
  EXPECT_EQ(s.desc.rows, 1);
  EXPECT_EQ(s.desc.row_length, 100);
}

TEST_F(HloDescTest, GreaterThanAndPlainFloatCompare) {
  const HloInstruction& sort = Parse(R"(HloModule m
cmp {
  a = bf16[] parameter(0)
  b = bf16[] parameter(1)
  ROOT gt = pred[] compare(a, b), direction=GT
}
ENTRY e {
  x = bf16[3,5,7]{2,1,0} parameter(0)
  ROOT s = bf16[3,5,7]{2,1,0} sort(x), dimensions={2}, to_apply=cmp
}
)", HloOpcode::kSort);
  KILN_ASSERT_OK_AND_ASSIGN(SortFromHlo s, SortDescFromHlo(sort));
  EXPECT_EQ(s.desc.order, SortOrder::kDescending);
  EXPECT_TRUE(s.desc.canonicalize_floats);  // a plain float compare ties -0/+0
  EXPECT_EQ(s.desc.rows, 15);
  EXPECT_EQ(s.desc.row_length, 7);
}

TEST_F(HloDescTest, TotalOrderWithoutCanonicalizationKeepsSignedZeros) {
  const HloInstruction& sort = Parse(R"(HloModule m
cmp {
  a = f64[] parameter(0)
  b = f64[] parameter(1)
  ROOT lt = pred[] compare(a, b), direction=LT, type=TOTALORDER
}
ENTRY e {
  x = f64[9]{0} parameter(0)
  ROOT s = f64[9]{0} sort(x), dimensions={0}, to_apply=cmp
}
)", HloOpcode::kSort);
  KILN_ASSERT_OK_AND_ASSIGN(SortFromHlo s, SortDescFromHlo(sort));
  EXPECT_FALSE(s.desc.canonicalize_floats);
  EXPECT_EQ(s.desc.order, SortOrder::kAscending);
}

TEST_F(HloDescTest, RefusedForms) {
  // Sorted dimension not minor in memory.
  const HloInstruction& major = Parse(R"(HloModule m
cmp {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT lt = pred[] compare(a, b), direction=LT
}
ENTRY e {
  x = f32[8,16]{1,0} parameter(0)
  ROOT s = f32[8,16]{1,0} sort(x), dimensions={0}, to_apply=cmp
}
)", HloOpcode::kSort);
  EXPECT_EQ(SortDescFromHlo(major).status().code(), StatusCode::kUnimplemented);

  // A lexicographic two-key comparator.
  const HloInstruction& lex = Parse(R"(HloModule m
cmp {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  lt0 = pred[] compare(a, b), direction=LT
  eq0 = pred[] compare(a, b), direction=EQ
  lt1 = pred[] compare(c, d), direction=LT
  tie = pred[] and(eq0, lt1)
  ROOT r = pred[] or(lt0, tie)
}
ENTRY e {
  x = s32[16]{0} parameter(0)
  y = s32[16]{0} parameter(1)
  ROOT s = (s32[16]{0}, s32[16]{0}) sort(x, y), dimensions={0}, to_apply=cmp
}
)", HloOpcode::kSort);
  Status st = SortDescFromHlo(lex).status();
  EXPECT_EQ(st.code(), StatusCode::kUnimplemented);
  EXPECT_NE(st.message().find("single compare"), std::string::npos) << st.ToString();

  // Comparing parameters of two different operands.
  const HloInstruction& mixed = Parse(R"(HloModule m
cmp {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  ROOT lt = pred[] compare(a, d), direction=LT
}
ENTRY e {
  x = s32[16]{0} parameter(0)
  y = s32[16]{0} parameter(1)
  ROOT s = (s32[16]{0}, s32[16]{0}) sort(x, y), dimensions={0}, to_apply=cmp
}
)", HloOpcode::kSort);
  EXPECT_EQ(SortDescFromHlo(mixed).status().code(), StatusCode::kUnimplemented);

  // Complex keys.
  const HloInstruction& complex = Parse(R"(HloModule m
cmp {
  a = c64[] parameter(0)
  b = c64[] parameter(1)
  ROOT lt = pred[] compare(a, b), direction=LT
}
ENTRY e {
  x = c64[16]{0} parameter(0)
  ROOT s = c64[16]{0} sort(x), dimensions={0}, to_apply=cmp
}
)", HloOpcode::kSort);
  EXPECT_FALSE(SortDescFromHlo(complex).ok());
}

TEST_F(HloDescTest, TopKOp) {
  const HloInstruction& topk = Parse(R"(HloModule m
ENTRY e {
  x = f32[3,16]{1,0} parameter(0)
  ROOT t = (f32[3,4]{1,0}, s32[3,4]{1,0}) topk(x), k=4, largest=true
}
)", HloOpcode::kTopK);
  KILN_ASSERT_OK_AND_ASSIGN(SortFromHlo s, SortDescFromHlo(topk));
  EXPECT_EQ(s.desc.order, SortOrder::kDescending);
  EXPECT_FALSE(s.desc.canonicalize_floats);  // total order, as XLA's topk
  EXPECT_EQ(s.desc.k, 4);
  EXPECT_EQ(s.desc.rows, 3);
  EXPECT_EQ(s.desc.row_length, 16);
  EXPECT_EQ(s.desc.index_type, PrimitiveType::kS32);
  EXPECT_EQ(s.index_output, 1);

  const HloInstruction& smallest = Parse(R"(HloModule m
ENTRY e {
  x = s32[2,10]{1,0} parameter(0)
  ROOT t = (s32[2,3]{1,0}, s32[2,3]{1,0}) topk(x), k=3, largest=false
}
)", HloOpcode::kTopK);
  KILN_ASSERT_OK_AND_ASSIGN(s, SortDescFromHlo(smallest));
  EXPECT_EQ(s.desc.order, SortOrder::kAscending);
  EXPECT_EQ(s.desc.k, 3);
}

TEST_F(HloDescTest, TopKCustomCall) {
  const HloInstruction& cc = Parse(R"(HloModule m
cmp {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT gt = pred[] compare(a, b), direction=GT, type=TOTALORDER
}
ENTRY e {
  x = f32[2,50]{1,0} parameter(0)
  ROOT t = (f32[2,5]{1,0}, s32[2,5]{1,0}) custom-call(x), custom_call_target="TopK", to_apply=cmp
}
)", HloOpcode::kCustomCall);
  KILN_ASSERT_OK_AND_ASSIGN(SortFromHlo s, SortDescFromHlo(cc));
  EXPECT_EQ(s.desc.order, SortOrder::kDescending);
  EXPECT_EQ(s.desc.k, 5);
  EXPECT_EQ(s.desc.row_length, 50);
  EXPECT_EQ(s.desc.rows, 2);
  EXPECT_FALSE(s.desc.canonicalize_floats);

  const HloInstruction& other = Parse(R"(HloModule m
ENTRY e {
  x = f32[2,50]{1,0} parameter(0)
  ROOT t = f32[2,50]{1,0} custom-call(x), custom_call_target="Something"
}
)", HloOpcode::kCustomCall);
  EXPECT_EQ(SortDescFromHlo(other).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(HloDescTest, FftForms) {
  const HloInstruction& rfft = Parse(R"(HloModule m
ENTRY e {
  x = f32[4,6,16,32]{3,2,1,0} parameter(0)
  ROOT f = c64[4,6,16,17]{3,2,1,0} fft(x), fft_type=RFFT, fft_length={16,32}
}
)", HloOpcode::kFft);
  KILN_ASSERT_OK_AND_ASSIGN(FftDesc d, FftDescFromHlo(rfft));
  EXPECT_EQ(d.type, FftType::kRfft);
  EXPECT_EQ(d.precision, PrimitiveType::kF32);
  EXPECT_EQ(d.batch, 24);
  EXPECT_EQ(d.fft_length, (std::vector<int64_t>{16, 32}));

  const HloInstruction& irfft = Parse(R"(HloModule m
ENTRY e {
  x = c128[8,9]{1,0} parameter(0)
  ROOT f = f64[8,16]{1,0} fft(x), fft_type=IRFFT, fft_length={16}
}
)", HloOpcode::kFft);
  KILN_ASSERT_OK_AND_ASSIGN(d, FftDescFromHlo(irfft));
  EXPECT_EQ(d.type, FftType::kIrfft);
  EXPECT_EQ(d.precision, PrimitiveType::kF64);
  EXPECT_EQ(d.batch, 8);

  const HloInstruction& col = Parse(R"(HloModule m
ENTRY e {
  x = c64[8,16]{0,1} parameter(0)
  ROOT f = c64[8,16]{0,1} fft(x), fft_type=FFT, fft_length={16}
}
)", HloOpcode::kFft);
  EXPECT_EQ(FftDescFromHlo(col).status().code(), StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace kiln::cuda::libs
