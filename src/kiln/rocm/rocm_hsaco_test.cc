// HIP C++ to code objects with the real compilers (hipRTC in libamdhip64.so.5 for gfx90a,
// clang-19 for gfx90a and gfx942) and kiln's own metadata reader checked against
// `llvm-readelf --notes` (golden values: LDS of a known shared array, launch bounds, no
// spills). Each part is skipped, with the reason, where its compiler is not installed.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "kiln/codegen/device_types.h"
#include "kiln/rocm/code_object.h"
#include "kiln/rocm/hsaco_compiler.h"
#include "kiln/runtime/test_macros.h"

namespace kiln::rocm {
namespace {

namespace fs = std::filesystem;

// A kernel with a known footprint: 256 floats of LDS (1024 bytes), at most 256 threads, and a
// device-library call (expf) so that ocml is linked in; it uses the prelude's helpers.
HsacoSource GoldenKernel() {
  HsacoSource s;
  s.name = "golden";
  s.headers = {{codegen::CodegenPreludeName(), codegen::CodegenHipPrelude()}};
  s.source = R"(#include "kiln_codegen.cuh"
extern "C" __global__ void __launch_bounds__(256) scale_add(const float* __restrict__ in, __nv_bfloat16* __restrict__ out, float a, int n) {
  __shared__ float tile[256];
  const int i = blockIdx.x * 256 + threadIdx.x;
  tile[threadIdx.x] = i < n ? expf(in[i]) * a : 0.0f;
  __syncthreads();
  float v = tile[255 - threadIdx.x];
  for (int offset = 32; offset > 0; offset /= 2) v += kiln_shfl_xor(v, offset);
  if (i < n) out[i] = kiln_store_bf16(v);
}
)";
  return s;
}

struct ReadelfKernel {
  std::map<std::string, std::string> fields;
};
struct Readelf {
  std::string target;
  std::vector<ReadelfKernel> kernels;
};

// `llvm-readelf --notes` of `image`: the kernel-level ".key: value" lines of amdhsa.kernels.
std::optional<Readelf> RunReadelf(const std::string& image, const std::string& dir) {
#ifdef KILN_ROCM_READELF
  const std::string obj = dir + "/object.hsaco", txt = dir + "/notes.txt";
  std::ofstream(obj, std::ios::binary) << image;
  const std::string cmd = std::string(KILN_ROCM_READELF) + " --notes " + obj + " > " + txt + " 2>&1";
  if (std::system(cmd.c_str()) != 0) return std::nullopt;
  std::ifstream in(txt);
  Readelf r;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("amdhsa.target:", 0) == 0) {
      r.target = line.substr(line.find_first_not_of(' ', 14));
      continue;
    }
    std::string kv;
    if (line.rfind("  - .", 0) == 0) {
      r.kernels.emplace_back();
      kv = line.substr(4);
    } else if (line.rfind("    .", 0) == 0 && !r.kernels.empty()) {
      kv = line.substr(4);
    } else {
      continue;
    }
    const size_t colon = kv.find(':');
    std::string value = colon + 1 < kv.size() ? kv.substr(kv.find_first_not_of(' ', colon + 1)) : "";
    if (value.find_first_not_of(' ') == std::string::npos) value.clear();
    r.kernels.back().fields[kv.substr(0, colon)] = value;
  }
  return r;
#else
  (void)image;
  (void)dir;
  return std::nullopt;
#endif
}

class HsacoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kiln_hsaco_test_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    HsacoCompilerOptions o;
    o.use_cache = false;
    KILN_ASSERT_OK_AND_ASSIGN(compiler_, HsacoCompiler::Create(o));
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Skips unless `path` can compile for `arch` here.
  bool Available(HsacoPath path, const std::string& arch) {
    StatusOr<std::vector<std::string>> archs = compiler_->SupportedArchs(path);
    if (!archs.ok()) {
      why_ = archs.status().message();
      return false;
    }
    if (std::find(archs->begin(), archs->end(), arch) == archs->end()) {
      why_ = std::string(HsacoPathName(path)) + " cannot target " + arch + " here";
      return false;
    }
    return true;
  }

  // Compiles the golden kernel and checks kiln's reader against llvm-readelf.
  void CheckGolden(HsacoPath path, const std::string& arch, int code_object_version = 0) {
    SCOPED_TRACE(std::string(HsacoPathName(path)) + " " + arch);
    std::unique_ptr<HsacoCompiler> c = std::move(compiler_);
    if (code_object_version != 0) {
      HsacoCompilerOptions o = c->options();
      o.code_object_version = code_object_version;
      KILN_ASSERT_OK_AND_ASSIGN(c, HsacoCompiler::Create(o));
    }
    KILN_ASSERT_OK_AND_ASSIGN(CompiledHsaco co, c->Compile(GoldenKernel(), arch, path));
    compiler_ = std::move(c);
    EXPECT_TRUE(co.log.empty()) << co.log;
    KILN_ASSERT_OK_AND_ASSIGN(CodeObjectInfo info, InspectCodeObject(co.image));
    EXPECT_EQ(info.gfx_arch, arch);
    EXPECT_EQ(info.target.rfind("amdgcn-amd-amdhsa--" + arch, 0), 0u) << info.target;
    if (code_object_version == 4) {
      EXPECT_EQ(info.abi_version, 2);
    }
    if (code_object_version == 5) {
      EXPECT_EQ(info.abi_version, 3);
    }
    const KernelMetadata* k = info.Find("scale_add");
    ASSERT_NE(k, nullptr) << info.ToString();
    // Golden values.
    EXPECT_EQ(k->symbol, "scale_add.kd");
    EXPECT_EQ(k->lds_bytes, 1024);
    EXPECT_EQ(k->max_flat_workgroup_size, 256);
    EXPECT_EQ(k->wavefront_size, 64);
    EXPECT_EQ(k->sgpr_spill_count, 0);
    EXPECT_EQ(k->vgpr_spill_count, 0);
    EXPECT_EQ(k->scratch_bytes, 0);
    EXPECT_GT(k->vgpr_count, 0);
    EXPECT_GT(k->sgpr_count, 0);
    // Every field as llvm-readelf decodes the same note.
    std::optional<Readelf> r = RunReadelf(co.image, dir_.string());
    if (!r) {
      std::cout << "llvm-readelf not available: the golden values above were checked, not readelf's\n";
      return;
    }
    EXPECT_EQ(r->target, info.target);
    ASSERT_EQ(r->kernels.size(), info.kernels.size());
    std::map<std::string, std::string>& f = r->kernels[0].fields;
    EXPECT_EQ(f[".name"], k->name);
    EXPECT_EQ(f[".symbol"], k->symbol);
    EXPECT_EQ(f[".sgpr_count"], std::to_string(k->sgpr_count));
    EXPECT_EQ(f[".vgpr_count"], std::to_string(k->vgpr_count));
    EXPECT_EQ(f[".agpr_count"], std::to_string(k->agpr_count));
    EXPECT_EQ(f[".group_segment_fixed_size"], std::to_string(k->lds_bytes));
    EXPECT_EQ(f[".private_segment_fixed_size"], std::to_string(k->scratch_bytes));
    EXPECT_EQ(f[".kernarg_segment_size"], std::to_string(k->kernarg_bytes));
    EXPECT_EQ(f[".max_flat_workgroup_size"], std::to_string(k->max_flat_workgroup_size));
    EXPECT_EQ(f[".wavefront_size"], std::to_string(k->wavefront_size));
    EXPECT_EQ(f[".sgpr_spill_count"], std::to_string(k->sgpr_spill_count));
    EXPECT_EQ(f[".vgpr_spill_count"], std::to_string(k->vgpr_spill_count));
    if (f.count(".uses_dynamic_stack") != 0) {  // code object v5 only
      EXPECT_EQ(f[".uses_dynamic_stack"], k->uses_dynamic_stack ? "true" : "false");
    }
  }

  fs::path dir_;
  std::unique_ptr<HsacoCompiler> compiler_;
  std::string why_;
};

TEST_F(HsacoTest, HiprtcCompilesGfx90a) {
  if (!Available(HsacoPath::kHiprtc, "gfx90a")) GTEST_SKIP() << why_;
  CheckGolden(HsacoPath::kHiprtc, "gfx90a");
}

TEST_F(HsacoTest, ClangCompilesGfx90a) {
  if (!Available(HsacoPath::kClang, "gfx90a")) GTEST_SKIP() << why_;
  CheckGolden(HsacoPath::kClang, "gfx90a");
}

TEST_F(HsacoTest, ClangCompilesGfx942CodeObjectV4AndV5) {
  if (!Available(HsacoPath::kClang, "gfx942")) GTEST_SKIP() << why_;
  CheckGolden(HsacoPath::kClang, "gfx942", 4);
  CheckGolden(HsacoPath::kClang, "gfx942", 5);
}

