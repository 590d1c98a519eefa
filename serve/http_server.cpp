#include "serve/http_server.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

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
  for (;;) {
    pollfd fds[2] = {{fd_, POLLIN, 0}, {stop_fd, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents) return;
    if (!(fds[0].revents & POLLIN)) continue;
    int connection = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (connection < 0) continue;
    answer(connection, handler);
    ::close(connection);
  }
}

void HttpServer::answer(int connection, const Handler& handler) {
  std::string text;
  char buffer[4096];
  while (text.find("\r\n\r\n") == std::string::npos && text.size() < kMaxRequestBytes) {
    pollfd p{connection, POLLIN, 0};
    if (::poll(&p, 1, kRequestTimeoutMs) <= 0) return;
    ssize_t n = ::recv(connection, buffer, sizeof buffer, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    text.append(buffer, static_cast<size_t>(n));
  }
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
