/* x86.c: host code, compiled to x86-64 bitcode in the tests and passed to
   the device link by mistake. */
int host_add(int a, int b) { return a + b; }
