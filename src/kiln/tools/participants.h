// The `kiln` tool's side of multi-participant runs (docs/collectives.md, docs/npz.md): inputs
// for every participant from a .npz (per participant, shared, or a global array split by the
// parameter's sharding), and outputs per participant plus global arrays reassembled where the
// root's sharding says how.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/hlo/attributes.h"
#include "kiln/hlo/literal.h"
#include "kiln/hlo/module.h"
#include "kiln/hlo/sharding_tiles.h"
#include "kiln/tools/autotune_options.h"
#include "kiln/tools/tool_common.h"

namespace kiln {

// The id of participant i in sharding tile assignments: its partition when the run has several
// partitions, else its replica.
int64_t ShardingDeviceOf(int64_t participant, int64_t replicas, int64_t partitions);

// Participant i's arguments, for a run over `replicas` x `partitions`:
//   p<i>.in<k>  participant i's parameter k
//   in<k> (or the parameter's name)  every participant's parameter k when it has the
//       parameter's shape; a global array split by the parameter's tiled sharding when it has
//       the global shape
//   random inputs (no .npz): seed + i for participant i
StatusOr<std::vector<std::vector<Literal>>> MakeParticipantInputs(const HloModule& module, int64_t replicas,
                                                                  int64_t partitions, const InputOptions& options,
                                                                  std::vector<std::string>* notes);

// Named output arrays of a run: p<i>.out<j> for every participant's leaf j, then out<j> where
// the root's sharding for leaf j says how to reassemble it (tiles placed into the global array;
// replicated: participant 0's).
StatusOr<std::vector<std::pair<std::string, Literal>>> ParticipantOutputs(const HloModule& module,
                                                                          int64_t replicas, int64_t partitions,
                                                                          const std::vector<Literal>& results);

// The compile options of `flags` and the participant grid (replicas x partitions) they and the
// module's header give. On error prints it and returns kExitUsage; 0 otherwise.
int CompileOptionsAndGrid(const Client& client, const CompileFlags& flags, const HloModule& module,
                          CompileOptions* options, std::pair<int64_t, int64_t>* grid);

// Compiles `module` for `device` and checks the executable runs replicas x partitions
// participants. On error prints it and returns the exit code; 0 otherwise.
int CompileForParticipants(const Client& client, const HloModule& module, const DeviceSelection& device,
                           const CompileOptions& options, int64_t replicas, int64_t partitions,
                           std::unique_ptr<Executable>* exe);

// Writes named arrays into an .npz.
Status WriteNamedOutputs(const std::string& path, const std::vector<std::pair<std::string, Literal>>& outputs,
                         bool raw_bits);

}  // namespace kiln
