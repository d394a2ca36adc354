// The control-flow thunks' device-side parts that need no GPU: the set-branch kernel's rule
// against the host path's SelectConditionalBranch, and the set-condition kernels through NVRTC
// (skipped without libnvrtc). The thunks themselves run in gpu_executable_test.cc.
#include "kiln/cuda/compiler/control_flow_thunks.h"

#include <gtest/gtest.h>

#include <climits>
#include <cstring>

#include "kiln/cuda/nvrtc_compiler.h"
#include "kiln/passes/thunk_util.h"

namespace kiln::cuda {
namespace {

TEST(ControlFlowThunksTest, SetBranchKernelRuleIsSelectConditionalBranch) {
  // Note [Device-side conditionals]: a graph's conditional nodes and an eager run must pick the
  // same branch for every index.
  for (int64_t n : {1, 2, 3, 4, 7}) {
    for (int32_t i : {INT_MIN, -7, -1, 0, 1, 2, 3, 4, 6, 7, 8, 100, INT_MAX}) {
      uint8_t bytes[4];
      std::memcpy(bytes, &i, sizeof i);
      EXPECT_EQ(DeviceBranchRule(PrimitiveType::kS32, bytes, n), SelectConditionalBranch(PrimitiveType::kS32, bytes, n))
          << "index " << i << " of " << n << " branches";
    }
  }
  // XLA's definition, spelled out: pred true -> branch 0, false -> 1; s32 out of range -> N-1.
  for (uint8_t p : {0, 1, 2, 255}) {
    EXPECT_EQ(DeviceBranchRule(PrimitiveType::kPred, &p, 2), SelectConditionalBranch(PrimitiveType::kPred, &p, 2));
    EXPECT_EQ(DeviceBranchRule(PrimitiveType::kPred, &p, 2), p != 0 ? 0 : 1);
  }
  for (int32_t i : {-1, 7, 3}) {
    uint8_t bytes[4];
    std::memcpy(bytes, &i, sizeof i);
    EXPECT_EQ(DeviceBranchRule(PrimitiveType::kS32, bytes, 3), 2) << i;
  }
}

TEST(ControlFlowThunksTest, SetConditionKernelsCompileAsRelocatableCode) {
  StatusOr<std::shared_ptr<const NvrtcApi>> api = NvrtcApi::Default();
  if (!api.ok()) GTEST_SKIP() << "NVRTC is not installed here: " << api.status().message();
  NvrtcOptions options;
  options.use_cache = false;
  StatusOr<std::unique_ptr<NvrtcCompiler>> nvrtc = NvrtcCompiler::Create(options);
  ASSERT_TRUE(nvrtc.ok()) << nvrtc.status().ToString();
  StatusOr<std::string> cubin = CompileSetConditionKernel(**nvrtc, "sm_90");
  ASSERT_TRUE(cubin.ok()) << cubin.status().ToString();
  // Both entry points are in the (unlinked) cubin's symbol table.
  EXPECT_NE(cubin->find("kiln_set_while_condition"), std::string::npos);
  EXPECT_NE(cubin->find("kiln_set_branch"), std::string::npos);
}

}  // namespace
}  // namespace kiln::cuda
