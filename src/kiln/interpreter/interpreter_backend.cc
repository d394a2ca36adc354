#include "kiln/interpreter/interpreter_backend.h"

#include <charconv>
#include <chrono>
#include <new>

#include "kiln/backend/host_backend.h"
#include "kiln/base/strings.h"
#include "kiln/eval/evaluator.h"
#include "kiln/eval/participants.h"
#include "kiln/hlo/shape_inference.h"
#include "kiln/hlo/verifier.h"
#include "kiln/passes/module_clone.h"
#include "kiln/passes/send_recv_ordering.h"
#include "kiln/passes/shard_map_lowering.h"

namespace kiln::interpreter {

namespace {

constexpr std::string_view kPlatform = "interpreter";
constexpr FlagSpec kFlags[] = {
    {"interpreter_max_loop_iterations", "N  fail a while loop after N iterations (default: no limit)"}};


class InterpreterExecutable final : public Executable {
 public:
  InterpreterExecutable(std::unique_ptr<HloModule> module, EvaluatorOptions options, CompileReport report)
      : Executable(std::string(kPlatform), 0, *module, std::move(report)), module_(std::move(module)), options_(options) {}

  void SetParticipants(int64_t replicas, int64_t partitions) { set_participants(replicas, partitions); }

  StatusOr<std::unique_ptr<Buffer>> BufferFromLiteral(const Literal& literal) override {
    if (!literal.shape().IsArray()) return InvalidArgument("a buffer holds one array, not ", literal.shape().ToString(false));
    // The copy may not fit beside the caller's literal: a status, not an exception.
    try {
      return std::unique_ptr<Buffer>(HostBuffer::FromLiteral(literal, std::string(kPlatform), 0));
    } catch (const std::bad_alloc&) {
      return ResourceExhausted("out of memory allocating ", literal.size_bytes(), " bytes for a buffer of ",
                               literal.shape().ToString(false));
    }
  }

 protected:
  StatusOr<std::vector<std::unique_ptr<Buffer>>> ExecuteImpl(std::span<Buffer* const> arguments,
                                                              const ExecuteOptions& options) override {
    KILN_ASSIGN_OR_RETURN(std::vector<Literal> params, Parameters(arguments));
    EvaluatorOptions eo = options_;
    eo.rng_seed = options.seed;
    Evaluator evaluator(eo);
    KILN_ASSIGN_OR_RETURN(Literal result, evaluator.Run(*module_, params));
    return Results(arguments, std::move(result), options);
  }

  StatusOr<std::vector<std::vector<std::unique_ptr<Buffer>>>> ExecuteParticipantsImpl(
      std::span<const std::vector<Buffer*>> arguments, const ExecuteOptions& options) override {
    std::vector<std::vector<Literal>> sets;
    for (const std::vector<Buffer*>& a : arguments) {
      KILN_ASSIGN_OR_RETURN(std::vector<Literal> params, Parameters(a));
      sets.push_back(std::move(params));
    }
    ParticipantsOptions po;
    po.replica_count = replica_count();
    po.num_partitions = num_partitions();
    po.rng_seed = options.seed;
    po.max_loop_iterations = options_.max_loop_iterations;
    po.timeout = std::chrono::milliseconds(options.collective_timeout_ms);
    KILN_ASSIGN_OR_RETURN(std::vector<Literal> results, ::kiln::RunParticipants(*module_, sets, po));
    std::vector<std::vector<std::unique_ptr<Buffer>>> out;
    for (size_t i = 0; i < results.size(); ++i) {
      KILN_ASSIGN_OR_RETURN(auto r, Results(arguments[i], std::move(results[i]), options));
      out.push_back(std::move(r));
    }
    return out;
  }

 private:
  // Rebuilds each parameter (tuples from their leaves) as the evaluator takes literals.
  StatusOr<std::vector<Literal>> Parameters(std::span<Buffer* const> arguments) const {
    std::vector<Literal> leaves;
    for (Buffer* b : arguments) {
      KILN_ASSIGN_OR_RETURN(Literal l, b->ToLiteral());
      leaves.push_back(std::move(l));
    }
    const HloComputation* entry = module_->entry_computation();
    std::vector<Literal> params;
    for (int64_t p = 0; p < num_parameters(); ++p) {
      const int64_t first = first_leaf_of_parameter(p);
      const int64_t end = p + 1 < num_parameters() ? first_leaf_of_parameter(p + 1) : static_cast<int64_t>(leaves.size());
      std::vector<Literal> mine(std::make_move_iterator(leaves.begin() + first), std::make_move_iterator(leaves.begin() + end));
      Shape logical = entry->parameter_instruction(p)->shape();
      logical.clear_layout();
      KILN_ASSIGN_OR_RETURN(Literal param, NestLiterals(std::move(mine), logical));
      params.push_back(std::move(param));
    }
    return params;
  }

