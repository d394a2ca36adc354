// Random valid HLO modules (random_module.h). Note [Comparable by construction] there says
// what the exactness flags and magnitude bounds below are for.
#include "kiln/hlo/random_module.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kiln/hlo/attributes.h"
#include "kiln/hlo/opcode.h"
#include "kiln/hlo/shape_inference.h"
#include "kiln/hlo/types.h"

namespace kiln {
namespace {

using PT = PrimitiveType;

constexpr double kHuge = 1e30;  // a magnitude bound that means "unknown"

// ---- randomness --------------------------------------------------------------------------

class Source {
 public:
  virtual ~Source() = default;
  // `bytes` (1..8) random bytes as an integer.
  virtual uint64_t Bits(int bytes) = 0;
  // Uniform-ish in [0, n); 0 for n <= 1.
  uint64_t Below(uint64_t n) {
    if (n <= 1) return 0;
    const int bytes = n <= 256 ? 1 : n <= 65536 ? 2 : 4;
    return Bits(bytes) % n;
  }
  int64_t Range(int64_t lo, int64_t hi) {  // inclusive
    return lo + static_cast<int64_t>(Below(static_cast<uint64_t>(hi - lo + 1)));
  }
  bool Chance(int percent) { return static_cast<int>(Below(100)) < percent; }
};

class SeedSource final : public Source {
 public:
  explicit SeedSource(uint64_t seed) : state_(seed * 0x9E3779B97F4A7C15ull + 0x1234567) {}
  uint64_t Bits(int bytes) override {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);  // splitmix64
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return bytes >= 8 ? z : z & ((uint64_t{1} << (8 * bytes)) - 1);
  }

 private:
  uint64_t state_;
};

// The bytes, then a generator seeded with their hash: a short input still makes a module of
// full size (libFuzzer starts with inputs of a few bytes), and a mutation of the bytes changes
// the choices they make and, through the hash, all the rest.
class ByteSource final : public Source {
 public:
  ByteSource(const uint8_t* data, size_t size) : data_(data), size_(size), rest_(Hash(data, size)) {}
  uint64_t Bits(int bytes) override {
    if (pos_ >= size_) return rest_.Bits(bytes);
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= uint64_t{pos_ < size_ ? data_[pos_++] : uint8_t{0}} << (8 * i);
    return v;
  }

 private:
  static uint64_t Hash(const uint8_t* data, size_t size) {
    uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
    for (size_t i = 0; i < size; ++i) h = (h ^ data[i]) * 0x100000001b3ull;
    return h;
  }
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  SeedSource rest_;
};

// ---- values and computations -------------------------------------------------------------

struct Value {
  std::string name;
  Shape shape;        // an array
  bool exact = true;  // Note [Comparable by construction]
  double bound = 1;   // |value| <= bound (infinities and NaN aside)
  int line = -1;      // its defining line in the computation
  bool is_parameter = false;
};

struct Comp {
  std::string name;
  bool is_entry = false;
  int depth = 0;  // nesting of while bodies / branches
  std::vector<std::string> lines;
  std::vector<Value> values;  // arrays only
  std::vector<int> uses;      // per value
  int instructions = 0;       // instructions drawn so far (not counting helpers)
};

bool IsFloat(PT t) { return IsFloatingPointType(t); }
bool IsComplex(PT t) { return IsComplexType(t); }
bool IsInt(PT t) { return IsIntegralType(t); }
bool IsPred(PT t) { return t == PT::kPred; }

double TypeMax(PT t) {
  switch (t) {
    case PT::kPred: return 1;
    case PT::kS8: return 128;
    case PT::kU8: return 255;
    case PT::kS32: return 2147483648.0;
    case PT::kF16: return 65504;
    case PT::kBF16: return 3.4e38;
    case PT::kF32: return 3.4e38;
    default: return kHuge;
  }
}

// Whether float arithmetic with results bounded by `bound` could overflow type t (or take an
// operand that may be infinite: bound kHuge): then the rounding of the operands decides between
// a finite value, an infinity and NaN (inf - inf, 0 * inf), and the backends need not agree.
bool MayOverflow(PT t, double bound) {
  if (!(IsFloatingPointType(t) || IsComplexType(t))) return false;
  const double max = t == PT::kF16 ? 65504 : t == PT::kF64 || t == PT::kC128 ? 1e300 : 3.4e38;
  return bound >= std::min(kHuge, max / 16);
}

// Mantissa bits of a float or complex type (0 otherwise). An inexact value converted to a
// type of more bits would be compared at the wider type's tolerance while it carries the
// narrow type's rounding: such converts take exact values only.
int Precision(PT t) {
  switch (t) {
    case PT::kBF16: return 8;
    case PT::kF16: return 11;
    case PT::kF32: case PT::kC64: return 24;
    case PT::kF64: case PT::kC128: return 53;
    default: return 0;
  }
}
bool Widens(PT from, PT to) { return Precision(from) > 0 && Precision(to) > Precision(from); }

std::string Join(const std::vector<int64_t>& v, const char* sep = ",") {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += sep;
    s += std::to_string(v[i]);
  }
  return s;
}

std::string ShapeText(const Shape& s) { return s.ToString(/*print_layout=*/false); }

