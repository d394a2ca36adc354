// Kernel emitters without a compiler (label cpu): every handwritten fusion picks the expected
// emitter and produces a well-formed KernelSpec for sm_80 and sm_90; the generated code uses the
// techniques the emitters promise (vector accesses, warp shuffles, shared-memory tiles); configs,
// presets, dumps and the parallel compile driver behave as documented; and every fusion the
// fusion passes form over tests/data gets a kernel. Compiling the sources with NVRTC is
// cuda/compiler/codegen_nvrtc_test.cc's job (it needs the CUDA room).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "kiln/codegen/codegen_test_util.h"
#include "kiln/codegen/compile_kernels.h"
#include "kiln/codegen/device_spec.h"
#include "kiln/codegen/emitters.h"
#include "kiln/codegen/kernel_spec.h"
#include "kiln/hlo/parser.h"
#include "kiln/runtime/test_macros.h"

namespace kiln::codegen {
namespace {

namespace fs = std::filesystem;
using testing::Catalogue;
using testing::CatalogueCase;

DeviceSpec Preset(const char* name) {
  StatusOr<DeviceSpec> d = DeviceSpec::FromPreset(name);
  EXPECT_TRUE(d.ok()) << d.status().ToString();
  return d.ok() ? *d : DeviceSpec{};
}

const HloInstruction& Root(const HloModule& m) { return *m.entry_computation()->root_instruction(); }

int64_t CountLeaves(const Shape& s) {
  if (!s.IsTuple()) return 1;
  int64_t n = 0;
  for (const Shape& e : s.tuple_shapes()) n += CountLeaves(e);
  return n;
}

// The structural contract of kernel_spec.h.
void CheckSpec(const HloInstruction& instr, const KernelSpec& k, const DeviceSpec& device) {
  SCOPED_TRACE(instr.name());
  EXPECT_EQ(k.name, instr.name());
  ASSERT_FALSE(k.launches.empty());
  ASSERT_FALSE(k.source.empty());
  for (const std::string& e : k.Entries())
    EXPECT_NE(k.source.find("extern \"C\" __global__"), std::string::npos) << e;
  for (const KernelLaunch& l : k.launches) {
    EXPECT_NE(k.source.find(" " + l.entry + "("), std::string::npos) << l.entry << "\n" << k.source;
    EXPECT_GE(l.dims.grid.x, 1u);
    EXPECT_GE(l.dims.block.x, 1u);
    EXPECT_LE(uint64_t{l.dims.block.x} * l.dims.block.y * l.dims.block.z,
              uint64_t(device.max_threads_per_block));
    EXPECT_LE(int64_t(l.dims.shared_memory_bytes), device.shared_memory_per_block_optin);
  }
  // Parameters: operands, outputs, scratch, in this order.
  const int64_t operands = instr.operand_count();
  const int64_t outputs = CountLeaves(instr.shape());
  int64_t i = 0;
  for (; i < operands; ++i) {
    ASSERT_LT(i, int64_t(k.params.size()));
    EXPECT_EQ(k.params[i].kind, KernelParam::Kind::kOperand);
    EXPECT_EQ(k.params[i].index, i);
    EXPECT_EQ(k.params[i].shape.dimensions(), instr.operand(i)->shape().dimensions());
    EXPECT_FALSE(k.params[i].written);
  }
  for (int64_t o = 0; o < outputs; ++o, ++i) {
    ASSERT_LT(i, int64_t(k.params.size()));
    EXPECT_EQ(k.params[i].kind, KernelParam::Kind::kOutput);
    EXPECT_EQ(k.params[i].index, o);
    EXPECT_TRUE(k.params[i].written);
  }
  if (k.scratch_bytes > 0) {
    ASSERT_LT(i, int64_t(k.params.size()));
    EXPECT_EQ(k.params[i].kind, KernelParam::Kind::kScratch);
    ++i;
  }
  EXPECT_EQ(i, int64_t(k.params.size())) << k.Summary();
  EXPECT_GT(k.min_bytes, 0);
  EXPECT_FALSE(k.hlo.empty());
  // The prelude is among the headers and included.
  bool has_prelude = false;
  for (const auto& [name, text] : k.headers) has_prelude |= name == "kiln_codegen.cuh" && !text.empty();
  EXPECT_TRUE(has_prelude);
  EXPECT_NE(k.source.find("#include \"kiln_codegen.cuh\""), std::string::npos);
}

TEST(CodegenTest, EveryCatalogueCaseEmitsForSm80AndSm90) {
  std::vector<KernelSpec> dump;  // KILN_CODEGEN_DUMP_DIR=dir writes the sm_90 kernels there
  for (const CatalogueCase& c : Catalogue()) {
    SCOPED_TRACE(c.name);
    KILN_ASSERT_OK_AND_ASSIGN(auto m, testing::ParseModule(c.hlo));
    const HloInstruction& root = Root(*m);
    KILN_ASSERT_OK_AND_ASSIGN(EmitterKind kind, ChooseEmitter(root));
    if (!c.emitter.empty()) {
      EXPECT_EQ(EmitterKindName(kind), c.emitter);
    }
    for (const char* arch : {"sm_80", "sm_90"}) {
      DeviceSpec device = Preset(arch);
      StatusOr<KernelSpec> k = EmitKernel(root, device);
      ASSERT_TRUE(k.ok()) << arch << ": " << k.status().ToString();
      CheckSpec(root, *k, device);
      if (!c.emitter.empty()) {
        EXPECT_EQ(k->emitter, c.emitter);
      }
      // Deterministic: the same input gives the same source (the on-disk cache relies on it).
      KILN_ASSERT_OK_AND_ASSIGN(KernelSpec again, EmitKernel(root, device));
      EXPECT_EQ(again.source, k->source);
      if (std::string(arch) == "sm_90") {
        dump.push_back(*k);
        dump.back().name = c.name;
      }
    }
  }
  if (const char* dir = std::getenv("KILN_CODEGEN_DUMP_DIR")) KILN_EXPECT_OK(DumpKernels(dump, dir));
}

// KILN_CODEGEN_DUMP_DIR=dir KILN_CODEGEN_DUMP_CONFIG=b128.v2.u1 writes each catalogue kernel
// emitted with that config (where its emitter accepts it): a failing autotuning candidate of
// the GPU test, readable without a GPU.
TEST(CodegenTest, DumpWithConfig) {
  const char* dir = std::getenv("KILN_CODEGEN_DUMP_DIR");
  const char* text = std::getenv("KILN_CODEGEN_DUMP_CONFIG");
  if (dir == nullptr || text == nullptr) GTEST_SKIP() << "KILN_CODEGEN_DUMP_DIR/KILN_CODEGEN_DUMP_CONFIG unset";
  KILN_ASSERT_OK_AND_ASSIGN(KernelConfig config, KernelConfig::Parse(text));
  std::vector<KernelSpec> dump;
  for (const CatalogueCase& c : Catalogue()) {
    KILN_ASSERT_OK_AND_ASSIGN(auto m, testing::ParseModule(c.hlo));
    StatusOr<KernelSpec> k = EmitKernel(Root(*m), Preset("sm_90"), config);
    if (!k.ok()) continue;
    dump.push_back(*k);
    dump.back().name = c.name + "." + k->config.ToString();
  }
  KILN_EXPECT_OK(DumpKernels(dump, dir));
}

// kAuto serializes small scatters whose combiner depends on the order (an overwrite), so the
// result is the evaluator's; large ones and order-independent combiners use atomics.
TEST(CodegenTest, AutoScatterModeFollowsTheCombiner) {
  auto module = [](const std::string& combiner_root, int64_t windows) {
    const std::string n = std::to_string(windows);
    return R"(HloModule m
comb {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] )" + combiner_root + R"(
}
ENTRY e {
  op = f32[6,33] parameter(0)
  idx = s32[)" + n + R"(,1] parameter(1)
  upd = f32[)" + n + R"(,33] parameter(2)
  ROOT s = f32[6,33] scatter(op, idx, upd), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=comb
})";
  };
  const DeviceSpec device = Preset("sm_90");
  struct Want {
    std::string root;
    int64_t windows;
    std::string mode;
  };
  for (const Want& w : {Want{"add(a, b)", 40, "atomic"}, Want{"maximum(a, b)", 40, "atomic"},
                        Want{"add(b, b)", 40, "serialized"}, Want{"subtract(a, b)", 1024, "serialized"},
                        Want{"subtract(a, b)", 1025, "atomic"}}) {
    SCOPED_TRACE(w.root + " x" + std::to_string(w.windows));
    KILN_ASSERT_OK_AND_ASSIGN(auto m, testing::ParseModule(module(w.root, w.windows)));
    KILN_ASSERT_OK_AND_ASSIGN(KernelSpec k, EmitKernel(Root(*m), device));
    EXPECT_NE(k.source.find("scatter mode: " + w.mode), std::string::npos) << k.source.substr(0, 400);
  }
}

