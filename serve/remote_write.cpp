#include "serve/remote_write.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <chrono>
#include <cstring>
#include <map>
#include <ostream>

#include <fmt/format.h>
#include <snappy.h>

namespace kq::serve {
namespace {

constexpr int kTimeoutMs = 5000;

void varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}

/// A length-delimited field (wire type 2).
void bytesField(std::string& out, uint32_t field, const std::string& bytes) {
  varint(out, (field << 3) | 2);
  varint(out, bytes.size());
  out += bytes;
}

std::string label(const std::string& name, const std::string& value) {
  std::string out;
  bytesField(out, 1, name);
  bytesField(out, 2, value);
  return out;
}

std::string sample(double value, int64_t time_ms) {
  std::string out;
  varint(out, (1 << 3) | 1);  // double: 64-bit, wire type 1
  char bytes[8];
  std::memcpy(bytes, &value, 8);
  out.append(bytes, 8);
  varint(out, (2 << 3) | 0);  // int64 timestamp, wire type 0
  varint(out, static_cast<uint64_t>(time_ms));
  return out;
}

double valueOf(const std::string& text) {
  if (text == "+Inf") return HUGE_VAL;
  return std::strtod(text.c_str(), nullptr);
}

int64_t nowMs() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

}  // namespace

std::string encodeWriteRequest(const std::vector<Family>& families, int64_t time_ms,
                               const std::vector<std::pair<std::string, std::string>>& extra_labels) {
  std::string request;
  for (const Family& f : families) {
    for (const Sample& s : f.samples) {
      std::map<std::string, std::string> labels(extra_labels.begin(), extra_labels.end());
      for (const auto& [name, value] : s.labels) labels[name] = value;
      labels["__name__"] = f.name + s.suffix;
      std::string series;
      for (const auto& [name, value] : labels) bytesField(series, 1, label(name, value));  // sorted by name
      bytesField(series, 2, sample(valueOf(s.value), time_ms));
      bytesField(request, 1, series);
    }
  }
  return request;
}

Result<HttpTarget> parseHttpUrl(const std::string& url) {
  const std::string scheme = "http://";
  if (url.rfind(scheme, 0) != 0) {
    return Error{fmt::format("--remote-write takes an http:// URL (`{}`); for https, put a proxy on "
                             "localhost in front of the receiver", url)};
  }
  std::string rest = url.substr(scheme.size());
  size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  HttpTarget t;
  t.path = slash == std::string::npos ? "/" : rest.substr(slash);
  size_t colon = authority.rfind(':');
  bool bracketed = !authority.empty() && authority.front() == '[';
  if (colon != std::string::npos && (!bracketed || colon > authority.find(']'))) {
    t.host = authority.substr(0, colon);
    t.port = authority.substr(colon + 1);
  } else {
    t.host = authority;
    t.port = "80";
  }
  if (t.host.size() >= 2 && t.host.front() == '[') t.host = t.host.substr(1, t.host.size() - 2);
  if (t.host.empty()) return Error{fmt::format("--remote-write: no host in `{}`", url)};
  return t;
}

RemoteWriter::RemoteWriter(RemoteWriteOptions options, HttpTarget target,
                           std::function<std::vector<Family>()> families, std::ostream& log)
    : options_(std::move(options)), target_(std::move(target)), families_(std::move(families)), log_(log) {}

void RemoteWriter::run(int stop_fd) {
  for (;;) {
    pollfd p{stop_fd, POLLIN, 0};
    int n = ::poll(&p, 1, static_cast<int>(options_.interval_ms));
    tick();
    if (n > 0) return;
  }
}

void RemoteWriter::tick() {
  std::string raw = encodeWriteRequest(families_(), nowMs(), {{"instance", options_.instance}, {"job", options_.job}});
  std::string body;
  snappy::Compress(raw.data(), raw.size(), &body);
  pending_.push_back(std::move(body));
  while (pending_.size() > options_.max_pending) {
    pending_.pop_front();
    ++dropped_;
  }
  while (!pending_.empty()) {
    std::string error = post(pending_.front());
    if (error.rfind("answered 4", 0) == 0) {
      // The receiver refuses this request itself (the spec: never retried).
      log_ << "kq serve: remote write to " << options_.url << ": " << error << " (dropped)\n" << std::flush;
      pending_.pop_front();
      ++dropped_;
      continue;
    }
    if (!error.empty()) {
      ++failed_;
      if (error != last_error_) log_ << "kq serve: remote write to " << options_.url << ": " << error << "\n" << std::flush;
      last_error_ = error;
      break;
    }
    if (!last_error_.empty()) log_ << "kq serve: remote write to " << options_.url << ": sending again\n" << std::flush;
    last_error_.clear();
    pending_.pop_front();
    ++sent_;
  }
  pending_count_ = pending_.size();
}

std::string RemoteWriter::post(const std::string& body) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int err = getaddrinfo(target_.host.c_str(), target_.port.c_str(), &hints, &found); err != 0) {
    return fmt::format("cannot resolve {}: {}", target_.host, gai_strerror(err));
  }
  int fd = ::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  std::string error;
  if (fd < 0) error = std::strerror(errno);
  if (fd >= 0 && ::connect(fd, found->ai_addr, found->ai_addrlen) != 0 && errno != EINPROGRESS) {
    error = std::strerror(errno);
  }
  freeaddrinfo(found);
  auto wait = [&](short events) {
    pollfd p{fd, events, 0};
    return ::poll(&p, 1, kTimeoutMs) > 0 && !(p.revents & (POLLERR | POLLHUP) && !(p.revents & POLLIN));
  };
  if (error.empty()) {
    if (!wait(POLLOUT)) {
      error = "cannot connect";
    } else {
      int so_error = 0;
      socklen_t len = sizeof so_error;
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &len);
      if (so_error) error = std::strerror(so_error);
    }
  }
  if (error.empty()) {
    std::string request = fmt::format(
        "POST {} HTTP/1.1\r\nHost: {}:{}\r\nContent-Type: application/x-protobuf\r\nContent-Encoding: snappy\r\n"
        "X-Prometheus-Remote-Write-Version: 0.1.0\r\nUser-Agent: kq-serve\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        target_.path, target_.host, target_.port, body.size());
    request += body;
    size_t done = 0;
    while (done < request.size() && error.empty()) {
      ssize_t n = ::send(fd, request.data() + done, request.size() - done, MSG_NOSIGNAL);
      if (n > 0) done += static_cast<size_t>(n);
      else if (n < 0 && (errno == EAGAIN || errno == EINTR)) { if (!wait(POLLOUT)) error = "timed out sending"; }
      else error = std::strerror(errno);
    }
  }
  if (error.empty()) {
    std::string reply;
    char buffer[1024];
    while (reply.find("\r\n") == std::string::npos && error.empty()) {
      if (!wait(POLLIN)) { error = "no answer"; break; }
      ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
      if (n > 0) reply.append(buffer, static_cast<size_t>(n));
      else if (n == 0) error = "closed without an answer";
      else if (errno != EAGAIN && errno != EINTR) error = std::strerror(errno);
    }
    if (error.empty()) {
      std::string status = reply.substr(0, reply.find("\r\n"));
      size_t sp = status.find(' ');
      int code = sp == std::string::npos ? 0 : std::atoi(status.c_str() + sp + 1);
      if (code < 200 || code >= 300) error = "answered " + status.substr(sp == std::string::npos ? 0 : sp + 1);
    }
  }
  if (fd >= 0) ::close(fd);
  return error;
}

}  // namespace kq::serve
