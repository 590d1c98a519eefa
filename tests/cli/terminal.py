"""kq's interactive session driven as a person would: kq runs in a pseudo-terminal, keys are
typed into it, and what it draws is kept on a small screen (the subset of xterm's control
sequences a line editor uses), so tests assert on what a person would see."""
import fcntl
import os
import pty
import re
import select
import signal
import struct
import termios
import time

# scripts/sanitize runs kq under AddressSanitizer, several times slower: every wait scales.
TIMEOUT_SCALE = float(os.environ.get("KQ_TEST_TIMEOUT_SCALE", "1"))

WIDTH = 120


class Screen:
    """The rows a terminal of WIDTH columns shows, from the first output on (no scrolling
    off the top): enough to see what was printed where, and the line being edited."""

    def __init__(self):
        self.rows = [[]]
        self.row = 0
        self.col = 0

    def feed(self, data: bytes):
        text = data.decode("utf-8", "replace")
        i = 0
        while i < len(text):
            ch = text[i]
            if ch == "\x1b":
                m = re.compile(r"\x1b\[([?>=]?)([0-9;]*)([A-Za-z@])").match(text, i)
                if not m:
                    i += 2  # a two-character sequence (ESC =, ESC >, ...)
                    continue
                self._csi(m.group(1), m.group(2), m.group(3))
                i = m.end()
                continue
            if ch == "\r":
                self.col = 0
            elif ch == "\n":
                self._down()
            elif ch == "\b":
                self.col = max(0, self.col - 1)
            elif ch == "\a":
                pass
            elif ch == "\t":
                self.col = min(WIDTH - 1, (self.col // 8 + 1) * 8)
            elif ch >= " ":
                if self.col >= WIDTH:
                    self.col = 0
                    self._down()
                line = self.rows[self.row]
                while len(line) < self.col:
                    line.append(" ")
                if self.col < len(line):
                    line[self.col] = ch
                else:
                    line.append(ch)
                self.col += 1
            i += 1

    def _down(self):
        self.row += 1
        while len(self.rows) <= self.row:
            self.rows.append([])

    def _csi(self, private, params, final):
        if private:
            return
        numbers = [int(p) if p else 0 for p in params.split(";")] if params else []
        n = numbers[0] if numbers and numbers[0] else 1
        if final == "A":
            self.row = max(0, self.row - n)
        elif final == "B":
            for _ in range(n):
                self._down()
        elif final == "C":
            self.col = min(WIDTH - 1, self.col + n)
        elif final == "D":
            self.col = max(0, self.col - n)
        elif final == "G":
            self.col = n - 1
        elif final == "K":
            line = self.rows[self.row]
            which = numbers[0] if numbers else 0
            if which == 0:
                del line[self.col:]
            elif which == 1:
                for c in range(min(self.col + 1, len(line))):
                    line[c] = " "
            else:
                line.clear()
        elif final == "J":
            del self.rows[self.row][self.col:]
            del self.rows[self.row + 1:]
        # Colours (m) and anything else change nothing the tests look at.

    def lines(self):
        return ["".join(r).rstrip() for r in self.rows]

    def text(self):
        return "\n".join(self.lines())

    def current(self):
        """The row the cursor is on."""
        return "".join(self.rows[self.row]).rstrip()


class Session:
    """kq in a pseudo-terminal."""

    def __init__(self, kq, args=(), env=None):
        self.screen = Screen()
        pid, fd = pty.fork()
        if pid == 0:
            try:
                os.execve(kq, [kq, *args], {**os.environ, "TERM": "xterm", **(env or {})})
            finally:
                os._exit(127)
        self.pid, self.fd = pid, fd
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, WIDTH, 0, 0))
        self.status = None

    def pump(self, seconds=0.05):
        """Reads what kq drew for up to `seconds`."""
        end = time.monotonic() + seconds
        while True:
            left = end - time.monotonic()
            r, _, _ = select.select([self.fd], [], [], max(0, left))
            if r:
                try:
                    data = os.read(self.fd, 65536)
                except OSError:
                    data = b""
                if not data:
                    return False
                self.screen.feed(data)
            elif left <= 0:
                return True

    def wait_for(self, pattern, timeout=20, since=0):
        """Waits until the screen (from row `since`) matches `pattern`; returns the match."""
        end = time.monotonic() + timeout * TIMEOUT_SCALE
        while True:
            text = "\n".join(self.screen.lines()[since:])
            m = re.search(pattern, text, re.M)
            if m:
                return m
            if time.monotonic() > end:
                raise AssertionError(f"{pattern!r} not on the screen after {timeout}s:\n{self.screen.text()}")
            if not self.pump(0.1) and self.exited():
                raise AssertionError(f"kq ended (status {self.status}) before {pattern!r}:\n{self.screen.text()}")

    def wait_current(self, line, timeout=10):
        """Waits until the cursor's row shows `line`."""
        end = time.monotonic() + timeout * TIMEOUT_SCALE
        while self.screen.current() != line:
            if time.monotonic() > end:
                raise AssertionError(f"{line!r} not on the cursor's row after {timeout}s:\n{self.screen.text()}")
            if not self.pump(0.1) and self.exited():
                raise AssertionError(f"kq ended (status {self.status}):\n{self.screen.text()}")

    def wait_prompt(self, timeout=20):
        """Waits for an empty prompt on the cursor's row."""
        self.wait_current("kq>", timeout)

    def mark(self):
        """The row the cursor is on: wait_for(..., since=mark) looks only below it."""
        return self.screen.row

    def type(self, text):
        os.write(self.fd, text.encode())
        self.pump(0.05)

    def enter(self, text):
        """Types a line and Return."""
        self.type(text + "\r")

    def tab(self):
        self.type("\t")
        self.pump(0.3)

    def ctrl_c(self):
        self.type("\x03")

    def ctrl_d(self):
        self.type("\x04")

    def exited(self):
        if self.status is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = os.waitstatus_to_exitcode(status)
        return self.status is not None

    def wait_exit(self, timeout=20):
        end = time.monotonic() + timeout * TIMEOUT_SCALE
        while not self.exited():
            if time.monotonic() > end:
                raise AssertionError(f"kq did not end after {timeout}s:\n{self.screen.text()}")
            self.pump(0.1)
        self.pump(0.1)
        return self.status

    def close(self):
        if not self.exited():
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        os.close(self.fd)
