// Portability of generated code, checked without a kernel: what must relocate at load time
// does (bitfields, enumerators, record sizes and strides, `struct pt_regs` members, as
// relocation globals in the IR: `llvm.<type>___kqN:<kind>:<value>$<access>`), and arguments
// come from the right register or stack slot for each architecture.
#include <gtest/gtest.h>

#include <regex>

#include <llvm/Support/raw_ostream.h>

#include "compiler/lower/disassemble.h"
#include "compiler/lower/expr_lowering.h"
#include "compiler/lower/lower.h"
#include "compiler/parse/parse.h"
#include "tests/support/fake_kernel.h"

namespace kq::lower {
namespace {

// libbpf's relocation kinds (enum bpf_core_relo_kind).
constexpr int kByteOffset = 0, kByteSize = 1, kLShift = 4, kRShift = 5, kTypeSize = 9, kEnumValue = 11;

class CoreRelocationTest : public ::testing::Test {
 protected:
  std::unique_ptr<btf::Btf> btf_ = testing::fakeBtf();
  std::unique_ptr<host::KernelInfo> kernel_ = testing::fakeKernelInfo();

  /// The optimized IR of `text`, and its disassembly in `bpf_`; "" when it does not compile.
  std::string compileIr(const std::string& text) {
    Diagnostics diags;
    SourceManager sources;
    FileId file = sources.add("<input>", text);
    auto script = parse::parseScript(sources, file, diags);
    if (!script) return "";
    auto checked = sema::analyze(*script, sources, *btf_, *kernel_, diags);
    if (!checked) return "";
    LowerOptions options;
    options.want_ir = true;
    std::string error;
    auto program = lowerProgram(*checked, *btf_, sources, file, options, diags, &error);
    EXPECT_EQ(error, "");
    if (!program) return "";
    auto text_bpf = disassemble(program->object.elf, sources.file(file));
    bpf_ = text_bpf ? *text_bpf : "";
    return program->object.ir;
  }

  /// Whether `ir` has a relocation of `kind` against `type`, with this kernel's `value`.
  static bool relocates(const std::string& ir, const std::string& type, int kind, int64_t value) {
    std::regex pattern("@\"llvm\\." + type + "___kq[0-9]+:" + std::to_string(kind) + ":" +
                       std::to_string(value) + "\\$");
    return std::regex_search(ir, pattern);
  }

  std::string bpf_;
};

TEST_F(CoreRelocationTest, BitfieldsReadThroughFieldInfo) {
  // `pkt_type`: 3 bits at bit 704 of sk_buff, in a one-byte unit.
  std::string ir = compileIr("trace tracepoint:net:net_dev_xmit select skb->pkt_type");
  ASSERT_FALSE(ir.empty());
  EXPECT_TRUE(relocates(ir, "sk_buff", kByteOffset, 88)) << ir;
  EXPECT_TRUE(relocates(ir, "sk_buff", kByteSize, 1)) << ir;
  EXPECT_TRUE(relocates(ir, "sk_buff", kLShift, 61)) << ir;
  EXPECT_TRUE(relocates(ir, "sk_buff", kRShift, 61)) << ir;
}

TEST_F(CoreRelocationTest, SignedBitfieldsShiftArithmetically) {
  // `sk_credit`: a signed 12-bit field at bit 200, in the 4-byte unit at byte 24.
  std::string ir = compileIr("trace tcp_sendmsg(sk) select sk->sk_credit, sk->sk_userlocks");
  ASSERT_FALSE(ir.empty());
  EXPECT_TRUE(relocates(ir, "sock", kByteOffset, 24)) << ir;
  EXPECT_TRUE(relocates(ir, "sock", kByteSize, 4)) << ir;
  EXPECT_TRUE(relocates(ir, "sock", kLShift, 64 - 12 - 8)) << ir;
  EXPECT_NE(ir.find("ashr i64"), std::string::npos) << ir;
  // fentry reads them with direct loads, kprobe with bpf_probe_read_kernel (113).
  std::string kprobe = bpf_.substr(bpf_.find("# section kprobe/tcp_sendmsg"));
  EXPECT_NE(kprobe.find("call 113"), std::string::npos) << kprobe;
}

TEST_F(CoreRelocationTest, EnumeratorsRelocate) {
  std::string ir = compileIr(
      "trace tracepoint:skb:kfree_skb where reason == SKB_DROP_REASON_NO_SOCKET select skb->len");
  ASSERT_FALSE(ir.empty());
  EXPECT_TRUE(relocates(ir, "skb_drop_reason", kEnumValue, 3)) << ir;
}

TEST_F(CoreRelocationTest, RecordSizesAndStridesRelocate) {
  // A typed dump reads as much of the struct as the running kernel has (at most the
  // field's bytes); `skb + 1` steps over one running kernel's sk_buff.
  std::string ir = compileIr("trace ip_send_skb(skb) select skb, (skb + 1)->len");
  ASSERT_FALSE(ir.empty());
  EXPECT_TRUE(relocates(ir, "sk_buff", kTypeSize, 232)) << ir;
  EXPECT_NE(ir.find("@llvm.umin"), std::string::npos) << ir;
}

TEST_F(CoreRelocationTest, ManyCompilationsOfRelocatedValues) {
  for (int i = 0; i < 10; ++i) {
    ASSERT_FALSE(compileIr("trace tracepoint:skb:kfree_skb where reason == SKB_DROP_REASON_NO_SOCKET "
                           "select skb->pkt_type, skb").empty()) << i;
  }
}

TEST_F(CoreRelocationTest, KprobeArgumentsPastTheRegistersAreOnTheStack) {
  // `flags` is ip_append_data's 9th parameter: on x86-64 at sp + 8 (return address)
  // + 2 * 8, read from `pt_regs->sp` through CO-RE. It used to read `dx`.
  std::string ir = compileIr("trace ip_append_data(flags) select flags");
  ASSERT_FALSE(ir.empty());
  EXPECT_TRUE(relocates(ir, "pt_regs", kByteOffset, 152)) << ir;
  std::string kprobe = bpf_.substr(bpf_.find("# section kprobe/ip_append_data"));
  EXPECT_NE(kprobe.find("+= 24"), std::string::npos) << kprobe;
  EXPECT_EQ(kprobe.find("+ 96)"), std::string::npos) << kprobe;
}

TEST_F(CoreRelocationTest, ExitProgramsOfManyArgumentsCompile) {
  // Used to end the process with std::out_of_range from the exit program's stash.
  EXPECT_FALSE(compileIr("trace ip_append_data(flags, return)").empty());
}

TEST_F(CoreRelocationTest, SyscallTargetsCarryTheirExitRecordsRet) {
  Diagnostics diags;
  SourceManager sources;
  FileId file = sources.add("<input>", "trace syscall:read(return)");
  auto script = parse::parseScript(sources, file, diags);
  ASSERT_TRUE(script);
  auto checked = sema::analyze(*script, sources, *btf_, *kernel_, diags);
  ASSERT_TRUE(checked);
  const sema::ResolvedTarget& target = checked->program.queries.at(0).probes.at(0).chain.at(0);
  EXPECT_EQ(target.exit_ret_offset, 24u);
}

// ExprLowering alone, for argument access the builder does not (yet) ask for.
class ArgAccessTest : public ::testing::Test {
 protected:
  SourceManager sources_;
  FileId file_ = sources_.add("<input>", "x");
  BpfModule module_{"test", sources_.file(file_)};
  CoreTypes core_{module_};
  sema::TypeTable types_;
  sema::ExprTable exprs_;
  llvm::IRBuilder<> b_{module_.context()};
  llvm::Function* fn_ = module_.addProgram("p", "kprobe/f");

