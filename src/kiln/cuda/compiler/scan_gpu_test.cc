// Cumulative reductions (lax.cumsum / cummax as reduce-window) through the GPU compiler on a
// device (label gpu): rows of 10^5 along the minor and a major axis, forward and reverse, run by
// the scan emitter (codegen/emit_scan.cc). The evaluator's reduce-window is O(n^2) (5 x 10^9
// steps per row here), so the reference is the prefix computed in the test: in double and
// rounded once for floating-point sums (the chunked scan reassociates; compared with the
// backend-vs-evaluator tolerance, eval/tolerance.h), exactly for s32 sums and bf16 maxima.
// Skips (visibly) without a CUDA device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "kiln/base/strings.h"
#include "kiln/cuda/compiler/gpu_compiler.h"
#include "kiln/cuda/compiler/gpu_executable.h"
#include "kiln/cuda/cuda_platform.h"
#include "kiln/eval/compare.h"
#include "kiln/hlo/computation.h"
#include "kiln/hlo/parser.h"
#include "kiln/hlo/random_literal.h"

namespace kiln::cuda {
namespace {

CudaDevice* TheDevice() {
  static runtime::Platform* platform = [] {
    auto p = CreateCudaPlatform();
    return p.ok() ? p->release() : nullptr;
  }();
  if (!platform || platform->device_count() == 0) return nullptr;
  auto d = platform->GetDevice(0);
  return d.ok() ? static_cast<CudaDevice*>(*d) : nullptr;
}

struct Case {
  std::string type, op, init;
  int64_t outer, n, inner;
  bool reverse;
};

std::string Module(const Case& c) {
  std::string dims, size, pad;
  const std::string scan_pad = c.reverse ? "0_" + std::to_string(c.n - 1) : std::to_string(c.n - 1) + "_0";
  auto add_dim = [&](int64_t d, bool scan) {
    if (!dims.empty()) {
      dims += ",";
      size += "x";
      pad += "x";
    }
    dims += std::to_string(d);
    size += scan ? std::to_string(d) : "1";
    pad += scan ? scan_pad : "0_0";
  };
  if (c.outer > 1) add_dim(c.outer, false);
  add_dim(c.n, true);
  if (c.inner > 1) add_dim(c.inner, false);
  const std::string shape = c.type + "[" + dims + "]";
  return "HloModule scan\nf { a = " + c.type + "[] parameter(0)  b = " + c.type + "[] parameter(1)  ROOT r = " + c.type +
         "[] " + c.op + "(a, b) }\nENTRY e {\n  x = " + shape + " parameter(0)\n  i = " + c.type + "[] constant(" + c.init +
         ")\n  ROOT s = " + shape + " reduce-window(x, i), window={size=" + size + " pad=" + pad + "}, to_apply=f\n}\n";
}

// The prefix of every row in scan order (see the file comment).
Literal Reference(const Case& c, const Literal& x_lit, const Shape& out) {
  Literal l(out);
  const uint8_t* x = x_lit.untyped_data();
  uint8_t* y = l.untyped_data();
  for (int64_t o = 0; o < c.outer; ++o)
    for (int64_t in = 0; in < c.inner; ++in) {
      double acc = c.type == "f32" || c.type == "f64" ? std::stod(c.init) : 0.0;
      int32_t iacc = c.type == "s32" ? std::stoi(c.init) : 0;
      float fmax = -INFINITY;
      uint16_t fbits = 0xff80;  // bf16 -inf
      for (int64_t s = 0; s < c.n; ++s) {
        const int64_t e = (o * c.n + (c.reverse ? c.n - 1 - s : s)) * c.inner + in;
        if (c.type == "f32") {
          float v;
          std::memcpy(&v, x + e * 4, 4);
          acc += v;
          const float r = static_cast<float>(acc);
          std::memcpy(y + e * 4, &r, 4);
        } else if (c.type == "f64") {
          double v;
          std::memcpy(&v, x + e * 8, 8);
          acc += v;
          std::memcpy(y + e * 8, &acc, 8);
        } else if (c.type == "s32") {
          int32_t v;
          std::memcpy(&v, x + e * 4, 4);
          iacc = static_cast<int32_t>(static_cast<uint32_t>(iacc) + static_cast<uint32_t>(v));
          std::memcpy(y + e * 4, &iacc, 4);
        } else {  // bf16 maximum
          uint16_t b;
          std::memcpy(&b, x + e * 2, 2);
          const uint32_t w = uint32_t{b} << 16;
          float v;
          std::memcpy(&v, &w, 4);
          if (v > fmax) {
            fmax = v;
            fbits = b;
          }
          std::memcpy(y + e * 2, &fbits, 2);
        }
      }
    }
  return l;
}

TEST(ScanGpuTest, LongCumulativeReductions) {
  CudaDevice* device = TheDevice();
  if (!device) GTEST_SKIP() << "no CUDA device";
  for (const Case& c : {Case{"f32", "add", "0", 4, 100000, 1, false}, Case{"f32", "add", "0", 1, 100000, 8, true},
                        Case{"f64", "add", "1", 2, 100000, 1, true}, Case{"s32", "add", "3", 1, 100000, 1, false},
                        Case{"bf16", "maximum", "-inf", 3, 100000, 1, false}, Case{"f32", "add", "0", 1, 1000000, 1, false},
                        Case{"f32", "add", "0", 512, 2000, 1, false}}) {
    const std::string text = Module(c);
    SCOPED_TRACE(text);
    auto m = ParseHloModule(text);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    const HloInstruction* p = (*m)->entry_computation()->parameter_instruction(0);
    std::vector<Literal> args = MakeRandomArguments({p->shape()}, 5);
    const Literal expected = Reference(c, args[0], (*m)->entry_computation()->root_instruction()->shape());
    GpuCompileOptions o;
    o.device = codegen::DeviceSpec::FromDescription(device->description());
    o.allow_host_fallback = false;
    auto compiled = GpuCompiler::Compile(std::move(*m), o);
    ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
    bool scan = false;
    for (const codegen::KernelSpec& k : (*compiled)->kernels) scan |= k.emitter == "scan";
    EXPECT_TRUE(scan) << "no scan kernel";
    auto exe = GpuExecutable::Create(std::move(*compiled), *device, {});
    ASSERT_TRUE(exe.ok()) << exe.status().ToString();
    GpuRunOptions ro;
    ro.poison = true;
    auto got = (*exe)->Run(args, ro);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    CompareOptions co;
    co.backend_vs_evaluator = true;
    Comparison cmp = CompareLiterals(*got, expected, co);
    EXPECT_TRUE(cmp.ok()) << cmp.ToString();
    if (c.type == "s32" || c.type == "bf16") {
      EXPECT_EQ(std::memcmp(got->untyped_data(), expected.untyped_data(), expected.size_bytes()), 0) << "not bit-exact";
    }
  }
}

}  // namespace
}  // namespace kiln::cuda
