#include "kiln/cuda/compiler/library_calls.h"

#include <cmath>

#include "kiln/base/strings.h"
#include "kiln/cuda/compiler/conv_config.h"
#include "kiln/cuda/compiler/gemm_config.h"
#include "kiln/cuda/libs/attention_cudnn.h"

namespace kiln::cuda {

StatusOr<libs::GemmDesc> GemmDescForCall(const HloInstruction& gemm, uint64_t min_alignment) {
  KILN_ASSIGN_OR_RETURN(GemmConfig c, GetGemmConfig(gemm));
  libs::GemmDesc d;
  d.batch = c.batch;
  d.m = c.m;
  d.n = c.n;
  d.k = c.k;
  d.lhs.dtype = gemm.operand(0)->shape().element_type();
  d.lhs.transposed = c.lhs_transposed;
  d.lhs.batch_stride = c.lhs_broadcast ? 0 : -1;
  d.rhs.dtype = gemm.operand(1)->shape().element_type();
  d.rhs.transposed = c.rhs_transposed;
  d.rhs.batch_stride = c.rhs_broadcast ? 0 : -1;
  d.out.dtype = gemm.shape().element_type();
  d.precision = c.precision;
  d.alpha = c.alpha;
  d.beta = c.beta;
  using E = libs::GemmEpilogue;
  switch (c.activation) {
    case GemmActivation::kNone: d.epilogue = c.has_bias ? E::kBias : E::kNone; break;
    case GemmActivation::kRelu: d.epilogue = c.has_bias ? E::kBiasRelu : E::kRelu; break;
    case GemmActivation::kGelu: d.epilogue = c.has_bias ? E::kBiasGelu : E::kGelu; break;
  }
  if (c.has_bias) d.bias_dtype = gemm.operand(c.bias_operand())->shape().element_type();
  d.min_alignment_bytes = min_alignment;
  return d;
}

StatusOr<libs::AttentionDesc> AttentionDescForConfig(const AttentionConfig& c, int compute_capability_major) {
  if ((c.has_bias || c.has_mask) && (c.backward || c.stats))
    return Unimplemented("attention: a bias or a data mask with a backward or statistics (cuDNN's paths take neither)");
  if (c.input_type != c.output_type)
    return Unimplemented("attention: ", PrimitiveTypeName(c.input_type), " inputs with a ",
                         PrimitiveTypeName(c.output_type), " result");
  if (c.head_dim != c.v_head_dim) return Unimplemented("attention: q/k head dim ", c.head_dim, " != v head dim ", c.v_head_dim);
  std::vector<const AttentionView*> views = {&c.q, &c.k, &c.v, &c.out};
  if (c.backward) {
    views = {&c.q, &c.k, &c.v, &c.d_out, &c.dq, &c.dk, &c.dv};
    if (c.stats) views.insert(views.end(), {&c.lse, &c.o});
    for (PrimitiveType t : {c.grad_type, c.dq_type, c.dk_type, c.dv_type})
      if (t != c.input_type)
        return Unimplemented("attention backward: a ", PrimitiveTypeName(t), " gradient of ",
                             PrimitiveTypeName(c.input_type), " inputs");
    for (double f : {c.dq_scale, c.dk_scale})
      if (!(std::abs(f - c.scale) <= 1e-6 * std::abs(c.scale)))
        return Unimplemented("attention backward: a gradient scaled by ", f, " for a forward scaled by ", c.scale);
  }
  if (!c.backward && c.stats) views.push_back(&c.lse);
  // Note [Attention bias and masks]: [b..., row, key] views of any strides, after the others.
  const size_t n_plain = views.size();
  if (c.has_bias) views.push_back(&c.bias);
  if (c.has_mask) views.push_back(&c.mask_view);
  // The backward's gradients may have any element stride (cuDNN writes them packed, a copy
  // puts them in place); everything else reads a contiguous head dim.
  for (size_t i = 0; i < views.size(); ++i)
    if (i < n_plain && views[i]->element != 1 && !(c.backward && i >= 4 && i < 7))
      return Unimplemented("attention: a view whose head dimension is not contiguous");
  // Merge adjacent batch dims while more than three remain and every view allows it.
  std::vector<int64_t> sizes = c.batch;
  std::vector<std::vector<int64_t>> strides;
  for (const AttentionView* v : views) strides.push_back(v->batch);
  while (sizes.size() > static_cast<size_t>(libs::kAttentionMaxBatchDims)) {
    bool merged = false;
    for (size_t i = 0; i + 1 < sizes.size() && !merged; ++i) {
      bool ok = true;
      for (const auto& st : strides) ok = ok && st[i] == st[i + 1] * sizes[i + 1];
      if (!ok) continue;
      sizes[i] *= sizes[i + 1];
      sizes.erase(sizes.begin() + i + 1);
      for (auto& st : strides) st.erase(st.begin() + i);
      merged = true;
    }
    if (!merged) return Unimplemented("attention: ", c.batch.size(), " batch dimensions that do not merge into 3");
  }
  libs::AttentionDesc d;
  d.type = c.input_type;
  const size_t base = libs::kAttentionMaxBatchDims - sizes.size();
  for (size_t i = 0; i < sizes.size(); ++i) d.batch[base + i] = sizes[i];
  d.q_len = c.q_len;
  d.kv_len = c.kv_len;
  d.head_dim = c.head_dim;
  d.scale = c.scale;
  d.causal = c.mask == AttentionMask::kCausal;
  d.causal_offset = c.causal_offset;
  std::vector<libs::AttentionDesc::Operand*> ops = {&d.q, &d.k, &d.v, &d.out};
  if (c.backward) ops = {&d.q, &d.k, &d.v, &d.d_out, &d.dq, &d.dk, &d.dv};
  if (c.backward && c.stats) ops.insert(ops.end(), {&d.lse, &d.o});
  if (!c.backward && c.stats) ops.push_back(&d.lse);
  if (c.has_bias) ops.push_back(&d.bias);
  if (c.has_mask) ops.push_back(&d.mask);
  d.stats = c.stats;
  d.has_bias = c.has_bias;
  d.bias_type = c.bias_type;
  d.bias_scale = c.bias_scale;
  d.has_mask = c.has_mask;
  d.mask_fill = c.mask_fill;
  for (size_t o = 0; o < ops.size(); ++o) {
    ops[o]->offset = views[o]->offset;
    ops[o]->row = views[o]->row;
    ops[o]->element = views[o]->element;
    for (size_t i = 0; i < sizes.size(); ++i) ops[o]->batch[base + i] = strides[o][i];
  }
  if (!c.backward && !c.stats) {
    KILN_RETURN_IF_ERROR(libs::CheckAttentionSupported(d, compute_capability_major));
    return d;
  }
  if (!c.backward) {
    // A forward that also writes its statistics (Note [Attention statistics]): cuDNN SDPA's,
    // on the problems a plain forward takes.
    libs::AttentionDesc plain = d;
    plain.stats = false;
    KILN_RETURN_IF_ERROR(libs::CheckAttentionSupported(plain, compute_capability_major));
    if (!libs::CudnnAttentionBuilt()) return Unimplemented("attention statistics: kiln was built without cuDNN SDPA");
    if (d.type != PrimitiveType::kBF16 && d.type != PrimitiveType::kF16)
      return Unimplemented("attention statistics: ", PrimitiveTypeName(d.type), " (bf16 or f16)");
    if (compute_capability_major < 8) return Unimplemented("attention statistics: sm < 80");
    if (d.head_dim % 8 != 0 || d.head_dim > 128) return Unimplemented("attention statistics: head dim ", d.head_dim);
    if (d.causal && d.causal_offset != 0 && d.causal_offset != d.kv_len - d.q_len)
      return Unimplemented("attention statistics: causal offset ", d.causal_offset);
    return d;
  }
  // The backward runs on cuDNN only (CudnnAttentionBackwardPlan).
  d.backward = true;
  if (!libs::CudnnAttentionBuilt()) return Unimplemented("attention backward: kiln was built without cuDNN SDPA");
  if (d.type != PrimitiveType::kBF16 && d.type != PrimitiveType::kF16)
    return Unimplemented("attention backward: ", PrimitiveTypeName(d.type), " (bf16 or f16)");
  if (compute_capability_major < 8) return Unimplemented("attention backward: sm < 80");
  if (d.head_dim % 8 != 0 || d.head_dim > 128) return Unimplemented("attention backward: head dim ", d.head_dim);
  if (d.causal && d.causal_offset != 0 && d.causal_offset != d.kv_len - d.q_len)
    return Unimplemented("attention backward: causal offset ", d.causal_offset);
  for (const libs::AttentionDesc::Operand* o : {&d.k, &d.v})
    for (int i = 0; i < libs::kAttentionMaxBatchDims; ++i)
      if (d.batch[i] > 1 && o->batch[i] == 0) return Unimplemented("attention backward: k/v shared across a batch dim");
  return d;
}

StatusOr<libs::AttentionDesc> AttentionDescForCall(const HloInstruction& call, int compute_capability_major) {
  KILN_ASSIGN_OR_RETURN(AttentionConfig c, AttentionConfigOf(call));
  return AttentionDescForConfig(c, compute_capability_major);
}

StatusOr<libs::ConvDesc> ConvDescForCall(const HloInstruction& conv) {
  KILN_ASSIGN_OR_RETURN(ConvConfig c, GetConvConfig(conv));
  libs::ConvDesc d;
  d.kind = c.kind == ConvCallKind::kBackwardData     ? libs::ConvKind::kBackwardData
           : c.kind == ConvCallKind::kBackwardFilter ? libs::ConvKind::kBackwardFilter
                                                      : libs::ConvKind::kForward;
  d.dtype = conv.shape().element_type();
  d.precision = c.precision;
  const libs::ConvLayout layout =
      c.channels_last ? libs::ConvLayout::kChannelsLast : libs::ConvLayout::kChannelsFirst;
  d.input_layout = d.filter_layout = d.output_layout = layout;
  d.batch = c.batch;
  d.input_features = c.input_features;
  d.output_features = c.output_features;
  d.input_spatial = c.input_spatial;
  d.filter_spatial = c.filter_spatial;
  d.output_spatial = c.output_spatial;
  d.strides = c.strides;
  d.padding_low = c.padding_low;
  d.padding_high = c.padding_high;
  d.dilations = c.dilations;
  d.feature_group_count = c.feature_group_count;
  d.alpha = c.alpha;
  d.has_bias = c.has_bias;
  d.side_input_scale = c.side_input_scale;
  d.activation = c.relu ? libs::ConvActivation::kRelu : libs::ConvActivation::kNone;
  return d;
}

autotune::Config GemmAlgorithmToConfig(const libs::GemmAlgorithm& a) {
  if (a.backend == libs::GemmAlgorithm::Backend::kCublas) {
    return autotune::Config(std::string(kCublasBackend), {{"algo", a.cublas_algo}});
  }
  nlohmann::json opaque = nlohmann::json::array();
  for (uint64_t word : a.opaque) opaque.push_back(word);
  return autotune::Config(std::string(kCublasLtBackend), {{"index", a.index},
                                                          {"opaque", opaque},
                                                          {"workspace", a.workspace_bytes},
                                                          {"waves", a.waves},
                                                          {"desc", a.description}});
}

autotune::Config ConvAlgorithmToConfig(const libs::ConvAlgorithm& a) {
  return autotune::Config(std::string(kCudnnBackend), {{"index", a.index},
                                                       {"algo", a.algo},
                                                       {"math_type", a.math_type},
                                                       {"workspace", a.workspace_bytes},
                                                       {"deterministic", a.deterministic},
                                                       {"tensor_ops", a.tensor_ops},
                                                       {"split_epilogue", a.split_epilogue},
                                                       {"desc", a.description}});
}

namespace {

bool IsInt(const nlohmann::json& p, const char* key) {
  return p.is_object() && p.contains(key) && p[key].is_number_integer();
}

}  // namespace

StatusOr<libs::GemmAlgorithm> GemmAlgorithmFromConfig(const autotune::Config& config,
                                                      const libs::GemmDesc& desc) {
  const nlohmann::json& p = config.params();
  libs::GemmAlgorithm a;
  if (config.backend() == kCublasBackend) {
    if (!IsInt(p, "algo")) {
      return InvalidArgument("cublas config without an integer \"algo\": ", config.ToString());
    }
    a.backend = libs::GemmAlgorithm::Backend::kCublas;
    a.cublas_algo = p["algo"].get<int>();
    a.workspace_bytes = desc.max_workspace_bytes;
    a.description = StrCat("cublas algo=", a.cublas_algo);
    return a;
  }
  if (config.backend() == kCublasLtBackend) {
    if (!p.is_object() || !p.contains("opaque") || !p["opaque"].is_array() ||
        p["opaque"].size() != 8 || !p.contains("workspace") ||
        !p["workspace"].is_number_unsigned()) {
      return InvalidArgument("malformed cublaslt config ", config.ToString());
    }
    a.backend = libs::GemmAlgorithm::Backend::kCublasLt;
    a.index = IsInt(p, "index") ? p["index"].get<int>() : 0;
    for (size_t i = 0; i < 8; ++i) {
      if (!p["opaque"][i].is_number_unsigned()) {
        return InvalidArgument("malformed cublaslt config ", config.ToString());
      }
      a.opaque[i] = p["opaque"][i].get<uint64_t>();
    }
    a.workspace_bytes = p["workspace"].get<uint64_t>();
    if (p.contains("waves") && p["waves"].is_number()) a.waves = p["waves"].get<float>();
    a.description = p.contains("desc") && p["desc"].is_string() ? p["desc"].get<std::string>()
                                                                 : std::string("cublasLt");
    return a;
  }
  return InvalidArgument("not a GEMM config: ", config.ToString());
}

StatusOr<libs::ConvAlgorithm> ConvAlgorithmFromConfig(const autotune::Config& config) {
  const nlohmann::json& p = config.params();
  if (config.backend() != kCudnnBackend) {
    return InvalidArgument("not a convolution config: ", config.ToString());
  }
  if (!IsInt(p, "algo") || !IsInt(p, "math_type") || !p.contains("workspace") ||
      !p["workspace"].is_number_unsigned()) {
    return InvalidArgument("malformed cudnn config ", config.ToString());
  }
  auto flag = [&](const char* key) { return p.contains(key) && p[key].is_boolean() && p[key].get<bool>(); };
  libs::ConvAlgorithm a;
  a.kind = libs::ConvKind::kForward;
  a.index = IsInt(p, "index") ? p["index"].get<int>() : 0;
  a.algo = p["algo"].get<int>();
  a.math_type = p["math_type"].get<int>();
  a.workspace_bytes = p["workspace"].get<uint64_t>();
  a.deterministic = flag("deterministic");
  a.tensor_ops = flag("tensor_ops");
  a.split_epilogue = flag("split_epilogue");
  a.description = p.contains("desc") && p["desc"].is_string() ? p["desc"].get<std::string>()
                                                               : std::string("cudnn");
  return a;
}

StatusOr<std::optional<libs::GemmAlgorithm>> TunedGemmAlgorithm(const HloInstruction& gemm,
                                                                const libs::GemmDesc& desc) {
  StatusOr<autotune::Config> config = autotune::ReadConfigFromBackendConfig(gemm);
  if (!config.ok()) {
    if (config.status().code() == StatusCode::kNotFound) return std::optional<libs::GemmAlgorithm>();
    return config.status();
  }
  KILN_ASSIGN_OR_RETURN(libs::GemmAlgorithm a, GemmAlgorithmFromConfig(*config, desc));
  // A cuBLASLt algorithm may rely on the alignment of the buffers it was tuned with.
  if (a.backend == libs::GemmAlgorithm::Backend::kCublasLt && desc.min_alignment_bytes < 256) {
    return std::optional<libs::GemmAlgorithm>();
  }
  return std::optional<libs::GemmAlgorithm>(std::move(a));
}

StatusOr<std::optional<libs::ConvAlgorithm>> TunedConvAlgorithm(const HloInstruction& conv) {
  StatusOr<autotune::Config> config = autotune::ReadConfigFromBackendConfig(conv);
  if (!config.ok()) {
    if (config.status().code() == StatusCode::kNotFound) return std::optional<libs::ConvAlgorithm>();
    return config.status();
  }
  KILN_ASSIGN_OR_RETURN(libs::ConvAlgorithm a, ConvAlgorithmFromConfig(*config));
  return std::optional<libs::ConvAlgorithm>(std::move(a));
}

autotune::Config AttentionKernelConfigToConfig(const libs::AttentionKernelConfig& c) {
  return autotune::Config(std::string(kFlashAttentionBackend), nlohmann::json{{"config", c.ToString()}});
}

StatusOr<libs::AttentionKernelConfig> AttentionKernelConfigFromConfig(const autotune::Config& config) {
  if (config.backend() != kFlashAttentionBackend || !config.params().is_object() || !config.params().contains("config") ||
      !config.params()["config"].is_string())
    return InvalidArgument("not a flash-attention config: ", config.ToString());
  return libs::AttentionKernelConfig::Parse(config.params()["config"].get<std::string>());
}

autotune::Config CudnnSdpaPlanToConfig(int64_t plan) {
  return autotune::Config(std::string(kCudnnSdpaBackend), nlohmann::json{{"plan", plan}});
}

StatusOr<std::optional<AttentionChoice>> TunedAttentionChoice(const HloInstruction& call) {
  StatusOr<autotune::Config> config = autotune::ReadConfigFromBackendConfig(call);
  if (!config.ok()) {
    if (config.status().code() == StatusCode::kNotFound) return std::optional<AttentionChoice>();
    return config.status();
  }
  AttentionChoice c;
  if (config->backend() == kCudnnSdpaBackend) {
    const nlohmann::json& p = config->params();
    if (!p.is_object() || !p.contains("plan") || !p["plan"].is_number_integer())
      return InvalidArgument("not a cudnn_sdpa config: ", config->ToString());
    c.cudnn = true;
    c.cudnn_plan = p["plan"].get<int64_t>();
    return std::optional<AttentionChoice>(c);
  }
  KILN_ASSIGN_OR_RETURN(c.flash, AttentionKernelConfigFromConfig(*config));
  return std::optional<AttentionChoice>(c);
}

}  // namespace kiln::cuda
