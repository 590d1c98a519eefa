#include "repl/line_input.h"

#include <unistd.h>

#include <cerrno>

namespace kq::repl {
namespace {

class PlainLines : public LineInput {
 public:
  PlainLines(int fd, std::ostream& out, std::ostream& err) : fd_(fd), output_(out, err) {}

  int fd() const override { return fd_; }
  void start(const std::string&, const std::string&) override {}
  bool hasLine() const override {
    return pending_.find('\n') != std::string::npos || (ended_ && !pending_.empty());
  }
  JobOutput& output() override { return output_; }

  Read read(std::string& line) override {
    if (!hasLine() && !ended_) fill();
    size_t nl = pending_.find('\n');
    if (nl != std::string::npos) {
      line = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      return Read::Line;
    }
    if (!ended_) return Read::Nothing;
    if (pending_.empty()) return Read::End;
    line = std::move(pending_);  // a last line without its newline
    pending_.clear();
    return Read::Line;
  }

 private:
  void fill() {
    char buffer[4096];
    ssize_t n;
    do {
      n = ::read(fd_, buffer, sizeof buffer);
    } while (n < 0 && errno == EINTR);
    if (n > 0) {
      pending_.append(buffer, static_cast<size_t>(n));
    } else if (n == 0 || errno != EAGAIN) {
      ended_ = true;
    }
  }

  int fd_;
  StreamOutput output_;
  std::string pending_;
  bool ended_ = false;
};

}  // namespace

std::unique_ptr<LineInput> plainLines(int fd, std::ostream& out, std::ostream& err) {
  return std::make_unique<PlainLines>(fd, out, err);
}

}  // namespace kq::repl
