#include "kiln/tools/module_stats.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

#include "kiln/hlo/computation.h"

namespace kiln {

namespace {

bool IsTranscendental(HloOpcode op) {
  switch (op) {
    case HloOpcode::kExp:
    case HloOpcode::kExpm1:
    case HloOpcode::kLog:
    case HloOpcode::kLog1p:
    case HloOpcode::kLogistic:
    case HloOpcode::kTanh:
    case HloOpcode::kSin:
    case HloOpcode::kCos:
    case HloOpcode::kTan:
    case HloOpcode::kAtan2:
    case HloOpcode::kPower:
    case HloOpcode::kSqrt:
    case HloOpcode::kRsqrt:
    case HloOpcode::kCbrt:
    case HloOpcode::kErf:
    case HloOpcode::kAcos:
    case HloOpcode::kAcosh:
    case HloOpcode::kAsin:
    case HloOpcode::kAsinh:
    case HloOpcode::kAtan:
    case HloOpcode::kAtanh:
    case HloOpcode::kCosh:
    case HloOpcode::kSinh:
      return true;
    default:
      return false;
  }
}

struct Cost {
  double flops = 0;
  double transcendentals = 0;
  Cost& operator+=(const Cost& o) {
    flops += o.flops;
    transcendentals += o.transcendentals;
    return *this;
  }
  Cost operator*(double k) const { return {flops * k, transcendentals * k}; }
};

int64_t Elements(const Shape& s) {
  if (s.IsTuple()) {
    int64_t n = 0;
    for (const Shape& e : s.tuple_shapes()) n += Elements(e);
    return n;
  }
  return s.IsArray() ? s.num_elements() : 0;
}

// Elements of the first array leaf (variadic reduce/sort results are tuples of equal shapes).
int64_t FirstLeafElements(const Shape& s) {
  if (s.IsTuple()) return s.tuple_shapes().empty() ? 0 : FirstLeafElements(s.tuple_shapes(0));
  return s.IsArray() ? s.num_elements() : 0;
}

class CostModel {
 public:
  Cost Of(const HloComputation* c) {
    if (!c) return {};
    if (auto it = memo_.find(c); it != memo_.end()) return it->second;
    memo_[c] = {};  // guards against (invalid) recursion
    Cost total;
    for (const HloInstruction* i : c->instructions()) total += Of(*i);
    memo_[c] = total;
    return total;
  }
  int64_t while_loops = 0;

 private:
  // The cost of one application of a scalar computation, at least one flop.
  Cost PerApplication(const HloComputation* c) {
    Cost k = Of(c);
    if (k.flops + k.transcendentals < 1) k.flops = 1;
    return k;
  }

  Cost Of(const HloInstruction& i) {
    const Shape& shape = i.shape();
    HloOpcode op = i.opcode();
    switch (op) {
      case HloOpcode::kDot: {
        double contracting = 1;
        if (const auto& dn = i.attrs().dot_dimension_numbers)
          for (int64_t d : dn->lhs_contracting_dimensions)
            if (d < i.operand(0)->shape().rank()) contracting *= i.operand(0)->shape().dimensions(d);
        return {2.0 * Elements(shape) * contracting, 0};
      }
      case HloOpcode::kRaggedDot: {
        double contracting = 1;
        if (const auto& dn = i.attrs().dot_dimension_numbers)
          for (int64_t d : dn->lhs_contracting_dimensions)
            if (d < i.operand(0)->shape().rank()) contracting *= i.operand(0)->shape().dimensions(d);
        return {2.0 * Elements(shape) * contracting, 0};
      }
      case HloOpcode::kConvolution: {
        const Shape& kernel = i.operand(1)->shape();
        const auto& dn = i.attrs().convolution_dimension_numbers;
        if (!dn || !kernel.IsArray() || dn->kernel_output_feature_dimension >= kernel.rank()) return {};
        int64_t out_features = kernel.dimensions(dn->kernel_output_feature_dimension);
        if (out_features == 0) return {};
        return {2.0 * Elements(shape) * (static_cast<double>(kernel.num_elements()) / out_features), 0};
      }
      case HloOpcode::kConvert:
      case HloOpcode::kCopy:
      case HloOpcode::kBitcastConvert:
        return {};
      case HloOpcode::kReduce:
        return PerApplication(i.to_apply()) * static_cast<double>(FirstLeafElements(i.operand(0)->shape()));
      case HloOpcode::kReduceWindow: {
        double window = 1;
        if (i.attrs().window)
          for (const WindowDimension& d : i.attrs().window->dimensions) window *= d.size;
        return PerApplication(i.to_apply()) * (FirstLeafElements(shape) * window);
      }
      case HloOpcode::kMap:
        return PerApplication(i.to_apply()) * static_cast<double>(Elements(shape));
      case HloOpcode::kSort: {
        const Shape& keys = i.operand(0)->shape();
        if (!keys.IsArray() || keys.rank() == 0 || i.attrs().dimensions.empty()) return {};
        int64_t dim = i.attrs().dimensions[0];
        if (dim >= keys.rank()) return {};
        double n = static_cast<double>(keys.dimensions(dim));
        double rows = n > 0 ? keys.num_elements() / n : 0;
        double compares = n > 1 ? n * std::ceil(std::log2(n)) : 0;
        return PerApplication(i.to_apply()) * (rows * compares);
      }
      case HloOpcode::kFusion:
      case HloOpcode::kCall:
      case HloOpcode::kAsyncStart: {
        Cost c;
        for (const HloComputation* callee : i.called_computations()) c += Of(callee);
        return c;
      }
      case HloOpcode::kWhile: {
        ++while_loops;
        Cost c;
        for (const HloComputation* callee : i.called_computations()) c += Of(callee);
        return c;
      }
      case HloOpcode::kConditional: {
        Cost best;
        for (const HloComputation* callee : i.called_computations()) {
          Cost c = Of(callee);
          if (c.flops + c.transcendentals > best.flops + best.transcendentals) best = c;
        }
        return best;
      }
      default:
        break;
    }
    if (IsElementwiseOpcode(op) && op != HloOpcode::kMap) {
      double n = static_cast<double>(Elements(shape));
      return IsTranscendental(op) ? Cost{0, n} : Cost{n, 0};
    }
    return {};
  }

  std::unordered_map<const HloComputation*, Cost> memo_;
};

int64_t Bytes(const Shape& s) { return s.IsTuple() || s.IsArray() ? s.byte_size() : 0; }

}  // namespace

ModuleStats ComputeModuleStats(const HloModule& module) {
  ModuleStats stats;
  std::map<std::string, int64_t> histogram;
  for (const HloComputation* c : module.computations()) {
    ++stats.computations;
    for (const HloInstruction* i : c->instructions()) {
      ++stats.instructions;
      ++histogram[std::string(HloOpcodeString(i->opcode()))];
    }
  }
  stats.op_histogram.assign(histogram.begin(), histogram.end());
  std::stable_sort(stats.op_histogram.begin(), stats.op_histogram.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  if (const HloComputation* entry = module.entry_computation()) {
    for (const HloInstruction* p : entry->parameter_instructions()) stats.parameter_bytes += Bytes(p->shape());
    if (entry->root_instruction()) stats.output_bytes = Bytes(entry->root_instruction()->shape());
    CostModel model;
    Cost cost = model.Of(entry);
    stats.flops = cost.flops;
    stats.transcendentals = cost.transcendentals;
    stats.while_loops = model.while_loops;
  }
  return stats;
}

}  // namespace kiln