std::string FloatText(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  std::string s = buf;
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

// The text of a scalar constant of type t with value v (rounded as the type needs).
std::string ConstantText(PT t, double v) {
  if (IsPred(t)) return v != 0 ? "true" : "false";
  if (IsInt(t)) {
    int64_t i = static_cast<int64_t>(v);
    if (IsUnsignedIntegralType(t) && i < 0) i = -i;
    i = std::min<int64_t>(i, static_cast<int64_t>(TypeMax(t)) - (IsSignedIntegralType(t) ? 1 : 0));
    return std::to_string(i);
  }
  if (IsComplex(t)) return "(" + FloatText(v) + ", " + FloatText(-v / 2) + ")";
  return FloatText(v);
}

class Generator {
 public:
  Generator(Source& src, const RandomModuleOptions& o) : r_(src), o_(o) {}

  RandomModule Generate();

 private:
  // ---- emitting ----
  std::string NewName(const char* prefix = "v") { return prefix + std::to_string(next_id_++); }
  // Emits `name = shape rhs` and, for arrays, records the value. Returns the value's index
  // (-1 for non-arrays).
  int Emit(Comp& c, const std::string& name, const Shape& shape, const std::string& rhs, bool exact,
           double bound, bool is_parameter = false) {
    // Now and then a non-default layout (a permutation of minor_to_major) on an array of rank
    // >= 2: layouts are the compiler's business, the values must not change.
    std::string text = ShapeText(shape);
    if (shape.IsArray() && shape.rank() >= 2 && r_.Chance(layout_percent_)) {
      std::vector<int64_t> m2m(shape.rank());
      for (int64_t i = 0; i < shape.rank(); ++i) m2m[i] = shape.rank() - 1 - i;
      for (int64_t i = shape.rank() - 1; i > 0; --i) std::swap(m2m[i], m2m[r_.Below(i + 1)]);
      Shape with = shape;
      with.set_layout(Layout(m2m));
      text = with.ToString(/*print_layout=*/true);
    }
    c.lines.push_back(name + " = " + text + " " + rhs);
    if (!shape.IsArray()) return -1;
    Value v;
    v.name = name;
    v.shape = shape;
    v.exact = exact || !(IsFloat(shape.element_type()) || IsComplex(shape.element_type()));
    v.bound = std::min(bound, kHuge);
    // A value that may exceed its float type's range may be infinite.
    if (MayOverflow(shape.element_type(), v.bound * 16)) v.bound = kHuge;
    if (IsInt(shape.element_type()) || IsPred(shape.element_type()))
      v.bound = std::min(v.bound, TypeMax(shape.element_type()));
    v.line = static_cast<int>(c.lines.size()) - 1;
    v.is_parameter = is_parameter;
    c.values.push_back(v);
    c.uses.push_back(0);
    return static_cast<int>(c.values.size()) - 1;
  }
  Value Get(Comp& c, int index) { return c.values[index]; }
  void Use(Comp& c, const Value& v) {
    for (size_t i = 0; i < c.values.size(); ++i)
      if (c.values[i].name == v.name) ++c.uses[i];
  }

  // ---- random shapes and types ----
  PT RandomType() {
    static const std::pair<PT, int> kWeights[] = {
        {PT::kF32, 30}, {PT::kS32, 15}, {PT::kF16, 7}, {PT::kBF16, 7}, {PT::kF64, 6},
        {PT::kC64, 5},  {PT::kS8, 6},   {PT::kU8, 6},  {PT::kPred, 8}};
    int total = 0;
    for (auto& [t, w] : kWeights) total += w;
    int x = static_cast<int>(r_.Below(total));
    for (auto& [t, w] : kWeights) {
      if (x < w) return t;
      x -= w;
    }
    return PT::kF32;
  }
  int64_t RandomDim() {
    if (big_ && r_.Chance(25)) {
      static const int64_t kBig[] = {15, 16, 17, 31, 32, 33, 63, 64, 100, 129};
      return kBig[r_.Below(10)];
    }
    return r_.Chance(3) ? 0 : r_.Range(1, o_.max_dim);
  }
  // A size in [0, d], rarely 0 when d > 0.
  int64_t SizeUpTo(int64_t d) { return r_.Chance(5) ? r_.Range(0, d) : r_.Range(std::min<int64_t>(1, d), d); }
  std::vector<int64_t> Capped(std::vector<int64_t> dims) {
    auto count = [&] {
      int64_t n = 1;
      for (int64_t d : dims) n *= d;
      return n;
    };
    while (count() > o_.max_elements) {
      // Halve a random dimension; the largest when the draw is one that cannot shrink (bytes
      // that ran out always draw the first: eval_fuzzer's timeout-018ceb2d looped here).
      size_t i = r_.Below(dims.size());
      if (dims[i] <= 1) i = std::max_element(dims.begin(), dims.end()) - dims.begin();
      dims[i] = (dims[i] + 1) / 2;
    }
    return dims;
  }
  Shape RandomShape(PT t, int min_rank = 0) {
    static const int kRankWeights[] = {10, 30, 30, 20, 10};  // ranks 0..4
    int rank = 0;
    for (int x = static_cast<int>(r_.Below(100)); rank < 4 && x >= kRankWeights[rank]; ++rank) x -= kRankWeights[rank];
    rank = std::clamp(rank, min_rank, std::max(min_rank, o_.max_rank));
    std::vector<int64_t> dims;
    for (int i = 0; i < rank; ++i) dims.push_back(RandomDim());
    return Shape::Array(t, Capped(dims));
  }

  // ---- operands ----
  // A value of `c` satisfying `ok`, preferring recent ones; -1 when none does.
  template <typename F>
  int Find(Comp& c, F ok) {
    std::vector<int> cands;
    for (size_t i = 0; i < c.values.size(); ++i)
      if (ok(c.values[i])) cands.push_back(static_cast<int>(i));
    if (cands.empty()) return -1;
    if (cands.size() > 3 && r_.Chance(50)) return cands[cands.size() - 1 - r_.Below(3)];
    return cands[r_.Below(cands.size())];
  }
  int Parameter(Comp& c, const Shape& shape) {
    const std::string name = NewName("p");
    const int index = Emit(c, name, shape, "parameter(" + std::to_string(params_.size()) + ")", true,
                           IsInt(shape.element_type()) ? 8 : 1, true);
    params_.push_back(shape);
    return index;
  }
  std::string Constant(Comp& c, PT t, double v) {
    const std::string name = NewName("c");
    Emit(c, name, Shape::Scalar(t), "constant(" + ConstantText(t, v) + ")", true, std::fabs(v));
    ++c.uses.back();  // an operand of what asked for it, never a root of its own
    return name;
  }
  double RandomConstantValue(PT t) {
    if (IsPred(t)) return static_cast<double>(r_.Below(2));
    if (IsInt(t)) return static_cast<double>(r_.Range(IsUnsignedIntegralType(t) ? 0 : -5, 12));
    return static_cast<double>(r_.Range(-16, 16)) / 8.0;
  }
  // Any array value of `c`; the entry makes a parameter when it has none.
  int Any(Comp& c) {
    if (c.values.empty() || (c.is_entry && params_.size() < static_cast<size_t>(o_.max_parameters) &&
                             r_.Chance(c.values.size() < 2 ? 80 : 8)))
      return Parameter(c, RandomShape(RandomType()));
    return Find(c, [](const Value&) { return true; });
  }
  // A value of exactly `shape` (exact when `exact`): an existing one, a parameter (entry), an
  // iota, a convert of a value of the same dimensions, or a broadcast constant.
  int Need(Comp& c, const Shape& shape, bool exact) {
    const PT t = shape.element_type();
    if (r_.Chance(75)) {
      int i = Find(c, [&](const Value& v) { return Shape::Compatible(v.shape, shape) && (!exact || v.exact); });
      if (i >= 0) return i;
    }
    const int choice = static_cast<int>(r_.Below(100));
    if (c.is_entry && params_.size() < static_cast<size_t>(o_.max_parameters) && choice < 45)
      return Parameter(c, shape);
    if (choice < 65) {
      // A convert of a value with the same dimensions.
      int i = Find(c, [&](const Value& v) {
        if (v.shape.dimensions() != shape.dimensions()) return false;
        const PT s = v.shape.element_type();
        if (IsComplex(s) && !IsComplex(t)) return false;
        const bool discontinuous = ((IsInt(t) || IsPred(t)) && (IsFloat(s) || IsComplex(s))) || Widens(s, t);
        return v.exact || (!exact && !discontinuous);
      });
      if (i >= 0 && InferConvertShape(c.values[i].shape, t).ok()) {
        Value v = Get(c, i);
        Use(c, v);
        double b = v.bound;
        if (IsPred(v.shape.element_type())) b = 1;
        return Emit(c, NewName(), shape, "convert(" + v.name + ")", v.exact, b);
      }
    }
    if (choice < 80 && shape.rank() >= 1 && (IsInt(t) || IsFloat(t))) {
      const int64_t dim = r_.Below(shape.rank());
      return Emit(c, NewName(), shape, "iota(), iota_dimension=" + std::to_string(dim), true,
                  static_cast<double>(o_.max_dim));
    }
    if (choice < 90 && shape.rank() >= 1 && shape.num_elements() <= 64) {
      // An array constant: what constant folding and the simplifier get to work on.
      double b = 0;
      std::vector<int64_t> index(shape.rank(), 0);
      std::string lit;
      const int64_t n = shape.num_elements();
      for (int64_t e = 0; e < n; ++e) {
        // Opening braces for every dimension whose index is 0 from the innermost outwards.
        int64_t open = 0;
        for (int64_t d = shape.rank() - 1; d >= 0 && index[d] == 0; --d) ++open;
        if (e > 0) lit += ", ";
        lit += std::string(open, '{');
        double v = RandomConstantValue(t);
        if (specials_ && (IsFloat(t) || IsComplex(t)) && r_.Chance(15)) {
          static const double kSpecials[] = {std::numeric_limits<double>::infinity(),
                                             -std::numeric_limits<double>::infinity(),
                                             std::numeric_limits<double>::quiet_NaN(), -0.0};
          v = kSpecials[r_.Below(4)];
        }
        b = std::max(b, std::isfinite(v) ? std::fabs(v) : kHuge);
        lit += ConstantText(t, v);
        // Advance the index, closing the dimensions that wrap.
        int64_t d = shape.rank() - 1;
        int64_t close = 0;
        for (; d >= 0; --d) {
          if (++index[d] < shape.dimensions(d)) break;
          index[d] = 0;
          ++close;
        }
        lit += std::string(close, '}');
      }
      if (n == 0) {
        for (int64_t d = 0; d < shape.rank(); ++d) lit += "{";
        lit = "{}";
      }
      return Emit(c, NewName("k"), shape, "constant(" + lit + ")", true, b);
    }
    const double cv = RandomConstantValue(t);
    const std::string k = Constant(c, t, cv);
    if (shape.rank() == 0) return static_cast<int>(c.values.size()) - 1;
    return Emit(c, NewName(), shape, "broadcast(" + k + "), dimensions={}", true, std::fabs(cv));
  }
  // A scalar index of type s32: a constant (possibly out of range: ops clamp) or an exact
  // scalar integer value.
  std::string Index(Comp& c) {
    if (r_.Chance(40)) {
      int i = Find(c, [](const Value& v) { return v.shape.rank() == 0 && v.shape.element_type() == PT::kS32; });
      if (i >= 0) {
        Use(c, c.values[i]);
        return c.values[i].name;
      }
    }
    if (c.is_entry && params_.size() < static_cast<size_t>(o_.max_parameters) && r_.Chance(25)) {
      int i = Parameter(c, Shape::Scalar(PT::kS32));
      Use(c, c.values[i]);
      return c.values[i].name;
    }
    return Constant(c, PT::kS32, static_cast<double>(r_.Range(-2, 10)));
  }

  // ---- computations called by ops ----
  // A scalar reducer: kind add|multiply|maximum|minimum|and|or over type t (2 params, or 2N for
  // a variadic one is not generated).
  std::string Reducer(const std::string& op, PT t) {
    const std::string key = op + "_" + std::string(PrimitiveTypeName(t));
    for (auto& [k, name] : reducers_)
      if (k == key) return name;
    const std::string name = "red_" + key + "_" + std::to_string(next_id_++);
    const std::string s = std::string(PrimitiveTypeName(t)) + "[]";
    computations_.push_back(name + " {\n  a = " + s + " parameter(0)\n  b = " + s + " parameter(1)\n  ROOT r = " +
                            s + " " + op + "(a, b)\n}\n");
    reducers_.push_back({key, name});
    return name;
  }
  // A sort comparator over the first of `types` (one pair of parameters per type).
  std::string Comparator(const std::vector<PT>& types, bool greater) {
    const std::string name = NewName("cmp");
    std::string body = name + " {\n";
    for (size_t i = 0; i < types.size(); ++i)
      for (int j = 0; j < 2; ++j)
        body += "  q" + std::to_string(2 * i + j) + " = " + std::string(PrimitiveTypeName(types[i])) +
                "[] parameter(" + std::to_string(2 * i + j) + ")\n";
    body += "  ROOT lt = pred[] compare(q0, q1), direction=" + std::string(greater ? "GT" : "LT");
    if (IsFloat(types[0])) body += ", type=TOTALORDER";
    body += "\n}\n";
    computations_.push_back(body);
    return name;
  }
  // Reduction kinds for type t; the identity and whether the result stays exact.
  struct ReduceKind {
    std::string op;
    double init;
  };
  std::optional<ReduceKind> RandomReduceKind(PT t, bool allow_multiply = true) {
    std::vector<ReduceKind> kinds;
    const double inf = std::numeric_limits<double>::infinity();
    if (IsPred(t)) {
      kinds = {{"and", 1}, {"or", 0}};
    } else if (IsComplex(t)) {
      kinds = {{"add", 0}};
      if (allow_multiply) kinds.push_back({"multiply", 1});
    } else {
      const double lo = IsUnsignedIntegralType(t) ? 0 : IsInt(t) ? -TypeMax(t) : -inf;
      const double hi = IsInt(t) ? TypeMax(t) - 1 : inf;
      kinds = {{"add", 0}, {"maximum", lo}, {"minimum", hi}};
      if (allow_multiply) kinds.push_back({"multiply", 1});
    }
    ReduceKind k = kinds[r_.Below(kinds.size())];
    if (r_.Chance(20) && k.op != "and" && k.op != "or") k.init = RandomConstantValue(t);
    return k;
  }
  bool ReduceExact(const std::string& op, PT t, bool in_exact) {
    if (!(IsFloat(t) || IsComplex(t))) return true;
    return (op == "maximum" || op == "minimum") && in_exact;
  }
  double ReduceBound(const std::string& op, double bound, double init, int64_t n) {
    if (op == "add") return bound * static_cast<double>(n) + std::fabs(init);
    if (op == "multiply") return bound <= 1 ? std::max(1.0, std::fabs(init)) : kHuge;
    return std::max(bound, std::fabs(init));
  }

  // ---- ops: each appends an instruction to `c`, or returns false (nothing of use emitted) ----
  bool Unary(Comp& c);
  bool Binary(Comp& c);
  bool Select(Comp& c);
  bool Clamp(Comp& c);
  bool Convert(Comp& c);
  bool BitcastConvert(Comp& c);
  bool Broadcast(Comp& c);
  bool Reshape(Comp& c);
  bool Transpose(Comp& c);
  bool Slice(Comp& c);
  bool DynamicSlice(Comp& c);
  bool DynamicUpdateSlice(Comp& c);
  bool Concatenate(Comp& c);
  bool Pad(Comp& c);
  bool Reverse(Comp& c);
  bool Iota(Comp& c);
  bool Reduce(Comp& c);
  bool ReduceWindow(Comp& c);
  bool Dot(Comp& c);
  bool Gather(Comp& c);
  bool Scatter(Comp& c);
  bool Sort(Comp& c);
  bool TupleGte(Comp& c);
  bool While(Comp& c);
  bool Conditional(Comp& c);
  bool ArgMax(Comp& c);
  bool Call(Comp& c);
  bool Map(Comp& c);
  bool ReducePrecision(Comp& c);
  bool Convolution(Comp& c);

  // Draws `n` instructions into `c`.
  void Fill(Comp& c, int n) {
    for (int i = 0; i < n; ++i) {
      for (int attempt = 0; attempt < 4; ++attempt)
        if (OneOp(c)) break;
    }
  }
  bool OneOp(Comp& c) {
    struct Op {
      bool (Generator::*fn)(Comp&);
      int weight;
    };
    const bool nest = c.depth < o_.max_nesting;
    const Op ops[] = {
        {&Generator::Unary, 12},       {&Generator::Binary, 16},        {&Generator::Select, 3},
        {&Generator::Clamp, 2},        {&Generator::Convert, 5},        {&Generator::BitcastConvert, 2},
        {&Generator::Broadcast, 4},    {&Generator::Reshape, 4},        {&Generator::Transpose, 4},
        {&Generator::Slice, 4},        {&Generator::DynamicSlice, 3},   {&Generator::DynamicUpdateSlice, 3},
        {&Generator::Concatenate, 3},  {&Generator::Pad, 3},            {&Generator::Reverse, 2},
        {&Generator::Iota, 1},         {&Generator::Reduce, 6},         {&Generator::ReduceWindow, 3},
        {&Generator::Dot, 5},          {&Generator::Gather, 3},         {&Generator::Scatter, 3},
        {&Generator::Sort, 3},         {&Generator::TupleGte, 1},       {&Generator::While, nest ? 2 : 0},
        {&Generator::Conditional, nest ? 2 : 0}, {&Generator::Call, nest ? 1 : 0},
        {&Generator::ArgMax, 3},       {&Generator::Map, 2},            {&Generator::ReducePrecision, 1},
        {&Generator::Convolution, 3},
    };
    int total = 0;
    for (const Op& op : ops) total += op.weight;
    int x = static_cast<int>(r_.Below(total));
    for (const Op& op : ops) {
      if (x < op.weight) return (this->*op.fn)(c);
      x -= op.weight;
    }
    return false;
  }

  // Marks a value of `c` as its root (a tuple of `roots` when several).
  void SetRoot(Comp& c, const std::vector<int>& roots, bool force_tuple = false) {
    if (roots.size() == 1 && !force_tuple) {
      std::string& line = c.lines[c.values[roots[0]].line];
      line = "ROOT " + line;
      return;
    }
    std::vector<Shape> shapes;
    std::string ops;
    for (size_t i = 0; i < roots.size(); ++i) {
      shapes.push_back(c.values[roots[i]].shape);
      if (i) ops += ", ";
      ops += c.values[roots[i]].name;
    }
    c.lines.push_back("ROOT " + NewName("out") + " = " + ShapeText(Shape::Tuple(shapes)) + " tuple(" + ops + ")");
  }
  std::string Text(const Comp& c) const {
    std::string s = (c.is_entry ? "ENTRY " : "") + c.name + " {\n";
    for (const std::string& l : c.lines) s += "  " + l + "\n";
    return s + "}\n";
  }

  // A sub-computation (while body, conditional branch) over parameter `param` (tuple-shaped
  // when `elements` has several): draws up to max_body_instructions and returns it, the
  // caller sets its root.
  Comp SubComputation(const std::string& name, int depth, const std::vector<Value>& elements, bool tuple_param) {
    Comp s;
    s.name = name;
    s.depth = depth;
    if (!tuple_param) {
      Value v = elements[0];
      Emit(s, v.name, v.shape, "parameter(0)", v.exact, v.bound, true);
    } else {
      std::vector<Shape> shapes;
      for (const Value& v : elements) shapes.push_back(v.shape);
      const std::string pname = NewName("st");
      Emit(s, pname, Shape::Tuple(shapes), "parameter(0)", true, 1, true);
      for (size_t i = 0; i < elements.size(); ++i)
        Emit(s, elements[i].name, elements[i].shape, "get-tuple-element(" + pname + "), index=" + std::to_string(i),
             elements[i].exact, elements[i].bound, true);
    }
    Fill(s, static_cast<int>(r_.Range(0, o_.max_body_instructions)));
    return s;
  }
  // The value of `s` to return as `shape`: a recent non-parameter value of that shape, else a
  // parameter of it, else a new one (Need).
  int ResultOf(Comp& s, const Shape& shape) {
    int i = -1;
    for (int j = static_cast<int>(s.values.size()) - 1; j >= 0; --j)
      if (Shape::Compatible(s.values[j].shape, shape) && !s.values[j].is_parameter) {
        i = j;
        break;
      }
    if (i < 0 || r_.Chance(15)) i = Need(s, shape, false);
    return i;
  }

  Source& r_;
  RandomModuleOptions o_;
  int layout_percent_ = 0;
  bool big_ = false;
  bool specials_ = false;  // array constants of this module hold inf, -inf, NaN and -0 now and then  // this module draws some large dimensions (and max_big_elements)  // chance of a non-default layout per array (set per module)
  int next_id_ = 0;
  std::vector<Shape> params_;
  std::vector<std::string> computations_;
  std::vector<std::pair<std::string, std::string>> reducers_;
};

// ---- elementwise -------------------------------------------------------------------------

bool Generator::Unary(Comp& c) {
  Value a = Get(c, Any(c));
  const PT t = a.shape.element_type();
  struct U {
    const char* op;
    bool needs_exact;
    int out;  // 0: inexact, 1: exact as input, 2: exact
  };
  std::vector<U> ops;
  if (IsFloat(t)) {
    ops = {{"negate", false, 1}, {"abs", false, 1},  {"copy", false, 1},     {"tanh", false, 0},
           {"logistic", false, 0}, {"floor", true, 2}, {"ceil", true, 2},    {"round-nearest-even", true, 2},
           {"round-nearest-afz", true, 2}, {"sign", true, 2}, {"sqrt", true, 0}, {"rsqrt", true, 0},
           {"log", true, 0}, {"log-plus-one", true, 0}, {"cbrt", true, 0}, {"is-finite", true, 2}};
    if (a.bound <= 8) ops.insert(ops.end(), {{"exponential", false, 0}, {"exponential-minus-one", false, 0}});
    if (a.bound <= 100) ops.insert(ops.end(), {{"sine", false, 0}, {"cosine", false, 0}});
  } else if (IsComplex(t)) {
    ops = {{"negate", false, 1}, {"copy", false, 1}, {"abs", false, 0}, {"real", false, 1},
           {"imag", false, 1},   {"sqrt", true, 0},  {"log", true, 0}};
    if (a.bound <= 4) ops.insert(ops.end(), {{"exponential", false, 0}, {"sine", false, 0}, {"cosine", false, 0}});
  } else if (IsInt(t)) {
    ops = {{"negate", false, 2}, {"abs", false, 2}, {"not", false, 2}, {"popcnt", false, 2},
           {"count-leading-zeros", false, 2}, {"sign", false, 2}, {"copy", false, 2}};
  } else {
    ops = {{"not", false, 2}, {"copy", false, 2}};
  }
  std::vector<U> usable;
  for (const U& u : ops)
    if (!u.needs_exact || a.exact) usable.push_back(u);
  if (usable.empty()) return false;
  const U u = usable[r_.Below(usable.size())];
  auto op = ParseHloOpcode(u.op);
  if (!op) return false;
  auto shape = InferUnaryOpShape(*op, a.shape);
  if (!shape.ok()) return false;
  const std::string name = u.op;
  double b = a.bound;
  if (name == "tanh" || name == "logistic" || name == "sine" || name == "cosine" || name == "sign") b = 1;
  if (IsComplex(t) && (name == "sine" || name == "cosine")) b = 30;
  if (name == "exponential" || name == "exponential-minus-one") b = std::exp(a.bound) + 1;
  if (name == "floor" || name == "ceil" || name.starts_with("round")) b = a.bound + 1;
  if (name == "cbrt") b = std::cbrt(a.bound) + 1;
  if (name == "sqrt") b = kHuge;  // sqrt(-1) = NaN (of either sign: kHuge also means "may be NaN")
  if (name == "rsqrt") b = kHuge;
  if (name == "log" || name == "log-plus-one") b = kHuge;  // log(0) = -inf
  if (name == "is-finite") b = 1;
  Use(c, a);
  Emit(c, NewName(), *shape, name + "(" + a.name + ")", u.out == 2 || (u.out == 1 && a.exact), b);
  return true;
}

bool Generator::Binary(Comp& c) {
  Value a = Get(c, Any(c));
  const PT t = a.shape.element_type();
  struct B {
    const char* op;
    bool lhs_exact, rhs_exact;
    int out;  // 0: inexact, 1: exact when both are, 2: exact
  };
  std::vector<B> ops;
  if (IsFloat(t)) {
    ops = {{"add", false, false, 0},     {"subtract", false, false, 0}, {"multiply", false, false, 0},
           {"maximum", false, false, 1}, {"minimum", false, false, 1},  {"divide", true, true, 0},
           {"power", true, true, 0},     {"remainder", true, true, 2},  {"atan2", true, true, 0},
           {"compare", true, true, 2}};
  } else if (IsComplex(t)) {
    ops = {{"add", false, false, 0}, {"subtract", false, false, 0}, {"multiply", false, false, 0},
           {"divide", true, true, 0}, {"compare", true, true, 2}};
  } else if (IsInt(t)) {
    for (const char* op : {"add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum", "and", "or",
                           "xor", "shift-left", "shift-right-logical", "shift-right-arithmetic", "power", "compare"})
      ops.push_back({op, false, false, 2});
  } else {
    for (const char* op : {"and", "or", "xor", "compare", "maximum", "minimum"}) ops.push_back({op, false, false, 2});
  }
  std::vector<B> usable;
  for (const B& o : ops)
    if (!o.lhs_exact || a.exact) usable.push_back(o);
  if (usable.empty()) return false;
  const B o = usable[r_.Below(usable.size())];
  const std::string name = o.op;
  Value b = Get(c, Need(c, a.shape, o.rhs_exact));
  std::string attrs;
  Shape shape;
  if (name == "compare") {
    static const char* kDirs[] = {"EQ", "NE", "LT", "LE", "GT", "GE"};
    const char* dir = kDirs[r_.Below(IsComplex(t) ? 2 : 6)];
    attrs = std::string(", direction=") + dir;
    // TOTALORDER orders NaNs by sign, which IEEE leaves open for NaNs arithmetic makes: only
    // for values that cannot be NaN.
    if (IsFloat(t) && r_.Chance(30) && a.bound < kHuge && b.bound < kHuge) attrs += ", type=TOTALORDER";
    shape = Shape::Array(PT::kPred, a.shape.dimensions());
  } else {
    auto op = ParseHloOpcode(o.op);
    if (!op) return false;
    auto s = InferBinaryOpShape(*op, a.shape, b.shape);
    if (!s.ok()) return false;
    shape = *s;
  }
  double bound = std::max(a.bound, b.bound);
  if (name == "add" || name == "subtract") bound = a.bound + b.bound;
  if (name == "multiply") bound = a.bound * b.bound;
  if (name == "divide" || name == "power" || (name == "remainder" && !IsInt(t))) bound = kHuge;  // may be NaN
  if (name == "atan2") bound = 4;
  if (name == "compare") bound = 1;
  // One correctly rounded op on exact operands is the same everywhere, infinities and NaN
  // included (x * inf, inf - inf: what simplifications must get right); on inexact ones an
  // infinity or an overflow makes rounding decide.
  if ((name == "add" || name == "subtract" || name == "multiply") && !(a.exact && b.exact) &&
      (MayOverflow(t, bound) || MayOverflow(t, a.bound) || MayOverflow(t, b.bound)))
    return false;
  if (IsInt(t) && name != "maximum" && name != "minimum" && name != "and" && name != "xor" && name != "or") bound = kHuge;
  Use(c, a);
  Use(c, b);
  Emit(c, NewName(), shape, name + "(" + a.name + ", " + b.name + ")" + attrs,
       o.out == 2 || (o.out == 1 && a.exact && b.exact), bound);
  return true;
}

bool Generator::Select(Comp& c) {
  Value a = Get(c, Any(c));
  Value p = Get(c, Need(c, Shape::Array(PT::kPred, a.shape.dimensions()), true));
  Value b = Get(c, Need(c, a.shape, false));
  if (!InferSelectShape(p.shape, a.shape, b.shape).ok()) return false;
  Use(c, p);
  Use(c, a);
  Use(c, b);
  Emit(c, NewName(), a.shape, "select(" + p.name + ", " + a.name + ", " + b.name + ")", a.exact && b.exact,
       std::max(a.bound, b.bound));
  return true;
}

bool Generator::Clamp(Comp& c) {
  Value x = Get(c, Any(c));
  const PT t = x.shape.element_type();
  if (IsPred(t) || IsComplex(t)) return false;
  std::string lo, hi;
  double b = x.bound;
  bool exact = x.exact;
  if (r_.Chance(70)) {
    const double a1 = RandomConstantValue(t), a2 = RandomConstantValue(t);
    lo = Constant(c, t, r_.Chance(90) ? std::min(a1, a2) : std::max(a1, a2));
    hi = Constant(c, t, r_.Chance(90) ? std::max(a1, a2) : std::min(a1, a2));
    b = std::max(std::fabs(a1), std::fabs(a2));
  } else {
    Value l = Get(c, Need(c, x.shape, false)), h = Get(c, Need(c, x.shape, false));
    Use(c, l);
    Use(c, h);
    lo = l.name;
    hi = h.name;
    exact = exact && l.exact && h.exact;
    b = std::max({b, l.bound, h.bound});
  }
  Use(c, x);
  Emit(c, NewName(), x.shape, "clamp(" + lo + ", " + x.name + ", " + hi + ")", exact, b);
  return true;
}

bool Generator::Convert(Comp& c) {
  Value a = Get(c, Any(c));
  const PT s = a.shape.element_type();
  const PT t = RandomType();
  if ((IsFloat(s) || IsComplex(s)) && (IsInt(t) || IsPred(t) || Widens(s, t)) && !a.exact) return false;
  auto shape = InferConvertShape(a.shape, t);
  if (!shape.ok()) return false;
  double b = a.bound;
  if (IsPred(s)) b = 1;
  Use(c, a);
  Emit(c, NewName(), *shape, "convert(" + a.name + ")", a.exact || !(IsFloat(s) || IsComplex(s)), b);
  return true;
}

bool Generator::BitcastConvert(Comp& c) {
  Value a = Get(c, Any(c));
  // The bits of a NaN that arithmetic made (its sign) are not the same everywhere.
  if (!a.exact || a.bound >= kHuge) return false;
  const PT s = a.shape.element_type();
  PT t = RandomType();
  Shape in = a.shape;
  // Wider targets need a minor dimension of the width ratio: reshape to one first.
  const int sw = PrimitiveBitWidth(s), tw = PrimitiveBitWidth(t);
  if (sw == 0 || tw == 0 || IsPred(s) || IsPred(t)) return false;
  std::string operand = a.name;
  if (tw > sw) {
    const int64_t ratio = tw / sw;
    std::vector<int64_t> dims = a.shape.dimensions();
    if (dims.empty() || dims.back() != ratio) {
      dims.push_back(ratio);
      if (static_cast<int64_t>(dims.size()) > o_.max_rank) return false;
      dims = Capped(dims);
      if (dims.back() != ratio) return false;
      Value w = Get(c, Need(c, Shape::Array(s, dims), true));
      if (!w.exact) return false;
      operand = w.name;
      in = w.shape;
      Use(c, w);
    }
  }
  auto shape = InferBitcastConvertShape(in, t);
  if (!shape.ok() || shape->rank() > o_.max_rank || shape->num_elements() > o_.max_elements) return false;
  if (operand == a.name) Use(c, a);
  Emit(c, NewName(), *shape, "bitcast-convert(" + operand + ")", true, IsFloat(t) || IsComplex(t) ? kHuge : TypeMax(t));
  return true;
}

// ---- shape ops ---------------------------------------------------------------------------

bool Generator::Broadcast(Comp& c) {
  Value a = Get(c, Any(c));
  const int r = static_cast<int>(a.shape.rank());
  if (r > o_.max_rank) return false;
  const int R = static_cast<int>(r_.Range(r, o_.max_rank));
  // Positions of the operand's dimensions: an increasing subset of [0, R).
  std::vector<int64_t> pos;
  {
    std::vector<int64_t> all(R);
    for (int i = 0; i < R; ++i) all[i] = i;
    for (int i = 0; i < r; ++i) {
      const int64_t j = i + r_.Below(R - i);
      std::swap(all[i], all[j]);
    }
    pos.assign(all.begin(), all.begin() + r);
    std::sort(pos.begin(), pos.end());
  }
  std::vector<int64_t> dims(R, 0);
  std::vector<bool> fixed(R, false);
  for (int i = 0; i < r; ++i) {
    dims[pos[i]] = a.shape.dimensions(i);
    fixed[pos[i]] = true;
  }
  int64_t n = a.shape.num_elements();
  for (int i = 0; i < R; ++i) {
    if (fixed[i]) continue;
    int64_t d = RandomDim();
    while (d > 1 && n * d > o_.max_elements) d /= 2;
    if (n * d > o_.max_elements) d = n == 0 ? d : 1;
    dims[i] = d;
    n *= std::max<int64_t>(d, 1);
  }
  Shape out = Shape::Array(a.shape.element_type(), dims);
  if (!InferBroadcastShape(a.shape, dims, pos).ok() || out.num_elements() > o_.max_elements) return false;
  Use(c, a);
  Emit(c, NewName(), out, "broadcast(" + a.name + "), dimensions={" + Join(pos) + "}", a.exact, a.bound);
  return true;
}

bool Generator::Reshape(Comp& c) {
  Value a = Get(c, Any(c));
  const int64_t n = a.shape.num_elements();
  std::vector<int64_t> dims;
  const int R = static_cast<int>(r_.Range(n == 1 ? 0 : 1, o_.max_rank));
  if (n == 0) {
    for (int i = 0; i < R; ++i) dims.push_back(r_.Range(0, 4));
    dims[r_.Below(R)] = 0;
  } else {
    int64_t rest = n;
    for (int i = 0; i + 1 < R; ++i) {
      std::vector<int64_t> divisors;
      for (int64_t d = 1; d <= rest; ++d)
        if (rest % d == 0) divisors.push_back(d);
      const int64_t d = divisors[r_.Below(divisors.size())];
      dims.push_back(d);
      rest /= d;
    }
    if (R > 0) dims.push_back(rest);
  }
  auto shape = InferReshapeShape(a.shape, dims);
  if (!shape.ok()) return false;
  Use(c, a);
  Emit(c, NewName(), *shape, "reshape(" + a.name + ")", a.exact, a.bound);
  return true;
}

bool Generator::Transpose(Comp& c) {
  Value a = Get(c, Any(c));
  const int64_t r = a.shape.rank();
  if (r < 2) return false;
  std::vector<int64_t> perm(r);
  for (int64_t i = 0; i < r; ++i) perm[i] = i;
  for (int64_t i = r - 1; i > 0; --i) std::swap(perm[i], perm[r_.Below(i + 1)]);
  auto shape = InferTransposeShape(a.shape, perm);
  if (!shape.ok()) return false;
  Use(c, a);
  Emit(c, NewName(), *shape, "transpose(" + a.name + "), dimensions={" + Join(perm) + "}", a.exact, a.bound);
  return true;
}

bool Generator::Slice(Comp& c) {
  Value a = Get(c, Any(c));
  if (a.shape.rank() == 0) return false;
  std::vector<SliceDimension> sl;
  std::string text;
  for (int64_t i = 0; i < a.shape.rank(); ++i) {
    const int64_t d = a.shape.dimensions(i);
    SliceDimension s;
    s.start = r_.Range(0, std::max<int64_t>(d - 1, 0));
    s.limit = r_.Chance(5) ? s.start : r_.Range(std::min(s.start + 1, d), d);
    s.stride = r_.Chance(70) ? 1 : r_.Range(2, 3);
    sl.push_back(s);
    if (i) text += ", ";
    text += "[" + std::to_string(s.start) + ":" + std::to_string(s.limit) +
            (s.stride != 1 ? ":" + std::to_string(s.stride) : "") + "]";
  }
  auto shape = InferSliceShape(a.shape, sl);
  if (!shape.ok()) return false;
  Use(c, a);
  Emit(c, NewName(), *shape, "slice(" + a.name + "), slice={" + text + "}", a.exact, a.bound);
  return true;
}

bool Generator::DynamicSlice(Comp& c) {
  Value a = Get(c, Any(c));
  if (a.shape.rank() == 0) return false;
  std::vector<int64_t> sizes;
  for (int64_t d : a.shape.dimensions()) sizes.push_back(SizeUpTo(d));
  std::string ops = a.name;
  std::vector<Shape> index_shapes;
  for (int64_t i = 0; i < a.shape.rank(); ++i) {
    ops += ", " + Index(c);
    index_shapes.push_back(Shape::Scalar(PT::kS32));
  }
  std::vector<const Shape*> ip;
  for (const Shape& s : index_shapes) ip.push_back(&s);
  auto shape = InferDynamicSliceShape(a.shape, ip, sizes);
  if (!shape.ok()) return false;
  Use(c, a);
  Emit(c, NewName(), *shape, "dynamic-slice(" + ops + "), dynamic_slice_sizes={" + Join(sizes) + "}", a.exact,
       a.bound);
  return true;
}

bool Generator::DynamicUpdateSlice(Comp& c) {
  Value a = Get(c, Any(c));
  if (a.shape.rank() == 0) return false;
  std::vector<int64_t> sizes;
  for (int64_t d : a.shape.dimensions()) sizes.push_back(SizeUpTo(d));
  Value u = Get(c, Need(c, Shape::Array(a.shape.element_type(), sizes), false));
  std::string ops = a.name + ", " + u.name;
  std::vector<Shape> index_shapes;
  for (int64_t i = 0; i < a.shape.rank(); ++i) {
    ops += ", " + Index(c);
    index_shapes.push_back(Shape::Scalar(PT::kS32));
  }
  std::vector<const Shape*> ip;
  for (const Shape& s : index_shapes) ip.push_back(&s);
  auto shape = InferDynamicUpdateSliceShape(a.shape, u.shape, ip);
  if (!shape.ok()) return false;
  Use(c, a);
  Use(c, u);
  Emit(c, NewName(), *shape, "dynamic-update-slice(" + ops + ")", a.exact && u.exact, std::max(a.bound, u.bound));
  return true;
}

bool Generator::Concatenate(Comp& c) {
  Value a = Get(c, Any(c));
  if (a.shape.rank() == 0) return false;
  const int64_t d = r_.Below(a.shape.rank());
  const int k = static_cast<int>(r_.Range(2, 3));
  std::vector<Value> vs = {a};
  int64_t total = a.shape.dimensions(d);
  const int64_t others = d < a.shape.rank() && a.shape.dimensions(d) > 0 ? a.shape.num_elements() / a.shape.dimensions(d)
                                                                         : 1;
  for (int i = 1; i < k; ++i) {
    int j = Find(c, [&](const Value& v) {
      if (v.shape.element_type() != a.shape.element_type() || v.shape.rank() != a.shape.rank()) return false;
      for (int64_t e = 0; e < a.shape.rank(); ++e)
        if (e != d && v.shape.dimensions(e) != a.shape.dimensions(e)) return false;
      return true;
    });
    if (j < 0 || r_.Chance(40)) {
      Shape s = a.shape;
      s.set_dimensions(d, r_.Range(0, 4));
      j = Need(c, s, false);
    }
    vs.push_back(Get(c, j));
    total += vs.back().shape.dimensions(d);
  }
  if (total * std::max<int64_t>(others, 1) > o_.max_elements) return false;
  std::vector<const Shape*> shapes;
  for (const Value& v : vs) shapes.push_back(&v.shape);
  auto shape = InferConcatenateShape(shapes, d);
  if (!shape.ok() || shape->num_elements() > o_.max_elements) return false;
  std::string ops;
  bool exact = true;
  double b = 0;
  for (size_t i = 0; i < vs.size(); ++i) {
    Use(c, vs[i]);
    if (i) ops += ", ";
    ops += vs[i].name;
    exact = exact && vs[i].exact;
    b = std::max(b, vs[i].bound);
  }
  Emit(c, NewName(), *shape, "concatenate(" + ops + "), dimensions={" + std::to_string(d) + "}", exact, b);
  return true;
}

bool Generator::Pad(Comp& c) {
  Value a = Get(c, Any(c));
  if (a.shape.rank() == 0) return false;
  const PT t = a.shape.element_type();
  const double pv = RandomConstantValue(t);
  std::vector<PaddingDimension> pads;
  std::string text;
  for (int64_t i = 0; i < a.shape.rank(); ++i) {
    PaddingDimension p;
    p.low = r_.Range(-2, 3);
    p.high = r_.Range(-2, 3);
    p.interior = r_.Chance(70) ? 0 : r_.Range(1, 2);
    pads.push_back(p);
    if (i) text += "x";
    text += std::to_string(p.low) + "_" + std::to_string(p.high);
    if (p.interior) text += "_" + std::to_string(p.interior);
  }
  const Shape scalar = Shape::Scalar(t);
  auto shape = InferPadShape(a.shape, scalar, pads);
  if (!shape.ok() || shape->num_elements() > o_.max_elements) return false;
  const std::string k = Constant(c, t, pv);
  Use(c, a);
  Emit(c, NewName(), *shape, "pad(" + a.name + ", " + k + "), padding=" + text, a.exact,
       std::max(a.bound, std::fabs(pv)));
  return true;
}

bool Generator::Reverse(Comp& c) {
  Value a = Get(c, Any(c));
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < a.shape.rank(); ++i)
    if (r_.Chance(50)) dims.push_back(i);
  Use(c, a);
  Emit(c, NewName(), a.shape, "reverse(" + a.name + "), dimensions={" + Join(dims) + "}", a.exact, a.bound);
  return true;
}

