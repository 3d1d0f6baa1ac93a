//===- FakeCudaPtx.cpp - The fake driver reads a PTX module's kernels -----===//
//
// Each `.entry` of a module: its parameters (size, `.ptr`, `.align`), its
// `.maxntid` / `.reqntid`, and per `.ptr` parameter the widest global access
// whose address derives from it (FakeCudaDriver.cpp checks launches
// against them).
//
//===----------------------------------------------------------------------===//

#include "FakeCudaDriverInternal.h"

#include <algorithm>
#include <regex>
#include <set>
#include <sstream>

namespace inkling::fakecuda::driver {

namespace {
/// Records, for every `.ptr` parameter of `function`, the widest global
/// access whose address derives from it in `body`.
void findAccessWidths(const std::string &body,
                      const std::map<std::string, int> &paramIndex,
                      Function &function) {
  // Statements: "[@pred] opcode operands;".
  struct Statement {
    std::string opcode;
    std::vector<std::string> operands;
  };
  std::vector<Statement> statements;
  static const std::regex register_(R"(%[A-Za-z_$][\w$]*)");
  static const std::regex comment(R"(//[^\n]*)");
  static const std::regex prefix(R"(^(\s|[{}]|[$\w]+:)+)");
  std::string code = std::regex_replace(body, comment, "");
  size_t start = 0;
  while (start < code.size()) {
    size_t end = code.find(';', start);
    if (end == std::string::npos)
      break;
    // Without braces of inline blocks and labels.
    std::string text =
        std::regex_replace(code.substr(start, end - start), prefix, "");
    start = end + 1;
    std::istringstream in(text);
    Statement st;
    in >> st.opcode;
    if (!st.opcode.empty() && st.opcode[0] == '@')
      in >> st.opcode;
    std::string rest;
    std::getline(in, rest, '\0');
    std::string operand;
    for (char c : rest + ",") {
      if (c == ',') {
        st.operands.push_back(operand);
        operand.clear();
      } else if (c != ' ' && c != '\t' && c != '\n') {
        operand += c;
      }
    }
    statements.push_back(std::move(st));
  }
  auto startsWith = [](const std::string &text, const char *prefix) {
    return text.rfind(prefix, 0) == 0;
  };
  // register -> the pointer parameters it derives from.
  std::map<std::string, std::set<int>> taint;
  for (const Statement &st : statements) {
    if (!startsWith(st.opcode, "ld.param") || st.operands.size() != 2)
      continue;
    std::string name = st.operands[1];
    if (name.size() > 2 && name.front() == '[' && name.back() == ']')
      name = name.substr(1, name.size() - 2);
    auto it = paramIndex.find(name);
    if (it != paramIndex.end() && function.params[it->second].pointer)
      taint[st.operands[0]].insert(it->second);
  }
  // Address arithmetic keeps a pointer a pointer; to a fixpoint (loops).
  for (bool changed = true; changed;) {
    changed = false;
    for (const Statement &st : statements) {
      static const char *kPropagate[] = {"cvta.", "add.", "sub.",
                                         "mad.",  "mov.", "selp."};
      bool propagates = false;
      for (const char *prefix : kPropagate)
        propagates |= startsWith(st.opcode, prefix);
      if (!propagates || st.operands.size() < 2)
        continue;
      std::set<int> &dst = taint[st.operands[0]];
      size_t before = dst.size();
      for (size_t i = 1; i < st.operands.size(); ++i) {
        auto it = taint.find(st.operands[i]);
        if (it != taint.end() && &it->second != &dst)
          dst.insert(it->second.begin(), it->second.end());
      }
      changed |= dst.size() != before;
    }
  }
  static const std::regex access(
      R"(^(ld|st|atom|red)\.global(\.[a-z0-9]+)*?(\.v(2|4))?\.[bsuf](8|16|32|64)$)");
  for (const Statement &st : statements) {
    std::smatch m;
    if (!std::regex_match(st.opcode, m, access))
      continue;
    uint64_t width =
        std::stoull(m[5]) / 8 * (m[4].matched ? std::stoull(m[4]) : 1);
    for (const std::string &operand : st.operands) {
      if (operand.empty() || operand.front() != '[')
        continue;
      std::smatch r;
      if (!std::regex_search(operand, r, register_))
        continue;
      auto it = taint.find(r[0]);
      if (it == taint.end())
        continue;
      for (int p : it->second)
        function.params[p].access = std::max(function.params[p].access, width);
    }
  }
}

} // namespace

CUresult parsePtx(const std::string &ptx, Module &module) {
  std::smatch match;
  static const std::regex target(R"(\.target\s+sm_(\d+))");
  if (!std::regex_search(ptx, match, target))
    return reject(kInvalidImage, "cuModuleLoadData: not PTX (no .target)");
  if (std::stoi(match[1]) > kComputeCapability)
    return reject(kNoBinaryForGpu, "cuModuleLoadData: PTX for sm_" +
                                       match[1].str() + ", the device is sm_" +
                                       std::to_string(kComputeCapability));
  static const std::regex entry(
      R"(\.entry\s+([A-Za-z_$][\w$]*)\s*\(([^)]*)\)([^{]*)\{)");
  static const std::regex param(
      R"(\.param\s+(?:\.align\s+\d+\s+)?\.([usbf])(\d+)(\s+\.ptr)?(\s+\.(global|shared|const|local))?(\s+\.align\s+(\d+))?\s+([A-Za-z_$][\w$]*)\s*(\[)?)");
  static const std::regex maxntid(
      R"(\.maxntid\s+(\d+)(\s*,\s*(\d+))?(\s*,\s*(\d+))?)");
  static const std::regex reqntid(
      R"(\.reqntid\s+(\d+)(\s*,\s*(\d+))?(\s*,\s*(\d+))?)");
  for (auto it = std::sregex_iterator(ptx.begin(), ptx.end(), entry);
       it != std::sregex_iterator(); ++it) {
    auto function = std::make_unique<Function>();
    function->name = (*it)[1];
    std::string list = (*it)[2];
    std::map<std::string, int> paramIndex;
    for (auto p = std::sregex_iterator(list.begin(), list.end(), param);
         p != std::sregex_iterator(); ++p) {
      Param declared;
      declared.bytes = std::stoi((*p)[2]) / 8;
      declared.pointer = (*p)[3].matched;
      if ((*p)[7].matched)
        declared.align = std::stoull((*p)[7]);
      if ((*p)[9].matched) // an array (a by-value struct)
        declared.bytes = 1 << 20;
      paramIndex[(*p)[8]] = static_cast<int>(function->params.size());
      function->params.push_back(declared);
    }
    std::string directives = (*it)[3];
    auto dims = [](const std::smatch &m) {
      std::array<unsigned, 3> d = {static_cast<unsigned>(std::stoul(m[1])), 1,
                                   1};
      if (m[3].matched)
        d[1] = static_cast<unsigned>(std::stoul(m[3]));
      if (m[5].matched)
        d[2] = static_cast<unsigned>(std::stoul(m[5]));
      return d;
    };
    std::smatch d;
    if (std::regex_search(directives, d, maxntid)) {
      auto n = dims(d);
      function->maxThreads = uint64_t(n[0]) * n[1] * n[2];
    }
    if (std::regex_search(directives, d, reqntid))
      function->required = dims(d);
    // The body: up to the next entry (over-approximates; fine for a check).
    size_t bodyStart = it->position(0) + it->length(0);
    size_t next = ptx.find(".entry", bodyStart);
    findAccessWidths(ptx.substr(bodyStart, next == std::string::npos
                                               ? std::string::npos
                                               : next - bodyStart),
                     paramIndex, *function);
    module.functions[function->name] = std::move(function);
  }
  if (module.functions.empty())
    return reject(kInvalidImage, "cuModuleLoadData: the PTX has no .entry");
  return kSuccess;
}

} // namespace inkling::fakecuda::driver
