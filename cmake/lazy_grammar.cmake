# Edits the parser ANTLR generated (FILE: KqLexer.cpp or KqParser.cpp; CLASS: its class) so
# that its ATN is deserialized when the first lexer or parser is made, not before main():
# every kq start paid it (about 2 ms), `kq --version` too; a start that parses does it
# while BTF is read on a thread (driver/compile.cpp). The ATN is ANTLR's own
# output, checked by every test that parses: its verification at each start is skipped.
foreach(edit
    "${CLASS}::Initializer ${CLASS}::_init;\n|// ${CLASS}::_init: made by the first ${CLASS} (cmake/lazy_grammar.cmake).\n"
    "${CLASS}::${CLASS}(${INPUT} *input) : ${BASE}(input) {\n|${CLASS}::${CLASS}(${INPUT} *input) : ${BASE}(input) {\n  static Initializer once;\n"
    "  atn::ATNDeserializer deserializer;\n|  atn::ATNDeserializationOptions options;\n  options.setVerifyATN(false);\n  atn::ATNDeserializer deserializer(options);\n")
  string(FIND "${edit}" "|" bar)
  string(SUBSTRING "${edit}" 0 ${bar} from)
  math(EXPR rest "${bar} + 1")
  string(SUBSTRING "${edit}" ${rest} -1 to)
  file(READ "${FILE}" text)
  string(FIND "${text}" "${from}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "lazy_grammar.cmake: ${FILE} has no `${from}`: the ANTLR tool's output changed")
  endif()
  string(REPLACE "${from}" "${to}" text "${text}")
  file(WRITE "${FILE}" "${text}")
endforeach()