bool Generator::Iota(Comp& c) {
  PT t = RandomType();
  if (IsPred(t)) t = PT::kS32;
  Shape s = RandomShape(t, 1);
  const int64_t dim = r_.Below(s.rank());
  if (!InferIotaShape(s, dim).ok()) return false;
  Emit(c, NewName(), s, "iota(), iota_dimension=" + std::to_string(dim), true, static_cast<double>(o_.max_dim));
  return true;
}

// ---- reductions --------------------------------------------------------------------------

bool Generator::Reduce(Comp& c) {
  Value a = Get(c, Any(c));
  const PT t = a.shape.element_type();
  std::vector<int64_t> dims;
  int64_t n = 1;
  for (int64_t i = 0; i < a.shape.rank(); ++i)
    if (r_.Chance(50)) {
      dims.push_back(i);
      n *= a.shape.dimensions(i);
    }
  auto kind = RandomReduceKind(t);
  if (!kind) return false;
  const std::string init = Constant(c, t, kind->init);
  const std::string red = Reducer(kind->op, t);
  ProgramShape ps;
  ps.parameters = {Shape::Scalar(t), Shape::Scalar(t)};
  ps.result = Shape::Scalar(t);
  const Shape init_shape = Shape::Scalar(t);
  auto shape = InferReduceShape({&a.shape}, {&init_shape}, dims, ps);
  if (!shape.ok()) return false;
  if ((kind->op == "add" || kind->op == "multiply") &&
      (MayOverflow(t, a.bound) || MayOverflow(t, ReduceBound(kind->op, a.bound, kind->init, n))))
    return false;
  Use(c, a);
  Emit(c, NewName(), *shape, "reduce(" + a.name + ", " + init + "), dimensions={" + Join(dims) + "}, to_apply=" + red,
       ReduceExact(kind->op, t, a.exact), ReduceBound(kind->op, a.bound, kind->init, n));
  return true;
}

