// HloInstruction: one operation of an HLO computation.
//
// An instruction owns its shape, its typed attributes (HloAttributes, one field family per
// attribute kind of XLA's text format) and, for constants, its literal. It points to its
// operands and to the computations it calls; both are owned by the enclosing computation and
// module. Users and control edges are maintained by the mutators below.
//
// Called computations by opcode (roles in called_computations()):
//   reduce, reduce-window, map, sort, scatter, all-reduce, reduce-scatter, call, scan,
//   custom-call (to_apply=)        -> [to_apply]
//   while                          -> [condition, body]
//   conditional                    -> branch computations in order ([true, false] for a pred)
//   select-and-scatter             -> [select, scatter]
//   fusion, async-start/update/done, custom-call (called_computations=) -> their list
//
// Thread safety: none; a module is built and mutated by one thread at a time, and may be read
// concurrently once built.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kiln/hlo/attributes.h"
#include "kiln/hlo/literal.h"
#include "kiln/hlo/opcode.h"
#include "kiln/hlo/shape.h"

namespace kiln {

class HloComputation;

// A position in HLO text (1-based; 0 = unknown).
struct SourceLocation {
  int line = 0;
  int column = 0;
};

// Per-opcode attributes. Only the fields meaningful for an instruction's opcode are read; the
// rest keep their defaults. Defaults are XLA's defaults, so the printer omits them.
struct HloAttributes {
  // dimensions={...}: broadcast, transpose, reduce, reverse, concatenate (one), sort (one),
  // map, all-gather/all-to-all/reduce-scatter (one), get/set-dimension-size (one), scan (one).
  std::vector<int64_t> dimensions;
  int64_t tuple_index = 0;     // get-tuple-element index=
  int64_t iota_dimension = 0;  // iota iota_dimension=
  std::optional<int64_t> inferred_dimension;  // reshape inferred_dimension=

  std::vector<SliceDimension> slice;          // slice slice={[a:b:s], ...}
  std::vector<int64_t> dynamic_slice_sizes;   // dynamic-slice dynamic_slice_sizes={...}
  std::vector<PaddingDimension> padding;      // pad padding=...

  std::optional<Window> window;               // convolution, reduce-window, select-and-scatter
  std::optional<ConvolutionDimensionNumbers> convolution_dimension_numbers;  // dim_labels=
  int64_t feature_group_count = 1;
  int64_t batch_group_count = 1;

  std::optional<DotDimensionNumbers> dot_dimension_numbers;
  std::optional<RaggedDotDimensionNumbers> ragged_dot_dimension_numbers;
  PrecisionConfig precision_config;            // operand_precision=, algorithm=
  std::vector<SparsityDescriptor> sparsity;    // sparsity=

  std::optional<GatherDimensionNumbers> gather_dimension_numbers;
  std::vector<int64_t> gather_slice_sizes;     // gather slice_sizes=
  std::optional<ScatterDimensionNumbers> scatter_dimension_numbers;
  bool indices_are_sorted = false;
  bool unique_indices = false;

  ComparisonDirection comparison_direction = ComparisonDirection::kEq;  // compare direction=
  ComparisonType comparison_type = ComparisonType::kDefault;           // compare type=
  bool is_stable = false;                                               // sort is_stable=

  FftType fft_type = FftType::kFft;
  std::vector<int64_t> fft_length;

  RandomDistribution distribution = RandomDistribution::kUniform;  // rng distribution=
  RandomAlgorithm rng_algorithm = RandomAlgorithm::kDefault;       // rng-bit-generator algorithm=

  int64_t exponent_bits = 0;  // reduce-precision
  int64_t mantissa_bits = 0;

  TriangularSolveOptions triangular_solve_options;
  bool cholesky_lower = false;  // cholesky lower=

  float epsilon = 0;          // batch-norm-*
  int64_t feature_index = 0;  // batch-norm-*

  int64_t k = 0;         // topk k=
  bool largest = true;   // topk largest=

  FusionKind fusion_kind = FusionKind::kLoop;  // fusion kind=

  std::string custom_call_target;
  CustomCallApiVersion api_version = CustomCallApiVersion::kOriginal;
  bool custom_call_has_side_effect = false;
  std::optional<std::vector<Shape>> operand_layout_constraints;
  std::vector<OutputOperandAlias> output_to_operand_aliasing;
  CustomCallSchedule custom_call_schedule = CustomCallSchedule::kNone;

  // Collectives and communication.
  std::optional<int64_t> channel_id;
  std::optional<ReplicaGroups> replica_groups;
  bool use_global_device_ids = false;
  bool constrain_layout = false;
  std::vector<std::pair<int64_t, int64_t>> source_target_pairs;  // collective-permute
  bool is_host_transfer = false;                                 // send/recv
  std::string infeed_config;
  std::string outfeed_config;
  std::optional<Shape> outfeed_shape;
  std::optional<int64_t> cross_program_prefetch_index;  // copy-start
  std::string async_execution_thread;                   // async-*: "" = main
  std::optional<DomainMetadata> domain;

  // scan
  int64_t scan_dimension = 0;
  bool is_reverse = false;
  std::optional<bool> is_associative;

  bool is_composite = false;  // call is_composite=true

  // Attributes kiln does not interpret, kept verbatim in the order read: ("name", "text").
  std::vector<std::pair<std::string, std::string>> extra;

