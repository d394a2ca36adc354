// CodeBuilder's index arithmetic, checked by executing the code it writes: Div and Mod of
// random affine expressions (coefficients and constants of both signs, so the parts it splits
// off can be negative) must give floor(e / d) and e mod d for every value of their variables.
// A small interpreter runs the generated statements ("const int x = expr;") and expressions.
#include "kiln/codegen/code_builder.h"

#include <gtest/gtest.h>

#include <cctype>
#include <map>
#include <random>
#include <sstream>

namespace kiln::codegen {
namespace {

// Evaluates the integer C expressions CodeBuilder writes: literals (u/ull/LL suffixes), names,
// + - * / %, parentheses, casts to int/unsigned/long long/unsigned long long, min, max.
class MiniEval {
 public:
  explicit MiniEval(const std::map<std::string, int64_t>& vars) : vars_(vars) {}

  int64_t Eval(const std::string& text) {
    s_ = text;
    p_ = 0;
    int64_t v = Sum();
    Skip();
    EXPECT_EQ(p_, s_.size()) << "unparsed: " << s_.substr(p_) << " in " << s_;
    return v;
  }
  // Runs "const <type> name = expr;" lines, defining the names.
  void Run(const std::string& body) {
    std::istringstream in(body);
    std::string line;
    while (std::getline(in, line)) {
      size_t c = line.find("const ");
      size_t eq = line.find(" = ");
      if (c == std::string::npos || eq == std::string::npos) continue;
      std::string lhs = line.substr(c + 6, eq - c - 6);
      std::string name = lhs.substr(lhs.rfind(' ') + 1);
      std::string expr = line.substr(eq + 3, line.rfind(';') - eq - 3);
      vars_[name] = Eval(expr);
    }
  }

 private:
  void Skip() {
    while (p_ < s_.size() && s_[p_] == ' ') ++p_;
  }
  bool Take(const std::string& t) {
    Skip();
    if (s_.compare(p_, t.size(), t) == 0) {
      p_ += t.size();
      return true;
    }
    return false;
  }
  int64_t Sum() {
    int64_t v = Product();
    while (true) {
      if (Take("+")) v += Product();
      else if (Take("-")) v -= Product();
      else return v;
    }
  }
  int64_t Product() {
    int64_t v = Unary();
    while (true) {
      if (Take("*")) {
        v *= Unary();
      } else if (Take("/")) {
        int64_t d = Unary();
        v = unsigned_ ? int64_t(uint64_t(v) / uint64_t(d)) : v / d;
      } else if (Take("%")) {
        int64_t d = Unary();
        v = unsigned_ ? int64_t(uint64_t(v) % uint64_t(d)) : v % d;
      } else {
        return v;
      }
    }
  }
  int64_t Unary() {
    if (Take("-")) return -Unary();
    for (const char* cast : {"(unsigned long long)", "(long long)", "(unsigned)", "(int)"}) {
      if (Take(cast)) {
        // The cast applies to the following primary; unsigned casts make the next division
        // unsigned (the only use CodeBuilder makes of them).
        const bool u = std::string(cast).find("unsigned") != std::string::npos;
        int64_t v = Unary();
        if (u) unsigned_ = true;
        if (std::string(cast) == "(unsigned)") v = int64_t(uint32_t(v));
        if (std::string(cast) == "(int)") {
          v = int64_t(int32_t(v));
          unsigned_ = false;
        }
        return v;
      }
    }
    return Primary();
  }
  int64_t Primary() {
    Skip();
    if (Take("(")) {
      const bool saved = unsigned_;
      unsigned_ = false;
      int64_t v = Sum();
      EXPECT_TRUE(Take(")")) << s_;
      // A parenthesized unsigned value stays unsigned for the operator that follows.
      unsigned_ = unsigned_ || saved;
      return v;
    }
    for (const char* f : {"min(", "max("}) {
      if (Take(f)) {
        int64_t a = Sum();
        EXPECT_TRUE(Take(",")) << s_;
        int64_t b = Sum();
        EXPECT_TRUE(Take(")")) << s_;
        return std::string(f) == "min(" ? std::min(a, b) : std::max(a, b);
      }
    }
    if (p_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[p_]))) {
      int64_t v = 0;
      while (p_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[p_]))) v = v * 10 + (s_[p_++] - '0');
      bool u = false;
      while (p_ < s_.size() && (s_[p_] == 'u' || s_[p_] == 'l' || s_[p_] == 'L')) u |= s_[p_++] == 'u';
      if (u) unsigned_ = true;
      return v;
    }
    size_t b = p_;
    while (p_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[p_])) || s_[p_] == '_')) ++p_;
    std::string name = s_.substr(b, p_ - b);
    auto it = vars_.find(name);
    EXPECT_NE(it, vars_.end()) << "unknown name '" << name << "' in " << s_;
    return it == vars_.end() ? 0 : it->second;
  }

  std::map<std::string, int64_t> vars_;
  std::string s_;
  size_t p_ = 0;
  bool unsigned_ = false;
};