  ExprLowering lowering(ArgAccess& args) {
    b_.SetInsertPoint(llvm::BasicBlock::Create(module_.context(), "entry", fn_));
    args.ctx = fn_->getArg(0);
    return ExprLowering(module_, core_, types_, b_, fn_->getSubprogram(), exprs_, args, 64);
  }
  std::string ir() {
    std::string out;
    llvm::raw_string_ostream os(out);
    fn_->print(os);
    return out;
  }
};

TEST_F(ArgAccessTest, Arm64ArgumentsComeFromRegsThenTheStack) {
  ArgAccess args{ArgAccess::Kind::PtRegs};
  args.arch = Arch::Arm64;
  ExprLowering lower = lowering(args);
  lower.arg(7, types_.u64());  // x7: regs[7]
  lower.arg(9, types_.u64());  // the second stack argument: sp (regs + 248) + 8
  std::string text = ir();
  EXPECT_NE(text.find("i64 56"), std::string::npos) << text;
  EXPECT_NE(text.find("i64 248"), std::string::npos) << text;
  EXPECT_NE(text.find("add i64 %"), std::string::npos) << text;
  EXPECT_NE(text.find(", 8\n"), std::string::npos) << text;
}

TEST_F(ArgAccessTest, UnstashedArgumentsAreProblemsNotExceptions) {
  ArgAccess args{ArgAccess::Kind::Stash};
  llvm::Value* saved = b_.getInt64(42);
  args.stashed = {saved, saved};
  ExprLowering lower = lowering(args);
  Val v = lower.arg(8, types_.u64());
  EXPECT_TRUE(llvm::isa<llvm::ConstantInt>(v.v));
  ASSERT_EQ(lower.problems().size(), 1u);
  EXPECT_EQ(lower.problems()[0].message,
            "argument 9 is not saved at entry for the exit program (only the first 2 are)");
}

TEST_F(ArgAccessTest, SyscallExitReadsRetWhereTheFormatSays) {
  ArgAccess args{ArgAccess::Kind::Stash};
  args.ret = ArgAccess::Ret::SyscallExit;
  args.syscall_ret_offset = 24;
  ExprLowering lower = lowering(args);
  ast::ReturnValue ret(SourceRange{});
  exprs_[&ret].type = types_.s64();
  exprs_[&ret].ref = sema::Ref::Return;
  lower.value(ret);
  EXPECT_NE(ir().find("i64 24"), std::string::npos) << ir();
}

}  // namespace
}  // namespace kq::lower
