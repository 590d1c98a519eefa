#include "host/btf_file.h"

#include <bpf/btf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace kq::host {
namespace {

constexpr uint16_t kMagic = 0xeB9F;
constexpr int kMaxResolveDepth = 32;  // libbpf's: a longer chain is a loop
constexpr uint32_t kPointerSize = 8;

const ::btf_type kVoid{};

/// Bytes after a type's common part, by its kind and vlen; -1 for a kind kq does not know.
int64_t trailingBytes(const ::btf_type* t) {
  uint64_t vlen = btf_vlen(t);
  switch (btf_kind(t)) {
    case BTF_KIND_INT: return sizeof(uint32_t);
    case BTF_KIND_ARRAY: return sizeof(struct btf_array);
    case BTF_KIND_STRUCT:
    case BTF_KIND_UNION: return static_cast<int64_t>(vlen * sizeof(struct btf_member));
    case BTF_KIND_ENUM: return static_cast<int64_t>(vlen * sizeof(struct btf_enum));
    case BTF_KIND_ENUM64: return static_cast<int64_t>(vlen * sizeof(struct btf_enum64));
    case BTF_KIND_FUNC_PROTO: return static_cast<int64_t>(vlen * sizeof(struct btf_param));
    case BTF_KIND_VAR: return sizeof(struct btf_var);
    case BTF_KIND_DATASEC: return static_cast<int64_t>(vlen * sizeof(struct btf_var_secinfo));
    case BTF_KIND_DECL_TAG: return sizeof(struct btf_decl_tag);
    case BTF_KIND_UNKN:
    case BTF_KIND_PTR:
    case BTF_KIND_FWD:
    case BTF_KIND_TYPEDEF:
    case BTF_KIND_VOLATILE:
    case BTF_KIND_CONST:
    case BTF_KIND_RESTRICT:
    case BTF_KIND_FUNC:
    case BTF_KIND_FLOAT:
    case BTF_KIND_TYPE_TAG: return 0;
    default: return -1;
  }
}

/// libbpf's btf_type_is_void_or_null: a forward declaration resolves to nothing either.
bool isVoidOrNull(const ::btf_type* t) { return !t || btf_kind(t) == BTF_KIND_UNKN || btf_kind(t) == BTF_KIND_FWD; }

std::string errnoText(int err) { return std::strerror(err); }

}  // namespace

Result<std::unique_ptr<BtfView>> BtfView::readFile(const std::string& path, const BtfView* base) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Error{fmt::format("cannot open {}: {}", path, errnoText(errno))};
  std::unique_ptr<BtfView> view(new BtfView());
  view->base_ = base;
  struct stat st;
  if (fstat(fd, &st) == 0 && st.st_size > 0) {
    void* mapped = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (mapped != MAP_FAILED) {
      view->mapping_ = mapped;
      view->data_ = static_cast<const uint8_t*>(mapped);
      view->size_ = static_cast<size_t>(st.st_size);
    }
  }
  if (!view->mapping_) {
    // Kernels before 6.16 cannot map sysfs BTF (and a module's is small): read it.
    std::string bytes;
    char buffer[65536];
    for (;;) {
      ssize_t n = ::read(fd, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        int err = errno;
        close(fd);
        return Error{fmt::format("cannot read {}: {}", path, errnoText(err))};
      }
      if (n == 0) break;
      bytes.append(buffer, static_cast<size_t>(n));
    }
    view->owned_ = std::move(bytes);
    view->data_ = reinterpret_cast<const uint8_t*>(view->owned_.data());
    view->size_ = view->owned_.size();
  }
  close(fd);
  if (std::string problem = view->parse(); !problem.empty()) {
    return Error{fmt::format("{} is not BTF kq can read: {}", path, problem)};
  }
  return view;
}

Result<std::unique_ptr<BtfView>> BtfView::copyOf(std::string_view bytes, const BtfView* base) {
  std::unique_ptr<BtfView> view(new BtfView());
  view->base_ = base;
  view->owned_.assign(bytes);
  view->data_ = reinterpret_cast<const uint8_t*>(view->owned_.data());
  view->size_ = view->owned_.size();
  if (std::string problem = view->parse(); !problem.empty()) return Error{problem};
  return view;
}

Result<std::unique_ptr<BtfView>> BtfView::copyOf(const ::btf* btf, const BtfView* base) {
  uint32_t size = 0;
  const void* raw = btf__raw_data(btf, &size);
  if (!raw) return Error{fmt::format("libbpf cannot give its BTF's bytes: {}", errnoText(errno))};
  return copyOf(std::string_view(static_cast<const char*>(raw), size), base);
}

std::unique_ptr<BtfView> BtfView::empty() {
  btf_header header{};
  header.magic = kMagic;
  header.version = 1;
  header.hdr_len = sizeof header;
  header.str_len = 1;
  std::string bytes(reinterpret_cast<const char*>(&header), sizeof header);
  bytes.push_back('\0');
  return copyOf(bytes).take();
}

size_t BtfView::recordSize(const ::btf_type* t) {
  int64_t extra = trailingBytes(t);
  return extra < 0 ? 0 : sizeof(::btf_type) + static_cast<size_t>(extra);
}

BtfView::~BtfView() {
  if (mapping_) munmap(mapping_, size_);
}

