#include "tests/support/fake_kernel.h"

#include <fmt/format.h>

#include <bpf/btf.h>
#include <linux/bpf.h>

#include <cstdio>
#include <map>
#include <stdexcept>

namespace kq::testing {
namespace {

/// Builds the fake BTF with names instead of numbers: `type("struct sk_buff")`.
class Builder {
 public:
  Builder() : btf_(btf__new_empty()) {}

  ::btf* take() { return btf_; }

  int add(const std::string& name, int id) {
    if (id < 0) throw std::runtime_error("btf__add failed for " + name);
    ids_[name] = id;
    ids_.erase(name + " *");  // a forward declaration completed: new pointers point here
    return id;
  }
  int type(const std::string& name) const {
    auto it = ids_.find(name);
    if (it == ids_.end()) throw std::runtime_error("fake BTF has no " + name);
    return it->second;
  }
  int ptr(const std::string& name) {
    std::string key = name + " *";
    if (ids_.count(key)) return ids_[key];
    return add(key, btf__add_ptr(btf_, type(name)));
  }

  void ints() {
    add("void", 0);
    add("int", btf__add_int(btf_, "int", 4, BTF_INT_SIGNED));
    add("unsigned int", btf__add_int(btf_, "unsigned int", 4, 0));
    add("char", btf__add_int(btf_, "char", 1, BTF_INT_SIGNED | BTF_INT_CHAR));
    add("unsigned char", btf__add_int(btf_, "unsigned char", 1, 0));
    add("short unsigned int", btf__add_int(btf_, "short unsigned int", 2, 0));
    add("long int", btf__add_int(btf_, "long int", 8, BTF_INT_SIGNED));
    add("long unsigned int", btf__add_int(btf_, "long unsigned int", 8, 0));
    add("long long unsigned int", btf__add_int(btf_, "long long unsigned int", 8, 0));
    add("_Bool", btf__add_int(btf_, "_Bool", 1, BTF_INT_BOOL));
    typedef_("__u8", "unsigned char");
    typedef_("__u16", "short unsigned int");
    typedef_("__u32", "unsigned int");
    typedef_("__u64", "long long unsigned int");
    typedef_("u8", "__u8");
    typedef_("u16", "__u16");
    typedef_("u32", "__u32");
    typedef_("u64", "__u64");
    typedef_("__be16", "__u16");
    typedef_("__be32", "__u32");
    typedef_("size_t", "long unsigned int");
    typedef_("ssize_t", "long int");
    typedef_("loff_t", "long int");
    typedef_("gfp_t", "unsigned int");
    typedef_("umode_t", "short unsigned int");
    typedef_("pid_t", "int");
    typedef_("sk_buff_data_t", "unsigned int");
    typedef_("bool", "_Bool");
  }

  void typedef_(const std::string& name, const std::string& target) {
    add(name, btf__add_typedef(btf_, name.c_str(), type(target)));
  }

  int array(const std::string& element, int count) {
    return btf__add_array(btf_, type("int"), type(element), count);
  }

  /// A struct with members given as (name, type id, bit offset, bitfield bits).
  struct Member {
    std::string name;
    int type;
    uint32_t bit_offset;
    uint32_t bits = 0;
  };
  int record(bool is_struct, const std::string& name, uint32_t size, const std::vector<Member>& members) {
    int id = is_struct ? btf__add_struct(btf_, name.empty() ? nullptr : name.c_str(), size)
                       : btf__add_union(btf_, name.empty() ? nullptr : name.c_str(), size);
    for (const Member& m : members) {
      btf__add_field(btf_, m.name.empty() ? nullptr : m.name.c_str(), m.type, m.bit_offset, m.bits);
    }
    if (!name.empty()) add((is_struct ? "struct " : "union ") + name, id);
    return id;
  }

