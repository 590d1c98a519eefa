#include "engine/engine.h"

#include "runtime/type_dump.h"

namespace kq::engine {

runtime::LoadResult Engine::load(const std::vector<char>& elf, const plan::ProgramPlan& plan,
                                 runtime::LoadOptions options) {
  if (!options.features) options.features = &host_.features();
  return runtime::loadAndAttach(elf, plan, options);
}

SessionResult Engine::run(runtime::LoadedObject& object, const plan::ProgramPlan& plan,
                          runtime::KernelTypes* types,
                          const std::function<std::unique_ptr<Sink>(PrintContext&)>& make_sink,
                          const Cancellation& cancellation, SessionOptions options,
                          const std::function<void(Session&)>& started) {
  host_.beginSession();  // modules may have come and gone since the last session
  // Every field's type is found once, here, not as events arrive.
  runtime::TypeDumper dumper(types);
  dumper.prepare(plan.layout);
  PrintContext context{host_, dumper, host_, host_.bootOffset()};
  context.key_stack_offsets = options.key_stack_offsets;
  context.key_pid = static_cast<uint32_t>(options.traced ? options.traced : options.child ? options.child->pid() : 0);
  std::unique_ptr<Sink> sink = make_sink(context);
  Session session(host_, object, plan, context, *sink, cancellation, std::move(options));
  if (started) started(session);
  return session.run();
}

}  // namespace kq::engine
