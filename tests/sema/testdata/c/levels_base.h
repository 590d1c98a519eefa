#define LEVEL_BASE 10
