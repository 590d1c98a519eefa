# Writes OUTPUT: a C++ file holding every stdlib/*.kq module as a string, for
# compiler/sema/stdlib.h. Run at build time with -DSTDLIB_DIR=... -DOUTPUT=...
file(GLOB modules "${STDLIB_DIR}/*.kq")
list(SORT modules)
set(body "")
foreach(path ${modules})
  get_filename_component(name "${path}" NAME_WE)
  file(READ "${path}" text)
  string(APPEND body "      {\"${name}\", R\"kq_module(${text})kq_module\"},\n")
endforeach()
file(WRITE "${OUTPUT}.tmp" "// Generated from stdlib/*.kq by cmake/embed_stdlib.cmake. Do not edit.
#include \"compiler/sema/stdlib.h\"

namespace kq::sema {

const std::vector<StdlibModule>& stdlibModules() {
  static const std::vector<StdlibModule> modules = {
${body}  };
  return modules;
}

}  // namespace kq::sema
")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
