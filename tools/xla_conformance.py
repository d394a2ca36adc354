#!/usr/bin/env python3
"""Runs the HLO modules of XLA's own sources through kiln (issue 16; docs/conformance.md).

Given a directory of XLA sources (a clone of openxla/xla, or any folder of its files), this
extracts every HLO module text -- raw strings (R"(...)", R"hlo(...)") that start with
`HloModule` in C++ files, and `.hlo` files (split at `// -----` lines) -- and runs each one
through `kiln compare --device cpu --reference interpreter` (random inputs), with a timeout
per module. Each module gets one class:

  pass        cpu and interpreter agree (modules with random-number ops: both ran; their
              values are not compared, see NONDETERMINISTIC)
  mismatch    both ran and an output differs
  refused     kiln refused with a clear error (exit 1 or 2); the message's first line is kept
  crash       a signal, an abort, or an exit code other than 0, 1, 2
  timeout     the module ran past --timeout seconds
  expected    a refusal that is the right answer: a custom-call target only XLA's tests define
              (TEST_ONLY_TARGETS), or arrays larger than this host's memory
  skipped     multi-device (replica_count / num_partitions > 1, or collectives whose groups
              name more than one participant), or a C++ format template ($0, %s) rather than
              a module
  negative    the XLA test around the text expects it to be rejected (an error-message
              check follows it); kiln's answer is reported, not judged

Prints a table per class and per source file, the refusals grouped by message, and exits 1
on any crash or mismatch (0 otherwise). Exits 77 when no source directory is given (CTest's
SKIP_RETURN_CODE), so the CTest xla_conformance_test is skipped where no XLA clone is set.

  tools/xla_conformance.py --xla-source ~/src/xla            # or KILN_XLA_SOURCE_DIR=...
  tools/xla_conformance.py --xla-source DIR --filter scatter --show refused,mismatch
"""

import argparse
import collections
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import tempfile

SKIP_EXIT = 77
CLASSES = ["pass", "mismatch", "refused", "crash", "timeout", "expected", "skipped", "negative"]

# Custom-call targets that only XLA's tests define (registered by the test binary, or names
# that no backend has): kiln refusing them is the right answer.
TEST_ONLY_TARGETS = re.compile(
    r'^(foo.*|bar|baz|target|F32TupleSwap|R0F32Add2.*|R2F32ReduceSum|Add1ToValues|'
    r'CustomCallFail.*|BarrierStart|\$illegal)$')

RAW_STRING = re.compile(r'R"([^()\\ ]{0,16})\((.*?)\)\1"', re.S)
# Ops whose values differ between two correct backends (random bits).
NONDETERMINISTIC = re.compile(r"=\s*[^=]*?\b(rng|rng-bit-generator|rng-get-and-update-state)\(")
# Text after a raw string, inside the same test, that checks the text is rejected.
NEGATIVE_CHECK = re.compile(
    r"(status\(\)\.message\(\)|EXPECT_NE\((absl::)?OkStatus\(\)|status\(\)\.error_message\(\)|EXPECT_FALSE\([^;]*ok\(\)\)|"
    r"ASSERT_FALSE\([^;]*ok\(\)\)|Not\(IsOk\(\)\)|StatusIs\(|"
    r"ExpectHasSubstr\(|HasSubstr\(\"(expects|expected|unexpected|Unexpected|unknown|Unknown|"
    r"invalid|Invalid|not |cannot|must|is not|mismatch|does not|should))")
TEST_START = re.compile(r"^\s*(XLA_TEST_F|XLA_TEST_P|TEST_F|TEST_P|TEST|XLA_TYPED_TEST)\(", re.M)


def repo_root():
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Module:
    def __init__(self, source, index, line, text, negative=False):
        self.source = source      # path relative to the source directory
        self.index = index        # position among the file's modules
        self.line = line          # line of the text in the source file
        self.text = text
        self.negative = negative
        self.cls = None
        self.detail = ""

    @property
    def name(self):
        return f"{self.source}:{self.line}"


# A named raw-string constant (`const char* const kScalarOps = R"(...)";`).
NAMED_RAW = re.compile(r'\b(k\w+)(?:\[\])?\s*=\s*R"([^()\\ ]{0,16})\((.*?)\)\2"', re.S)
# `absl::StrCat(kPrefix, R"(...)")`: XLA's tests build a module from a shared header and a body.
STRCAT_RAW = re.compile(r'StrCat\(\s*(k\w+)\s*,\s*$')