StatusOr<KernelSpec> EmitCase(const std::string& name, const char* arch = "sm_90") {
  for (const CatalogueCase& c : Catalogue()) {
    if (c.name != name) continue;
    KILN_ASSIGN_OR_RETURN(auto m, testing::ParseModule(c.hlo));
    KILN_ASSIGN_OR_RETURN(DeviceSpec d, DeviceSpec::FromPreset(arch));
    // The spec holds no pointers into the module.
    return EmitKernel(Root(*m), d);
  }
  return NotFound("no case ", name);
}

TEST(CodegenTest, WideLoopUsesSixteenByteVectors) {
  KILN_ASSERT_OK_AND_ASSIGN(KernelSpec k, EmitCase("wide_loop"));
  EXPECT_EQ(k.config.vector_width, 8) << k.config.ToString();  // 8 f16 = 16 bytes
  EXPECT_EQ(k.buffer_alignment, 16);
  EXPECT_NE(k.source.find("kiln_vec"), std::string::npos) << k.source;
  // 256*1024 elements / 8 per vector / 256 threads.
  ASSERT_EQ(k.launches.size(), 1u);
  EXPECT_EQ(uint64_t{k.launches[0].dims.grid.x} * k.launches[0].dims.block.x * k.config.unroll * 8,
            256u * 1024u);
  EXPECT_EQ(k.min_bytes, 3 * 256 * 1024 * 2);
}