  void enumeration(const std::string& name, uint32_t size,
                   const std::vector<std::pair<std::string, int64_t>>& values) {
    int id = btf__add_enum(btf_, name.empty() ? nullptr : name.c_str(), size);
    for (const auto& [n, v] : values) btf__add_enum_value(btf_, n.c_str(), v);
    if (!name.empty()) add("enum " + name, id);
  }

  void function(const std::string& ret, const std::string& name,
                const std::vector<std::pair<std::string, int>>& params) {
    int proto = btf__add_func_proto(btf_, type(ret));
    for (const auto& [pname, ptype] : params) btf__add_func_param(btf_, pname.c_str(), ptype);
    add("fn " + name, btf__add_func(btf_, name.c_str(), BTF_FUNC_GLOBAL, proto));
  }

 private:
  ::btf* btf_;
  std::map<std::string, int> ids_;
};

::btf* buildFakeBtf() {
  Builder b;
  b.ints();

  // Forward declarations first, so structs can point at each other.
  b.add("struct sk_buff", btf__add_fwd(b.take(), "sk_buff", BTF_FWD_STRUCT));
  b.add("struct opaque", btf__add_fwd(b.take(), "opaque", BTF_FWD_STRUCT));
  b.record(true, "ns_common", 8, {{"stashed", b.ptr("void"), 0}, {"inum", b.type("unsigned int"), 32}});
  b.add("struct net", b.record(true, "net", 16, {{"ifindex", b.type("int"), 0},
                                                   {"ns", b.type("struct ns_common"), 64}}));

  // `typedef struct { struct net *net; } possible_net_t;`
  b.add("possible_net_t", btf__add_typedef(b.take(), "possible_net_t",
                                           b.record(true, "", 8, {{"net", b.ptr("struct net"), 0}})));
  b.record(true, "net_device", 32,
           {{"name", b.array("char", 16), 0},
            {"__cacheline_marker", b.array("char", 0), 128},
            {"ifindex", b.type("int"), 128},
            {"mtu", b.type("unsigned int"), 160},
            {"nd_net", b.type("possible_net_t"), 192}});
  b.record(true, "sock_common", 16,
           {{"skc_daddr", b.type("__be32"), 0},
            {"skc_family", b.type("short unsigned int"), 32}});
  // Bitfields like the kernel's: unsigned in one byte, and a signed one over two bytes.
  b.record(true, "sock", 32,
           {{"__sk_common", b.type("struct sock_common"), 0},
            {"sk_mark", b.type("__u32"), 128},
            {"sk_type", b.type("short unsigned int"), 160},
            {"sk_protocol", b.type("short unsigned int"), 176},
            {"sk_no_check_tx", b.type("u8"), 192, 1},
            {"sk_userlocks", b.type("u8"), 193, 4},
            {"sk_credit", b.type("int"), 200, 12}});
  // x86-64's, with only the members kq reads (their offsets are the kernel's).
  b.record(true, "pt_regs", 168,
           {{"r9", b.type("long unsigned int"), 64 * 8},
            {"r8", b.type("long unsigned int"), 72 * 8},
            {"ax", b.type("long unsigned int"), 80 * 8},
            {"cx", b.type("long unsigned int"), 88 * 8},
            {"dx", b.type("long unsigned int"), 96 * 8},
            {"si", b.type("long unsigned int"), 104 * 8},
            {"di", b.type("long unsigned int"), 112 * 8},
            {"sp", b.type("long unsigned int"), 152 * 8}});

  // struct sk_buff, with an anonymous union of a struct and a bitfield, like the real one.
  int list = b.record(true, "", 16,
                      {{"next", b.ptr("struct sk_buff"), 0}, {"prev", b.ptr("struct sk_buff"), 64}});
  int head_union = b.record(false, "", 16, {{"", list, 0}, {"tstamp", b.type("u64"), 0}});
  b.add("struct sk_buff", b.record(true, "sk_buff", 232,
        {{"", head_union, 0},
         {"dev", b.ptr("struct net_device"), 128},
         {"sk", b.ptr("struct sock"), 192},
         {"cb", b.array("char", 48), 256},
         {"len", b.type("unsigned int"), 640},
         {"data_len", b.type("unsigned int"), 672},
         {"pkt_type", b.type("__u8"), 704, 3},
         {"ignore_df", b.type("__u8"), 707, 1},
         {"encapsulation", b.type("__u8"), 708, 1},
         {"cloned", b.type("__u8"), 709, 1},
         {"protocol", b.type("__be16"), 720},
         {"mark", b.type("__u32"), 736},
         {"transport_header", b.type("__u16"), 768},
         {"network_header", b.type("__u16"), 784},
         {"mac_header", b.type("__u16"), 800},
         {"head", b.ptr("unsigned char"), 832},
         {"data", b.ptr("unsigned char"), 896},
         {"tail", b.type("sk_buff_data_t"), 960},
         {"inner_transport_header", b.type("__u16"), 992},
         {"inner_network_header", b.type("__u16"), 1008},
         {"end", b.type("sk_buff_data_t"), 1024}}));
  // What a packet's data's count of skbs is in: past the data, at `end`.
  b.record(true, "skb_shared_info", 320, {{"nr_frags", b.type("__u8"), 16}, {"dataref", b.type("int"), 256}});

  // What an XDP program's `struct xdp_md *` is to a tracing program.
  b.record(true, "xdp_buff", 56,
           {{"data", b.ptr("void"), 0}, {"data_end", b.ptr("void"), 64},
            {"data_meta", b.ptr("void"), 128}, {"data_hard_start", b.ptr("void"), 192}});
  // What nft_do_chain finds its packet and hook through (packet mode's netfilter verdicts).
  b.record(true, "nf_hook_state", 16, {{"hook", b.type("u8"), 0}, {"pf", b.type("u8"), 8}});
  b.record(true, "nft_pktinfo", 16,
           {{"skb", b.ptr("struct sk_buff"), 0}, {"state", b.ptr("struct nf_hook_state"), 64}});
  // Its `priv`: the base chain, and the chain's table.
  b.record(true, "nft_table", 16, {{"name", b.ptr("char"), 64}});
  b.record(true, "nft_chain", 128, {{"table", b.ptr("struct nft_table"), 512}, {"name", b.ptr("char"), 704}});
  b.record(true, "iphdr", 20,
           {{"ihl", b.type("__u8"), 0, 4}, {"version", b.type("__u8"), 4, 4},
            {"protocol", b.type("__u8"), 72}, {"saddr", b.type("__be32"), 96}, {"daddr", b.type("__be32"), 128}});
  b.record(true, "in6_addr", 16, {{"s6_addr", b.array("__u8", 16), 0}});
  b.record(true, "ipv6hdr", 40,
           {{"nexthdr", b.type("__u8"), 48}, {"saddr", b.type("struct in6_addr"), 64},
            {"daddr", b.type("struct in6_addr"), 192}});
  b.record(true, "tcphdr", 20, {{"source", b.type("__be16"), 0}, {"dest", b.type("__be16"), 16}});
  b.record(true, "udphdr", 8, {{"source", b.type("__be16"), 0}, {"dest", b.type("__be16"), 16}});
  b.record(true, "msghdr", 8, {{"msg_flags", b.type("unsigned int"), 0}});
  b.record(true, "qstr", 16, {{"len", b.type("u32"), 0}, {"name", b.ptr("unsigned char"), 64}});
  b.record(true, "dentry", 16, {{"d_name", b.type("struct qstr"), 0}});
  b.record(true, "path", 8, {{"dentry", b.ptr("struct dentry"), 0}});
  b.record(true, "inode", 8, {{"i_ino", b.type("long unsigned int"), 0}});
  b.record(true, "file", 24, {{"f_path", b.type("struct path"), 0}, {"f_inode", b.ptr("struct inode"), 64}});
  b.add("struct task_struct", btf__add_fwd(b.take(), "task_struct", BTF_FWD_STRUCT));
  b.record(true, "mm_struct", 16, {{"total_vm", b.type("long unsigned int"), 0},
                                    {"arg_start", b.type("long unsigned int"), 64}});
  // `real_parent` points at the struct being defined, as in the kernel's BTF: a pointer
  // may name a type added after it (the struct, added right after the pointer).
  // `netns` reads task->nsproxy->net_ns->ns.inum.
  b.record(true, "nsproxy", 16, {{"count", b.type("u32"), 0}, {"net_ns", b.ptr("struct net"), 64}});
  int comm = b.array("char", 16);
  int mm = b.ptr("struct mm_struct");
  int nsproxy = b.ptr("struct nsproxy");
  // raw_syscalls programs read thread_info.status (TS_COMPAT: a 32-bit call).
  int thread_info = b.record(true, "thread_info", 16, {{"flags", b.type("long unsigned int"), 0},
                                                        {"status", b.type("u32"), 64}});
  int task_pointer = btf__add_ptr(b.take(), static_cast<int>(btf__type_cnt(b.take())) + 1);
  b.record(true, "task_struct", 64,
           {{"pid", b.type("pid_t"), 0},
            {"tgid", b.type("pid_t"), 32},
            {"comm", comm, 64},
            {"real_parent", task_pointer, 192},
            {"mm", mm, 256},
            {"nsproxy", nsproxy, 320},
            {"thread_info", thread_info, 384}});

  b.enumeration("skb_drop_reason", 4,
                {{"SKB_DROP_REASON_NOT_SPECIFIED", 2},
                 {"SKB_DROP_REASON_NO_SOCKET", 3},
                 {"SKB_DROP_REASON_PKT_TOO_SMALL", 4},
                 {"SKB_DROP_REASON_TCP_CSUM", 5}});
  b.enumeration("sock_type", 4, {{"SOCK_STREAM", 1}, {"SOCK_DGRAM", 2}});
  b.enumeration("", 4, {{"TCP_ESTABLISHED", 1}, {"TCP_SYN_SENT", 2}});
  // More enumerators start with `TCP_` here, but they all start with `TCP_NLA_`.
  b.enumeration("", 4, {{"TCP_NLA_PAD", 0}, {"TCP_NLA_BUSY", 1}, {"TCP_NLA_RWND_LIMITED", 2}});

  int skb = b.ptr("struct sk_buff");
  int sk = b.ptr("struct sock");
  b.function("int", "ip_send_skb", {{"net", b.ptr("struct net")}, {"skb", skb}});
  b.function("int", "ip_output", {{"net", b.ptr("struct net")}, {"sk", sk}, {"skb", skb}});
  b.function("int", "dev_queue_xmit", {{"skb", skb}});
  b.function("int", "tcp_sendmsg", {{"sk", sk}, {"msg", b.ptr("struct msghdr")}, {"size", b.type("size_t")}});
  b.function("int", "tcp_recvmsg", {{"sk", sk}, {"msg", b.ptr("struct msghdr")}, {"len", b.type("size_t")}});
  b.function("int", "tcp_v4_rcv", {{"skb", skb}});
  b.function("int", "tcp_v4_do_rcv", {{"sk", sk}, {"skb", skb}});
  b.function("int", "tcp_v4_connect", {{"sk", sk}, {"uaddr", b.ptr("void")}, {"addr_len", b.type("int")}});
  b.function("void", "kfree_skb_reason", {{"skb", skb}, {"reason", b.type("enum skb_drop_reason")}});
  b.function("struct sk_buff *", "skb_clone", {{"skb", skb}, {"gfp_mask", b.type("gfp_t")}});
  b.function("bool", "skb_try_coalesce", {{"to", skb}, {"from", skb}, {"fragstolen", b.ptr("bool")}});
  b.function("ssize_t", "vfs_read", {{"file", b.ptr("struct file")}, {"buf", b.ptr("char")},
                                     {"count", b.type("size_t")}, {"pos", b.ptr("loff_t")}});
  b.function("void", "inlined_helper", {{"skb", skb}});
  b.function("unsigned int", "nft_do_chain", {{"pkt", b.ptr("struct nft_pktinfo")}, {"priv", b.ptr("void")}});
  b.function("int", "cap_capable", {{"cred", b.ptr("void")}, {"targ_ns", b.ptr("void")},
                                    {"cap", b.type("int")}, {"opts", b.type("unsigned int")}});
  // More parameters than registers: x86-64 passes `rtp` and `flags` on the stack.
  b.function("int", "ip_append_data",
             {{"sk", sk}, {"fl4", b.ptr("void")}, {"getfrag", b.ptr("void")}, {"from", b.ptr("void")},
              {"length", b.type("int")}, {"transhdrlen", b.type("int")}, {"ipc", b.ptr("void")},
              {"rtp", b.ptr("void")}, {"flags", b.type("unsigned int")}});
  b.function("int", "takes_opaque", {{"o", b.ptr("struct opaque")}});
  // BPF iterators: `bpf_iter_NAME(meta, ...)` with its context `struct bpf_iter__NAME`.
  b.record(true, "bpf_iter_meta", 8, {{"seq_num", b.type("u64"), 0}});
  int meta = b.ptr("struct bpf_iter_meta");
  int task = b.ptr("struct task_struct");
  b.record(true, "bpf_iter__task", 16, {{"meta", meta, 0}, {"task", task, 64}});
  b.record(true, "bpf_iter__task_file", 32,
           {{"meta", meta, 0}, {"task", task, 64}, {"fd", b.type("u32"), 128}, {"file", b.ptr("struct file"), 192}});
  b.function("int", "bpf_iter_task", {{"meta", meta}, {"task", task}});
  b.function("int", "bpf_iter_task_file",
             {{"meta", meta}, {"task", task}, {"fd", b.type("u32")}, {"file", b.ptr("struct file")}});
  b.function("long int", "__x64_sys_openat", {{"regs", b.ptr("void")}});
  // Just more functions than one probe may attach to (`trace stub_*`), sharing a prototype.
  int stub_proto = btf__add_func_proto(b.take(), 0);
  for (int i = 0; i <= 5000; ++i) {
    btf__add_func(b.take(), fmt::format("stub_{:04}", i).c_str(), BTF_FUNC_GLOBAL, stub_proto);
  }
  // tp_btf handlers: the tracepoint's arguments after `__data`.
  b.function("void", "__bpf_trace_net_dev_xmit",
             {{"__data", b.ptr("void")}, {"skb", skb}, {"rc", b.type("int")},
              {"dev", b.ptr("struct net_device")}, {"skb_len", b.type("unsigned int")}});
  b.function("void", "__bpf_trace_kfree_skb",
             {{"__data", b.ptr("void")}, {"skb", skb}, {"location", b.ptr("void")},
              {"reason", b.type("enum skb_drop_reason")}});
  // DEFINE_EVENT(sched_wakeup_template, sched_wakeup) and (..., sched_waking): only the
  // template has a handler; each event has a typedef to an unnamed prototype. A template of
  // the same prototype names its parameter differently.
  b.function("void", "__bpf_trace_sched_wakeup_template",
             {{"__data", b.ptr("void")}, {"p", b.ptr("struct task_struct")}});
  b.function("void", "__bpf_trace_sched_kthread_stop",
             {{"__data", b.ptr("void")}, {"t", b.ptr("struct task_struct")}});
  int wakeup_proto = btf__add_func_proto(b.take(), 0);
  btf__add_func_param(b.take(), nullptr, b.ptr("void"));
  btf__add_func_param(b.take(), nullptr, b.ptr("struct task_struct"));
  int wakeup_ptr = btf__add_ptr(b.take(), wakeup_proto);
  btf__add_typedef(b.take(), "btf_trace_sched_wakeup", wakeup_ptr);
  btf__add_typedef(b.take(), "btf_trace_sched_waking", wakeup_ptr);
  // An event whose template kq cannot tell: its arguments are known as argN.
  int pair_proto = btf__add_func_proto(b.take(), 0);
  btf__add_func_param(b.take(), nullptr, b.ptr("void"));
  btf__add_func_param(b.take(), nullptr, b.type("int"));
  btf__add_typedef(b.take(), "btf_trace_sched_untemplated", btf__add_ptr(b.take(), pair_proto));
  b.function("void", "__bpf_trace_inet_sock_set_state",
             {{"__data", b.ptr("void")}, {"sk", sk}, {"oldstate", b.type("int")},
              {"newstate", b.type("int")}});
  b.function("void", "__bpf_trace_sched_process_exec",
             {{"__data", b.ptr("void")}, {"p", b.ptr("struct task_struct")}, {"old_pid", b.type("pid_t")}});
  return b.take();
}

class FakeKernelInfo : public host::KernelInfo {
 public:
  Result<std::vector<std::string>> tracepointCategories() override {
    std::vector<std::string> out;
    for (const auto& [category, events] : events_) out.push_back(category);
    return out;
  }
  Result<std::vector<std::string>> tracepointEvents(const std::string& category) override {
    auto it = events_.find(category);
    if (it == events_.end()) return Error{"cannot list events/" + category};
    std::vector<std::string> out;
    for (const auto& [event, format] : it->second) out.push_back(event);
    return out;
  }
  Result<host::TracepointFormat> tracepointFormat(const std::string& category,
                                                    const std::string& event) override {
    auto it = events_.find(category);
    if (it == events_.end() || !it->second.count(event)) {
      return Error{"cannot read events/" + category + "/" + event + "/format"};
    }
    return host::parseTracepointFormat(it->second.at(event));
  }
  host::Known inFilterFunctions(const std::string& function) override {
    return function == "inlined_helper" ? host::Known::No : host::Known::Yes;
  }
  std::string filterFunctionsProblem() override { return ""; }
  host::Known inKallsyms(const std::string& function) override {
    return function == "inlined_helper" ? host::Known::No : host::Known::Yes;
  }
  host::Known hasKprobes() override { return host::Known::No; }
  Result<std::optional<uint64_t>> symbolAddress(const std::string& name) override {
    auto it = symbols_.find(name);
    if (it == symbols_.end()) return std::optional<uint64_t>{};
    return std::optional<uint64_t>{it->second};
  }
  std::vector<std::string_view> symbolNames() override {
    std::vector<std::string_view> names;
    for (const auto& [name, address] : symbols_) names.push_back(name);
    return names;
  }
  /// Two namespaces `ip netns` names.
  std::vector<host::NamedNetns> netNamespaces() override { return {{"blue", 4026532001}, {"red", 4026532002}}; }
  /// An XDP program and a TC one with BTF, and one loaded without.
  Result<std::vector<host::BpfProgram>> bpfPrograms() override {
    using Param = host::BpfProgramParam;
    host::BpfProgram xdp{17, "xdp_drop_udp", BPF_PROG_TYPE_XDP, "xdp", "d441f87c8ad2f9b3",
                         "xdp_drop_udp", {{"ctx", Param::Kind::Context, "xdp_md", 8, false}}, 4, true};
    host::BpfProgram tc{23, "tc_ingress_filt", BPF_PROG_TYPE_SCHED_CLS, "sched_cls", "0123456789abcdef",
                        "tc_ingress_filter", {{"skb", Param::Kind::Context, "__sk_buff", 8, false}}, 4, true};
    host::BpfProgram bare{31, "no_btf", BPF_PROG_TYPE_XDP, "xdp", "fedcba9876543210", "", {}, 0, false};
    return std::vector<host::BpfProgram>{xdp, tc, bare};
  }

