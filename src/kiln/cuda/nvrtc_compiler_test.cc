// NVRTC compilation without a GPU (label cpu): kernels compile for several architectures, the
// cubins hold the expected entry points, and the on-disk cache hits and heals. Skipped, with a
// message, where libnvrtc is absent.
#include "kiln/cuda/nvrtc_compiler.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "kiln/cuda/cubin.h"
#include "kiln/runtime/cts/cts_kernels.h"
#include "kiln/runtime/test_macros.h"

namespace kiln::cuda {
namespace {

std::string TempRoot(const std::string& name) {
  std::string root = (std::filesystem::temp_directory_path() /
                      ("kiln_nvrtc_test_" + std::to_string(getpid()) + "_" + name))
                         .string();
  std::filesystem::remove_all(root);
  return root;
}

class NvrtcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StatusOr<std::shared_ptr<const NvrtcApi>> api = NvrtcApi::Default();
    if (!api.ok()) GTEST_SKIP() << "NVRTC is not installed here: " << api.status().message();
    root_ = TempRoot(::testing::UnitTest::GetInstance()->current_test_info()->name());
  }
  void TearDown() override {
    if (!root_.empty()) std::filesystem::remove_all(root_);
  }
  std::unique_ptr<NvrtcCompiler> MakeCompiler(bool use_cache = true) {
    NvrtcOptions options;
    options.cache_root = root_;
    options.use_cache = use_cache;
    StatusOr<std::unique_ptr<NvrtcCompiler>> compiler = NvrtcCompiler::Create(options);
    EXPECT_TRUE(compiler.ok()) << compiler.status().ToString();
    return compiler.ok() ? std::move(compiler).value() : nullptr;
  }

  std::string root_;
};

bool Contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

TEST_F(NvrtcTest, CompilesTheConformanceKernelsForSeveralArchitectures) {
  auto compiler = MakeCompiler(/*use_cache=*/false);
  ASSERT_NE(compiler, nullptr);
  EXPECT_FALSE(compiler->include_dirs().empty()) << "toolkit headers not found";
  for (auto [arch, number] : {std::pair{"sm_80", 80}, std::pair{"sm_90", 90},
                              std::pair{"sm_90a", 90}}) {
    NvrtcRequest request;
    request.source = runtime::cts::CudaCtsKernelSource();
    request.arch = arch;
    KILN_ASSERT_OK_AND_ASSIGN(NvrtcProgram program, compiler->Compile(request));
    EXPECT_FALSE(program.from_cache);
    EXPECT_TRUE(program.ptx.empty());
    KILN_ASSERT_OK_AND_ASSIGN(CubinInfo info, InspectCubin(program.cubin));
    EXPECT_EQ(info.sm_arch, number) << arch;
    std::vector<std::string> kernels = info.Kernels();
    for (const char* name : {"kiln_cts_fill_u32", "kiln_cts_axpy_f32", "kiln_cts_spin_write",
                             "kiln_cts_check_flag", "kiln_cts_reverse_blocks_u32"}) {
      EXPECT_TRUE(Contains(kernels, name)) << name << " missing from the " << arch << " cubin";
    }
    EXPECT_FALSE(Contains(kernels, "kiln_cts_now_ns")) << "device functions are not entries";
  }
}

