#include "repl/line_editor.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <climits>
#include <cstring>
#include <cwchar>

#include <histedit.h>

#include <fmt/format.h>

namespace kq::repl {
namespace {

constexpr int kHistorySize = 1000;
constexpr size_t kMostListed = 150;  // more candidates than this are counted, not listed
constexpr char kEndOfFile = 0x04;  // Ctrl-D on an empty line, as libedit reports it

void writeAll(int fd, std::string_view text) {
  while (!text.empty()) {
    ssize_t n = write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    text.remove_prefix(static_cast<size_t>(n));
  }
}

/// Creates the directories above `file` (mkdir -p).
void makeParents(const std::string& file) {
  for (size_t slash = file.find('/', 1); slash != std::string::npos;
       slash = file.find('/', slash + 1)) {
    mkdir(file.substr(0, slash).c_str(), 0700);
  }
}

/// `text` in the locale's multibyte encoding, as el_gets gives it: characters the locale
/// cannot encode are left out.
std::string narrow(const wchar_t* text, size_t count) {
  std::string out;
  out.reserve(count);
  char bytes[MB_LEN_MAX];
  for (size_t i = 0; i < count; ++i) {
    std::mbstate_t state{};
    size_t n = std::wcrtomb(bytes, text[i], &state);
    if (n != static_cast<size_t>(-1)) out.append(bytes, n);
  }
  return out;
}

std::string commonPrefix(const std::vector<std::string>& words) {
  std::string prefix = words.front();
  for (const std::string& w : words) {
    size_t n = 0;
    while (n < prefix.size() && n < w.size() && prefix[n] == w[n]) ++n;
    prefix.resize(n);
  }
  return prefix;
}

/// Candidates in columns across `width`, like ls.
std::string columns(const std::vector<std::string>& words, size_t width) {
  size_t longest = 0;
  for (const std::string& w : words) longest = std::max(longest, w.size());
  size_t per_row = std::max<size_t>(1, width / (longest + 2));
  size_t rows = (words.size() + per_row - 1) / per_row;
  std::string out;
  for (size_t r = 0; r < rows; ++r) {
    std::string line;
    for (size_t i = r; i < words.size(); i += rows) {
      line += words[i];
      if (i + rows < words.size()) line += std::string(longest + 2 - words[i].size(), ' ');
    }
    out += line + "\n";
  }
  return out;
}

class LineEditor : public LineInput, public JobOutput {
 public:
  LineEditor(const std::string& history_file, CompleteFn complete, std::ostream& err)
      : history_file_(history_file), complete_(std::move(complete)), err_(err) {
    el_ = el_init("kq", stdin, stdout, stderr);
    el_set(el_, EL_CLIENTDATA, this);
    el_set(el_, EL_EDITOR, "emacs");
    el_set(el_, EL_SIGNAL, 0);  // the session handles signals (session_signals.h)
    el_set(el_, EL_PROMPT, &LineEditor::promptOf);
    history_ = history_init();
    history(history_, &event_, H_SETSIZE, kHistorySize);
    history(history_, &event_, H_SETUNIQUE, 1);
    el_set(el_, EL_HIST, history, history_);
    el_set(el_, EL_ADDFN, "kq-complete", "complete the word before the cursor",
           &LineEditor::onTab);
    el_set(el_, EL_BIND, "^I", "kq-complete", nullptr);
    el_source(el_, nullptr);  // ~/.editrc, as every libedit program reads it
    if (!history_file_.empty()) {
      struct stat st;
      if (stat(history_file_.c_str(), &st) == 0 &&
          history(history_, &event_, H_LOAD, history_file_.c_str()) < 0) {
        err << "kq: cannot read the history in " << history_file_ << "\n";
      }
    }
  }

  ~LineEditor() override {
    el_set(el_, EL_UNBUFFERED, 0);
    el_end(el_);
    history_end(history_);
  }

  int fd() const override { return STDIN_FILENO; }
  JobOutput& output() override { return *this; }

  void start(const std::string& prompt, const std::string& earlier) override {
    prompt_ = prompt;
    earlier_ = earlier.empty() ? "" : earlier + "\n";
    el_set(el_, EL_UNBUFFERED, 1);  // raw mode, an empty line, the prompt drawn
  }

  Read read(std::string& line) override {
    int count = 0;
    // The wide line, not el_gets's bytes: in unbuffered mode each key returns the whole
    // line, which el_gets converts every time (a pasted 16,000-character line took 7.6 s
    // of CPU). It is converted once, when it ends.
    const wchar_t* text = el_wgets(el_, &count);
    if (!text) {
      if (count == -1 && errno != EINTR && errno != EAGAIN) return finish(Read::End);
      return Read::Nothing;
    }
    if (count == 1 && text[0] == kEndOfFile) return finish(Read::End);
    if (count == 0 || text[count - 1] != L'\n') return Read::Nothing;
    line = narrow(text, static_cast<size_t>(count - 1));
    return finish(Read::Line);
  }

  void pause() override { el_set(el_, EL_UNBUFFERED, 0); }

  void interrupt() override {
    moveBelowLine();
    el_set(el_, EL_UNBUFFERED, 0);
  }

  void resized() override {
    el_resize(el_);
    el_set(el_, EL_REFRESH);
  }