bool Generator::ReduceWindow(Comp& c) {
  Value a = Get(c, Any(c));
  const PT t = a.shape.element_type();
  if (a.shape.rank() == 0) return false;
  auto kind = RandomReduceKind(t, /*allow_multiply=*/false);
  if (!kind) return false;
  Window w;
  std::string size, stride, pad, lhs, rhs;
  bool dilated = false;
  int64_t window_elements = 1;
  for (int64_t i = 0; i < a.shape.rank(); ++i) {
    WindowDimension d;
    d.size = r_.Range(1, 3);
    d.stride = r_.Range(1, 2);
    d.padding_low = r_.Chance(70) ? 0 : r_.Range(0, 2);
    d.padding_high = r_.Chance(70) ? 0 : r_.Range(0, 2);
    if (r_.Chance(10)) {
      d.base_dilation = 2;
      dilated = true;
    }
    if (r_.Chance(10)) {
      d.window_dilation = 2;
      dilated = true;
    }
    window_elements *= d.size;
    w.dimensions.push_back(d);
    const char* x = i ? "x" : "";
    size += x + std::to_string(d.size);
    stride += x + std::to_string(d.stride);
    pad += x + std::to_string(d.padding_low) + "_" + std::to_string(d.padding_high);
    lhs += x + std::to_string(d.base_dilation);
    rhs += x + std::to_string(d.window_dilation);
  }
  std::string text = "size=" + size + " stride=" + stride + " pad=" + pad;
  if (dilated) text += " lhs_dilate=" + lhs + " rhs_dilate=" + rhs;
  ProgramShape ps;
  ps.parameters = {Shape::Scalar(t), Shape::Scalar(t)};
  ps.result = Shape::Scalar(t);
  const Shape init_shape = Shape::Scalar(t);
  auto shape = InferReduceWindowShape({&a.shape}, {&init_shape}, w, ps);
  if (!shape.ok() || shape->num_elements() > o_.max_elements) return false;
  if (kind->op == "add" && (MayOverflow(t, a.bound) || MayOverflow(t, ReduceBound("add", a.bound, 0, window_elements))))
    return false;
  const std::string init = Constant(c, t, kind->init);
  const std::string red = Reducer(kind->op, t);
  Use(c, a);
  Emit(c, NewName(), *shape, "reduce-window(" + a.name + ", " + init + "), window={" + text + "}, to_apply=" + red,
       ReduceExact(kind->op, t, a.exact), ReduceBound(kind->op, a.bound, kind->init, window_elements));
  return true;
}