 private:
  static std::string format(int id, const std::string& fields) {
    return "name: x\nID: " + std::to_string(id) +
           "\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
           "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n" + fields;
  }
  /// /proc/kallsyms: a function and data.
  std::map<std::string, uint64_t> symbols_ = {
      {"ip_send_skb", 0xffffffff8205dbd0},
      {"init_task", 0xffffffff83a0f940},
      {"jiffies", 0xffffffff83805000},
  };
  std::map<std::string, std::map<std::string, std::string>> events_ = {
      {"net",
       {{"net_dev_xmit",
         format(2306,
                "\tfield:void * skbaddr;\toffset:8;\tsize:8;\tsigned:0;\n"
                "\tfield:unsigned int len;\toffset:16;\tsize:4;\tsigned:0;\n"
                "\tfield:int rc;\toffset:20;\tsize:4;\tsigned:1;\n"
                "\tfield:__data_loc char[] name;\toffset:24;\tsize:4;\tsigned:0;\n")},
        {"netif_receive_skb",
         format(2310, "\tfield:void * skbaddr;\toffset:8;\tsize:8;\tsigned:0;\n"
                      "\tfield:unsigned int len;\toffset:16;\tsize:4;\tsigned:0;\n")}}},
      {"skb",
       {{"kfree_skb",
         format(1500, "\tfield:void * skbaddr;\toffset:8;\tsize:8;\tsigned:0;\n"
                      "\tfield:enum skb_drop_reason reason;\toffset:24;\tsize:4;\tsigned:0;\n")}}},
      // Two records alike at their start (`dev`, `sector`), unlike after it.
      {"block",
       {{"block_rq_issue",
         format(1200, "\tfield:dev_t dev;\toffset:8;\tsize:4;\tsigned:0;\n"
                      "\tfield:sector_t sector;\toffset:16;\tsize:8;\tsigned:0;\n"
                      "\tfield:unsigned int bytes;\toffset:28;\tsize:4;\tsigned:0;\n")},
        {"block_rq_complete",
         format(1201, "\tfield:dev_t dev;\toffset:8;\tsize:4;\tsigned:0;\n"
                      "\tfield:sector_t sector;\toffset:16;\tsize:8;\tsigned:0;\n"
                      "\tfield:int error;\toffset:28;\tsize:4;\tsigned:1;\n")}}},
      {"sched",
       {{"sched_process_exec",
         format(300, "\tfield:__data_loc char[] filename;\toffset:8;\tsize:4;\tsigned:0;\n"
                     "\tfield:pid_t pid;\toffset:12;\tsize:4;\tsigned:1;\n"
                     "\tfield:pid_t old_pid;\toffset:16;\tsize:4;\tsigned:1;\n")},
        // The classic record of sched_wakeup (DEFINE_EVENT): `comm` and `pid` are the wakee's.
        {"sched_wakeup",
         format(302, "\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
                     "\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n"
                     "\tfield:int target_cpu;\toffset:32;\tsize:4;\tsigned:1;\n")},
        {"sched_waking",
         format(303, "\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
                     "\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n")},
        // No BTF handler: the classic record's `comm` and `pid` hide the builtins.
        {"sched_stat_runtime",
         format(305, "\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
                     "\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n"
                     "\tfield:u64 runtime;\toffset:32;\tsize:8;\tsigned:0;\n")},
        {"sched_untemplated",
         format(304, "\tfield:int value;\toffset:8;\tsize:4;\tsigned:1;\n")},
        {"sched_switch",
         format(301, "\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
                     "\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n")}}},
      {"sock",
       {{"inet_sock_set_state",
         format(1400, "\tfield:const void * skaddr;\toffset:8;\tsize:8;\tsigned:0;\n"
                      "\tfield:int oldstate;\toffset:16;\tsize:4;\tsigned:1;\n"
                      "\tfield:int newstate;\toffset:20;\tsize:4;\tsigned:1;\n"
                      "\tfield:__u16 sport;\toffset:24;\tsize:2;\tsigned:0;\n"
                      "\tfield:__u8 saddr[4];\toffset:32;\tsize:4;\tsigned:0;\n"
                      "\tfield:__u8 saddr_v6[16];\toffset:40;\tsize:16;\tsigned:0;\n")}}},
      // No BTF handler here: the classic record's array field.
      {"raw_syscalls",
       {{"sys_enter",
         format(20, "\tfield:long id;\toffset:8;\tsize:8;\tsigned:1;\n"
                    "\tfield:unsigned long args[6];\toffset:16;\tsize:48;\tsigned:0;\n")}}},
      {"syscalls",
       {{"sys_enter_kill",
         format(704, "\tfield:int __syscall_nr;\toffset:8;\tsize:4;\tsigned:1;\n"
                     "\tfield:pid_t pid;\toffset:16;\tsize:8;\tsigned:0;\n"
                     "\tfield:int sig;\toffset:24;\tsize:8;\tsigned:0;\n")},
        {"sys_enter_openat",
         format(700, "\tfield:int __syscall_nr;\toffset:8;\tsize:4;\tsigned:1;\n"
                     "\tfield:int dfd;\toffset:16;\tsize:8;\tsigned:0;\n"
                     "\tfield:const char * filename;\toffset:24;\tsize:8;\tsigned:0;\n"
                     "\tfield:int flags;\toffset:32;\tsize:8;\tsigned:0;\n"
                     "\tfield:umode_t mode;\toffset:40;\tsize:8;\tsigned:0;\n")},
        {"sys_exit_openat",
         format(701, "\tfield:int __syscall_nr;\toffset:8;\tsize:4;\tsigned:1;\n"
                     "\tfield:long ret;\toffset:16;\tsize:8;\tsigned:1;\n")},
        {"sys_enter_execve",
         format(704, "\tfield:int __syscall_nr;\toffset:8;\tsize:4;\tsigned:1;\n"
                     "\tfield:const char * filename;\toffset:16;\tsize:8;\tsigned:0;\n"
                     "\tfield:const char *const * argv;\toffset:24;\tsize:8;\tsigned:0;\n"
                     "\tfield:const char *const * envp;\toffset:32;\tsize:8;\tsigned:0;\n")},
        {"sys_enter_read",
         format(702, "\tfield:int __syscall_nr;\toffset:8;\tsize:4;\tsigned:1;\n"
                     "\tfield:unsigned int fd;\toffset:16;\tsize:8;\tsigned:0;\n"
                     "\tfield:char * buf;\toffset:24;\tsize:8;\tsigned:0;\n"
                     "\tfield:size_t count;\toffset:32;\tsize:8;\tsigned:0;\n")},
        // A record laid out unlike x86-64's: `ret` is wherever the format says.
        {"sys_exit_read",
         format(703, "\tfield:int __syscall_nr;\toffset:8;\tsize:4;\tsigned:1;\n"
                     "\tfield:long __pad;\toffset:16;\tsize:8;\tsigned:1;\n"
                     "\tfield:long ret;\toffset:24;\tsize:8;\tsigned:1;\n")}}},
  };
};

}  // namespace

std::unique_ptr<btf::Btf> fakeBtf() { return btf::Btf::adopt(buildFakeBtf(), "fake vmlinux"); }

std::unique_ptr<host::KernelInfo> fakeKernelInfo() { return std::make_unique<FakeKernelInfo>(); }

void writeFakeBtf(const std::string& path) {
  ::btf* btf = buildFakeBtf();
  uint32_t size = 0;
  const void* data = btf__raw_data(btf, &size);
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw std::runtime_error("cannot write " + path);
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  btf__free(btf);
}

}  // namespace kq::testing
