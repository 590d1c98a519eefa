// See queries.bpf.h.
#define QUERIES 1
#include "queries.bpf.h"
