// Byte-order functions, for the network headers the `net` stdlib module reads.
#include "compiler/sema/builtins/builtins.h"

namespace kq::sema {
namespace {

template <uint32_t Bytes>
const Type* checkSwap(BuiltinCall& c) {
  if (!(c.args[0]->isInteger() || c.args[0]->isError())) return c.badArgument(0, "an integer");
  return c.types.integer(Bytes, false);
}

}  // namespace

void addNetFunctions(std::vector<BuiltinFunction>& out) {
  out.insert(out.end(), {
      {"ntohs", BuiltinFn::Ntohs, 1, 1, checkSwap<2>, "ntohs(x)", "16 bits from network order"},
      {"htons", BuiltinFn::Htons, 1, 1, checkSwap<2>, "htons(x)", "16 bits to network order"},
      {"ntohl", BuiltinFn::Ntohl, 1, 1, checkSwap<4>, "ntohl(x)", "32 bits from network order"},
      {"htonl", BuiltinFn::Htonl, 1, 1, checkSwap<4>, "htonl(x)", "32 bits to network order"},
  });
}

}  // namespace kq::sema
