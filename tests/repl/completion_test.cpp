// Tab completion (tools/kq/completion.h) against the fake kernel: what each place in a
// query being typed offers.
#include "repl/completion.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/support/fake_kernel.h"

namespace kq::repl {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::IsSupersetOf;

class CompletionTest : public ::testing::Test {
 protected:
  Completion complete(const std::string& text) {
    return repl::complete(CompletionContext{*btf_, *kernel_, decls_}, text);
  }
  std::vector<std::string> candidates(const std::string& text) { return complete(text).candidates; }

  std::unique_ptr<btf::Btf> btf_ = testing::fakeBtf();
  std::unique_ptr<host::KernelInfo> kernel_ = testing::fakeKernelInfo();
  std::string decls_;
};

TEST_F(CompletionTest, CommandsAtTheStart) {
  EXPECT_THAT(candidates(""), IsSupersetOf({"trace", "info", "list", "let", "fn", "use", "jobs", "stop"}));
  Completion c = complete("tr");
  EXPECT_THAT(c.candidates, ElementsAre("trace"));
  EXPECT_EQ(c.start, 0u);
  EXPECT_TRUE(c.space_after);
  EXPECT_THAT(candidates("check tr"), ElementsAre("trace"));
}

TEST_F(CompletionTest, KernelFunctionsAfterTrace) {
  Completion c = complete("trace tcp_v4_");
  EXPECT_THAT(c.candidates, ElementsAre("tcp_v4_connect", "tcp_v4_do_rcv", "tcp_v4_rcv"));
  EXPECT_EQ(c.start, 6u);
  // Nothing typed: the kinds of probe, not every function.
  EXPECT_THAT(candidates("trace "), ElementsAre("bpf:", "hardware:", "interval", "iter:", "packet", "profile", "rawtracepoint:",
                                                "software:", "syscall:", "tracepoint:", "uprobe:",
                                                "uretprobe:", "usdt:", "watchpoint:"));
  EXPECT_THAT(candidates("trace tr"), ElementsAre("tracepoint:"));
  // Functions that cannot be traced are not offered.
  EXPECT_THAT(candidates("trace inlined"), ElementsAre());
}

TEST_F(CompletionTest, GlobsMatchAsTheyWouldInAProbe) {
  Completion c = complete("trace tcp_*rcv");
  EXPECT_THAT(c.candidates, ElementsAre("tcp_v4_do_rcv", "tcp_v4_rcv"));
  EXPECT_EQ(c.start, 6u);
  EXPECT_THAT(candidates("trace stub_000*"), Contains("stub_0001"));
}

TEST_F(CompletionTest, FunctionsAfterACommaAnArrowAndJoin) {
  EXPECT_THAT(candidates("trace ip_send_skb, tcp_v4_c"), ElementsAre("tcp_v4_connect"));
  EXPECT_THAT(candidates("trace ip_send_skb -> tcp_v4_r"), ElementsAre("tcp_v4_rcv"));
  EXPECT_THAT(candidates("trace ip_send_skb(skb) join tcp_v4_d"), ElementsAre("tcp_v4_do_rcv"));
}

TEST_F(CompletionTest, TracepointCategoriesThenEvents) {
  Completion c = complete("trace tracepoint:");
  EXPECT_THAT(c.candidates, IsSupersetOf({"net:", "sched:", "syscalls:"}));
  EXPECT_EQ(c.start, 17u);
  c = complete("trace tracepoint:ne");
  EXPECT_THAT(c.candidates, ElementsAre("net:"));
  EXPECT_FALSE(c.space_after);  // the event comes right after
  EXPECT_THAT(candidates("trace tracepoint:net:"), IsSupersetOf({"net_dev_xmit", "netif_receive_skb"}));
  EXPECT_THAT(candidates("trace tracepoint:sched:sched_w"), ElementsAre("sched_wakeup", "sched_waking"));
}

TEST_F(CompletionTest, Syscalls) {
  EXPECT_THAT(candidates("trace syscall:"), ElementsAre("execve", "kill", "openat", "read"));
  EXPECT_THAT(candidates("trace syscall:op"), ElementsAre("openat"));
}

TEST_F(CompletionTest, RawTracepointsByTheirBtfNames) {
  EXPECT_THAT(candidates("trace rawtracepoint:sched_w"), ElementsAre("sched_wakeup", "sched_waking"));
  EXPECT_THAT(candidates("list raw"), ElementsAre("rawtracepoint:"));
}

TEST_F(CompletionTest, IteratorsAndLoadedBpfPrograms) {
  EXPECT_THAT(candidates("trace iter:task"), ElementsAre("task", "task_file"));
  // Programs by the name of their function; one loaded without BTF cannot be traced.
  EXPECT_THAT(candidates("trace bpf:"), ElementsAre("tc_ingress_filter", "xdp_drop_udp"));
  EXPECT_THAT(candidates("trace bpf:x"), ElementsAre("xdp_drop_udp"));
  EXPECT_THAT(candidates("list bp"), Contains("bpf:"));
  EXPECT_THAT(candidates("info bpf:t"), ElementsAre("tc_ingress_filter"));
}

TEST_F(CompletionTest, PerfEvents) {
  EXPECT_THAT(candidates("trace software:"), IsSupersetOf({"cpu-clock", "page-faults", "context-switches"}));
  EXPECT_THAT(candidates("trace software:pa"), ElementsAre("page-faults"));
  EXPECT_THAT(candidates("trace hardware:cache"), ElementsAre("cache-misses", "cache-references"));
}

TEST_F(CompletionTest, ArgumentsOfTheProbeBeingWritten) {
  EXPECT_THAT(candidates("trace ip_send_skb("), IsSupersetOf({"net", "skb"}));
  EXPECT_THAT(candidates("trace ip_send_skb(skb) where sk"), Contains("skb"));
  EXPECT_THAT(candidates("trace tcp_sendmsg(sk, size) where si"), ElementsAre("size"));
  EXPECT_THAT(candidates("trace tracepoint:net:net_dev_xmit where skb_"), ElementsAre("skb_len"));
  EXPECT_THAT(candidates("trace syscall:openat select filen"), ElementsAre("filename"));
  // Builtins and keywords are names there too.
  EXPECT_THAT(candidates("trace ip_send_skb(skb) select co"), IsSupersetOf({"comm", "count"}));
  EXPECT_THAT(candidates("trace ip_send_skb(skb) where skb->len > 1 an"), ElementsAre("and"));
}

TEST_F(CompletionTest, MembersTypedByTheChecker) {
  const std::string arrow = "trace tracepoint:net:net_dev_xmit(skb) where skb->";
  Completion c = complete(arrow);
  EXPECT_THAT(c.candidates, IsSupersetOf({"dev", "len", "mark", "next", "tstamp"}));
  EXPECT_EQ(c.start, arrow.size());
  // `skb->dev` is a `struct net_device *`.
  EXPECT_THAT(candidates("trace tracepoint:net:net_dev_xmit(skb) where skb->dev->"),
              ElementsAre("__cacheline_marker", "ifindex", "mtu", "name", "nd_net"));
  const std::string partial = "trace ip_send_skb(skb) select skb->dev->na";
  c = complete(partial);
  EXPECT_THAT(c.candidates, ElementsAre("name"));
  EXPECT_EQ(c.start, partial.size() - 2);
  // `.` needs a struct, `->` a pointer to one.
  EXPECT_THAT(candidates("trace ip_send_skb(skb) select skb->sk->__sk_common."), ElementsAre("skc_daddr", "skc_family"));
  EXPECT_THAT(candidates("trace ip_send_skb(skb) select skb->sk->__sk_common->"), ElementsAre());
  EXPECT_THAT(candidates("trace ip_send_skb(skb) select skb.len"), ElementsAre());
  // Inside calls and parentheses, and through builtins.
  EXPECT_THAT(candidates("trace ip_send_skb(skb) select str(skb->dev->na"), ElementsAre("name"));
  EXPECT_THAT(candidates("trace ip_send_skb(skb) select (skb->sk)->sk_m"), ElementsAre("sk_mark"));
  EXPECT_THAT(candidates("trace ip_send_skb(skb) select task->real_parent->tg"), ElementsAre("tgid"));
  // In a capture list, and with the query's other clauses still unfinished.
  EXPECT_THAT(candidates("trace vfs_read(file->f_path.dentry->"), ElementsAre("d_name"));
  EXPECT_THAT(candidates("trace ip_send_skb(skb) where skb->len > and skb->dev->mt"), ElementsAre("mtu"));
  // An integer has no members; neither has an unknown name.
  EXPECT_THAT(candidates("trace ip_send_skb(skb) select skb->len->"), ElementsAre());
  EXPECT_THAT(candidates("trace ip_send_skb(skb) select nosuch->"), ElementsAre());
}

TEST_F(CompletionTest, DeclarationsAndTheStdlib) {
  decls_ = "let big = 100\nfn twice(x) = x * 2\nuse net\n";
  EXPECT_THAT(candidates("trace ip_send_skb(skb) where skb->len > tw"), ElementsAre("twice"));
  EXPECT_THAT(candidates("trace ip_send_skb(skb) where skb->len > bi"), ElementsAre("big"));
  EXPECT_THAT(candidates("trace ip_send_skb(skb) select sa"), Contains("saddr"));  // net's
  EXPECT_THAT(candidates("use n"), ElementsAre("names", "net"));
  // A function's body is no `select` item: no aggregates there.
  EXPECT_THAT(candidates("fn f(count_a, b) = cou"), ElementsAre("count_a"));
  // A stdlib property needs no `use`.
  decls_.clear();
  EXPECT_THAT(candidates("trace ip_send_skb(skb) where mar"), Contains("mark"));
  // Declarations typed before a member access count there too.
  decls_ = "let d = 1\n";
  EXPECT_THAT(candidates("trace ip_send_skb(skb) select skb->dev->if"), ElementsAre("ifindex"));
}

TEST_F(CompletionTest, OnlyWhatChecksAtTheCursor) {
  using ::testing::Not;
  // Aggregates are `select` items: not offered in `where` or `group by`.
  EXPECT_THAT(candidates("trace ip_send_skb(skb) select cou"), Contains("count"));
  EXPECT_THAT(candidates("trace ip_send_skb(skb) where cou"), Not(Contains("count")));
  EXPECT_THAT(candidates("trace ip_send_skb(skb) group by cou"), Not(Contains("count")));
  // `func` names a traced function; a tracepoint traces none. `return` needs an exit.
  EXPECT_THAT(candidates("trace ip_send_skb(skb) select fu"), Contains("func"));
  EXPECT_THAT(candidates("trace tracepoint:net:net_dev_xmit(skb) select fu"), Not(Contains("func")));
  EXPECT_THAT(candidates("trace ip_send_skb(skb) select re"), Contains("return"));
  EXPECT_THAT(candidates("trace tracepoint:net:net_dev_xmit(skb) select re"), Not(Contains("return")));
  EXPECT_THAT(candidates("trace tracepoint:net:net_dev_xmit(skb) select du"), Not(Contains("duration")));
  EXPECT_THAT(candidates("trace syscall:openat select du"), Contains("duration"));
  // A property of an skb where the probe has one, not where it has none.
  EXPECT_THAT(candidates("trace tracepoint:net:net_dev_xmit(skb) where mar"), Contains("mark"));
  EXPECT_THAT(candidates("trace syscall:openat where mar"), Not(Contains("mark")));
  // Builtins that every probe has are offered everywhere.
  EXPECT_THAT(candidates("trace syscall:openat where co"), Contains("comm"));
}

TEST_F(CompletionTest, Joins) {
  const std::string query = "trace tcp_v4_rcv(skb) join ip_send_skb(skb) as s on skb ";
  EXPECT_THAT(candidates(query + "select s."), IsSupersetOf({"net", "skb", "time", "comm"}));
  EXPECT_THAT(candidates(query + "select s.skb->de"), ElementsAre("dev"));
  EXPECT_THAT(candidates(query + "select s.net->"), ElementsAre("ifindex", "ns"));
  EXPECT_THAT(candidates("trace tcp_v4_rcv(skb) join ip_send_skb(skb) as s "), ElementsAre("on", "where"));
  EXPECT_THAT(candidates("trace tcp_v4_rcv(skb) join ip_send_skb(skb) as s where ne"), Contains("net"));
  EXPECT_THAT(candidates("trace tcp_v4_rcv(skb) join ip_send_skb "), ElementsAre("as"));
}

TEST_F(CompletionTest, ClauseWordsAfterAProbe) {
  EXPECT_THAT(candidates("trace ip_send_skb(skb) wh"), ElementsAre("where"));
  EXPECT_THAT(candidates("trace ip_send_skb(skb) where skb->len > 1 sel"), ElementsAre("select"));
  EXPECT_THAT(candidates("trace ip_send_skb(skb) group "), ElementsAre("by"));
  EXPECT_THAT(candidates("trace ip_send_skb(skb) limit "), ElementsAre());
  EXPECT_THAT(candidates("trace packet where mark == 1 tr"), ElementsAre("track", "true"));
  EXPECT_THAT(candidates("trace packet where mark == 1 track sel"), ElementsAre("select"));
}

TEST_F(CompletionTest, NothingInsideAString) {
  EXPECT_THAT(candidates("trace ip_send_skb(skb) where comm == \"tcp_v4_"), ElementsAre());
}

TEST_F(CompletionTest, InfoAndList) {
  EXPECT_THAT(candidates("info "),
              ElementsAre("bpf:", "enum ", "rawtracepoint:", "struct ", "syscall:", "tracepoint:", "union ",
                          "usdt:"));
  EXPECT_THAT(candidates("info rawtracepoint:sched_waki"), ElementsAre("sched_waking"));
  EXPECT_THAT(candidates("info struct sk_"), ElementsAre("sk_buff"));
  EXPECT_THAT(candidates("info tcp_v4_r"), ElementsAre("tcp_v4_rcv"));
  EXPECT_THAT(candidates("info tracepoint:net:net_d"), ElementsAre("net_dev_xmit"));
  EXPECT_THAT(candidates("list pa"), ElementsAre("packet"));
  EXPECT_THAT(candidates("list syscall:ki"), ElementsAre("kill"));
}

TEST_F(CompletionTest, EveryPrefixOfAnInputCompletes) {
  // Whatever is typed, completion answers (often with nothing) and never fails.
  decls_ = "use net\nlet big = 4k\n";
  for (const std::string text : {
           std::string("trace tracepoint:net:net_dev_xmit(skb), ip_send_skb(net, skb) "
                       "join tcp_v4_rcv(skb) as r where r.comm == \"x\" on r.skb->len == skb->len "
                       "within 1s where skb->dev->mtu > big and str(skb->dev->name) ~ \"e*\" "
                       "select ((struct sk_buff *)r.skb)->len, {1: \"a\"}[skb->len], count() "
                       "group by comm every 1s limit 3"),
           std::string("fn f(skb: struct sk_buff *) = skb->len + (skb)->data_len\n"
                       "trace uprobe:/bin/sh:main(arg0) -> tcp_*(sk) where (((a[1]]))->b.c"),
           std::string("info struct sk_buff\nlist tracepoint:*:*\ncheck trace \"\\\" ->->..((")}) {
    for (size_t n = 0; n <= text.size(); ++n) {
      Completion c = complete(text.substr(0, n));
      EXPECT_LE(c.start, n) << text.substr(0, n);
    }
  }
}

/// The libstdc++ this test runs with: it declares USDT probes (libstdcxx:throw, catch, ...).
std::string loadedLibstdcxx() {
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    size_t at = line.find('/');
    if (at != std::string::npos && line.find("libstdc++.so", at) != std::string::npos) return line.substr(at);
  }
  return "";
}