TEST(CodegenTest, OddLoopFallsBackToNarrowerVectors) {
  KILN_ASSERT_OK_AND_ASSIGN(KernelSpec k, EmitCase("elementwise_f32"));
  EXPECT_EQ(k.config.vector_width, 1) << "[37,5]: the minor dimension 5 takes no vectors";
}

TEST(CodegenTest, ReductionsUseWarpShuffles) {
  for (const char* name : {"row_sum", "softmax", "argmax_variadic", "full_reduction_f16"}) {
    KILN_ASSERT_OK_AND_ASSIGN(KernelSpec k, EmitCase(name));
    EXPECT_NE(k.source.find("kiln_shfl_xor("), std::string::npos) << name << "\n" << k.source;
    bool prelude_shuffles = false;
    for (const auto& [file, text] : k.headers)
      prelude_shuffles |= text.find("__shfl_xor_sync") != std::string::npos;
    EXPECT_TRUE(prelude_shuffles);
  }
}

TEST(CodegenTest, TransposesUseSharedMemoryTiles) {
  for (const char* name : {"transpose_2d", "transpose_3d_f16_odd", "transpose_copy_layout"}) {
    KILN_ASSERT_OK_AND_ASSIGN(KernelSpec k, EmitCase(name));
    EXPECT_NE(k.source.find("__shared__"), std::string::npos) << name << "\n" << k.source;
    EXPECT_NE(k.source.find("__syncthreads"), std::string::npos) << name;
  }
}

TEST(CodegenTest, DynamicUpdateSliceIsInPlace) {
  KILN_ASSERT_OK_AND_ASSIGN(KernelSpec k, EmitCase("dus_in_place"));
  ASSERT_EQ(k.in_place.size(), 1u);
  EXPECT_EQ(k.in_place[0], (std::pair<int64_t, int64_t>{0, 0}));
  EXPECT_FALSE(k.params[0].read) << "the updated operand is not read";
  // Only the 4x256 window is written: 1024 elements.
  ASSERT_EQ(k.launches.size(), 1u);
  EXPECT_LE(uint64_t{k.launches[0].dims.grid.x} * k.launches[0].dims.block.x, 1024u);
}

