// `-f folded`: stacks as Brendan Gregg's folded format, what flamegraph.pl, inferno and
// speedscope read: one line per distinct stack, its frames root first joined by `;`, then a
// space and its count. A table grouped by `kstack` or `ustack` gives each group's count
// (its first count, else its first scalar aggregate), its other keys as the outermost
// frames (`comm;main;...`); an event with a stack counts 1. Frames are functions, without
// offsets; stacks that fold alike are one line. Written when the session ends.
#include <map>

#include <fmt/format.h>

#include "engine/data_sink.h"
#include "engine/table.h"

namespace kq::engine {
namespace {

bool isStack(const plan::FieldLayout& f) {
  return f.kind == plan::FieldKind::KernelStack || f.kind == plan::FieldKind::UserStack;
}

/// A frame as the format wants it: no `+0x1a`, no spaces (the count follows the last one).
std::string frameText(std::string frame) {
  if (size_t plus = frame.rfind("+0x"); plus != std::string::npos && plus > 0) frame.resize(plus);
  for (char& c : frame) {
    if (c == ' ' || c == '\t' || c == '\n') c = '_';
    if (c == ';') c = ':';
  }
  return frame.empty() ? "[unknown]" : frame;
}

class FoldedSink : public DataSink {
 public:
  FoldedSink(const plan::ProgramPlan& plan, PrintContext& context, std::ostream& out, std::ostream& err)
      : DataSink(plan, context, out, err), err_(err) {}

  void onEvent(const DecodedEvent& e) override {
    std::vector<const Value*> stacks;
    for (plan::FieldKind kind : {plan::FieldKind::UserStack, plan::FieldKind::KernelStack}) {
      for (size_t i = 0; i < e.values.size() && i < e.probe->fields.size(); ++i) {
        if (e.probe->fields[i].kind == kind && e.values[i].kind == ValueKind::Stack) stacks.push_back(&e.values[i]);
      }
    }
    if (!stacks.empty()) {
      add({}, stacks, 1);
    } else {
      ++without_stack_;
    }
  }

  void onTable(const Table& table) override {
    DataSink::onTable(table);
    const plan::AggregateLayout& a = *table.layout;
    int32_t count_slot = -1;
    for (size_t s = 0; s < a.slots.size() && count_slot < 0; ++s) {
      if (a.slots[s].kind == plan::AggregateKind::Count || a.slots[s].kind == plan::AggregateKind::Top) {
        count_slot = static_cast<int32_t>(s);
      }
    }
    for (size_t s = 0; s < a.slots.size() && count_slot < 0; ++s) {
      if (!isHistogram(a.slots[s])) count_slot = static_cast<int32_t>(s);
    }
    bool has_stack = std::any_of(a.keys.begin(), a.keys.end(), isStack);
    if (count_slot < 0 || !has_stack) {
      ++tables_without_stack_;
      return;
    }
    for (const TableRow& row : table.rows) {
      std::vector<std::string> outer;
      std::vector<const Value*> stacks;
      for (size_t k = 0; k < a.keys.size(); ++k) {
        if (!a.keys[k].hidden && !isStack(a.keys[k])) outer.push_back(frameText(row.keys[k].text));
      }
      // A user stack calls into the kernel: its frames come first.
      for (plan::FieldKind kind : {plan::FieldKind::UserStack, plan::FieldKind::KernelStack}) {
        for (size_t k = 0; k < a.keys.size(); ++k) {
          if (a.keys[k].kind == kind && row.keys[k].kind == ValueKind::Stack) stacks.push_back(&row.keys[k]);
        }
      }
      int64_t n = row.slots[count_slot].scalar.value_or(0);
      if (n > 0) add(outer, stacks, static_cast<uint64_t>(n));
    }
  }

  void onEnd() override {}

  void onSummary(const SessionResult& result) override {
    for (const auto& [line, n] : lines_) out_ << line << ' ' << n << '\n';
    out_.flush();
    if ((without_stack_ || tables_without_stack_) && !result.reader_gone) {
      // Said, as -f pcapng says what it could not write: a query of no stacks folds to nothing.
      std::string what;
      if (without_stack_) what = fmt::format("{} {}", without_stack_, without_stack_ == 1 ? "event" : "events");
      if (tables_without_stack_) {
        what += fmt::format("{}{} {}", what.empty() ? "" : " and ", tables_without_stack_,
                            tables_without_stack_ == 1 ? "table" : "tables");
      }
      err_ << fmt::format("kq: -f folded writes stacks; {} had none (select `kstack` or `ustack`, or "
                          "`group by kstack select count()`)\n", what);
    }
    DataSink::onSummary(result);
  }

 private:
  /// One sample of `n`: the outer keys, then each stack (outermost first), root first.
  void add(const std::vector<std::string>& outer, const std::vector<const Value*>& stacks, uint64_t n) {
    std::string line;
    for (const std::string& o : outer) line += (line.empty() ? "" : ";") + o;
    for (auto s = stacks.begin(); s != stacks.end(); ++s) {
      const std::vector<std::string>& frames = (*s)->frames;
      for (auto f = frames.rbegin(); f != frames.rend(); ++f) line += (line.empty() ? "" : ";") + frameText(*f);
    }
    if (line.empty()) line = "[no_stack]";  // a kernel stack sampled in user mode is empty
    lines_[line] += n;
  }

  std::map<std::string, uint64_t> lines_;
  std::ostream& err_;
  uint64_t without_stack_ = 0, tables_without_stack_ = 0;
};

}  // namespace

std::unique_ptr<Sink> makeFoldedSink(const plan::ProgramPlan& plan, PrintContext& context, std::ostream& out,
                                     std::ostream& err) {
  return std::make_unique<FoldedSink>(plan, context, out, err);
}

}  // namespace kq::engine