TEST_F(NvrtcTest, CompilesTemplatesHeadersAndLibraries) {
  auto compiler = MakeCompiler(/*use_cache=*/false);
  ASSERT_NE(compiler, nullptr);
  NvrtcRequest request;
  request.arch = "sm_90";
  request.headers = {{"kiln_helpers.h", "__device__ inline float twice(float x) { return 2 * x; }\n"}};
  request.source = R"(
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda/std/cstdint>
#include <cuda/std/limits>
#include "kiln_helpers.h"
template <typename T, int kUnroll>
__global__ void scale(T* data, cuda::std::uint64_t n) {
  cuda::std::uint64_t i = (cuda::std::uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
  #pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    if (i * kUnroll + u < n) data[i * kUnroll + u] = T(twice(float(data[i * kUnroll + u])));
  }
}
extern "C" __global__ void half_max(__half* out) {
  out[0] = __float2half(cuda::std::numeric_limits<float>::max() > 0 ? 1.0f : 0.0f);
}
template __global__ void scale<float, 4>(float*, cuda::std::uint64_t);
template __global__ void scale<__nv_bfloat16, 2>(__nv_bfloat16*, cuda::std::uint64_t);
)";
  request.name_expressions = {"scale<float, 4>", "scale<__nv_bfloat16, 2>"};
  KILN_ASSERT_OK_AND_ASSIGN(NvrtcProgram program, compiler->Compile(request));
  KILN_ASSERT_OK_AND_ASSIGN(std::string lowered, program.LoweredName("scale<float, 4>"));
  EXPECT_EQ(lowered, "_Z5scaleIfLi4EEvPT_y");
  KILN_ASSERT_OK_AND_ASSIGN(CubinInfo info, InspectCubin(program.cubin));
  std::vector<std::string> kernels = info.Kernels();
  EXPECT_TRUE(Contains(kernels, lowered));
  KILN_ASSERT_OK_AND_ASSIGN(std::string bf16, program.LoweredName("scale<__nv_bfloat16, 2>"));
  EXPECT_TRUE(Contains(kernels, bf16)) << bf16;
  EXPECT_TRUE(Contains(kernels, "half_max"));
  EXPECT_EQ(program.LoweredName("scale<double, 1>").status().code(), StatusCode::kNotFound);
}

TEST_F(NvrtcTest, CompilesCubFromTheToolkit) {
  auto compiler = MakeCompiler(/*use_cache=*/false);
  ASSERT_NE(compiler, nullptr);
  NvrtcRequest request;
  request.arch = "sm_90";
  request.source = R"(
#include <cub/block/block_reduce.cuh>
extern "C" __global__ void block_sum(const float* in, float* out) {
  using Reduce = cub::BlockReduce<float, 128>;
  __shared__ typename Reduce::TempStorage storage;
  float sum = Reduce(storage).Sum(in[blockIdx.x * 128 + threadIdx.x]);
  if (threadIdx.x == 0) out[blockIdx.x] = sum;
}
)";
  KILN_ASSERT_OK_AND_ASSIGN(NvrtcProgram program, compiler->Compile(request));
  KILN_ASSERT_OK_AND_ASSIGN(CubinInfo info, InspectCubin(program.cubin));
  EXPECT_TRUE(Contains(info.Kernels(), "block_sum"));
}

TEST_F(NvrtcTest, ProducesPtxForVirtualArchitectures) {
  auto compiler = MakeCompiler(/*use_cache=*/false);
  ASSERT_NE(compiler, nullptr);
  NvrtcRequest request;
  request.source = runtime::cts::CudaCtsKernelSource();
  request.arch = "compute_80";
  KILN_ASSERT_OK_AND_ASSIGN(NvrtcProgram program, compiler->Compile(request));
  EXPECT_TRUE(program.cubin.empty());
  EXPECT_NE(program.ptx.find(".target sm_80"), std::string::npos);
  EXPECT_NE(program.ptx.find(".entry kiln_cts_fill_u32"), std::string::npos);
  EXPECT_EQ(program.ptx.find('\0'), std::string::npos);
}

TEST_F(NvrtcTest, PutsTheCompileLogInTheError) {
  auto compiler = MakeCompiler();
  ASSERT_NE(compiler, nullptr);
  NvrtcRequest request;
  request.program_name = "kiln_bad.cu";
  request.source = "extern \"C\" __global__ void k(float* x) {\n  x[0] = undefined_name;\n}\n";
  StatusOr<NvrtcProgram> program = compiler->Compile(request);
  ASSERT_FALSE(program.ok());
  EXPECT_EQ(program.status().code(), StatusCode::kInvalidArgument);
  const std::string& message = program.status().message();
  EXPECT_NE(message.find("compiling 'kiln_bad.cu' for sm_90 failed"), std::string::npos) << message;
  EXPECT_NE(message.find("kiln_bad.cu(2)"), std::string::npos) << message;
  EXPECT_NE(message.find("undefined_name"), std::string::npos) << message;
  // Failures are not cached.
  StatusOr<NvrtcProgram> again = compiler->Compile(request);
  EXPECT_FALSE(again.ok());
  EXPECT_EQ(compiler->cache()->stats().stores, 0u);
}