TEST(CodegenTest, InPlaceUpdateTakesOutputsOfItsWindow) {
  // Note [In-place update spaces]: one kernel over the 8x64 window writes the carry, its
  // stacked copy (in place, output 1 over operand 2) and the negated carry.
  KILN_ASSERT_OK_AND_ASSIGN(KernelSpec k, EmitCase("dus_in_place_multi_output"));
  ASSERT_EQ(k.in_place.size(), 1u);
  EXPECT_EQ(k.in_place[0], (std::pair<int64_t, int64_t>{1, 2}));
  ASSERT_EQ(k.launches.size(), 1u);
  EXPECT_LE(uint64_t{k.launches[0].dims.grid.x} * k.launches[0].dims.block.x, 512u);
  // The carry is computed once and stored twice.
  size_t first = k.source.find("tanhf(");
  ASSERT_NE(first, std::string::npos) << k.source;
  EXPECT_EQ(k.source.find("tanhf(", first + 1), std::string::npos) << k.source;
}

TEST(CodegenTest, LaunchSizesFollowTheDevice) {
  // A full reduction splits over blocks sized by the SM count of the device.
  KILN_ASSERT_OK_AND_ASSIGN(auto m, testing::ParseModule(R"(HloModule m
add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }
fused {
  p0 = f32[4096,4096] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[] reduce(p0, z), dimensions={0,1}, to_apply=add
}
ENTRY e {
  a = f32[4096,4096] parameter(0)
  ROOT f = f32[] fusion(a), kind=kInput, calls=fused
})"));
  KILN_ASSERT_OK_AND_ASSIGN(KernelSpec a, EmitKernel(Root(*m), Preset("sm_80")));
  KILN_ASSERT_OK_AND_ASSIGN(KernelSpec h, EmitKernel(Root(*m), Preset("sm_90")));
  EXPECT_EQ(a.config.rows_per_block, 1);
  EXPECT_EQ(a.config.split, 2 * 108) << a.Summary();
  EXPECT_EQ(h.config.split, 2 * 132) << h.Summary();
  EXPECT_EQ(a.launches.size(), 2u) << "two-stage reduction";
  EXPECT_GT(a.scratch_bytes, 0);
  EXPECT_NE(a.launches[0].dims.grid.ToString(), h.launches[0].dims.grid.ToString())
      << "108 SMs (A100) and 132 SMs (H100) give different grids\n" << a.Summary() << h.Summary();
}

TEST(CodegenTest, ConfigsRoundTripAndCandidatesEmit) {
  KernelConfig c{256, 4, 2, 1, 8, 32};
  EXPECT_EQ(c.ToString(), "b256.v4.u2.r1.s8.t32");
  KILN_ASSERT_OK_AND_ASSIGN(KernelConfig p, KernelConfig::Parse(c.ToString()));
  EXPECT_EQ(p, c);
  EXPECT_EQ(KernelConfig{}.ToString(), "default");
  KILN_ASSERT_OK_AND_ASSIGN(KernelConfig d, KernelConfig::Parse("default"));
  EXPECT_EQ(d, KernelConfig{});
  KILN_ASSERT_OK_AND_ASSIGN(KernelConfig partial, KernelConfig::Parse("b128.s2"));
  EXPECT_EQ(partial.block_size, 128);
  EXPECT_EQ(partial.split, 2);
  for (const char* bad : {"", "x1", "b", "b-1", "v4.b256", "b0", "b12a"})
    EXPECT_FALSE(KernelConfig::Parse(bad).ok()) << bad;

  DeviceSpec device = Preset("h200");
  for (const CatalogueCase& cc : Catalogue()) {
    if (cc.name.rfind("elementwise_", 0) == 0 && cc.name != "elementwise_f32") continue;
    SCOPED_TRACE(cc.name);
    KILN_ASSERT_OK_AND_ASSIGN(auto m, testing::ParseModule(cc.hlo));
    KILN_ASSERT_OK_AND_ASSIGN(std::vector<KernelConfig> cands, CandidateConfigs(Root(*m), device));
    KILN_ASSERT_OK_AND_ASSIGN(KernelConfig def, DefaultConfig(Root(*m), device));
    ASSERT_FALSE(cands.empty());
    EXPECT_EQ(cands[0], def);
    std::set<std::string> seen;
    for (const KernelConfig& k : cands) {
      EXPECT_TRUE(seen.insert(k.ToString()).second) << "duplicate " << k.ToString();
      KILN_ASSERT_OK_AND_ASSIGN(KernelSpec spec, EmitKernel(Root(*m), device, k));
      EXPECT_EQ(spec.config, k) << "a candidate is fully specified";
    }
  }
}