  void resumed() override {
    el_set(el_, EL_PREP_TERM, 1);
    el_set(el_, EL_REFRESH);
  }

  void remember(const std::string& entry) override {
    history(history_, &event_, H_ENTER, entry.c_str());
    if (history_file_.empty()) return;
    makeParents(history_file_);
    if (history(history_, &event_, H_SAVE, history_file_.c_str()) < 0 && !save_failed_) {
      save_failed_ = true;
      err_ << "kq: cannot save the history in " << history_file_ << ": " << std::strerror(errno)
           << "\n";
    }
  }

  /// Erases the line being edited, writes the chunks where it was, draws it again below.
  void write(const std::vector<OutputChunk>& chunks) override {
    std::fflush(stdout);
    std::string erase = "\r";
    if (size_t row = cursorRow(); row > 0) erase += fmt::format("\033[{}A", row);
    erase += "\033[J";
    writeAll(STDOUT_FILENO, erase);
    bool ends_line = true;
    for (const OutputChunk& c : chunks) {
      writeAll(c.error ? STDERR_FILENO : STDOUT_FILENO, c.text);
      if (!c.text.empty()) ends_line = c.text.back() == '\n';
    }
    if (!ends_line) writeAll(STDOUT_FILENO, "\n");
    el_set(el_, EL_REFRESH);
  }

 private:
  static char* promptOf(EditLine* el) {
    LineEditor* self = nullptr;
    el_get(el, EL_CLIENTDATA, &self);
    return self->prompt_.data();
  }

  static unsigned char onTab(EditLine* el, int) {
    LineEditor* self = nullptr;
    el_get(el, EL_CLIENTDATA, &self);
    return self->completeWord();
  }

  Read finish(Read what) {
    el_set(el_, EL_UNBUFFERED, 0);  // the terminal as it was until the next start()
    return what;
  }

  size_t width() const {
    int cols = 0;
    el_get(el_, EL_GETTC, "co", &cols, nullptr);
    return cols > 0 ? static_cast<size_t>(cols) : 80;
  }

  /// The row of the cursor, and of the line's end, counted from the prompt's.
  size_t cursorRow() const {
    const LineInfo* li = el_line(el_);
    return (prompt_.size() + static_cast<size_t>(li->cursor - li->buffer)) / width();
  }
  size_t lastRow() const {
    const LineInfo* li = el_line(el_);
    return (prompt_.size() + static_cast<size_t>(li->lastchar - li->buffer)) / width();
  }

  /// Moves the cursor to a new line below the line being edited.
  void moveBelowLine() {
    std::fflush(stdout);
    std::string move;
    if (size_t down = lastRow() - cursorRow(); down > 0) move += fmt::format("\033[{}B", down);
    writeAll(STDOUT_FILENO, move + "\r\n");
  }

  unsigned char completeWord() {
    if (!complete_) return CC_REFRESH_BEEP;
    const LineInfo* li = el_line(el_);
    std::string before(li->buffer, static_cast<size_t>(li->cursor - li->buffer));
    Completion c;
    try {
      c = complete_(earlier_ + before);
    } catch (const std::exception&) {
      return CC_REFRESH_BEEP;  // an exception must not cross libedit; a bug, but no answer is an answer
    }
    // A word that began on an earlier line cannot be edited here.
    if (c.candidates.empty() || c.start < earlier_.size()) return CC_REFRESH_BEEP;
    std::string word = before.substr(c.start - earlier_.size());
    auto replace = [&](const std::string& with) {
      el_deletestr(el_, static_cast<int>(word.size()));
      el_insertstr(el_, with.c_str());
      return static_cast<unsigned char>(CC_REFRESH);
    };
    if (c.candidates.size() == 1) {
      return replace(c.candidates[0] + (c.space_after ? " " : ""));
    }
    std::string prefix = commonPrefix(c.candidates);
    if (prefix.size() > word.size() && prefix.compare(0, word.size(), word) == 0) {
      return replace(prefix);
    }
    // Nothing to add: show them under the line, and the line again under them.
    // Past kMostListed they are counted; a second Tab on the same text lists them all.
    moveBelowLine();
    std::string asked = earlier_ + before;
    bool all = asked == cut_listing_;
    size_t more = !all && c.candidates.size() > kMostListed ? c.candidates.size() - kMostListed : 0;
    c.candidates.resize(c.candidates.size() - more);
    std::string list = columns(c.candidates, width());
    if (more) list += fmt::format("... and {} more (Tab again lists them all)\n", more);
    cut_listing_ = more ? asked : "";
    writeAll(STDOUT_FILENO, list);
    el_set(el_, EL_REFRESH);
    return CC_NORM;
  }

  EditLine* el_ = nullptr;
  History* history_ = nullptr;
  HistEvent event_{};
  std::string prompt_;
  std::string earlier_;  // the input's earlier lines, each ending with '\n'
  std::string cut_listing_;  // the input whose candidates were last listed cut short
  std::string history_file_;
  CompleteFn complete_;
  std::ostream& err_;
  bool save_failed_ = false;
};

}  // namespace

std::unique_ptr<LineInput> lineEditor(const std::string& history_file, CompleteFn complete,
                                      std::ostream& err) {
  return std::make_unique<LineEditor>(history_file, std::move(complete), err);
}

}  // namespace kq::repl
