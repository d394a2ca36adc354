// rng-bit-generator kernel against the evaluator (itself bit-exact with XLA): both algorithms,
// every output width, odd/even/size-0/size-1/scalar shapes, counters about to carry, large
// outputs generated in parallel.
#include <gtest/gtest.h>

#include "kiln/base/strings.h"
#include "kiln/cpu/kernels/kernel_test_util.h"

namespace kiln::cpu {
namespace {

using testing::CheckOptions;

TEST(RngBitGeneratorKernelTest, MatchesEvaluatorBitForBit) {
  const std::vector<std::vector<uint64_t>> states = {
      {42, 7}, {0x0123456789abcdefull, 0xfffffffffffffff0ull},
      {3, 0xfffffffffffffffeull, 0xffffffffffffffffull}, {9, 1, 5}};
  int checked = 0;
  for (const char* alg : {"rng_three_fry", "rng_philox", "rng_default"}) {
    for (const char* type : {"u32", "u64", "u8", "u16", "s32", "s64"}) {
      for (const char* dims : {"[]", "[1]", "[7]", "[6]", "[3,5]", "[5,4]", "[0,3]", "[3,1,7]",
                               "[70001]"}) {
        for (const std::vector<uint64_t>& st : states) {
          const bool threefry = std::string(alg) == "rng_three_fry";
          if (threefry && st.size() != 2) continue;
          const std::string ss = StrCat("u64[", st.size(), "]");
          const std::string hlo =
              StrCat("ENTRY e {\n s = ", ss, " parameter(0)\n ROOT r = (", ss, ", ", type, dims,
                     ") rng-bit-generator(s), algorithm=", alg, "\n}\n");
          SCOPED_TRACE(StrCat(hlo, " state ", st[0], ",", st[1]));
          std::unique_ptr<HloModule> m = testing::Parse(hlo);
          ASSERT_NE(m, nullptr);
          Literal state(m->entry_computation()->parameter_instruction(0)->shape());
          std::memcpy(state.untyped_data(), st.data(), st.size() * 8);
          for (bool pool : {true, false}) {
            CheckOptions o;
            o.with_pool = pool;
            o.rtol = 0;
            o.atol = 0;
            std::vector<Literal> ops;
            ops.push_back(state);
            testing::ExpectMatchesEvaluator(*testing::Find(*m), o, std::move(ops));
            if (HasFailure()) return;
          }
          ++checked;
        }
      }
    }
  }
  EXPECT_GE(checked, 400);
}

}  // namespace
}  // namespace kiln::cpu
