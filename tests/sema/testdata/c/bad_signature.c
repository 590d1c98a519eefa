struct pair { int a, b; };
int sum(struct pair p) { return p.a + p.b; }
double half(int x) { return x / 2.0; }
