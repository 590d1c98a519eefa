// Definitions of the members that grammar/KqParser.g4 declares in `@parser::members`.
#include "KqParser.h"

namespace kqgrammar {

bool KqParser::adjacentToPrevious() {
  antlr4::Token* previous = _input->LT(-1);
  antlr4::Token* next = _input->LT(1);
  return previous && next && next->getType() != antlr4::Token::EOF &&
         previous->getStopIndex() + 1 == next->getStartIndex();
}

}  // namespace kqgrammar
