#include "compiler/c/ipft_header.h"

#include "compiler/c/c_plugin.h"
#include "host/cache_directory.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace kq::c {

// The same text ipftrace2 prints: the preamble of its BPF modules inside include guards.
// `__ipft_event_struct` marks the struct the module fills (ipftrace2 decodes `data` by
// it), `__ipft_fmt_*` tag its fields' formats, `__ipft_ref` keeps an enum for them.
const char* const kIpftModuleHeader =
    "#ifndef __IPFT_EXTENSION_H__\n"
    "#define __IPFT_EXTENSION_H__\n"
    "\n"
    "#include <linux/types.h>\n"
    "#include <bpf/bpf_helpers.h>\n"
    "#include <bpf/bpf_core_read.h>\n"
    "\n"
    "#define __ipft_sec_skip __attribute__((section(\"__ipft_skip\")))\n"
    "#define __ipft_ref(name) name __ipft_sec_skip\n"
    "#define __ipft_event_struct __ipft_event_struct __ipft_sec_skip\n"
    "#define __ipft_fmt_hex __attribute__((btf_decl_tag(\"ipft:fmt:hex\")))\n"
    "#define __ipft_fmt_enum(ref) __attribute__((btf_decl_tag(\"ipft:fmt:enum:\" #ref)))\n"
    "#define __ipft_fmt_enum_flags(ref) "
    "__attribute__((btf_decl_tag(\"ipft:fmt:enum_flags:\" #ref)))\n"
    "\n"
    "#endif\n";

Result<std::string> ipftIncludeDirectory() {
  namespace fs = std::filesystem;
  fs::path dir = host::cacheDirectory();
  if (dir.empty()) dir = fs::temp_directory_path() / "kq";
  dir /= "ipft-include";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Error{"cannot create " + dir.string() + ": " + ec.message()};
  fs::path header = dir / "ipft.h";
  std::ifstream current(header);
  std::string text((std::istreambuf_iterator<char>(current)), std::istreambuf_iterator<char>());
  if (text != kIpftModuleHeader) {
    fs::path partial = header;
    partial += ".tmp";
    std::ofstream out(partial, std::ios::trunc);
    out << kIpftModuleHeader;
    out.close();
    if (!out) return Error{"cannot write " + partial.string()};
    fs::rename(partial, header, ec);
    if (ec) return Error{"cannot write " + header.string() + ": " + ec.message()};
  }
  return dir.string();
}

}  // namespace kq::c
