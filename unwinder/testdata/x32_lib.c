/* Two functions built for the x32 ABI (gcc -mx32: x86_64 code, ELFCLASS32
   file), linked into a shared object by unwinder/BUILD.bazel, so that
   module_test can open an x32 module the way a live x32 process's modules
   are opened. */
int x32_leaf(int x) { return x * 3 + 1; }

int x32_caller(int y) { return x32_leaf(y) + x32_leaf(y + 1); }
