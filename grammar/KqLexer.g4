// The kq tokens. See KqParser.g4 for the grammar.
lexer grammar KqLexer;

channels { ERRORS }

// ---------------------------------------------------------------------------------------
// Tokens

USE : 'use' ;
LET : 'let' ;
FN : 'fn' ;
EXTENSION : 'extension' ;
CONFIG : 'config' ;
TRACE : 'trace' ;
WHERE : 'where' ;
SELECT : 'select' ;
GROUP : 'group' ;
BY : 'by' ;
EVERY : 'every' ;
FOR : 'for' ;
LIMIT : 'limit' ;
JOIN : 'join' ;
ON : 'on' ;
WITHIN : 'within' ;
TRACK : 'track' ;
AS : 'as' ;
AND : 'and' ;
OR : 'or' ;
NOT : 'not' ;
RETURN : 'return' ;
TRUE : 'true' ;
FALSE : 'false' ;
STRUCT : 'struct' ;
UNION : 'union' ;
ENUM : 'enum' ;
VOID : 'void' ;
CHAR : 'char' ;
SHORT : 'short' ;
INT : 'int' ;
LONG : 'long' ;
SIGNED : 'signed' ;
UNSIGNED : 'unsigned' ;
BOOL : 'bool' | '_Bool' ;
PACKET : 'packet' ;
GRAPH : 'graph' ;
INTERVAL : 'interval' ;
PROFILE : 'profile' ;
// `trace begin`, `trace end`: once as the session starts and as it ends.
SESSION_BEGIN : 'begin' ;
SESSION_END : 'end' ;
// `join ... as NAME optional`: a row even where the join finds nothing.
OPTIONAL : 'optional' ;
// `join ... as NAME keep`: its events stay for every row, none used up.
KEEP : 'keep' ;
TRACEPOINT : 'tracepoint' ;
SYSCALL : 'syscall' ;

// `uprobe:` switches to a mode that reads the binary's path up to the next `:`.
UPROBE : 'uprobe' [ \t]* ':' -> pushMode(PATH_MODE) ;
URETPROBE : 'uretprobe' [ \t]* ':' -> pushMode(PATH_MODE) ;
USDT : 'usdt' [ \t]* ':' -> pushMode(PATH_MODE) ;

// `software:` and `hardware:` switch to a mode that reads the perf event's name, dashes and
// all, with its period or frequency: `software:page-faults:100`, `hardware:cycles:99hz`.
SOFTWARE : 'software' [ \t]* ':' -> pushMode(PERF_MODE) ;
// `iter:task`, `iter:task_file`: a BPF iterator, run once.
ITER : 'iter' [ \t]* ':' ;
// `bpf:xdp_drop_udp`: a loaded BPF program.
BPF : 'bpf' [ \t]* ':' ;
// `watchpoint:0x404038:8:w`, `watchpoint:kaddr("jiffies"):8:r`.
WATCHPOINT : 'watchpoint' [ \t]* ':' ;
HARDWARE : 'hardware' [ \t]* ':' -> pushMode(PERF_MODE) ;

// Integer types that read naturally in casts: u8..u64, s8..s64, __u32, __be16, ...
INTTYPE : '__'? [us] ('8' | '16' | '32' | '64') | '__'? ('be' | 'le') ('16' | '32' | '64') ;

IDENT : [a-zA-Z_] [a-zA-Z_0-9]* ;

// Every numeric literal, with its radix prefix and unit suffix (`0xff`, `0b1010`, `10ms`,
// `4k`, `99hz`). lexical.cpp checks the digits, the unit and the range.
NUMBER : [0-9] [a-zA-Z_0-9]* ;

// A string whose closing quote is missing ends at the line's end; lexical.cpp reports it.
STRING : '"' (~["\\\r\n] | '\\' ~[\r\n])* '\\'? '"'? ;

ARROW : '->' ;
LE : '<=' ;
GE : '>=' ;
EQ : '==' ;
NE : '!=' ;
SHL : '<<' ;
SHR : '>>' ;
ANDAND : '&&' ;
OROR : '||' ;
LPAREN : '(' ;
RPAREN : ')' ;
LBRACKET : '[' ;
RBRACKET : ']' ;
LBRACE : '{' ;
RBRACE : '}' ;
COMMA : ',' ;
COLON : ':' ;
SEMI : ';' ;
DOT : '.' ;
QUESTION : '?' ;
ASSIGN : '=' ;
PLUS : '+' ;
MINUS : '-' ;
STAR : '*' ;
SLASH : '/' ;
PERCENT : '%' ;
LT : '<' ;
GT : '>' ;
BANG : '!' ;
TILDE : '~' ;
AMP : '&' ;
PIPE : '|' ;
CARET : '^' ;

COMMENT : '#' ~[\r\n]* -> channel(HIDDEN) ;
WS : [ \t\r\n]+ -> channel(HIDDEN) ;

// Anything else (`@`, `$`, a NUL byte, non-ASCII outside strings) is reported, not parsed.
BAD_CHAR : . -> channel(ERRORS) ;

mode PERF_MODE;
PERF_MODE_WS : [ \t]+ -> channel(HIDDEN) ;
PERF_EVENT : [a-zA-Z0-9_-]+ (':' [a-zA-Z0-9_]*)? -> popMode ;
// Without an event, the mode ends and the token is what it would have been outside it.
PERF_MODE_COLON : [:] -> type(COLON), popMode ;
PERF_MODE_LPAREN : [(] -> type(LPAREN), popMode ;
PERF_MODE_RPAREN : [)] -> type(RPAREN), popMode ;
PERF_MODE_COMMA : [,] -> type(COMMA), popMode ;
PERF_MODE_NEWLINE : [\r\n]+ -> channel(HIDDEN), popMode ;
PERF_MODE_OTHER : . -> type(BAD_CHAR), channel(ERRORS), popMode ;

mode PATH_MODE;
PATH_MODE_WS : [ \t]+ -> channel(HIDDEN) ;
UPROBE_PATH : ~[ \t\r\n:()]+ -> popMode ;
// Without a path, the mode ends and the token is what it would have been outside it.
PATH_MODE_COLON : [:] -> type(COLON), popMode ;
PATH_MODE_LPAREN : [(] -> type(LPAREN), popMode ;
PATH_MODE_RPAREN : [)] -> type(RPAREN), popMode ;
PATH_MODE_NEWLINE : [\r\n]+ -> channel(HIDDEN), popMode ;