TEST_F(NvrtcTest, RejectsUnknownArchitectures) {
  auto compiler = MakeCompiler();
  ASSERT_NE(compiler, nullptr);
  NvrtcRequest request;
  request.source = "extern \"C\" __global__ void k() {}";
  for (const char* arch : {"sm_10", "gfx90a", "sm_", "sm_9x", "compute_"}) {
    request.arch = arch;
    StatusOr<NvrtcProgram> program = compiler->Compile(request);
    ASSERT_FALSE(program.ok()) << arch;
    EXPECT_EQ(program.status().code(), StatusCode::kInvalidArgument) << arch;
  }
  request.arch = "sm_10";
  EXPECT_NE(compiler->Compile(request).status().message().find("supported: "), std::string::npos);
  EXPECT_TRUE(std::find(compiler->supported_archs().begin(), compiler->supported_archs().end(),
                        90) != compiler->supported_archs().end());
}

TEST_F(NvrtcTest, CachesCompiledKernels) {
  auto compiler = MakeCompiler();
  ASSERT_NE(compiler, nullptr);
  ASSERT_NE(compiler->cache(), nullptr);
  NvrtcRequest request;
  request.source = runtime::cts::CudaCtsKernelSource();
  request.arch = "sm_90";
  KILN_ASSERT_OK_AND_ASSIGN(NvrtcProgram first, compiler->Compile(request));
  EXPECT_FALSE(first.from_cache);
  KILN_ASSERT_OK_AND_ASSIGN(NvrtcProgram second, compiler->Compile(request));
  EXPECT_TRUE(second.from_cache);
  EXPECT_EQ(second.cubin, first.cubin);
  EXPECT_EQ(compiler->cache()->stats().hits, 1u);
  std::string path = compiler->cache()->PathForKey(compiler->CacheKey(request));
  EXPECT_EQ(path.rfind(root_ + "/nvrtc/", 0), 0u) << path;
  EXPECT_TRUE(std::filesystem::exists(path));

  // A new compiler (another process, say) finds the entry on disk.
  auto other = MakeCompiler();
  KILN_ASSERT_OK_AND_ASSIGN(NvrtcProgram third, other->Compile(request));
  EXPECT_TRUE(third.from_cache);

  // Anything in the key changes the entry: architecture, options, source.
  NvrtcRequest variant = request;
  variant.arch = "sm_80";
  KILN_ASSERT_OK_AND_ASSIGN(NvrtcProgram for_80, compiler->Compile(variant));
  EXPECT_FALSE(for_80.from_cache);
  variant = request;
  variant.options = {"-DKILN_VARIANT=1"};
  KILN_ASSERT_OK_AND_ASSIGN(NvrtcProgram with_define, compiler->Compile(variant));
  EXPECT_FALSE(with_define.from_cache);
  variant = request;
  variant.source += "\n// a comment\n";
  KILN_ASSERT_OK_AND_ASSIGN(NvrtcProgram edited, compiler->Compile(variant));
  EXPECT_FALSE(edited.from_cache);
}

TEST_F(NvrtcTest, SurvivesACorruptedCacheEntry) {
  auto compiler = MakeCompiler();
  ASSERT_NE(compiler, nullptr);
  NvrtcRequest request;
  request.source = runtime::cts::CudaCtsKernelSource();
  request.arch = "sm_80";
  KILN_ASSERT_OK_AND_ASSIGN(NvrtcProgram original, compiler->Compile(request));
  std::string path = compiler->cache()->PathForKey(compiler->CacheKey(request));
  {
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(200);
    file.put('\x5a');
    file.put('\xa5');
  }
  KILN_ASSERT_OK_AND_ASSIGN(NvrtcProgram recompiled, compiler->Compile(request));
  EXPECT_FALSE(recompiled.from_cache) << "a corrupted entry must not be used";
  EXPECT_EQ(recompiled.cubin, original.cubin);
  EXPECT_EQ(compiler->cache()->stats().corrupted, 1u);
  KILN_ASSERT_OK_AND_ASSIGN(NvrtcProgram healed, compiler->Compile(request));
  EXPECT_TRUE(healed.from_cache) << "the entry is rewritten after recompiling";
  EXPECT_EQ(healed.cubin, original.cubin);

  // A truncated entry (e.g. a crash mid-write by a tool that is not atomic) is handled too.
  std::filesystem::resize_file(path, 100);
  KILN_ASSERT_OK_AND_ASSIGN(NvrtcProgram after_truncation, compiler->Compile(request));
  EXPECT_FALSE(after_truncation.from_cache);
  EXPECT_EQ(after_truncation.cubin, original.cubin);
}

