// The queries' words in a loaded object's stops map (plan::ProgramPlan::stops_map): a word
// set to 1 ends its query in every program that serves it (plan::PlannedProgram::queries).
//
// kq lays the words out as one element of a mapped array (BPF_F_MMAPABLE), 4 bytes a query
// and then the session's word, which a program looks up once; it tests the session's word
// at its start, then each part its query's (a part that only counts, none); each word is then written where user space maps it, at
// once and without a system call. An object built by an earlier kq has a word per element
// (4-byte values, an entry a query), each written by an update.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kq::runtime {

class StopWords {
 public:
  StopWords() = default;
  /// The words of the array `fd` (-1: none) for `queries` queries; a map of neither layout,
  /// or one that cannot be mapped, has its words written by updates where it can be.
  StopWords(int fd, uint32_t queries);
  ~StopWords();
  StopWords(StopWords&& other) noexcept;
  StopWords& operator=(StopWords&& other) noexcept;
  StopWords(const StopWords&) = delete;
  StopWords& operator=(const StopWords&) = delete;

  /// Ends `query`'s parts.
  void set(uint32_t query) const;
  /// Ends every query's parts: sets the session's word (an earlier kq's object: every
  /// query's), after which `set` sets nothing.
  void setAll() const;
  bool present() const { return fd_ >= 0; }

 private:
  void release();

  int fd_ = -1;
  uint32_t queries_ = 0;
  /// The mapped element (one word a query), or null: a word per element.
  uint32_t* mapped_ = nullptr;
  size_t mapped_bytes_ = 0;
  uint32_t words_ = 0;  // in the mapped element
  mutable bool session_ended_ = false;
  /// The element's size where it is written by update (not mapped), else 0.
  uint32_t value_size_ = 0;
};

}  // namespace kq::runtime
