// The kq grammar. docs/language.md explains each form; compiler/parse/ast_builder.cpp turns
// the parse tree into kq's own AST, with each production quoted above the function that
// builds it.
//
// Conventions:
// - Rules are lower camel case, tokens upper case. Labels (`# Name`) become the
//   alternatives' context classes, which the AST builder dispatches on.
// - Keywords that can also be names (`packet`, `graph`, `interval`, `profile`, `by`,
//   `tracepoint`, `syscall`, `join`, `within`, `config`, and integer type names such as `u32`) go through the `name`
//   rule so struct members and arguments may still use them.
// - Lexical errors never reach the parser: bad characters go to the ERRORS channel and
//   literals are validated from the token stream before parsing (compiler/parse/lexical.cpp).
parser grammar KqParser;

options { tokenVocab = KqLexer; }

@parser::members {
  /// True when the next token starts right where the previous one ends (defined in
  /// compiler/parse/parser_support.cpp).
  bool adjacentToPrevious();
}

// ---------------------------------------------------------------------------------------
// Scripts

script
  : item* EOF
  ;

item
  : useDecl ';'?
  | letDecl ';'?
  | fnDecl ';'?
  | extensionDecl ';'?
  | configDecl ';'?
  | query ';'?
  ;

// `use net` (a stdlib module), `use "myapp.h"` (a C header's types), `use c "helpers.c"`
// (C functions).
useDecl
  : USE name
  | USE name? STRING
  ;

letDecl
  : LET name '=' expr
  ;

// `config max_groups = 100000`: a setting of the whole script.
configDecl
  : CONFIG name '=' expr
  ;

fnDecl
  : FN name '(' (param (',' param)*)? ')' '=' expr
  ;

param
  : name (':' typeName)?
  ;

extensionDecl
  : EXTENSION clause*
  ;

// ---------------------------------------------------------------------------------------
// Queries

// `trace syscall:openat as opens where ...`: a query's name, said beside its events, tables
// and counts in place of its number.
query
  : TRACE probe (',' probe)* (AS name)? clause*
  ;

// `kq replay FILE 'group by comm select count()'`: a query over a recording's events, its
// probes (which of the recorded ones it reads) optional.
replayQuery
  : (TRACE probe (',' probe)*)? clause* EOF
  ;

// Clauses may come in any order (`group by reason select count()` reads well, and so does
// `select count() group by reason`); the AST builder reports a repeated one (but `join`s
// chain). A join's own `where` comes before its `on`, so a `where` after `on` is the query's.
clause
  : JOIN probe AS name OPTIONAL? KEEP? (WHERE expr)? ON expr (WITHIN NUMBER)?   # joinClause
  | WHERE expr                              # whereClause
  | SELECT selectItem (',' selectItem)*     # selectClause
  | GROUP BY expr (',' expr)*               # groupClause
  | EVERY NUMBER                            # everyClause
  | FOR NUMBER                              # forClause
  | LIMIT NUMBER                            # limitClause
  | TRACK                                   # trackClause
  ;

selectItem
  : expr (AS name)?
  ;

probe
  : target ('->' target)*
  ;

target
  : PACKET GRAPH? ('(' pattern (',' pattern)* ')')? GRAPH?  # packetTarget
  | INTERVAL NUMBER                                   # intervalTarget
  | PROFILE NUMBER                                    # profileTarget
  | (SESSION_BEGIN | SESSION_END)                     # sessionTarget
  | (SOFTWARE | HARDWARE) PERF_EVENT                  # perfEventTarget
  | WATCHPOINT (NUMBER | IDENT '(' STRING ')') ':' NUMBER ':' IDENT   # watchpointTarget
  | ITER IDENT captureList?                           # iterTarget
  | BPF pattern captureList?                          # bpfTarget
  | TRACEPOINT ':' pattern ':' pattern captureList?   # tracepointTarget
  | SYSCALL ':' pattern captureList?                  # syscallTarget
  | (UPROBE | URETPROBE) UPROBE_PATH ':' symbolPattern (typedParams | captureList)?   # uprobeTarget
  | USDT UPROBE_PATH ':' symbolPattern (':' symbolPattern)? (typedParams | captureList)?   # usdtTarget
  | pattern (':' pattern)? (PLUS NUMBER)? captureList?   # functionTarget
  ;

// A function or tracepoint name, or a glob over them (`tcp_*`, `*_skb`). Its parts must
// touch: `tcp_ *` is a name followed by a stray `*`.
pattern
  : patternPart ({adjacentToPrevious()}? patternPart)*
  ;

