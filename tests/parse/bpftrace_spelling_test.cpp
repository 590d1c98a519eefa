// bpftrace's one-liners recognised, and the kq query each is said as.
#include <gtest/gtest.h>

#include "compiler/parse/bpftrace_spelling.h"

namespace kq::parse {
namespace {

std::string kq(const std::string& bpftrace) {
  std::optional<BpftraceSpelling> s = bpftraceSpelling(bpftrace);
  return s ? s->query : "(not bpftrace)";
}

TEST(BpftraceSpelling, TheCommonOneLinersAreSaidAsQueries) {
  EXPECT_EQ(kq("tracepoint:syscalls:sys_enter_openat { @[comm] = count(); }"),
            "trace tracepoint:syscalls:sys_enter_openat group by comm select comm, count()");
  EXPECT_EQ(kq("kprobe:tcp_sendmsg { @bytes = hist(arg2); }"), "trace tcp_sendmsg select hist(arg2)");
  EXPECT_EQ(kq("kretprobe:vfs_read /retval > 0/ { @[comm, pid] = sum(retval) }"),
            "trace vfs_read(return) where return > 0 group by comm, pid select comm, pid, sum(return)");
  EXPECT_EQ(kq("t:syscalls:sys_enter_execve { printf(\"%s %s\\n\", comm, str(args->filename)); }"),
            "trace tracepoint:syscalls:sys_enter_execve select fmt(\"%s %s\", comm, str(filename))");
  EXPECT_EQ(kq("tracepoint:sched:sched_switch /args.prev_pid == 1 && $x != 0/ { @ = count() }"),
            "trace tracepoint:sched:sched_switch where prev_pid == 1 and x != 0 select count()");
  EXPECT_EQ(kq("uprobe:/bin/bash:readline { printf(\"hi\\n\"); }"),
            "trace uprobe:/bin/bash:readline select fmt(\"hi\")");
  // A loaded BPF program, by name with or without its id.
  EXPECT_EQ(kq("fexit:bpf:17:xdp_drop_udp { @[retval] = count(); }"),
            "trace bpf:xdp_drop_udp(return) group by return select return, count()");
  EXPECT_EQ(kq("fentry:bpf:xdp_drop_udp { @ = count(); }"), "trace bpf:xdp_drop_udp select count()");
}

TEST(BpftraceSpelling, AProgramNotSaidInOneQueryIsStillKnown) {
  std::optional<BpftraceSpelling> s = bpftraceSpelling("kprobe:f { @start[tid] = nsecs; }");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->query, "");
  EXPECT_EQ(s->brace, 9u);
}

TEST(BpftraceSpelling, KqIsNotBpftrace) {
  EXPECT_EQ(kq("trace tcp_sendmsg"), "(not bpftrace)");
  EXPECT_EQ(kq("let t = {0: \"a\"}\ntrace syscall:kill select t[sig]"), "(not bpftrace)");
}

TEST(BpftraceSpelling, BeginAndEndAreTheSessionsOwn) {
  EXPECT_EQ(kq("BEGIN { printf(\"hello world\\n\"); }"), "trace begin select fmt(\"hello world\")");
  EXPECT_EQ(kq("END { printf(\"%d\", elapsed); }"), "trace end select fmt(\"%d\", elapsed)");
}

}  // namespace
}  // namespace kq::parse
