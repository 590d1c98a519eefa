/* Macros for tests/sema/testdata/macros.kq: integers, written in terms of each other, and
   macros with the prefix that are not integers. */
#ifndef LEVELS_H
#define LEVELS_H
#include "levels_base.h"
#define LVL_LOW LEVEL_BASE
#define LVL_MID (LVL_LOW + 4)
#define LVL_HIGH (LVL_MID << 1)
#define LVL_DEFAULT LVL_MID        /* an alias: LVL_MID keeps the name of 14 */
#define LVL_NAME "level"           /* a string */
#define LVL_PTR ((void *)0)        /* a pointer */
#define LVL_SCALE(x) ((x) * 2)     /* function-like */
#define LVL_EMPTY
#define LVL_NEGATIVE (-LVL_LOW)
#define LVL_ENUM LVL_FROM_ENUM
enum { LVL_FROM_ENUM = 99 };
#endif