// ---- dot, gather, scatter, sort ----------------------------------------------------------

bool Generator::Dot(Comp& c) {
  Value a = Get(c, Any(c));
  const PT t = a.shape.element_type();
  if (IsPred(t)) return false;
  const int64_t r = a.shape.rank();
  // Assign each lhs dimension a role: 0 batch, 1 contracting, 2 free.
  std::vector<int64_t> lb, lc, lf;
  for (int64_t i = 0; i < r; ++i) {
    const int64_t role = r_.Below(3);
    (role == 0 ? lb : role == 1 ? lc : lf).push_back(i);
  }
  if (r_.Chance(50)) std::reverse(lc.begin(), lc.end());
  const int64_t rhs_free = r_.Range(0, 2);
  // rhs dimensions: batch, contracting, free in a random order.
  struct RD {
    int role;
    int64_t index;  // position within its role's list
    int64_t size;
  };
  std::vector<RD> rd;
  for (size_t i = 0; i < lb.size(); ++i) rd.push_back({0, static_cast<int64_t>(i), a.shape.dimensions(lb[i])});
  for (size_t i = 0; i < lc.size(); ++i) rd.push_back({1, static_cast<int64_t>(i), a.shape.dimensions(lc[i])});
  for (int64_t i = 0; i < rhs_free; ++i) rd.push_back({2, i, r_.Range(1, 6)});
  if (static_cast<int64_t>(rd.size()) > o_.max_rank) return false;
  for (int64_t i = static_cast<int64_t>(rd.size()) - 1; i > 0; --i) std::swap(rd[i], rd[r_.Below(i + 1)]);
  std::vector<int64_t> rhs_dims, rb(lb.size()), rc(lc.size());
  for (size_t i = 0; i < rd.size(); ++i) {
    rhs_dims.push_back(rd[i].size);
    if (rd[i].role == 0) rb[rd[i].index] = static_cast<int64_t>(i);
    if (rd[i].role == 1) rc[rd[i].index] = static_cast<int64_t>(i);
  }
  if (static_cast<int64_t>(lb.size() + lf.size()) + rhs_free > o_.max_rank) return false;
  Shape rs = Shape::Array(t, rhs_dims);
  if (rs.num_elements() > o_.max_elements) return false;
  DotDimensionNumbers dn;
  dn.lhs_batch_dimensions = lb;
  dn.rhs_batch_dimensions = rb;
  dn.lhs_contracting_dimensions = lc;
  dn.rhs_contracting_dimensions = rc;
  auto shape = InferDotShape(a.shape, rs, dn);
  if (!shape.ok() || shape->num_elements() > o_.max_elements) return false;
  Value b = Get(c, Need(c, rs, false));
  {
    int64_t kk = 1;
    for (int64_t d : lc) kk *= a.shape.dimensions(d);
    if (MayOverflow(t, a.bound) || MayOverflow(t, b.bound) ||
        MayOverflow(t, a.bound * b.bound * static_cast<double>(std::max<int64_t>(kk, 1))))
      return false;
  }
  std::string attrs;
  if (!lb.empty()) attrs += ", lhs_batch_dims={" + Join(lb) + "}";
  if (!lc.empty()) attrs += ", lhs_contracting_dims={" + Join(lc) + "}";
  if (!rb.empty()) attrs += ", rhs_batch_dims={" + Join(rb) + "}";
  if (!rc.empty()) attrs += ", rhs_contracting_dims={" + Join(rc) + "}";
  int64_t k = 1;
  for (int64_t d : lc) k *= a.shape.dimensions(d);
  Use(c, a);
  Use(c, b);
  Emit(c, NewName(), *shape, "dot(" + a.name + ", " + b.name + ")" + attrs, false,
       a.bound * b.bound * static_cast<double>(std::max<int64_t>(k, 1)));
  return true;
}

