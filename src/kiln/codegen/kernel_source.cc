#include "kiln/codegen/kernel_source.h"

#include <cmath>
#include <cstdio>

#include "kiln/base/strings.h"
#include "kiln/codegen/code_builder.h"
#include "kiln/codegen/device_types.h"
#include "kiln/codegen/elemental_emitter.h"

namespace kiln::codegen {

namespace {

// Largest array constant written into a kernel's source.
constexpr int64_t kMaxConstantElements = 16384;

}  // namespace

std::string KernelSource::UniqueGlobalName(std::string_view base) {
  std::string b = SanitizeIdentifier(base);
  std::string name = b;
  for (int i = 2; globals_.count(name); ++i) name = b + "_" + std::to_string(i);
  globals_.insert(name);
  return name;
}

void KernelSource::AddHeaderComment(const std::string& text) {
  for (std::string_view line : StrSplit(text, '\n')) {
    header_comment_ += "// ";
    header_comment_ += line;
    header_comment_ += "\n";
  }
}

StatusOr<std::string> KernelSource::ConstantArray(const HloInstruction& constant) {
  auto it = constants_.find(&constant);
  if (it != constants_.end()) return it->second;
  if (!constant.has_literal()) return InvalidArgument("constant %", constant.name(), " has no value");
  const Literal& lit = constant.literal();
  int64_t n = lit.element_count();
  if (n > kMaxConstantElements)
    return Unimplemented("constant %", constant.name(), " has ", n, " elements; kernels embed at most ",
                         kMaxConstantElements, " (pass larger constants as operands)");
  std::string name = UniqueGlobalName("const_" + constant.name());
  PrimitiveType t = lit.shape().element_type();
  std::string text = "// %" + constant.name() + " " + constant.shape().ToString(false) + "\n";
  if (RegisterType(t) == "float") {
    bool has_nan = false;
    for (int64_t i = 0; i < n && !has_nan; ++i) has_nan = std::isnan(lit.GetAsDouble(i));
    if (has_nan) {
      text += "static __device__ const u32 " + name + "[" + std::to_string(n) + "] = {";
      for (int64_t i = 0; i < n; ++i) {
        if (i % 8 == 0) text += "\n   ";
        char buf[24];
        std::snprintf(buf, sizeof(buf), " 0x%08xu%s", unsigned{RegisterFloatBits(lit, i)}, i + 1 < n ? "," : "");
        text += buf;
      }
      text += "\n};\n";
      declarations_.push_back(std::move(text));
      std::string expr = "reinterpret_cast<const float*>(" + name + ")";
      constants_[&constant] = expr;
      return expr;
    }
  }
  text += "static __device__ const " + RegisterType(t) + " " + name + "[" +
          std::to_string(std::max<int64_t>(n, 1)) + "] = {";
  for (int64_t i = 0; i < n; ++i) {
    if (i % 8 == 0) text += "\n   ";
    KILN_ASSIGN_OR_RETURN(std::string v, ElementLiteral(lit, i));
    text += " " + v + (i + 1 < n ? "," : "");
  }
  if (n == 0) text += ZeroLiteral(t);
  text += "\n};\n";
  declarations_.push_back(std::move(text));
  constants_[&constant] = name;
  return name;
}

StatusOr<const ScalarFunction*> KernelSource::Function(const HloComputation& c) {
  auto it = functions_.find(&c);
  if (it != functions_.end()) return &it->second;
  if (in_progress_.count(&c)) return Unimplemented("recursive computation ", c.name());
  in_progress_.insert(&c);
  ScalarFunction f;
  f.name = UniqueGlobalName(c.name());
  CodeBuilder body("int", 1);
  ElementalEmitter em(*this, body);
  std::vector<std::string> params;
  for (int64_t i = 0; i < c.num_parameters(); ++i) {
    const HloInstruction* p = c.parameter_instruction(i);
    if (!p->shape().IsArray() || p->shape().rank() != 0)
      return Unimplemented("computation ", c.name(), ": parameter ", i, " is ",
                           p->shape().ToString(false), ", not a scalar");
    std::string name = body.UniqueName(p->name());
    f.params.push_back(p->shape().element_type());
    params.push_back("const " + RegisterType(p->shape().element_type()) + " " + name);
    em.BindScalar(p, Value{name, p->shape().element_type(), 0});
  }
  const HloInstruction* root = c.root_instruction();
  std::vector<Value> results;
  if (root->opcode() == HloOpcode::kTuple) {
    for (const HloInstruction* op : root->operands()) {
      if (!op->shape().IsArray() || op->shape().rank() != 0)
        return Unimplemented("computation ", c.name(), ": result is not a tuple of scalars");
      KILN_ASSIGN_OR_RETURN(Value v, em.Emit(*op, ElementalEmitter::ScalarIndex()));
      results.push_back(v);
    }
    f.tuple_result = true;
  } else if (root->shape().IsArray()) {
    if (root->shape().rank() != 0) return Unimplemented("computation ", c.name(), ": non-scalar result");
    KILN_ASSIGN_OR_RETURN(Value v, em.Emit(*root, ElementalEmitter::ScalarIndex()));
    results.push_back(v);
  } else {
    KILN_ASSIGN_OR_RETURN(results, em.EmitTuple(*root, ElementalEmitter::ScalarIndex()));
    f.tuple_result = true;
  }
  for (const Value& v : results) f.results.push_back(v.type);
  std::string text = "// %" + c.name() + "\n";
  if (f.tuple_result) {
    for (size_t i = 0; i < results.size(); ++i) {
      std::string out = body.UniqueName("out" + std::to_string(i));
      params.push_back(RegisterType(results[i].type) + "* " + out);
      body.Line("*" + out + " = " + results[i].expr + ";");
    }
    text += "static __device__ __forceinline__ void " + f.name + "(" + StrJoin(params, ", ") + ") {\n";
  } else {
    body.Line("return " + results[0].expr + ";");
    text += "static __device__ __forceinline__ " + RegisterType(results[0].type) + " " + f.name + "(" +
            StrJoin(params, ", ") + ") {\n";
  }
  KILN_ASSIGN_OR_RETURN(std::string b, body.Finish());
  text += b + "}\n";
  declarations_.push_back(std::move(text));
  in_progress_.erase(&c);
  auto [pos, inserted] = functions_.emplace(&c, std::move(f));
  return &pos->second;
}

std::string KernelSource::Render() const {
  std::string s = "// Generated by kiln (src/kiln/codegen): " + title_ + "\n";
  s += header_comment_;
  s += "#include \"" + std::string(CodegenPreludeName()) + "\"\n\n";
  for (const std::string& d : declarations_) s += d + "\n";
  for (size_t i = 0; i < entries_.size(); ++i) {
    s += entries_[i];
    if (i + 1 < entries_.size()) s += "\n";
  }
  return s;
}

}  // namespace kiln::codegen
