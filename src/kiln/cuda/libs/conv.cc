#include "kiln/cuda/libs/conv.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <tuple>

#include "kiln/base/strings.h"
#include "kiln/cuda/libs/handles.h"
#include "kiln/cuda/libs/kernel_loader.h"
#include "kiln/runtime/kernel_args.h"
#include "kiln/runtime/module.h"

namespace kiln::cuda::libs {

namespace {

uint64_t Product(const std::vector<int64_t>& v) {
  uint64_t p = 1;
  for (int64_t x : v) p *= static_cast<uint64_t>(x);
  return p;
}

}  // namespace

uint64_t ConvPlan::input_bytes() const {
  return Product(desc_.InputDims()) * PrimitiveByteWidth(desc_.dtype);
}
uint64_t ConvPlan::filter_bytes() const {
  return Product(desc_.FilterDims()) * PrimitiveByteWidth(desc_.dtype);
}
uint64_t ConvPlan::output_bytes() const {
  return Product(desc_.OutputDims()) * PrimitiveByteWidth(desc_.dtype);
}

StatusOr<ConvAlgorithm> ConvPlan::DefaultAlgorithm(uint64_t max_workspace_bytes) const {
  KILN_ASSIGN_OR_RETURN(std::vector<ConvAlgorithm> algorithms,
                        ListAlgorithms(max_workspace_bytes));
  return algorithms.front();  // ListAlgorithms never returns an empty list
}

#if !defined(KILN_HAVE_CUDNN_HEADERS)

struct ConvPlan::Descriptors {};
ConvPlan::ConvPlan(const ConvDesc& desc, LibraryHandles& handles)
    : desc_(desc), handles_(handles) {}
ConvPlan::~ConvPlan() = default;
StatusOr<std::unique_ptr<ConvPlan>> ConvPlan::Create(const ConvDesc& desc, CudaDevice&) {
  KILN_RETURN_IF_ERROR(ValidateConvDesc(desc));
  return Unimplemented("conv: kiln was built without cuDNN headers (cudnn.h)");
}
StatusOr<std::vector<ConvAlgorithm>> ConvPlan::ListAlgorithms(uint64_t) const {
  return Unimplemented("conv: built without cuDNN");
}
Status ConvPlan::RunSplit(const ConvAlgorithm&, const ConvBuffers&, runtime::DeviceMemory,
                          runtime::Stream&) const {
  return Unimplemented("conv: built without cuDNN");
}
Status ConvPlan::Run(const ConvAlgorithm&, const ConvBuffers&, runtime::DeviceMemory,
                     runtime::Stream&) const {
  return Unimplemented("conv: built without cuDNN");
}

#else  // KILN_HAVE_CUDNN_HEADERS

namespace {

cudnnDataType_t CudnnType(PrimitiveType t) {
  switch (t) {
    case PrimitiveType::kF16: return CUDNN_DATA_HALF;
    case PrimitiveType::kBF16: return CUDNN_DATA_BFLOAT16;
    case PrimitiveType::kF64: return CUDNN_DATA_DOUBLE;
    default: return CUDNN_DATA_FLOAT;
  }
}

const char* FwdAlgoName(int a) {
  static const char* kNames[] = {"IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT",
                                 "FFT", "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
  return a >= 0 && a < 8 ? kNames[a] : "?";
}
const char* BwdDataAlgoName(int a) {
  static const char* kNames[] = {"ALGO_0", "ALGO_1", "FFT", "FFT_TILING", "WINOGRAD",
                                 "WINOGRAD_NONFUSED"};
  return a >= 0 && a < 6 ? kNames[a] : "?";
}
const char* BwdFilterAlgoName(int a) {
  static const char* kNames[] = {"ALGO_0", "ALGO_1", "FFT", "ALGO_3", "WINOGRAD",
                                 "WINOGRAD_NONFUSED", "FFT_TILING"};
  return a >= 0 && a < 7 ? kNames[a] : "?";
}
const char* MathName(int m) {
  switch (m) {
    case CUDNN_DEFAULT_MATH: return "default_math";
    case CUDNN_TENSOR_OP_MATH: return "tensor_op";
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION: return "tensor_op_conv";
    case CUDNN_FMA_MATH: return "fma";
  }
  return "?";
}

// Whether a math type may use tensor cores for this data type. For f32, CUDNN_DEFAULT_MATH
// permits TF32 on Ampere and later.
bool UsesTensorOps(int math, PrimitiveType t) {
  if (math == CUDNN_FMA_MATH) return false;
  if (math == CUDNN_DEFAULT_MATH) return t == PrimitiveType::kF32 || t == PrimitiveType::kF16 ||
                                         t == PrimitiveType::kBF16;
  return true;
}

}  // namespace

struct ConvPlan::Descriptors {
  const CudnnApi* api = nullptr;
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnActivationDescriptor_t act = nullptr;

