#define BROKEN_A 1
int broken(void) { return }
