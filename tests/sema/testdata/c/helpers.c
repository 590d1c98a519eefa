/* C functions for tests/sema/testdata/use_c.kq. */
typedef unsigned int u32;
static int is_odd(unsigned x) { return x & 1; }  /* static: not callable from kq */
int marked(u32 mark) { return mark == 0xdeadbeef; }
long size_class(u32 len, const void *unused) {
  if (len < 100) return 0;
  if (len < 256) return 1;
  return 2 + is_odd(len);
}