// Index dimensions for gather/scatter: a random non-empty subset of the operand's dimensions
// in random order, and which of them are collapsed (window size 1, dimension dropped).
struct IndexedDims {
  std::vector<int64_t> map;        // start_index_map / scatter_dims_to_operand_dims
  std::vector<int64_t> collapsed;  // sorted
};

bool Generator::Gather(Comp& c) {
  Value a = Get(c, Any(c));
  const int64_t r = a.shape.rank();
  if (r == 0) return false;
  IndexedDims id;
  for (int64_t i = 0; i < r; ++i)
    if (r_.Chance(50)) id.map.push_back(i);
  if (id.map.empty()) id.map.push_back(r_.Below(r));
  for (int64_t i = static_cast<int64_t>(id.map.size()) - 1; i > 0; --i) std::swap(id.map[i], id.map[r_.Below(i + 1)]);
  std::vector<int64_t> sizes(r);
  for (int64_t i = 0; i < r; ++i) sizes[i] = SizeUpTo(a.shape.dimensions(i));
  for (int64_t d : id.map)
    if (r_.Chance(60) && a.shape.dimensions(d) >= 1) {
      id.collapsed.push_back(d);
      sizes[d] = 1;
    }
  std::sort(id.collapsed.begin(), id.collapsed.end());
  const int64_t m = r - static_cast<int64_t>(id.collapsed.size());
  if (m + 1 > o_.max_rank) return false;
  const int64_t n = r_.Range(1, 4);
  const int64_t k = static_cast<int64_t>(id.map.size());
  const bool batch_first = r_.Chance(50);
  std::vector<int64_t> offset;
  for (int64_t i = 0; i < m; ++i) offset.push_back(batch_first ? i + 1 : i);
  const Shape idx_shape = Shape::Array(PT::kS32, {n, k});
  GatherDimensionNumbers dn;
  dn.offset_dims = offset;
  dn.collapsed_slice_dims = id.collapsed;
  dn.start_index_map = id.map;
  dn.index_vector_dim = 1;
  auto shape = InferGatherShape(a.shape, idx_shape, dn, sizes);
  if (!shape.ok() || shape->num_elements() > o_.max_elements) return false;
  Value idx = Get(c, Need(c, idx_shape, true));
  Use(c, a);
  Use(c, idx);
  Emit(c, NewName(), *shape,
       "gather(" + a.name + ", " + idx.name + "), offset_dims={" + Join(offset) + "}, collapsed_slice_dims={" +
           Join(id.collapsed) + "}, start_index_map={" + Join(id.map) + "}, index_vector_dim=1, slice_sizes={" +
           Join(sizes) + "}",
       a.exact, a.bound);
  return true;
}

bool Generator::Scatter(Comp& c) {
  Value a = Get(c, Any(c));
  const int64_t r = a.shape.rank();
  const PT t = a.shape.element_type();
  if (r == 0 || IsComplex(t)) return false;
  IndexedDims id;
  for (int64_t i = 0; i < r; ++i)
    if (r_.Chance(50)) id.map.push_back(i);
  if (id.map.empty()) id.map.push_back(r_.Below(r));
  for (int64_t i = static_cast<int64_t>(id.map.size()) - 1; i > 0; --i) std::swap(id.map[i], id.map[r_.Below(i + 1)]);
  std::vector<int64_t> window;  // update window sizes of the dimensions not inserted
  for (int64_t d : id.map)
    if (r_.Chance(60)) id.collapsed.push_back(d);
  std::sort(id.collapsed.begin(), id.collapsed.end());
  for (int64_t i = 0; i < r; ++i)
    if (!std::binary_search(id.collapsed.begin(), id.collapsed.end(), i))
      window.push_back(SizeUpTo(a.shape.dimensions(i)));
  const int64_t m = static_cast<int64_t>(window.size());
  if (m + 1 > o_.max_rank) return false;
  const int64_t n = r_.Range(1, 4);
  const int64_t k = static_cast<int64_t>(id.map.size());
  const bool batch_first = r_.Chance(50);
  std::vector<int64_t> upd_dims, window_dims;
  if (!batch_first) upd_dims = window;
  upd_dims.insert(batch_first ? upd_dims.begin() : upd_dims.end(), n);
  if (batch_first) upd_dims.insert(upd_dims.end(), window.begin(), window.end());
  for (int64_t i = 0; i < m; ++i) window_dims.push_back(batch_first ? i + 1 : i);
  const Shape idx_shape = Shape::Array(PT::kS32, {n, k});
  const Shape upd_shape = Shape::Array(t, upd_dims);
  std::string op;
  if (IsPred(t)) {
    op = r_.Chance(50) ? "or" : "and";
  } else {
    static const char* kOps[] = {"add", "maximum", "minimum"};
    op = kOps[r_.Below(3)];
  }
  ScatterDimensionNumbers dn;
  dn.update_window_dims = window_dims;
  dn.inserted_window_dims = id.collapsed;
  dn.scatter_dims_to_operand_dims = id.map;
  dn.index_vector_dim = 1;
  ProgramShape ps;
  ps.parameters = {Shape::Scalar(t), Shape::Scalar(t)};
  ps.result = Shape::Scalar(t);
  auto shape = InferScatterShape({&a.shape}, idx_shape, {&upd_shape}, dn, ps);
  if (!shape.ok()) return false;
  Value idx = Get(c, Need(c, idx_shape, true));
  Value upd = Get(c, Need(c, upd_shape, false));
  if (op == "add" && (MayOverflow(t, a.bound) || MayOverflow(t, a.bound + upd.bound * static_cast<double>(n))))
    return false;
  const std::string red = Reducer(op, t);
  Use(c, a);
  Use(c, idx);
  Use(c, upd);
  const bool exact = !(IsFloat(t)) || (op != "add" && a.exact && upd.exact);
  Emit(c, NewName(), *shape,
       "scatter(" + a.name + ", " + idx.name + ", " + upd.name + "), update_window_dims={" + Join(window_dims) +
           "}, inserted_window_dims={" + Join(id.collapsed) + "}, scatter_dims_to_operand_dims={" + Join(id.map) +
           "}, index_vector_dim=1, to_apply=" + red,
       exact, op == "add" ? a.bound + upd.bound * static_cast<double>(n) : std::max(a.bound, upd.bound));
  return true;
}

bool Generator::Sort(Comp& c) {
  Value a = Get(c, Any(c));
  const PT t = a.shape.element_type();
  // Keys under TOTALORDER: a NaN's sign decides its place, and IEEE leaves it open.
  if (a.shape.rank() == 0 || IsComplex(t) || (IsFloat(t) && a.bound >= kHuge)) return false;
  const int64_t d = r_.Below(a.shape.rank());
  const bool greater = r_.Chance(50);
  if (!a.exact || r_.Chance(50)) {
    const std::string cmp = Comparator({t}, greater);
    Use(c, a);
    Emit(c, NewName(), a.shape,
         "sort(" + a.name + "), dimensions={" + std::to_string(d) + "}, is_stable=true, to_apply=" + cmp, a.exact,
         a.bound);
    return true;
  }
  // A key and a payload: stable, so that equal keys keep the payload's order.
  PT pt = RandomType();
  Value p = Get(c, Need(c, Shape::Array(pt, a.shape.dimensions()), false));
  pt = p.shape.element_type();
  const std::string cmp = Comparator({t, pt}, greater);
  const std::string name = NewName("sort");
  Use(c, a);
  Use(c, p);
  Emit(c, name, Shape::Tuple({a.shape, p.shape}),
       "sort(" + a.name + ", " + p.name + "), dimensions={" + std::to_string(d) + "}, is_stable=true, to_apply=" + cmp,
       true, 1);
  Emit(c, NewName(), a.shape, "get-tuple-element(" + name + "), index=0", true, a.bound);
  Emit(c, NewName(), p.shape, "get-tuple-element(" + name + "), index=1", p.exact, p.bound);
  return true;
}

