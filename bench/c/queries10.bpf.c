// See queries.bpf.h.
#define QUERIES 10
#include "queries.bpf.h"
