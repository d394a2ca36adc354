#include "kiln/passes/compile_summary.h"

#include <gtest/gtest.h>

#include "kiln/passes/buffer_assignment.h"
#include "kiln/passes/cpu_fusion_policy.h"
#include "kiln/passes/fusion_passes.h"
#include "kiln/passes/fusion_test_util.h"

namespace kiln {
namespace {

TEST(CompileSummaryTest, CountsKernelsAndPrintsMemory) {
  auto m = testing::ParseOrFail(R"(
HloModule softmax
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[64,256] parameter(0)
  ninf = f32[] constant(-inf)
  mx = f32[64] reduce(x, ninf), dimensions={1}, to_apply=max
  mb = f32[64,256] broadcast(mx), dimensions={0}
  s = f32[64,256] subtract(x, mb)
  e = f32[64,256] exponential(s)
  z = f32[] constant(0)
  sum = f32[64] reduce(e, z), dimensions={1}, to_apply=add
  sb = f32[64,256] broadcast(sum), dimensions={0}
  d = f32[64,256] divide(e, sb)
  ROOT r = f32[16384] reshape(d)
}
)");
  KernelCounts before = CountKernels(*m);
  EXPECT_EQ(before.instructions, 7);  // the reshape is a view; parameters and constants free
  EXPECT_EQ(before.kernels, 7);
  CpuFusionPolicy policy;
  InstructionFusion fusion(policy);
  ASSERT_TRUE(fusion.Run(*m).ok());
  MultiOutputFusion mof(policy);
  ASSERT_TRUE(mof.Run(*m).ok());
  KernelCounts after = CountKernels(*m);
  EXPECT_EQ(after.instructions, 7);
  EXPECT_EQ(after.kernels, 3);
  EXPECT_EQ(after.fusions, 3);
  EXPECT_EQ(after.loop, 1);
  EXPECT_EQ(after.input, 2);
  EXPECT_EQ(after.multi_output, 1);
  EXPECT_EQ(after.ToString(), "1 loop, 2 input (1 multi-output)");
  auto ba = BufferAssignment::Run(*m);
  ASSERT_TRUE(ba.ok());
  std::string s = CompileSummary(*m, ba->get());
  EXPECT_NE(s.find("kernels: 7 instructions -> 3 kernels (3 fusions: 1 loop, 2 input (1 multi-output))"),
            std::string::npos) << s;
  EXPECT_NE(s.find("main: 7 instructions -> 3 kernels"), std::string::npos) << s;
  EXPECT_NE(s.find("multi-output"), std::string::npos) << s;
  EXPECT_NE(s.find("memory: arguments 64.00 KiB, outputs 64.00 KiB"), std::string::npos) << s;
}

}  // namespace
}  // namespace kiln
