// Packets: byte-order functions, for the network headers the `net` stdlib module reads, and
// `pcap("FILTER")`, whether a packet matches a filter as tcpdump writes them.
#include <fmt/format.h>

#include "compiler/sema/builtins/builtins.h"

namespace kq::sema {
namespace {

template <uint32_t Bytes>
const Type* checkSwap(BuiltinCall& c) {
  if (!(c.args[0]->isInteger() || c.args[0]->isError())) return c.badArgument(0, "an integer");
  return c.types.integer(Bytes, false);
}

bool isSkb(const Type* t) {
  return t->isRecordPointer() && t->element->kind == TypeKind::Struct &&
         t->element->btf.resolved().name() == "sk_buff";
}

/// The probe argument `pcap("...")` filters: its one `struct sk_buff *`; null after
/// reporting that there is none, or more than one.
const ProbeArg* packetArgument(BuiltinCall& c) {
  std::vector<const ProbeArg*> skbs;
  if (c.target) {
    for (const ProbeArg& arg : c.target->args) {
      if (isSkb(arg.type)) skbs.push_back(&arg);
    }
  }
  if (skbs.size() == 1) return skbs[0];
  auto name = [](const ProbeArg& a) {
    return a.name.empty() ? fmt::format("arg{}", a.index) : a.name;
  };
  if (skbs.empty()) {
    std::string where = c.target ? c.target->description : "a declaration";
    c.diags.report(DiagKind::NotAvailableHere, c.call.range,
                   fmt::format("`pcap` filters a packet, and {} has no argument of type "
                               "`struct sk_buff *`", where.empty() ? "this function" : where))
        .note("name the packet: `pcap(skb, \"udp port 53\")`");
    return nullptr;
  }
  std::string forms;
  for (const ProbeArg* arg : skbs) {
    forms += fmt::format("{}`pcap({}, ...)`", forms.empty() ? "" : " or ", name(*arg));
  }
  c.diags.report(DiagKind::AmbiguousProperty, c.call.range,
                 fmt::format("`pcap` is ambiguous: {} has {} arguments of type `struct sk_buff *`",
                             c.target->description, skbs.size()))
      .note(fmt::format("name the packet: {}", forms));
  return nullptr;
}

/// `pcap("FILTER")` or `pcap(skb, "FILTER")`: the filter compiled by libpcap now, so that
/// a filter it refuses is an error at the string, with its message.
const Type* checkPcap(BuiltinCall& c) {
  size_t text_at = c.args.size() - 1;
  std::optional<uint32_t> skb_arg;
  if (c.args.size() == 2) {
    if (!c.args[0]->isError() && !isSkb(c.args[0])) return c.badArgument(0, "a `struct sk_buff *`");
  }
  if (!c.args[text_at]->isError() && c.args[text_at]->kind != TypeKind::String) {
    return c.badArgument(text_at, "a pcap filter");
  }
  const ast::StringLiteral* text =
      c.literalString(text_at, "the filter", "pcap(\"udp and dst port 53\")");
  if (!text) return c.types.error();
  if (c.args.size() == 1) {
    const ProbeArg* skb = packetArgument(c);
    if (!skb) return c.types.error();
    skb_arg = skb->index;
  }
  Result<PacketFilter> filter = compilePacketFilter(text->value);
  if (!filter) {
    c.diags.report(DiagKind::BadPcapFilter, text->range,
                   fmt::format("libpcap cannot compile this filter: {}", filter.error().message))
        .note("filters are written as for tcpdump: `udp and dst port 53`, `tcp[tcpflags] & "
              "tcp-syn != 0`, `host 10.0.0.1`");
    return c.types.error();
  }
  filter->skb_arg = skb_arg;
  // The members the packet is read through: found now, so a kernel without one is an error
  // at the call (`kq check` says so), not at compile time.
  std::optional<btf::BtfType> sk_buff = c.btf.findStruct("sk_buff");
  for (const char* name : PacketFilter::kMembers) {
    std::optional<btf::MemberSteps> member = sk_buff ? btf::findMemberSteps(*sk_buff, name) : std::nullopt;
    uint64_t size = member ? member->type.size() : 0;
    if (!member || size == 0 || size > 8) {
      c.diags.report(DiagKind::NotAvailableHere, c.call.range,
                     fmt::format("`pcap` reads the packet through `struct sk_buff`'s `{}`, and this "
                                 "kernel's BTF {}",
                                 name, !sk_buff  ? "has no `struct sk_buff`"
                                       : !member ? "has no such member"
                                                 : "makes it no integer or pointer"))
          .note("`pcap` reads head, data, len, tail, mac_header and network_header");
      return c.types.error();
    }
    filter->members.push_back(std::move(*member));
  }
  c.packet_filter = std::make_shared<const PacketFilter>(filter.take());
  return c.types.boolType();
}

}  // namespace

void addNetFunctions(std::vector<BuiltinFunction>& out) {
  out.insert(out.end(), {
      {"ntohs", BuiltinFn::Ntohs, 1, 1, checkSwap<2>, "ntohs(x)", "16 bits from network order"},
      {"htons", BuiltinFn::Htons, 1, 1, checkSwap<2>, "htons(x)", "16 bits to network order"},
      {"ntohl", BuiltinFn::Ntohl, 1, 1, checkSwap<4>, "ntohl(x)", "32 bits from network order"},
      {"htonl", BuiltinFn::Htonl, 1, 1, checkSwap<4>, "htonl(x)", "32 bits to network order"},
      {"pcap", BuiltinFn::Pcap, 1, 2, checkPcap, "pcap([skb, ]\"filter\")",
       "whether the packet matches a pcap filter (tcpdump's syntax)"},
  });
}

}  // namespace kq::sema