std::string BtfView::parse() {
  if (size_ < sizeof(btf_header)) return "it is shorter than a BTF header";
  btf_header header;
  std::memcpy(&header, data_, sizeof header);
  if (header.magic != kMagic) {
    return header.magic == __builtin_bswap16(kMagic) ? "its bytes are in the other byte order"
                                                     : "it does not start with BTF's magic number";
  }
  if (header.hdr_len < sizeof header || header.hdr_len > size_) return "its header's length is wrong";
  uint64_t body = size_ - header.hdr_len;
  if (uint64_t{header.type_off} + header.type_len > body || uint64_t{header.str_off} + header.str_len > body) {
    return "its sections run past its end";
  }
  if ((uint64_t{header.hdr_len} + header.type_off) % 4 != 0) return "its type section is not aligned";
  types_ = data_ + header.hdr_len + header.type_off;
  strings_ = reinterpret_cast<const char*>(data_ + header.hdr_len + header.str_off);
  strings_size_ = header.str_len;
  if (base_) {
    start_id_ = base_->typeCount();
    start_str_off_ = base_->start_str_off_ + base_->strings_size_;
  } else if (strings_size_ == 0 || strings_[0] != '\0') {
    return "its strings do not start with an empty one";
  }
  if (strings_size_ > 0 && strings_[strings_size_ - 1] != '\0') return "its last string is not terminated";
  // vmlinux has about 24 bytes a type: reserve once rather than grow twenty times.
  offsets_.reserve(header.type_len / 20);
  uint32_t at = 0;
  while (at < header.type_len) {
    if (header.type_len - at < sizeof(::btf_type)) return fmt::format("its type {} is cut short", typeCount());
    const auto* t = reinterpret_cast<const ::btf_type*>(types_ + at);
    int64_t extra = trailingBytes(t);
    if (extra < 0) return fmt::format("its type {} is of kind {}, which kq does not know", typeCount(), btf_kind(t));
    uint64_t next = uint64_t{at} + sizeof(::btf_type) + static_cast<uint64_t>(extra);
    if (next > header.type_len) return fmt::format("its type {} runs past the type section", typeCount());
    offsets_.push_back(at);
    at = static_cast<uint32_t>(next);
  }
  return "";
}

const ::btf_type* BtfView::type(uint32_t id) const {
  if (id == 0) return &kVoid;
  if (id < start_id_) return base_ ? base_->type(id) : nullptr;
  uint32_t index = id - start_id_;
  if (index >= offsets_.size()) return nullptr;
  return reinterpret_cast<const ::btf_type*>(types_ + offsets_[index]);
}

const char* BtfView::name(uint32_t offset) const {
  if (offset < start_str_off_) return base_ ? base_->name(offset) : "";
  uint32_t own = offset - start_str_off_;
  return own < strings_size_ ? strings_ + own : "";
}

bool BtfView::hasString(uint32_t offset) const {
  if (offset < start_str_off_) return base_ && base_->hasString(offset);
  return offset - start_str_off_ < strings_size_;
}

int64_t BtfView::resolveSize(uint32_t id) const {
  uint32_t elements = 1;
  const ::btf_type* t = type(id);
  for (int depth = 0; depth < kMaxResolveDepth && !isVoidOrNull(t); ++depth) {
    switch (btf_kind(t)) {
      case BTF_KIND_INT:
      case BTF_KIND_STRUCT:
      case BTF_KIND_UNION:
      case BTF_KIND_ENUM:
      case BTF_KIND_ENUM64:
      case BTF_KIND_DATASEC:
      case BTF_KIND_FLOAT:
        if (elements && t->size > UINT32_MAX / elements) return -E2BIG;
        return int64_t{elements} * t->size;
      case BTF_KIND_PTR:
        if (elements && kPointerSize > UINT32_MAX / elements) return -E2BIG;
        return int64_t{elements} * kPointerSize;
      case BTF_KIND_TYPEDEF:
      case BTF_KIND_VOLATILE:
      case BTF_KIND_CONST:
      case BTF_KIND_RESTRICT:
      case BTF_KIND_VAR:
      case BTF_KIND_DECL_TAG:
      case BTF_KIND_TYPE_TAG: id = t->type; break;
      case BTF_KIND_ARRAY: {
        const struct btf_array* array = btf_array(t);
        if (elements && array->nelems > UINT32_MAX / elements) return -E2BIG;
        elements *= array->nelems;
        id = array->type;
        break;
      }
      default: return -EINVAL;
    }
    t = type(id);
  }
  return -EINVAL;
}

int32_t BtfView::resolveType(uint32_t id) const {
  const ::btf_type* t = type(id);
  int depth = 0;
  while (depth < kMaxResolveDepth && !isVoidOrNull(t) && (btf_is_mod(t) || btf_is_typedef(t) || btf_is_var(t))) {
    id = t->type;
    t = type(id);
    ++depth;
  }
  if (depth == kMaxResolveDepth || isVoidOrNull(t)) return -EINVAL;
  return static_cast<int32_t>(id);
}

int32_t BtfView::findByNameKind(std::string_view wanted, uint32_t kind) const {
  if (kind == BTF_KIND_UNKN && wanted == "void") return 0;
  uint32_t count = typeCount();
  for (uint32_t id = 1; id < count; ++id) {
    const ::btf_type* t = type(id);
    if (btf_kind(t) == kind && name(t->name_off) == wanted) return static_cast<int32_t>(id);
  }
  return -ENOENT;
}

}  // namespace kq::host
