// Wrong values found at d824265 in what the engine prints, each pinned by bytes that show it.
#include <bpf/btf.h>

#include <cstring>
#include <map>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "host/btf_file.h"
#include "engine/decoder.h"
#include "engine/sinks.h"
#include "engine/table.h"
#include "runtime/kernel_types.h"
#include "runtime/type_dump.h"

namespace kq::engine {
namespace {

using plan::FieldKind;
using plan::FieldLayout;

/// Every kernel address in one function: different return addresses, one printed stack.
struct OneFunction : Symbolizer, FileReader {
  std::string kernel(uint64_t a) override { return "tcp_sendmsg"; }
  std::string user(uint32_t, uint64_t a) override { return "main"; }
  std::string text(const std::string&) override { return ""; }
};

/// An aggregate map in memory.
struct MemoryTable : TableSource {
  size_t key_size, value_size;
  std::map<std::vector<uint8_t>, std::vector<uint8_t>> entries;
  MemoryTable(size_t k, size_t v) : key_size(k), value_size(v) {}
  bool nextKey(const void* key, void* next) override {
    auto it = key ? entries.upper_bound(bytes(key, key_size)) : entries.begin();
    if (it == entries.end()) return false;
    std::memcpy(next, it->first.data(), key_size);
    return true;
  }
  bool lookup(const void* key, void* value) override {
    auto it = entries.find(bytes(key, key_size));
    if (it == entries.end()) return false;
    std::memcpy(value, it->second.data(), value_size);
    return true;
  }
  void remove(const void* key) override { entries.erase(bytes(key, key_size)); }
  void update(const void* key, const void* value) override {
    entries[bytes(key, key_size)] = bytes(value, value_size);
  }
  int cpus() const override { return 1; }
  static std::vector<uint8_t> bytes(const void* p, size_t n) {
    auto* b = static_cast<const uint8_t*>(p);
    return std::vector<uint8_t>(b, b + n);
  }
  void put(std::vector<uint64_t> key, std::vector<uint64_t> value) {
    entries[bytes(key.data(), key_size)] = bytes(value.data(), value_size);
  }
};

plan::AggregateLayout countBy(FieldLayout key) {
  plan::AggregateLayout a;
  a.map = "agg";
  a.key_size = key.size;
  a.value_size = 8;
  a.keys = {key};
  plan::AggregateSlot count;
  count.name = "count()";
  a.slots = {count};
  a.columns = {{true, 0}, {false, 0}};
  return a;
}

std::string tableText(const plan::ProgramPlan& plan, const Table& table, Symbolizer& symbols,
                      FileReader& files, OutputFormat format) {
  runtime::TypeDumper types(nullptr);
  PrintContext context{symbols, types, files, 0};
  std::ostringstream out, err;
  makeSink(format, plan, context, out, err)->onTable(table);
  return out.str();
}

/// The JSON of `plan`'s first table, read from `map`.
nlohmann::json tableJson(const plan::ProgramPlan& plan, MemoryTable& map) {
  OneFunction host;
  runtime::TypeDumper types(nullptr);
  PrintContext context{host, types, host, 0};
  RecordDecoder decoder(plan.layout, context);
  Table table = readTable(map, plan.layout.aggregates[0], TableRead::Snapshot, decoder, 0, 0);
  return nlohmann::json::parse(tableText(plan, table, host, host, OutputFormat::Json));
}

// `group by kstack`: two stack ids (two return addresses in one function) printed the same
// text in two rows at d824265; rows whose key prints alike are one.
TEST(EngineDefects, StacksThatPrintAlikeAreOneRow) {
  FieldLayout stack{"kstack", FieldKind::KernelStack, 0, 16};
  plan::ProgramPlan plan;
  plan.layout.aggregates = {countBy(stack)};
  MemoryTable map(16, 8);
  map.put({0xffffffff81000010, 0}, {3});
  map.put({0xffffffff81000020, 0}, {4});
  OneFunction host;
  runtime::TypeDumper types(nullptr);
  PrintContext context{host, types, host, 0};
  RecordDecoder decoder(plan.layout, context);
  Table table = readTable(map, plan.layout.aggregates[0], TableRead::Snapshot, decoder, 0, 0);
  ASSERT_EQ(table.rows.size(), 1u);
  EXPECT_EQ(*table.rows[0].slots[0].scalar, 7);
  EXPECT_EQ(tableText(plan, table, host, host, OutputFormat::Text),
            "kstack       count()\ntcp_sendmsg        7\n\n");
}

// `group by str(filename)`: two paths longer than the key's bytes were one row, and nothing
// said so; a cut key is said beneath its table.
TEST(EngineDefects, ACutStringKeyIsSaid) {
  FieldLayout path{"str(filename)", FieldKind::String, 0, 24};
  plan::ProgramPlan plan;
  plan.layout.aggregates = {countBy(path)};
  MemoryTable map(24, 8);
  auto key = [](std::string text) {
    text.resize(24, '\0');
    return std::vector<uint8_t>(text.begin(), text.end());
  };
  map.entries[key("/usr/lib/x86_64-linux-gn")] = {2, 0, 0, 0, 0, 0, 0, 0};  // 24 bytes, no NUL: it went on
  map.entries[key("/etc")] = {1, 0, 0, 0, 0, 0, 0, 0};
  OneFunction host;
  runtime::TypeDumper types(nullptr);
  PrintContext context{host, types, host, 0};
  RecordDecoder decoder(plan.layout, context);
  Table table = readTable(map, plan.layout.aggregates[0], TableRead::Snapshot, decoder, 0, 0);
  EXPECT_EQ(table.cut_keys, 1u);
  EXPECT_EQ(tableText(plan, table, host, host, OutputFormat::Text),
            "str(filename)              count()\n"
            "/usr/lib/x86_64-linux-gn…        2\n"
            "/etc                             1\n"
            "(1 key was cut at 24 bytes, marked …: groups differing past that are counted as one; "
            "str(x, n) keeps more)\n\n");
}

// A bool group key was the string "true" in JSON.
TEST(EngineDefects, ABoolKeyIsABoolInJson) {
  FieldLayout flag{"flag", FieldKind::Bool, 0, 8};
  plan::ProgramPlan plan;
  plan.layout.aggregates = {countBy(flag)};
  MemoryTable map(8, 8);
  map.put({1}, {2});
  auto json = tableJson(plan, map);
  EXPECT_EQ(json["rows"][0]["flag"], true);
}

// `group by comm select count() as comm`: a JSON row had one key `comm`, and the group's
// name was gone; a column named like an earlier one is `comm_2`, as an event's field is.
TEST(EngineDefects, ATableColumnNamedLikeAnotherKeepsItsOwnJsonKey) {
  FieldLayout comm{"comm", FieldKind::String, 0, 16};
  plan::ProgramPlan plan;
  plan.layout.aggregates = {countBy(comm)};
  plan.layout.aggregates[0].slots[0].name = "comm";
  MemoryTable map(16, 8);
  std::string text = "curl";
  text.resize(16, '\0');
  map.entries[std::vector<uint8_t>(text.begin(), text.end())] = {3, 0, 0, 0, 0, 0, 0, 0};
  auto json = tableJson(plan, map);
  EXPECT_EQ(json["rows"][0]["comm"], "curl");
  EXPECT_EQ(json["rows"][0]["comm_2"], 3);
}

// `fmt("%15s:%d", ntop(...), port)` with an IPv6 address bracketed the padding
// (`[           ::1]:1`); the width pads the bracketed address.
TEST(EngineDefects, AWidthPadsTheBracketedIpv6Address) {
  FieldLayout addr{"addr", FieldKind::IpAddress, 40, plan::kIpAddressBytes};
  addr.hidden = true;
  FieldLayout port{"port", FieldKind::Unsigned, 64, 8};
  port.hidden = true;
  FieldLayout text{"flow", FieldKind::Format, 0, 0};
  text.format = "%15s:%d";
  text.args = {0, 1};
  plan::ProbeLayout probe;
  probe.name = "p";
  probe.size = 72;
  probe.fields = {addr, port, text};
  plan::ProgramLayout layout;
  layout.probes = {probe};
  std::vector<uint8_t> record(72, 0);
  uint64_t family = 10;  // AF_INET6
  std::memcpy(record.data() + 40, &family, 8);
  record[40 + 8 + 15] = 1;  // ::1
  uint64_t one = 1;
  std::memcpy(record.data() + 64, &one, 8);
  OneFunction host;
  runtime::TypeDumper types(nullptr);
  PrintContext context{host, types, host, 0};
  RecordDecoder decoder(layout, context);
  const DecodedEvent* e = decoder.decode(record.data(), record.size());
  ASSERT_TRUE(e);
  EXPECT_EQ(e->values[2].text, "          [::1]:1");
}

// Char arrays in JSON dumps were number lists (`"name":[108,111,0,...]`): the kernel's BTF
// names `char` without the CHAR encoding.
TEST(EngineDefects, ACharArrayIsAStringInJsonDumps) {
  ::btf* btf = btf__new_empty();
  int c = btf__add_int(btf, "char", 1, BTF_INT_SIGNED);
  int u8 = btf__add_int(btf, "unsigned char", 1, 0);
  int u32 = btf__add_int(btf, "unsigned int", 4, 0);
  int name = btf__add_array(btf, u32, c, 4);
  int mac = btf__add_array(btf, u32, u8, 2);
  int dev = btf__add_struct(btf, "dev", 6);
  btf__add_field(btf, "name", name, 0, 0);
  btf__add_field(btf, "mac", mac, 32, 0);
  auto view = host::BtfView::copyOf(btf);
  btf__free(btf);
  ASSERT_TRUE(view) << view.error().message;
  runtime::KernelTypes kernel_types("/nonexistent", view->get());
  runtime::TypeDumper types(&kernel_types);
  FieldLayout f{"d", FieldKind::Record, 0, 6};
  f.btf_id = static_cast<uint32_t>(dev);
  f.type_name = "struct dev";
  const uint8_t bytes[6] = {'l', 'o', 0, 0, 0xaa, 0xbb};
  nlohmann::ordered_json j = types.recordJson(f, bytes);
  EXPECT_EQ(j["name"], "lo");
  EXPECT_EQ(j["mac"], nlohmann::ordered_json::array({0xaa, 0xbb}));
}

}  // namespace
}  // namespace kq::engine
