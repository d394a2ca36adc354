// kiln.compile's Executable in the binding: a compiled module on one device, run on arrays.
//
// run_flat(arguments) takes one array per argument leaf (anything ImportArray takes) and
// returns one kiln.Array per result leaf; the Python layer (kiln/_executable.py) nests them.
// Donated leaves consume owned Arrays and copies of everything else (array.h). The GIL is
// released while compiling and while running.
//
// Several participants (docs/collectives.md, docs/python.md): an executable of
// replica_count x num_partitions > 1 participants runs through RunParticipantsFlat (one
// argument list per participant, Executable::ExecuteParticipants; one result list each) or
// RunGlobalFlat (global arrays split into the participants' tiles by the parameters'
// shardings, results joined by the root's: the `kiln` tool's .npz convention, docs/npz.md,
// through hlo/sharding_tiles.h). RunFlat refuses them, naming the two.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nanobind/nanobind.h>

#include "kiln/backend/executable.h"
#include "kiln/hlo/attributes.h"
#include "kiln/hlo/sharding_tiles.h"
#include "kiln/python/array.h"
#include "kiln/python/client.h"

namespace kiln::python {

struct CompileArgs {
  std::string device;       // "" = the best device present
  std::string autotune;     // "" = the backend's default; off | on | exhaustive
  std::string filename;     // names the text in parse errors
  BackendFlags flags;       // CompileOptions::flags
  int threads = 0;          // CompileOptions::threads
  int64_t replicas = 0;     // CompileOptions::replica_count (0: the module header's)
  int64_t partitions = 0;   // CompileOptions::num_partitions (0: the module header's)
};

class PyExecutable {
 public:
  // argument_shardings / result_shardings: per argument / result leaf, the sharding of the
  // (lowered) module's entry parameter / root that says how the leaf splits / joins (nullopt:
  // none, or a tuple parameter).
  PyExecutable(std::unique_ptr<Executable> exe, DeviceRef device,
               std::vector<std::optional<HloSharding>> argument_shardings = {},
               std::vector<std::optional<HloSharding>> result_shardings = {})
      : exe_(std::move(exe)),
        device_(std::move(device)),
        keep_(std::make_shared<const std::vector<std::shared_ptr<const void>>>(
            std::vector<std::shared_ptr<const void>>{exe_})),
        argument_shardings_(std::move(argument_shardings)),
        result_shardings_(std::move(result_shardings)) {
    argument_shardings_.resize(exe_->argument_shapes().size());
    result_shardings_.resize(exe_->result_shapes().size());
  }
  const Executable& exe() const { return *exe_; }
  const DeviceRef& device() const { return device_; }
  nanobind::list RunFlat(nanobind::handle arguments, uint64_t seed);
  // One argument list per participant in; one list of result leaves per participant out.
  // timeout_ms < 0: ExecuteOptions' default.
  nanobind::list RunParticipantsFlat(nanobind::handle per_participant, uint64_t seed, int64_t timeout_ms);
  // One global (or, where the sharding does not tile or the shape is the tile's, per-participant
  // shared) array per argument leaf in; one global result per result leaf out.
  nanobind::list RunGlobalFlat(nanobind::handle arguments, uint64_t seed, int64_t timeout_ms);
  // RunGlobalFlat's halves: the per-participant argument lists of global arguments, and the
  // global result leaves of per-participant result lists.
  nanobind::list SplitGlobal(nanobind::handle arguments);
  nanobind::list JoinGlobal(nanobind::handle results);
  // The global dimensions of each argument / result leaf: a tiled sharding's global array, the
  // leaf's own dimensions otherwise (what run_global takes and returns).
  nanobind::list GlobalDims(bool results) const;

 private:
  // Imports one participant's arguments (RunFlat's rules) into `buffers`, keeping what it
  // made in `held`; `donated_taken`: buffers an earlier participant donates (copied here).
  void ImportArguments(nanobind::handle arguments, const std::string& context, std::vector<PyArray>& held,
                       std::vector<Buffer*>& buffers, int& legacy_wait, std::vector<Buffer*>& donated_taken);
  // How each result leaf joins (a tiled sharding's placement of participant 0; nullopt:
  // participant 0's value); InvalidArgument for a leaf that does not join.
  std::vector<std::optional<TilePlacement>> JoinPlan() const;
  // keep_, merged with what the donated arguments' Arrays hold.
  KeepAlive MergedKeep(nanobind::handle arguments, const std::vector<Buffer*>& buffers, KeepAlive keep) const;
  // The sharding id of participant i in tile assignments (tools/participants.h's ShardingDeviceOf).
  int64_t ShardingDevice(int64_t participant) const {
    return exe_->num_partitions() > 1 ? participant % exe_->num_partitions() : participant;
  }

  std::shared_ptr<Executable> exe_;
  DeviceRef device_;
  KeepAlive keep_;  // {exe_}: what its results hold (Note [Results keep their executables])
  std::vector<std::optional<HloSharding>> argument_shardings_, result_shardings_;
};

PyExecutable CompileHlo(const std::string& text, const CompileArgs& args);

void RegisterExecutable(nanobind::module_& m);

}  // namespace kiln::python