def extract_cc(rel, content):
    mods = []
    tests = [m.start() for m in TEST_START.finditer(content)] + [len(content)]
    named = {m.group(1): m.group(3) for m in NAMED_RAW.finditer(content)}
    # A constant used as a StrCat prefix is a fragment, not a module of its own.
    prefixes = set(re.findall(r'StrCat\(\s*(k\w+)\s*,\s*R"', content))
    fragment_spans = {m.span(3) for m in NAMED_RAW.finditer(content) if m.group(1) in prefixes}
    for m in RAW_STRING.finditer(content):
        body = m.group(2)
        if m.span(2) in fragment_spans:
            continue
        prefix = STRCAT_RAW.search(content[max(0, m.start() - 80):m.start()])
        if prefix and prefix.group(1) in named:
            body = named[prefix.group(1)] + body
        stripped = body.lstrip()
        if not stripped.startswith("HloModule"):
            continue
        line = content.count("\n", 0, m.start(2)) + 1 + body[: len(body) - len(stripped)].count("\n")
        # The rest of the enclosing test: from the string's end to the next test's start.
        end = next(t for t in tests if t > m.end())
        negative = bool(NEGATIVE_CHECK.search(content[m.end():end]))
        mods.append(Module(rel, len(mods), line, body, negative))
    return mods


def extract_hlo(rel, content):
    mods, line = [], 1
    for part in re.split(r"^// -----.*$", content, flags=re.M):
        if re.search(r"^\s*(HloModule|ENTRY)\b|^\s*[\w.-]+\s*(\([^)]*\)\s*->[^{]*)?\{", part, re.M):
            mods.append(Module(rel, len(mods), line, part))
        line += part.count("\n")
    return mods


def extract(source_dir, filter_re):
    mods = []
    for root, dirs, files in os.walk(source_dir):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in ("bazel-out", "third_party"))
        for f in sorted(files):
            path = os.path.join(root, f)
            rel = os.path.relpath(path, source_dir)
            if filter_re and not filter_re.search(rel):
                continue
            if f.endswith((".cc", ".h", ".cpp")):
                kind = extract_cc
            elif f.endswith(".hlo"):
                kind = extract_hlo
            else:
                continue
            try:
                with open(path, encoding="utf-8", errors="replace") as fh:
                    mods.extend(kind(rel, fh.read()))
            except OSError as e:
                print(f"warning: cannot read {path}: {e}", file=sys.stderr)
    return mods


def header_count(text, key):
    m = re.search(r"^\s*HloModule\b[^\n]*\b" + key + r"\s*=\s*(\d+)", text, re.M)
    return int(m.group(1)) if m else 1