// Not `name`: `tracepoint:net` must not read as function `net` of a module `tracepoint`.
patternPart
  : IDENT | INTTYPE | GRAPH | BY
  | '*'
  | '?'
  | NUMBER
  ;

// A uprobe's symbol: a pattern whose parts may also be words kq reserves (libc's `syscall`
// and `select`), since only a symbol can follow the path's `:`.
symbolPattern
  : symbolPart ({adjacentToPrevious()}? symbolPart)*
  ;

symbolPart
  : patternPart
  | memberName
  ;

captureList
  : '(' (capture (',' capture)*)? ')'
  ;

// A user-space function's arguments, declared with their types (`struct req *req`): a
// uprobe's registers have no types of their own.
typedParams
  : '(' typedParam (',' typedParam)* ')'
  ;

typedParam
  : (qualifier=IDENT)? (typeName | type=IDENT) name   // qualifier: `const` or `volatile`
  ;

capture
  : '*'          # captureAll
  | expr         # captureExpr
  ;

// ---------------------------------------------------------------------------------------
// Expressions, from the tightest binding to the loosest (C's precedence). `not` binds more
// loosely than comparisons, so `not comm == "sh"` reads as `not (comm == "sh")`.

expr
  : primary                                                  # primaryExpr
  | expr '.' memberName                                      # dotExpr
  | expr '->' memberName                                     # arrowExpr
  | expr '[' expr ']'                                        # indexExpr
  | '(' typeName ')' expr                                    # castExpr
  | op=('-' | '+' | '!' | '~' | '*' | '&') expr              # unaryExpr
  | expr op=('*' | '/' | '%') expr                           # binaryExpr
  | expr op=('+' | '-') expr                                 # binaryExpr
  | expr op=('<<' | '>>') expr                               # binaryExpr
  | expr op=('<' | '<=' | '>' | '>=') expr                   # binaryExpr
  | expr op=('==' | '!=' | '~') expr                         # binaryExpr
  | expr op='&' expr                                         # binaryExpr
  | expr op='^' expr                                         # binaryExpr
  | expr op='|' expr                                         # binaryExpr
  | op=NOT expr                                              # unaryExpr
  | expr op=(AND | '&&') expr                                # binaryExpr
  | expr op=(OR | '||') expr                                 # binaryExpr
  | <assoc=right> expr '?' expr ':' expr                     # conditionalExpr
  ;

primary
  : NUMBER                                  # numberLiteral
  | STRING                                  # stringLiteral
  | (TRUE | FALSE)                          # boolLiteral
  | RETURN                                  # returnValue
  | name '(' (expr (',' expr)*)? ')'        # call
  | name                                    # identifier
  | '(' expr ')'                            # parenthesized
  | '{' (tableEntry (',' tableEntry)* ','?)? '}'   # tableLiteral
  ;

// A lookup table: `{0: "CAP_CHOWN", 1: "CAP_DAC_OVERRIDE"}` names numbers, `{"read": 0}`
// numbers names. Keys and values are literals; sema checks that their kinds agree.
tableEntry
  : tableConstant ':' tableConstant
  ;

tableConstant
  : '-'? NUMBER
  | STRING
  ;

// A cast's type: `struct sock *`, `unsigned long`, `u32`, `enum skb_drop_reason`. Other
// typedef names need at least one `*` (`(my_t)x` would read as a parenthesized name).
typeName
  : (STRUCT | UNION | ENUM) name '*'*       # taggedType
  | scalarKeyword+ '*'*                     # scalarType
  | INTTYPE '*'*                            # intType
  | IDENT '*'+                              # typedefPointer
  ;

scalarKeyword
  : VOID | CHAR | SHORT | INT | LONG | SIGNED | UNSIGNED | BOOL
  ;

name
  : IDENT | INTTYPE | PACKET | GRAPH | INTERVAL | PROFILE | BY | TRACEPOINT | SYSCALL | JOIN | WITHIN | TRACK
  | SESSION_BEGIN | SESSION_END | OPTIONAL | KEEP
  | CONFIG
  ;

// After `.` or `->` every keyword is a plain member name (`q->limit`, `x->for`).
memberName
  : name
  | USE | LET | FN | EXTENSION | TRACE | WHERE | SELECT | GROUP | EVERY | FOR | LIMIT | AS
  | AND | OR | NOT | RETURN | TRUE | FALSE | STRUCT | UNION | ENUM | ON
  | VOID | CHAR | SHORT | INT | LONG | SIGNED | UNSIGNED | BOOL
  ;