TEST_F(HsacoTest, AutoPrefersHiprtcAndFallsBackToClang) {
  if (!Available(HsacoPath::kHiprtc, "gfx90a")) GTEST_SKIP() << why_;
  KILN_ASSERT_OK_AND_ASSIGN(HsacoPath p90a, compiler_->ChoosePath("gfx90a"));
  EXPECT_EQ(p90a, HsacoPath::kHiprtc);
  if (!Available(HsacoPath::kClang, "gfx942")) GTEST_SKIP() << why_;
  KILN_ASSERT_OK_AND_ASSIGN(HsacoPath p942, compiler_->ChoosePath("gfx942"));
  EXPECT_EQ(p942, HsacoPath::kClang);
}

// Note [hipRTC and unknown targets]: these would abort inside comgr if they reached hipRTC.
TEST_F(HsacoTest, UnsupportedTargetsAreInvalidArgumentBeforeAnyCall) {
  if (!Available(HsacoPath::kHiprtc, "gfx90a")) GTEST_SKIP() << why_;
  for (const char* arch : {"gfx942", "gfx1100", "gfx9999"}) {
    StatusOr<CompiledHsaco> co = compiler_->Compile(GoldenKernel(), arch, HsacoPath::kHiprtc);
    ASSERT_FALSE(co.ok()) << arch;
    EXPECT_EQ(co.status().code(), StatusCode::kInvalidArgument) << co.status().ToString();
    EXPECT_NE(co.status().message().find("not supported by hipRTC"), std::string::npos) << co.status().ToString();
    EXPECT_NE(co.status().message().find("gfx90a"), std::string::npos) << co.status().ToString();  // the list
  }
  StatusOr<CompiledHsaco> none = compiler_->Compile(GoldenKernel(), "gfx9999");
  EXPECT_EQ(none.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(none.status().message().find("not supported by any compiler"), std::string::npos) << none.status().ToString();
}

TEST_F(HsacoTest, CompileErrorsCarryTheLog) {
  HsacoSource bad;
  bad.name = "bad";
  bad.source = "extern \"C\" __global__ void bad(float* p) { p[0] = undeclared_thing; }\n";
  for (HsacoPath path : {HsacoPath::kHiprtc, HsacoPath::kClang}) {
    if (!Available(path, "gfx90a")) {
      std::cout << "skipping " << HsacoPathName(path) << ": " << why_ << "\n";
      continue;
    }
    StatusOr<CompiledHsaco> co = compiler_->Compile(bad, "gfx90a", path);
    ASSERT_FALSE(co.ok());
    EXPECT_EQ(co.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(co.status().message().find("undeclared_thing"), std::string::npos) << co.status().ToString();
  }
}

TEST_F(HsacoTest, DiskCacheServesTheSecondCompile) {
  HsacoPath path = HsacoPath::kHiprtc;
  if (!Available(path, "gfx90a")) {
    path = HsacoPath::kClang;
    if (!Available(path, "gfx90a")) GTEST_SKIP() << why_;
  }
  HsacoCompilerOptions o;
  o.cache_root = (dir_ / "cache").string();
  KILN_ASSERT_OK_AND_ASSIGN(std::unique_ptr<HsacoCompiler> c, HsacoCompiler::Create(o));
  KILN_ASSERT_OK_AND_ASSIGN(CompiledHsaco first, c->Compile(GoldenKernel(), "gfx90a", path));
  KILN_ASSERT_OK_AND_ASSIGN(CompiledHsaco second, c->Compile(GoldenKernel(), "gfx90a", path));
  EXPECT_FALSE(first.from_cache);
  EXPECT_TRUE(second.from_cache);
  EXPECT_EQ(first.image, second.image);
  EXPECT_TRUE(fs::exists(dir_ / "cache" / "hsaco"));
}

TEST(CodeObjectTest, RejectsWhatIsNotAnAmdgpuObject) {
  EXPECT_EQ(InspectCodeObject("not an elf").status().code(), StatusCode::kInvalidArgument);
  std::string elf(64, '\0');
  elf[0] = 0x7f, elf[1] = 'E', elf[2] = 'L', elf[3] = 'F', elf[4] = 2, elf[5] = 1;
  elf[18] = static_cast<char>(190);  // EM_CUDA
  StatusOr<CodeObjectInfo> cubin = InspectCodeObject(elf);
  EXPECT_EQ(cubin.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(cubin.status().message().find("not an AMDGPU code object"), std::string::npos);
  EXPECT_EQ(GfxArchForMach(0x3f), "gfx90a");
  EXPECT_EQ(GfxArchForMach(0x4c), "gfx942");
}

}  // namespace
}  // namespace kiln::rocm
