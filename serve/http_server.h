// The HTTP that `kq serve` answers: GET requests on one listening socket, each answered and
// closed (what a Prometheus scrape and a health check need). Connections are read side by
// side, so one that sends nothing delays no other; one that sends no whole request within
// kRequestTimeoutMs is dropped. Its own thread, never the ring buffers' readers: a flood of
// events cannot delay a scrape.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "compiler/diag/result.h"

namespace kq::serve {

struct HttpRequest {
  std::string method;
  std::string path;  // without the query string
  std::string accept;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

class HttpServer {
 public:
  using Handler = std::function<HttpResponse(const HttpRequest&)>;
  static constexpr int kRequestTimeoutMs = 5000;
  /// Connections waiting for their request at once; a new one drops the oldest past it.
  static constexpr size_t kMaxWaiting = 64;

  /// Listens on `address`: `HOST:PORT` (`127.0.0.1:9435`, `[::1]:9435`, `0.0.0.0:9435`);
  /// port 0 takes a free one.
  static Result<std::unique_ptr<HttpServer>> listen(const std::string& address);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  /// Where it listens, as `HOST:PORT` with the port it got.
  const std::string& address() const { return address_; }
  /// Answers requests until `stop_fd` is readable.
  void serve(const Handler& handler, int stop_fd);

 private:
  HttpServer() = default;
  /// Answers the request in `text` (whole, or kMaxRequestBytes of it) on `connection`.
  void answer(int connection, const std::string& text, const Handler& handler);

  int fd_ = -1;
  std::string address_;
};

}  // namespace kq::serve