bool Generator::TupleGte(Comp& c) {
  std::vector<Value> vs;
  const int k = static_cast<int>(r_.Range(1, 3));
  for (int i = 0; i < k; ++i) vs.push_back(Get(c, Any(c)));
  std::vector<Shape> shapes;
  std::string ops;
  for (size_t i = 0; i < vs.size(); ++i) {
    shapes.push_back(vs[i].shape);
    if (i) ops += ", ";
    ops += vs[i].name;
  }
  const std::string name = NewName("t");
  Emit(c, name, Shape::Tuple(shapes), "tuple(" + ops + ")", true, 1);
  const int64_t i = r_.Below(vs.size());
  Use(c, vs[i]);
  Emit(c, NewName(), vs[i].shape, "get-tuple-element(" + name + "), index=" + std::to_string(i), vs[i].exact,
       vs[i].bound);
  return true;
}

// ---- control flow ------------------------------------------------------------------------

bool Generator::While(Comp& c) {
  Value x = Get(c, Any(c));
  const PT t = x.shape.element_type();
  const bool floaty = IsFloat(t) || IsComplex(t);
  const int64_t trips = r_.Range(0, 4);
  std::vector<Value> state;
  Value counter;
  counter.name = NewName("i");
  counter.shape = Shape::Scalar(PT::kS32);
  counter.bound = 4;
  state.push_back(counter);
  Value xs = x;
  xs.name = NewName("x");
  xs.exact = !floaty;  // a float state is inexact from the second trip on
  xs.bound = floaty ? std::max(x.bound, 1.0) : TypeMax(t);
  state.push_back(xs);
  // A scan (JAX's lax.scan as a while): x' = dynamic-update-slice(x, f(x[i], y[i]), i, 0...)
  // with rows read by dynamic-slice at the counter; the loops XLA's in-place and scan passes
  // look for.
  const bool scan = x.shape.rank() >= 1 && x.shape.dimensions(0) >= 1 && !IsComplex(t) && r_.Chance(35);
  const bool invariant = scan || r_.Chance(50);
  Value y;
  if (invariant) {
    // The same value twice in the state now and then: in-place updates of one must not
    // change the other.
    y = scan ? Get(c, Need(c, x.shape, false)) : r_.Chance(25) ? x : Get(c, Any(c));
    Value ys = y;
    ys.name = NewName("y");
    state.push_back(ys);
  }
  std::vector<Shape> shapes;
  for (const Value& v : state) shapes.push_back(v.shape);
  const Shape tuple = Shape::Tuple(shapes);
  // Condition: counter < trips.
  const std::string cond = NewName("cond");
  {
    std::string s = cond + " {\n  s = " + ShapeText(tuple) + " parameter(0)\n  i = s32[] get-tuple-element(s), index=0\n";
    s += "  n = s32[] constant(" + std::to_string(trips) + ")\n  ROOT lt = pred[] compare(i, n), direction=LT\n}\n";
    computations_.push_back(s);
  }
  // Body: counter + 1, x' from the drawn instructions, the invariant unchanged.
  const std::string body_name = NewName("body");
  Comp body = SubComputation(body_name, c.depth + 1, state, /*tuple_param=*/true);
  int xi;
  if (scan) {
    std::vector<int64_t> sizes = x.shape.dimensions();
    sizes[0] = 1;
    const std::string zero = Constant(body, PT::kS32, 0);
    std::string idx = counter.name;
    for (int64_t d = 1; d < x.shape.rank(); ++d) idx += ", " + zero;
    const Shape row = Shape::Array(t, sizes);
    const std::string xrow = NewName(), yrow = NewName(), u = NewName(), upd = NewName();
    const std::string ds = "), dynamic_slice_sizes={" + Join(sizes) + "}";
    Emit(body, xrow, row, "dynamic-slice(" + xs.name + ", " + idx + ds, xs.exact, xs.bound);
    Emit(body, yrow, row, "dynamic-slice(" + state[2].name + ", " + idx + ds, y.exact, y.bound);
    const std::string op = IsPred(t) ? "or" : r_.Chance(50) ? "add" : "maximum";
    const double b = op == "add" ? xs.bound + y.bound : std::max(xs.bound, y.bound);
    if (MayOverflow(t, b)) return false;
    Emit(body, u, row, op + "(" + xrow + ", " + yrow + ")", !floaty, b);
    xi = Emit(body, upd, x.shape, "dynamic-update-slice(" + xs.name + ", " + u + ", " + idx + ")", !floaty, b);
  } else {
    xi = ResultOf(body, x.shape);
  }
  Value xr = body.values[xi];
  std::string xname = xr.name;
  if (floaty && xr.bound > xs.bound && !IsComplex(t)) {
    const std::string lo = Constant(body, t, -xs.bound), hi = Constant(body, t, xs.bound);
    xname = NewName();
    Emit(body, xname, x.shape, "clamp(" + lo + ", " + xr.name + ", " + hi + ")", false, xs.bound);
  } else if (floaty && xr.bound > xs.bound) {
    // Complex: scale back with tanh-free means: multiply by 0 is no good; take the state as is.
    xname = xs.name;
  }
  const std::string one = Constant(body, PT::kS32, 1);
  const std::string next = NewName("i");
  Emit(body, next, Shape::Scalar(PT::kS32), "add(" + counter.name + ", " + one + ")", true, 8);
  std::string ops = next + ", " + xname;
  if (invariant && !floaty && !scan && Shape::Compatible(y.shape, x.shape) && r_.Chance(40)) {
    ops = next + ", " + state[2].name + ", " + xname;  // the two swap places every trip
  } else if (invariant) {
    ops += ", " + state[2].name;
  }
  body.lines.push_back("ROOT " + NewName("r") + " = " + ShapeText(tuple) + " tuple(" + ops + ")");
  computations_.push_back(Text(body));
  // The loop.
  const std::string zero = Constant(c, PT::kS32, 0);
  const std::string init = NewName("init");
  Use(c, x);
  if (invariant) Use(c, y);
  Emit(c, init, tuple, "tuple(" + zero + ", " + x.name + (invariant ? ", " + y.name : "") + ")", true, 1);
  const std::string w = NewName("while");
  ProgramShape cps{{tuple}, {}, Shape::Scalar(PT::kPred)};
  ProgramShape bps{{tuple}, {}, tuple};
  if (!InferWhileShape(cps, bps, tuple).ok()) return false;
  Emit(c, w, tuple, "while(" + init + "), condition=" + cond + ", body=" + body_name, true, 1);
  Emit(c, NewName(), x.shape, "get-tuple-element(" + w + "), index=1", !floaty, floaty ? xs.bound : TypeMax(t));
  return true;
}

bool Generator::Conditional(Comp& c) {
  const bool by_pred = r_.Chance(40);
  std::string index;
  if (by_pred) {
    index = Get(c, Need(c, Shape::Scalar(PT::kPred), true)).name;
  } else {
    index = Index(c);
  }
  for (Value& v : c.values)
    if (v.name == index) Use(c, v);
  const int branches = by_pred ? 2 : static_cast<int>(r_.Range(1, 3));
  std::vector<Value> operands;
  for (int b = 0; b < branches; ++b) operands.push_back(Get(c, Any(c)));
  const Shape result = operands[0].shape;
  bool exact = true;
  double bound = 0;
  std::vector<std::string> names;
  for (int b = 0; b < branches; ++b) {
    const std::string bname = NewName("branch");
    Value pv = operands[b];
    pv.name = NewName("a");
    Comp s = SubComputation(bname, c.depth + 1, {pv}, /*tuple_param=*/false);
    const int ri = ResultOf(s, result);
    exact = exact && s.values[ri].exact;
    bound = std::max(bound, s.values[ri].bound);
    SetRoot(s, {ri});
    computations_.push_back(Text(s));
    names.push_back(bname);
  }
  std::string ops = index;
  for (const Value& v : operands) {
    ops += ", " + v.name;
    Use(c, v);
  }
  std::string attrs = by_pred ? ", true_computation=" + names[0] + ", false_computation=" + names[1]
                              : ", branch_computations={" + [&] {
                                  std::string s;
                                  for (size_t i = 0; i < names.size(); ++i) s += (i ? ", " : "") + names[i];
                                  return s;
                                }() + "}";
  Emit(c, NewName(), result, "conditional(" + ops + ")" + attrs, exact, bound);
  return true;
}

// reduce(x, iota, init, -1) with a reducer keeping the larger value (or smaller, per `max`)
// and, among equal values, the smaller index: a total order (TOTALORDER for floats), so the
// result does not depend on the reduction order. As JAX's argmax/argmin.
bool Generator::ArgMax(Comp& c) {
  Value a = Get(c, Any(c));
  const PT t = a.shape.element_type();
  if (a.shape.rank() == 0 || !a.exact || IsComplex(t) || IsPred(t) || (IsFloat(t) && a.bound >= kHuge)) return false;
  const int64_t d = r_.Below(a.shape.rank());
  const bool max = r_.Chance(50);
  const std::string ts = std::string(PrimitiveTypeName(t)) + "[]";
  const std::string name = NewName(max ? "argmax" : "argmin");
  const std::string type = IsFloat(t) ? ", type=TOTALORDER" : "";
  computations_.push_back(name + " {\n  a = " + ts + " parameter(0)\n  ai = s32[] parameter(1)\n  b = " + ts +
                          " parameter(2)\n  bi = s32[] parameter(3)\n  better = pred[] compare(a, b), direction=" +
                          (max ? "GT" : "LT") + type + "\n  eq = pred[] compare(a, b), direction=EQ" + type +
                          "\n  lower = pred[] compare(ai, bi), direction=LT\n  tie = pred[] and(eq, lower)\n"
                          "  pick = pred[] or(better, tie)\n  v = " + ts + " select(pick, a, b)\n"
                          "  i = s32[] select(pick, ai, bi)\n  ROOT r = (" + ts + ", s32[]) tuple(v, i)\n}\n");
  const Shape idx_shape = Shape::Array(PT::kS32, a.shape.dimensions());
  const std::string idx = NewName();
  Emit(c, idx, idx_shape, "iota(), iota_dimension=" + std::to_string(d), true, 1);
  const std::string init = Constant(c, t, RandomConstantValue(t));
  const std::string init_i = Constant(c, PT::kS32, -1);
  std::vector<int64_t> out_dims;
  for (int64_t i = 0; i < a.shape.rank(); ++i)
    if (i != d) out_dims.push_back(a.shape.dimensions(i));
  const Shape vs = Shape::Array(t, out_dims), is = Shape::Array(PT::kS32, out_dims);
  const std::string red = NewName("red");
  Use(c, a);
  Emit(c, red, Shape::Tuple({vs, is}),
       "reduce(" + a.name + ", " + idx + ", " + init + ", " + init_i + "), dimensions={" + std::to_string(d) +
           "}, to_apply=" + name,
       true, 1);
  Emit(c, NewName(), vs, "get-tuple-element(" + red + "), index=0", true, a.bound + 4);
  Emit(c, NewName(), is, "get-tuple-element(" + red + "), index=1", true, static_cast<double>(a.shape.dimensions(d)));
  return true;
}