  ~Descriptors() {
    if (api == nullptr) return;
    for (cudnnTensorDescriptor_t t : {x, y, bias}) {
      if (t != nullptr) api->cudnnDestroyTensorDescriptor(t);
    }
    if (w != nullptr) api->cudnnDestroyFilterDescriptor(w);
    if (conv != nullptr) api->cudnnDestroyConvolutionDescriptor(conv);
    if (act != nullptr) api->cudnnDestroyActivationDescriptor(act);
  }
};

ConvPlan::ConvPlan(const ConvDesc& desc, LibraryHandles& handles)
    : desc_(desc), handles_(handles), d_(std::make_unique<Descriptors>()) {}
ConvPlan::~ConvPlan() = default;

StatusOr<std::unique_ptr<ConvPlan>> ConvPlan::Create(const ConvDesc& desc, CudaDevice& device) {
  KILN_RETURN_IF_ERROR(ValidateConvDesc(desc));
  KILN_ASSIGN_OR_RETURN(LibraryHandles * handles, LibraryHandles::ForDevice(device));
  std::unique_ptr<ConvPlan> plan(new ConvPlan(desc, *handles));
  KILN_RETURN_IF_ERROR(plan->Build().WithContext(desc.ToString()));
  return plan;
}

Status ConvPlan::Build() {
  KILN_ASSIGN_OR_RETURN(d_->api, handles_.cudnn_api());
  const CudnnApi& api = *d_->api;
  auto check = [&](cudnnStatus_t s, const char* call) { return CudnnStatus(api, s, call); };
  const ConvDesc& c = desc_;
  const int n = c.spatial_dims();
  // 1-D convolutions run as 2-D ones over a unit height (cuDNN needs at least 4-D tensors).
  const bool lift = n == 1;
  auto spatial = [&](const std::vector<int64_t>& v, int64_t unit) {
    std::vector<int> out;
    if (lift) out.push_back(static_cast<int>(unit));
    for (int64_t x : v) out.push_back(static_cast<int>(x));
    return out;
  };
  auto param = [&](const std::vector<int64_t>& v, int64_t fallback) {
    std::vector<int64_t> full(n, fallback);
    if (!v.empty()) full = v;
    return spatial(full, fallback);
  };
  const cudnnTensorFormat_t format =
      c.input_layout == ConvLayout::kChannelsLast ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  const cudnnDataType_t type = CudnnType(c.dtype);

  auto tensor = [&](cudnnTensorDescriptor_t* t, int64_t outer, int64_t channels,
                    const std::vector<int64_t>& sp) -> Status {
    KILN_RETURN_IF_ERROR(check(api.cudnnCreateTensorDescriptor(t), "cudnnCreateTensorDescriptor"));
    std::vector<int> dims = {static_cast<int>(outer), static_cast<int>(channels)};
    for (int s : spatial(sp, 1)) dims.push_back(s);
    return check(api.cudnnSetTensorNdDescriptorEx(*t, format, type, static_cast<int>(dims.size()),
                                                  dims.data()),
                 "cudnnSetTensorNdDescriptorEx");
  };
  for (int64_t v : {c.batch, c.input_features, c.output_features}) {
    if (v > INT32_MAX) return Unimplemented("conv: a dimension exceeds 2^31-1");
  }
  KILN_RETURN_IF_ERROR(tensor(&d_->x, c.batch, c.input_features, c.input_spatial));
  KILN_RETURN_IF_ERROR(tensor(&d_->y, c.batch, c.output_features, c.output_spatial));

  KILN_RETURN_IF_ERROR(check(api.cudnnCreateFilterDescriptor(&d_->w), "cudnnCreateFilterDescriptor"));
  std::vector<int> wdims = {static_cast<int>(c.output_features),
                            static_cast<int>(c.input_features / c.feature_group_count)};
  for (int s : spatial(c.filter_spatial, 1)) wdims.push_back(s);
  KILN_RETURN_IF_ERROR(check(api.cudnnSetFilterNdDescriptor(d_->w, type, format,
                                                            static_cast<int>(wdims.size()),
                                                            wdims.data()),
                             "cudnnSetFilterNdDescriptor"));

  KILN_RETURN_IF_ERROR(
      check(api.cudnnCreateConvolutionDescriptor(&d_->conv), "cudnnCreateConvolutionDescriptor"));
  std::vector<int> pad = param(c.padding_low, 0), stride = param(c.strides, 1),
                   dilation = param(c.dilations, 1);
  const cudnnDataType_t compute =
      c.dtype == PrimitiveType::kF64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  KILN_RETURN_IF_ERROR(check(
      api.cudnnSetConvolutionNdDescriptor(d_->conv, static_cast<int>(pad.size()), pad.data(),
                                          stride.data(), dilation.data(), CUDNN_CROSS_CORRELATION,
                                          compute),
      "cudnnSetConvolutionNdDescriptor"));
  if (c.feature_group_count > 1) {
    KILN_RETURN_IF_ERROR(check(api.cudnnSetConvolutionGroupCount(
                                   d_->conv, static_cast<int>(c.feature_group_count)),
                               "cudnnSetConvolutionGroupCount"));
  }

  // cuDNN must agree on the output size (it would with the padding rule of conv_desc.h).
  std::vector<int> out(pad.size() + 2);
  KILN_RETURN_IF_ERROR(check(api.cudnnGetConvolutionNdForwardOutputDim(
                                 d_->conv, d_->x, d_->w, static_cast<int>(out.size()), out.data()),
                             "cudnnGetConvolutionNdForwardOutputDim"));
  std::vector<int> want = {static_cast<int>(c.batch), static_cast<int>(c.output_features)};
  for (int s : spatial(c.output_spatial, 1)) want.push_back(s);
  if (out != want) {
    return Internal("conv: cuDNN computes output dims [", StrJoin(out, ","), "], expected [",
                    StrJoin(want, ","), "]");
  }

  if (c.fused()) {
    // One bias value per output feature: a [1, K, 1, ...] tensor.
    KILN_RETURN_IF_ERROR(
        check(api.cudnnCreateTensorDescriptor(&d_->bias), "cudnnCreateTensorDescriptor(bias)"));
    std::vector<int> bdims(wdims.size(), 1);
    bdims[1] = static_cast<int>(c.output_features);
    KILN_RETURN_IF_ERROR(check(api.cudnnSetTensorNdDescriptorEx(d_->bias, CUDNN_TENSOR_NCHW, type,
                                                                static_cast<int>(bdims.size()),
                                                                bdims.data()),
                               "cudnnSetTensorNdDescriptorEx(bias)"));
    KILN_RETURN_IF_ERROR(
        check(api.cudnnCreateActivationDescriptor(&d_->act), "cudnnCreateActivationDescriptor"));
    const cudnnActivationMode_t mode = c.activation == ConvActivation::kRelu
                                           ? CUDNN_ACTIVATION_RELU
                                           : CUDNN_ACTIVATION_IDENTITY;
    KILN_RETURN_IF_ERROR(check(
        api.cudnnSetActivationDescriptor(d_->act, mode, CUDNN_NOT_PROPAGATE_NAN, 0.0),
        "cudnnSetActivationDescriptor"));
    if (c.has_bias || c.activation != ConvActivation::kNone) {
      // The split fallback's kernel. A failure here (no NVRTC) only removes the split
      // algorithms; cuDNN's fused call may still run.
      epilogue_status_ = [&]() -> Status {
        NvrtcRequest request;
        request.source = ConvEpilogueKernelSource();
        request.program_name = "kiln_conv_epilogue.cu";
        KILN_ASSIGN_OR_RETURN(runtime::Module * module,
                              LoadLibraryModule(handles_.device(), request));
        const char* name = c.dtype == PrimitiveType::kF64    ? "kiln_conv_epilogue_f64"
                           : c.dtype == PrimitiveType::kF16  ? "kiln_conv_epilogue_f16"
                           : c.dtype == PrimitiveType::kBF16 ? "kiln_conv_epilogue_bf16"
                                                             : "kiln_conv_epilogue_f32";
        KILN_ASSIGN_OR_RETURN(epilogue_, module->GetKernel(name));
        return OkStatus();
      }();
    }
  }
  return OkStatus();
}

StatusOr<std::vector<ConvAlgorithm>> ConvPlan::ListAlgorithms(uint64_t max_workspace_bytes) const {
  const CudnnApi& api = *d_->api;
  KILN_ASSIGN_OR_RETURN(cudnnHandle_t handle, handles_.CudnnForQueries());
  KILN_RETURN_IF_ERROR(handles_.device().Activate());
  std::unique_lock<std::mutex> query_lock = handles_.QueryLock();
  std::lock_guard<std::mutex> lock(run_mu_);  // the math type below is plan state
  const bool highest = desc_.dtype == PrimitiveType::kF32 && desc_.precision == Precision::kHighest;
  const bool half = desc_.dtype == PrimitiveType::kF16 || desc_.dtype == PrimitiveType::kBF16;
  const cudnnMathType_t policy =
      highest ? CUDNN_FMA_MATH : (half ? CUDNN_TENSOR_OP_MATH : CUDNN_DEFAULT_MATH);

  struct Candidate {
    int algo, math;
    bool deterministic;
    bool split;
  };
  std::vector<Candidate> candidates;
  KILN_RETURN_IF_ERROR(CudnnStatus(api, api.cudnnSetConvolutionMathType(d_->conv, policy),
                                   "cudnnSetConvolutionMathType"));
  auto collect = [&](const auto* perf, int count, bool split) {
    for (int i = 0; i < count; ++i) {
      if (perf[i].status != CUDNN_STATUS_SUCCESS) continue;
      int math = perf[i].mathType;
      if (highest) {
        if (math == CUDNN_TENSOR_OP_MATH || math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) continue;
        math = CUDNN_FMA_MATH;
      }
      candidates.push_back({static_cast<int>(perf[i].algo), math,
                            perf[i].determinism == CUDNN_DETERMINISTIC, split});
    }
  };
  int max_count = 0, returned = 0;
  switch (desc_.kind) {
    case ConvKind::kForward: {
      KILN_RETURN_IF_ERROR(CudnnStatus(api, api.cudnnGetConvolutionForwardAlgorithmMaxCount(handle, &max_count),
                                       "cudnnGetConvolutionForwardAlgorithmMaxCount"));
      std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(std::max(max_count, 1));
      KILN_RETURN_IF_ERROR(CudnnStatus(
          api,
          api.cudnnGetConvolutionForwardAlgorithm_v7(handle, d_->x, d_->w, d_->conv, d_->y,
                                                     static_cast<int>(perf.size()), &returned,
                                                     perf.data()),
          "cudnnGetConvolutionForwardAlgorithm_v7"));
      if (!desc_.fused()) {
        collect(perf.data(), returned, /*split=*/false);
      } else {
        // See the header comment: the fused call first for f32/f16, last otherwise; the split
        // algorithms only where no epilogue kernel is needed or it loaded.
        // cuDNN's fused call needs a bias and takes no f64 here.
        const bool fused_call_ok = desc_.has_bias && desc_.dtype != PrimitiveType::kF64;
        const Candidate fused_call = {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, policy,
                                      true, false};
        const bool fused_first =
            desc_.dtype == PrimitiveType::kF32 || desc_.dtype == PrimitiveType::kF16;
        if (fused_call_ok && fused_first) candidates.push_back(fused_call);
        if (epilogue_ != nullptr || (!desc_.has_bias && desc_.activation == ConvActivation::kNone)) {
          collect(perf.data(), returned, /*split=*/true);
        }
        if (fused_call_ok && !fused_first) candidates.push_back(fused_call);
      }
      break;
    }
    case ConvKind::kBackwardData: {
      KILN_RETURN_IF_ERROR(CudnnStatus(api, api.cudnnGetConvolutionBackwardDataAlgorithmMaxCount(handle, &max_count),
                                       "cudnnGetConvolutionBackwardDataAlgorithmMaxCount"));
      std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perf(std::max(max_count, 1));
      KILN_RETURN_IF_ERROR(CudnnStatus(
          api,
          api.cudnnGetConvolutionBackwardDataAlgorithm_v7(handle, d_->w, d_->y, d_->conv, d_->x,
                                                          static_cast<int>(perf.size()),
                                                          &returned, perf.data()),
          "cudnnGetConvolutionBackwardDataAlgorithm_v7"));
      collect(perf.data(), returned, /*split=*/false);
      break;
    }
    case ConvKind::kBackwardFilter: {
      KILN_RETURN_IF_ERROR(CudnnStatus(api, api.cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(handle, &max_count),
                                       "cudnnGetConvolutionBackwardFilterAlgorithmMaxCount"));
      std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perf(std::max(max_count, 1));
      KILN_RETURN_IF_ERROR(CudnnStatus(
          api,
          api.cudnnGetConvolutionBackwardFilterAlgorithm_v7(handle, d_->x, d_->y, d_->conv,
                                                            d_->w, static_cast<int>(perf.size()),
                                                            &returned, perf.data()),
          "cudnnGetConvolutionBackwardFilterAlgorithm_v7"));
      collect(perf.data(), returned, /*split=*/false);
      break;
    }
  }

  std::vector<ConvAlgorithm> algorithms;
  std::set<std::tuple<int, int, bool>> seen;
  for (const Candidate& cand : candidates) {
    if (!seen.insert({cand.algo, cand.math, cand.split}).second) continue;
    // The workspace for exactly this (algorithm, math type).
    if (api.cudnnSetConvolutionMathType(d_->conv, static_cast<cudnnMathType_t>(cand.math)) !=
        CUDNN_STATUS_SUCCESS) {
      continue;
    }
    size_t bytes = 0;
    cudnnStatus_t s = CUDNN_STATUS_SUCCESS;
    const char* name = "?";
    const char* kind = "fwd";
    switch (desc_.kind) {
      case ConvKind::kForward:
        s = api.cudnnGetConvolutionForwardWorkspaceSize(
            handle, d_->x, d_->w, d_->conv, d_->y,
            static_cast<cudnnConvolutionFwdAlgo_t>(cand.algo), &bytes);
        name = FwdAlgoName(cand.algo);
        break;
      case ConvKind::kBackwardData:
        s = api.cudnnGetConvolutionBackwardDataWorkspaceSize(
            handle, d_->w, d_->y, d_->conv, d_->x,
            static_cast<cudnnConvolutionBwdDataAlgo_t>(cand.algo), &bytes);
        name = BwdDataAlgoName(cand.algo);
        kind = "bwd_data";
        break;
      case ConvKind::kBackwardFilter:
        s = api.cudnnGetConvolutionBackwardFilterWorkspaceSize(
            handle, d_->x, d_->y, d_->conv, d_->w,
            static_cast<cudnnConvolutionBwdFilterAlgo_t>(cand.algo), &bytes);
        name = BwdFilterAlgoName(cand.algo);
        kind = "bwd_filter";
        break;
    }
    if (s != CUDNN_STATUS_SUCCESS || bytes > max_workspace_bytes) continue;
    ConvAlgorithm a;
    a.kind = desc_.kind;
    a.index = static_cast<int>(algorithms.size());
    a.algo = cand.algo;
    a.math_type = cand.math;
    a.workspace_bytes = bytes;
    a.deterministic = cand.deterministic;
    a.tensor_ops = UsesTensorOps(cand.math, desc_.dtype);
    a.split_epilogue = cand.split;
    a.description = StrCat("cudnn ", kind, "#", a.index, " ", name, " ", MathName(cand.math),
                           " ws=", bytes, a.deterministic ? " det" : " nondet",
                           !desc_.fused() ? "" : (cand.split ? " split" : " fused"));
    algorithms.push_back(std::move(a));
  }
  if (algorithms.empty()) {
    return Unimplemented("cuDNN has no algorithm for ", desc_.ToString(), " within ",
                         max_workspace_bytes, " bytes of workspace",
                         epilogue_status_.ok() ? ""
                                               : StrCat(" (split epilogue unavailable: ",
                                                        epilogue_status_.message(), ")"));
  }
  return algorithms;
}

Status ConvPlan::Run(const ConvAlgorithm& algorithm, const ConvBuffers& buffers,
                     runtime::DeviceMemory workspace, runtime::Stream& stream) const {
  const CudnnApi& api = *d_->api;
  if (algorithm.kind != desc_.kind) {
    return InvalidArgument("ConvPlan::Run: a ", ConvKindName(algorithm.kind),
                           " algorithm for a ", ConvKindName(desc_.kind), " plan");
  }
  KILN_RETURN_IF_ERROR(CheckBuffer(buffers.x, input_bytes(), "conv x"));
  KILN_RETURN_IF_ERROR(CheckBuffer(buffers.w, filter_bytes(), "conv w"));
  KILN_RETURN_IF_ERROR(CheckBuffer(buffers.y, output_bytes(), "conv y"));
  KILN_RETURN_IF_ERROR(CheckBuffer(workspace, algorithm.workspace_bytes, "conv workspace"));
  if (desc_.has_bias) {
    KILN_RETURN_IF_ERROR(CheckBuffer(
        buffers.bias, static_cast<uint64_t>(desc_.output_features) * PrimitiveByteWidth(desc_.dtype),
        "conv bias"));
  }
  if (desc_.side_input_scale != 0 && !buffers.side_input.is_null()) {
    KILN_RETURN_IF_ERROR(CheckBuffer(buffers.side_input, output_bytes(), "conv side input"));
  }
  if (algorithm.split_epilogue) {
    if (!desc_.fused() || desc_.kind != ConvKind::kForward) {
      return InvalidArgument("ConvPlan::Run: a split algorithm for an unfused plan");
    }
    return RunSplit(algorithm, buffers, workspace, stream);
  }
  KILN_ASSIGN_OR_RETURN(cudnnHandle_t handle, handles_.Cudnn(stream));
  KILN_RETURN_IF_ERROR(handles_.device().Activate());

  // Scaling factors: double for double convolutions, float otherwise.
  double alpha_d = desc_.alpha, beta_d = 0, alpha2_d = desc_.side_input_scale;
  float alpha_f = static_cast<float>(alpha_d), beta_f = 0, alpha2_f = static_cast<float>(alpha2_d);
  const bool dbl = desc_.dtype == PrimitiveType::kF64;
  const void* alpha = dbl ? static_cast<const void*>(&alpha_d) : &alpha_f;
  const void* beta = dbl ? static_cast<const void*>(&beta_d) : &beta_f;
  const void* alpha2 = dbl ? static_cast<const void*>(&alpha2_d) : &alpha2_f;

  std::lock_guard<std::mutex> lock(run_mu_);
  KILN_RETURN_IF_ERROR(CudnnStatus(
      api,
      api.cudnnSetConvolutionMathType(d_->conv, static_cast<cudnnMathType_t>(algorithm.math_type)),
      "cudnnSetConvolutionMathType"));
  const std::string what = StrCat("(", algorithm.description, ")");
  switch (desc_.kind) {
    case ConvKind::kForward: {
      const auto algo = static_cast<cudnnConvolutionFwdAlgo_t>(algorithm.algo);
      if (desc_.fused()) {
        const runtime::DeviceMemory z =
            buffers.side_input.is_null() ? buffers.y : buffers.side_input;
        return CudnnStatus(
            api,
            api.cudnnConvolutionBiasActivationForward(
                handle, alpha, d_->x, buffers.x.ptr, d_->w, buffers.w.ptr, d_->conv, algo,
                workspace.ptr, algorithm.workspace_bytes, alpha2, d_->y, z.ptr, d_->bias,
                buffers.bias.ptr, d_->act, d_->y, buffers.y.ptr),
            StrCat("cudnnConvolutionBiasActivationForward", what));
      }
      return CudnnStatus(api,
                         api.cudnnConvolutionForward(handle, alpha, d_->x, buffers.x.ptr, d_->w,
                                                     buffers.w.ptr, d_->conv, algo, workspace.ptr,
                                                     algorithm.workspace_bytes, beta, d_->y,
                                                     buffers.y.ptr),
                         StrCat("cudnnConvolutionForward", what));
    }
    case ConvKind::kBackwardData:
      return CudnnStatus(
          api,
          api.cudnnConvolutionBackwardData(
              handle, alpha, d_->w, buffers.w.ptr, d_->y, buffers.y.ptr, d_->conv,
              static_cast<cudnnConvolutionBwdDataAlgo_t>(algorithm.algo), workspace.ptr,
              algorithm.workspace_bytes, beta, d_->x, buffers.x.ptr),
          StrCat("cudnnConvolutionBackwardData", what));
    case ConvKind::kBackwardFilter:
      return CudnnStatus(
          api,
          api.cudnnConvolutionBackwardFilter(
              handle, alpha, d_->x, buffers.x.ptr, d_->y, buffers.y.ptr, d_->conv,
              static_cast<cudnnConvolutionBwdFilterAlgo_t>(algorithm.algo), workspace.ptr,
              algorithm.workspace_bytes, beta, d_->w, buffers.w.ptr),
          StrCat("cudnnConvolutionBackwardFilter", what));
  }
  return Internal("conv: unknown kind");
}

Status ConvPlan::RunSplit(const ConvAlgorithm& algorithm, const ConvBuffers& buffers,
                          runtime::DeviceMemory workspace, runtime::Stream& stream) const {
  const CudnnApi& api = *d_->api;
  const bool epilogue = desc_.has_bias || desc_.activation != ConvActivation::kNone;
  if (epilogue && epilogue_ == nullptr) {
    return FailedPrecondition("conv: split epilogue kernel unavailable: ",
                              epilogue_status_.message());
  }
  const uint64_t y_bytes = output_bytes();
  // The side input enters through cuDNN's beta: y = alpha * conv + beta * y, so a separate z is
  // first copied into y. A z that overlaps y other than exactly is unsupported.
  const bool side = desc_.side_input_scale != 0;
  if (side && !buffers.side_input.is_null() && buffers.side_input.ptr != buffers.y.ptr) {
    const auto* z = static_cast<const char*>(buffers.side_input.ptr);
    const auto* y = static_cast<const char*>(buffers.y.ptr);
    if (z < y + y_bytes && y < z + y_bytes) {
      return InvalidArgument("conv: the side input partially overlaps the output");
    }
    KILN_RETURN_IF_ERROR(stream.MemcpyDeviceToDevice(buffers.y, buffers.side_input, y_bytes));
  }
  KILN_ASSIGN_OR_RETURN(cudnnHandle_t handle, handles_.Cudnn(stream));
  KILN_RETURN_IF_ERROR(handles_.device().Activate());
  double alpha_d = desc_.alpha, beta_d = side ? desc_.side_input_scale : 0.0;
  float alpha_f = static_cast<float>(alpha_d), beta_f = static_cast<float>(beta_d);
  const bool dbl = desc_.dtype == PrimitiveType::kF64;
  const void* alpha = dbl ? static_cast<const void*>(&alpha_d) : &alpha_f;
  const void* beta = dbl ? static_cast<const void*>(&beta_d) : &beta_f;
  {
    std::lock_guard<std::mutex> lock(run_mu_);
    KILN_RETURN_IF_ERROR(CudnnStatus(
        api,
        api.cudnnSetConvolutionMathType(d_->conv,
                                        static_cast<cudnnMathType_t>(algorithm.math_type)),
        "cudnnSetConvolutionMathType"));
    KILN_RETURN_IF_ERROR(CudnnStatus(
        api,
        api.cudnnConvolutionForward(handle, alpha, d_->x, buffers.x.ptr, d_->w, buffers.w.ptr,
                                    d_->conv,
                                    static_cast<cudnnConvolutionFwdAlgo_t>(algorithm.algo),
                                    workspace.ptr, algorithm.workspace_bytes, beta, d_->y,
                                    buffers.y.ptr),
        StrCat("cudnnConvolutionForward(", algorithm.description, ")")));
  }
  if (!epilogue) return OkStatus();

  const uint64_t n = Product(desc_.OutputDims());
  const uint64_t inner = desc_.output_layout == ConvLayout::kChannelsLast
                             ? 1
                             : Product(desc_.output_spatial);
  runtime::KernelArgs args;
  args.Add(buffers.y);
  args.Add(desc_.has_bias ? buffers.bias : runtime::DeviceMemory());
  args.Add(static_cast<unsigned long long>(n));
  args.Add(static_cast<unsigned long long>(inner));
  args.Add(static_cast<unsigned long long>(desc_.output_features));
  args.Add(static_cast<int>(desc_.activation == ConvActivation::kRelu ? 1 : 0));
  const uint32_t block = 256;
  const uint64_t max_blocks = std::max<uint64_t>(
      1, static_cast<uint64_t>(handles_.device().description().multiprocessor_count) * 16);
  runtime::LaunchDims dims;
  dims.block.x = block;
  dims.grid.x = static_cast<uint32_t>(std::min<uint64_t>((n + block - 1) / block, max_blocks));
  return stream.Launch(*epilogue_, dims, args);
}

#endif  // KILN_HAVE_CUDNN_HEADERS

}  // namespace kiln::cuda::libs
