#include "runtime/type_dump.h"

#include <bpf/btf.h>

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "host/btf_file.h"
#include "host/c_declaration.h"
#include "runtime/type_walk.h"

namespace kq::runtime {
namespace {

using Json = nlohmann::ordered_json;

std::string enumeratorName(const host::BtfView* btf, uint32_t id, int64_t value) {
  const ::btf_type* t = btf->type(id);
  if (!t || !btf_is_any_enum(t)) return std::to_string(value);
  bool is64 = btf_is_enum64(t);
  for (uint16_t i = 0; i < btf_vlen(t); ++i) {
    int64_t v = is64 ? static_cast<int64_t>(btf_enum64_value(&btf_enum64(t)[i])) : btf_enum(t)[i].val;
    if (v == value) return btf->name(is64 ? btf_enum64(t)[i].name_off : btf_enum(t)[i].name_off);
  }
  return std::to_string(value);
}

/// A char array's bytes (up to its last non-zero one) as the text between a string's quotes:
/// printable ASCII as is, `\\` for a backslash, other bytes (a NUL inside too) as `\xNN`, as
/// `buf` prints them; `\"` for a quote when `in_quotes`.
std::string charsText(const uint8_t* p, size_t size, bool in_quotes) {
  std::string out;
  for (size_t i = 0; i < size; ++i) {
    unsigned char c = p[i];
    if (c == '\\' || (c == '"' && in_quotes)) {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
  }
  return out;
}

/// An integer of more than 8 bytes, little-endian, in hex.
std::string wideHex(const uint8_t* p, size_t size) {
  std::string out;
  for (size_t i = size; i-- > 0;) {
    if (out.empty() && p[i] == 0 && i > 0) continue;
    out += fmt::format(out.empty() ? "{:x}" : "{:02x}", p[i]);
  }
  return "0x" + out;
}

/// `2240` as `2,240`.
std::string grouped(uint64_t n) {
  std::string digits = std::to_string(n);
  for (size_t at = digits.size(); at > 3; at -= 3) digits.insert(at - 3, ",");
  return digits;
}

/// A leaf's value as a text dump shows it.
std::string leafText(const DumpLeaf& v) {
  switch (v.kind) {
    case LeafKind::Signed: return std::to_string(v.i);
    case LeafKind::Unsigned:
    case LeafKind::Bool: return std::to_string(v.u);
    case LeafKind::Bits:
      return v.typed == LeafKind::Enumerator ? std::string(v.name) : fmt::format("0x{:x}", v.u);
    case LeafKind::Wide: return wideHex(v.bytes, v.size);
    case LeafKind::Float: return fmt::format("{}", v.d);
    case LeafKind::Pointer: return v.u == 0 ? "(nil)" : fmt::format("0x{:x}", v.u);
    case LeafKind::Enumerator: return std::string(v.name);
    case LeafKind::Chars: return "\"" + charsText(v.bytes, v.size, true) + "\"";
  }
  return "";
}

/// A dump as C, ksnoop's (and libbpf's `btf_dump__dump_type_data`'s) layout:
///
///     (struct sk_buff){
///         .len = (unsigned int)228,
///         .cb = (char[48])"\x8e",
///         (union){ ...anonymous members... },
///         .tc_to_txq = (struct netdev_tc_txq[16])[ elements without casts ],
///     }
///
/// Zeroes are left out (see docs/language.md, "Typed dumps"): a zero member, then a struct
/// or union left with nothing in it, and an array every element of which is zero; an array
/// that stays shows every element, zeroes too (their places matter), a struct element that
/// is all zero as `{}`. The dumped value itself always shows.
class TextDump final : public DumpOutput {
 public:
  TextDump(const host::BtfView* btf, TypeDumper::Casts& casts, std::string& out) : btf_(btf), casts_(casts), out_(out) {}

  void open(const DumpMember& m, BlockKind kind) override {
    size_t start = out_.size();
    begin(m);
    out_ += kind == BlockKind::Array ? "[\n" : "{\n";
    frames_.push_back({start, kind == BlockKind::Array, m.element, false});
    if (kind == BlockKind::Array) ++arrays_;
  }

  void close() override {
    Frame f = frames_.back();
    frames_.pop_back();
    if (f.array) --arrays_;
    if (frames_.empty()) {  // the dumped value: always shown, with no comma
      marker(frames_.size() + 1);
      indent();
      out_ += f.array ? "]" : "}";
      return;
    }
    if (!f.shown) {
      out_.resize(f.start);  // its capture's end, if there, goes to its parent
      if (!f.element) return;
      indent();  // an element keeps its place
      out_ += f.array ? "[],\n" : "{},\n";
      return;
    }
    marker(frames_.size() + 1);
    indent();
    out_ += f.array ? "],\n" : "},\n";
    frames_.back().shown = true;
  }

  void leaf(const DumpMember& m, const DumpLeaf& v) override {
    bool in_array = !frames_.empty() && frames_.back().array;
    if (v.zero && !in_array && !frames_.empty()) return;
    begin(m);
    out_ += leafText(v);
    if (frames_.empty()) return;
    out_ += ",\n";
    if (!v.zero) frames_.back().shown = true;
  }

  /// Said in the innermost block still open that shows anything, after what it shows.
  void notCaptured(uint64_t bytes) override { not_captured_ = bytes; }

 private:
  struct Frame {
    size_t start;  // where its text begins, to take back when nothing in it shows
    bool array;
    bool element;
    bool shown;  // something non-zero is in it
  };

  void indent() { indent(frames_.size()); }
  void indent(size_t level) { out_.append(4 * level, ' '); }

  /// The capture's end, at `level`, when it is in the block closing.
  void marker(size_t level) {
    if (!not_captured_) return;
    indent(level);
    out_ += fmt::format("/* {} more bytes not captured */\n", grouped(not_captured_));
    not_captured_ = 0;
  }

  /// `.name = (type)`: no name for an element or an anonymous member, and (libbpf's way)
  /// no casts inside an array.
  void begin(const DumpMember& m) {
    indent();
    if (!m.name.empty()) {
      out_ += '.';
      out_ += m.name;
      out_ += " = ";
    }
    if (arrays_ == 0) {
      out_ += '(';
      out_ += casts_.of(btf_, m.type);
      out_ += ')';
    }
  }

  const host::BtfView* btf_;
  TypeDumper::Casts& casts_;
  std::string& out_;
  std::vector<Frame> frames_;
  int arrays_ = 0;  // arrays open
  uint64_t not_captured_ = 0;
};

/// A dump on one line: the value's own non-zero members (those of its anonymous structs
/// and unions with them), without casts, and of a union only its first member that holds
/// something (the others are the same bytes read another way); a nested struct, union or
/// array that holds something as `{…}` (`[…]`): `(struct sk_buff){.dev = 0xffff888003c5e000,
/// .len = 142, .users = {…}}`. Chosen with `--structs compact`, the text sink's default.
class LineDump final : public DumpOutput {
 public:
  LineDump(const host::BtfView* btf, TypeDumper::Casts& casts, std::string& out) : btf_(btf), casts_(casts), out_(out) {}

  void open(const DumpMember& m, BlockKind kind) override {
    Frame f{kind == BlockKind::Array, kind == BlockKind::Union, false, false, false, false, m.name};
    if (frames_.empty()) {
      out_ += "(" + casts_.of(btf_, m.type) + ")" + (f.array ? "[" : "{");
    } else if (!hidden()) {
      bool anonymous = m.name.empty() && !m.element && !f.array;
      f.skipped = frames_.back().is_union && frames_.back().taken;
      f.collapsed = !f.skipped && !anonymous;
    }
    frames_.push_back(f);
  }

  void close() override {
    Frame f = frames_.back();
    frames_.pop_back();
    if (frames_.empty()) {
      if (not_captured_) item(fmt::format("/* {} more bytes not captured */", grouped(not_captured_)));
      out_ += f.array ? "]" : "}";
      return;
    }
    if (f.skipped || !f.shown || hidden()) return;
    if (f.collapsed) {
      item(f.name.empty() ? std::string(f.array ? "[…]" : "{…}")
                          : fmt::format(".{} = {}", f.name, f.array ? "[…]" : "{…}"));
    }
    shownIn(frames_.back());
  }

  void leaf(const DumpMember& m, const DumpLeaf& v) override {
    if (frames_.empty()) {
      out_ += leafText(v);
      return;
    }
    if (v.zero) return;
    for (auto it = frames_.rbegin(); it != frames_.rend(); ++it) {
      if (it->skipped) return;
      if (it->collapsed) {
        it->shown = true;  // shown as `{…}` when it closes
        return;
      }
    }
    Frame& parent = frames_.back();
    if (parent.is_union && parent.taken) return;
    item(m.name.empty() ? leafText(v) : fmt::format(".{} = {}", m.name, leafText(v)));
    shownIn(parent);
  }

  void notCaptured(uint64_t bytes) override { not_captured_ = bytes; }

 private:
  struct Frame {
    bool array;
    bool is_union;
    bool collapsed;  // a nested named block: `{…}` when something in it is non-zero
    bool skipped;    // a union's member after the one shown
    bool shown;      // something non-zero is in it
    bool taken;      // a union: one of its members is shown
    std::string_view name;
  };

  /// Inside a block shown as `{…}`, or skipped.
  bool hidden() const {
    return std::any_of(frames_.begin(), frames_.end(), [](const Frame& f) { return f.collapsed || f.skipped; });
  }

  static void shownIn(Frame& parent) {
    parent.shown = true;
    if (parent.is_union) parent.taken = true;
  }

  void item(const std::string& text) {
    if (items_++) out_ += ", ";
    out_ += text;
  }

  const host::BtfView* btf_;
  TypeDumper::Casts& casts_;
  std::string& out_;
  std::vector<Frame> frames_;
  size_t items_ = 0;
  uint64_t not_captured_ = 0;
};

/// A dump as JSON: objects for structs and unions (an anonymous member's members lifted into
/// its parent), arrays, every captured member zeroes included; what was not captured is
/// left out.
class JsonDump final : public DumpOutput {
 public:
  void open(const DumpMember& m, BlockKind kind) override {
    Json fresh = kind == BlockKind::Array ? Json::array() : Json::object();
    if (open_.empty()) {
      root_ = std::move(fresh);
      open_.push_back(&root_);
    } else if (m.element) {
      open_.back()->push_back(std::move(fresh));
      open_.push_back(&open_.back()->back());
    } else if (m.name.empty()) {
      open_.push_back(open_.back());  // anonymous: its members are its parent's
    } else {
      Json& slot = (*open_.back())[std::string(m.name)];
      slot = std::move(fresh);
      open_.push_back(&slot);
    }
  }

  void close() override { open_.pop_back(); }

  void leaf(const DumpMember& m, const DumpLeaf& v) override {
    Json value = valueJson(v);
    if (open_.empty()) {
      root_ = std::move(value);
    } else if (m.element) {
      open_.back()->push_back(std::move(value));
    } else {
      (*open_.back())[std::string(m.name)] = std::move(value);
    }
  }

  void notCaptured(uint64_t) override {}

  Json take() { return std::move(root_); }

 private:
  static Json valueJson(const DumpLeaf& v) {
    switch (v.kind) {
      case LeafKind::Signed: return v.i;
      case LeafKind::Unsigned: return v.u;
      case LeafKind::Bits:
        switch (v.typed) {
          case LeafKind::Signed: return v.i;
          case LeafKind::Bool: return v.u != 0;
          case LeafKind::Enumerator: return std::string(v.name);
          default: return v.u;
        }
      case LeafKind::Bool: return v.u != 0;
      case LeafKind::Wide: return wideHex(v.bytes, v.size);
      case LeafKind::Float: return v.d;
      case LeafKind::Pointer: return fmt::format("0x{:x}", v.u);
      case LeafKind::Enumerator: return std::string(v.name);
      case LeafKind::Chars: return charsText(v.bytes, v.size, false);
    }
    return nullptr;
  }

  Json root_;
  std::vector<Json*> open_;  // where the members of each open block go
};

/// A Record field's bytes as `Dump` writes them (TextDump, LineDump), or why they cannot be.
template <class Dump>
std::string dumpRecord(KernelType type, TypeDumper::Casts& casts, const plan::FieldLayout& f,
                       const uint8_t* bytes) {
  if (!type) return f.type_name.empty() ? "(no BTF to show it with)"
                                        : fmt::format("(no type `{}` in this kernel)", f.type_name);
  if (type.btf->resolveSize(type.id) <= 0) return "(unknown size)";
  std::string out;
  Dump dump(type.btf, casts, out);
  walkValue(type.btf, type.id, bytes, f.size, dump);
  return out;
}

}  // namespace

const std::string& TypeDumper::Casts::of(const host::BtfView* btf, uint32_t id) {
  std::string& cast = names_[btf][id];
  if (cast.empty()) cast = host::cDeclaration(btf, id, "", host::DeclarationStyle::Cast);
  return cast;
}

TypeDumper::TypeDumper(KernelTypes* types) : types_(types) {}

void TypeDumper::prepare(const plan::ProgramLayout& layout) {
  for (const plan::ProbeLayout& probe : layout.probes) {
    for (const plan::FieldLayout& f : probe.fields) typeOf(f);
  }
  for (const plan::AggregateLayout& aggregate : layout.aggregates) {
    for (const plan::FieldLayout& f : aggregate.keys) typeOf(f);
  }
}

KernelType TypeDumper::typeOf(const plan::FieldLayout& f) {
  if (f.kind != plan::FieldKind::Enum && f.kind != plan::FieldKind::Record) return {};
  if (auto it = fields_.find(&f); it != fields_.end()) return it->second;
  KernelType type;
  if (types_) {
    type = types_->find(f.type_name);
    // Anonymous types (`struct (anon)`) have no name to find; their id is all there is.
    if (!type) type = types_->byVmlinuxId(f.btf_id);
  }
  return fields_[&f] = type;
}

std::string TypeDumper::enumText(const plan::FieldLayout& f, int64_t value) {
  KernelType type = typeOf(f);
  return type ? enumeratorName(type.btf, type.id, value) : std::to_string(value);
}

std::string TypeDumper::recordText(const plan::FieldLayout& f, const uint8_t* bytes) {
  return dumpRecord<TextDump>(typeOf(f), casts_, f, bytes);
}

std::string TypeDumper::recordLine(const plan::FieldLayout& f, const uint8_t* bytes) {
  return dumpRecord<LineDump>(typeOf(f), casts_, f, bytes);
}

nlohmann::ordered_json TypeDumper::recordJson(const plan::FieldLayout& f, const uint8_t* bytes) {
  KernelType type = typeOf(f);
  if (!type) return nullptr;
  JsonDump json;
  walkValue(type.btf, type.id, bytes, f.size, json);
  return json.take();
}

}  // namespace kq::runtime
