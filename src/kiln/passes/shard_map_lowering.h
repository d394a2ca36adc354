// ShardMapLowering: the per-device program of a JAX shard_map module.
//
// jax.jit(shard_map(f, mesh, in_specs, out_specs)) lowers to a module whose entry takes and
// returns *global* arrays and whose body (a called computation) is already the per-device
// program with its collectives. Two spellings:
//   Shardy (jax >= 0.7 default): module frontend_attributes={xla.sdy.meshes={mesh =
//     #sdy.mesh<["x"=4]>}}, entry parameters -> custom-call "xla.sdy.GlobalToLocalShape"
//     (#sdy.sharding_per_value in its frontend attributes) -> call of
//     xla.sdy.manual_computation_body.N -> "xla.sdy.LocalToGlobalShape" ->
//     "xla.sdy.FuncResultSharding" -> root;
//   GSPMD (older JAX, XLA): entry parameters -> "Sharding" -> "SPMDFullToShardShape" -> call
//     of the body -> "Sharding" -> "SPMDShardToFullShape" -> root.
// Either way the entry parameters carry sharding={devices=[...]} (how the global input splits
// into the per-device tiles) and the root a sharding saying how the outputs join.
//
// The pass makes the module the per-device program: each entry parameter takes its local
// (tile) shape, the shape-changing custom calls and the annotation custom calls go, the root
// returns local arrays, dead global-shaped instructions are removed, and the header says
// num_partitions = the mesh's device count (replica_count 1). The parameters' and the root's
// shardings stay: they say how to split global inputs and join global outputs (the `kiln`
// tool's .npz convention, docs/npz.md). Running it twice changes nothing.
//
// Refused (InvalidArgument, saying so): a program that computes on global arrays outside the
// shard_map, and an unpartitioned sharded program -- entry parameters with a sharding over
// several devices in a module that is no shard_map program, declares no num_partitions or
// replica_count > 1 and has no collective, partition-id, replica-id, send or recv (a jax.jit
// program with sharding annotations before XLA's SPMD partitioner: kiln has no automatic
// partitioner). Per-device programs as XLA dumps them after partitioning (collectives inside,
// the header sometimes without num_partitions) pass unchanged.
#pragma once

#include "kiln/base/status.h"
#include "kiln/hlo/module.h"

namespace kiln {

// Whether `module` is a shard_map program this pass turns into a per-device one.
bool IsShardMapProgram(const HloModule& module);

// Lowers a shard_map program in place (see above); returns whether it changed anything.
StatusOr<bool> LowerShardMap(HloModule& module);

}  // namespace kiln
