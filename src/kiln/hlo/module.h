// HloModule: computations, the entry computation, and the module header attributes.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/hlo/computation.h"

namespace kiln {

// input_output_alias={ {0}: (0, {}, may-alias), {1}: (1, {}, must-alias) }
struct InputOutputAlias {
  std::vector<int64_t> output_index;
  int64_t parameter_number = 0;
  std::vector<int64_t> parameter_index;
  bool must_alias = false;  // "must-alias" vs "may-alias"
  bool operator==(const InputOutputAlias&) const = default;
};

// buffer_donor={ (0, {}), (1, {}) }
struct BufferDonor {
  int64_t parameter_number = 0;
  std::vector<int64_t> parameter_index;
  bool operator==(const BufferDonor&) const = default;
};

// The stack-frame tables that precede the computations in newer dumps:
//   FileNames / FunctionNames / FileLocations / StackFrames
struct StackFrameIndex {
  struct FileLocation {
    int64_t file_name_id = 0;
    int64_t function_name_id = 0;
    int64_t line = 0;
    int64_t end_line = 0;
    int64_t column = 0;
    int64_t end_column = 0;
  };
  struct StackFrame {
    int64_t file_location_id = 0;
    int64_t parent_frame_id = 0;
  };
  std::vector<std::string> file_names;        // id i+1 -> file_names[i]
  std::vector<std::string> function_names;
  std::vector<FileLocation> file_locations;
  std::vector<StackFrame> stack_frames;
  bool empty() const {
    return file_names.empty() && function_names.empty() && file_locations.empty() &&
           stack_frames.empty();
  }
};

struct HloModuleHeader {
  bool is_scheduled = false;
  std::optional<ProgramShape> entry_computation_layout;
  std::vector<InputOutputAlias> input_output_alias;
  std::vector<BufferDonor> buffer_donors;
  bool alias_passthrough_params = false;
  int64_t replica_count = 1;
  int64_t num_partitions = 1;
  std::vector<std::pair<std::string, std::string>> frontend_attributes;
  std::vector<bool> allow_spmd_sharding_propagation_to_parameters;
  std::vector<bool> allow_spmd_sharding_propagation_to_output;
  std::optional<HloSharding> spmd_output_sharding;
  std::vector<HloSharding> spmd_parameters_shardings;
  // Header attributes kiln does not interpret, verbatim in order: ("name", "text").
  std::vector<std::pair<std::string, std::string>> extra;
};

class HloModule {
 public:
  explicit HloModule(std::string name) : name_(std::move(name)) {}
  HloModule(const HloModule&) = delete;
  HloModule& operator=(const HloModule&) = delete;

  const std::string& name() const { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }

  HloModuleHeader& header() { return header_; }
  const HloModuleHeader& header() const { return header_; }
  StackFrameIndex& stack_frames() { return stack_frames_; }
  const StackFrameIndex& stack_frames() const { return stack_frames_; }

  // Adds a computation (taking ownership). The first one added with is_entry becomes the entry.
  HloComputation* AddComputation(std::unique_ptr<HloComputation> c, bool is_entry = false);
  HloComputation* entry_computation() const { return entry_; }
  void set_entry_computation(HloComputation* c) { entry_ = c; }
  // Computations in insertion order (text order for parsed modules).
  std::vector<HloComputation*> computations() const;
  // Callees before callers, the entry last.
  std::vector<HloComputation*> MakeComputationPostOrder() const;
  HloComputation* GetComputationWithName(std::string_view name) const;
  // Removes computations not reachable from the entry.
  void RemoveUnreachableComputations();

  // Next unique id for instructions of this module.
  int64_t NextUniqueId() { return next_unique_id_++; }

  // The module in HLO text form (printer).
  std::string ToString() const;

  // Stable fingerprint of the module's canonical text (names, metadata and other attributes
  // that do not change meaning are left out). Implemented by the printer.
  std::string Fingerprint() const;

 private:
  std::string name_;
  HloModuleHeader header_;
  StackFrameIndex stack_frames_;
  std::vector<std::unique_ptr<HloComputation>> computations_;
  HloComputation* entry_ = nullptr;
  int64_t next_unique_id_ = 0;
};

}  // namespace kiln