TEST_F(CompletionTest, UsdtProbesAfterTheBinary) {
  std::string lib = loadedLibstdcxx();
  ASSERT_FALSE(lib.empty());
  EXPECT_THAT(candidates("trace usdt:" + lib + ":thr"), ElementsAre("throw"));
  EXPECT_THAT(candidates("trace usdt:" + lib + ":libstdcxx:re"), ElementsAre("rethrow"));
  EXPECT_THAT(candidates("trace usdt:" + lib + ":libstdcxx:ca"), ElementsAre("catch"));
}

TEST_F(CompletionTest, FilesAfterUprobe) {
  char dir[] = "/tmp/kqcompleteXXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  std::string root = dir;
  mkdir((root + "/bin").c_str(), 0700);
  std::ofstream(root + "/bin/server").put('x');
  std::ofstream(root + "/bin/served").put('x');
  std::ofstream(root + "/.hidden").put('x');
  EXPECT_THAT(candidates("trace uprobe:" + root + "/"), ElementsAre(root + "/bin/"));
  Completion c = complete("trace uprobe:" + root + "/b");
  EXPECT_THAT(c.candidates, ElementsAre(root + "/bin/"));
  EXPECT_FALSE(c.space_after);
  EXPECT_EQ(c.start, 13u);
  EXPECT_THAT(candidates("trace uprobe:" + root + "/bin/serve"),
              ElementsAre(root + "/bin/served", root + "/bin/server"));
  c = complete("trace uretprobe: " + root + "/bin/servi");
  EXPECT_THAT(c.candidates, ElementsAre());
  c = complete("trace uprobe:" + root + "/bin/server");
  EXPECT_THAT(c.candidates, ElementsAre(root + "/bin/server:"));  // the symbol comes next
  EXPECT_FALSE(c.space_after);
  EXPECT_THAT(candidates("trace usdt:" + root + "/b"), ElementsAre(root + "/bin/"));
  for (const char* f : {"/bin/server", "/bin/served", "/.hidden"}) unlink((root + f).c_str());
  rmdir((root + "/bin").c_str());
  rmdir(dir);
}

}  // namespace
}  // namespace kq::repl