int64_t FloorDiv(int64_t a, int64_t d) { return a >= 0 ? a / d : -((-a + d - 1) / d); }

TEST(CodeBuilderTest, DivAndModAreFloorOperationsForEveryValue) {
  std::mt19937 rng(5);
  int checked = 0;
  for (int trial = 0; trial < 300; ++trial) {
    CodeBuilder code("int");
    const int nvars = 1 + rng() % 3;
    std::vector<int> ids;
    std::vector<int64_t> lo(nvars), hi(nvars), mult(nvars);
    IExpr e(static_cast<int64_t>(rng() % 301) - 150);
    for (int i = 0; i < nvars; ++i) {
      mult[i] = rng() % 3 == 0 ? 2 : 1;
      lo[i] = 0;
      hi[i] = mult[i] * (1 + rng() % 9);
      std::string name = "v" + std::to_string(i);
      code.Line("const int " + name + " = 0;");  // declared by the "caller"
      ids.push_back(code.DeclareVar(name, 0, lo[i], hi[i], mult[i]));
      static const int64_t coeffs[] = {1, 2, 3, -1, -2, 4, 12, 24, -24, 7, -6};
      e = e + IExpr::Var(ids.back(), coeffs[rng() % std::size(coeffs)]);
    }
    const int64_t d = 2 + rng() % 13;
    IExpr q = code.Div(e, d, "q");
    IExpr r = code.Mod(e, d, "r");
    const std::string eq = code.Render(q), er = code.Render(r), ee = code.Render(e);
    StatusOr<std::string> body = code.Finish();
    ASSERT_TRUE(body.ok()) << body.status().ToString();
    // Every assignment of the variables (multiples of their step).
    std::vector<int64_t> val(nvars, 0);
    while (true) {
      std::map<std::string, int64_t> vars;
      for (int i = 0; i < nvars; ++i) vars["v" + std::to_string(i)] = val[i];
      MiniEval ev(vars);
      // The declarations of v_i are in the body too: drop them by re-adding the values after.
      std::string b = *body;
      for (int i = 0; i < nvars; ++i) {
        std::string decl = "const int v" + std::to_string(i) + " = 0;";
        size_t pos = b.find(decl);
        if (pos != std::string::npos) b.erase(pos, decl.size());
      }
      ev.Run(b);
      const int64_t x = ev.Eval(ee);
      ASSERT_EQ(ev.Eval(eq), FloorDiv(x, d))
          << "e = " << ee << " = " << x << ", d = " << d << "\nq = " << eq << "\n" << *body;
      ASSERT_EQ(ev.Eval(er), x - FloorDiv(x, d) * d)
          << "e = " << ee << " = " << x << ", d = " << d << "\nr = " << er << "\n" << *body;
      ++checked;
      int i = 0;
      for (; i < nvars; ++i) {
        val[i] += mult[i];
        if (val[i] <= hi[i]) break;
        val[i] = lo[i];
      }
      if (i == nvars) break;
    }
  }
  EXPECT_GT(checked, 1000);
}

}  // namespace
}  // namespace kiln::codegen