// call(x), to_apply=sub: a sub-computation drawn like a branch.
bool Generator::Call(Comp& c) {
  Value a = Get(c, Any(c));
  Value pv = a;
  pv.name = NewName("a");
  const std::string name = NewName("callee");
  Comp s = SubComputation(name, c.depth + 1, {pv}, /*tuple_param=*/false);
  const Shape result = r_.Chance(50) ? a.shape : s.values.back().shape;
  const int ri = ResultOf(s, result);
  const Value rv = s.values[ri];
  SetRoot(s, {ri});
  computations_.push_back(Text(s));
  Use(c, a);
  Emit(c, NewName(), result, "call(" + a.name + "), to_apply=" + name, rv.exact, rv.bound);
  return true;
}

// map(a, b) with a scalar binary computation (add, maximum, multiply, ...).
bool Generator::Map(Comp& c) {
  Value a = Get(c, Any(c));
  const PT t = a.shape.element_type();
  std::vector<std::string> ops;
  if (IsPred(t)) ops = {"and", "or", "xor"};
  else if (IsComplex(t)) ops = {"add", "multiply"};
  else ops = {"add", "maximum", "minimum", "multiply"};
  const std::string op = ops[r_.Below(ops.size())];
  Value b = Get(c, Need(c, a.shape, false));
  const double bound = op == "add" ? a.bound + b.bound : op == "multiply" ? a.bound * b.bound : std::max(a.bound, b.bound);
  if ((op == "add" || op == "multiply") && (MayOverflow(t, a.bound) || MayOverflow(t, b.bound) || MayOverflow(t, bound)))
    return false;
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < a.shape.rank(); ++i) dims.push_back(i);
  const std::string fn = Reducer(op, t);
  Use(c, a);
  Use(c, b);
  const bool exact = !(IsFloat(t) || IsComplex(t)) || ((op == "maximum" || op == "minimum") && a.exact && b.exact);
  Emit(c, NewName(), a.shape, "map(" + a.name + ", " + b.name + "), dimensions={" + Join(dims) + "}, to_apply=" + fn,
       exact, bound);
  return true;
}

bool Generator::ReducePrecision(Comp& c) {
  Value a = Get(c, Any(c));
  if (!IsFloat(a.shape.element_type())) return false;
  static const std::pair<int, int> kFormats[] = {{5, 10}, {8, 7}, {4, 3}, {5, 2}, {8, 23}, {3, 1}};
  const auto [e, m] = kFormats[r_.Below(6)];
  if (!InferReducePrecisionShape(a.shape, e, m).ok()) return false;
  Use(c, a);
  Emit(c, NewName(), a.shape,
       "reduce-precision(" + a.name + "), exponent_bits=" + std::to_string(e) + ", mantissa_bits=" + std::to_string(m),
       a.exact, kHuge);
  return true;
}

// convolution with 1 or 2 spatial dimensions, NHWC or NCHW labels, random window (size,
// stride, padding, base and window dilation) and feature groups.
bool Generator::Convolution(Comp& c) {
  static const PT kTypes[] = {PT::kF32, PT::kF32, PT::kF32, PT::kF16, PT::kBF16, PT::kF64};
  const PT t = kTypes[r_.Below(6)];
  const int spatial = static_cast<int>(r_.Range(1, 2));
  const bool nhwc = r_.Chance(50);
  const int64_t n = r_.Range(1, 3), groups = r_.Chance(70) ? 1 : r_.Range(2, 3);
  const int64_t cin = groups * r_.Range(1, 3), cout = groups * r_.Range(1, 3);
  std::vector<int64_t> in_sp, k_sp;
  Window w;
  std::string size, stride, pad, lhs, rhs;
  bool dilated = false;
  int64_t window_elements = 1;
  for (int i = 0; i < spatial; ++i) {
    in_sp.push_back(big_ && r_.Chance(30) ? r_.Range(10, 40) : r_.Range(1, 9));
    WindowDimension d;
    d.size = r_.Range(1, 3);
    d.stride = r_.Range(1, 2);
    d.padding_low = r_.Range(0, 2);
    d.padding_high = r_.Range(0, 2);
    if (r_.Chance(15)) d.base_dilation = 2, dilated = true;
    if (r_.Chance(15)) d.window_dilation = 2, dilated = true;
    k_sp.push_back(d.size);
    window_elements *= d.size;
    w.dimensions.push_back(d);
    const char* x = i ? "x" : "";
    size += x + std::to_string(d.size);
    stride += x + std::to_string(d.stride);
    pad += x + std::to_string(d.padding_low) + "_" + std::to_string(d.padding_high);
    lhs += x + std::to_string(d.base_dilation);
    rhs += x + std::to_string(d.window_dilation);
  }
  ConvolutionDimensionNumbers dn;
  std::vector<int64_t> in_dims, k_dims;
  const std::string sp = spatial == 1 ? "0" : "01";
  std::string labels;
  if (nhwc) {  // b01f_01io->b01f
    in_dims.push_back(n);
    in_dims.insert(in_dims.end(), in_sp.begin(), in_sp.end());
    in_dims.push_back(cin);
    k_dims = k_sp;
    k_dims.push_back(cin / groups);
    k_dims.push_back(cout);
    dn.input_batch_dimension = 0;
    dn.input_feature_dimension = spatial + 1;
    dn.kernel_input_feature_dimension = spatial;
    dn.kernel_output_feature_dimension = spatial + 1;
    dn.output_batch_dimension = 0;
    dn.output_feature_dimension = spatial + 1;
    for (int i = 0; i < spatial; ++i) {
      dn.input_spatial_dimensions.push_back(i + 1);
      dn.kernel_spatial_dimensions.push_back(i);
      dn.output_spatial_dimensions.push_back(i + 1);
    }
    labels = "b" + sp + "f_" + sp + "io->b" + sp + "f";
  } else {  // bf01_oi01->bf01
    in_dims = {n, cin};
    in_dims.insert(in_dims.end(), in_sp.begin(), in_sp.end());
    k_dims = {cout, cin / groups};
    k_dims.insert(k_dims.end(), k_sp.begin(), k_sp.end());
    dn.input_batch_dimension = 0;
    dn.input_feature_dimension = 1;
    dn.kernel_input_feature_dimension = 1;
    dn.kernel_output_feature_dimension = 0;
    dn.output_batch_dimension = 0;
    dn.output_feature_dimension = 1;
    for (int i = 0; i < spatial; ++i) {
      dn.input_spatial_dimensions.push_back(i + 2);
      dn.kernel_spatial_dimensions.push_back(i + 2);
      dn.output_spatial_dimensions.push_back(i + 2);
    }
    labels = "bf" + sp + "_oi" + sp + "->bf" + sp;
  }
  const Shape in_shape = Shape::Array(t, in_dims), k_shape = Shape::Array(t, k_dims);
  if (in_shape.num_elements() > o_.max_elements) return false;
  auto shape = InferConvolutionShape(in_shape, k_shape, groups, 1, w, dn);
  if (!shape.ok() || shape->num_elements() > o_.max_elements) return false;
  Value a = Get(c, Need(c, in_shape, false));
  Value k = Get(c, Need(c, k_shape, false));
  const double bound = a.bound * k.bound * static_cast<double>(window_elements * (cin / groups));
  if (MayOverflow(t, a.bound) || MayOverflow(t, k.bound) || MayOverflow(t, bound)) return false;
  std::string text = "size=" + size + " stride=" + stride + " pad=" + pad;
  if (dilated) text += " lhs_dilate=" + lhs + " rhs_dilate=" + rhs;
  Use(c, a);
  Use(c, k);
  Emit(c, NewName(), *shape,
       "convolution(" + a.name + ", " + k.name + "), window={" + text + "}, dim_labels=" + labels +
           (groups > 1 ? ", feature_group_count=" + std::to_string(groups) : ""),
       false, bound);
  return true;
}

RandomModule Generator::Generate() {
  Comp entry;
  entry.name = "main";
  entry.is_entry = true;
  layout_percent_ = r_.Chance(30) ? 15 : 0;
  specials_ = r_.Chance(30);
  if (r_.Chance(25)) {
    big_ = true;
    o_.max_elements = std::max(o_.max_elements, o_.max_big_elements);
  }
  Fill(entry, static_cast<int>(r_.Range(1, o_.max_instructions)));
  // Root: the unused values that are not parameters, the most recent first (at most 4).
  std::vector<int> roots;
  for (int i = static_cast<int>(entry.values.size()) - 1; i >= 0 && roots.size() < 4; --i)
    if (entry.uses[i] == 0 && !entry.values[i].is_parameter) roots.push_back(i);
  if (roots.empty()) roots.push_back(static_cast<int>(entry.values.size()) - 1);
  std::reverse(roots.begin(), roots.end());
  // Outputs that alias each other or an input, now and then: a result buffer must own its memory.
  if (r_.Chance(15)) roots.push_back(roots[r_.Below(roots.size())]);
  if (r_.Chance(15)) {
    const int p = Find(entry, [](const Value& v) { return v.is_parameter; });
    if (p >= 0) roots.push_back(p);
  }
  if (roots.size() == 1 && r_.Chance(30)) {
    // A tuple root of one element, sometimes.
    SetRoot(entry, roots, /*force_tuple=*/true);
  } else {
    SetRoot(entry, roots);
  }
  RandomModule m;
  m.text = "HloModule random\n\n";
  for (const std::string& s : computations_) m.text += s + "\n";
  m.text += Text(entry);
  m.parameters = params_;
  return m;
}

}  // namespace

RandomModule GenerateRandomModule(uint64_t seed, const RandomModuleOptions& options) {
  SeedSource src(seed);
  return Generator(src, options).Generate();
}

RandomModule GenerateRandomModuleFromBytes(const uint8_t* data, size_t size, const RandomModuleOptions& options) {
  ByteSource src(data, size);
  return Generator(src, options).Generate();
}

}  // namespace kiln
