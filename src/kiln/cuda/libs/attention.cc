#include "kiln/cuda/libs/attention.h"

#include <algorithm>
#include <cmath>
#include <span>

#include "kiln/base/strings.h"
#include "kiln/cuda/libs/kernel_loader.h"
#include "kiln/runtime/kernel_args.h"

namespace kiln::cuda::libs {
namespace {

// The kernel's parameter block; the same layout as AttentionParams in attention_kernels.cc.
struct AttentionParams {
  const void* q;
  const void* k;
  const void* v;
  void* o;
  long long q_batch[3], k_batch[3], v_batch[3], o_batch[3];
  long long q_row, k_row, v_row, o_row;
  long long causal_offset;
  int nb1, nb2;
  int q_len, kv_len;
  float scale_log2;
  int causal;
  // Note [Attention bias and masks]
  const void* bias;
  const unsigned char* mask;
  long long bias_batch[3], mask_batch[3];
  long long bias_row, bias_col, mask_row, mask_col;
  float scale, bias_scale, mask_fill;
};

// Buffer elements a [b..., row, key] view reaches.
int64_t ExtentOfScores(const AttentionDesc& d, const AttentionDesc::Operand& o) {
  if (d.q_len == 0 || d.kv_len == 0 || d.batch_count() == 0) return 0;
  int64_t last = o.offset + (d.q_len - 1) * o.row + (d.kv_len - 1) * o.element;
  for (int i = 0; i < kAttentionMaxBatchDims; ++i) last += (d.batch[i] - 1) * o.batch[i];
  return last + 1;
}

uint32_t SharedBytes(const AttentionDesc& d, const AttentionKernelConfig& c) {
  return static_cast<uint32_t>((16 * c.mt * c.warps + 2 * c.block_n) * d.head_dim * PrimitiveByteWidth(d.type));
}

std::string OperandString(const AttentionDesc::Operand& o) {
  return StrCat("{offset ", o.offset, ", batch ", o.batch[0], "/", o.batch[1], "/", o.batch[2], ", row ", o.row,
                "}");
}

}  // namespace

int64_t AttentionDesc::ExtentOf(const Operand& o, int64_t rows) const {
  if (rows == 0 || batch_count() == 0) return 0;
  int64_t last = o.offset + (rows - 1) * o.row + (head_dim - 1);
  for (int i = 0; i < kAttentionMaxBatchDims; ++i) last += (batch[i] - 1) * o.batch[i];
  return last + 1;
}

double AttentionDesc::Flops() const {
  double pairs = static_cast<double>(q_len) * static_cast<double>(kv_len);
  if (causal && !has_mask) {  // with a data mask every tile is processed
    pairs = 0;
    for (int64_t i = 0; i < q_len; ++i) pairs += static_cast<double>(std::clamp<int64_t>(i + causal_offset + 1, 0, kv_len));
  }
  return 4.0 * static_cast<double>(batch_count()) * pairs * static_cast<double>(head_dim);
}

std::string AttentionDesc::ToString() const {
  return StrCat("attention ", PrimitiveTypeName(type), " batch ", batch[0], "x", batch[1], "x", batch[2], " q ", q_len,
                " kv ", kv_len, " d ", head_dim, " scale ", scale, causal ? StrCat(" causal ", causal_offset) : "",
                " q", OperandString(q), " k", OperandString(k), " v", OperandString(v), " out", OperandString(out),
                has_bias ? StrCat(" bias ", PrimitiveTypeName(bias_type), OperandString(bias), " x", bias_scale) : "",
                has_mask ? StrCat(" data mask", OperandString(mask), " fill ", mask_fill) : "");
}

std::string AttentionKernelConfig::ToString() const { return StrCat("w", warps, ".m", mt, ".n", block_n); }

StatusOr<AttentionKernelConfig> AttentionKernelConfig::Parse(std::string_view text) {
  AttentionKernelConfig c;
  int w = 0, m = 0, n = 0;
  const std::string s(text);
  if (std::sscanf(s.c_str(), "w%d.m%d.n%d", &w, &m, &n) != 3 || (w != 4 && w != 8) || (m != 1 && m != 2) ||
      (n != 64 && n != 128) || s != StrCat("w", w, ".m", m, ".n", n))
    return InvalidArgument("attention config '", text, "' is not w{4,8}.m{1,2}.n{64,128}");
  c.warps = w;
  c.mt = m;
  c.block_n = n;
  return c;
}

Status CheckAttentionSupported(const AttentionDesc& d, int compute_capability_major) {
  if (d.backward) return Unimplemented("attention kernel: a backward problem (cuDNN SDPA runs those)");
  if (d.stats) return Unimplemented("attention kernel: softmax statistics (cuDNN SDPA writes those)");
  if (d.type != PrimitiveType::kBF16 && d.type != PrimitiveType::kF16)
    return Unimplemented("attention kernel: ", PrimitiveTypeName(d.type), " inputs (bf16 or f16)");
  if (d.head_dim != 64 && d.head_dim != 128)
    return Unimplemented("attention kernel: head dimension ", d.head_dim, " (64 or 128)");
  if (compute_capability_major < 8)
    return Unimplemented("attention kernel: compute capability ", compute_capability_major, ".x (8.0 or newer)");
  if (d.q_len < 1 || d.kv_len < 1 || d.batch_count() < 1)
    return InvalidArgument("attention kernel: empty problem ", d.ToString());
  if (d.q_len > (int64_t{1} << 30) || d.kv_len > (int64_t{1} << 30) || d.batch_count() > (int64_t{1} << 31) - 1)
    return Unimplemented("attention kernel: dimensions past 2^30 rows or 2^31 batches");
  if (d.batch[1] > (int64_t{1} << 30) || d.batch[2] > (int64_t{1} << 30))
    return Unimplemented("attention kernel: batch dimensions past 2^30");
  if (!(d.scale > 0) || !std::isfinite(d.scale))
    return Unimplemented("attention kernel: scale ", d.scale, " (positive and finite)");
  if (d.causal && d.causal_offset < 0 && !d.has_mask)
    return Unimplemented("attention kernel: a causal offset below 0 (fully masked rows)");
  if (d.has_bias && d.bias_type != PrimitiveType::kF32 && d.bias_type != PrimitiveType::kBF16 &&
      d.bias_type != PrimitiveType::kF16)
    return Unimplemented("attention kernel: a ", PrimitiveTypeName(d.bias_type), " bias (f32, bf16 or f16)");
  if (d.has_bias && !std::isfinite(d.bias_scale)) return Unimplemented("attention kernel: bias scale ", d.bias_scale);
  for (const AttentionDesc::Operand* o : {&d.bias, &d.mask})
    if (o->offset < 0 || o->row < 0 || o->element < 0 || o->batch[0] < 0 || o->batch[1] < 0 || o->batch[2] < 0)
      return Unimplemented("attention kernel: negative bias or mask strides");
  for (const AttentionDesc::Operand* o : {&d.q, &d.k, &d.v, &d.out}) {
    bool aligned = o->offset % 8 == 0 && o->row % 8 == 0;
    for (int i = 0; i < kAttentionMaxBatchDims; ++i) aligned = aligned && o->batch[i] % 8 == 0;
    if (!aligned)
      return Unimplemented("attention kernel: operand strides and offsets must be multiples of 8 elements: ",
                           OperandString(*o));
    if (o->offset < 0 || o->row < 0 || o->batch[0] < 0 || o->batch[1] < 0 || o->batch[2] < 0)
      return Unimplemented("attention kernel: negative strides");
  }
  return OkStatus();
}

AttentionKernelConfig DefaultAttentionConfig(const AttentionDesc& d) {
  // Measured on the H200 (bench/RESULTS.md): for head dim 64, 32 rows per warp over 64-key
  // tiles wins on every bench workload (0.495 ms vs 0.561 for w4.m1.n128 on attention_bf16);
  // head dim 128 has no register room for two m16 tiles.
  AttentionKernelConfig c;
  c.warps = 4;
  c.mt = d.head_dim <= 64 ? 2 : 1;
  c.block_n = 64;
  return c;
}

std::vector<AttentionKernelConfig> AttentionConfigs(const AttentionDesc& d) {
  // The configs ptxas fits in 255 registers without spills (sm_90, CUDA 13).
  static constexpr AttentionKernelConfig kD64[] = {{4, 2, 64}, {8, 1, 64}, {4, 1, 128}, {4, 1, 64}, {8, 1, 128}, {8, 2, 64}};
  static constexpr AttentionKernelConfig kD128[] = {{4, 1, 64}, {8, 1, 64}, {8, 1, 128}};
  std::vector<AttentionKernelConfig> out = {DefaultAttentionConfig(d)};
  const std::span<const AttentionKernelConfig> list = d.head_dim <= 64 ? std::span<const AttentionKernelConfig>(kD64) : std::span<const AttentionKernelConfig>(kD128);
  for (const AttentionKernelConfig& c : list)
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  return out;
}

NvrtcRequest AttentionKernelRequest(const AttentionDesc& desc, const AttentionKernelConfig& config) {
  NvrtcRequest request;
  request.source = AttentionKernelSource();
  request.program_name = "kiln_flash_attention.cu";
  request.options = {StrCat("-DKILN_D=", desc.head_dim), StrCat("-DKILN_WARPS=", config.warps),
                     StrCat("-DKILN_MT=", config.mt),
                     StrCat("-DKILN_BN=", config.block_n),
                     StrCat("-DKILN_F16=", desc.type == PrimitiveType::kF16 ? 1 : 0),
                     StrCat("-DKILN_BIAS=", !desc.has_bias                              ? 0
                                            : desc.bias_type == PrimitiveType::kF32  ? 1
                                            : desc.bias_type == PrimitiveType::kBF16 ? 2
                                                                                     : 3),
                     StrCat("-DKILN_MASK=", desc.has_mask ? 1 : 0)};
  return request;
}

StatusOr<std::unique_ptr<AttentionPlan>> AttentionPlan::Create(const AttentionDesc& desc, CudaDevice& device,
                                                               const AttentionKernelConfig& config) {
  const runtime::DeviceDescription& dd = device.description();
  KILN_RETURN_IF_ERROR(CheckAttentionSupported(desc, dd.compute_capability_major));
  if ((config.warps != 4 && config.warps != 8) || (config.mt != 1 && config.mt != 2) ||
      (config.block_n != 64 && config.block_n != 128))
    return InvalidArgument("attention config ", config.ToString(), " (w4/w8, m1/m2, n64/n128)");
  std::unique_ptr<AttentionPlan> plan(new AttentionPlan(desc, config));
  plan->shared_bytes_ = SharedBytes(desc, config);
  const uint64_t limit = std::max(dd.shared_memory_per_block_optin, dd.shared_memory_per_block);
  if (plan->shared_bytes_ > limit)
    return Unimplemented("attention config ", config.ToString(), " needs ", plan->shared_bytes_,
                         " bytes of shared memory; the device allows ", limit);
  NvrtcRequest request = AttentionKernelRequest(desc, config);
  KILN_ASSIGN_OR_RETURN(runtime::Module * module, LoadLibraryModule(device, std::move(request)));
  KILN_ASSIGN_OR_RETURN(plan->kernel_, module->GetKernel("kiln_flash_attention_fwd"));
  if (plan->shared_bytes_ > 48 * 1024) KILN_RETURN_IF_ERROR(plan->kernel_->SetMaxDynamicSharedMemory(plan->shared_bytes_));
  return plan;
}

Status AttentionPlan::Run(runtime::DeviceMemory q, runtime::DeviceMemory k, runtime::DeviceMemory v,
                          runtime::DeviceMemory out, runtime::Stream& stream, runtime::DeviceMemory bias,
                          runtime::DeviceMemory mask) const {
  const AttentionDesc& d = desc_;
  const uint64_t w = PrimitiveByteWidth(d.type);
  struct Check {
    const char* name;
    const runtime::DeviceMemory& m;
    const AttentionDesc::Operand& o;
    int64_t rows;
  };
  for (const Check& c : {Check{"q", q, d.q, d.q_len}, Check{"k", k, d.k, d.kv_len}, Check{"v", v, d.v, d.kv_len},
                         Check{"out", out, d.out, d.q_len}}) {
    const uint64_t need = static_cast<uint64_t>(d.ExtentOf(c.o, c.rows)) * w;
    if (c.m.size < need)
      return InvalidArgument("attention: the ", c.name, " buffer holds ", c.m.size, " bytes; the view needs ", need);
    if (reinterpret_cast<uintptr_t>(c.m.ptr) % 16 != 0)
      return InvalidArgument("attention: the ", c.name, " buffer is not 16-byte aligned");
  }
  if (d.has_bias && bias.size < static_cast<uint64_t>(ExtentOfScores(d, d.bias)) * PrimitiveByteWidth(d.bias_type))
    return InvalidArgument("attention: the bias buffer holds ", bias.size, " bytes; its view needs ",
                           ExtentOfScores(d, d.bias) * PrimitiveByteWidth(d.bias_type));
  if (d.has_mask && mask.size < static_cast<uint64_t>(ExtentOfScores(d, d.mask)))
    return InvalidArgument("attention: the mask buffer holds ", mask.size, " bytes; its view needs ",
                           ExtentOfScores(d, d.mask));
  AttentionParams p{};
  if (d.has_bias) p.bias = static_cast<char*>(bias.ptr) + d.bias.offset * PrimitiveByteWidth(d.bias_type);
  if (d.has_mask) p.mask = static_cast<const unsigned char*>(mask.ptr) + d.mask.offset;
  for (int i = 0; i < kAttentionMaxBatchDims; ++i) {
    p.bias_batch[i] = d.bias.batch[i];
    p.mask_batch[i] = d.mask.batch[i];
  }
  p.bias_row = d.bias.row;
  p.bias_col = d.bias.element;
  p.mask_row = d.mask.row;
  p.mask_col = d.mask.element;
  p.scale = static_cast<float>(d.scale);
  p.bias_scale = static_cast<float>(d.bias_scale);
  p.mask_fill = static_cast<float>(d.mask_fill);
  auto at = [&](const runtime::DeviceMemory& m, const AttentionDesc::Operand& o) {
    return static_cast<char*>(m.ptr) + o.offset * w;
  };
  p.q = at(q, d.q);
  p.k = at(k, d.k);
  p.v = at(v, d.v);
  p.o = at(out, d.out);
  for (int i = 0; i < kAttentionMaxBatchDims; ++i) {
    p.q_batch[i] = d.q.batch[i];
    p.k_batch[i] = d.k.batch[i];
    p.v_batch[i] = d.v.batch[i];
    p.o_batch[i] = d.out.batch[i];
  }
  p.q_row = d.q.row;
  p.k_row = d.k.row;
  p.v_row = d.v.row;
  p.o_row = d.out.row;
  p.causal_offset = d.causal_offset;
  p.nb1 = static_cast<int>(d.batch[1]);
  p.nb2 = static_cast<int>(d.batch[2]);
  p.q_len = static_cast<int>(d.q_len);
  p.kv_len = static_cast<int>(d.kv_len);
  p.scale_log2 = static_cast<float>(d.scale * 1.4426950408889634);
  p.causal = d.causal ? 1 : 0;
  const int64_t bm = 16 * config_.mt * config_.warps;
  const int64_t m_blocks = (d.q_len + bm - 1) / bm;
  if (m_blocks > 65535) return Unimplemented("attention: more than 65535 query tiles (", d.q_len, " rows)");
  runtime::LaunchDims dims;
  dims.block.x = static_cast<uint32_t>(32 * config_.warps);
  dims.grid.x = static_cast<uint32_t>(d.batch_count());
  dims.grid.y = static_cast<uint32_t>(m_blocks);
  dims.shared_memory_bytes = shared_bytes_;
  runtime::KernelArgs args;
  args.Add(p);
  return stream.Launch(*kernel_, dims, args);
}

}  // namespace kiln::cuda::libs