  bool operator==(const HloAttributes&) const = default;
};

class HloInstruction {
 public:
  HloInstruction(HloOpcode opcode, Shape shape, std::string name = "");
  HloInstruction(const HloInstruction&) = delete;
  HloInstruction& operator=(const HloInstruction&) = delete;

  HloOpcode opcode() const { return opcode_; }
  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }
  int64_t unique_id() const { return unique_id_; }
  void set_unique_id(int64_t id) { unique_id_ = id; }

  const Shape& shape() const { return shape_; }
  Shape& mutable_shape() { return shape_; }
  void set_shape(Shape shape) { shape_ = std::move(shape); }

  // Operands (owned by the computation).
  const std::vector<HloInstruction*>& operands() const { return operands_; }
  HloInstruction* operand(int64_t i) const { return operands_[i]; }
  int64_t operand_count() const { return static_cast<int64_t>(operands_.size()); }
  void AppendOperand(HloInstruction* operand);
  // Replaces operand i, keeping user lists right.
  void ReplaceOperand(int64_t i, HloInstruction* new_operand);
  // Rewires every user of this instruction (and the root, if this is it) to `other`.
  void ReplaceAllUsesWith(HloInstruction* other);
  const std::vector<HloInstruction*>& users() const { return users_; }
  // Drops this instruction from its operands' user lists and clears its operands (used when
  // removing it from a computation).
  void DetachFromOperands();
  int64_t user_count() const { return static_cast<int64_t>(users_.size()); }

  // Control dependencies (control-predecessors={...}).
  const std::vector<HloInstruction*>& control_predecessors() const { return control_preds_; }
  const std::vector<HloInstruction*>& control_successors() const { return control_succs_; }
  void AddControlDependencyTo(HloInstruction* successor);
  void DropAllControlDependencies();

  // Called computations (see the role table above).
  const std::vector<HloComputation*>& called_computations() const { return called_; }
  void AppendCalledComputation(HloComputation* c) { called_.push_back(c); }
  void set_called_computation(int64_t i, HloComputation* c) { called_[i] = c; }
  void clear_called_computations() { called_.clear(); }
  HloComputation* to_apply() const { return called_.empty() ? nullptr : called_[0]; }
  HloComputation* while_condition() const { return called_[0]; }
  HloComputation* while_body() const { return called_[1]; }
  HloComputation* select() const { return called_[0]; }   // select-and-scatter
  HloComputation* scatter() const { return called_[1]; }  // select-and-scatter
  HloComputation* fused_computation() const { return called_[0]; }
  const std::vector<HloComputation*>& branch_computations() const { return called_; }

  // The computation this instruction lives in.
  HloComputation* parent() const { return parent_; }
  void set_parent(HloComputation* p) { parent_ = p; }

  // parameter(N)
  int64_t parameter_number() const { return parameter_number_; }
  void set_parameter_number(int64_t n) { parameter_number_ = n; }

  // constant(...) literal; custom-call literal=. Unset for other instructions.
  bool has_literal() const { return literal_ != nullptr; }
  const Literal& literal() const { return *literal_; }
  void set_literal(Literal l) { literal_ = std::make_shared<Literal>(std::move(l)); }
  // A constant whose value was elided ({...}) in the text and not filled in.
  bool literal_elided() const { return literal_elided_; }
  void set_literal_elided(bool e) { literal_elided_ = e; }

  HloAttributes& attrs() { return attrs_; }
  const HloAttributes& attrs() const { return attrs_; }

  // Attributes every instruction may carry.
  OpMetadata& metadata() { return metadata_; }
  const OpMetadata& metadata() const { return metadata_; }
  const std::optional<HloSharding>& sharding() const { return sharding_; }
  void set_sharding(std::optional<HloSharding> s) { sharding_ = std::move(s); }
  // frontend_attributes={k="v", ...}, in the order read.
  std::vector<std::pair<std::string, std::string>>& frontend_attributes() { return frontend_attributes_; }
  const std::vector<std::pair<std::string, std::string>>& frontend_attributes() const {
    return frontend_attributes_;
  }
  BackendConfig& backend_config() { return backend_config_; }
  const BackendConfig& backend_config() const { return backend_config_; }

  // Where the instruction was read from (for diagnostics).
  SourceLocation location() const { return location_; }
  void set_location(SourceLocation l) { location_ = l; }

  bool IsRoot() const;
  bool IsElementwise() const { return IsElementwiseOpcode(opcode_); }

  // The instruction in HLO text form ("%name = f32[2]{0} add(f32[2]{0} %a, ...), ..."),
  // as the printer writes it. Implemented by the printer.
  std::string ToString() const;

 private:
  void RemoveUser(HloInstruction* user);

  HloOpcode opcode_;
  Shape shape_;
  std::string name_;
  int64_t unique_id_ = -1;
  std::vector<HloInstruction*> operands_;
  std::vector<HloInstruction*> users_;
  std::vector<HloInstruction*> control_preds_;
  std::vector<HloInstruction*> control_succs_;
  std::vector<HloComputation*> called_;
  HloComputation* parent_ = nullptr;
  int64_t parameter_number_ = -1;
  std::shared_ptr<const Literal> literal_;
  bool literal_elided_ = false;
  HloAttributes attrs_;
  OpMetadata metadata_;
  std::optional<HloSharding> sharding_;
  std::vector<std::pair<std::string, std::string>> frontend_attributes_;
  BackendConfig backend_config_;
  SourceLocation location_;
};

}  // namespace kiln