SHAPED_DEF = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.-]+)\s*=\s*\(?\s*[a-z][a-z0-9]*\[([0-9,\s]*)\]", re.M)
SHARDING_COLLECTIVE = re.compile(
    r"^\s*(?:ROOT\s+)?%?[\w.-]+\s*=\s*\(?\s*[a-z][a-z0-9]*\[([0-9,\s]*)\][^=\n]*?"
    r"\b(all-gather|reduce-scatter|all-gather-start)\(\s*(?:[a-z][a-z0-9]*\[[^\]]*\]\S*\s+)?%?([\w.-]+)", re.M)


def multi_device_reason(text):
    # An all-gather or reduce-scatter over all devices of the run (replica_groups={}) whose
    # result is not its operand's shape needs several of them (XLA's tests set the count).
    dims = {m.group(1): m.group(2).replace(" ", "") for m in SHAPED_DEF.finditer(text)}
    for m in SHARDING_COLLECTIVE.finditer(text):
        operand = dims.get(m.group(3))
        if operand is not None and operand != m.group(1).replace(" ", ""):
            return f"{m.group(2)} whose shapes need several participants"
    if header_count(text, "replica_count") > 1:
        return "replica_count > 1"
    if header_count(text, "num_partitions") > 1:
        return "num_partitions > 1"
    for key in ("replica_groups", "source_target_pairs"):
        for m in re.finditer(key + r"\s*=\s*(\{[{}0-9,\s]*\}|\[[^\]]*\]<=\[[^\]]*\][^,\s]*)", text):
            if re.search(r"[1-9]", m.group(1)):
                return f"{key} names several participants"
    return None


def first_line(text):
    for line in text.splitlines():
        line = line.strip()
        if line:
            return line[:300]
    return "(no message)"


def error_message(stderr):
    """The first line that says what went wrong (kiln prints 'kiln: ...' or FILE:L:C: ...)."""
    lines = [l.strip() for l in stderr.splitlines() if l.strip()]
    for i, l in enumerate(lines):
        if l.startswith("kiln:") or re.match(r"^\S+:\d+:\d+: ", l) or "error" in l.lower() or \
                "does not verify" in l:
            if l.endswith(":") and i + 1 < len(lines):  # "the module does not verify:" + why
                l = f"{l} {lines[i + 1]}"
            return l[:300]
    return lines[0][:300] if lines else "(no message)"


def strip_path(msg, path):
    return msg.replace(path, "M.hlo")


def run_kiln(args, kiln, path, timeout):
    try:
        p = subprocess.run([kiln] + args + [path], capture_output=True, text=True, timeout=timeout,
                           errors="replace")
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return None, "", ""


def classify(mod, kiln, timeout, workdir):
    if not mod.negative:
        code = re.sub(r"//[^\n]*", "", mod.text)
        if mod.source.endswith((".cc", ".h", ".cpp")) and re.search(r"\$[0-9]|%[sd]\b|\$\{\w|\{\{[A-Z_]+\}\}", code):
            mod.cls, mod.detail = "skipped", "a C++ format template, not a module"
            return mod
        reason = multi_device_reason(mod.text)
        if reason:
            mod.cls, mod.detail = "skipped", "multi-device: " + reason
            return mod
    path = os.path.join(workdir, f"m{id(mod)}.hlo")
    with open(path, "w") as fh:
        fh.write(mod.text)
    flags = ["--fill-elided-constants", "--threads", "1"]
    rc, out, err = run_kiln(["compare", "--device", "cpu", "--reference", "interpreter"] + flags,
                            kiln, path, timeout)
    if rc is not None and rc == 1 and NONDETERMINISTIC.search(mod.text) and "differ" in out + err:
        # Random bits: both backends must run; the values are not comparable.
        results = [run_kiln(["run", "--device", d] + flags, kiln, path, timeout)
                   for d in ("interpreter", "cpu")]
        bad = [r for r in results if r[0] != 0]
        rc, out, err = bad[0] if bad else (0, "random-number ops: ran on both, values not compared", "")
    os.unlink(path)
    if rc is None:
        cls, detail = "timeout", f"over {timeout} s"
    elif rc == 0:
        cls, detail = "pass", ""
    elif rc == 1 and re.search(r"FAILED: \d+ of \d+ outputs differ", out + err):
        cls = "mismatch"
        detail = first_line("\n".join(l for l in (out + err).splitlines() if "differ" in l))
    elif rc in (1, 2):
        cls, detail = "refused", strip_path(error_message(err or out), path)
        target = re.search(r'unsupported: custom-call "(.*?)"(?: at line| \()', detail)
        if target and TEST_ONLY_TARGETS.match(target.group(1)):
            cls = "expected"
            detail = f"test-only custom-call target: {detail}"
        elif re.search(r"out of memory allocating \d+ bytes", detail):
            cls = "expected"
            detail = f"larger than this host: {detail}"
    else:
        sig = f"signal {-rc}" if rc < 0 else f"exit {rc}"
        cls, detail = "crash", f"{sig}: {strip_path(error_message(err or out), path)}"
    if mod.negative:
        mod.cls = "negative"
        mod.detail = f"kiln: {cls}" + (f" ({detail})" if detail else "")
        if cls == "crash":  # a crash is a crash whatever the text was meant to be
            mod.cls, mod.detail = "crash", detail
    else:
        mod.cls, mod.detail = cls, detail
    return mod


def normalize(msg):
    """A refusal message without positions and numbers, to group like refusals."""
    msg = re.sub(r"^M\.hlo:\d+:\d+: ", "", msg)
    msg = re.sub(r"'[^']*'", "'_'", msg)
    msg = re.sub(r"\d+", "N", msg)
    return msg[:160]


def print_report(mods, show):
    counts = collections.Counter(m.cls for m in mods)
    print("\n== modules per class")
    for c in CLASSES:
        print(f"  {c:9s} {counts.get(c, 0):5d}")
    passed = counts.get("pass", 0)
    runnable = sum(counts.get(c, 0) for c in ("pass", "mismatch", "refused", "crash", "timeout"))
    single = runnable + counts.get("expected", 0)
    print(f"  total     {len(mods):5d}")
    if single:
        print(f"  single-device modules: {passed}/{single} pass = {100.0 * passed / single:.1f}%; "
              f"without the expected refusals {passed}/{runnable} = {100.0 * passed / max(runnable, 1):.1f}%")

    print("\n== per source file (" + " ".join(CLASSES) + ")")
    by_file = collections.OrderedDict()
    for m in mods:
        by_file.setdefault(m.source, collections.Counter())[m.cls] += 1
    for f, c in by_file.items():
        cells = " ".join(f"{c.get(k, 0):4d}" for k in CLASSES)
        print(f"  {cells}  {f}")

    groups = collections.defaultdict(list)
    for m in mods:
        if m.cls in ("refused", "crash", "timeout", "mismatch", "expected"):
            groups[(m.cls, normalize(m.detail))].append(m)
    if groups:
        print("\n== failures grouped by message")
        for (cls, _), ms in sorted(groups.items(), key=lambda kv: (CLASSES.index(kv[0][0]), -len(kv[1]))):
            print(f"  {cls:8s} x{len(ms):<3d} {ms[0].detail}")
            print(f"           e.g. {', '.join(m.name for m in ms[:3])}")
    for cls in show:
        print(f"\n== {cls}")
        for m in mods:
            if m.cls == cls:
                print(f"  {m.name}: {m.detail}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--xla-source", default=os.environ.get("KILN_XLA_SOURCE_DIR"),
                    help="directory of XLA sources (default: $KILN_XLA_SOURCE_DIR)")
    ap.add_argument("--kiln", default=os.path.join(repo_root(), "build-release/src/kiln/tools/kiln"),
                    help="the kiln binary")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per module (default 60)")
    ap.add_argument("--jobs", type=int, default=1, help="modules run at once (default 1)")
    ap.add_argument("--filter", help="regular expression on source paths")
    ap.add_argument("--show", default="", help="comma-separated classes to list module by module")
    ap.add_argument("--json", help="write every module's class and detail to this file")
    ap.add_argument("--dump", help="write the extracted modules into this directory")
    ap.add_argument("--list", action="store_true", help="only list the extracted modules")
    a = ap.parse_args()

    if not a.xla_source:
        print("xla_conformance: no XLA source directory (--xla-source or KILN_XLA_SOURCE_DIR); skipped")
        return SKIP_EXIT
    if not os.path.isdir(a.xla_source):
        print(f"xla_conformance: {a.xla_source} is not a directory", file=sys.stderr)
        return 2
    mods = extract(a.xla_source, re.compile(a.filter) if a.filter else None)
    print(f"{len(mods)} modules from {len(set(m.source for m in mods))} files under {a.xla_source}")
    if a.dump:
        os.makedirs(a.dump, exist_ok=True)
        for m in mods:
            name = re.sub(r"[^\w.-]", "_", f"{m.source}.{m.line}") + ".hlo"
            with open(os.path.join(a.dump, name), "w") as fh:
                fh.write(m.text)
    if a.list:
        for m in mods:
            print(f"  {m.name}{' (negative)' if m.negative else ''}: {first_line(m.text)[:100]}")
        return 0
    if not os.access(a.kiln, os.X_OK):
        print(f"xla_conformance: no kiln binary at {a.kiln} (build it, or give --kiln)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="kiln-xla-") as work:
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
            futures = [pool.submit(classify, m, a.kiln, a.timeout, work) for m in mods]
            for i, f in enumerate(concurrent.futures.as_completed(futures)):
                f.result()
                if sys.stdout.isatty():
                    print(f"\r{i + 1}/{len(mods)}", end="", flush=True)
    print_report(mods, [s for s in a.show.split(",") if s])
    if a.json:
        with open(a.json, "w") as fh:
            json.dump([{"module": m.name, "class": m.cls, "detail": m.detail} for m in mods], fh, indent=1)
    bad = sum(1 for m in mods if m.cls in ("crash", "mismatch"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
