// The subcommands that look at the kernel without compiling a query.
#pragma once

#include <string>

#include "driver/io.h"
#include "driver/request.h"

namespace kq::driver {

/// `kq info WHAT`: a function's prototype and how it can be attached, a struct's layout,
/// a tracepoint's arguments and fields.
int runInfo(const std::string& what, const std::string& btf_path, Io& io);
/// `info` against a kernel already loaded (the interactive session's).
int describe(const std::string& what, KernelEnvironment& env, Io& io);

/// `kq list PATTERN`: matching functions, tracepoints or syscalls, one per line;
/// `kq list packet`: functions that take a `struct sk_buff *`.
int runList(const std::string& pattern, const std::string& btf_path, Io& io);
/// `list` against a kernel already loaded.
int listMatches(const std::string& pattern, KernelEnvironment& env, Io& io);

/// Whether a kernel function can be traced: listed by ftrace, or (when that list is
/// unreadable) at least present in kallsyms.
bool traceable(host::KernelInfo& kernel, const std::string& name);

/// `kq list 'usdt:PATH:*'`: a binary's USDT probes with their arguments' sizes.
int listUsdt(const std::string& pattern, Io& io);
/// `kq info usdt:PATH:[PROVIDER:]NAME`: each site of the probes, where its arguments are.
int usdtInfo(const std::string& what, Io& io);

/// `kq list 'bpf:*'`: the BPF programs loaded now, each as a `bpf:` probe sees it.
int listBpfPrograms(const std::string& pattern, host::KernelInfo& kernel, Io& io);
/// `kq info bpf:PROG`: one program's id, tag, traced signature and verdicts.
int bpfProgramInfo(const std::string& name, host::KernelInfo& kernel, Io& io);

/// `note: did you mean ...?` on standard error, when a candidate is close to `name`.
void didYouMean(Io& io, std::string_view name, const std::vector<std::string_view>& candidates);


}  // namespace kq::driver
