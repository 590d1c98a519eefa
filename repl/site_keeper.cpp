#include "repl/site_keeper.h"

#include <bpf/bpf.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>

#include <fmt/format.h>

#include "plan/live_site.h"
#include "runtime/link_reaper.h"

namespace kq::repl {
namespace {

constexpr size_t kMessageBytes = 4096;

/// Sends `text` with `fds` (at most two) on `channel`.
void send(int channel, const std::string& text, const std::vector<int>& fds = {}) {
  iovec iov{const_cast<char*>(text.data()), text.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) std::array<char, CMSG_SPACE(2 * sizeof(int))> control{};
  if (!fds.empty()) {
    msg.msg_control = control.data();
    msg.msg_controllen = CMSG_SPACE(fds.size() * sizeof(int));
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(fds.size() * sizeof(int));
    std::memcpy(CMSG_DATA(c), fds.data(), fds.size() * sizeof(int));
  }
  while (sendmsg(channel, &msg, MSG_NOSIGNAL) < 0 && errno == EINTR) {
  }
}

}  // namespace

SiteKeeper::~SiteKeeper() {
  for (Site& s : sites_) {
    close(s.link_fd);
    close(s.slots_fd);
  }
}

std::vector<SiteKeeper::View> SiteKeeper::view() const {
  std::vector<View> out;
  for (const Site& s : sites_) {
    View v{s.id, s.place, s.slots_fd, s.link_fd, std::vector<bool>(plan::kLiveSlots, false)};
    for (const auto& [slot, job] : s.holders) v.held[slot] = true;
    out.push_back(std::move(v));
  }
  return out;
}

void SiteKeeper::read(int channel, uint64_t job) {
  for (;;) {
    std::array<char, kMessageBytes> text{};
    iovec iov{text.data(), text.size() - 1};
    alignas(cmsghdr) std::array<char, CMSG_SPACE(2 * sizeof(int))> control{};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.data();
    msg.msg_controllen = control.size();
    ssize_t n = recvmsg(channel, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    std::vector<int> fds;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      fds.resize(count);
      std::memcpy(fds.data(), CMSG_DATA(c), count * sizeof(int));
    }
    std::string said(text.data(), static_cast<size_t>(n));
    uint64_t id = 0;
    uint32_t slot = 0;
    if (said.rfind("M ", 0) == 0 && fds.size() == 2) {
      sites_.push_back(Site{next_id_++, said.substr(2), fds[0], fds[1], {{0, job}}});
      continue;
    }
    for (int fd : fds) close(fd);
    if (std::sscanf(said.c_str(), "J %lu %u", &id, &slot) == 2 && slot < plan::kLiveSlots) {
      for (Site& s : sites_) {
        if (s.id == id) s.holders[slot] = job;
      }
    }
  }
}

void SiteKeeper::ended(uint64_t job) {
  for (Site& s : sites_) {
    for (auto it = s.holders.begin(); it != s.holders.end();) {
      if (it->second != job) {
        ++it;
        continue;
      }
      // The job emptied its slot as it ended, unless it ended by a signal or a crash.
      uint32_t slot = it->first;
      bpf_map_delete_elem(s.slots_fd, &slot);
      it = s.holders.erase(it);
    }
  }
}

void SiteKeeper::closeUnheld() {
  auto unheld = std::stable_partition(sites_.begin(), sites_.end(), [](const Site& s) { return !s.holders.empty(); });
  for (auto it = unheld; it != sites_.end(); ++it) {
    // A perf event's detach (a uprobe's, 100 ms) need not hold the session's prompt: its
    // slots are empty, so its dispatcher does nothing meanwhile.
    runtime::closeInBackground(it->link_fd);
    close(it->slots_fd);
  }
  sites_.erase(unheld, sites_.end());
}

JobSites::JobSites(std::vector<SiteKeeper::View> view, int channel) : view_(std::move(view)), channel_(channel) {
  for (SiteKeeper::View& v : view_) {
    close(v.link_fd);
    v.link_fd = -1;
  }
}

std::optional<runtime::LiveSites::FreeSlot> JobSites::find(const std::string& place) {
  for (const SiteKeeper::View& v : view_) {
    if (v.place != place) continue;
    auto free = std::find(v.held.begin(), v.held.end(), false);
    if (free != v.held.end()) return FreeSlot{v.slots_fd, static_cast<uint32_t>(free - v.held.begin())};
  }
  return std::nullopt;
}

void JobSites::joining(const std::string& place, uint32_t slot) {
  for (SiteKeeper::View& v : view_) {
    if (v.place != place || slot >= v.held.size() || v.held[slot]) continue;
    v.held[slot] = true;
    send(channel_, fmt::format("J {} {}", v.id, slot));
    return;
  }
}

void JobSites::made(const std::string& place, int link_fd, int slots_fd) {
  send(channel_, "M " + place, {link_fd, slots_fd});
}

}  // namespace kq::repl
