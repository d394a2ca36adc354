#include "kiln/cpu/kernels/kernel_test_util.h"

#include "kiln/cpu/kernels/common.h"
#include "kiln/eval/evaluator.h"
#include "kiln/eval/kernels.h"
#include "kiln/hlo/computation.h"
#include "kiln/hlo/parser.h"
#include "kiln/hlo/random_literal.h"

namespace kiln::cpu::testing {

ThreadPool* TestPool() {
  static ThreadPool* pool = new ThreadPool(2);
  return pool;
}

std::unique_ptr<HloModule> Parse(std::string_view hlo) {
  ParseOptions o;
  o.fill_elided_constants = true;
  auto m = ParseHloModule(hlo, o);
  EXPECT_TRUE(m.ok()) << m.status().ToString() << "\n" << hlo;
  return m.ok() ? std::move(m).value() : nullptr;
}

const HloInstruction* Find(const HloModule& m, std::string_view name) {
  if (name.empty()) return m.entry_computation()->root_instruction();
  return m.entry_computation()->GetInstructionWithName(name);
}

namespace {
void Flatten(const Literal& l, std::vector<const Literal*>& out) {
  if (l.shape().IsTuple()) {
    for (const Literal& e : l.tuple_elements()) Flatten(e, out);
  } else if (l.shape().IsArray()) {
    out.push_back(&l);
  }
}
void FlattenMutable(Literal& l, std::vector<Literal*>& out) {
  if (l.shape().IsTuple()) {
    for (int64_t i = 0; i < l.tuple_size(); ++i) FlattenMutable(l.mutable_tuple_element(i), out);
  } else if (l.shape().IsArray()) {
    out.push_back(&l);
  }
}
}  // namespace

StatusOr<Literal> RunKernel(const CpuKernel& kernel, const HloInstruction& instr,
                            const std::vector<Literal>& operands, ThreadPool* pool) {
  std::vector<const Literal*> in;
  for (const Literal& l : operands) Flatten(l, in);
  std::vector<ArrayView> inputs;
  for (const Literal* l : in)
    inputs.push_back({const_cast<uint8_t*>(l->untyped_data()), l->shape()});
  Shape result_shape = instr.shape();
  Literal out(result_shape);
  std::vector<Literal*> leaves;
  FlattenMutable(out, leaves);
  std::vector<ArrayView> outputs;
  for (Literal* l : leaves) {
    // Poison the output so that elements a kernel forgets to write show up.
    std::memset(l->untyped_data(), 0x5b, l->size_bytes());
    outputs.push_back({l->untyped_data(), l->shape()});
  }
  KernelContext ctx;
  ctx.pool = pool;
  KILN_RETURN_IF_ERROR(kernel.Run(inputs, outputs, ctx));
  return out;
}

StatusOr<Literal> Reference(const HloInstruction& instr, const std::vector<Literal>& operands) {
  EvalKernel k = KernelRegistry::Global().Find(instr.opcode());
  if (!k) return Unimplemented("no evaluator kernel");
  std::vector<const Literal*> ptrs;
  for (const Literal& l : operands) ptrs.push_back(&l);
  Evaluator e;
  return k(instr, ptrs, e);
}

std::vector<Literal> RandomOperands(const HloInstruction& instr, uint64_t seed) {
  std::vector<Literal> out;
  for (int64_t i = 0; i < instr.operand_count(); ++i)
    out.push_back(MakeRandomLiteral(instr.operand(i)->shape(), seed, i));
  return out;
}

std::string ExpectMatchesEvaluator(const HloInstruction& instr, const CheckOptions& options,
                                   std::vector<Literal> operands) {
  if (operands.empty()) operands = RandomOperands(instr, options.seed);
  StatusOr<std::unique_ptr<CpuKernel>> kernel = CreateCpuKernel(instr, options.kernel);
  EXPECT_TRUE(kernel.ok()) << kernel.status().ToString() << "\n" << instr.ToString();
  if (!kernel.ok()) return "";
  const std::string name = (*kernel)->name();
  if (options.native) {
    EXPECT_EQ(name.rfind("evaluator[", 0), std::string::npos)
        << "fell back to the evaluator: " << instr.ToString();
  }
  StatusOr<Literal> want = Reference(instr, operands);
  EXPECT_TRUE(want.ok()) << want.status().ToString();
  if (!want.ok()) return name;
  StatusOr<Literal> got =
      RunKernel(**kernel, instr, operands, options.with_pool ? TestPool() : nullptr);
  EXPECT_TRUE(got.ok()) << got.status().ToString() << "\n" << name;
  if (!got.ok()) return name;
  CompareOptions co;
  co.rtol = options.rtol;
  co.atol = options.atol;
  Comparison c = CompareLiterals(*got, *want, co);
  EXPECT_TRUE(c.ok()) << name << " (block " << options.kernel.block_elements << ", "
                      << (options.with_pool ? "pool" : "no pool") << "):\n"
                      << c.ToString() << "\n"
                      << instr.ToString() << "\ngot  " << got->ToShortString(16) << "\nwant "
                      << want->ToShortString(16);
  return name;
}

void CheckHlo(std::string_view hlo, std::string_view name, CheckOptions options) {
  std::unique_ptr<HloModule> m = Parse(hlo);
  if (!m) return;
  const HloInstruction* instr = Find(*m, name);
  ASSERT_NE(instr, nullptr) << name;
  for (int64_t block : {int64_t{2048}, int64_t{7}, int64_t{64}}) {
    for (bool pool : {true, false}) {
      CheckOptions o = options;
      o.kernel.block_elements = block;
      o.kernel.min_parallel_elements = 16;
      o.with_pool = pool;
      ExpectMatchesEvaluator(*instr, o);
      if (::testing::Test::HasFailure()) return;
    }
  }
}

void CheckOnPools(std::string_view hlo, const std::vector<std::unique_ptr<ThreadPool>>& pools,
                  uint64_t seed, std::string_view what, std::initializer_list<int64_t> grains) {
  std::unique_ptr<HloModule> m = Parse(hlo);
  ASSERT_NE(m, nullptr);
  const HloInstruction* instr = Find(*m);
  std::vector<Literal> operands = RandomOperands(*instr, seed);
  StatusOr<Literal> want = Reference(*instr, operands);
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  for (int64_t grain : grains) {
    CpuKernelOptions ko;
    ko.min_parallel_elements = grain;
    StatusOr<std::unique_ptr<CpuKernel>> k = CreateCpuKernel(*instr, ko);
    ASSERT_TRUE(k.ok()) << k.status().ToString();
    for (const auto& pool : pools) {
      StatusOr<Literal> got = RunKernel(**k, *instr, operands, pool.get());
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      Comparison cmp = CompareLiterals(*got, *want, {});
      EXPECT_TRUE(cmp.ok()) << (*k)->name() << " " << what << " grain " << grain << " threads "
                            << pool->num_threads() << " seed " << seed << "\n" << cmp.ToString();
    }
  }
}

}  // namespace kiln::cpu::testing
