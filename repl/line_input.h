// Where the interactive session reads its lines: a line editor at a terminal (line_editor.h),
// or plain lines from a pipe (`kq --repl < file`). Both are read a piece at a time when their
// descriptor is readable, so the session's loop can wait on its jobs' output as well.
#pragma once

#include <memory>
#include <string>

#include "repl/job_table.h"

namespace kq::repl {

class LineInput {
 public:
  enum class Read { Nothing, Line, End };

  virtual ~LineInput() = default;
  /// The descriptor to poll.
  virtual int fd() const = 0;
  /// Starts reading a line: shows `prompt` (a terminal only). `earlier` is the input's lines
  /// so far, when this line continues it (what completion looks at besides the line).
  virtual void start(const std::string& prompt, const std::string& earlier) = 0;
  /// Reads what is waiting; a whole line (without its newline) into `line`, or the end.
  virtual Read read(std::string& line) = 0;
  /// Whether a whole line is already read and waiting (poll would not say so).
  virtual bool hasLine() const { return false; }
  /// Stops reading (a query runs in the foreground): the terminal is as it was.
  virtual void pause() {}
  /// Ctrl-C while a line is being edited: the line is abandoned and a new one starts.
  virtual void interrupt() {}
  /// The terminal was resized, or the session resumed after being suspended.
  virtual void resized() {}
  virtual void resumed() {}
  /// Keeps a finished input in the history.
  virtual void remember(const std::string& entry) {}
  /// Where the jobs' output goes while a line is being read.
  virtual JobOutput& output() = 0;
};

/// Lines from a file descriptor that is not a terminal; no prompt, no history.
std::unique_ptr<LineInput> plainLines(int fd, std::ostream& out, std::ostream& err);

}  // namespace kq::repl
