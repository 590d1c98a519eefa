/* Defines a type the kernel has too. */
struct sk_buff { int len; };
