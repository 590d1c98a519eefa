#include "runtime/live_sites.h"

#include <bpf/bpf.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>

#include <fmt/format.h>

#include "plan/live_site.h"

namespace kq::runtime {

std::string livePlace(const plan::PlannedProgram& p) {
  std::string place = fmt::format("{} {} {}", plan::attachName(p.attach), p.target, p.binary);
  if (p.uprobe_offset) place += fmt::format(" +0x{:x}", p.uprobe_offset);
  return place;
}

uint32_t mapId(int fd) {
  bpf_map_info info{};
  uint32_t size = sizeof info;
  return bpf_obj_get_info_by_fd(fd, &info, &size) == 0 ? info.id : 0;
}

LocalSites::~LocalSites() {
  for (Site& s : sites_) {
    close(s.link_fd);
    close(s.slots_fd);
  }
}

std::optional<LiveSites::FreeSlot> LocalSites::find(const std::string& place) {
  std::lock_guard<std::mutex> hold(mutex_);
  for (const Site& s : sites_) {
    if (s.place != place) continue;
    auto free = std::find(s.held.begin(), s.held.end(), false);
    if (free != s.held.end()) return FreeSlot{s.slots_fd, static_cast<uint32_t>(free - s.held.begin())};
  }
  return std::nullopt;
}

void LocalSites::joining(const std::string& place, uint32_t slot) {
  std::lock_guard<std::mutex> hold(mutex_);
  for (Site& s : sites_) {
    if (s.place != place || slot >= s.held.size() || s.held[slot]) continue;
    s.held[slot] = true;
    return;
  }
}

void LocalSites::made(const std::string& place, int link_fd, int slots_fd) {
  Site site{place, fcntl(link_fd, F_DUPFD_CLOEXEC, 0), fcntl(slots_fd, F_DUPFD_CLOEXEC, 0), mapId(slots_fd),
            std::vector<bool>(plan::kLiveSlots, false)};
  if (site.link_fd < 0 || site.slots_fd < 0) {
    // Not kept: the site goes with the object that made it, as a site of its own.
    if (site.link_fd >= 0) close(site.link_fd);
    if (site.slots_fd >= 0) close(site.slots_fd);
    return;
  }
  site.held[0] = true;
  std::lock_guard<std::mutex> hold(mutex_);
  sites_.push_back(std::move(site));
}

void LocalSites::leaving(int slots_fd, uint32_t slot) {
  uint32_t id = mapId(slots_fd);
  std::lock_guard<std::mutex> hold(mutex_);
  for (auto it = sites_.begin(); it != sites_.end(); ++it) {
    if (it->map_id != id || slot >= it->held.size()) continue;
    it->held[slot] = false;
    if (std::find(it->held.begin(), it->held.end(), true) == it->held.end()) {
      close(it->link_fd);  // the last slot left: detached
      close(it->slots_fd);
      sites_.erase(it);
    }
    return;
  }
}

size_t LocalSites::sites() const {
  std::lock_guard<std::mutex> hold(mutex_);
  return sites_.size();
}

}  // namespace kq::runtime