TEST(CodegenTest, BadConfigsAreErrorsNotCrashes) {
  KILN_ASSERT_OK_AND_ASSIGN(auto m, testing::ParseModule(Catalogue()[0].hlo));
  DeviceSpec device = Preset("sm_90");
  for (KernelConfig c : {KernelConfig{7, 0, 0, 0, 0, 0}, KernelConfig{256, 3, 0, 0, 0, 0},
                         KernelConfig{4096, 1, 1, 0, 0, 0}, KernelConfig{256, 1, 99, 0, 0, 0}}) {
    StatusOr<KernelSpec> k = EmitLoop(Root(*m), device, c);
    EXPECT_FALSE(k.ok()) << c.ToString();
  }
}

TEST(CodegenTest, DevicePresets) {
  for (const std::string& name : DeviceSpec::PresetNames()) {
    KILN_ASSERT_OK_AND_ASSIGN(DeviceSpec d, DeviceSpec::FromPreset(name));
    EXPECT_GT(d.sm_count, 0) << name;
    EXPECT_EQ(d.arch().rfind("sm_", 0), 0u) << name;
  }
  EXPECT_EQ(Preset("A100").arch(), "sm_80");
  EXPECT_EQ(Preset("sm_90a").arch(), "sm_90");
  EXPECT_EQ(Preset("h200").arch(), "sm_90");
  EXPECT_EQ(Preset("sm_80").sm_count, 108);
  StatusOr<DeviceSpec> bad = DeviceSpec::FromPreset("sm_1");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("sm_90"), std::string::npos) << "lists the known names";

  runtime::DeviceDescription desc;
  desc.name = "Some GPU";
  desc.compute_capability_major = 8;
  desc.compute_capability_minor = 0;
  desc.multiprocessor_count = 7;
  DeviceSpec d = DeviceSpec::FromDescription(desc);
  EXPECT_EQ(d.name, "Some GPU");
  EXPECT_EQ(d.sm_count, 7);
  EXPECT_EQ(d.arch(), "sm_80");
  EXPECT_GT(d.max_threads_per_block, 0) << "unset fields keep the preset's values";
}

