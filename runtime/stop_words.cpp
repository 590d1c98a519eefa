#include "runtime/stop_words.h"

#include <bpf/bpf.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <utility>
#include <vector>

namespace kq::runtime {

StopWords::StopWords(int fd, uint32_t queries) : fd_(fd), queries_(queries) {
  if (fd_ < 0) return;
  bpf_map_info info{};
  uint32_t len = sizeof(info);
  if (bpf_obj_get_info_by_fd(fd_, &info, &len) != 0 || info.max_entries != 1) return;
  if (info.map_flags & BPF_F_MMAPABLE) {
    size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    size_t bytes = (info.value_size + page - 1) / page * page;
    void* at = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    if (at != MAP_FAILED) {
      mapped_ = static_cast<uint32_t*>(at);
      mapped_bytes_ = bytes;
      words_ = info.value_size / 4;
      queries_ = std::min<uint32_t>(queries_, words_);
      return;
    }
  }
  value_size_ = info.value_size;
}

StopWords::~StopWords() { release(); }

StopWords::StopWords(StopWords&& other) noexcept { *this = std::move(other); }

StopWords& StopWords::operator=(StopWords&& other) noexcept {
  if (this != &other) {
    release();
    fd_ = std::exchange(other.fd_, -1);
    queries_ = std::exchange(other.queries_, 0);
    mapped_ = std::exchange(other.mapped_, nullptr);
    mapped_bytes_ = std::exchange(other.mapped_bytes_, 0);
    words_ = std::exchange(other.words_, 0);
    session_ended_ = std::exchange(other.session_ended_, false);
    value_size_ = std::exchange(other.value_size_, 0);
  }
  return *this;
}

void StopWords::release() {
  if (mapped_) munmap(mapped_, mapped_bytes_);
  mapped_ = nullptr;
}

void StopWords::set(uint32_t query) const {
  // Once the session's word is set, no query's is: an event that read the session's word
  // before it was set runs all its parts, as they were (programs test it once, at their
  // start), rather than some of them.
  if (fd_ < 0 || query >= queries_ || session_ended_) return;
  if (mapped_) {
    __atomic_store_n(&mapped_[query], 1u, __ATOMIC_SEQ_CST);
  } else if (value_size_) {
    // One element, not mapped: the element read, the word set, the element written.
    std::vector<uint32_t> words((value_size_ + 3) / 4);
    uint32_t zero = 0;
    if (bpf_map_lookup_elem(fd_, &zero, words.data()) != 0 || query >= value_size_ / 4) return;
    words[query] = 1;
    bpf_map_update_elem(fd_, &zero, words.data(), BPF_ANY);
  } else {
    uint32_t word = 1;
    bpf_map_update_elem(fd_, &query, &word, BPF_ANY);
  }
}

void StopWords::setAll() const {
  if (fd_ < 0) return;
  if (mapped_ && words_ > queries_) {
    // The session's word, after the queries'.
    __atomic_store_n(&mapped_[words_ - 1], 1u, __ATOMIC_SEQ_CST);
    session_ended_ = true;
  } else if (mapped_) {
    // An earlier kq's object: no session word.
    for (uint32_t q = 0; q < queries_; ++q) __atomic_store_n(&mapped_[q], 1u, __ATOMIC_SEQ_CST);
  } else if (value_size_) {
    std::vector<uint32_t> words((value_size_ + 3) / 4, 1);
    uint32_t zero = 0;
    bpf_map_update_elem(fd_, &zero, words.data(), BPF_ANY);
  } else {
    uint32_t word = 1;
    for (uint32_t q = 0; q < queries_; ++q) bpf_map_update_elem(fd_, &q, &word, BPF_ANY);
  }
}

}  // namespace kq::runtime
