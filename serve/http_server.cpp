#include "serve/http_server.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <fmt/format.h>


namespace kq::serve {
namespace {

constexpr size_t kMaxRequestBytes = 16 * 1024;

const char* reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 400: return "Bad Request";
    case 503: return "Service Unavailable";
    default: return "Error";
  }
}

/// `HOST:PORT` split; HOST may be `[v6]`.
bool splitAddress(const std::string& address, std::string& host, std::string& port) {
  size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon + 1 == address.size()) return false;
  host = address.substr(0, colon);
  port = address.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return !host.empty();
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool writeAll(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

Result<std::unique_ptr<HttpServer>> HttpServer::listen(const std::string& address) {
  std::string host, port;
  if (!splitAddress(address, host, port)) {
    return Error{fmt::format("--listen takes HOST:PORT (127.0.0.1:9435), not `{}`", address)};
  }
  char* end = nullptr;
  long number = std::strtol(port.c_str(), &end, 10);
  if (port.empty() || *end != '\0' || number < 0 || number > 65535) {
    return Error{fmt::format("cannot listen on `{}`: a port is a number from 0 to 65535", address)};
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICHOST | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (int err = getaddrinfo(host.c_str(), port.c_str(), &hints, &found); err != 0) {
    return Error{fmt::format("cannot listen on `{}`: {} (give a numeric address and port)", address,
                             gai_strerror(err))};
  }
  std::unique_ptr<HttpServer> server(new HttpServer());
  int fd = ::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  if (fd >= 0) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (fd < 0 || ::bind(fd, found->ai_addr, found->ai_addrlen) != 0 || ::listen(fd, 64) != 0) {
    int err = errno;
    if (fd >= 0) ::close(fd);
    freeaddrinfo(found);
    return Error{fmt::format("cannot listen on {}: {}", address, std::strerror(err))};
  }
  freeaddrinfo(found);
  server->fd_ = fd;
  sockaddr_storage bound{};
  socklen_t size = sizeof bound;
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &size);
  char text[INET6_ADDRSTRLEN] = "";
  uint16_t got = 0;
  if (bound.ss_family == AF_INET6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&bound);
    inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof text);
    got = ntohs(a->sin6_port);
    server->address_ = fmt::format("[{}]:{}", text, got);
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&bound);
    inet_ntop(AF_INET, &a->sin_addr, text, sizeof text);
    got = ntohs(a->sin_port);
    server->address_ = fmt::format("{}:{}", text, got);
  }
  return server;
}

HttpServer::~HttpServer() {
  if (fd_ >= 0) ::close(fd_);
}

void HttpServer::serve(const Handler& handler, int stop_fd) {
  // Connections are read side by side, each answered once its request is whole: one that
  // sends nothing (or a byte a second) holds up no other scrape, and is dropped at its
  // deadline; past kMaxWaiting, the oldest is.
  struct Waiting {
    int fd;
    std::string text;
    std::chrono::steady_clock::time_point deadline;
  };
  std::vector<Waiting> waiting;
  auto drop = [&](size_t i) {
    ::close(waiting[i].fd);
    waiting.erase(waiting.begin() + static_cast<std::ptrdiff_t>(i));
  };
  for (;;) {
    std::vector<pollfd> fds = {{fd_, POLLIN, 0}, {stop_fd, POLLIN, 0}};
    auto now = std::chrono::steady_clock::now();
    int timeout = -1;
    for (const Waiting& w : waiting) {
      fds.push_back({w.fd, POLLIN, 0});
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(w.deadline - now).count();
      timeout = timeout < 0 ? static_cast<int>(std::max<int64_t>(left, 0))
                            : std::min(timeout, static_cast<int>(std::max<int64_t>(left, 0)));
    }
    if (::poll(fds.data(), fds.size(), timeout) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[1].revents) break;
    now = std::chrono::steady_clock::now();
    // Newest last: a connection's index in `fds` is its index in `waiting` plus 2.
    for (size_t i = waiting.size(); i-- > 0;) {
      Waiting& w = waiting[i];
      if (fds[i + 2].revents) {
        char buffer[4096];
        ssize_t n = ::recv(w.fd, buffer, sizeof buffer, MSG_DONTWAIT);
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (n <= 0) {
          drop(i);
          continue;
        }
        w.text.append(buffer, static_cast<size_t>(n));
        if (w.text.find("\r\n\r\n") != std::string::npos || w.text.size() >= kMaxRequestBytes) {
          answer(w.fd, w.text, handler);
          drop(i);
          continue;
        }
      }
      if (now >= w.deadline) drop(i);
    }
    if (fds[0].revents & POLLIN) {
      int connection = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (connection < 0) continue;
      timeval send_timeout{kRequestTimeoutMs / 1000, 0};  // a reader that stops reading
      setsockopt(connection, SOL_SOCKET, SO_SNDTIMEO, &send_timeout, sizeof send_timeout);
      if (waiting.size() >= kMaxWaiting) drop(0);
      waiting.push_back({connection, "", now + std::chrono::milliseconds(kRequestTimeoutMs)});
    }
  }
  for (const Waiting& w : waiting) ::close(w.fd);
}

void HttpServer::answer(int connection, const std::string& text, const Handler& handler) {
  HttpRequest request;
  HttpResponse response;
  size_t line_end = text.find("\r\n");
  std::string line = text.substr(0, line_end);
  size_t sp1 = line.find(' '), sp2 = line.rfind(' ');
  if (line_end == std::string::npos || sp1 == std::string::npos || sp2 <= sp1) {
    response = {400, "text/plain; charset=utf-8", "bad request\n"};
  } else {
    request.method = line.substr(0, sp1);
    request.path = line.substr(sp1 + 1, sp2 - sp1 - 1);
    request.path = request.path.substr(0, request.path.find('?'));
    for (size_t at = line_end + 2; at < text.size();) {
      size_t end = text.find("\r\n", at);
      if (end == std::string::npos || end == at) break;
      std::string header = text.substr(at, end - at);
      size_t colon = header.find(':');
      if (colon != std::string::npos && lower(header.substr(0, colon)) == "accept") {
        request.accept = header.substr(colon + 1);
      }
      at = end + 2;
    }
    if (request.method != "GET" && request.method != "HEAD") {
      response = {405, "text/plain; charset=utf-8", "only GET\n"};
    } else {
      response = handler(request);
    }
  }
  std::string head = fmt::format(
      "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
      response.status, reason(response.status), response.content_type, response.body.size());
  if (writeAll(connection, head) && request.method != "HEAD") writeAll(connection, response.body);
}

}  // namespace kq::serve