  StatusOr<std::vector<std::unique_ptr<Buffer>>> Results(std::span<Buffer* const> arguments, Literal result,
                                                         const ExecuteOptions& options) {
    for (size_t i = 0; i < arguments.size(); ++i)
      if (donated()[i]) arguments[i]->MarkDonated(StrCat("donated to ", module_name()));
    std::vector<std::unique_ptr<Buffer>> out;
    if (options.discard_results) return out;
    for (Literal& leaf : FlattenLiteral(result))
      out.push_back(HostBuffer::FromLiteral(std::move(leaf), std::string(kPlatform), 0));
    return out;
  }

  std::unique_ptr<HloModule> module_;
  EvaluatorOptions options_;
};

class InterpreterBackend final : public HostBackend {
 public:
  InterpreterBackend() : HostBackend(std::string(kPlatform)) {}
  std::string_view description() const override { return "the reference evaluator (host)"; }
  StatusOr<std::vector<DeviceInfo>> Devices() const override {
    return std::vector<DeviceInfo>{{0, "host", "runs every op exactly; large dots and convolutions on every core (--threads)"}};
  }
  std::string flag_help() const override {
    return FlagHelp(kFlags);
  }

  StatusOr<std::unique_ptr<Executable>> Compile(const HloModule& module, const CompileOptions& options) override {
    KILN_RETURN_IF_ERROR(CheckOrdinal(options.device_ordinal));
    KILN_RETURN_IF_ERROR(CheckBackendFlags(options.flags, "interpreter_", kFlags));
    EvaluatorOptions eo;
    eo.threads = options.threads;
    if (std::string_view v = FlagOr(options.flags, "interpreter_max_loop_iterations", ""); !v.empty()) {
      auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), eo.max_loop_iterations);
      if (ec != std::errc() || p != v.data() + v.size() || eo.max_loop_iterations < 1)
        return InvalidArgument("interpreter_max_loop_iterations: expected a positive integer, got '", v, "'");
    }
    if (module.entry_computation() == nullptr) return InvalidArgument("module ", module.name(), " has no entry computation");
    if (options.verify) {
      KILN_RETURN_IF_ERROR(VerifyModule(module));
    } else if (Status s = CheckOperandsInRange(module); !s.ok()) {
      // As on cpu: unverified modules still may not index outside their operands.
      return InvalidArgument("interpreter: the module is invalid (checked without the verifier too): ", s.message());
    }
    auto start = std::chrono::steady_clock::now();
    std::unique_ptr<HloModule> copy = CloneModule(module);
    // A shard_map program runs as its per-device program (passes/shard_map_lowering.h).
    KILN_RETURN_IF_ERROR(LowerShardMap(*copy).status());
    KILN_RETURN_IF_ERROR(OrderSendsBeforeRecvDones(*copy).status());
    KILN_ASSIGN_OR_RETURN(auto grid, ParticipantsOf(*copy, options));
    const auto [replicas, partitions] = grid;
    CompileReport report;
    report.target = "host";
    report.compile_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    report.summary = StrCat("the interpreter compiles nothing: it evaluates ", module.name(), " on every run",
                            replicas * partitions > 1 ? StrCat(" over ", replicas, " replicas x ", partitions, " partitions (one thread each)") : std::string(), "\n");
    report.details = report.summary;
    auto exe = std::make_unique<InterpreterExecutable>(std::move(copy), eo, std::move(report));
    exe->SetParticipants(replicas, partitions);
    return std::unique_ptr<Executable>(std::move(exe));
  }
};

}  // namespace

std::unique_ptr<Backend> CreateInterpreterBackend(const BackendFlags&) { return std::make_unique<InterpreterBackend>(); }

}  // namespace kiln::interpreter
