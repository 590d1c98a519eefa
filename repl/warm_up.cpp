#include "repl/warm_up.h"

#include "compiler/lower/lower.h"
#include "compiler/parse/parse.h"
#include "compiler/sema/sema.h"
#include "engine/host.h"
#include "runtime/kernel_features.h"
#include "runtime/privileges.h"

namespace kq::repl {

void warmUp(const driver::Request& request, driver::KernelEnvironment& env, engine::Host& host) {
  if (!request.btf.empty()) return;
  if (!runtime::missingTracingCapabilities(runtime::effectiveCapabilities()).empty()) return;
  runtime::KernelFeatures& kernel = host.features();
  using plan::Feature;
  for (Feature f : {Feature::Trampoline, Feature::TpBtf, Feature::Kprobe, Feature::KprobeMulti,
                    Feature::Tracepoint, Feature::Uprobe, Feature::PerfEvent}) {
    (void)kernel.missing(f);
  }
  for (runtime::Helper h : {runtime::Helper::FuncIp, runtime::Helper::AttachCookie}) {
    for (runtime::HelperUse use : {runtime::HelperUse::Kprobe, runtime::HelperUse::Fentry}) {
      (void)kernel.missing(h, use);
    }
  }
  env.btf->indexAll();  // each query's check would build its parts, and each job its own
  SourceManager sources;
  FileId file = sources.add("<warm-up>", "trace interval 1s select comm, count()\n");
  Diagnostics diags;
  auto script = parse::parseScript(sources, file, diags);
  if (!script) return;
  auto checked = sema::analyze(*script, sources, *env.btf, *env.kernel, diags);
  if (!checked) return;
  std::string error;
  (void)lower::lowerProgram(*checked, *env.btf, sources, file, lower::LowerOptions{}, diags, &error);
}

}  // namespace kq::repl