TEST(CodegenTest, UnsupportedInstructionsAreDeclined) {
  KILN_ASSERT_OK_AND_ASSIGN(auto m, testing::ParseModule(R"(HloModule m
ENTRY e {
  a = c64[4,8] parameter(0)
  ROOT f = c64[4,8] fft(a), fft_type=FFT, fft_length={8}
})"));
  StatusOr<EmitterKind> kind = ChooseEmitter(Root(*m));
  ASSERT_FALSE(kind.ok());
  EXPECT_EQ(kind.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(kind.status().message().find("fft"), std::string::npos) << kind.status().message();
  EXPECT_FALSE(EmitKernel(Root(*m), Preset("sm_90")).ok());
}

TEST(CodegenTest, DumpKernelsWritesSourcesHeadersAndIndex) {
  std::vector<KernelSpec> kernels;
  for (const char* name : {"row_sum", "softmax", "transpose_2d"}) {
    KILN_ASSERT_OK_AND_ASSIGN(KernelSpec k, EmitCase(name));
    kernels.push_back(std::move(k));
  }
  kernels.push_back(kernels[0]);  // same name twice: files made unique
  fs::path dir = fs::temp_directory_path() / ("kiln_codegen_dump_" + std::to_string(getpid()));
  fs::remove_all(dir);
  KILN_ASSERT_OK(DumpKernels(kernels, (dir / "sub").string()));
  EXPECT_TRUE(fs::exists(dir / "sub" / "f.cu"));
  EXPECT_TRUE(fs::exists(dir / "sub" / "f_2.cu"));
  EXPECT_TRUE(fs::exists(dir / "sub" / "kiln_codegen.cuh"));
  std::ifstream in(dir / "sub" / "kernels.txt");
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_NE(ss.str().find("row_reduction"), std::string::npos) << ss.str();
  EXPECT_NE(ss.str().find("launch "), std::string::npos);
  std::ifstream cu(dir / "sub" / "f.cu");
  std::stringstream cs;
  cs << cu.rdbuf();
  EXPECT_NE(cs.str().find("HLO:"), std::string::npos) << "the HLO is in the dump";
  fs::remove_all(dir);
}

// A compiler that records calls and fails on request.
class FakeCompiler : public KernelCompiler {
 public:
  StatusOr<CompiledKernel> Compile(const KernelSpec& k, std::string_view arch) override {
    calls++;
    if (k.name.find("bad") != std::string::npos) return InvalidArgument("syntax error in ", k.name);
    return CompiledKernel{k.name, std::string(arch), "cubin:" + k.name, "", false};
  }
  std::atomic<int> calls{0};
};

TEST(CodegenTest, CompileKernelsKeepsOrderAndReportsFailures) {
  std::vector<KernelSpec> kernels(20);
  for (size_t i = 0; i < kernels.size(); ++i) kernels[i].name = "k" + std::to_string(i);
  ThreadPool pool(3);
  FakeCompiler fake;
  KILN_ASSERT_OK_AND_ASSIGN(std::vector<CompiledKernel> out, CompileKernels(kernels, fake, "sm_90", pool));
  ASSERT_EQ(out.size(), kernels.size());
  for (size_t i = 0; i < out.size(); ++i) {
    EXPECT_EQ(out[i].name, kernels[i].name);
    EXPECT_EQ(out[i].arch, "sm_90");
  }
  kernels[4].name = "bad4";
  kernels[11].name = "bad11";
  FakeCompiler fake2;
  StatusOr<std::vector<CompiledKernel>> failed = CompileKernels(kernels, fake2, "sm_80", pool);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(fake2.calls.load(), 20) << "all compiles run";
  EXPECT_NE(failed.status().message().find("bad4"), std::string::npos) << failed.status().ToString();
  EXPECT_NE(failed.status().message().find("1 more"), std::string::npos) << failed.status().ToString();
}

// Every fusion (and elementwise/shape instruction left alone) that the fusion passes produce for
// the tests/data modules gets a kernel.
TEST(CodegenTest, EveryTestDataFusionEmits) {
  const char* src = std::getenv("KILN_SOURCE_DIR");
  if (src == nullptr) GTEST_SKIP() << "KILN_SOURCE_DIR is not set";
  fs::path data = fs::path(src) / "tests" / "data";
  if (!fs::exists(data)) GTEST_SKIP() << data << " missing";
  DeviceSpec device = Preset("sm_90");
  std::map<std::string, int> by_emitter;
  int modules = 0, kernels = 0, declined = 0;
  std::vector<std::string> failures;
  std::vector<fs::path> paths;
  for (const auto& e : fs::recursive_directory_iterator(data))
    if (e.is_regular_file() && e.path().filename() == "module.hlo") paths.push_back(e.path());
  std::sort(paths.begin(), paths.end());
  for (const fs::path& p : paths) {
    ParseOptions po;
    po.fill_elided_constants = true;
    StatusOr<std::unique_ptr<HloModule>> m = ParseHloModuleFile(p.string(), po);
    if (!m.ok()) continue;  // the parser's own tests cover bad files
    if (!testing::FuseModule(**m).ok()) continue;  // the fusion tests cover these
    ++modules;
    for (const HloInstruction* i : testing::KernelInstructions(**m)) {
      StatusOr<KernelSpec> k = EmitKernel(*i, device);
      if (k.ok()) {
        ++kernels;
        ++by_emitter[k->emitter];
        continue;
      }
      if (i->opcode() != HloOpcode::kFusion && k.status().code() == StatusCode::kUnimplemented) {
        ++declined;
        continue;
      }
      failures.push_back(p.parent_path().filename().string() + " %" + i->name() + ": " +
                         k.status().ToString());
    }
  }
  std::cout << modules << " modules, " << kernels << " kernels";
  for (const auto& [e, n] : by_emitter) std::cout << ", " << e << " " << n;
  std::cout << "; " << declined << " unfused instructions declined\n";
  EXPECT_GT(modules, 500);
  for (size_t i = 0; i < failures.size() && i < 30; ++i) ADD_FAILURE() << failures[i];
  EXPECT_TRUE(failures.empty()) << failures.size() << " fusions failed";
}

}  // namespace
}  // namespace kiln::codegen
