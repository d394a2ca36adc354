// Occupancy from code-object metadata (Note [CDNA occupancy] in occupancy.h): the arithmetic on
// hand-made metadata, then on kernels compiled by the real compiler (clang-19 for gfx942, skipped
// with the reason where it is missing), whose LDS and launch bounds are known.
#include "kiln/rocm/occupancy.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "kiln/codegen/device_types.h"
#include "kiln/rocm/hsaco_compiler.h"
#include "kiln/runtime/test_macros.h"

namespace kiln::rocm {
namespace {

KernelMetadata Meta(int64_t vgpr, int64_t agpr, int64_t sgpr, int64_t lds, int64_t bound = 1024) {
  KernelMetadata m;
  m.name = "k";
  m.vgpr_count = vgpr;
  m.agpr_count = agpr;
  m.sgpr_count = sgpr;
  m.lds_bytes = lds;
  m.max_flat_workgroup_size = bound;
  m.wavefront_size = 64;
  return m;
}

TEST(OccupancyTest, LightKernelsReachTheHardwareCap) {
  KILN_ASSERT_OK_AND_ASSIGN(KernelOccupancy o, ComputeOccupancy(Meta(16, 0, 24, 0), 256, CuLimits{}));
  EXPECT_EQ(o.waves_per_workgroup, 4);
  EXPECT_EQ(o.waves_per_simd, 8);
  EXPECT_EQ(o.workgroups_per_cu, 8);
  EXPECT_EQ(o.limiter, "waves");
  EXPECT_DOUBLE_EQ(o.fraction, 1.0);
}

TEST(OccupancyTest, VectorRegistersLimit) {
  // 128 VGPRs: 512 / 128 = 4 waves per SIMD; a 256-lane workgroup puts one wave on each SIMD.
  KILN_ASSERT_OK_AND_ASSIGN(KernelOccupancy o, ComputeOccupancy(Meta(128, 0, 32, 0), 256, CuLimits{}));
  EXPECT_EQ(o.waves_per_simd, 4);
  EXPECT_EQ(o.workgroups_per_cu, 4);
  EXPECT_EQ(o.limiter, "vgpr");
  // AGPRs share the file: align(100, 4) + 60 = 160 → 3 waves.
  KILN_ASSERT_OK_AND_ASSIGN(o, ComputeOccupancy(Meta(100, 60, 32, 0), 256, CuLimits{}));
  EXPECT_EQ(o.waves_per_simd, 3);
  EXPECT_EQ(o.limiter, "vgpr");
  // The granule: 65 VGPRs take 72 → 7 waves.
  KILN_ASSERT_OK_AND_ASSIGN(o, ComputeOccupancy(Meta(65, 0, 32, 0), 64, CuLimits{}));
  EXPECT_EQ(o.waves_per_simd, 7);
}

TEST(OccupancyTest, LdsLimitsWorkgroupsPerCu) {
  // 40 KiB per workgroup: one workgroup of 4 waves per CU, one wave per SIMD.
  KILN_ASSERT_OK_AND_ASSIGN(KernelOccupancy o, ComputeOccupancy(Meta(32, 0, 32, 40 * 1024), 256, CuLimits{}));
  EXPECT_EQ(o.workgroups_per_cu, 1);
  EXPECT_EQ(o.waves_per_simd, 1);
  EXPECT_EQ(o.limiter, "lds");
  // 16 KiB: four workgroups.
  KILN_ASSERT_OK_AND_ASSIGN(o, ComputeOccupancy(Meta(32, 0, 32, 16 * 1024), 256, CuLimits{}));
  EXPECT_EQ(o.workgroups_per_cu, 4);
  EXPECT_EQ(o.waves_per_simd, 4);
}

TEST(OccupancyTest, LargeWorkgroupsNeedSeveralWavesPerSimd) {
  // 1024 lanes = 16 waves, 4 on each SIMD: two such workgroups fill 8 waves; 128 VGPRs allow one.
  KILN_ASSERT_OK_AND_ASSIGN(KernelOccupancy o, ComputeOccupancy(Meta(32, 0, 32, 0), 1024, CuLimits{}));
  EXPECT_EQ(o.workgroups_per_cu, 2);
  EXPECT_EQ(o.waves_per_simd, 8);
  KILN_ASSERT_OK_AND_ASSIGN(o, ComputeOccupancy(Meta(128, 0, 32, 0), 1024, CuLimits{}));
  EXPECT_EQ(o.workgroups_per_cu, 1);
  EXPECT_EQ(o.waves_per_simd, 4);
  EXPECT_EQ(o.limiter, "vgpr");
}

TEST(OccupancyTest, ImpossibleLaunchesAreErrors) {
  // Over the launch bound.
  StatusOr<KernelOccupancy> o = ComputeOccupancy(Meta(16, 0, 16, 0, 256), 512, CuLimits{});
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(o.status().message().find("allows 1 to 256"), std::string::npos) << o.status().message();
  EXPECT_FALSE(ComputeOccupancy(Meta(16, 0, 16, 0), 0, CuLimits{}).ok());
  // More LDS than a CU has.
  o = ComputeOccupancy(Meta(16, 0, 16, 96 * 1024), 64, CuLimits{});
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find("lds"), std::string::npos) << o.status().message();
  // 1024 lanes at 256 VGPRs: 4 waves per SIMD need 1024 registers per lane.
  EXPECT_FALSE(ComputeOccupancy(Meta(256, 0, 16, 0), 1024, CuLimits{}).ok());
}

TEST(OccupancyTest, LimitsAreKnownForCdnaOnly) {
  EXPECT_TRUE(CuLimitsFor("gfx90a").ok());
  EXPECT_TRUE(CuLimitsFor("gfx942").ok());
  StatusOr<CuLimits> rdna = CuLimitsFor("gfx1100");
  ASSERT_FALSE(rdna.ok());
  EXPECT_EQ(rdna.status().code(), StatusCode::kNotFound);
}

// Real code objects: a kernel bounded to 128 lanes with 48 KiB of LDS.
TEST(OccupancyTest, CompiledKernelsMetadataDrivesTheAnswer) {
  HsacoCompilerOptions opts;
  opts.use_cache = false;
  KILN_ASSERT_OK_AND_ASSIGN(std::unique_ptr<HsacoCompiler> compiler, HsacoCompiler::Create(opts));
  StatusOr<std::vector<std::string>> archs = compiler->SupportedArchs(HsacoPath::kClang);
  if (!archs.ok() || std::find(archs->begin(), archs->end(), "gfx942") == archs->end())
    GTEST_SKIP() << "clang cannot target gfx942 here: "
                 << (archs.ok() ? std::string("not in its list") : archs.status().message());
  HsacoSource s;
  s.name = "occupancy";
  s.headers = {{codegen::CodegenPreludeName(), codegen::CodegenHipPrelude()}};
  s.source = R"(#include "kiln_codegen.cuh"
extern "C" __global__ void __launch_bounds__(128) big_lds(const float* in, float* out, int n) {
  __shared__ float tile[12288];  // 48 KiB
  for (int j = threadIdx.x; j < 12288; j += 128) tile[j] = in[(blockIdx.x * 12288 + j) % n];
  __syncthreads();
  const int i = blockIdx.x * 128 + threadIdx.x;
  if (i < n) out[i] = tile[(threadIdx.x * 97) % 12288] + tile[12287 - threadIdx.x];
}
)";
  KILN_ASSERT_OK_AND_ASSIGN(CompiledHsaco co, compiler->Compile(s, "gfx942", HsacoPath::kClang));
  KILN_ASSERT_OK_AND_ASSIGN(CodeObjectInfo info, InspectCodeObject(co.image));
  const KernelMetadata* k = info.Find("big_lds");
  ASSERT_NE(k, nullptr) << info.ToString();
  ASSERT_EQ(k->lds_bytes, 48 * 1024);
  ASSERT_EQ(k->max_flat_workgroup_size, 128);
  KILN_ASSERT_OK_AND_ASSIGN(CuLimits limits, CuLimitsFor(info.gfx_arch));
  KILN_ASSERT_OK_AND_ASSIGN(KernelOccupancy o, ComputeOccupancy(*k, 128, limits));
  EXPECT_EQ(o.workgroups_per_cu, 1);
  EXPECT_EQ(o.waves_per_simd, 1);
  EXPECT_EQ(o.limiter, "lds");
  EXPECT_FALSE(ComputeOccupancy(*k, 256, limits).ok());  // over its launch bound
}

}  // namespace
}  // namespace kiln::rocm
