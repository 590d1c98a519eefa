int broken(int x) {
  return x +;
}
