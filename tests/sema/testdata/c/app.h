/* Types of a user-space program, for tests/sema/testdata/use_header.kq. */
#include <stdint.h>
#include <stddef.h>
enum app_kind { APP_GET = 1, APP_PUT = 2 };
struct app_req {
  uint32_t id;
  enum app_kind kind;
  uint64_t len;
  const char *path;
  char host[16];
  unsigned flags : 3;
};
typedef size_t app_size_t;