TEST_F(NvrtcTest, WorksWithoutAUsableCache) {
  std::filesystem::create_directories(root_);
  { std::ofstream(root_ + "/nvrtc") << "a file where the cache directory should be"; }
  auto compiler = MakeCompiler();
  ASSERT_NE(compiler, nullptr);
  EXPECT_EQ(compiler->cache(), nullptr);
  NvrtcRequest request;
  request.source = "extern \"C\" __global__ void k() {}";
  KILN_ASSERT_OK_AND_ASSIGN(NvrtcProgram program, compiler->Compile(request));
  EXPECT_FALSE(program.cubin.empty());
  auto uncached = MakeCompiler(/*use_cache=*/false);
  EXPECT_EQ(uncached->cache(), nullptr);
}

TEST(CubinTest, RejectsWhatIsNotACubin) {
  EXPECT_FALSE(InspectCubin("").ok());
  EXPECT_FALSE(InspectCubin("not an elf file at all, just text that is long enough to parse "
                            "as a header if one tried hard enough")
                   .ok());
  std::string elf(64, '\0');
  elf[0] = 0x7f, elf[1] = 'E', elf[2] = 'L', elf[3] = 'F', elf[4] = 2, elf[5] = 1;
  elf[18] = 62;  // EM_X86_64
  StatusOr<CubinInfo> x86 = InspectCubin(elf);
  ASSERT_FALSE(x86.ok());
  EXPECT_NE(x86.status().message().find("not EM_CUDA"), std::string::npos);
  elf[18] = static_cast<char>(190);
  elf[58] = 64;  // section header entry size
  elf[60] = 3;   // three sections, but the section table lies past the end of the image
  elf[40] = 100;
  EXPECT_FALSE(InspectCubin(elf).ok());
}

TEST(ArchTest, ParsesArchitectureNames) {
  EXPECT_EQ(ParseArch("sm_90").value(), 90);
  EXPECT_EQ(ParseArch("sm_90a").value(), 90);
  EXPECT_EQ(ParseArch("sm_100f").value(), 100);
  EXPECT_EQ(ParseArch("compute_80").value(), 80);
  EXPECT_FALSE(ParseArch("sm90").ok());
  EXPECT_FALSE(ParseArch("sm_").ok());
  EXPECT_FALSE(ParseArch("sm_9b").ok());
}

// CudaLibraryPaths::include_dir (flag cuda_include_dir; the kiln tool's KILN_CUDA_INCLUDE_DIR)
// is searched first; the library itself reads no KILN_* variable.
TEST(ToolkitIncludeDirsTest, TheConfiguredDirectoryComesFirst) {
  const std::string dir = (std::filesystem::temp_directory_path() /
                           ("kiln_include_" + std::to_string(getpid())))
                              .string();
  std::filesystem::create_directories(dir + "/cccl");
  { std::ofstream(dir + "/cuda_fp16.h") << "// stand-in\n"; }
  CudaLibraryPaths saved = GetCudaLibraryPaths();
  CudaLibraryPaths paths = saved;
  paths.include_dir = dir;
  SetCudaLibraryPaths(paths);
  std::vector<std::string> found = FindToolkitIncludeDirs("");
  SetCudaLibraryPaths(saved);
  setenv("KILN_CUDA_INCLUDE_DIR", dir.c_str(), 1);
  std::vector<std::string> without = FindToolkitIncludeDirs("");
  unsetenv("KILN_CUDA_INCLUDE_DIR");
  std::filesystem::remove_all(dir);
  EXPECT_EQ(found, (std::vector<std::string>{dir, dir + "/cccl"}));
  EXPECT_TRUE(without.empty() || without[0] != dir);
}

}  // namespace
}  // namespace kiln::cuda
