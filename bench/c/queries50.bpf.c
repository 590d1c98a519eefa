// See queries.bpf.h.
#define QUERIES 50
#include "queries.bpf.h"
