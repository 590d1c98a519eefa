// `trace packet`: the places a packet can be seen. Every traceable function taking a
// `struct sk_buff *` among its first twelve arguments (a kprobe reads six from registers,
// the rest from the stack at entry), narrowed by the
// query's globs (`packet(ip_*, udp_*)`), then every tracepoint whose BTF handler carries
// one: the set a kernel without kprobes and fentry falls back to.
#include <linux/bpf.h>

#include <algorithm>

#include <bpf/btf.h>

#include <fmt/format.h>

#include "compiler/sema/context.h"
#include "compiler/sema/packet_functions.h"

namespace kq::sema {
namespace {

using host::Known;

/// The arguments a kprobe reads: six in registers, then the stack (x86-64 and arm64 pass
/// eight bytes a slot there). ipftrace2's function_graph reaches __udp4_lib_lookup's skb, its 9th.
constexpr uint32_t kRegisterArgs = 6;
constexpr uint32_t kPacketArgs = 12;

/// Whether argument `position` of `f` is where kq reads it: each argument before it is one
/// slot (a struct passed by value takes several registers, so past one the count is off).
bool slotIsPosition(const btf::Function& f, uint32_t position) {
  if (position < kRegisterArgs) return true;
  for (uint32_t i = 0; i < position && i < f.params.size(); ++i) {
    btf::BtfType t = f.params[i].type.resolved();
    if (t.id == 0) continue;
    bool wide = (btf_is_int(t.get()) || btf_is_float(t.get())) && t.get()->size > 8;
    if (btf_is_composite(t.get()) || wide) return false;
  }
  return true;
}

/// The parameter (from `first`) whose type is `enum skb_drop_reason`.
std::optional<uint32_t> dropReason(const btf::Function& f, uint32_t first) {
  for (uint32_t i = first; i < f.params.size(); ++i) {
    btf::BtfType t = f.params[i].type.resolved();
    if (t.id != 0 && (btf_is_enum(t.get()) || btf_is_enum64(t.get())) && t.name() == "skb_drop_reason") return i - first;
  }
  return std::nullopt;
}

/// The parameter named `name` if it is a `struct sk_buff *`.
std::optional<uint32_t> skbParam(const btf::Function& f, std::string_view name) {
  for (uint32_t i = 0; i < f.params.size(); ++i) {
    if (f.params[i].name != name) continue;
    btf::BtfType t = f.params[i].type.resolved();
    if (t.id == 0 || !btf_is_ptr(t.get())) return std::nullopt;
    btf::BtfType pointee = btf::BtfType{t.file, t.get()->type}.resolved();
    if (pointee.id != 0 && btf_is_struct(pointee.get()) && pointee.name() == "sk_buff") return i;
  }
  return std::nullopt;
}

/// Where `f` makes a copy of an skb with data of its own (`skb_copy_header(new, old)`, which
/// skb_copy, pskb_copy and XDP's copy into a page pool all call): the argument of the skb
/// copied, when `f`'s skb (at `position`) is the copy.
std::optional<uint32_t> copyOf(const btf::Function& f, uint32_t position) {
  std::optional<uint32_t> copy = skbParam(f, "new");
  if (!copy || *copy != position) return std::nullopt;
  std::optional<uint32_t> old = skbParam(f, "old");
  return old && slotIsPosition(f, *old) ? old : std::nullopt;
}

/// The members a journey is kept through, each a pointer or an integer of at most 8 bytes.
std::optional<PacketIdentity> packetIdentity(const btf::Btf& btf, btf::BtfType sk_buff) {
  std::optional<btf::BtfType> shared_info = btf.findStruct("skb_shared_info");
  auto member = [](std::optional<btf::BtfType> record, const char* name) {
    std::optional<btf::MemberSteps> m = record ? btf::findMemberSteps(*record, name) : std::nullopt;
    return m && m->type.size() > 0 && m->type.size() <= 8 ? m : std::nullopt;
  };
  auto cloned = member(sk_buff, "cloned");
  auto head = member(sk_buff, "head");
  auto end = member(sk_buff, "end");
  auto dataref = member(shared_info, "dataref");
  if (!cloned || !head || !end || !dataref) return std::nullopt;
  PacketIdentity out{std::move(*cloned), std::move(*head), std::move(*end), std::move(*dataref), std::nullopt};
  std::optional<btf::MemberSteps> hard_start = member(btf.findStruct("xdp_buff"), "data_hard_start");
  if (hard_start && hard_start->type.size() == 8) out.xdp_hard_start = std::move(hard_start);
  return out;
}

}  // namespace

std::vector<PacketFunction> packetFunctions(const btf::Btf& btf, host::KernelInfo& kernel) {
  std::vector<PacketFunction> out;
  for (auto& [f, position] : btf.functionsTaking("sk_buff", kPacketArgs)) {
    Known listed = kernel.inFilterFunctions(f.name);
    if (listed == Known::No || (listed == Known::Unknown && kernel.inKallsyms(f.name) == Known::No)) continue;
    std::optional<uint32_t> reason = dropReason(f, 0);
    if (!slotIsPosition(f, position) || (reason && !slotIsPosition(f, *reason))) continue;
    out.push_back({std::move(f), position, reason});
  }
  return out;
}

std::vector<host::BpfProgram> packetPrograms(host::KernelInfo& kernel) {
  Result<std::vector<host::BpfProgram>> loaded = kernel.bpfPrograms();
  if (!loaded) return {};
  std::vector<host::BpfProgram> out;
  for (host::BpfProgram& p : *loaded) {
    bool kind = p.type == BPF_PROG_TYPE_XDP || p.type == BPF_PROG_TYPE_SCHED_CLS || p.type == BPF_PROG_TYPE_SCHED_ACT;
    bool context = !p.params.empty() && p.params[0].kind == host::BpfProgramParam::Kind::Context;
    if (kind && p.hasBtf() && context) out.push_back(std::move(p));
  }
  return out;
}

std::optional<NetfilterHookAccess> netfilterChain(const btf::Btf& btf, host::KernelInfo& kernel, std::string& module) {
  std::optional<btf::Function> f = btf.findFunction("nft_do_chain");
  if (!f || kernel.inFilterFunctions(f->name) == Known::No) return std::nullopt;
  // The structs as the module's BTF has them (nft_pktinfo is nf_tables' own).
  std::optional<uint32_t> pkt = btf::parameterPointingTo(*f, "nft_pktinfo", 0, kRegisterArgs);
  if (!pkt) return std::nullopt;
  auto pointee = [](btf::BtfType pointer) { return btf::BtfType{pointer.file, pointer.get()->type}.resolved(); };
  auto member = [](btf::BtfType record, const char* name, uint64_t size) {
    std::optional<btf::MemberSteps> m = btf::findMemberSteps(record, name);
    return m && m->type.size() == size ? m : std::nullopt;
  };
  btf::BtfType info = pointee(f->params[*pkt].type.resolved());
  auto skb = member(info, "skb", 8);
  auto at = member(info, "state", 8);
  if (!skb || !at || !btf_is_ptr(at->type.get())) return std::nullopt;
  btf::BtfType state = pointee(at->type);
  if (state.id == 0 || !btf_is_struct(state.get())) return std::nullopt;
  auto hook = member(state, "hook", 1);
  auto pf = member(state, "pf", 1);
  if (!hook || !pf) return std::nullopt;
  module = f->module.empty() ? "vmlinux" : f->module;
  return NetfilterHookAccess{*pkt, static_cast<uint32_t>(f->params.size()), std::move(*skb), std::move(*at),
                             std::move(*hook), std::move(*pf)};
}

std::optional<ResolvedTarget> resolvePacket(Context& ctx, const ast::Target& target,
                                            const ast::PacketTarget& packet) {
  ResolvedTarget out;
  auto skb = ctx.btf.findStruct("sk_buff");
  if (!skb) {
    ctx.diags.report(DiagKind::UnknownType, target.range, "the kernel's BTF has no `struct sk_buff`");
    return std::nullopt;
  }
  std::vector<bool> glob_used(packet.functions.size(), false);
  auto use = [&](std::string_view name) {
    bool any = packet.functions.empty();
    for (size_t i = 0; i < packet.functions.size(); ++i) {
      if (btf::globMatch(packet.functions[i].text, name)) any = glob_used[i] = true;
    }
    return any;
  };
  // Globs narrow what is shown; where the kernel frees skbs is attached all the same
  // (unseen), or a freed skb's journey would go on in the next skb at its address. Not
  // for `graph`, whose returns would need them too.
  bool narrowed = !packet.functions.empty() && !packet.graph;
  for (PacketFunction& f : packetFunctions(ctx.btf, ctx.kernel)) {
    const std::string& name = f.function.name;
    bool frees = name == "kfree_skbmem";
    bool releases = name == "skb_release_data" || name == "skb_free_head";
    bool shown = use(name);
    if (!shown && !(narrowed && (frees || releases))) continue;
    // The skb_release_* functions pass on a reason their caller chose, and `__kfree_skb`
    // passes none (SKB_DROP_REASON_NOT_SPECIFIED after sk_skb_reason_drop said
    // NETFILTER_DROP): the drop's reason is the function's that dropped it.
    std::optional<uint32_t> reason = name.rfind("skb_release_", 0) == 0 ? std::nullopt : f.reason;
    PacketSite site{f.function.name, f.function.module.empty() ? "vmlinux" : f.function.module, "",
                    f.skb, reason, frees, releases, !shown, copyOf(f.function, f.skb), std::nullopt};
    out.packet_sites.push_back(std::move(site));
    out.functions.push_back(std::move(f.function));
  }
  // Only beside a function shown: alone they would attach, and show nothing, where the
  // globs name only tracepoints.
  auto visible = [](const PacketSite& s) { return !s.unseen; };
  if (std::none_of(out.packet_sites.begin(), out.packet_sites.end(), visible)) {
    out.packet_sites.clear();
    out.functions.clear();
  }
  size_t function_sites = out.packet_sites.size();
  std::vector<std::pair<btf::Function, uint32_t>> events = ctx.btf.tracepointsTaking("sk_buff");
  std::set<std::string> event_names;
  for (auto& [handler, slot] : events) event_names.insert(handler.name);
  std::map<std::string, std::string> names = tracepointNames(ctx, event_names);
  for (auto& [handler, slot] : events) {
    const std::string& event = handler.name;
    bool freed = event == "kfree_skb" || event == "consume_skb";
    bool shown = use(event);
    if (!shown && !(narrowed && freed)) continue;
    auto named = names.find(event);
    out.packet_sites.push_back({named == names.end() ? event : named->second, "vmlinux", event,
                                slot, dropReason(handler, 1), freed, freed, !shown, std::nullopt, std::nullopt});
  }
  // Likewise beside a tracepoint shown: the fallback to tracepoints is for those.
  auto tracepoints_from = out.packet_sites.begin() + static_cast<std::ptrdiff_t>(function_sites);
  if (std::none_of(tracepoints_from, out.packet_sites.end(), visible)) {
    out.packet_sites.resize(function_sites);
  }
  // The XDP and TC programs loaded now (those the globs name), beside the sites that find
  // their skbs. Not for `graph`, whose calls nest: a program's one event is at its return.
  std::optional<PacketIdentity> identity = packetIdentity(ctx.btf, *skb);
  size_t programs = 0;
  std::vector<host::BpfProgram> loaded;
  if (!packet.graph && !out.packet_sites.empty()) loaded = packetPrograms(ctx.kernel);
  for (const host::BpfProgram& prog : loaded) {
    bool xdp = prog.type == BPF_PROG_TYPE_XDP;
    if (xdp && (!identity || !identity->xdp_hard_start)) continue;
    if (!use(prog.displayName())) continue;
    out.packet_sites.push_back({"bpf:" + prog.displayName(), "bpf", "", 0, std::nullopt, false, false, false,
                                std::nullopt, prog});
    ++programs;
  }
  // The verdict of each nftables base chain a packet meets: nft_do_chain's return, where
  // nf_tables is loaded (a drop's verdict comes before nf_hook_slow frees the packet).
  std::optional<NetfilterHookAccess> chain;
  std::string module;
  if (!packet.graph && !out.packet_sites.empty() && use("nft_do_chain")) chain = netfilterChain(ctx.btf, ctx.kernel, module);
  if (chain) {
    PacketSite verdict{"nft_do_chain", module, "", 0, std::nullopt, false, false, false, std::nullopt, std::nullopt};
    verdict.netfilter = std::move(chain);
    out.packet_sites.push_back(std::move(verdict));
    ++programs;
  }
  for (size_t i = 0; i < packet.functions.size(); ++i) {
    if (glob_used[i]) continue;
    const ast::Pattern& glob = packet.functions[i];
    Diagnostic& diag = ctx.diags.report(
        DiagKind::UnknownFunction, glob.range,
        fmt::format("no traceable function {} `{}` takes a `struct sk_buff *` (nor does a "
                    "tracepoint of that name carry one)",
                    glob.isGlob() ? "matching" : "named", glob.text));
    diag.note("`kq list packet` lists the functions packet tracing attaches to");
  }
  if (out.packet_sites.empty()) return std::nullopt;
  if (packet.graph && out.functions.empty()) {
    // Tracepoints have no return: a graph of them would attach nothing.
    Diagnostic& diag = ctx.diags.report(
        DiagKind::UnknownFunction, target.range,
        "`packet graph` traces functions' entries and returns, and no traceable function "
        "matching the globs takes a `struct sk_buff *` (the tracepoints they match have no "
        "return)");
    diag.note("without `graph`, the tracepoints are traced");
    return std::nullopt;
  }
  out.packet_identity = std::move(identity);
  auto skb_ptr = ctx.types.pointerTo(ctx.types.fromBtf(*skb));
  out.args.push_back({"skb", skb_ptr, 0});
  out.attach = functionAttachMethods(ctx.kernel, {});
  out.attach.push_back({AttachKind::TpBtf, Known::Yes, ""});
  // What the globs chose (the sites kept only to end journeys are not counted).
  auto functions_end = out.packet_sites.begin() + static_cast<std::ptrdiff_t>(out.functions.size());
  auto tracepoints_end = out.packet_sites.end() - static_cast<std::ptrdiff_t>(programs);
  bool netfilter = programs && out.packet_sites.back().netfilter;
  programs -= netfilter ? 1 : 0;
  size_t shown_functions = static_cast<size_t>(std::count_if(out.packet_sites.begin(), functions_end, visible));
  size_t shown_tracepoints = static_cast<size_t>(std::count_if(functions_end, tracepoints_end, visible));
  out.description = out.functions.empty() ? fmt::format("packet ({} tracepoints", shown_tracepoints)
                                          : fmt::format("packet ({} functions", shown_functions);
  if (programs) out.description += fmt::format(", {} BPF program{}", programs, programs == 1 ? "" : "s");
  if (netfilter) out.description += ", netfilter's verdicts";
  out.description += ")";
  return out;
}

}  // namespace kq::sema
