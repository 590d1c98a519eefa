// The BPF programs loaded in the kernel (XDP, TC, anyone's), for `bpf:PROG` probes: fentry
// and fexit on a program, typed as the program's own BTF declares its function.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/diag/result.h"

namespace kq::host {

/// One parameter of a program's function, as its BTF declares it.
struct BpfProgramParam {
  enum class Kind : uint8_t {
    Integer,  // an integer or enum: `size` bytes, `is_signed`
    Context,  // a pointer to the program type's context (`struct xdp_md *`): `type_name` it
    Pointer,  // any other pointer, which a tracing program may not read (the verifier's rule)
    Other,    // a struct by value, a float: not readable either
  };
  std::string name;
  Kind kind = Kind::Other;
  std::string type_name;  // Context: the struct's name (`xdp_md`, `__sk_buff`)
  uint32_t size = 8;
  bool is_signed = false;
};

struct BpfProgram {
  uint32_t id = 0;
  /// The kernel's name, which BPF_OBJ_NAME_LEN cuts at 15 characters (`xdp_drop_udp`).
  std::string name;
  uint32_t type = 0;      // enum bpf_prog_type
  std::string type_name;  // libbpf's: `xdp`, `sched_cls`, `tracing`
  std::string tag;        // 16 hex digits, as bpftool prints it
  /// The program's function in its BTF (its full name, which fentry attaches by), and that
  /// function's parameters and return; empty when the program was loaded without BTF.
  std::string function;
  std::vector<BpfProgramParam> params;
  uint32_t return_size = 0;  // 0: void or unknown
  bool return_signed = false;

  bool hasBtf() const { return !function.empty(); }
  /// The name kq shows and matches first: the function's, else the kernel's.
  const std::string& displayName() const { return function.empty() ? name : function; }
};

/// Every BPF program loaded now, by id; an error says why they cannot be listed (not root).
Result<std::vector<BpfProgram>> loadedBpfPrograms();

/// The kernel's struct a program type's context stands for when a tracing program reads it
/// (`xdp_md` of an XDP program is a `struct xdp_buff`, `__sk_buff` a `struct sk_buff`): as
/// the kernel's bpf_ctx_convert translates it; nothing when kq does not know the type or
/// `uapi_struct` is not its context.
std::optional<std::string_view> kernelContextStruct(uint32_t prog_type, std::string_view uapi_struct);

/// How a tracing program sees the program's function: `enum xdp_action xdp_drop_udp(struct
/// xdp_buff *ctx)`, with the kernel's context struct and the verdicts' enum (bpf_programs.cpp).
std::string tracedSignature(const BpfProgram& program);
/// Its parts: the parameters (`struct xdp_buff *ctx`) and the return (`enum xdp_action`).
std::string tracedParams(const BpfProgram& program);
std::string tracedReturn(const BpfProgram& program);

/// A program type's return values: the enum kq types them as (`xdp_action`, `tc_action`,
/// `sk_action`) and each one's name by value (XDP_DROP, TC_ACT_SHOT).
struct Verdicts {
  std::string_view enum_name;
  std::vector<std::pair<int64_t, std::string_view>> names;
};
/// Those of `prog_type`; null for a type whose return is a plain number.
const Verdicts* verdictsOf(uint32_t prog_type);

}  // namespace kq::host
